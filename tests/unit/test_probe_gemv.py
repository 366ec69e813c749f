"""probe_gemv without a GPU: it says so and exits 1, having touched nothing."""

from __future__ import annotations

import importlib.util
from pathlib import Path

_PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "probe_gemv.py"
_SPEC = importlib.util.spec_from_file_location("probe_gemv", _PATH)
assert _SPEC is not None and _SPEC.loader is not None
probe = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(probe)


def test_without_a_gpu_it_says_so_and_writes_nothing(monkeypatch, tmp_path, capsys):
    from tunedgemm import cuda

    monkeypatch.setattr(cuda, "status", lambda: (False, "no device"))
    out = tmp_path / "rows.json"
    assert probe.main(["--json", str(out)]) == 1
    assert "needs a GPU (no device)" in capsys.readouterr().out
    assert not out.exists()
