"""Builds the optional C short route (tunedgemm/_short_route.c); the rest is pyproject.toml.

The extension only speeds up small host calls: where it cannot be built (no compiler, no
Python headers, no NumPy at build time) the install goes on and the same route runs in
Python (tunedgemm/_small_host.py)."""

import sys

from setuptools import Extension, setup


def extensions() -> list[Extension]:
    try:
        import numpy
    except ImportError:
        return []
    return [
        Extension(
            "tunedgemm._short_route",
            ["tunedgemm/_short_route.c"],
            include_dirs=[numpy.get_include()],
            # feclearexcept/fetestexcept live in libm on glibc (where Python also loads it)
            libraries=[] if sys.platform == "win32" else ["m"],
            # alpha * p + beta * c rounded step by step, as the Python route's NumPy calls
            # round it (bit-equal results): no fused multiply-add where the target has one
            extra_compile_args=[] if sys.platform == "win32" else ["-ffp-contract=off"],
            optional=True,
        )
    ]


setup(ext_modules=extensions())
