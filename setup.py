"""Builds the optional C short route (tunedgemm/_short_route.c); the rest is pyproject.toml.

The extension only speeds up small host calls: where it cannot be built (no compiler, no
Python headers, no NumPy at build time) the install goes on and the same route runs in
Python (tunedgemm/_small_host.py)."""

from setuptools import Extension, setup


def extensions() -> list[Extension]:
    try:
        import numpy
    except ImportError:
        return []
    source = "tunedgemm/_short_route.c"
    return [Extension("tunedgemm._short_route", [source], include_dirs=[numpy.get_include()],
                      optional=True)]  # fmt: skip


setup(ext_modules=extensions())
