"""The wave model without a GPU: residency, wave and k-step quantization, split-K, the floor."""

from __future__ import annotations

import pytest

from tunedgemm import model
from tunedgemm.families import FAMILIES
from tunedgemm.params import KernelConfig

SIMT = FAMILIES["simt"].default_config("float32")  # 128 x 128 tiles, BK 8, 2 blocks per SM
ONE_WAVE = 132 * 2  # tiles of SIMT that one wave of an H100 runs


def simt(**changes: int) -> KernelConfig:
    return KernelConfig.make("simt", {**SIMT.as_dict(), **changes})


def test_residency_from_min_blocks_capped_by_smem_and_threads():
    assert model.resident_blocks(SIMT, "float32") == 2
    assert model.resident_blocks(FAMILIES["tiled"].default_config("float64"), "float64") == 1
    # 256 threads: eight fit in 2048 threads, whatever MIN_BLOCKS asks for.
    assert model.resident_blocks(simt(MIN_BLOCKS=16), "float32") == 8
    # About 130 KB of shared memory each: only one fits, though MIN_BLOCKS says two.
    big = simt(BM=256, BN=256, BK=16, STAGES=4, WM=64, WN=64, TM=16, TN=8)
    assert model.resident_blocks(big, "float32") == 1


def test_one_more_wave_predicts_more_time():
    full = (128 * 12, 128 * 22, 1024)  # 264 tiles: exactly one wave
    assert model.waves(SIMT, "float32", full) == 1
    one_more = (full[0], full[1] + 1, full[2])  # one more column of tiles
    assert model.waves(SIMT, "float32", one_more) == 2
    slower = model.predicted_ms(SIMT, "float32", one_more, full, 1.0)
    assert slower == pytest.approx(model.LAUNCH_FLOOR_MS + (1.0 - model.LAUNCH_FLOOR_MS) * 2)
    # Inside a wave, fewer tiles do not make it faster: the wave takes as long.
    assert model.predicted_ms(SIMT, "float32", (128, 128, 1024), full, 1.0) == pytest.approx(1.0)
    assert model.predicted_ms(SIMT, "float32", full, full, 0.7) == pytest.approx(0.7)


def test_fewer_sms_means_more_waves():
    shape = (128 * 12, 128 * 22, 1024)
    assert model.waves(SIMT, "float32", shape, num_sms=66) == 2 * model.waves(
        SIMT, "float32", shape
    )


def test_split_k_reduces_k_steps_and_adds_tiles():
    assert model.k_steps(SIMT, (1024, 1024, 4096)) == 4096 // 8
    split = simt(SPLIT_K=4)
    assert model.k_steps(split, (1024, 1024, 4096)) == 4096 // 4 // 8
    assert model.k_steps(split, (1024, 1024, 4097)) == 129  # a partial k-tile is a step
    few_tiles = (256, 256, 8192)  # 4 tiles: split-K stays within one wave
    sliced = 8192 // 4 // 8 + model.BLOCK_OVERHEAD_STEPS + 4 * model.SPLIT_STEPS
    assert model.work_units(split, "float32", few_tiles) == sliced
    assert model.work_units(SIMT, "float32", few_tiles) == 8192 // 8 + model.BLOCK_OVERHEAD_STEPS
    many_tiles = (128 * 12, 128 * 22, 8192)  # one full wave: split-K makes four
    assert model.waves(split, "float32", many_tiles) == 4


def test_stream_k_fills_the_sms_where_tiles_do_not():
    """24 tiles of 384 k-steps: the data-parallel grid is one wave of 390 steps; stream-K's
    264 blocks (STREAM_K = MIN_BLOCKS = 2) share the 9216 iterations, 35 each plus two
    blocks' and one slice's fixed costs. Whole waves cost what the data-parallel grid does."""
    sk = simt(STREAM_K=2)
    few_tiles = (3072, 96, 3072)
    assert model.work_units(SIMT, "float32", few_tiles) == 384 + model.BLOCK_OVERHEAD_STEPS
    assert model.work_units(sk, "float32", few_tiles) == (
        35 + 2 * model.BLOCK_OVERHEAD_STEPS + model.SPLIT_STEPS
    )
    full = (128 * 12, 128 * 22, 1024)  # 264 tiles = G: all data-parallel, one round
    assert model.work_units(sk, "float32", full) == model.work_units(SIMT, "float32", full)
    # 2G + 1 tiles: one data-parallel wave, then G + 1 tiles' iterations over G blocks.
    one_more = (128 * 23, 128 * 23, 1024)  # 529 tiles
    s_units = model.work_units(sk, "float32", one_more)
    assert s_units == 128 + 6 + (265 * 128 + 263) // 264 + 12 + model.SPLIT_STEPS
    assert s_units < model.work_units(SIMT, "float32", one_more) == 3 * (128 + 6)
    # STREAM_K=1 with two resident blocks per SM: the model's half-empty SMs, a round each.
    assert model.work_units(simt(STREAM_K=1), "float32", full) == 2 * (128 + 6)


@pytest.mark.parametrize("measured_ms", [0.0, 0.001, 0.004, 0.05])
def test_never_below_the_launch_floor(measured_ms):
    tiny = model.predicted_ms(SIMT, "float32", (64, 64, 8), (8192, 8192, 8192), measured_ms)
    assert tiny >= model.LAUNCH_FLOOR_MS
    assert model.predicted_ms(SIMT, "float32", (64, 64, 8), (64, 64, 8), 0.0) == (
        model.LAUNCH_FLOOR_MS
    )


def test_monotone_in_k():
    ks = [1, 7, 8, 9, 100, 1000, 4096, 4097, 20000]
    times = [model.predicted_ms(SIMT, "float32", (1000, 1000, k), (1024, 1024, 1024), 0.1)
             for k in ks]  # fmt: skip
    assert times == sorted(times)
    assert times[0] < times[-1]


def test_a_failed_measurement_predicts_infinity():
    assert model.predicted_ms(SIMT, "float32", (64, 64, 64), (64, 64, 64), float("inf")) == (
        float("inf")
    )
