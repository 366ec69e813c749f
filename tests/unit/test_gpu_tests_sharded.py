"""gpu_tests_sharded's reading of a shard's verbose log: every outcome counted, parametrized
ids with spaces included (a shard of test_faults.py counted 37 of its 175 on 2026-11-29); and
in a shard the GPU modules' own parallel precompiles stand aside."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from tunedgemm.families import FAMILIES
from tunedgemm.params import KernelConfig

_PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu_tests_sharded.py"
_SPEC = importlib.util.spec_from_file_location("gpu_tests_sharded", _PATH)
assert _SPEC is not None and _SPEC.loader is not None
sharded = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(sharded)


def test_outcomes_reads_every_id_with_or_without_spaces(tmp_path):
    log = tmp_path / "gpu-tests-shard-0.txt"
    log.write_text(
        "============================= test session starts ==============================\n"
        "tests/gpu/test_faults.py::test_killed[float32-interrupt in a launch-0] PASSED [  0%]\n"
        "tests/gpu/test_faults.py::test_killed[float64-out of memory] FAILED [  1%]\n"
        "tests/gpu/test_plans_gpu.py::test_plain PASSED [  2%]\n"
        "tests/gpu/test_plans_gpu.py::test_skipped[a b] SKIPPED (no CuPy) [  3%]\n"
        "FAILED tests/gpu/test_faults.py::test_killed[float64-out of memory] - AssertionError\n"
        "======================= 2 passed, 1 failed, 1 skipped in 1.00s =================\n")
    assert sharded.outcomes(log) == {
        "tests/gpu/test_faults.py::test_killed[float32-interrupt in a launch-0]": "PASSED",
        "tests/gpu/test_faults.py::test_killed[float64-out of memory]": "FAILED",
        "tests/gpu/test_plans_gpu.py::test_plain": "PASSED",
        "tests/gpu/test_plans_gpu.py::test_skipped[a b]": "SKIPPED",
    }


def test_a_shard_compiles_what_its_tests_meet_not_its_modules_whole_set(monkeypatch):
    # The shared precompile helpers of the GPU modules do nothing in a shard (its tests compile
    # their kernels as they launch them) and compile in parallel otherwise.
    import dmma_variants
    import helpers
    import simt_variants

    from tunedgemm import compiler

    calls: list[str] = []
    monkeypatch.setattr(compiler, "precompile", lambda *a, **k: calls.append("precompile"))
    monkeypatch.setattr(compiler, "precompile_raw", lambda *a, **k: calls.append("raw"))
    config = simt_variants.config(next(iter(simt_variants.BASES)), {})
    dmma = KernelConfig.make("dmma", FAMILIES["dmma"].default_config("float64").as_dict())

    def run_all() -> None:
        dmma_variants.precompile([dmma])
        simt_variants.precompile([config])
        helpers.precompile_variants([config], "float32", [(False, False)])

    monkeypatch.setenv(helpers.SHARD_ENV, "3")
    assert not helpers.precompiles_modules()
    run_all()
    assert calls == []
    monkeypatch.delenv(helpers.SHARD_ENV)
    assert helpers.precompiles_modules()
    run_all()
    assert calls.count("raw") == 1 and calls.count("precompile") > 1
