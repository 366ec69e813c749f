"""simt's loop twin (ADVANCE=1, FMA_ORDER=1): recorded configs keep the loop they were timed
with, the search space leaves the twin's values out, and run-time autotuning times each simt
candidate's twin beside it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from helpers import assert_no_spills, compile_report, preprocessed, shipped_configs

from tunedgemm import plans, table
from tunedgemm.compiler import source_text
from tunedgemm.families import FAMILIES, simt
from tunedgemm.params import IEEE, KernelConfig

FAMILY = FAMILIES["simt"]


def test_recorded_configs_run_the_row_by_row_loop():
    default = FAMILY.default_config("float32").as_dict()
    recorded = FAMILY.recorded({k: v for k, v in default.items() if k != "FMA_ORDER"})
    assert recorded.as_dict()["FMA_ORDER"] == 0


def test_the_search_space_leaves_the_serpentine_orders_out():
    assert all(c.as_dict()["FMA_ORDER"] == 0 for c in FAMILY.space("float32", IEEE))


def test_every_shipped_simt_config_has_its_loop_twin():
    configs = shipped_configs("simt")
    assert configs
    for config in configs:
        twin = KernelConfig.make("simt", {**config.as_dict(), **simt.LOOP_TWIN})
        assert not FAMILY.violations(twin, "float32"), (config, FAMILY.violations(twin, "float32"))


def test_autotuning_times_each_simt_candidate_with_its_loop_twin():
    default = FAMILY.default_config("float32")
    other = KernelConfig.make("simt", {**default.as_dict(), "STAGES": 2})
    twin_of = {c: KernelConfig.make("simt", {**c.as_dict(), **simt.LOOP_TWIN})
               for c in (default, other)}  # fmt: skip
    candidates = (default, table.CUBLAS, other)
    timed = plans.with_twins(candidates, "float32")
    assert timed == (*candidates, twin_of[default], twin_of[other])
    # A twin already among the candidates is not timed twice, nor given a twin of its own.
    assert plans.with_twins((twin_of[default], default), "float32") == (twin_of[default], default)


def test_paired_lanes_name_a_new_kernel_in_8_x_4_and_8_x_8_thread_tiles_only(monkeypatch):
    from tunedgemm import cuda

    monkeypatch.setattr(cuda, "sm_count", lambda: 132)
    # A 16 x 8 config recorded with the cursors: its loop twin differs by LANE_PAIRS alone,
    # which compiles the same kernel there, so autotuning keeps the config and no twin.
    default = FAMILY.default_config("float32").as_dict()
    tall = KernelConfig.make("simt", {**default, **simt.LOOP_TWIN, "LANE_PAIRS": 0, "TM": 16,
                                      "BM": 256, "WM": 64, "MIN_BLOCKS": 1})  # fmt: skip
    assert not FAMILY.violations(tall, "float32")
    paired_tall = KernelConfig.make("simt", {**tall.as_dict(), "LANE_PAIRS": 1})
    assert FAMILY.canonical(paired_tall) == tall and FAMILY.canonical(tall) == tall
    timed = plans.own_candidates((tall,), _key(False, False))
    assert tall in timed and paired_tall not in timed
    assert not [c for c in timed if simt.pairs_lanes(c.as_dict()) != c.as_dict()["LANE_PAIRS"]]
    # 8 x 8 and 8 x 4 ones: the paired twin is another kernel, and timed.
    for tile in ({"TM": 8, "TN": 8}, simt.MEDIUM_TILES[0]):
        unpaired = KernelConfig.make("simt", {**default, **simt.LOOP_TWIN, **tile,
                                              "LANE_PAIRS": 0})  # fmt: skip
        paired = KernelConfig.make("simt", {**unpaired.as_dict(), "LANE_PAIRS": 1})
        assert not FAMILY.violations(paired, "float32") and FAMILY.canonical(paired) == paired
        assert paired in plans.own_candidates((unpaired,), _key(False, False))


def _key(trans_a: bool, trans_b: bool, aligned: bool = True) -> plans.GemmKey:
    return plans.GemmKey("float32", IEEE, 1000, 1000, 1000, trans_a, trans_b, 1000, 1000, 1000,
                         aligned)  # fmt: skip


def test_tn_alone_times_the_twins_through_registers_and_by_cursor_copies():
    default = FAMILY.default_config("float32")
    loop = KernelConfig.make("simt", {**default.as_dict(), **simt.LOOP_TWIN})
    staged, cursor = (KernelConfig.make("simt", {**default.as_dict(), **changes})
                      for changes in simt.LAYOUT_TWINS[(True, False)])  # fmt: skip
    assert staged.as_dict()["REG_TRANSPOSE"] == simt.REG_TRANSPOSE_LONGER_SIDE != 1
    assert staged.as_dict()["ASYNC_CURSOR"] == 1 and staged != loop
    assert cursor.as_dict()["ASYNC_CURSOR"] == 1 and cursor.as_dict()["REG_TRANSPOSE"] == 0
    assert plans.with_twins((default,), "float32", _key(True, False)) == (
        default, loop, staged, cursor)
    # Elsewhere REG_TRANSPOSE and ASYNC_CURSOR compile to the same kernel: no second compile.
    for key in (_key(False, False), _key(False, True), _key(True, True), _key(True, False, False)):
        assert plans.with_twins((default,), "float32", key) == (default, loop), key
    assert plans.with_twins((default,), "float32") == (default, loop)


def test_tn_twins_stage_one_operand_so_a_config_at_its_cap_keeps_them():
    """Staging both operands costs BK * (BM + BN) / THREADS registers, which a config at its
    cap lacks; the twin stages one (BK * max(BM, BN) / THREADS, as NN's kernel does), so the
    config keeps both TN twins beside its loop twin; all four are timed."""
    tight = {**FAMILY.default_config("float32").as_dict(), "BM": 128, "BN": 128, "BK": 16,
             "WM": 64, "WN": 32, "TM": 8, "TN": 8, "MIN_BLOCKS": 2}  # 128 registers  # fmt: skip
    config = KernelConfig.make("simt", tight)
    assert not FAMILY.violations(config, "float32")
    assert FAMILY.violations(KernelConfig.make("simt", {**tight, "REG_TRANSPOSE": 1}), "float32")
    timed = plans.with_twins((config,), "float32", _key(True, False))
    assert [c.as_dict()["REG_TRANSPOSE"] for c in timed] == [0, 0, 4, 0]
    assert [c.as_dict()["ASYNC_CURSOR"] for c in timed] == [0, 0, 1, 1]


def test_the_search_space_and_the_recorded_configs_keep_cp_async_for_tn():
    assert all(c.as_dict()["REG_TRANSPOSE"] == 0 and c.as_dict()["ASYNC_CURSOR"] == 0
               for c in FAMILY.space("float32", IEEE))  # fmt: skip
    default = FAMILY.default_config("float32").as_dict()
    recorded = FAMILY.recorded({k: v for k, v in default.items() if k != "REG_TRANSPOSE"})
    assert recorded.as_dict()["REG_TRANSPOSE"] == 0


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
def test_the_tn_twin_of_the_large_and_the_tightest_tiles_compiles_without_spills(tmp_path):
    """256 x 128 blocks, 16 x 8 a thread (A staged: 16 registers a thread), and 128 x 128 x 16
    at two blocks an SM, whose estimate is its cap of 128 (nvcc 13.0: 128 used, no spills, as
    at the 12 tightest tilings of the space and at every tile autotuning adds, 2026-12-05)."""
    large = {**FAMILY.default_config("float32").as_dict(), **simt.STREAM_K_TILES[0],
             "STREAM_K": 0}  # fmt: skip
    tight = {**FAMILY.default_config("float32").as_dict(), "BM": 128, "BN": 128, "BK": 16,
             "WM": 64, "WN": 32, "TM": 8, "TN": 8, "MIN_BLOCKS": 2}  # fmt: skip
    twin = simt.LAYOUT_TWINS[(True, False)][0]
    for i, tile in enumerate((large, tight)):
        config = KernelConfig.make("simt", {**tile, **twin})
        assert not FAMILY.violations(config, "float32")
        (tmp_path / str(i)).mkdir()
        assert_no_spills(_tn_aligned_report(config, tmp_path / str(i)), str(config))


def _tn_aligned_report(config: KernelConfig, work) -> str:
    """ptxas's report of the config's TN aligned variant (the one REG_TRANSPOSE changes)."""
    defines = {**FAMILY.defines(config, "float32"), "DTYPE": 0, "TRANS_A": 1, "TRANS_B": 0,
               "ALIGNED": 1}  # fmt: skip
    return compile_report(FAMILY.source, defines, work)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
def test_every_shipped_tn_twin_compiles_without_spills(tmp_path):
    """The shipped table's REG_TRANSPOSE=1 configs (the float32/TN entries tuned with them),
    TN aligned, the one variant where they differ."""
    from concurrent.futures import ThreadPoolExecutor

    staged = sorted(c for c in shipped_configs("simt") if c.as_dict()["REG_TRANSPOSE"] == 1)
    assert staged

    def report(job: tuple[int, KernelConfig]) -> str:
        index, config = job
        (tmp_path / str(index)).mkdir()
        return _tn_aligned_report(config, tmp_path / str(index))

    with ThreadPoolExecutor(max_workers=2) as pool:
        for config, text in zip(staged, pool.map(report, enumerate(staged)), strict=True):
            assert_no_spills(text, str(config))


def test_a_config_drops_another_layouts_twin_settings():
    """KernelFamily.for_layout: TN's twin settings (REG_TRANSPOSE, ASYNC_CURSOR) compile to
    the recorded kernel outside aligned TN, so there they read as 0; the loop twin's settings
    stay everywhere."""
    staged = KernelConfig.make("simt", {**FAMILY.default_config("float32").as_dict(),
                                        **simt.LAYOUT_TWINS[(True, False)][0]})  # fmt: skip
    plain = KernelConfig.make("simt", {**staged.as_dict(), "REG_TRANSPOSE": 0, "ASYNC_CURSOR": 0})
    assert FAMILY.for_layout(staged, True, False, True) == staged
    for layout in ((True, False, False), (False, False, True), (False, True, True),
                   (True, True, True)):  # fmt: skip
        assert FAMILY.for_layout(staged, *layout) == plain, layout
    dmma = FAMILIES["dmma"]
    assert dmma.for_layout(dmma.default_config("float64"), True, False, True) == (
        dmma.default_config("float64"))


def test_every_shipped_config_is_as_its_entrys_layout_compiles_it():
    """No entry records another layout's twin settings (a NN entry with REG_TRANSPOSE=1 would
    be a second compile of the same kernel); entries are tuned on aligned operands."""
    from tunedgemm import table

    loaded = table.load(table.shipped_path())
    for device in loaded.devices:
        for key, entries in device.entries.items():
            pair = key.split("/")[1]
            trans_a, trans_b = pair[0] == "T", pair[1] == "T"
            for entry in entries:
                for config, _ in entry.top:
                    as_compiled = FAMILIES[config.family].for_layout(config, trans_a, trans_b, True)
                    assert as_compiled == config, (key, config)


def _kernel_source(tmp_path) -> Path:
    """simt's template, its includes inlined, as a file nvcc -E can read."""
    source = tmp_path / "kernel.cu"
    source.write_text(source_text(FAMILY.source))
    return source


def _layout_defines(changes: dict, ta: int, tb: int, aligned: int) -> tuple[KernelConfig, dict]:
    """The family default with `changes`, and the defines its kernel for this layout is built
    with."""
    config = KernelConfig.make("simt", {**FAMILY.default_config("float32").as_dict(), **changes})
    defines = {**FAMILY.defines(config, "float32"), "DTYPE": 0, "TRANS_A": ta, "TRANS_B": tb,
               "ALIGNED": aligned}  # fmt: skip
    return config, defines


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
def test_the_steady_loop_runs_where_both_operands_have_cursors(tmp_path):
    """STEADY_LOOP defaults to ADVANCE and ALIGNED, and needs a cursor on both operands: the
    loop twin's aligned NN, NT and TT kernels differ from their text with the loop off, and
    TN's does with one operand through registers or both copied from cursors (its two layout
    twins) only; unaligned, and without the cursors (ADVANCE=0), the text is the same."""
    source = _kernel_source(tmp_path)
    cases = [(simt.LOOP_TWIN, ta, tb, aligned, aligned and (ta, tb) != (1, 0))
             for ta, tb in ((0, 0), (0, 1), (1, 1), (1, 0)) for aligned in (0, 1)]
    cases += [(tn_twin, 1, 0, 1, True) for tn_twin in simt.LAYOUT_TWINS[(True, False)]]
    cases += [({"ADVANCE": 0}, 0, 0, 1, False)]
    for changes, ta, tb, aligned, steady in cases:
        _, defines = _layout_defines(changes, ta, tb, aligned)
        on = preprocessed(source, defines)
        off = preprocessed(source, {**defines, "STEADY_LOOP": 0})
        assert (on != off) == steady, (changes, ta, tb, aligned)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
def test_tn_stages_the_longer_sides_operand_at_reg_transpose_4(tmp_path):
    """REG_TRANSPOSE=4 is REG_TRANSPOSE=2 (A through registers) where the block tile has at
    least as many rows as columns and 3 (B) where it has fewer, in TN's aligned kernel, and
    not the other of the two."""
    source = _kernel_source(tmp_path)
    tiles = [{"BM": 128, "BN": 64, "WM": 32, "WN": 64}, {"BM": 64, "BN": 128, "WM": 64, "WN": 32},
             {"BM": 128, "BN": 128, "WM": 32, "WN": 64}]  # fmt: skip
    for tile in tiles:
        changes = {**simt.LOOP_TWIN, **tile, "ASYNC_CURSOR": simt.ASYNC_CURSOR_ON[0]}
        texts = {rt: preprocessed(source, _layout_defines({**changes, "REG_TRANSPOSE": rt},
                                                          1, 0, 1)[1])
                 for rt in (2, 3, 4)}  # fmt: skip
        same, other = (2, 3) if tile["BM"] >= tile["BN"] else (3, 2)
        assert texts[4] == texts[same], tile
        assert texts[4] != texts[other], tile


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
def test_the_steady_loop_issues_its_copies_after_a_quarter_of_the_k_tile(tmp_path):
    """COPY_STEP defaults to BK / 4 (the k-step before whose fmas the steady loop's cp.async
    copies issue): the loop twin's aligned NN text is that of COPY_STEP=BK/4 and not that of
    COPY_STEP=0; with the BK loop rolled (ROLL_K) or without the steady loop (ADVANCE=0) the
    copies stay at the k-tile's top whatever COPY_STEP says."""
    source = _kernel_source(tmp_path)
    cases = [(simt.LOOP_TWIN, True), ({**simt.LOOP_TWIN, "ROLL_K": 2}, False),
             ({"ADVANCE": 0}, False)]  # fmt: skip
    for changes, moves in cases:
        config, defines = _layout_defines(changes, 0, 0, 1)
        text = preprocessed(source, defines)
        # (the default's text: the macro expands to BK's value over 4)
        quarter = preprocessed(source, {**defines, "COPY_STEP": f"({config.as_dict()['BK']} / 4)"})
        top = preprocessed(source, {**defines, "COPY_STEP": 0})
        assert text == quarter, changes
        assert (text != top) == moves, changes


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
def test_edge_blocks_join_the_steady_loop_only_where_it_runs(tmp_path):
    """SHIFT_EDGE and CLAMP_EDGE (blocks on C's edge in the steady loop) and SHIFT_FIRST
    default to on, CLAMP_SPREAD to 0: the loop twin's aligned text, in NN, NT and TT, is that of
    those settings and not that of the first two 0;
    without the steady loop (ADVANCE=0, or unaligned operands) the text is the same either
    way."""
    source = _kernel_source(tmp_path)
    cases = [(simt.LOOP_TWIN, trans, 1, True) for trans in ((0, 0), (0, 1), (1, 1))]
    cases += [({"ADVANCE": 0}, (0, 0), 1, False), (simt.LOOP_TWIN, (0, 0), 0, False)]
    for changes, (ta, tb), aligned, moves in cases:
        _, defines = _layout_defines(changes, ta, tb, aligned)
        text = preprocessed(source, defines)
        on = preprocessed(source, {**defines, "SHIFT_EDGE": 1, "CLAMP_EDGE": 1,
                                   "CLAMP_SPREAD": 0, "SHIFT_FIRST": 1})  # fmt: skip
        off = preprocessed(source, {**defines, "SHIFT_EDGE": 0, "CLAMP_EDGE": 0})
        assert text == on, (changes, ta, tb, aligned)
        assert (text != off) == moves, (changes, ta, tb, aligned)
