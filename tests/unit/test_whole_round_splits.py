"""Autotuning's whole-round splits: at a shape of few output tiles, the first own split-K
candidate is timed again with the k-splits whose blocks fill one or two rounds over the SMs
(at one block per SM and at the blocks the config holds), which the powers of two leave
part-empty (384x384x3072 float64: 36 tiles of 64 x 64, 8 slices are 288 blocks on 264)."""

from __future__ import annotations

from helpers import nn_key, small_simt

from tunedgemm import cuda, model, plans, table
from tunedgemm.families import FAMILIES

SMS = 132


def _dmma(**changes: int):
    base = FAMILIES["dmma"].default_config("float64").as_dict()
    tile = {"BM": 64, "BN": 64, "WM": 32, "WN": 32, "MIN_BLOCKS": 2, "SPLIT_K": 8}
    return FAMILIES["dmma"].recorded({**base, **tile, **changes})


def _splits(configs) -> list[int]:
    return [c.as_dict()["SPLIT_K"] for c in configs]


def test_the_splits_that_fill_one_and_two_rounds_at_one_and_at_two_blocks_an_sm():
    config = _dmma()
    assert model.resident_blocks(config, "float64") == 2
    # 36 tiles: 132 // 36 = 3 and 264 // 36 = 7 slices a round at one and at two blocks an SM.
    found = plans.with_whole_round_splits((config,), nn_key(384, 384, 3072, "float64"), SMS)
    assert _splits(found) == [3, 7, 14]
    assert all(c.as_dict() == {**config.as_dict(), "SPLIT_K": c.as_dict()["SPLIT_K"]}
               for c in found)  # fmt: skip


def test_blocks_of_each_split_fit_their_rounds_as_nearly_as_whole_slices_can():
    key = nn_key(384, 384, 3072, "float64")
    for c in plans.with_whole_round_splits((_dmma(),), key, SMS):
        blocks = 36 * c.as_dict()["SPLIT_K"]
        assert any(rounds * SMS * per_sm - 36 < blocks <= rounds * SMS * per_sm
                   for rounds in plans.WHOLE_ROUNDS for per_sm in (1, 2))  # fmt: skip


def test_slices_keep_two_k_tiles_and_the_own_split_is_not_repeated():
    # k = 96: 6 k-tiles of 16, so at most 3 slices; 3 is the config's own split.
    found = plans.with_whole_round_splits((_dmma(SPLIT_K=3),), nn_key(384, 384, 96, "float64"),
                                          SMS)  # fmt: skip
    assert found == ()


def test_many_tiles_stream_k_and_cublas_get_none():
    key = nn_key(4096, 4096, 4096)
    assert plans.with_whole_round_splits((small_simt(), table.CUBLAS), key, SMS) == ()
    streamk = small_simt(SPLIT_K=1, STREAM_K=1)
    assert plans.with_whole_round_splits((streamk,), nn_key(384, 384, 3072), SMS) == ()


def test_own_candidates_time_them_for_the_first_own_candidate_only(monkeypatch):
    monkeypatch.setattr(cuda, "sm_count", lambda: SMS)
    first, second = _dmma(), _dmma(GROUP_M=1)
    key = nn_key(384, 384, 3072, "float64")
    timed = plans.own_candidates((table.CUBLAS, first, second), key)
    expected = plans.with_whole_round_splits((first,), key, SMS)
    assert expected and set(expected) <= set(timed)
    own = [c for c in timed if c != table.CUBLAS]
    assert not any(c.as_dict() == {**second.as_dict(), "SPLIT_K": s}
                   for c in own for s in (3, 7, 14))  # fmt: skip
