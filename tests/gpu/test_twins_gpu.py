"""Every family's twins compute the same bits as the config they are timed beside (issue 15):
autotuning may swap a table config for its twin (tunedgemm/plans.py, with_twins and
with_raster_twins) only because nothing changes but speed. For each family's default, a
split-K config and simt's large tile, each twin (TN's layout twins and the raster twins too)
against its config on shapes with m, n and k edges, all four
transposes, aligned and not, beta 0 and not, with C poisoned by NaN before each run
(helpers.assert_configs_agree):

    python -m pytest -q -m gpu tests/gpu/test_twins_gpu.py
"""

from __future__ import annotations

import os

import dmma_variants
import pytest
import simt_variants
from helpers import assert_configs_agree, shipped_configs

from tunedgemm import plans
from tunedgemm.families import FAMILIES, simt
from tunedgemm.params import IEEE, KernelConfig

pytestmark = pytest.mark.gpu

SHAPES = [(33, 7, 15), (257, 130, 700), (1000, 257, 33), (512, 384, 1024)]


def _pairs() -> list[tuple[str, KernelConfig, KernelConfig]]:
    found = []
    for name, dtype in (("dmma", "float64"), ("simt", "float32")):
        family = FAMILIES[name]
        default = family.default_config(dtype).as_dict()
        bases = [default, {**default, "SPLIT_K": 4}]
        if name == "simt":  # the large tile, 16 x 8 a thread: the most registers to stage
            bases.append({**default, **simt.STREAM_K_TILES[0], "STREAM_K": 0})
        for base in bases:
            config = KernelConfig.make(name, base)
            # With a TN key, the layout twins as well (they run in every transpose below).
            twins = plans.with_twins((config,), dtype, _tn_key(dtype))[1:]
            # ... and the raster twins (the loop twin with the blocks in another order).
            twins += tuple(t for t in plans.with_raster_twins((config,), dtype)[1:]
                           if t not in twins)  # fmt: skip
            found += [(dtype, config, twin) for twin in twins]
    return found


def _tn_key(dtype: str) -> plans.GemmKey:
    return plans.GemmKey(dtype, IEEE, 512, 512, 512, True, False, 512, 512, 512, True)


@pytest.fixture(scope="module", autouse=True)
def _compiled() -> None:
    """Every config's variants compiled in parallel first (else one nvcc at a time)."""
    pairs = _pairs()
    dmma_variants.precompile(c for d, *both in pairs if d == "float64" for c in both)
    simt_variants.precompile(sorted({c for d, *both in pairs if d == "float32" for c in both}))


@pytest.mark.parametrize("dtype,config,twin", _pairs(), ids=str)
@pytest.mark.parametrize("m,n,k", SHAPES)
def test_a_twin_gives_its_configs_bits(dtype, config, twin, m, n, k):
    assert_configs_agree([config, twin], dtype, m, n, k)


def _shipped_tn_twins() -> list[KernelConfig]:
    """The shipped table's simt configs that stage TN's operands through registers."""
    return sorted(c for c in shipped_configs("simt") if c.as_dict()["REG_TRANSPOSE"] == 1)


def test_shipped_tn_twins_give_the_bits_of_cp_async_copies():
    """Each shipped REG_TRANSPOSE=1 config (the float32/TN entries tuned with it) against the
    same config copying by cp.async, on padded TN operands (the one layout it changes) with
    m, n and k edges, beta 0 and not: bit-equal, and within the float64 reference's bound."""
    from tunedgemm import compiler
    from tunedgemm.tuning import problems

    m, n, k = 257, 130, 700
    assert problems.make(m, n, k, "float32", True, False, padded=True).form.aligned()
    staged = _shipped_tn_twins()
    assert staged
    pairs = [(KernelConfig.make("simt", {**c.as_dict(), "REG_TRANSPOSE": 0}), c) for c in staged]
    compiler.precompile(sorted({c for pair in pairs for c in pair}), "float32", True, False,
                        True, jobs=os.cpu_count() or 4)  # fmt: skip
    for pair in pairs:
        assert_configs_agree(list(pair), "float32", m, n, k, layouts=[((True, False), True)])
