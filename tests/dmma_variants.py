"""What the GPU tests of dmma's measured-before-searched tunables (EPILOGUE, SPLITK_FUSED,
ADVANCE) share: a parallel compile of every variant of their configs, C read back whole, and
the check that variants of one config are accurate and bit-equal to each other.

A plain module beside helpers.py (tests/ is on sys.path through pytest's `pythonpath`)."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterable, Sequence

import numpy as np
from helpers import assert_configs_agree, whole_c

from tunedgemm.params import KernelConfig

__all__ = ["assert_variants_agree", "precompile", "whole_c"]


def precompile(configs: Iterable[KernelConfig]) -> None:
    """Every transpose x alignment variant of these configs, compiled in parallel before the
    first launch (a fresh machine would otherwise compile them one at a time)."""
    from tunedgemm.compiler import precompile as compile_all

    ordered = sorted(set(configs))
    for ta, tb, aligned in itertools.product((False, True), repeat=3):
        compile_all(ordered, "float64", ta, tb, aligned, jobs=os.cpu_count() or 4)


def assert_variants_agree(configs: Sequence[KernelConfig], m: int, n: int, k: int) -> None:
    """helpers.assert_configs_agree in float64."""
    assert_configs_agree(configs, np.float64, m, n, k)
