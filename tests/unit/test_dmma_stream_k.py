"""The dmma family's stream-K (issue 15, item 1; the schedule of kernels/streamk.cuh, which
simt shares): declared but out of the search space, never with split-K or the staged
epilogue; plans size its workspace and grid from the schedule; autotuning does not time it
(it lost to k-splits); and it compiles without spills, as two kernels (streamk_gemm and
streamk_fixup) and no data-parallel one."""

from __future__ import annotations

import itertools
import shutil

import pytest
from helpers import compile_stream_k, nn_key

from tunedgemm import launch, plans, table
from tunedgemm.families import FAMILIES, dmma
from tunedgemm.params import KernelConfig

FAMILY = FAMILIES["dmma"]
SMS = 132
# The table's commonest float64 tile: 64 x 64, four warps of 32 x 16, m16n8k8, two blocks an SM.
TABLE_TILE = {"BM": 64, "BN": 64, "WM": 32, "WN": 16, "MMA_K": 8, "STAGES": 4, "MIN_BLOCKS": 2}


def _with(**change: int) -> KernelConfig:
    return KernelConfig.make("dmma", {**FAMILY.default_config("float64").as_dict(), **change})


def test_stream_k_is_declared_but_out_of_the_space():
    assert {c["STREAM_K"] for c in FAMILY.space("float64")} == {0}
    params = {k: v for k, v in _with().as_dict().items() if k != "STREAM_K"}
    assert table.recorded_config("dmma", params) == _with(STREAM_K=0)
    assert FAMILY.violations(_with(STREAM_K=1, **dmma.STREAM_K_CHANGES), "float64") == []
    rule = ("stream-K replaces split-K and stores from the fragments "
            "(STREAM_K > 0 needs SPLIT_K = 1 and EPILOGUE 0)")  # fmt: skip
    assert FAMILY.violations(_with(STREAM_K=1, SPLIT_K=2), "float64") == [rule]
    assert FAMILY.violations(_with(STREAM_K=1, EPILOGUE=1), "float64") == [rule]


@pytest.mark.parametrize("stream_k", dmma.STREAM_K_ON)
def test_plan_workspace_and_grids(stream_k):
    config = _with(STREAM_K=stream_k, **dmma.STREAM_K_CHANGES)
    for aligned in (False, True):
        p = launch.plan(config, "float64", True, False, aligned)
        assert p.stream_k == stream_k and p.split_k == 1
        for m, n, k in ((3072, 96, 3072), (600, 508, 2782), (1, 1, 1)):
            s = p.schedule(m, n, k, SMS)
            assert s.ctas == min(SMS * stream_k, s.iters)
            assert p.workspace_bytes(m, n, k, SMS) == 2 * s.ctas * 128 * 128 * 8


def test_autotuning_does_not_time_it():
    """Its variants lost to the same tilings' k-splits on the H100 (dmma.STREAM_K_ON says
    where): a ragged last wave (1100 x 1100: 324 tiles of 64 x 64 on 264 slots) gets none."""
    assert FAMILY.stream_k_changes is None
    candidate = _with(**TABLE_TILE)
    assert plans.with_stream_k((candidate,), nn_key(1100, 1100, 1000, "float64"), SMS) == ()


def _compile(stream_k, variants, tmp_path, **changes):
    config = _with(**changes, **dmma.STREAM_K_CHANGES, STREAM_K=stream_k)
    compile_stream_k(config, "float64", variants, tmp_path)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
def test_stream_k_compiles_without_spills(tmp_path):
    """The default 128 x 128 tile (the most registers) NN aligned, the table's tile TT not."""
    _compile(1, [(0, 0, 1)], tmp_path / "default")
    _compile(2, [(1, 1, 0)], tmp_path / "table", **TABLE_TILE)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
@pytest.mark.parametrize("tile", ["default", "table"])
def test_stream_k_all_variants_compile_without_spills(tile, tmp_path):
    changes = TABLE_TILE if tile == "table" else {}
    _compile(1, list(itertools.product((0, 1), (0, 1), (0, 1))), tmp_path, **changes)
