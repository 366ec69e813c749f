"""The examples run: each in a fresh interpreter, on NumPy (the machine without a GPU),
warnings as errors, exit status 0 (the Dask one with a small product on CPU workers)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
ARGS = {"dask_matmul.py": ["--n", "512", "--chunk", "256"]}


@pytest.mark.parametrize("name", sorted(p.name for p in EXAMPLES.glob("*.py")))
def test_example_runs(name: str) -> None:
    if name == "dask_matmul.py":
        pytest.importorskip("distributed")
    env = {**os.environ, "TUNEDGEMM_BACKEND": "numpy"}
    done = subprocess.run([sys.executable, "-W", "error", str(EXAMPLES / name),
                           *ARGS.get(name, [])], capture_output=True, text=True, env=env,
                          timeout=300, cwd=EXAMPLES)  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    assert done.stdout.strip()
