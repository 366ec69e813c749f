"""The tuner without a GPU: strategies, pruning, resume, the writer, schema checks, lookup, the
wave-model choice and the fallback chain, by replaying recorded (here: synthetic) timings."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest

from tunedgemm import model, selection, table
from tunedgemm.families import FAMILIES
from tunedgemm.model import Shape, filling_split, prune_reason
from tunedgemm.params import KernelConfig
from tunedgemm.tuning import strategies
from tunedgemm.tuning.checkpoint import Checkpoint
from tunedgemm.tuning.driver import Task, tasks_for, tune
from tunedgemm.tuning.space import candidates, default_grid, mid_grid, parse_shapes
from tunedgemm.tuning.writer import TOP_COUNT, config_from_text, top_configs, write

GPU, CC = "NVIDIA H100 80GB HBM3", "9.0"


class ReplayRunner:
    """Times from a table of recorded values (a stable hash stands in for unseen configs)."""

    def __init__(self, task: Task, recorded: dict[str, float] | None = None,
                 cublas_ms: float = 1.0, broken: set[str] | None = None) -> None:  # fmt: skip
        self.task, self.recorded = task, recorded or {}
        self.cublas_ms, self.broken = cublas_ms, broken or set()
        self.timed: list[KernelConfig] = []

    def time_config(self, config: KernelConfig) -> float:
        self.timed.append(config)
        return self._ms(config)

    def _ms(self, config: KernelConfig) -> float:
        if str(config) in self.broken:
            return math.inf
        return self.recorded.get(str(config), 2.0 + (hash(str(config)) % 1000) / 1000)

    def time_cublas(self) -> float:
        return self.cublas_ms

    def head_to_head(self, config: KernelConfig) -> tuple[float, float]:
        return self._ms(config), self.cublas_ms

    def verify(self, config: KernelConfig | str) -> tuple[float, float]:
        return (math.inf, math.inf) if str(config) in self.broken else (1e-3, 1e-7)


def test_default_grid_covers_shape_classes():
    grid = default_grid()
    assert 40 <= len(grid) <= 80
    assert any(s.m == s.n == s.k for s in grid)  # squares
    assert any(s.m >= 64 * s.n for s in grid)  # tall-skinny
    assert any(s.n >= 64 * s.m for s in grid)  # wide
    assert any(s.k * 64 <= min(s.m, s.n) for s in grid)  # small k
    assert any(s.k >= 64 * max(s.m, s.n) for s in grid)  # long k
    assert parse_shapes("10x20x30,1x2x3") == [Shape(10, 20, 30), Shape(1, 2, 3)]
    both = parse_shapes("default+benchmark")
    assert set(grid) < set(both) and Shape(8192, 8192, 128) in both
    with pytest.raises(ValueError, match="MxNxK"):
        parse_shapes("10x20")


def test_pruning_by_shape():
    split = KernelConfig.make("dmma", {"BM": 64, "BN": 64, "BK": 16, "SPLIT_K": 4})
    assert prune_reason(split, Shape(8192, 8192, 8192)) is not None  # many tiles already
    assert prune_reason(split, Shape(64, 64, 16384)) is None  # few tiles, long k
    assert prune_reason(split, Shape(64, 64, 128)) is not None  # k too short to split
    big = KernelConfig.make("simt", {"BM": 256, "BN": 64})
    assert prune_reason(big, Shape(64, 4096, 4096)) is not None
    small_shape = candidates("float64", Shape(64, 64, 64))
    large_shape = candidates("float64", Shape(4096, 4096, 4096))
    # The small family is timed only at shapes of little work; every other family's large
    # tiles are pruned at small shapes.
    assert any(c.family == "small" for c in small_shape)
    assert not any(c.family == "small" for c in large_shape)
    others = [c for c in small_shape if c.family != "small"]
    assert others and len(others) < len(large_shape)


def test_filling_split_fills_idle_sms_within_two_waves():
    base = selection.default_config("float32")
    p = base.as_dict()
    few_tiles = Shape(2 * p["BM"], 3 * p["BN"], 8192)  # 6 tiles, long k
    filled = filling_split(base, few_tiles, num_sms=132)
    assert filled is not None and filled["SPLIT_K"] == 4  # the largest split declared
    assert {k: v for k, v in filled.as_dict().items() if k != "SPLIT_K"} == {
        k: v for k, v in p.items() if k != "SPLIT_K"}  # fmt: skip
    assert 6 * filled["SPLIT_K"] <= 2 * 132
    assert filling_split(base, Shape(8192, 8192, 8192), 132) is None  # a full wave already
    # 40 tiles: split 4 would make 160 blocks, over two waves of 64 SMs; split 2 makes 80.
    forty = Shape(5 * p["BM"], 8 * p["BN"], 8192)
    assert filling_split(base, forty, num_sms=64)["SPLIT_K"] == 2  # type: ignore[index]
    assert filling_split(base, Shape(64, 64, 64), 132) is None  # k too short to split
    assert filling_split(KernelConfig.make("tiled", {"BM": 64, "BN": 64}), few_tiles) is None


def test_small_output_long_k_calls_are_offered_split_k_variants(monkeypatch):
    monkeypatch.setenv(selection.CUBLAS_ENV, "0")
    monkeypatch.delenv(selection.FAMILY_ENV, raising=False)
    monkeypatch.delenv(table.TABLE_ENV, raising=False)
    for dtype in ("float32", "float64"):
        small = selection.choose(dtype, 243, 389, 4980, gpu=GPU, cc=CC, warn=False)
        big = selection.choose(dtype, 4000, 4000, 4000, gpu=GPU, cc=CC, warn=False)
        # k split over blocks (the small family, which has no SPLIT_K, may be offered too)
        split = [c for c in small.candidates
                 if c.as_dict().get("SPLIT_K", 1) > 1 and c["BM"] * c["BN"] <= 64 * 64]  # fmt: skip
        assert split, small.candidates  # small tiles, split to fill the SMs
        assert len(big.candidates) <= selection.REFINE_CANDIDATES + selection.GENERALIST_PICKS


def test_strategies_by_name():
    configs = candidates("float64", Shape(1024, 1024, 1024))
    evaluate = lambda c: float(len(str(c)))  # noqa: E731
    assert len(strategies.get("exhaustive")(configs, evaluate, 3)) == len(configs)
    sampled = strategies.get("random")(configs, evaluate, 5)
    assert len(sampled) == 5
    from tunedgemm.families import FAMILIES

    defaults = {FAMILIES[f].default_config("float64") for f in ("tiled", "dmma")}
    assert {c for c, _ in sampled[:2]} == defaults  # each family's default is timed first
    assert [c for c, _ in sampled] == [c for c, _ in strategies.get("random")(configs, evaluate, 5)]
    with pytest.raises(ValueError, match="unknown strategy"):
        strategies.get("annealing")


def test_tune_picks_fastest_verified_and_cublas_when_it_wins(tmp_path):
    task = Task("float64", False, False, Shape(1024, 1024, 1024))
    configs = strategies.get("random")(candidates("float64", task.shape), lambda c: 0.0, 24)
    fastest, second = str(configs[3][0]), str(configs[4][0])
    recorded = {fastest: 0.5, second: 0.6}
    runner = ReplayRunner(task, recorded, cublas_ms=0.55, broken={fastest})
    [result] = tune([task], lambda t: runner, checkpoint=Checkpoint(tmp_path / "c.jsonl"))
    assert str(result.own) == second  # the fastest failed verification
    assert result.choice == table.CUBLAS  # and cuBLAS beats the second
    [own_only] = tune([task], lambda t: ReplayRunner(task, recorded, 0.55, {fastest}),
                      allow_cublas=False)  # fmt: skip
    assert str(own_only.choice) == second


def test_resume_skips_finished_tasks(tmp_path):
    tasks = tasks_for(["float32"], [(False, False)], [Shape(64, 64, 64), Shape(512, 512, 512)])
    ckpt = Checkpoint(tmp_path / "c.jsonl")
    tune(tasks[:1], lambda t: ReplayRunner(t), checkpoint=ckpt)
    with (tmp_path / "c.jsonl").open("a") as f:
        f.write('{"torn": ')  # an interrupted write
    runners: list[ReplayRunner] = []

    def make(t):
        runners.append(ReplayRunner(t))
        return runners[-1]

    results = tune(tasks, make, checkpoint=ckpt)
    assert [r.task for r in results] == tasks
    assert [r.task for r in runners] == tasks[1:]


def test_time_budget_stops_cleanly():
    tasks = tasks_for(["float32"], [(False, False)], default_grid()[:5])
    assert tune(tasks, lambda t: ReplayRunner(t), time_budget_s=-1.0) == []


def write_table(tmp_path, results, name=GPU, cc=CC):
    device = {"name": name, "compute_capability": cc, "versions": {}}
    path = tmp_path / "table.json"
    write(path, results, device, "test", "random")
    return path


def test_writer_schema_and_lookup(tmp_path):
    shapes = [Shape(64, 64, 64), Shape(4096, 4096, 4096)]
    results = tune(tasks_for(["float32"], [(False, False)], shapes), lambda t: ReplayRunner(t))
    path = write_table(tmp_path, results)
    data = json.loads(path.read_text())
    assert "do not edit" in data["_comment"] and data["schema_version"] == table.SCHEMA_VERSION
    assert data["family_hashes"] == table.family_hashes() and "kernel_hash" not in data
    loaded = table.load(path)
    near = table.lookup(loaded, GPU, CC, "float32", False, False, 3000, 5000, 4000)
    assert near.level == "device" and (near.entry.m, near.entry.k) == (4096, 4096)
    other_trans = table.lookup(loaded, GPU, CC, "float32", True, True, 64, 64, 64)
    assert other_trans.entry is not None and "float32/NN" in other_trans.reason
    arch = table.lookup(loaded, "NVIDIA H100 PCIe", CC, "float32", False, False, 64, 64, 64)
    assert arch.level == "architecture"
    none = table.lookup(loaded, "RTX 4090", "8.9", "float32", False, False, 64, 64, 64)
    assert none.level == "default" and none.entry is None
    assert table.lookup(loaded, GPU, CC, "float64", False, False, 64, 64, 64).entry is None


def test_writer_merges_devices(tmp_path):
    one = tune(tasks_for(["float32"], [(False, False)], [Shape(64, 64, 64)]),
               lambda t: ReplayRunner(t))  # fmt: skip
    write_table(tmp_path, one, name="GPU A")
    path = write_table(tmp_path, one, name="GPU B")
    assert {d.name for d in table.load(path).devices} == {"GPU A", "GPU B"}


def test_a_gpus_own_section_serves_it_before_its_architectures(tmp_path):
    one = tune(tasks_for(["float32"], [(False, False)], [Shape(64, 64, 64)]),
               lambda t: ReplayRunner(t))  # fmt: skip
    write_table(tmp_path, one, name="GPU A")
    loaded = table.load(write_table(tmp_path, one, name="GPU B"))
    (_, own), (_, same_cc) = table.levels(loaded, "GPU B", CC)
    assert [d.name for d in own] == ["GPU B"]
    assert sorted(d.name for d in same_cc) == ["GPU A", "GPU B"]
    assert table.lookup(loaded, "GPU B", CC, "float32", False, False, 64, 64, 64).level == "device"
    (_, none), _ = table.levels(loaded, "GPU C", CC)
    assert none == []


@pytest.mark.parametrize("content,match", [
    ("not json", "cannot read"),
    ('{"schema_version": 99, "devices": []}', "schema_version"),
    ('{"schema_version": 1, "devices": [{"name": "x"}]}', "compute_capability are needed"),
])  # fmt: skip
def test_corrupt_tables_are_refused(tmp_path, content, match):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(table.TableError, match=match):
        table.load(path)


def _choose_with_table(monkeypatch, path, shape=(64, 64, 64), trans=(False, False), **kw):
    monkeypatch.setenv(table.TABLE_ENV, str(path))
    monkeypatch.delenv(selection.FAMILY_ENV, raising=False)
    selection._choose.cache_clear()
    table._warned.clear()
    return selection.choose("float32", *shape, *trans, gpu=kw.get("gpu", GPU), cc=kw.get("cc", CC))


def test_runtime_choice_and_fallback_chain(tmp_path, monkeypatch):
    results = tune(tasks_for(["float32"], [(False, False)], [Shape(64, 64, 64)]),
                   lambda t: ReplayRunner(t, cublas_ms=100.0))  # fmt: skip
    path = write_table(tmp_path, results)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        choice = _choose_with_table(monkeypatch, path)
    assert choice.config == results[0].own and "tuned" in choice.reason
    with pytest.warns(RuntimeWarning, match="another sm_9.0 GPU"):
        _choose_with_table(monkeypatch, path, gpu="NVIDIA H100 PCIe")
    with pytest.warns(RuntimeWarning, match="built-in default"):
        choice = _choose_with_table(monkeypatch, path, gpu="RTX", cc="8.9")
    assert choice.config == selection.default_config("float32")


@pytest.mark.parametrize("damage", ["corrupt", "stale", "invalid-entry", "missing"])
def test_broken_tables_warn_and_fall_back(tmp_path, monkeypatch, damage):
    results = tune(tasks_for(["float32"], [(False, False)], [Shape(64, 64, 64)]),
                   lambda t: ReplayRunner(t, cublas_ms=100.0))  # fmt: skip
    path = write_table(tmp_path, results)
    data = json.loads(path.read_text())
    if damage == "corrupt":
        path.write_text(path.read_text()[:50])
    elif damage == "stale":
        for name in data["family_hashes"]:  # every family of the entry's configs
            data["family_hashes"][name] = "0123456789abcdef"
        path.write_text(json.dumps(data))
    elif damage == "invalid-entry":
        entry = data["devices"][0]["entries"]["float32/NN"][0]
        entry["own"]["params"]["BM"] = 3
        del entry["top"]  # its only config is then the damaged one
        path.write_text(json.dumps(data))
    else:
        path = tmp_path / "absent.json"
    with pytest.warns(RuntimeWarning):
        choice = _choose_with_table(monkeypatch, path)
    assert choice.config == selection.default_config("float32")


def test_cublas_choice_and_switch(tmp_path, monkeypatch):
    results = tune(tasks_for(["float32"], [(False, False)], [Shape(64, 64, 64)]),
                   lambda t: ReplayRunner(t, cublas_ms=1e-6))  # fmt: skip
    path = write_table(tmp_path, results)
    assert _choose_with_table(monkeypatch, path).config == table.CUBLAS
    monkeypatch.setenv(selection.CUBLAS_ENV, "0")
    assert _choose_with_table(monkeypatch, path).config == results[0].own


def test_explain_says_what_and_why(tmp_path, monkeypatch):
    import tunedgemm

    results = tune(tasks_for(["float32"], [(False, False)], [Shape(512, 512, 512)]),
                   lambda t: ReplayRunner(t, cublas_ms=100.0))  # fmt: skip
    monkeypatch.setenv(table.TABLE_ENV, str(write_table(tmp_path, results)))
    selection._choose.cache_clear()
    text = tunedgemm.explain(500, 600, 700, dtype=np.float32, gpu=GPU, cc=CC)
    chosen = selection.choose(np.float32, 500, 600, 700, gpu=GPU, cc=CC).config
    assert chosen in dict(top_configs(results[0])) and str(chosen) in text
    assert "measured" in text and "at 512x512x512, predicted" in text
    # At the measured shape itself the model predicts the measured times: the winner runs.
    assert str(results[0].own) in tunedgemm.explain(512, 512, 512, gpu=GPU, cc=CC)


def test_dry_run_without_gpu(capsys):
    from tunedgemm.tuning.cli import main

    args = ["--dry-run", "--dtype", "float64", "--trans", "NN", "--shapes", "64x64x64,96x96x96"]
    assert main(args) == 0
    summary = capsys.readouterr().out
    assert "2 tasks" in summary and "estimated time" in summary
    assert "float64/NN/64x64x64" not in summary  # the detail waits for --list
    assert main([*args, "--list"]) == 0
    assert "float64/NN/64x64x64" in capsys.readouterr().out


@pytest.mark.parametrize("bad", [["--shapes", "bogus"], ["--shapes", "8x8"], ["--list"]])
def test_tuner_usage_errors_are_usage_errors(bad, capsys):
    from tunedgemm.tuning.cli import main

    with pytest.raises(SystemExit) as stop:
        main(["--dry-run", *bad] if bad != ["--list"] else bad)
    assert stop.value.code == 2
    assert "usage: tunedgemm-tune" in capsys.readouterr().err


def test_mid_grid_lies_between_the_default_grid_points():
    mid = mid_grid()
    assert len(mid) == 121 == len(set(mid))
    assert {s.m for s in mid} == {128, 384, 1024, 3072, 8192}
    assert all(s.m * s.n * s.k <= 2 * 4096**3 for s in mid)
    assert parse_shapes("mid") == mid
    both = parse_shapes("default+mid")
    assert set(both) == set(default_grid()) | set(mid) and both == sorted(both)
    assert Shape(8192, 8192, 128) in parse_shapes("mid+benchmark")
    from tunedgemm.tuning.cli import build_parser

    assert "'mid'" in build_parser().format_help()


# Hand-made tables for the wave-model choice: X (128 x 128 tiles, two blocks per SM) fills one
# wave at 1536x2816 and needs two at the call's 1536x2817; Y (128 x 256 tiles, one per SM)
# needs two waves both at the call and at 1536x4096, a farther entry.
X = FAMILIES["simt"].default_config("float32")
Y = KernelConfig.make("simt", dict(BK=8, BM=128, BN=256, GROUP_M=1, MIN_BLOCKS=1, SPLIT_K=1,
                                   STAGES=2, TM=16, TN=8, WM=64, WN=64, STREAM_K=0,
                                   ADVANCE=0, ROLL_K=0, EARLY_BARRIER=0, MAXNREG=0,
                                   FMA_ORDER=0, REG_TRANSPOSE=0, ASYNC_CURSOR=0,
                                   LANE_PAIRS=0, KMAJOR_LANES=0))  # fmt: skip
CALL, NEAR, FAR = (1536, 2817, 1024), (1536, 2816, 1024), (1536, 4096, 1024)


def entry_dict(shape, own, own_ms, top=None, choice=None, cublas_ms=100.0):
    data = {"m": shape[0], "n": shape[1], "k": shape[2],
            "choice": table.config_json(choice or own), "own": table.config_json(own),
            "own_ms": own_ms, "cublas_ms": cublas_ms, "error": 1e-7, "vs_cublas": 0.0}  # fmt: skip
    if top is not None:
        data["top"] = [{"config": table.config_json(c), "ms": ms} for c, ms in top]
    return data


def table_file(tmp_path, entries, name=GPU, cc=CC):
    data = {"schema_version": table.SCHEMA_VERSION, "kernel_hash": table.kernel_hash(),
            "devices": [{"name": name, "compute_capability": cc, "versions": {},
                         "entries": entries}]}  # fmt: skip
    path = tmp_path / "hand.json"
    path.write_text(json.dumps(data))
    return path


def test_model_premise():
    assert not FAMILIES["simt"].violations(Y, "float32")
    assert (model.waves(X, "float32", NEAR), model.waves(X, "float32", CALL)) == (1, 2)
    assert model.waves(Y, "float32", FAR) == model.waves(Y, "float32", CALL) == 2


@pytest.mark.parametrize("y_ms,expected", [(1.5, Y), (2.5, X)])
def test_model_picks_config_of_a_farther_entry_when_predicted_faster(
    tmp_path, monkeypatch, y_ms, expected
):
    # X measured 0.1 ms at FAR must not count: X's nearest measurement (NEAR) predicts ~2 ms.
    far = entry_dict(FAR, Y, y_ms, top=[(Y, y_ms), (X, 0.1)])
    path = table_file(tmp_path, {"float32/NN": [entry_dict(NEAR, X, 1.0), far]})
    choice = _choose_with_table(monkeypatch, path, CALL)
    assert choice.config == expected
    at = "1536x4096x1024" if expected == Y else "1536x2816x1024"
    predicted = y_ms if expected == Y else 2.0 - model.LAUNCH_FLOOR_MS
    assert f"measured {y_ms if expected == Y else 1.0:.3g} ms at {at}" in choice.reason
    assert f"predicted {predicted:.3g} ms" in choice.reason
    assert "wave model over 2 nearest entries" in choice.reason
    assert "nearest: " in choice.reason and "1536x2816x1024 (log2 distance 0.00)" in choice.reason


@pytest.mark.parametrize("nearer,expected", [(table.NEIGHBOURS, X), (table.NEIGHBOURS - 1, Y)])
def test_only_the_nearest_entries_compete(tmp_path, monkeypatch, nearer, expected):
    near = [entry_dict((1536, 2816, 1024 + i), X, 1.0) for i in range(nearer)]
    far = entry_dict((64, 64, 64), Y, 0.001)  # would win anywhere, were it a neighbour
    path = table_file(tmp_path, {"float32/NN": [*near, far]})
    assert _choose_with_table(monkeypatch, path, CALL).config == expected


def test_invalid_candidates_are_skipped_with_a_warning(tmp_path, monkeypatch):
    broken = KernelConfig.make("simt", {**Y.as_dict(), "BM": 3})
    far = entry_dict(FAR, Y, 1.5, top=[(Y, 1.5), (broken, 0.001)])
    path = table_file(tmp_path, {"float32/NN": [entry_dict(NEAR, X, 1.0), far]})
    with pytest.warns(RuntimeWarning, match=r"BM=3.*invalid.*skipped"):
        choice = _choose_with_table(monkeypatch, path, CALL)
    assert choice.config == Y


def test_cublas_rule_follows_the_nearest_entry(tmp_path, monkeypatch):
    cublas_near = table_file(tmp_path, {"float32/NN": [
        entry_dict(NEAR, X, 1.0, choice=table.CUBLAS, cublas_ms=0.9),
        entry_dict(FAR, Y, 0.01)]})  # fmt: skip
    assert _choose_with_table(monkeypatch, cublas_near, CALL).config == table.CUBLAS
    monkeypatch.setenv(selection.CUBLAS_ENV, "0")
    own_only = _choose_with_table(monkeypatch, cublas_near, CALL)
    assert own_only.config == Y and own_only.reason.startswith("best own kernel")
    monkeypatch.delenv(selection.CUBLAS_ENV)
    far = entry_dict(FAR, Y, 3.0, choice=table.CUBLAS, cublas_ms=0.01)
    cublas_far = table_file(tmp_path, {"float32/NN": [entry_dict(NEAR, X, 1.0), far]})
    assert _choose_with_table(monkeypatch, cublas_far, CALL).config == X


def test_transposes_and_devices_keep_their_fallback_chain(tmp_path, monkeypatch):
    # The wanted key near the call serves it alone, though another key's configs look faster.
    both = {"float32/NN": [entry_dict(NEAR, X, 1.0)], "float32/NT": [entry_dict(FAR, Y, 0.01)]}
    path = table_file(tmp_path, both)
    assert _choose_with_table(monkeypatch, path, CALL).config == X
    assert _choose_with_table(monkeypatch, path, CALL, trans=(False, True)).config == Y
    # Absent (TT) or far (more than TRANS_PENALTY away): the nearest other key serves.
    assert _choose_with_table(monkeypatch, path, CALL, trans=(True, True)).config == X
    far = {"float32/NN": [entry_dict(NEAR, X, 1.0)], "float32/NT": [entry_dict((64, 64, 64), Y, 1)]}
    path = table_file(tmp_path, far)
    assert _choose_with_table(monkeypatch, path, CALL, trans=(False, True)).config == X
    with pytest.warns(RuntimeWarning, match="another sm_9.0 GPU"):
        other = _choose_with_table(monkeypatch, path, CALL, gpu="NVIDIA H100 PCIe")
    assert other.config == X
    with pytest.warns(RuntimeWarning, match="built-in default"):
        none = _choose_with_table(monkeypatch, path, CALL, gpu="RTX", cc="8.9")
    assert none.config == selection.default_config("float32")


def test_top_is_optional_and_always_holds_own(tmp_path):
    data = json.loads(table_file(tmp_path, {"float32/NN": [
        entry_dict(NEAR, X, 1.0), entry_dict(FAR, Y, 1.5, top=[(X, 1.2), (Y, 1.5)]),
        entry_dict((64, 64, 64), Y, 0.5, top=[(X, 0.6)])]}).read_text())  # fmt: skip
    bare, listed, missing_own = table.parse(data, "t").devices[0].entries["float32/NN"]
    assert bare.top == ((X, 1.0),)
    assert listed.top == ((X, 1.2), (Y, 1.5))
    assert missing_own.top == ((Y, 0.5), (X, 0.6))
    for bad in ([{"config": "cublas", "ms": 1.0}], [{"config": table.config_json(X)}],
                [{"config": table.config_json(X), "ms": "inf"}]):  # fmt: skip
        data["devices"][0]["entries"]["float32/NN"][0]["top"] = bad
        with pytest.raises(table.TableError):
            table.parse(data, "t")


def test_writer_emits_top_without_configs_that_failed_verification(tmp_path):
    task = Task("float32", False, False, Shape(1024, 1024, 1024))
    configs = [c for c, _ in strategies.get("random")(candidates("float32", task.shape),
                                                      lambda c: 0.0, 24)]  # fmt: skip
    recorded = {str(c): 0.5 + i / 10 for i, c in enumerate(configs[3:9])}
    ckpt = Checkpoint(tmp_path / "c.jsonl")
    [result] = tune([task], lambda t: ReplayRunner(t, recorded, broken={str(configs[3])}),
                    checkpoint=ckpt)  # fmt: skip
    assert result.own == configs[4]
    expected = [(c, 0.6 + i / 10) for i, c in enumerate(configs[4 : 4 + TOP_COUNT])]
    assert [c for c, _ in top_configs(result)] == [c for c, _ in expected]
    assert [ms for _, ms in top_configs(result)] == pytest.approx([ms for _, ms in expected])
    [resumed] = ckpt.load().values()  # checkpoints keep configs as text
    assert top_configs(resumed) == top_configs(result)
    entry = json.loads(write_table(tmp_path, [result]).read_text())["devices"][0]["entries"]
    top = entry["float32/NN"][0]["top"]
    assert len(top) == TOP_COUNT and top[0]["config"] == table.config_json(result.own)
    loaded = table.load(tmp_path / "table.json").devices[0].entries["float32/NN"][0]
    assert [c for c, _ in loaded.top] == [c for c, _ in expected]


def test_config_text_round_trip():
    for config in (X, Y, FAMILIES["tiled"].default_config("float64")):
        assert config_from_text(str(config)) == config
    assert config_from_text("tiled()") == KernelConfig("tiled")
    for text in ("cublas", "simt(BM=)", "simt(BM=1,BN)", "simt(BM=x)"):
        assert config_from_text(text) is None


def test_shipped_table_loads_without_top_and_keeps_the_cublas_rule(tmp_path, monkeypatch):
    data = json.loads(table.shipped_path().read_text())
    # Tables written before "top" existed: the shipped one with its runners-up removed.
    for dev in data["devices"]:
        for items in dev["entries"].values():
            for item in items:
                item.pop("top", None)
    # The same table as if tuned on the installed kernel sources, so that it is used here.
    data["kernel_hash"] = table.kernel_hash()
    path = tmp_path / "shipped.json"
    path.write_text(json.dumps(data))
    shipped = table.load(path)
    entries = [e for d in shipped.devices for es in d.entries.values() for e in es]
    assert entries and all(e.top == ((e.own, e.own_ms),) for e in entries)
    device = next(d for d in shipped.devices if d.name == GPU)
    rng = np.random.default_rng(7)
    for row in np.exp(rng.uniform(np.log(128), np.log(8192), (16, 3))):
        m, n, k = (int(x) for x in row)
        nearest = table.nearest(device, "float32", False, False, m, n, k)
        assert nearest is not None
        choice = _choose_with_table(monkeypatch, path, (m, n, k))
        assert (choice.config == table.CUBLAS) == (nearest[0].choice == table.CUBLAS)
        monkeypatch.setenv(selection.CUBLAS_ENV, "0")
        own = _choose_with_table(monkeypatch, path, (m, n, k))
        monkeypatch.delenv(selection.CUBLAS_ENV)
        assert own.config in {e.own for e in device.entries["float32/NN"]}
        assert f"wave model over {table.NEIGHBOURS} nearest entries" in own.reason


def test_a_precision_mode_is_tuned_into_its_own_entries(tmp_path):
    # --precision 3xtf32: the mode's family only, entries under "float32@3xtf32/NN", kept
    # through a checkpoint, and found by the table's lookup in that mode.
    shape = Shape(2048, 2048, 2048)
    [task] = tasks_for(["float32"], [(False, False)], [shape], "3xtf32")
    assert task.key == "float32@3xtf32/NN"
    configs = [c for c, _ in strategies.get("random")(candidates("float32", shape,
                                                                 precision="3xtf32"),
                                                      lambda c: 0.0, 24)]  # fmt: skip
    assert configs and all(FAMILIES[c.family].precision_of(c.as_dict()) == "3xtf32"
                           for c in configs)  # fmt: skip
    recorded = {str(c): 0.5 + i / 10 for i, c in enumerate(configs[2:8])}
    ckpt = Checkpoint(tmp_path / "c.jsonl")
    [result] = tune([task], lambda t: ReplayRunner(t, recorded, cublas_ms=9.0), checkpoint=ckpt)
    assert result.choice == configs[2]
    [resumed] = ckpt.load().values()
    assert resumed.task == task
    path = write_table(tmp_path, [result])
    entries = json.loads(path.read_text())["devices"][0]["entries"]
    assert list(entries) == ["float32@3xtf32/NN"]
    found = table.lookup(table.load(path), GPU, CC, "float32", False, False, 2048, 2048, 2048,
                         "3xtf32")  # fmt: skip
    assert found.entry is not None and found.entry.choice == configs[2]


def test_tuning_cli_takes_a_precision_for_float32_only():
    from tunedgemm.tuning import cli

    with pytest.raises(SystemExit):
        cli.main(["--dry-run", "--precision", "tf32", "--dtype", "float64"])
    assert cli.main(["--dry-run", "--precision", "tf32", "--dtype", "float32", "--trans", "NN",
                     "--shapes", "1024x1024x1024"]) == 0  # fmt: skip


def test_seeds_are_timed_after_the_sample_and_can_win():
    task = Task("float32", False, False, Shape(1024, 1024, 1024))
    sampled = [c for c, _ in strategies.get("random")(candidates("float32", task.shape),
                                                       lambda c: 0.0, 4)]  # fmt: skip
    seed = KernelConfig.make("simt", {**FAMILIES["simt"].default_config("float32").as_dict(),
                                      "ADVANCE": 1, "FMA_ORDER": 1})  # fmt: skip
    runner = ReplayRunner(task, {str(seed): 0.1})
    [result] = tune([task], lambda t: runner, max_evals=4, seeds=lambda t: [sampled[0], seed])
    assert runner.timed == [*sampled, seed]  # a seed the sample holds is not timed twice
    assert result.own == seed and result.choice == seed


def test_seeds_are_what_autotuning_would_time(monkeypatch):
    from tunedgemm import cuda, plans
    from tunedgemm.tuning.seeds import autotuned, layout_key

    monkeypatch.setattr(cuda, "sm_count", lambda: 132)
    task = Task("float32", True, False, Shape(77, 33, 11843))
    key = layout_key(task)
    assert (key.lda, key.ldb, key.ldc, key.aligned) == (11844, 11844, 80, True)
    seeds = autotuned(task, GPU, CC)
    choice = selection.choose("float32", 77, 33, 11843, True, False, gpu=GPU, cc=CC, warn=False)
    own = tuple(c for c in choice.candidates if isinstance(c, KernelConfig))
    assert seeds == [c for c in plans.own_candidates(own, key) if isinstance(c, KernelConfig)]
    assert set(own) < set(seeds)
    assert any(c.as_dict().get("ADVANCE") == 1 for c in seeds)  # twins
    assert any(c.as_dict()["SPLIT_K"] == 64 for c in seeds)  # wave-filling splits
    assert any(c.as_dict()["BN"] == 32 for c in seeds)  # narrow tiles
    assert autotuned(Task("float32", False, False, task.shape, "tf32"), GPU, CC) == []


def test_seeds_hold_the_small_familys_whole_space_where_its_work_bound_allows(monkeypatch):
    from tunedgemm import cuda
    from tunedgemm.families import small
    from tunedgemm.tuning.seeds import autotuned, of_task, within_work_bound

    monkeypatch.setattr(cuda, "sm_count", lambda: 132)
    space = list(small.FAMILY.space("float64"))
    tiny = Task("float64", False, True, Shape(96, 200, 64))
    assert within_work_bound(tiny) == space
    seeds = of_task(tiny, GPU, CC)
    assert seeds[: len(autotuned(tiny, GPU, CC))] == autotuned(tiny, GPU, CC)
    assert set(space) <= set(seeds) and len(seeds) == len(set(seeds))
    bound = small.MAX_WORK
    assert within_work_bound(Task("float64", False, False, Shape(bound, 1, 1))) == space
    assert within_work_bound(Task("float64", False, False, Shape(bound + 1, 1, 1))) == []
    assert within_work_bound(Task("float32", False, False, tiny.shape, "tf32")) == []


def test_the_table_is_written_an_entry_a_line(tmp_path):
    from tunedgemm.tuning.writer import dump_table

    tasks = tasks_for(["float32"], [(False, False)], [Shape(64, 64, 64), Shape(512, 512, 512)])
    path = write_table(tmp_path, tune(tasks, lambda t: ReplayRunner(t)))
    text = path.read_text()
    data = json.loads(text)
    assert dump_table(data) == text
    lines = [line.strip().rstrip(",") for line in text.splitlines()]
    for entry in data["devices"][0]["entries"]["float32/NN"]:
        assert json.dumps(entry, separators=(",", ":")) in lines


def test_the_own_winner_meets_cublas_in_turns_and_medians_decide():
    """Runner.head_to_head: own and cuBLAS timed alternately, the order swapped each round;
    one spike on either side does not decide the entry."""
    from tunedgemm.tuning.runner import Runner

    runner = Runner.__new__(Runner)  # no GPU: only the turn-taking is under test
    order: list[str] = []
    own_times, cublas_times = iter([5.0, 5.2, 5.1]), iter([4.3, 8.4, 4.4])

    def own_ms(config):
        order.append("own")
        return next(own_times)

    def cublas_ms():
        order.append("cublas")
        return next(cublas_times)

    runner._planned_ms, runner.time_cublas = own_ms, cublas_ms
    config = selection.default_config("float32")
    assert runner.head_to_head(config) == (5.1, 4.4)
    assert order == ["own", "cublas", "cublas", "own", "own", "cublas"]


def test_seeds_hold_the_other_layouts_candidates_with_this_layouts_twins(monkeypatch):
    """A TN task is seeded with NN's (and NT's, TT's) table candidates at its shape, each
    with TN's relatives: the loop twin and the TN twin (both operands through registers)."""
    from tunedgemm import cuda
    from tunedgemm.families import simt
    from tunedgemm.tuning.seeds import of_task, other_layouts

    monkeypatch.setattr(cuda, "sm_count", lambda: 132)
    task = Task("float32", True, False, Shape(4096, 4096, 4096))
    nn = selection.choose("float32", 4096, 4096, 4096, gpu=GPU, cc=CC, warn=False)
    nn_own = [c for c in nn.candidates if isinstance(c, KernelConfig)]
    assert nn_own
    seeds = other_layouts(task, GPU, CC)
    assert set(nn_own) <= set(seeds)
    first = nn_own[0]  # (relatives are timed for the first few: plans.RELATIVES_OF)
    assert first.family == "simt"
    for tn_twin in simt.LAYOUT_TWINS[(True, False)]:  # (inert settings canonical)
        twin = KernelConfig.make("simt", {**first.as_dict(), **tn_twin})
        assert simt.FAMILY.canonical(twin) in seeds
    every = of_task(task, GPU, CC)
    assert set(seeds) <= set(every) and len(every) == len(set(every))
    # An NN task takes TN's candidates as NN compiles them: no TN twin settings among them.
    nn_task = Task("float32", False, False, Shape(4096, 4096, 4096))
    assert all(c.as_dict().get("REG_TRANSPOSE", 0) == 0 and c.as_dict().get("ASYNC_CURSOR", 0) == 0
               for c in other_layouts(nn_task, GPU, CC))  # fmt: skip
    assert other_layouts(Task("float32", True, False, task.shape, "tf32"), GPU, CC) == []
