"""Differential fuzzing (issue 14, item 9): sgemm, dgemm, gemm and matmul on the NumPy backend
against scipy.linalg.blas and np.matmul, over shapes (zero sizes, vectors), dtypes, layouts,
flags, scalars and c's kinds (tests/fuzz_cases.py draws and judges each call). Seeded:
the default run draws the same ~1000 calls every time; FUZZ_EXAMPLES=N draws more."""

from __future__ import annotations

import os
import warnings
from typing import Any

import pytest
from fuzz_cases import ROUTINES, draw_case, judge
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tunedgemm

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", 250))  # per routine: ~1000 calls in all


class HypothesisDrawer:
    """Choices drawn by hypothesis, which shrinks a failing case toward the first options."""

    def __init__(self, data: st.DataObject) -> None:
        self.data = data

    def choice(self, options: Any) -> Any:
        return self.data.draw(st.sampled_from(options))

    def seed(self) -> int:
        return self.data.draw(st.integers(0, 2**32 - 1))


@pytest.fixture
def numpy_backend(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.setenv("TUNEDGEMM_BACKEND", "numpy")
    warnings.filterwarnings("ignore", category=RuntimeWarning)
    return {name: getattr(tunedgemm, name) for name in ROUTINES}


@pytest.mark.parametrize("routine", ROUTINES)
@settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_routine_agrees_with_scipy_and_numpy(numpy_backend, routine, data):
    case = draw_case(HypothesisDrawer(data), routine)
    problem = judge(case, numpy_backend)
    assert problem is None, f"{problem}\n  repro: {case.repro()}"
