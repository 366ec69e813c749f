"""bench_multigpu's sampled check of host products: passes right results, fails wrong ones."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

_PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_multigpu.py"
_SPEC = importlib.util.spec_from_file_location("bench_multigpu", _PATH)
assert _SPEC is not None and _SPEC.loader is not None
bench = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(bench)


@pytest.fixture(params=["float32", "float64"])
def product(request):
    rng = np.random.default_rng()
    a = rng.uniform(-1, 1, (300, 700)).astype(request.param)
    b = rng.uniform(-1, 1, (700, 200)).astype(request.param)
    return a, b, a @ b


def test_a_right_product_passes(product):
    a, b, c = product
    check = bench.sampled_check(c, a, b, lines=64)
    assert check["passed"] and check["error"] <= check["tolerance"]
    assert bench.check_text(check).startswith("ok")


@pytest.mark.parametrize("wrong", ["term", "nan"])
def test_a_wrong_element_fails_where_sampled(product, wrong):
    a, b, c = product
    i, j = 17, 123
    # The largest product term dropped (the error a wrong index or a stale tile makes), or NaN.
    terms = a[i, :] * b[:, j]
    c[i, j] = np.nan if wrong == "nan" else c[i, j] - terms[np.argmax(np.abs(terms))]
    check = bench.sampled_check(c, a, b, lines=max(c.shape))  # every row and column
    assert not check["passed"]
    assert bench.check_text(check).startswith("WRONG")
