"""Which products autotuning also times by the panel kernel (tunedgemm/gemv_like.py), its
configs' geometry and k-splits, and that the kernel compiles without spills."""

from __future__ import annotations

import dataclasses
import itertools
import os
import shutil
from concurrent.futures import ThreadPoolExecutor

import pytest
from helpers import assert_no_spills, compile_report

from tunedgemm import cuda, gemv_like, plans

SMS = 132


@pytest.fixture(autouse=True)
def _sms(monkeypatch):
    monkeypatch.setattr(cuda, "sm_count", lambda: SMS)
    monkeypatch.setattr(gemv_like, "ENABLED", True)
    monkeypatch.setattr(gemv_like, "STAGED_ENABLED", True)


def _key(m: int, n: int, k: int, pair: str = "NN", dtype: str = "float32", **changes):
    ta, tb = pair[0] == "T", pair[1] == "T"
    key = plans.GemmKey(dtype, "ieee", m, n, k, ta, tb, k if ta else m, n if tb else k, m, True)
    return dataclasses.replace(key, **changes)


@pytest.mark.parametrize("short,tile", [(1, 1), (2, 2), (3, 4), (5, 8), (9, 16), (16, 16)])
def test_the_short_side_rounds_up_to_a_power_of_two(short, tile):
    assert gemv_like.short_tile(short) == tile


@pytest.mark.parametrize("m,n,side", [(4, 8192, 0), (8192, 4, 1), (16, 16, 0)])
def test_the_short_side_is_the_block_s_short_side(m, n, side):
    # (the long operand along C's long side: op(B) transposed at SIDE 0, op(A) not at SIDE 1)
    found = gemv_like.configs(m, n, 4096, SMS, trans_b=side == 0)
    assert found and {c.side for c in found} == {side}
    assert {c.long for c in found} == set(gemv_like.LONGS)
    assert not any(c.staged for c in found)
    for c in found:
        rows, cols = c.tile()
        assert (rows, cols) == ((c.short, c.long) if side == 0 else (c.long, c.short))
        assert c.short >= min(m, n)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("m,n,pair", [(16, 8192, "NN"), (16, 8192, "TN"), (8192, 8, "TN"),
                                      (8192, 8, "TT")])  # fmt: skip
def test_a_long_operand_along_k_gets_staged_panels_too(m, n, pair, dtype):
    found = gemv_like.configs(m, n, 8192, SMS, pair[0] == "T", pair[1] == "T", dtype)
    staged = [c for c in found if c.staged]
    assert {c.long for c in staged} == set(gemv_like.STAGED_LONGS[dtype])
    assert {c.long for c in found if not c.staged} == set(gemv_like.LONGS)
    for c in staged:
        defines = c.defines(dtype, pair[0] == "T", pair[1] == "T", True)
        assert c.source() == gemv_like.STAGED_SOURCE and "LONG" not in defines
        assert 32 * defines["LANE_LINES"] == c.long and defines["SMEM_BYTES"] == c.smem_bytes(dtype)
        # 3 blocks an SM: the kernel's register bound assumes their shared memory fits
        assert 3 * (c.smem_bytes(dtype) + 1024) <= 228 * 1024
        assert str(c).endswith(",STAGED=1)")


@pytest.mark.parametrize("m,n,pair", [(2, 8192, "NN"), (16, 8192, "NT"), (8192, 16, "NN")])
def test_no_staged_panels_off_their_layouts(m, n, pair):
    """Short sides under STAGED_FROM, and long operands along C's long side."""
    found = gemv_like.configs(m, n, 8192, SMS, pair[0] == "T", pair[1] == "T")
    assert found and not any(c.staged for c in found)


def test_splits_fill_the_sms_and_keep_two_chunks_a_slice():
    # 8192 / 32 = 256 blocks: 2 an SM need 2 slices, 8 an SM 8
    assert gemv_like.splits(256, 8192, SMS) == [2, 8]
    # 64 blocks and k of 1024 (4 chunks): at most 2 slices
    assert gemv_like.splits(64, 1024, SMS) == [2]
    # enough blocks already: unsplit
    assert gemv_like.splits(4096, 8192, SMS) == [1]
    for blocks, k in itertools.product((1, 7, 300), (100, 5000, 100000)):
        for split in gemv_like.splits(blocks, k, SMS):
            assert split == 1 or 2 * split <= -(-k // gemv_like.CHUNK)


@pytest.mark.parametrize("pair", ["NN", "NT", "TN", "TT"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gemv_like_keys_get_runners(pair, dtype):
    key = _key(8, 8192, 4096, pair, dtype)
    found = gemv_like.candidates(key)
    assert found and all(r.runs_itself and r.key == key for r in found)
    assert all(str(r).startswith("gemv(SIDE=0,SHORT=8,") for r in found)
    assert len(set(found)) == len(found)
    assert all(r.compile_jobs() == () for r in found)
    assert any(r.config.staged for r in found) == (pair[1] == "N")  # op(B) along k
    (source, defines), = found[0].raw_compile_jobs()
    assert source == gemv_like.SOURCE
    assert (defines["TRANS_A"], defines["TRANS_B"]) == (pair[0] == "T", pair[1] == "T")
    assert defines["DTYPE"] == (dtype == "float64") and defines["THREADS"] == 32 * defines["WARPS"]


def test_composed_candidates_hold_the_runners():
    key = _key(8192, 2, 8192)
    assert set(gemv_like.candidates(key)) <= set(plans._composed(key))


@pytest.mark.parametrize("key", [
    _key(17, 8192, 4096), _key(8192, 17, 4096),  # both sides longer than SHORT_MAX
    _key(4, 8192, 4096, batch=2),
    _key(4, 8192, 4096, precision="3xtf32"),
    _key(4, 8192, 0),
    _key(4, 1024, 512),  # 2 MB of long operand: launch-bound, the small family's
])  # fmt: skip
def test_no_runners_elsewhere(key):
    assert gemv_like.candidates(key) == ()


def test_the_switch_turns_them_off(monkeypatch):
    assert gemv_like.ENABLED is True  # (on as shipped; the fixture sets it for the others)
    monkeypatch.setattr(gemv_like, "ENABLED", False)
    assert gemv_like.candidates(_key(4, 8192, 4096)) == ()


def test_the_staged_kernel_is_off_as_shipped(monkeypatch):
    """Until its GPU test has run (gemv_like.STAGED_ENABLED's comment)."""
    assert gemv_like.STAGED_ENABLED is True  # (the fixture's)
    monkeypatch.undo()
    assert gemv_like.STAGED_ENABLED is False


def test_runners_of_equal_keys_and_configs_are_equal():
    config = gemv_like.GemvConfig(0, 4, 32, 8, 2)
    a, b = gemv_like.GemvLike(_key(4, 8192, 4096), config), gemv_like.GemvLike(
        _key(4, 8192, 4096), config)
    assert a == b and hash(a) == hash(b)
    assert a != gemv_like.GemvLike(_key(4, 8192, 4096), dataclasses.replace(config, split_k=4))


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_the_kernel_compiles_without_spills_in_every_layout(dtype, tmp_path):
    """Each side and transpose pair (the long operand along k or along C's long side) at the
    widest SHORT and both LONGs, split and aligned (the most registers), and the narrowest
    unsplit and unaligned."""
    variants = [(side, ta, tb, short, long, split, aligned)
                for side, ta, tb in itertools.product((0, 1), repeat=3)
                for short, long, split, aligned in ((16, 32, 2, 1), (16, 128, 2, 1),
                                                    (1, 32, 1, 0))]  # fmt: skip

    _assert_compiled_without_spills(variants, dtype, False, tmp_path)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_the_staged_kernel_compiles_without_spills_in_every_layout(dtype, tmp_path):
    """Each side and transpose pair whose long operand runs along k, at SHORT 16 and 4 (two
    row groups and one) and each of STAGED_LONGS, split and aligned, and unaligned (element
    copies), under the kernel's 3-block register bound."""
    layouts = [(0, 0, 0), (0, 1, 0), (1, 1, 0), (1, 1, 1)]  # (side, trans_a, trans_b)
    variants = [(*layout, short, long, 2, aligned) for layout in layouts
                for short, long, aligned in itertools.product(
                    (16, 4), gemv_like.STAGED_LONGS[dtype], (1, 0))]  # fmt: skip

    _assert_compiled_without_spills(variants, dtype, True, tmp_path)


def _assert_compiled_without_spills(variants, dtype: str, staged: bool, tmp_path) -> None:
    """Each (side, trans_a, trans_b, short, long, split, aligned) compiled, as many at a time
    as there are cores, each in its own directory."""

    def report(variant):
        side, ta, tb, short, long, split, aligned = variant
        config = gemv_like.GemvConfig(side, short, long, gemv_like.WARPS, split, staged)
        where = tmp_path / "".join(map(str, variant))
        where.mkdir()
        return compile_report(config.source(), config.defines(dtype, bool(ta), bool(tb),
                                                              bool(aligned)), where)  # fmt: skip

    with ThreadPoolExecutor(os.cpu_count() or 2) as pool:
        for variant, text in zip(variants, pool.map(report, variants), strict=True):
            assert_no_spills(text, str(variant))
