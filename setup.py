"""Builds the optional C extensions; the rest is pyproject.toml.

- tunedgemm/_short_route.c speeds up small host calls: where it cannot be built (no compiler,
  no Python headers, no NumPy at build time) the same route runs in Python
  (tunedgemm/_small_host.py).
- tunedgemm/_fastlaunch.c makes a planned device call's launch (cuLaunchKernel or
  cublasLtMatmul) from C; it needs no CUDA to build, and without it the same calls go
  through ctypes.
- tunedgemm/_streamcopy.c copies host blocks into pinned staging with streaming stores;
  without it the pipeline copies with NumPy (tunedgemm/streaming.py)."""

import sys

from setuptools import Extension, setup


def extensions() -> list[Extension]:
    launch = Extension("tunedgemm._fastlaunch", ["tunedgemm/_fastlaunch.c"], optional=True)
    streaming = Extension("tunedgemm._streamcopy", ["tunedgemm/_streamcopy.c"], optional=True)
    try:
        import numpy
    except ImportError:
        return [launch, streaming]
    return [
        launch,
        streaming,
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
