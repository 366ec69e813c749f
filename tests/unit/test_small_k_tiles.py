"""Autotuning's small-k tiles: at short k over many output tiles, the first own split-K
candidate's family's small-k tilings (dmma's 128 x 64 block at two an SM, and cuBLAS's 64 x 128
arrangement at m16n8k8 with SWAP_AB, in plain grid order) on its other settings, unsplit;
nothing at long k, at few tiles, or for a family without them."""

from __future__ import annotations

from helpers import assert_timed_beside_the_first, nn_key, small_simt

from tunedgemm import cuda, model, plans
from tunedgemm.families import FAMILIES

SMS = 132


def _dmma(**changes: int):
    base = FAMILIES["dmma"].default_config("float64").as_dict()
    tile = {"BM": 64, "BN": 64, "WM": 32, "WN": 16, "MIN_BLOCKS": 2, "SPLIT_K": 1}
    return FAMILIES["dmma"].recorded({**base, **tile, **changes})


def test_the_small_k_tiles_come_unsplit_on_the_candidates_other_settings():
    first = _dmma(SPLIT_K=2, STAGES=4)
    found = plans.with_small_k_tiles((first,), nn_key(8192, 8192, 128, "float64"), SMS)
    tiles = FAMILIES["dmma"].small_k_tiles
    assert [f.as_dict() for f in found] == [
        {**first.as_dict(), **tile, "SPLIT_K": 1} for tile in tiles]
    assert [(f["BM"], f["BN"], f["GROUP_M"], f["SWAP_AB"]) for f in found] == [
        (128, 64, 1, 0), (64, 128, 1, 1)]
    for f in found:
        assert model.resident_blocks(f, "float64") == 2
        assert not FAMILIES["dmma"].violations(f, "float64")


def test_cublas_arrangement_passes_the_register_rule_only_as_ptxas_checked_it():
    # _regs_estimate says 256 of 255; ptxas allotted 246-254 without spills (PTXAS_CHECKED).
    family, tile = FAMILIES["dmma"], FAMILIES["dmma"].small_k_tiles[1]
    assert not family.violations(_dmma(**tile), "float64")
    for changes in ({"GROUP_M": 8}, {"STAGES": 4}, {"SPLIT_K": 2}):
        assert any("registers" in v for v in family.violations(_dmma(**{**tile, **changes}),
                                                                 "float64"))  # fmt: skip


def test_up_to_small_k_upto_and_from_a_round_of_tiles():
    first = _dmma()
    at = plans.SMALL_K_UPTO
    assert plans.with_small_k_tiles((first,), nn_key(4096, 4096, at, "float64"), SMS)
    assert not plans.with_small_k_tiles((first,), nn_key(4096, 4096, at + 1, "float64"), SMS)
    # 2048 x 2048: 512 tiles of 128 x 64 against 264 slots; 1024 x 1024: 128, fewer.
    assert plans.with_small_k_tiles((first,), nn_key(2048, 2048, 128, "float64"), SMS)
    assert not plans.with_small_k_tiles((first,), nn_key(1024, 1024, 128, "float64"), SMS)


def test_none_for_a_candidate_that_is_the_tile_already_or_a_family_without_them():
    key = nn_key(8192, 8192, 128, "float64")
    for tile in FAMILIES["dmma"].small_k_tiles:
        others = [t for t in FAMILIES["dmma"].small_k_tiles if t is not tile]
        found = plans.with_small_k_tiles((_dmma(**tile),), key, SMS)
        assert [f.as_dict() for f in found] == [_dmma(**{**tile, **t}).as_dict() for t in others]
    assert not plans.with_small_k_tiles((small_simt(),), nn_key(8192, 8192, 128), SMS)


def test_autotuning_times_it_beside_the_first_candidate(monkeypatch):
    monkeypatch.setattr(cuda, "sm_count", lambda: SMS)
    key = nn_key(8192, 8192, 128, "float64")
    assert_timed_beside_the_first(plans.with_small_k_tiles, _dmma(), key, 2, SMS)
