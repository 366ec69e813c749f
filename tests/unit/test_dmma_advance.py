"""dmma ADVANCE (kernels/dgemm_mma.cu): recorded configs keep load_tile's per-k-tile copies,
the search space leaves the cursors out until the H100 measures them, and a config that
names ADVANCE=1 passes the family's rules, reaches the kernel as a define and compiles
without spills; its steady-state loop (STEADY_LOOP) runs in the aligned variants only."""

from __future__ import annotations

import itertools
import shutil

import pytest
from helpers import assert_no_spills, compile_report, preprocessed, shipped_configs

from tunedgemm import launch, plans
from tunedgemm.compiler import source_text
from tunedgemm.families import FAMILIES, dmma
from tunedgemm.params import IEEE, KernelConfig

FAMILY = FAMILIES["dmma"]


def _advanced(config: KernelConfig) -> KernelConfig:
    return KernelConfig.make("dmma", {**config.as_dict(), "ADVANCE": dmma.ADVANCE_ON[0]})


def test_advance_is_declared_with_recorded_value_zero():
    (tunable,) = [t for t in FAMILY.tunables if t.name == "ADVANCE"]
    assert tunable.values == (0,)
    assert tunable.absent == 0
    assert dmma.ADVANCE_ON == (1,)
    default = FAMILY.default_config("float64").as_dict()
    assert default["ADVANCE"] == 0
    recorded = FAMILY.recorded({k: v for k, v in default.items() if k != "ADVANCE"})
    assert recorded.as_dict()["ADVANCE"] == 0


def test_the_search_space_leaves_the_cursors_out():
    assert all(c.as_dict()["ADVANCE"] == 0 for c in FAMILY.space("float64", IEEE))


def test_advance_takes_only_zero_or_one():
    default = FAMILY.default_config("float64")
    assert FAMILY.violations(_advanced(default), "float64") == []
    bad = KernelConfig.make("dmma", {**default.as_dict(), "ADVANCE": 2})
    assert FAMILY.violations(bad, "float64") == ["ADVANCE is 0 or 1"]


def test_every_shipped_dmma_config_allows_advance():
    configs = shipped_configs("dmma")
    assert configs
    for config in configs:
        assert not FAMILY.violations(_advanced(config), "float64"), (
            config, FAMILY.violations(_advanced(config), "float64"))  # fmt: skip


def test_advance_reaches_the_kernel_as_a_define():
    default = FAMILY.default_config("float64")
    assert ("ADVANCE", 0) in launch.plan(default, "float64", False, False, True).defines
    assert ("ADVANCE", 1) in launch.plan(_advanced(default), "float64", True, False, False).defines


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
def test_advance_default_compiles_without_spills_in_every_variant(tmp_path):
    config = _advanced(FAMILY.default_config("float64"))
    for ta, tb, aligned in itertools.product((0, 1), (0, 1), (0, 1)):
        defines = {**FAMILY.defines(config, "float64"), "DTYPE": 1, "TRANS_A": ta,
                   "TRANS_B": tb, "ALIGNED": aligned}  # fmt: skip
        (tmp_path / f"{ta}{tb}{aligned}").mkdir()
        assert_no_spills(compile_report("dgemm_mma.cu", defines, tmp_path / f"{ta}{tb}{aligned}"),
                         str(defines))  # fmt: skip


def test_autotuning_times_the_cursors_and_cublas_arrangement_as_twins():
    """ADVANCE=1 is a twin of every dmma config (the same copies), and so is half the tile's
    columns at two blocks per SM (every element's sum keeps its order), and so is the unpadded
    ring (the same values into the same fragments); the two-block arrangement fits
    the family's rules only with the cursors, whose registers do not grow with the copies."""
    default = FAMILY.default_config("float64")
    twins = plans.with_twins((default,), "float64")[1:]
    changed = [{k: v for k, v in t.as_dict().items() if default.as_dict()[k] != v} for t in twins]
    assert changed == [{"ADVANCE": 1}, {"ADVANCE": 1, **dmma.TWO_BLOCKS}, dmma.RING_TWIN]
    two_blocks = KernelConfig.make("dmma", {**default.as_dict(), **dmma.TWO_BLOCKS})
    assert FAMILY.violations(two_blocks, "float64")  # 24 copies a thread with load_tile's
    assert not FAMILY.violations(twins[1], "float64")


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
def test_the_steady_loop_runs_in_aligned_variants_only(tmp_path):
    """STEADY_LOOP defaults to ALIGNED: the aligned kernel of an ADVANCE=1 config differs from
    its text with the loop off, the unaligned one (where ptxas spilled two-block m16n8k8
    tiles with it) is that text."""
    config = _advanced(FAMILY.default_config("float64"))
    source = tmp_path / "kernel.cu"
    source.write_text(source_text("dgemm_mma.cu"))
    for aligned in (0, 1):
        defines = {**FAMILY.defines(config, "float64"), "DTYPE": 1, "TRANS_A": 0,
                   "TRANS_B": 1, "ALIGNED": aligned}  # fmt: skip
        default = preprocessed(source, defines)
        off = preprocessed(source, {**defines, "STEADY_LOOP": 0})
        assert (default != off) == bool(aligned), aligned


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
def test_edge_blocks_join_the_steady_loop_only_where_it_runs(tmp_path):
    """SHIFT_EDGE and CLAMP_EDGE (blocks on C's edge in the steady loop) and CLAMP_SPREAD
    default to on: the aligned ADVANCE=1 text, in every transpose pair, is that of all three set
    to 1 and not that of the first two 0; without the steady loop (unaligned, or ADVANCE=0) and
    under stream-K the text is the same either way."""
    source = tmp_path / "kernel.cu"
    source.write_text(source_text("dgemm_mma.cu"))
    default = FAMILY.default_config("float64")
    stream_k = KernelConfig.make("dmma", {**default.as_dict(), **dmma.STREAM_K_CHANGES,
                                          "STREAM_K": dmma.STREAM_K_ON[0]})  # fmt: skip
    cases = [(_advanced(default), trans, 1, True) for trans in itertools.product((0, 1), (0, 1))]
    cases += [(_advanced(default), (0, 0), 0, False), (default, (0, 1), 1, False),
              (stream_k, (0, 0), 1, False)]  # fmt: skip
    for config, (ta, tb), aligned, moves in cases:
        defines = {**FAMILY.defines(config, "float64"), "DTYPE": 1, "TRANS_A": ta,
                   "TRANS_B": tb, "ALIGNED": aligned}  # fmt: skip
        text = preprocessed(source, defines)
        on = preprocessed(source, {**defines, "SHIFT_EDGE": 1, "CLAMP_EDGE": 1,
                                   "CLAMP_SPREAD": 1})  # fmt: skip
        off = preprocessed(source, {**defines, "SHIFT_EDGE": 0, "CLAMP_EDGE": 0})
        assert text == on, (config, ta, tb, aligned)
        assert (text != off) == moves, (config, ta, tb, aligned)
