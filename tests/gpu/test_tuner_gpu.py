"""The tuner's command line end to end on the GPU: a small run whose table loads, whose entries
hold verified own configs and both times, and which timed the seeds (what run-time
autotuning times at the shape) beside its sample:

    python -m pytest -q -m gpu tests/gpu/test_tuner_gpu.py
"""

from __future__ import annotations

import json
import math

import pytest

from tunedgemm import table
from tunedgemm.params import KernelConfig
from tunedgemm.tuning import checkpoint, cli

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("dtype,trans", [("float32", "TN"), ("float64", "NT")])
def test_a_small_tuning_run_writes_a_table_that_loads(tmp_path, dtype, trans):
    out, ckpt = tmp_path / "tuned.json", tmp_path / "ckpt.jsonl"
    assert cli.main(["--dtype", dtype, "--trans", trans, "--shapes", "200x96x1500,75x333x64",
                     "--max-evals", "3", "--out", str(out), "--checkpoint", str(ckpt)]) == 0
    loaded = table.load(out)
    [device] = loaded.devices
    [entries] = device.entries.values()
    assert len(entries) == 2
    for entry in entries:
        assert isinstance(entry.own, KernelConfig)
    for result in checkpoint.Checkpoint(ckpt).load().values():
        assert math.isfinite(result.own_ms) and math.isfinite(result.cublas_ms)
        assert math.isfinite(result.error)
        assert len(result.timed) > 3  # the sample, then the seeds it left out
    assert json.loads(out.read_text())["devices"][0]["entries"]
