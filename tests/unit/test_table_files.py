"""Table and crossover files (issue 14, items 5 and 8; issue 13, item 5): damaged files of any
shape warn and fall back, never raise; staleness is per kernel family; the user's files."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tunedgemm
from tunedgemm import _userdir, compiler, crossover, selection, table
from tunedgemm.info import format_info, info

GPU, CC = "NVIDIA H100 80GB HBM3", "9.0"
SHIPPED = json.loads(table.shipped_path().read_text())
ROOT = Path(__file__).resolve().parents[2]


def _everything_runs(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the table (and the crossover file beside it) at path: loading, choosing, explaining
    and `info` finish without an exception; a choice is made."""
    monkeypatch.setenv(table.TABLE_ENV, str(path))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        current = table.current()
        assert isinstance(current, table.Table | str)
        for dtype in ("float32", "float64"):
            choice = selection.choose(dtype, 300, 200, 100, gpu=GPU, cc=CC)
            assert choice.config
            assert "x" in tunedgemm.explain(100, 200, 300, dtype=dtype, gpu=GPU, cc=CC)
        sizes, _ = crossover.sizes(GPU)
        assert all(1 <= size <= crossover.MAX_SIZE for size in sizes.values())
        assert format_info(info())


def _write(tmp_path: Path, content: str | bytes, name: str = "bad") -> Path:
    path = tmp_path / f"{name}.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    return path


def _damaged(**change: object) -> str:
    """The shipped table's first entry of float32/NN with fields changed."""
    data = json.loads(json.dumps(SHIPPED))
    entry = data["devices"][0]["entries"]["float32/NN"][0]
    for name, value in change.items():
        if name == "entries":
            data["devices"][0]["entries"] = value
        elif name == "params":
            entry["own"]["params"] = value
        else:
            entry[name] = value
    return json.dumps(data)


BAD_TABLES = {
    "entries as a list": _damaged(entries=[1, 2]),
    "params as a list": _damaged(params=[["BM", 64]]),
    "m = 1e999": _damaged(m=1e999).replace("Infinity", "1e999"),
    "m = 0": _damaged(m=0),
    "m as a string": _damaged(m="64"),
    "m as a bool": _damaged(m=True),
    "own_ms null": _damaged(own_ms=None),
    "top as an object": _damaged(top={"config": 1}),
    "top item without ms": _damaged(top=[{"config": SHIPPED["devices"][0]["entries"][
        "float32/NN"][0]["own"]}]),
    "family not a string": _damaged(own={"family": 3, "params": {}}),
    "param values as floats": _damaged(params={"BM": 64.5}),
    "huge int": _damaged(n=10**5000) if sys.get_int_max_str_digits() == 0 else '{"m": '
    + "9" * 5000 + "}",
    "binary": b"\x89PNG\r\n\x1a\n\x00\xff\xfe" * 50,
    "latin-1": "{\"schema_version\": 1, \"devices\": [], \"x\": \"\xe9\"}".encode("latin-1"),
    "deep nesting": "[" * 100_000 + "]" * 100_000,
    "deep nesting of objects": '{"a":' * 50_000 + "1" + "}" * 50_000,
    "empty": "",
    "null": "null",
    "a list": "[]",
    "devices as an object": json.dumps({"schema_version": 1, "devices": {"x": 1}}),
    "family_hashes as a list": json.dumps({**SHIPPED, "family_hashes": ["x"]}),
    "NaN": _damaged(m=float("nan")),
}


@pytest.mark.parametrize("content", list(BAD_TABLES.values()), ids=list(BAD_TABLES))
def test_bad_tables_are_refused_with_a_message(tmp_path, monkeypatch, content):
    path = _write(tmp_path, content)
    reason = table._cached(str(path), path.stat().st_mtime)
    assert isinstance(reason, str) and str(path) in reason, reason
    _everything_runs(path, monkeypatch)


def test_a_bad_table_warns_once_naming_the_file(tmp_path, monkeypatch):
    path = _write(tmp_path, BAD_TABLES["params as a list"])
    monkeypatch.setenv(table.TABLE_ENV, str(path))
    selection._choose.cache_clear()
    with pytest.warns(RuntimeWarning) as record:
        for m in (100, 200, 300):
            selection.choose("float32", m, 64, 64, gpu=GPU, cc=CC)
    messages = [str(w.message) for w in record if "tunedgemm" in str(w.message)]
    assert len(messages) == 1 and str(path) in messages[0] and "params" in messages[0]


@pytest.mark.parametrize("name", ["params as a list", "binary", "deep nesting"])
def test_info_command_prints_no_traceback(tmp_path, name):
    path = _write(tmp_path, BAD_TABLES[name])
    crossover.path_for(path).write_bytes(b"\xff\xfe not json")
    env = {**os.environ, table.TABLE_ENV: str(path), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "tunedgemm", "info"], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=120)  # fmt: skip
    assert done.returncode == 0 and "Traceback" not in done.stdout + done.stderr
    assert str(path) in done.stdout


# Random JSON-ish values: what a damaged or hostile file may decode to.
_json = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                               max_size=4),
    max_leaves=12,
)  # fmt: skip


def _paths(value: object, prefix: tuple = ()) -> list[tuple]:
    """Every path to a node of a decoded JSON value."""
    found = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            found += _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            found += _paths(v, (*prefix, i))
    return found


def _small_shipped() -> dict:
    data = json.loads(json.dumps(SHIPPED))
    for device in data["devices"]:
        device["entries"] = {k: v[:2] for k, v in list(device["entries"].items())[:2]}
    return data


SMALL = _small_shipped()
NODES = _paths(SMALL)


@settings(max_examples=int(os.environ.get("FUZZ_TABLE_EXAMPLES", 150)), deadline=None,
          derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(where=st.sampled_from(NODES), value=_json, whole=st.booleans(), raw=_json)
def test_fuzzed_tables_never_raise(tmp_path, monkeypatch, where, value, whole, raw):
    """The shipped table with one node replaced by a random JSON value (or a random value as
    the whole file), and the same as its crossover file."""
    if whole:
        data = raw
    else:
        data = json.loads(json.dumps(SMALL))
        if where:
            node = data
            for step in where[:-1]:
                node = node[step]
            node[where[-1]] = value
        else:
            data = value
    path = tmp_path / f"fuzz{len(list(tmp_path.iterdir()))}.json"
    path.write_text(json.dumps(data))
    cross = {"schema_version": 1, "gpu": GPU, "size": {"float32": value, "float64": 512}}
    crossover.path_for(path).write_text(json.dumps(raw if whole else cross))
    _everything_runs(path, monkeypatch)


@pytest.mark.parametrize("content", [
    json.dumps({"schema_version": 1, "gpu": GPU, "size": {"float32": 1e999}}),
    json.dumps({"schema_version": 1, "gpu": GPU, "size": {"float32": 10**30}}),
    json.dumps({"schema_version": 1, "gpu": GPU, "size": {"float32": -5}}),
    json.dumps({"schema_version": 1, "gpu": GPU, "size": [1024]}),
    json.dumps({"schema_version": 1, "gpu": [GPU], "size": {}}),
    "[" * 100_000, b"\xff\xfe\x00",
])  # fmt: skip
def test_bad_crossover_files_warn_and_give_the_defaults(tmp_path, monkeypatch, content):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    path = tmp_path / "t.json"
    cross = crossover.path_for(path)
    cross.write_bytes(content if isinstance(content, bytes) else content.encode())
    monkeypatch.setenv(table.TABLE_ENV, str(path))
    with pytest.warns(RuntimeWarning, match=str(cross)):
        assert crossover.sizes(GPU) == (crossover.DEFAULT_SIZE, "built-in default")


# Item 8: the user's crossover file and kernel cache.


def test_user_crossover_file_is_read_first(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv(table.TABLE_ENV, str(tmp_path / "t.json"))
    assert crossover.user_path().is_relative_to(tmp_path / "cache")
    crossover.write(crossover.current_path(), {"gpu": GPU, "size": {"float32": 300}}, "t")
    crossover.write(crossover.user_path(), {"gpu": "other", "size": {"float32": 100}}, "t")
    assert crossover.sizes(GPU)[0]["float32"] == 300  # the user's is for another GPU
    crossover.write(crossover.user_path(), {"gpu": GPU, "size": {"float32": 200}}, "t")
    monkeypatch.setenv(table.TABLE_ENV, str(tmp_path / "t2.json"))  # a fresh cache key
    found, source = crossover.sizes(GPU)
    assert found["float32"] == 200 and str(crossover.user_path()) in source


def test_user_dir_without_platformdirs(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "platformdirs", None)  # import fails
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert _userdir.base() == tmp_path / "tunedgemm"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert _userdir.base() == Path.home() / ".cache" / "tunedgemm"


def test_private_dir_is_made_for_the_user_alone(tmp_path):
    made = _userdir.private_dir(tmp_path / "a" / "kernels")
    assert made is not None and (made.stat().st_mode & 0o777) == 0o700
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.warns(RuntimeWarning, match="others may write"):
        assert _userdir.private_dir(shared) is None
    assert "belongs to user" in _userdir.untrusted_reason(made, uid=os.getuid() + 1)


def test_kernel_cache_removes_entries_not_to_be_trusted(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    compiler.cache_dir.cache_clear()
    try:
        path = Path(str(compiler.cache_dir()))
        assert path == _userdir.base() / "kernels" and (path.stat().st_mode & 0o777) == 0o700
        good, planted = path / "good.cubin", path / "planted.cubin"
        good.write_bytes(b"x")
        good.chmod(0o600)
        planted.write_bytes(b"y")
        planted.chmod(0o666)
        with pytest.warns(RuntimeWarning, match="planted.cubin"):
            reasons = compiler.remove_untrusted_entries(path)
        assert len(reasons) == 1 and good.exists() and not planted.exists()
        with pytest.warns(RuntimeWarning, match="not to this user"):
            assert compiler.remove_untrusted_entries(path, uid=os.getuid() + 1)  # not ours
        path.chmod(0o777)
        compiler.cache_dir.cache_clear()
        with pytest.warns(RuntimeWarning, match="others may write"):
            assert compiler.cache_dir() is False  # PyCUDA: no disk cache
    finally:
        compiler.cache_dir.cache_clear()


# Issue 13, item 5: a table goes stale only when its own family's code changes.


@pytest.fixture
def kernels_copy(tmp_path, monkeypatch):
    """A copy of kernels/ that the hashes read; the hashes are computed afresh."""
    copy = tmp_path / "kernels"
    shutil.copytree(compiler.kernels_dir(), copy)
    monkeypatch.setattr(compiler, "kernels_dir", lambda: copy)
    table.family_hashes.cache_clear()
    yield copy
    table.family_hashes.cache_clear()


def _changed_hashes(before: dict[str, str]) -> set[str]:
    table.family_hashes.cache_clear()
    after = table.family_hashes()
    return {name for name in before if before[name] != after[name]}


def test_shipped_table_is_not_stale():
    """Every family the shipped table tuned has the source it was tuned on (families added
    since, such as tf32, have no entries there)."""
    table.family_hashes.cache_clear()
    current = table.family_hashes()
    assert SHIPPED["family_hashes"] == {f: current[f] for f in SHIPPED["family_hashes"]}


def test_comments_and_blank_lines_do_not_count(kernels_copy):
    before = table.family_hashes()
    simt = kernels_copy / "sgemm_simt.cu"
    text = simt.read_text()
    simt.write_text("// a new first line\n/* and a\n   block */\n\n" + text.replace("\n", "\n\n")
                    + "   // trailing\n")  # fmt: skip
    assert _changed_hashes(before) == set()


def test_code_in_one_family_makes_only_it_stale(kernels_copy, tmp_path, monkeypatch):
    before = table.family_hashes()
    simt = kernels_copy / "sgemm_simt.cu"
    simt.write_text(simt.read_text() + "\n__device__ int tunedgemm_new_code() { return 1; }\n")
    assert _changed_hashes(before) == {"simt"}
    path = tmp_path / "table.json"
    path.write_text(json.dumps({**SHIPPED, "family_hashes": before}))
    with pytest.warns(RuntimeWarning, match="kernel families simt are stale") as record:
        loaded = table._cached(str(path), path.stat().st_mtime)
    assert len([w for w in record if "stale" in str(w.message)]) == 1
    assert isinstance(loaded, table.Table)
    entries = [e for d in loaded.devices for es in d.entries.values() for e in es]
    configs = {c.family for e in entries for c, _ in e.top}
    assert "simt" not in configs and "dmma" in configs
    # cuBLAS entries stay: as many as the shipped table holds.
    shipped_cublas = [e for d in table.load(table.shipped_path()).devices
                      for es in d.entries.values() for e in es if e.choice == table.CUBLAS]
    cublas = [e for e in entries if e.choice == table.CUBLAS]
    assert shipped_cublas and len(cublas) == len(shipped_cublas)
    assert all(e.own is None or e.own.family != "simt" for e in cublas)
    # The float64 entries (dmma) are the shipped ones, untouched.
    shipped = table.load(table.shipped_path())
    assert [d.entries.get("float64/NN") for d in loaded.devices] == [
        d.entries.get("float64/NN") for d in shipped.devices]


def test_shared_header_makes_every_family_stale(kernels_copy):
    before = table.family_hashes()
    common = kernels_copy / "common.cuh"
    common.write_text(common.read_text() + "\n#define TUNEDGEMM_SOMETHING_NEW 1\n")
    assert _changed_hashes(before) == set(before)


def test_a_new_kernel_file_changes_nothing(kernels_copy):
    before = table.family_hashes()
    (kernels_copy / "sgemm_new.cu").write_text('#include "common.cuh"\n__global__ void k() {}\n')
    assert _changed_hashes(before) == set()


def test_strings_holding_comment_marks_are_code():
    assert table.code_only('a = "// not a comment"; // one\n') == 'a = "// not a comment";'
    assert table.code_only("x /* a */ y\n\n  z  \t w") == "x y\nz w"


def test_writer_keeps_the_fresh_families_entries(kernels_copy, tmp_path):
    from tunedgemm.tuning import writer

    data = json.loads(json.dumps(SHIPPED))
    data["family_hashes"] = {**table.family_hashes(), "simt": "0" * 16}
    kept = writer._without_stale(data)
    families = {e["own"]["family"] for d in kept["devices"] for es in d["entries"].values()
                for e in es}  # fmt: skip
    assert "simt" not in families and "dmma" in families
    assert writer._without_stale({"kernel_hash": "x", "devices": []}) == {}


def test_explain_works_on_the_shipped_table():
    text = tunedgemm.explain(512, 512, 512, dtype=np.float64, gpu=GPU, cc=CC)
    assert "float64 512x512x512" in text and "built-in default" not in text
