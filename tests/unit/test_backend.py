"""Backend choice: NumPy fallback with one warning saying why, forcing, info and the CLI."""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest

import tunedgemm as tg
from tunedgemm import backend, cuda


@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.setattr(cuda, "status", lambda: (False, "pretend there is no GPU"))
    monkeypatch.setattr(backend, "_warned", False)
    monkeypatch.delenv("TUNEDGEMM_BACKEND", raising=False)


def test_fallback_warns_once_and_says_why(no_gpu):
    a = np.random.default_rng().uniform(-1, 1, (4, 4)).astype(np.float32)
    with pytest.warns(RuntimeWarning, match="pretend there is no GPU"):
        tg.sgemm(1.0, a, a)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tg.sgemm(1.0, a, a)


def test_forced_gpu_without_gpu_is_a_clear_error(no_gpu, monkeypatch):
    monkeypatch.setenv("TUNEDGEMM_BACKEND", "gpu")
    with pytest.raises(backend.GpuUnavailableError, match="pretend"):
        tg.sgemm(1.0, np.ones((2, 2)), np.ones((2, 2)))


def test_forced_numpy_does_not_warn(monkeypatch):
    monkeypatch.setenv("TUNEDGEMM_BACKEND", "numpy")
    monkeypatch.setattr(backend, "_warned", False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tg.dgemm(1.0, np.ones((3, 2)), np.ones((2, 3)))
    assert backend.selected() == ("numpy", "TUNEDGEMM_BACKEND=numpy")


def test_info_reports_backend_and_reason(no_gpu):
    report = tg.info()
    assert report["backend"] == "numpy"
    assert "pretend" in report["backend_reason"]
    assert "float32" in report["default_configs"]


@pytest.mark.parametrize(
    "command", [["info"], ["demo", "--size", "64", "96"], ["verify", "--quick"]]
)
def test_command_line(command):
    env_free = subprocess.run(
        [sys.executable, "-m", "tunedgemm", *command], capture_output=True, text=True, timeout=300
    )
    assert env_free.returncode == 0, env_free.stdout + env_free.stderr
    assert "backend" in env_free.stdout


def test_cublas_reference_failure_is_contained(monkeypatch):
    from tunedgemm import reference

    reference.status.cache_clear()
    monkeypatch.setattr(cuda, "status", lambda: (True, "pretend GPU"))
    monkeypatch.setattr(reference, "_cublas", lambda: (_ for _ in ()).throw(OSError("no lib")))
    ok, why = reference.status()
    reference.status.cache_clear()
    assert not ok and "no lib" in why
