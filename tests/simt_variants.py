"""What the GPU tests of simt's measured-before-searched tunables (ADVANCE, ROLL_K, ASYNC_CURSOR,
LANE_PAIRS; issue 15) share: the configs they vary, the shapes, a parallel compile of every
variant, the check that variants of one config are accurate and bit-equal to each other, and
the fixture and tests a module of such variants binds (variant_tests).

A plain module beside helpers.py (tests/ is on sys.path through pytest's `pythonpath`)."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping

import numpy as np
from helpers import assert_configs_agree, precompiles_modules

from tunedgemm.families import FAMILIES
from tunedgemm.params import KernelConfig

SIMT = FAMILIES["simt"]

# The table's float32/NN 4096^3 config (tunedgemm.explain with TUNEDGEMM_CUBLAS=0); the
# tunables added since take their recorded (absent) values.
TUNED = SIMT.recorded({"BM": 256, "BN": 128, "BK": 16, "WM": 64, "WN": 64, "TM": 16, "TN": 8,
                       "STAGES": 2, "GROUP_M": 16, "SPLIT_K": 1, "MIN_BLOCKS": 1,
                       "STREAM_K": 0}).as_dict()  # fmt: skip
BASES = {"tuned": TUNED, "default": SIMT.default_config("float32").as_dict()}
# m, n and k edges: k not a multiple of BK, one k-tile, a partial first vector, odd sizes.
SHAPES = [(512, 384, 1024), (777, 333, 555), (1, 1, 1), (5, 7, 3), (257, 129, 17),
          (300, 260, 16), (1024, 1024, 4099)]  # fmt: skip
TRANSPOSES = list(itertools.product((False, True), repeat=2))


def config(base: str, changes: Mapping[str, int]) -> KernelConfig:
    return KernelConfig.make("simt", {**BASES[base], **changes})


def allowed(base: str, changes: Mapping[str, int]) -> bool:
    """The family's constraints hold for the base with these changes."""
    return not SIMT.violations(config(base, changes), "float32")


def precompile(configs: Iterable[KernelConfig]) -> None:
    """Compile every transpose x alignment variant of these configs with nvcc in parallel
    (a fresh machine would otherwise compile them one at a time as the cases meet them)."""
    import os

    from tunedgemm import compiler, launch

    if not precompiles_modules():
        return
    jobs = []
    for c, (ta, tb), aligned in itertools.product(configs, TRANSPOSES, (False, True)):
        plan = launch.plan(c, "float32", ta, tb, aligned)
        jobs.append((plan.source, dict(plan.defines)))
    compiler.precompile_raw(jobs, workers=os.cpu_count() or 4)


def assert_variants_agree(base: str, variants: list[Mapping[str, int]], m: int, n: int,
                          k: int) -> None:  # fmt: skip
    """helpers.assert_configs_agree on these variants of BASES[base], in float32."""
    assert_configs_agree([config(base, changes) for changes in variants], np.float32, m, n, k,
                         label=base)  # fmt: skip


def toggled(changes: Mapping[tuple[str, str], Mapping[str, int]], name: str,
            values: Iterable[int]) -> dict[tuple[str, str], list[dict[str, int]]]:  # fmt: skip
    """Each (base, label)'s changes with the tunable `name` at each of the values: the groups
    of variants that must agree."""
    values = tuple(values)
    return {key: [{**c, name: v} for v in values] for key, c in changes.items()}


def variant_tests(groups: Mapping[tuple[str, str], list[dict[str, int]]]) -> tuple:
    """What a module of such groups runs, for it to bind at module level: a module fixture
    compiling every variant, a test that the family allows each, and per group and shape the
    check that its variants agree (assert_variants_agree)."""
    import pytest

    @pytest.fixture(scope="module", autouse=True)
    def compiled() -> None:
        precompile(config(key[0], v) for key, variants in groups.items() for v in variants)

    def every_variant_is_allowed() -> None:
        for key, variants in groups.items():
            for changes in variants:
                assert allowed(key[0], changes), (key, changes)

    @pytest.mark.parametrize("key", sorted(groups))
    @pytest.mark.parametrize("m,n,k", SHAPES)
    def variants_agree(key, m, n, k) -> None:
        assert_variants_agree(key[0], groups[key], m, n, k)

    return compiled, every_variant_is_allowed, variants_agree
