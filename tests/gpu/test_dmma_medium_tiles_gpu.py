"""dmma's medium tiles (dmma.MEDIUM_TILES: cuBLAS's 64 x 64 and 64 x 32 blocks of four warps,
three blocks an SM, MIN_BLOCKS=3), which autotuning times at skinny and medium shapes: against
float64 with C poisoned by NaN beforehand, unsplit and split 3 ways (the whole-round splits are
not powers of two), all four transposes, aligned and not, beta 0 and not, shapes with m, n and
k edges; bit-equal from run to run and to the same tile at two blocks an SM (the blocks an SM
holds change no element's sum). Then a dgemm call on CuPy arrays with own kernels only at a
medium shape: its autotuning timed them, each ran, and C is right.

    TUNEDGEMM_TEST_PRECOMPILE=0 python -m pytest -q -m gpu tests/gpu/test_dmma_medium_tiles_gpu.py
"""

from __future__ import annotations

import numpy as np
import pytest
from dmma_variants import SHAPES, assert_variants_agree, precompile
from helpers import assert_gemm, uniform

from tunedgemm import plans, selection
from tunedgemm.families import FAMILIES, dmma
from tunedgemm.params import KernelConfig

pytestmark = pytest.mark.gpu

DEFAULT = FAMILIES["dmma"].default_config("float64").as_dict()


def config(tile: int, split: int, min_blocks: int = 3) -> KernelConfig:
    return KernelConfig.make("dmma", {**DEFAULT, **dmma.MEDIUM_TILES[tile], "SPLIT_K": split,
                                      "MIN_BLOCKS": min_blocks})  # fmt: skip


CASES = [(tile, split) for tile in range(len(dmma.MEDIUM_TILES)) for split in (1, 3)]


@pytest.fixture(scope="module", autouse=True)
def _compiled() -> None:
    precompile(config(t, s, b) for t, s in CASES for b in (2, 3))


@pytest.mark.parametrize("tile,split", CASES)
@pytest.mark.parametrize("m,n,k", SHAPES)
def test_medium_tile_is_accurate_and_the_same_bits_at_two_blocks_an_sm(tile, split, m, n, k):
    # the two-block config first: the three-block one must match it, and then itself again
    # on the same operands (run to run)
    three = config(tile, split)
    assert not FAMILIES["dmma"].violations(three, "float64")
    assert_variants_agree([config(tile, split, 2), three, three], m, n, k)


def test_dgemm_at_a_medium_shape_times_them_and_is_right():
    cupy = pytest.importorskip("cupy")
    import tunedgemm as tg
    from tunedgemm import autotune

    rng = np.random.default_rng()
    m, n, k = 1500, 200, 700  # 2 m n k = 4.2e8: the medium tiles are timed (MEDIUM_FROM_FLOPS)
    ha, hb = uniform(rng, (m, k), np.float64), uniform(rng, (k, n), np.float64)
    a, b = cupy.asarray(ha), cupy.asarray(hb)
    c = cupy.asarray(np.full((m, n), np.nan, order="F"))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(selection.CUBLAS_ENV, "0")
        plans.clear()
        assert tg.dgemm(1.0, a, b, c=c, overwrite_c=1) is c
        records = [r for r in autotune.history() if set(r["shape"][1:3]) == {m, n}]
    plans.clear()
    assert_gemm(cupy.asnumpy(c), 1.0, ha, hb, 0.0, None, np.float64)
    assert records, "the call autotuned"
    timed = {text: ms for text, ms in zip(records[-1]["candidates"], records[-1]["ms"],
                                          strict=True)}  # fmt: skip
    medium = [text for text in timed if "MIN_BLOCKS=3" in text]
    for tile in dmma.MEDIUM_TILES:  # (timed where the table's first own candidate splits k)
        assert any(f"BM={tile['BM']},BN={tile['BN']}," in text for text in medium), (
            f"the {tile['BM']} x {tile['BN']} medium tile among the candidates: {list(timed)}")
    assert all(np.isfinite(timed[text]) for text in medium), "each ran"
