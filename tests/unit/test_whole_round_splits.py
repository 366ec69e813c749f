"""Autotuning's whole-round splits: at a shape of few output tiles, the first own split-K
candidate is timed again with the k-splits whose blocks fill one or two rounds over the SMs
(at one block per SM and at the blocks the config holds), which the powers of two leave
part-empty (384x384x3072 float64: 36 tiles of 64 x 64, 8 slices are 288 blocks on 264), and
the family's round tiles (dmma's and simt's 128 x 64 blocks) at their own whole-round
splits."""

from __future__ import annotations

import itertools
import shutil

import pytest
from helpers import assert_compile_within, nn_key, small_simt

from tunedgemm import cuda, model, plans, table
from tunedgemm.families import FAMILIES, simt
from tunedgemm.params import KernelConfig, register_cap

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


def test_own_candidates_time_them_for_the_first_relatives_of_own_candidates(monkeypatch):
    """Each of the first RELATIVES_OF own candidates gets its whole-round splits (at
    1920x774x1096 float32 the table's second candidate split in two ran 0.96x cuBLAS, its
    first 0.83x: H200, 2026-11-28); the own candidates after them get none."""
    monkeypatch.setattr(cuda, "sm_count", lambda: SMS)
    own = [_dmma(GROUP_M=g) for g in (1, 2, 4, 16)][:plans.RELATIVES_OF + 1]
    key = nn_key(384, 384, 3072, "float64")
    timed = plans.own_candidates((table.CUBLAS, *own), key)
    for first in own[:plans.RELATIVES_OF]:
        expected = plans.with_whole_round_splits((first,), key, SMS)
        assert expected and set(expected) <= set(timed)
    last = own[plans.RELATIVES_OF]
    assert not any(c.as_dict() == {**last.as_dict(), "SPLIT_K": s}
                   for c in timed if c != table.CUBLAS for s in (3, 7, 14))  # fmt: skip


def _tiles_and_splits(configs) -> list[tuple[int, int, int]]:
    return [(c["BM"], c["BN"], c["SPLIT_K"]) for c in configs]


def test_round_tiles_come_at_their_own_whole_round_splits():
    """dmma's round tiles (128 x 64 blocks) on the first candidate's other settings, where its
    36 tiles of 64 x 64 are fewer than its 264 slots: 18 tiles of 128 x 64 fill one round of
    132 slots 7 ways and two 14 ways (one block an SM), or 264 and 528 slots (two)."""
    first = _dmma()
    key = nn_key(384, 384, 3072, "float64")
    found = plans.with_round_tiles((first,), key, SMS)
    one, two = (model.resident_blocks(found[i], "float64") for i in (0, -1))
    assert (one, two) == (1, 2)
    assert _tiles_and_splits(found) == [(128, 64, 7), (128, 64, 14), (128, 64, 7),
                                        (128, 64, 14), (128, 64, 29)]  # fmt: skip
    for config, tile in zip((found[0], found[-1]), FAMILIES["dmma"].round_tiles, strict=True):
        assert all(config[k] == v for k, v in tile.items()), config
        assert config["GROUP_M"] == first["GROUP_M"] or "GROUP_M" in tile
    assert not any(FAMILIES["dmma"].violations(c, "float64") for c in found)


def test_round_tiles_come_unsplit_where_they_fill_half_a_round():
    # 1024 x 1024: 128 tiles of 128 x 64 on 132 SMs (the first candidate's 256 tiles of 64 x
    # 64 fill 264 slots 97%: fewer, so the round tiles are timed).
    found = plans.with_round_tiles((_dmma(SPLIT_K=1),), nn_key(1024, 1024, 384, "float64"), SMS)
    assert (128, 64, 1) in _tiles_and_splits(found)
    few = plans.with_round_tiles((_dmma(SPLIT_K=1),), nn_key(384, 384, 3072, "float64"), SMS)
    assert not any(c["SPLIT_K"] == 1 for c in few)  # 18 tiles: an unsplit grid idles 114 SMs


def test_simts_round_tiles_come_with_the_loop_twin():
    found = plans.with_round_tiles((small_simt(SPLIT_K=4),), nn_key(384, 384, 3072), SMS)
    # One to three rounds (simt.ROUND_TILE_ROUNDS). 18 tiles of 128 x 64 at three blocks an
    # SM: 7, 14 and 22 slices at one block an SM, 22, 44 and 66 at three; 36 two-warp tiles of
    # 64 x 64 at four an SM: 3, 7 and 11 slices, then 14, 29 and 44.
    assert _tiles_and_splits(found) == [
        (128, 64, 7), (128, 64, 14), (128, 64, 22), (128, 64, 44), (128, 64, 66),
        (64, 64, 3), (64, 64, 7), (64, 64, 11), (64, 64, 14), (64, 64, 29), (64, 64, 44)]
    assert [model.resident_blocks(c, "float32") for c in (found[0], found[-1])] == [3, 4]
    assert all(c["ADVANCE"] == 1 and c["FMA_ORDER"] == 1 and c["TM"] == c["TN"] == 8
               for c in found)  # fmt: skip
    assert not any(FAMILIES["simt"].violations(c, "float32") for c in found)


def test_round_tiles_none_for_full_grids_and_families_without_them():
    assert plans.with_round_tiles((_dmma(SPLIT_K=1),), nn_key(4096, 4096, 4096, "float64"),
                                  SMS) == ()  # fmt: skip
    # (split at long k: its round tiles' 2048 tiles of 128 x 64 fill their slots unsplit)
    assert plans.with_round_tiles((_dmma(),), nn_key(4096, 4096, 4096, "float64"), SMS) == ()
    tf32 = FAMILIES["tf32"].default_config("float32")  # (no round tiles)
    assert plans.with_round_tiles((tf32,), nn_key(384, 384, 3072), SMS) == ()


def test_round_tiles_at_their_splits_where_a_first_candidate_of_full_grids_splits_long_k():
    """384x3072x8192 float32: the table's 128 x 32 tile split four ways (288 tiles on 264
    slots) gets the 128 x 64 tile at the splits filling one to three rounds of its 396 slots
    (144 tiles: 2, 5 and 8), not unsplit; at k below ROUND_TILES_SPLIT_FROM_K, nothing."""
    first = small_simt(BM=128, BN=32, WM=32, WN=32, TM=8, TN=4, SPLIT_K=4)
    assert _tiles(first, 384, 3072) == 288
    found = plans.with_round_tiles((first,), nn_key(384, 3072, 8192), SMS)
    assert [s for (bm, bn, s) in _tiles_and_splits(found) if (bm, bn) == (128, 64)] == [2, 5, 8]
    assert not any(c["SPLIT_K"] == 1 for c in found)
    short = nn_key(384, 3072, plans.ROUND_TILES_SPLIT_FROM_K - 16)
    assert plans.with_round_tiles((first,), short, SMS) == ()
    assert plans.with_round_tiles((small_simt(BM=128, BN=32, WM=32, WN=32, TM=8, TN=4,
                                              SPLIT_K=1),), nn_key(384, 3072, 8192), SMS) == ()


def _key(m: int, n: int, k: int, pair: str, aligned: bool = True):
    """The plan key of a float32 product in a transpose pair, leading dimensions unpadded."""
    ta, tb = pair[0] == "T", pair[1] == "T"
    return plans.GemmKey("float32", "ieee", m, n, k, ta, tb, k if ta else m, n if tb else k, m,
                         aligned)  # fmt: skip


LONG_K_FIRST = dict(BM=128, BN=32, WM=32, WN=32, TM=8, TN=4, SPLIT_K=4)


def test_simts_round_tiles_come_as_tns_layout_twins_at_tn_aligned_alone():
    """At TN with aligned operands each round tile is timed as each of its layout twins (the
    longer side's operand through registers, or both copied from cursors) at the splits the
    tile would have;
    unaligned, as declared (as at NT, whose round tiles are the same ones)."""
    first = small_simt(**LONG_K_FIRST)
    declared = plans.with_round_tiles((first,), _key(384, 3072, 8192, "NT"), SMS)
    assert declared and all(c["REG_TRANSPOSE"] == 0 for c in declared)
    staged = plans.with_round_tiles((first,), _key(384, 3072, 8192, "TN"), SMS)
    twins = simt.LAYOUT_TWINS[(True, False)]
    assert len(staged) == len(twins) * len(declared)
    assert set(staged) == {KernelConfig.make("simt", {**c.as_dict(), **twin})
                           for c in declared for twin in twins}  # fmt: skip
    assert not any(FAMILIES["simt"].violations(c, "float32") for c in staged)
    unaligned = _key(384, 3072, 8192, "TN", aligned=False)
    assert plans.with_round_tiles((first,), unaligned, SMS) == declared


@pytest.mark.parametrize("pair,blocks", [
    ("NN", {(128, 64), (64, 64)}),  # B through registers: the tile of fewer columns
    ("TT", {(64, 128), (64, 64)}),  # A through registers: of fewer rows
    ("NT", {(128, 64), (64, 128), (64, 64)}),
    ("TN", {(128, 64), (64, 128), (64, 64)}),
])  # fmt: skip
def test_of_simts_round_tile_and_its_mirror_the_layout_times_the_one_of_its_short_side(
        pair, blocks):  # fmt: skip
    found = plans.with_round_tiles((small_simt(**LONG_K_FIRST),), _key(384, 3072, 8192, pair),
                                   SMS)  # fmt: skip
    assert {(c["BM"], c["BN"]) for c in found} == blocks


@pytest.mark.parametrize("m,n,blocks", [
    (64, 4096, {(64, 128), (64, 64)}),  # (the 128 x 64 computes 64 rows of padding)
    (4096, 64, {(128, 64), (64, 64)}),
    (126, 4096, {(128, 64), (64, 64)}),  # (2 rows of padding: it ran best at 126x1257x8863)
    (90, 90, {(64, 64)}),  # (C fills under three quarters of either larger block)
])  # fmt: skip
def test_simts_round_tiles_that_c_nearly_fills(m, n, blocks):
    found = plans.with_round_tiles((small_simt(**LONG_K_FIRST),), _key(m, n, 16384, "NN"), SMS)
    assert {(c["BM"], c["BN"]) for c in found} == blocks


def test_where_c_nearly_fills_no_round_tile_all_are_timed_less_the_layouts_longer_mirror():
    family = FAMILIES["simt"]
    params = small_simt(**LONG_K_FIRST).as_dict()
    tiles = plans._round_tiles_here(family, params, _key(33, 40, 16384, "NN"))
    assert [(t["BM"], t["BN"]) for t in tiles] == [(128, 64), (64, 64)]
    tiles = plans._round_tiles_here(family, params, _key(33, 40, 16384, "NT"))
    assert tiles == list(simt.ROUND_TILES)


def test_a_stream_k_first_candidate_at_long_k_gets_the_round_tiles_of_its_data_parallel_grid():
    """A stream-K first candidate splits k by its schedule: at long k its family's round tiles
    are timed as for a k-split one (TT 384x3072x8192: the 64 x 128 mirror, 0.96x cuBLAS at 8
    slices where the stream-K pick ran 0.93x), unsplit and not stream-K; at short k none."""
    family = FAMILIES["simt"]
    split = small_simt(**LONG_K_FIRST, BK=16)
    streamed = KernelConfig.make("simt", {**split.as_dict(), **family.stream_k_changes,
                                          "STREAM_K": 2})  # fmt: skip
    assert family.stream_k(streamed.as_dict()) and not family.violations(streamed, "float32")
    key = _key(384, 3072, 8192, "TT")
    found = plans.with_round_tiles((streamed,), key, SMS)
    assert {(c["BM"], c["BN"]) for c in found} == {(64, 128), (64, 64)}
    assert all(c["STREAM_K"] == 0 for c in found)
    assert set(found) == set(plans.with_round_tiles((split,), key, SMS))
    # k under ROUND_TILES_SPLIT_FROM_K, C's 288 tiles of 128 x 32 on 264 slots: not few either.
    short = _key(384, 3072, plans.ROUND_TILES_SPLIT_FROM_K // 2, "TT")
    assert plans.with_round_tiles((streamed,), short, SMS) == ()


def _tiles(config, m: int, n: int) -> int:
    return -(-m // config["BM"]) * -(-n // config["BN"])


def test_own_candidates_time_the_round_tiles_of_the_first_candidate(monkeypatch):
    monkeypatch.setattr(cuda, "sm_count", lambda: SMS)
    first, second = _dmma(), _dmma(GROUP_M=1)
    key = nn_key(384, 384, 3072, "float64")
    timed = plans.own_candidates((first, second), key)
    expected = plans.with_round_tiles((first,), key, SMS)
    assert expected and set(expected) <= set(timed)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
@pytest.mark.parametrize("tile", [0, 1])
@pytest.mark.parametrize("split", [1, 8])
def test_simts_round_tile_fits_three_blocks_an_sm_without_spills(tile, split, tmp_path):
    """simt's 128 x 64 round tile and its 64 x 128 mirror, declared at three blocks an SM,
    within that cap (168) in every transpose pair and alignment, split or not (ptxas, nvcc
    13.0: 122-167 registers)."""
    base = {**FAMILIES["simt"].default_config("float32").as_dict(), **simt.ROUND_TILES[tile]}
    config = KernelConfig.make("simt", {**base, "SPLIT_K": split})
    cap = register_cap(FAMILIES["simt"].threads(config.as_dict()), 3)
    assert config["MIN_BLOCKS"] == 3 and cap == 168
    variants = itertools.product((0, 1), repeat=3)
    assert_compile_within([(config, *v) for v in variants], "float32", cap, tmp_path)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
@pytest.mark.parametrize("split", [1, 8])
def test_simts_round_tiles_through_registers_fit_their_caps_at_tn(split, tmp_path):
    """Each round tile's TN layout twins within its blocks' register cap, aligned and not,
    split or not, without spills (ptxas, nvcc 13.0: the 128 x 64 at three blocks an SM in
    156-168 registers both staged, 158 with A staged)."""
    family = FAMILIES["simt"]
    base = family.default_config("float32").as_dict()
    twins = simt.LAYOUT_TWINS[(True, False)]
    for index, (tile, twin) in enumerate(itertools.product(simt.ROUND_TILES, twins)):
        config = KernelConfig.make("simt", {**base, **tile, **twin, "SPLIT_K": split})
        cap = register_cap(family.threads(config.as_dict()), config["MIN_BLOCKS"])
        where = tmp_path / str(index)
        where.mkdir()
        jobs = [(config, 1, 0, aligned) for aligned in (0, 1)]
        assert_compile_within(jobs, "float32", cap, where)


# The table's first candidate at TN 307x9899x517: 64 x 128 at two blocks an SM, split 4 ways.
FULL_GRID_FIRST = dict(BM=64, BN=128, WM=32, WN=64, TM=8, TN=8, BK=16, STAGES=2, MIN_BLOCKS=2,
                       SPLIT_K=4, REG_TRANSPOSE=1)  # fmt: skip


def test_a_split_over_a_full_grid_at_short_k_is_timed_unsplit_with_the_round_tiles_that_fill():
    """307x9899x517 TN: 390 tiles of 64 x 128 fill the first candidate's 264 slots, so it is
    timed unsplit, with the 64 x 128 round tile (390 tiles on 396 slots, 98% of one wave);
    the 128 x 64 (465 tiles, 59% of two waves of 396) and the two-warp 64 x 64 (775 on 528
    slots, 73%) are not; the round tile as each of TN's layout twins."""
    first = small_simt(**FULL_GRID_FIRST)
    assert model.resident_blocks(first, "float32") == 2
    found = plans.with_unsplit_grids((first,), _key(307, 9899, 517, "TN"), SMS)
    assert [(c["BM"], c["BN"], c["MIN_BLOCKS"]) for c in found] == [
        (64, 128, 2), (64, 128, 3), (64, 128, 3)]
    assert found[0].as_dict() == {**first.as_dict(), "SPLIT_K": 1}
    assert all(c["SPLIT_K"] == 1 for c in found)
    assert [(c["REG_TRANSPOSE"], c["ASYNC_CURSOR"]) for c in found] == [
        (1, 0), (simt.REG_TRANSPOSE_LONGER_SIDE, 1), (0, 1)]  # (the table's, then the twins)
    assert not any(FAMILIES["simt"].violations(c, "float32") for c in found)


@pytest.mark.parametrize("m,n,k", [
    (307, 9899, plans.ROUND_TILES_SPLIT_FROM_K),  # long k: with_round_tiles' shapes
    (307, 2000, 517),  # 80 tiles on 264 slots: the split fills idle SMs
])  # fmt: skip
def test_no_unsplit_grids_at_long_k_or_where_the_grid_leaves_slots_idle(m, n, k):
    first = small_simt(**FULL_GRID_FIRST)
    assert plans.with_unsplit_grids((first,), _key(m, n, k, "TN"), SMS) == ()


def test_no_unsplit_grids_for_unsplit_stream_k_or_cublas():
    unsplit = small_simt(**{**FULL_GRID_FIRST, "SPLIT_K": 1})
    family = FAMILIES["simt"]
    streamed = KernelConfig.make("simt", {**unsplit.as_dict(), **family.stream_k_changes,
                                          "STREAM_K": 2})  # fmt: skip
    key = _key(307, 9899, 517, "TN")
    assert plans.with_unsplit_grids((unsplit, streamed, table.CUBLAS), key, SMS) == ()


def test_own_candidates_time_the_first_candidates_unsplit_grids(monkeypatch):
    monkeypatch.setattr(cuda, "sm_count", lambda: SMS)
    first = small_simt(**FULL_GRID_FIRST)
    key = _key(307, 9899, 517, "TN")
    # (in canonical form: the twin's LANE_PAIRS is inert outside 8 x 4 and 8 x 8 thread tiles)
    unsplit = plans.with_unsplit_grids((first,), key, SMS)
    expected = tuple(FAMILIES["simt"].canonical(c) for c in unsplit)
    assert expected and set(expected) <= set(plans.own_candidates((first,), key))
