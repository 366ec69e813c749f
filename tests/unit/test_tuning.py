"""The tuner without a GPU: strategies, pruning, resume, the writer, schema checks, lookup and
the fallback chain, by replaying recorded (here: synthetic, deterministic) timings."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest

from tunedgemm import selection, table
from tunedgemm.params import KernelConfig
from tunedgemm.tuning import strategies
from tunedgemm.tuning.checkpoint import Checkpoint
from tunedgemm.tuning.driver import Task, tasks_for, tune
from tunedgemm.tuning.space import Shape, candidates, default_grid, parse_shapes, prune_reason
from tunedgemm.tuning.writer import write

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
        if str(config) in self.broken:
            return math.inf
        return self.recorded.get(str(config), 2.0 + (hash(str(config)) % 1000) / 1000)

    def time_cublas(self) -> float:
        return self.cublas_ms

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
    assert small_shape and len(small_shape) < len(candidates("float64", Shape(4096, 4096, 4096)))


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
    assert data["kernel_hash"] == table.kernel_hash()
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


@pytest.mark.parametrize("content,match", [
    ("not json", "cannot read"),
    ('{"schema_version": 99, "devices": []}', "schema_version"),
    ('{"schema_version": 1, "devices": [{"name": "x"}]}', "malformed"),
])  # fmt: skip
def test_corrupt_tables_are_refused(tmp_path, content, match):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(table.TableError, match=match):
        table.load(path)


def _choose_with_table(monkeypatch, path, **kw):
    monkeypatch.setenv(table.TABLE_ENV, str(path))
    monkeypatch.delenv(selection.FAMILY_ENV, raising=False)
    selection._choose.cache_clear()
    table._warned.clear()
    return selection.choose("float32", 64, 64, 64, gpu=kw.get("gpu", GPU), cc=kw.get("cc", CC))


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
        data["kernel_hash"] = "0123456789abcdef"
        path.write_text(json.dumps(data))
    elif damage == "invalid-entry":
        entry = data["devices"][0]["entries"]["float32/NN"][0]
        entry["own"]["params"]["BM"] = 3
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
    assert str(results[0].own) in text and "512x512x512" in text


def test_dry_run_without_gpu(capsys):
    from tunedgemm.tuning.cli import main

    assert main(["--dry-run", "--dtype", "float64", "--trans", "NN", "--shapes", "64x64x64"]) == 0
    assert "float64/NN/64x64x64" in capsys.readouterr().out
