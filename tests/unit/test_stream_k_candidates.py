"""Autotuning's stream-K variants: an own candidate whose output tiles fill the last wave of
the SMs' block slots badly at the call's shape is timed again as its family's stream-K
variant (simt.STREAM_K_CHANGES, STREAM_K = the blocks an SM holds), beside the table's
candidates; full waves, short k and families without stream-K get none."""

from __future__ import annotations

from helpers import nn_key, small_simt

from tunedgemm import cuda, model, plans, table
from tunedgemm.families import FAMILIES, simt

SMS = 132


def _streamed(**changes: int):
    return small_simt(**{**changes, **simt.STREAM_K_CHANGES, "STREAM_K": 2})


def test_a_ragged_last_wave_gets_the_stream_k_variant():
    # 948 x 2190: 15 x 35 = 525 tiles of 64 x 64 on 264 slots (two blocks an SM): 2 waves,
    # the second 99% full; 3000 x 2190: 47 x 35 = 1645 tiles, 6.23 waves: 89% of 7 waves.
    assert model.resident_blocks(small_simt(), "float32") == 2
    assert plans.with_stream_k((small_simt(),), nn_key(948, 2190, 1017), SMS) == ()
    # 1000 x 1000: 16 x 16 = 256 tiles, one wave 97% full; 1100 x 1100: 18 x 18 = 324, 61%.
    assert plans.with_stream_k((small_simt(),), nn_key(1000, 1000, 1000), SMS) == ()
    assert plans.with_stream_k((small_simt(), table.CUBLAS), nn_key(1100, 1100, 1000), SMS) \
        == (_streamed(),)  # fmt: skip


def test_the_variant_holds_as_many_blocks_an_sm_as_the_candidate():
    one = small_simt(MIN_BLOCKS=1)
    # 900 x 1100: 15 x 18 = 270 tiles on 132 slots, 68% of 3 waves.
    (variant,) = plans.with_stream_k((one,), nn_key(900, 1100, 1000), SMS)
    assert variant == small_simt(MIN_BLOCKS=1, **{**simt.STREAM_K_CHANGES, "STREAM_K": 1})
    assert not FAMILIES["simt"].violations(variant, "float32")


def test_short_k_stream_k_configs_and_other_families_get_none():
    short = nn_key(1100, 1100, (plans.STREAM_K_FROM_KTILES - 1) * 32)
    assert plans.with_stream_k((small_simt(),), short, SMS) == ()
    already = small_simt(SPLIT_K=1, STREAM_K=1)
    assert plans.with_stream_k((already,), nn_key(1100, 1100, 1000), SMS) == ()
    dmma = FAMILIES["dmma"].default_config("float64")
    assert plans.with_stream_k((dmma,), nn_key(1100, 1100, 1000, "float64"), SMS) == ()


def test_own_candidates_time_it_after_the_twins(monkeypatch):
    monkeypatch.setattr(cuda, "sm_count", lambda: SMS)
    timed = plans.own_candidates((small_simt(),), nn_key(1100, 1100, 1000))
    assert timed == (small_simt(), small_simt(**simt.LOOP_TWIN), _streamed())
