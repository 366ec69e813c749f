"""Autotuning's wave-filling splits: an own candidate whose grid leaves SMs idle at the call's
shape is timed again with the least power-of-two k-split that fills them (each slice keeping
two k-tiles, at most plans.MAX_SPLIT_K), beside the table's candidates and their twins."""

from __future__ import annotations

from helpers import nn_key, small_simt

from tunedgemm import cuda, plans, table
from tunedgemm.families import FAMILIES, simt

SMS = 132
_simt, _key = small_simt, nn_key


def test_a_starved_grid_gets_the_split_that_fills_the_sms():
    # 322 x 57: 6 tiles of 64 x 64; 6 x 32 = 192 blocks fill 132 SMs, 6 x 16 = 96 do not.
    timed = plans.with_wave_filling_splits((_simt(), table.CUBLAS), _key(322, 57, 5243), SMS)
    assert timed == (_simt(), table.CUBLAS, _simt(SPLIT_K=32))


def test_the_least_split_that_fills_them_and_never_a_narrower_one():
    # 1473 x 140: 24 x 3 = 72 tiles; 72 x 2 = 144 >= 132.
    assert plans.with_wave_filling_splits((_simt(SPLIT_K=1),), _key(1473, 140, 7081), SMS)[1:] \
        == (_simt(SPLIT_K=2),)  # fmt: skip
    # 72 tiles at SPLIT_K=4 already fill the SMs.
    assert plans.with_wave_filling_splits((_simt(),), _key(1473, 140, 7081), SMS) == (_simt(),)


def test_each_slice_keeps_two_k_tiles_and_the_split_stays_within_the_cap():
    # k = 320: 10 k-tiles of 32; a split of 8 would leave slices under two k-tiles: 4 stays.
    assert plans.with_wave_filling_splits((_simt(),), _key(64, 64, 320), SMS) == (_simt(),)
    # k = 1024: 32 k-tiles, so 16 slices of two; the one tile would take more.
    assert plans.with_wave_filling_splits((_simt(),), _key(64, 64, 1024), SMS)[1:] == \
        (_simt(SPLIT_K=16),)  # fmt: skip
    # Very long k: the cap.
    assert plans.with_wave_filling_splits((_simt(),), _key(64, 64, 1 << 20), SMS)[1:] == \
        (_simt(SPLIT_K=plans.MAX_SPLIT_K),)  # fmt: skip


def test_filled_grids_stream_k_and_cublas_are_left_alone():
    big = (_simt(SPLIT_K=1), table.CUBLAS)
    assert plans.with_wave_filling_splits(big, _key(4096, 4096, 4096), SMS) == big
    streamk = _simt(SPLIT_K=1, STREAM_K=1)
    assert plans.with_wave_filling_splits((streamk,), _key(322, 57, 5243), SMS) == (streamk,)


def test_float64_candidates_widen_as_well():
    dmma = FAMILIES["dmma"].default_config("float64")
    timed = plans.with_wave_filling_splits((dmma,), _key(100, 100, 8192, "float64"), SMS)
    assert len(timed) == 2 and timed[1].as_dict()["SPLIT_K"] > dmma.as_dict()["SPLIT_K"]


def test_own_candidates_give_the_wider_split_its_twins_too(monkeypatch):
    monkeypatch.setattr(cuda, "sm_count", lambda: SMS)
    monkeypatch.setattr(plans, "NARROW_BELOW", 0)  # narrow tiles aside (test_narrow_tiles.py)
    monkeypatch.setattr(plans, "STREAM_K_BELOW_FILL", 0)  # and stream-K (its own test file)
    monkeypatch.setattr(plans, "WHOLE_ROUNDS", ())  # and whole-round splits (theirs)
    monkeypatch.setattr(plans, "with_round_tiles", lambda *a: ())  # and round tiles (theirs)
    monkeypatch.setattr(plans, "with_medium_tiles", lambda *a: ())  # and medium tiles (theirs)
    monkeypatch.setattr(plans, "RASTERS_OF", 0)  # and raster twins (test_raster_twins.py)
    timed = plans.own_candidates((_simt(),), _key(322, 57, 5243))
    twin = simt.LOOP_TWIN
    assert timed == (_simt(), _simt(SPLIT_K=32), _simt(**twin), _simt(SPLIT_K=32, **twin))


def test_only_the_first_own_candidates_get_relatives(monkeypatch):
    monkeypatch.setattr(cuda, "sm_count", lambda: SMS)
    monkeypatch.setattr(plans, "NARROW_BELOW", 0)  # narrow tiles aside (test_narrow_tiles.py)
    monkeypatch.setattr(plans, "STREAM_K_BELOW_FILL", 0)  # and stream-K (its own test file)
    monkeypatch.setattr(plans, "WHOLE_ROUNDS", ())  # and whole-round splits (theirs)
    monkeypatch.setattr(plans, "with_round_tiles", lambda *a: ())  # and round tiles (theirs)
    monkeypatch.setattr(plans, "with_medium_tiles", lambda *a: ())  # and medium tiles (theirs)
    monkeypatch.setattr(plans, "RASTERS_OF", 0)  # and raster twins (test_raster_twins.py)
    own = [_simt(STAGES=s, GROUP_M=g) for s in (2, 3) for g in (1, 8)]
    candidates = (table.CUBLAS, *own)
    timed = plans.own_candidates(candidates, _key(322, 57, 5243))
    assert timed[: len(candidates)] == candidates
    expected = set()
    for config in own[: plans.RELATIVES_OF]:  # each: its wide split, its twin, the wide twin
        p = config.as_dict()
        expected |= {_simt(**{**p, "SPLIT_K": 32}), _simt(**{**p, **simt.LOOP_TWIN}),
                     _simt(**{**p, "SPLIT_K": 32, **simt.LOOP_TWIN})}  # fmt: skip
    assert set(timed[len(candidates):]) == expected
    assert len(timed) == len(candidates) + len(expected)


def test_a_family_whose_kernel_fixes_its_k_tile_splits_by_that():
    # tf32_wgmma's kernel stages 32 k a tile (no BK tunable): k = 1024 is 32 k-tiles, so 16
    # slices of two, where a guessed 16-deep tile would have allowed 32.
    wgmma = FAMILIES["tf32_wgmma"]
    base = wgmma.default_config("float32", "tf32")
    timed = plans.with_wave_filling_splits((base,), _key(128, 128, 1024), SMS)
    assert [c.as_dict()["SPLIT_K"] for c in timed[1:]] == [16]
