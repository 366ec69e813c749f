"""What a user reads: warnings at the caller's line, clear errors, help pages, usage errors."""

from __future__ import annotations

import os
import pydoc
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import tunedgemm as tg
from tunedgemm import backend, cuda

ROOT = Path(__file__).resolve().parents[2]
# Subprocesses import the tunedgemm this process imported (the installed one, or the tree).
ENV = {**os.environ, "PYTHONPATH": str(Path(tg.__file__).resolve().parents[1])}


@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.setattr(cuda, "status", lambda: (False, "pretend there is no GPU"))
    monkeypatch.setattr(backend, "_warned", False)
    monkeypatch.delenv("TUNEDGEMM_BACKEND", raising=False)
    monkeypatch.delenv("TUNEDGEMM_LOG_SHAPES", raising=False)


def _python_route(routine):
    """The routine's Python function, behind the C short route where that is built."""
    return getattr(routine, "__wrapped__", routine)


def _calls(rng):
    a = rng.uniform(-1, 1, (5, 4)).astype(np.float32)
    b = rng.uniform(-1, 1, (4, 3)).astype(np.float32)
    c = np.asfortranarray(rng.uniform(-1, 1, (5, 3)).astype(np.float32))
    return {
        "sgemm": lambda r: r(tg.sgemm)(1.0, a, b),
        "dgemm": lambda r: r(tg.dgemm)(2.0, a, b),
        "gemm": lambda r: r(tg.gemm)(1.0, a, b),
        "sgemm-into-c": lambda r: r(tg.sgemm)(1.0, a, b, 1.0, c, overwrite_c=1),
        "matmul": lambda r: r(tg.matmul)(a, b),
        "matmul-vector": lambda r: r(tg.matmul)(a, b[:, 0]),
        "matmul-batch": lambda r: r(tg.matmul)(np.stack([a, a]), b),
    }


@pytest.mark.parametrize("route", ["public", "python"])
@pytest.mark.parametrize(
    "call",
    ["sgemm", "dgemm", "gemm", "sgemm-into-c", "matmul", "matmul-vector", "matmul-batch"],
)
def test_fallback_warning_names_the_callers_line(no_gpu, rng, call, route):
    pick = (lambda r: r) if route == "public" else _python_route
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _calls(rng)[call](pick)
    assert [w.category for w in caught] == [tg.NumpyFallbackWarning]
    assert caught[0].filename == __file__
    assert issubclass(tg.NumpyFallbackWarning, RuntimeWarning)


def test_fallback_warning_can_be_filtered_by_category(no_gpu, rng):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", category=tg.NumpyFallbackWarning)
        tg.sgemm(1.0, np.ones((2, 2)), np.ones((2, 2)))


def test_under_warnings_as_errors_the_first_call_raises_untouched_then_calls_compute(no_gpu, rng):
    """The decision of docs/settings.md: `-W error` turns the one fallback warning into an
    exception at the first call, before any array is written; later calls compute."""
    a = rng.uniform(-1, 1, (3, 3))
    c = np.asfortranarray(rng.uniform(-1, 1, (3, 3)))
    before = c.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(tg.NumpyFallbackWarning):
            tg.dgemm(1.0, a, a, 1.0, c, overwrite_c=1)
        np.testing.assert_array_equal(c, before)
        tg.dgemm(1.0, a, a, 1.0, c, overwrite_c=1)
    np.testing.assert_allclose(c, a @ a + before)


def test_log_shapes_without_a_gpu_says_so_once(no_gpu, monkeypatch, tmp_path):
    log = tmp_path / "shapes.jsonl"
    monkeypatch.setenv("TUNEDGEMM_LOG_SHAPES", str(log))
    with pytest.warns(tg.NumpyFallbackWarning) as caught:
        tg.sgemm(1.0, np.ones((2, 2)), np.ones((2, 2)))
    assert any("TUNEDGEMM_LOG_SHAPES" in str(w.message) for w in caught)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tg.sgemm(1.0, np.ones((2, 2)), np.ones((2, 2)))
    assert not log.exists()


def test_explain_without_a_gpu_says_numpy_runs_and_why(no_gpu):
    text = tg.explain(243, 389, 4980, dtype="float32")
    assert "NumPy" in text and "pretend there is no GPU" in text
    # naming a GPU explains its choice, GPU or not
    assert "NumPy" not in tg.explain(243, 389, 4980, gpu="NVIDIA H100 80GB HBM3", cc="9.0")


@pytest.mark.parametrize("dtype", ["float16", "int32", "bogus", np.complex64])
def test_explain_names_the_accepted_dtypes(dtype):
    with pytest.raises(ValueError, match="dtype must be 'float32' or 'float64'"):
        tg.explain(8, 8, 8, dtype=dtype)


@pytest.mark.parametrize("name", ["sgemm", "dgemm", "gemm", "matmul"])
def test_help_reads_as_a_function_of_tunedgemm(name):
    page = pydoc.render_doc(getattr(tg, name), renderer=pydoc.plaintext)
    head = page.splitlines()[0]
    assert "Route" not in head and head.endswith("in module tunedgemm"), head
    assert f"{name}(" in page
    for internal in ("general_matmul", "short route", "_small_host", "api."):
        assert internal not in page, internal


@pytest.mark.parametrize(
    "command",
    [
        [sys.executable, "-m", "tunedgemm", "demo", "--size", "-5"],
        [sys.executable, "-m", "tunedgemm", "demo", "--size", "big"],
        [sys.executable, "-m", "tunedgemm.tune", "--dry-run", "--shapes", "bogus"],
    ],
)
def test_bad_command_lines_are_usage_errors(command):
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=ROOT, env=ENV)
    assert done.returncode == 2, done.stderr
    assert "usage:" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize(
    "command",
    [["-m", "tunedgemm", "demo", "--size", "48"], [str(ROOT / "examples" / "basic.py")]],
)
def test_demo_and_examples_run_under_warnings_as_errors(command):
    done = subprocess.run([sys.executable, "-W", "error", *command], capture_output=True,
                          text=True, timeout=120, cwd=ROOT, env=ENV)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr


def test_demo_gives_the_fallback_warning_before_its_table():
    env = {**ENV, "CUDA_VISIBLE_DEVICES": ""}  # no GPU, even on the GPU machine
    env.pop("TUNEDGEMM_BACKEND", None)
    done = subprocess.run([sys.executable, "-m", "tunedgemm", "demo", "--size", "48"],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=120, cwd=ROOT, env=env)  # fmt: skip
    assert done.returncode == 0, done.stdout
    assert done.stdout.count("NumpyFallbackWarning") == 1, done.stdout
    assert done.stdout.index("NumpyFallbackWarning") < done.stdout.index("routine"), done.stdout
