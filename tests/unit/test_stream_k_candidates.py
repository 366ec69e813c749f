"""Autotuning's stream-K variants: an own candidate whose output tiles fill the last wave of
the SMs' block slots badly at the call's shape is timed again as its family's stream-K
variants (simt.STREAM_K_CHANGES, STREAM_K = the blocks an SM holds and twice that), and at
long k the first candidate on the family's large stream-K tiles (simt.STREAM_K_TILES),
beside the table's candidates; full waves, short k and families without stream-K get none."""

from __future__ import annotations

from helpers import nn_key, small_simt

from tunedgemm import cuda, model, plans, table
from tunedgemm.families import FAMILIES, simt

SMS = 132


def _streamed(per_sm: int, **changes: int):
    return small_simt(**{**changes, **simt.STREAM_K_CHANGES, "STREAM_K": per_sm})


def test_a_ragged_last_wave_gets_the_stream_k_variants():
    # 64 x 64 tiles, two blocks an SM: 264 slots. 948 x 2190: 15 x 35 = 525 tiles, 2 waves
    # 99% full; 1000 x 1000: 16 x 16 = 256, 97%; 1100 x 1100: 18 x 18 = 324, 61% of 2 waves.
    assert model.resident_blocks(small_simt(), "float32") == 2
    assert plans.with_stream_k((small_simt(),), nn_key(948, 2190, 1017), SMS) == ()
    assert plans.with_stream_k((small_simt(),), nn_key(1000, 1000, 1000), SMS) == ()
    assert plans.with_stream_k((small_simt(), table.CUBLAS), nn_key(1100, 1100, 1000), SMS) \
        == (_streamed(2), _streamed(4))  # fmt: skip


def test_the_variants_hold_as_many_blocks_an_sm_as_the_candidate_and_twice_that():
    one = small_simt(MIN_BLOCKS=1)
    # 900 x 1100: 15 x 18 = 270 tiles on 132 slots, 68% of 3 waves.
    variants = plans.with_stream_k((one,), nn_key(900, 1100, 1000), SMS)
    assert variants == (_streamed(1, MIN_BLOCKS=1), _streamed(2, MIN_BLOCKS=1))
    assert not any(FAMILIES["simt"].violations(v, "float32") for v in variants)


def test_long_k_adds_the_large_stream_k_tiles_of_the_first_candidate():
    # 256 x 13726: 108 tiles of 256 x 128 on 132 SMs (82%), 216 of 128 x 128 on 264 (82%).
    key = nn_key(256, 13726, plans.STREAM_K_TILES_FROM_K)
    first, second = small_simt(), small_simt(GROUP_M=1)
    large = [small_simt(**{**simt.STREAM_K_CHANGES, **tile}) for tile in simt.STREAM_K_TILES]
    timed = plans.with_stream_k((first, second), key, SMS)
    assert set(large) <= set(timed)
    assert not any(v["BM"] == 256 and v["GROUP_M"] == 1 for v in timed)  # the first's only
    shorter = nn_key(256, 13726, plans.STREAM_K_TILES_FROM_K - 1)
    assert not set(large) & set(plans.with_stream_k((first, second), shorter, SMS))


def test_short_k_stream_k_configs_and_other_families_get_none():
    short = nn_key(1100, 1100, (plans.STREAM_K_FROM_KTILES - 1) * 32)
    assert plans.with_stream_k((small_simt(),), short, SMS) == ()
    already = small_simt(SPLIT_K=1, STREAM_K=1)
    assert plans.with_stream_k((already,), nn_key(1100, 1100, 1000), SMS) == ()
    dmma = FAMILIES["dmma"].default_config("float64")  # (its stream-K lost: dmma.STREAM_K_ON)
    assert plans.with_stream_k((dmma,), nn_key(1100, 1100, 1000, "float64"), SMS) == ()


def test_own_candidates_time_them_after_the_twins(monkeypatch):
    monkeypatch.setattr(cuda, "sm_count", lambda: SMS)
    monkeypatch.setattr(plans, "RASTERS_OF", 0)  # raster twins aside (test_raster_twins.py)
    timed = plans.own_candidates((small_simt(),), nn_key(1100, 1100, 1000))
    # (then the first unsplit: its 324 tiles fill its 264 slots at short k, with_unsplit_grids)
    assert timed == (small_simt(), small_simt(**simt.LOOP_TWIN), _streamed(2), _streamed(4),
                     small_simt(SPLIT_K=1))  # fmt: skip
