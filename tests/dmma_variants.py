"""What the GPU tests of dmma's measured-before-searched tunables (EPILOGUE, SPLITK_FUSED)
share: a parallel compile of every variant of their configs, and C read back whole.

A plain module beside helpers.py (tests/ is on sys.path through pytest's `pythonpath`)."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterable

import numpy as np

from tunedgemm.params import KernelConfig


def precompile(configs: Iterable[KernelConfig]) -> None:
    """Every transpose x alignment variant of these configs, compiled in parallel before the
    first launch (a fresh machine would otherwise compile them one at a time)."""
    from tunedgemm.compiler import precompile as compile_all

    ordered = sorted(set(configs))
    for ta, tb, aligned in itertools.product((False, True), repeat=3):
        compile_all(ordered, "float64", ta, tb, aligned, jobs=os.cpu_count() or 4)


def whole_c(problem) -> np.ndarray:
    """C's buffer, ldc x n, padding rows included."""
    import pycuda.driver as drv

    form = problem.form
    whole = np.empty((form.ldc, form.n), np.float64, order="F")
    drv.memcpy_dtoh(whole.ravel(order="K"), form.c)
    return whole
