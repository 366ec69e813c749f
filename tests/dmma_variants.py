"""What the GPU tests of dmma's measured-before-searched tunables (EPILOGUE, SPLITK_FUSED,
ADVANCE, SWAP_AB) share: their shapes, a parallel compile of every variant of their configs,
C read back whole, and the check that variants of one config keep its rules and are
accurate and bit-equal to each other.

A plain module beside helpers.py (tests/ is on sys.path through pytest's `pythonpath`)."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterable, Sequence

import numpy as np
from helpers import assert_configs_agree, precompiles_modules, whole_c

from tunedgemm.families import FAMILIES
from tunedgemm.params import KernelConfig

__all__ = ["SHAPES", "assert_variant_keeps_rules_and_bits", "assert_variants_agree", "precompile",
           "whole_c"]

# Odd m, n and k; k below BK (one partial k-tile), a partial last k-tile, k = 20 (split-K 4
# leaves slices without a k-tile), and whole tiles in m, n and k (1000 x 1000 has interior and
# edge tiles, 512 x 384 only interior ones).
SHAPES = [(1, 1, 1), (7, 33, 5), (33, 7, 15), (257, 1000, 7), (1000, 257, 33), (33, 257, 1000),
          (257, 33, 20), (1000, 1000, 257), (512, 384, 1024)]  # fmt: skip


def precompile(configs: Iterable[KernelConfig], alignments: Sequence[bool] = (False, True)) -> None:
    """Every transpose x alignment variant of these configs (the alignments given), compiled in
    parallel before the first launch (a fresh machine would otherwise compile them one at a
    time)."""
    from tunedgemm.compiler import precompile as compile_all

    if not precompiles_modules():
        return
    ordered = sorted(set(configs))
    for (ta, tb), aligned in itertools.product(itertools.product((False, True), repeat=2),
                                               alignments):  # fmt: skip
        compile_all(ordered, "float64", ta, tb, aligned, jobs=os.cpu_count() or 4)


def assert_variants_agree(configs: Sequence[KernelConfig], m: int, n: int, k: int,
                          layouts=None) -> None:  # fmt: skip
    """helpers.assert_configs_agree in float64 (every layout, or those given)."""
    assert_configs_agree(configs, np.float64, m, n, k, layouts=layouts)


def assert_variant_keeps_rules_and_bits(plain: KernelConfig, variant: KernelConfig, m: int,
                                        n: int, k: int) -> None:
    """The variant breaks no dmma rule the plain config keeps, and the two agree
    (assert_variants_agree)."""
    family = FAMILIES["dmma"]
    assert set(family.violations(variant, "float64")) <= set(
        family.violations(plain, "float64"))  # fmt: skip
    assert_variants_agree([plain, variant], m, n, k)
