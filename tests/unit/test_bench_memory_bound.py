"""bench_memory_bound's arithmetic: the least bytes, intensity, ridge point and summary."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_memory_bound.py"
_SPEC = importlib.util.spec_from_file_location("bench_memory_bound", _PATH)
assert _SPEC is not None and _SPEC.loader is not None
bench = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(bench)


def test_least_bytes_count_each_operand_once():
    # A 3 x 5, B 5 x 7, C 3 x 7 of float32
    assert bench.least_bytes(3, 5, 7, 4) == 4 * (3 * 7 + 7 * 5 + 3 * 5)


def test_a_gemv_is_two_flops_per_element_of_b():
    # m = 1: A and C are small beside B, so float32 does about 2 flops per 4 bytes of B
    assert bench.intensity(1, 8192, 8192, 4) == pytest.approx(0.5, rel=1e-3)
    assert bench.intensity(1, 8192, 8192, 8) == pytest.approx(0.25, rel=1e-3)


def test_the_ridge_point_is_the_ceiling_over_hbm():
    assert bench.ridge("float32") == pytest.approx(64e12 / 3.35e12)
    assert bench.ridge("float64") == pytest.approx(66.5e12 / 3.35e12)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_every_default_shape_is_memory_bound(dtype):
    assert all(bench.memory_bound(shape, dtype) for shape in bench.SHAPES)


def test_a_large_square_is_compute_bound():
    assert not bench.memory_bound((4096, 4096, 4096), "float32")
    assert not bench.memory_bound((4096, 4096, 4096), "float64")


def test_gigabytes_per_s_are_least_bytes_over_time():
    # 1 x 8192 x 8192 float32 in 100 us: 4 * (8192 + 8192^2 + 8192) bytes
    expected = 4 * (2 * 8192 + 8192**2) / 100e-6 / 1e9
    assert bench.gigabytes_per_s((1, 8192, 8192), "float32", 100.0) == pytest.approx(expected)


def _row(shape, ratio, gbps, bound=True):
    return {"shape": list(shape), "dtype": "float32", "trans": "NN", "memory_bound": bound,
            "own_us": 1.0, "own_over_cublas": ratio, "auto_us": 1.0, "auto_over_cublas": 1.0,
            "own_gbps": gbps, "auto_gbps": gbps, "cublas_gbps": 2000.0}  # fmt: skip


def test_summary_leaves_out_compute_bound_rows():
    rows = [_row((1, 8, 8), 0.5, 1000.0), _row((8, 8, 8), 2.0, 3000.0),
            _row((4096, 4096, 4096), 0.01, 1.0, bound=False)]  # fmt: skip
    (entry,) = bench.summary(rows, copy_gbps=2000.0)
    assert entry["shapes"] == 2
    assert entry["own_over_cublas"] == pytest.approx(1.0)  # sqrt(0.5 * 2)
    assert entry["own_worst"] == 0.5
    assert entry["own_copy_share"] == pytest.approx(1.0)  # median of 0.5 and 1.5
    assert entry["cublas_copy_share"] == pytest.approx(1.0)


def test_the_arms_are_those_timed_before_first():
    row = {**_row((1, 8, 8), 1.0, 1.0), "before_us": 2.0}
    assert bench._arms_of([row]) == ["before", "own", "auto"]
    assert bench._arms_of([_row((1, 8, 8), 1.0, 1.0)]) == ["own", "auto"]
