"""Autotuning's large tiles: at large products of many tiles, where cuBLAS is not a candidate,
the first own split-K candidate's family's large tilings (dmma's 128 x 128 tile at m16n8k8
with the cursors, a whole config), unsplit; nothing below LARGE_FROM_FLOPS, where the tiles
fill fewer than LARGE_ROUNDS rounds of their block slots, or for a family without them.
The tile is admitted by the register rule as ptxas-checked: it compiles within the cap in
every variant, with at most dmma.LARGE_TILE_SPILL_BYTES of spills."""

from __future__ import annotations

import itertools
import re
import shutil
from concurrent.futures import ThreadPoolExecutor

import pytest
from helpers import compile_report, nn_key

from tunedgemm import cuda, model, plans, table
from tunedgemm.families import FAMILIES, dmma
from tunedgemm.params import MAX_REGS_PER_THREAD, KernelConfig

SMS = 132
FAMILY = FAMILIES["dmma"]
DEFAULT = FAMILY.default_config("float64")


def _large(tile: dict[str, int]) -> KernelConfig:
    return KernelConfig.make("dmma", {**DEFAULT.as_dict(), **tile, "SPLIT_K": 1})


def test_each_large_tile_is_within_the_rules_though_the_estimate_is_over_the_cap():
    for tile in dmma.LARGE_TILES:
        config = _large(tile)
        assert not FAMILY.violations(config, "float64")
        assert dmma._regs_estimate(config.as_dict()) > MAX_REGS_PER_THREAD
        assert model.resident_blocks(config, "float64") == 1
        # only the tile as declared: its GROUP_M 1 raster twin is not vouched for
        raster = KernelConfig.make("dmma", {**config.as_dict(), "GROUP_M": 1})
        assert FAMILY.violations(raster, "float64")


def test_large_products_of_many_tiles_time_them_unsplit():
    for m, n, k in [(8192, 8192, 8192), (4096, 4096, 4096), (16384, 4096, 2048)]:
        found = plans.with_large_tiles((DEFAULT,), nn_key(m, n, k, "float64"), SMS)
        assert found == tuple(_large(t) for t in dmma.LARGE_TILES), (m, n, k)


def test_small_products_or_few_tiles_or_other_families_time_none():
    for m, n, k in [(3000, 3000, 3000), (16384, 256, 16384), (2048, 2048, 16384)]:
        # (3000^3: 5.4e10 flops; the other two: fewer than 4 rounds of 128 x 128 tiles)
        assert not plans.with_large_tiles((DEFAULT,), nn_key(m, n, k, "float64"), SMS)
    simt = FAMILIES["simt"].default_config("float32")
    assert not plans.with_large_tiles((simt,), nn_key(8192, 8192, 8192), SMS)
    assert not plans.with_large_tiles((table.CUBLAS,), nn_key(8192, 8192, 8192, "float64"), SMS)
    tile = _large(dmma.LARGE_TILES[0])  # already a candidate: not added twice
    assert not plans.with_large_tiles((tile,), nn_key(8192, 8192, 8192, "float64"), SMS)


def test_autotuning_times_them_beside_the_first_candidate_where_cublas_is_not_one(monkeypatch):
    monkeypatch.setattr(cuda, "sm_count", lambda: SMS)
    key = nn_key(8192, 8192, 8192, "float64")
    found = plans.with_large_tiles((DEFAULT,), key, SMS)
    assert found and set(found) <= set(plans.own_candidates((DEFAULT,), key))
    # with cuBLAS as a candidate (auto mode) they are not timed: see plans.LARGE_FROM_FLOPS
    assert not set(found) & set(plans.own_candidates((table.CUBLAS, DEFAULT), key))


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
@pytest.mark.parametrize("tile", dmma.LARGE_TILES)
def test_large_tiles_fit_the_cap_with_at_most_their_spills_in_every_variant(tile, tmp_path):
    def report(variant: tuple[int, int, int, int, int]) -> str:
        ta, tb, aligned, swap, pad = variant
        config = _large({**tile, "SWAP_AB": swap, "RING_PAD": pad})
        defines = {**FAMILY.defines(config, "float64"), "DTYPE": 1, "TRANS_A": ta,
                   "TRANS_B": tb, "ALIGNED": aligned}  # fmt: skip
        where = tmp_path / "".join(map(str, variant))
        where.mkdir()
        return compile_report("dgemm_mma.cu", defines, where)

    variants = list(itertools.product((0, 1), repeat=5))
    with ThreadPoolExecutor(2) as pool:
        for variant, text in zip(variants, pool.map(report, variants), strict=True):
            (used,) = map(int, re.findall(r"Used (\d+) registers", text))
            spills = sum(map(int, re.findall(r"(\d+) bytes spill stores", text)))
            assert used <= MAX_REGS_PER_THREAD, (variant, used)
            assert spills <= dmma.LARGE_TILE_SPILL_BYTES, (variant, spills)
