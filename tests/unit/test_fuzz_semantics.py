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


def _gemm_in_order(scale_each_product: bool, wrong_sign: bool = False) -> Any:
    """A dgemm that scales by alpha either the whole sum (as our kernels' epilogue does) or
    each product (as the reference BLAS does), writing into c as the BLAS routine would."""
    import numpy as np

    def dgemm(alpha, a, b, beta=0.0, c=None, trans_a=0, trans_b=0, overwrite_c=0):
        a = np.asarray(a, np.float64).T if trans_a else np.asarray(a, np.float64)
        b = np.asarray(b, np.float64).T if trans_b else np.asarray(b, np.float64)
        with np.errstate(all="ignore"):
            out = (a @ (alpha * b)) if scale_each_product else alpha * (a @ b)
            if beta != 0:
                out = out + beta * np.asarray(c, np.float64)
        if wrong_sign:  # every inf, those of the open order too, of the other sign
            out = np.where(np.isinf(out), -out, out)
        if overwrite_c and isinstance(c, np.ndarray) and c.dtype == np.float64 \
                and c.flags.f_contiguous:  # fmt: skip
            c[...] = out
            return c
        return np.asfortranarray(out)

    return dgemm


def test_overflow_order_is_left_open_but_a_wrong_inf_is_caught():
    """Fuzz seed 20263098 (dgemm 5x2x17, alpha 1e308, beta inf): alpha times the sum
    overflows to inf and meets beta c's -inf (NaN), where alpha times each product does not;
    either order is BLAS, and an inf of the wrong sign is not."""
    import numpy as np
    from fuzz_cases import NumpyDrawer

    case = draw_case(NumpyDrawer(np.random.default_rng(20263098)), "dgemm")
    assert case.args["alpha"] == 1e308 and np.isinf(case.args["beta"])
    warnings.filterwarnings("ignore", category=RuntimeWarning)
    for scale_each_product in (False, True):
        assert judge(case, {"dgemm": _gemm_in_order(scale_each_product)}) is None
    assert judge(case, {"dgemm": _gemm_in_order(False, wrong_sign=True)}) is not None
