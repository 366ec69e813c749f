"""The short route of small host calls: the same results as the general NumPy path, and the
general path for every call it does not plainly own."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import tunedgemm as tg
from tunedgemm import _small_host, numpy_backend
from tunedgemm._args import normalise

F32, F64 = np.dtype(np.float32), np.dtype(np.float64)


@pytest.fixture(autouse=True)
def numpy_backend_forced(monkeypatch):
    monkeypatch.setenv("TUNEDGEMM_BACKEND", "numpy")


def general(alpha, a, b, trans_a, trans_b, dtype):
    problem = normalise(alpha, a, b, 0.0, None, trans_a, trans_b, 0, dtype)
    numpy_backend.gemm_into(problem)
    return problem.result


@pytest.mark.parametrize("dtype", [F32, F64])
@pytest.mark.parametrize("trans_a,trans_b", itertools.product([0, 1, 2], repeat=2))
@pytest.mark.parametrize("alpha", [1.0, -0.75, 3])
def test_same_result_as_the_general_path(rng, dtype, trans_a, trans_b, alpha):
    m, n, k = 5, 7, 9
    a = rng.uniform(-1, 1, (k, m) if trans_a else (m, k)).astype(dtype)
    b = rng.uniform(-1, 1, (n, k) if trans_b else (k, n)).astype(dtype)
    fast = _small_host.product(alpha, a, b, 0.0, trans_a, trans_b, dtype)
    assert fast is not None
    expected = general(alpha, a, b, trans_a, trans_b, dtype)
    assert fast.dtype == dtype and fast.shape == (m, n) and fast.flags.f_contiguous
    np.testing.assert_array_equal(fast, expected)


def test_gemm_takes_the_inputs_dtype(rng):
    a, b = rng.uniform(-1, 1, (3, 4)), rng.uniform(-1, 1, (4, 2))
    assert _small_host.product(1.0, a, b, 0, 0, 0, None).dtype == F64
    assert _small_host.product(1.0, a.astype(F32), b.astype(F32), 0, 0, 0, None).dtype == F32


@pytest.mark.parametrize(
    "change",
    [
        {"alpha": 0.0},  # BLAS: A and B unread
        {"beta": 0.5},
        {"alpha": np.float32(1.0)},
        {"trans_a": True},
        {"trans_a": 3},
        {"a": "f64"},  # mixed dtypes: the general path casts
        {"a": "list"},
        {"a": "3d"},
        {"b": "misaligned"},
    ],
)
def test_other_calls_take_the_general_path(rng, change):
    args = {"alpha": 1.0, "a": rng.uniform(-1, 1, (3, 4)).astype(F32),
            "b": rng.uniform(-1, 1, (4, 2)).astype(F32), "beta": 0.0, "trans_a": 0,
            "trans_b": 0}  # fmt: skip
    forms = {"f64": args["a"].astype(F64), "list": args["a"].tolist(),
             "3d": args["a"][None], "misaligned": args["b"][:3]}  # fmt: skip
    for name, value in change.items():
        args[name] = forms.get(value, value) if isinstance(value, str) else value
    assert _small_host.product(dtype=F32, **args) is None


def test_below_crossover_only(monkeypatch, rng):
    """With the GPU usable, only calls below the crossover are NumPy's."""
    from tunedgemm import backend, crossover, cuda

    monkeypatch.delenv("TUNEDGEMM_BACKEND")
    monkeypatch.setattr(cuda, "status", lambda: (True, "pretend GPU"))
    monkeypatch.setattr(crossover, "for_call", lambda dtype, m, n, k: m * n * k < 1000)
    assert backend.quietly_numpy((9, 9, 9), F32)
    assert not backend.quietly_numpy((10, 10, 10), F32)
    a = rng.uniform(-1, 1, (10, 10)).astype(F32)
    assert _small_host.product(1.0, a, a, 0.0, 0, 0, F32) is None
    assert _small_host.product(1.0, a[:9, :9], a[:9, :9], 0.0, 0, 0, F32) is not None


def test_errors_still_name_the_argument(rng):
    a = rng.uniform(-1, 1, (3, 4)).astype(F32)
    with pytest.raises(ValueError, match="do not align"):
        tg.sgemm(1.0, a, a)
    with pytest.raises(TypeError, match="trans_a"):
        tg.sgemm(1.0, a, a.T, trans_a=1.5)
