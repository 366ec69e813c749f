"""Stream-K in the simt family (issue 15, item 1): STREAM_K configs (named explicitly: the
values are out of the search space until this passes; the schedule is the data-parallel +
stream-K hybrid) are accurate against float64 with C poisoned by NaN beforehand, for the
wave-quantisation shapes (pure stream-K, hybrid, all data-parallel) and odd edges, all four
transposes, aligned and not, beta 0 and not, with per-k-tile addresses and with the cursors
and serpentine fmas that autotuning's stream-K variants run, and bit-equal from run to run
(the fixup adds a split tile's partial sums in k order). Bit-equality with the data-parallel
kernel is not expected (split tiles group k differently), so it is not tested:

    TUNEDGEMM_TEST_PRECOMPILE=0 python -m pytest -q -m gpu tests/gpu/test_stream_k_gpu.py
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from helpers import (
    assert_bit_equal_and_accurate,
    assert_stream_k_schedules,
    assert_whole_tiles_match_data_parallel,
    every_layout,
)

from tunedgemm import gpu_backend
from tunedgemm.families import FAMILIES, simt
from tunedgemm.params import KernelConfig

pytestmark = pytest.mark.gpu

# The last three with 128 x 128 tiles on 132 SMs: 576 tiles (STREAM_K=1: 396 data-parallel,
# 180 stream-K), 132 (STREAM_K=1: all data-parallel; 2: pure stream-K), 133 (T = G + 1).
SHAPES = [(3072, 96, 3072), (96, 6000, 2000), (777, 3333, 1555), (1, 1, 1), (5, 7, 3),
          (129, 129, 1000), (128, 128, 5), (3000, 3000, 600), (1536, 1408, 300),
          (17024, 128, 200)]  # fmt: skip


def _config(stream_k: int, **changes: int) -> KernelConfig:
    base = FAMILIES["simt"].default_config("float32").as_dict()
    return KernelConfig.make("simt", {**base, **changes, "STREAM_K": stream_k})


# The variant autotuning times (simt.STREAM_K_CHANGES: each step's copies walk cursors set up
# at its first k-tile), beside the schedule with per-k-tile addresses.
LOOPS = {"cursors": simt.STREAM_K_CHANGES, "addresses": {}}


@pytest.mark.parametrize("loop", sorted(LOOPS))
@pytest.mark.parametrize("stream_k", simt.STREAM_K_ON)
@pytest.mark.parametrize("m,n,k", SHAPES)
def test_stream_k_is_accurate_and_bit_equal_run_to_run(stream_k, m, n, k, loop):
    config = _config(stream_k, **LOOPS[loop])
    rng = np.random.default_rng()
    for problem in every_layout(m, n, k, np.float32, rng):
        assert_bit_equal_and_accurate(problem, config, rng)


def test_stream_k_schedule_really_splits_tiles():
    assert_stream_k_schedules(_config(1), _config(1), "float32")


def test_whole_tiles_match_the_data_parallel_kernel_bit_for_bit():
    """Everywhere a whole tile runs the data-parallel kernel's fmas in its k order: the same
    bits as STREAM_K=0."""
    assert_whole_tiles_match_data_parallel(_config, "float32")


@pytest.mark.parametrize("m,n,k", [(777, 3333, 1555), (3000, 3000, 600), (129, 129, 1000)])
def test_cursors_give_the_same_bits_as_per_tile_addresses(m, n, k):
    """The loop twin's changes are a twin under stream-K too: the same copies into the same
    shared slots, the same fmas in the same k order, in every transpose and alignment."""
    from tunedgemm.tuning import problems

    rng = np.random.default_rng()
    for (ta, tb), padded in itertools.product(itertools.product((False, True), repeat=2),
                                              (False, True)):  # fmt: skip
        problem = problems.make(m, n, k, np.float32, ta, tb, rng, padded=padded)
        outs = []
        for changes in LOOPS.values():
            problem.poison_c()
            gpu_backend.run(problem.form, problem.dtype, 1.0, 0.0, _config(1, **changes))
            outs.append(problem.c())
        where = f"{(m, n, k, ta, tb, padded)}"
        assert np.isfinite(outs[0]).all(), f"unwritten elements at {where}"
        assert outs[0].tobytes() == outs[1].tobytes(), f"cursors changed the bits at {where}"
