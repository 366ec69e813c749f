"""Stream-K in the dmma family (issue 15, item 1; kernels/streamk.cuh, as simt's): STREAM_K
configs, named explicitly (out of the search space until measured), are accurate against
float64 with C poisoned by NaN beforehand, for wave-quantisation shapes (pure stream-K,
hybrid, all data-parallel) and odd edges, all four transposes, aligned and not, beta 0 and
not, on the family's default tile and on the table's commonest (64 x 64, two blocks per SM,
m16n8k8), with the cursors autotuning's variants run; bit-equal from run to run (the fixup
adds a split tile's partial sums in k order); and a tile done whole gives the data-parallel
kernel's bits:

    TUNEDGEMM_TEST_PRECOMPILE=0 python -m pytest -q -m gpu tests/gpu/test_dmma_stream_k_gpu.py
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import (
    assert_bit_equal_and_accurate,
    assert_stream_k_schedules,
    assert_whole_tiles_match_data_parallel,
    every_layout,
)

from tunedgemm.families import FAMILIES, dmma
from tunedgemm.params import KernelConfig

pytestmark = pytest.mark.gpu

# On 132 SMs, of 128 x 128 tiles: 3072x96x3072 24 (all stream-K), 777x3333x1555 189 (all
# stream-K: T < 2G; at STREAM_K=2, T < G), 1536x1408x300 132 (STREAM_K=1: all data-parallel),
# 17024x128x200 133 (T = G + 1); of 64 x 64 tiles at two blocks an SM: 600x508x2782 80 (all
# stream-K), 3000x3000x600 2209 (hybrid: data-parallel waves, then the rest split).
SHAPES = [(3072, 96, 3072), (777, 3333, 1555), (1, 1, 1), (5, 7, 3), (129, 129, 1000),
          (128, 128, 5), (3000, 3000, 600), (1536, 1408, 300), (17024, 128, 200),
          (600, 508, 2782)]  # fmt: skip

TILES = {
    "default": {},
    "64x64": {"BM": 64, "BN": 64, "WM": 32, "WN": 16, "MMA_K": 8, "STAGES": 4, "MIN_BLOCKS": 2},
}


def _config(stream_k: int, tile: str = "default", **changes: int) -> KernelConfig:
    base = FAMILIES["dmma"].default_config("float64").as_dict()
    return KernelConfig.make("dmma", {**base, **TILES[tile], **dmma.STREAM_K_CHANGES,
                                      **changes, "STREAM_K": stream_k})  # fmt: skip


@pytest.mark.parametrize("tile", sorted(TILES))
@pytest.mark.parametrize("stream_k", dmma.STREAM_K_ON)
@pytest.mark.parametrize("m,n,k", SHAPES)
def test_stream_k_is_accurate_and_bit_equal_run_to_run(stream_k, m, n, k, tile):
    config = _config(stream_k, tile)
    assert not FAMILIES["dmma"].violations(config, "float64")
    rng = np.random.default_rng()
    for problem in every_layout(m, n, k, np.float64, rng):
        assert_bit_equal_and_accurate(problem, config, rng)


def test_stream_k_schedule_really_splits_tiles():
    assert_stream_k_schedules(_config(1), _config(2, "64x64"), "float64")


def test_whole_tiles_match_the_data_parallel_kernel_bit_for_bit():
    """A whole tile runs the data-parallel kernel's mma in its k order: the same bits as
    STREAM_K=0 with the same cursors."""
    assert_whole_tiles_match_data_parallel(_config, "float64")
