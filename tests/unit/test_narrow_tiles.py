"""Narrow tiles as autotuning's relatives (simt's 128 x 32 and 32 x 128, dmma's 64 x 32 and
32 x 64): timed only at skinny shapes with long k, each with the k-split that gives every SM
its family's blocks (simt 4, dmma 1.5), half and twice that, and the least split of any
size that gives them; they compile for sm_90 without spills."""

from __future__ import annotations

import pytest
from helpers import assert_no_spills, compile_report, nn_key, small_simt

from tunedgemm import cuda, launch, plans, table
from tunedgemm.families import FAMILIES, simt
from tunedgemm.params import KernelConfig

SMS = 132
_simt, _key = small_simt, nn_key


def _tiles_and_splits(configs) -> list[tuple[int, int, int]]:
    return [(c.as_dict()["BM"], c.as_dict()["BN"], c.as_dict()["SPLIT_K"]) for c in configs]


def test_narrow_tiles_are_legal_simt_configs_with_the_loop_twin():
    for tile in simt.NARROW_TILES:
        config = KernelConfig.make("simt", {**_simt().as_dict(), **tile})
        assert not FAMILIES["simt"].violations(config, "float32")
        assert {k: config.as_dict()[k] for k in simt.LOOP_TWIN} == simt.LOOP_TWIN
        assert FAMILIES["simt"].block_tile(config.as_dict()) in ((128, 32), (32, 128))


@pytest.mark.parametrize("shape, expected", [
    # 1473 x 140: 12 x 5 = 60 tiles of 128 x 32; 60 x 16 >= 4 x 132, and 60 x 9 the least;
    # 47 x 2 = 94 of 32 x 128: 94 x 8, and 94 x 6 the least.
    ((1473, 140, 7081), [(128, 32, 16), (128, 32, 8), (128, 32, 32), (128, 32, 9),
                         (32, 128, 8), (32, 128, 4), (32, 128, 16), (32, 128, 6)]),
    # 65 x 1292: 41 tiles of 128 x 32, 41 x 16 = 656 >= 528 (13 the least); 3 x 11 = 33 of
    # 32 x 128, where 33 x 16 = 528 is the least too.
    ((65, 1292, 1285), [(128, 32, 16), (128, 32, 8), (128, 32, 32), (128, 32, 13),
                        (32, 128, 16), (32, 128, 8), (32, 128, 32)]),
    # 9947 x 78: 234 tiles of 128 x 32, so 4 slices (3 the least); 311 x 1 of 32 x 128, so 2.
    ((9947, 78, 1422), [(128, 32, 4), (128, 32, 2), (128, 32, 8), (128, 32, 3),
                        (32, 128, 2), (32, 128, 1), (32, 128, 4)]),
    # 146 x 5866 (TT float32's worst random shape of 2026-12-01): 2 x 184 = 368 tiles of
    # 128 x 32, 2 slices either way; 5 x 46 = 230 of 32 x 128, 4 the power of two, 3 the least.
    ((146, 5866, 434), [(128, 32, 2), (128, 32, 1), (128, 32, 4),
                        (32, 128, 4), (32, 128, 2), (32, 128, 8), (32, 128, 3)]),
    # 5453 x 392 (inside NARROW_BELOW since 20:09 UTC): 43 x 13 = 559 tiles of 128 x 32.
    ((5453, 392, 3458), [(128, 32, 1), (128, 32, 2), (32, 128, 1), (32, 128, 2)]),
    # Very long k: at most MAX_SPLIT_K slices.
    ((40, 40, 1 << 20), [(128, 32, plans.MAX_SPLIT_K), (128, 32, plans.MAX_SPLIT_K // 2),
                          (32, 128, plans.MAX_SPLIT_K), (32, 128, plans.MAX_SPLIT_K // 2)]),
])  # fmt: skip
def test_skinny_long_k_shapes_get_both_tiles_with_four_blocks_per_sm(shape, expected):
    assert _tiles_and_splits(plans.with_narrow_tiles((_simt(),), _key(*shape), SMS)) == expected


def test_each_slice_keeps_two_k_tiles():
    # k = 600: 38 k-tiles of 16, so at most 16 slices of two or more (and half that).
    found = plans.with_narrow_tiles((_simt(),), _key(40, 40, 600), SMS)
    assert {c.as_dict()["SPLIT_K"] for c in found} == {16, 8}


@pytest.mark.parametrize("shape", [(600, 2218, 9857), (4096, 4096, 4096), (100, 100, 255),
                                   (64, 64, 64)])  # fmt: skip
def test_wide_or_short_k_shapes_get_none(shape):
    assert plans.with_narrow_tiles((_simt(),), _key(*shape), SMS) == ()


def test_dmma_gets_its_own_narrow_tiles_with_its_splits():
    dmma = FAMILIES["dmma"].default_config("float64")
    found = plans.with_narrow_tiles((dmma,), _key(1473, 140, 7081, "float64"), SMS)
    # 24 x 5 = 120 tiles of 64 x 32: 2 slices give 240 >= 1.5 x 132, the least too; 47 x 3 =
    # 141 of 32 x 64.
    assert _tiles_and_splits(found) == [(64, 32, 2), (64, 32, 1), (64, 32, 4),
                                        (32, 64, 2), (32, 64, 1), (32, 64, 4)]  # fmt: skip
    assert all(not FAMILIES["dmma"].violations(c, "float64") for c in found)
    assert _tiles_and_splits(plans.with_narrow_tiles(
        (dmma,), _key(125, 665, 7720, "float64"), SMS)) == [
            (64, 32, 8), (64, 32, 4), (64, 32, 16), (64, 32, 5),
            (32, 64, 8), (32, 64, 4), (32, 64, 16), (32, 64, 5)]


def test_stream_k_and_cublas_get_none():
    streamk = _simt(SPLIT_K=1, STREAM_K=1, MIN_BLOCKS=1)
    assert plans.with_narrow_tiles((streamk, table.CUBLAS), _key(100, 100, 8192), SMS) == ()


def test_own_candidates_time_them_for_the_first_own_candidate_only(monkeypatch):
    monkeypatch.setattr(cuda, "sm_count", lambda: SMS)
    first, second = _simt(), _simt(STAGES=2)
    timed = plans.own_candidates((table.CUBLAS, first, second), _key(1473, 140, 7081))
    own = [c for c in timed if isinstance(c, KernelConfig)]
    # (128 x 32 and 32 x 128; 64 x 32 is a medium tile, timed here too)
    narrow = [c for c in own if FAMILIES["simt"].block_tile(c.as_dict()) in {(128, 32), (32, 128)}]
    assert _tiles_and_splits(narrow) == [
        (128, 32, 16), (128, 32, 8), (128, 32, 32), (128, 32, 9),
        (32, 128, 8), (32, 128, 4), (32, 128, 16), (32, 128, 6)]  # fmt: skip
    assert all(c.as_dict()["GROUP_M"] == first.as_dict()["GROUP_M"] for c in narrow)
    assert len(timed) == len(set(timed))
    square = plans.own_candidates((table.CUBLAS, first), _key(4096, 4096, 4096))
    assert all(FAMILIES["simt"].block_tile(c.as_dict()) == (64, 64) for c in square[2:])


NARROW = [("simt", "float32", tile) for tile in simt.NARROW_TILES] + \
    [("dmma", "float64", tile) for tile in FAMILIES["dmma"].narrow_tiles]  # fmt: skip


@pytest.mark.parametrize("name, dtype, tile", NARROW,
                         ids=lambda v: f"{v['BM']}x{v['BN']}" if isinstance(v, dict) else v)
@pytest.mark.parametrize("split", [1, 8])
def test_narrow_tiles_compile_without_spills(tmp_path, name, dtype, tile, split):
    family = FAMILIES[name]
    config = KernelConfig.make(name, {**family.default_config(dtype).as_dict(), **tile,
                                      "SPLIT_K": split})  # fmt: skip
    assert not family.violations(config, dtype)
    # TRANS_A, unaligned: the variant that took the most registers (simt: 174 at SPLIT_K=1).
    defines = launch._defines(config, dtype, True, False, False)
    assert_no_spills(compile_report(family.source, defines, tmp_path), str(config))
