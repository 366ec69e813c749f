"""The short route of small host calls: the same results as the general NumPy path, and the
general path for every call it does not plainly own."""

from __future__ import annotations

import itertools
import os
import shutil
import sysconfig

import numpy as np
import pytest

import tunedgemm as tg
from tunedgemm import _small_host, numpy_backend
from tunedgemm._args import normalise

F32, F64 = np.dtype(np.float32), np.dtype(np.float64)


@pytest.fixture(autouse=True)
def numpy_backend_forced(monkeypatch):
    monkeypatch.setenv("TUNEDGEMM_BACKEND", "numpy")


def short_route(a, b):
    """matmul's result when its short route takes the call, else None (the general path,
    stubbed out here, was asked)."""
    from tunedgemm import api

    asked = object()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(api, "general_matmul", lambda *args: asked)
        result = _small_host.matmul(a, b)
    return None if result is asked else result


def general(alpha, a, b, trans_a, trans_b, dtype):
    problem = normalise(alpha, a, b, 0.0, None, trans_a, trans_b, 0, dtype)
    numpy_backend.gemm_into(problem)
    return problem.result


@pytest.mark.parametrize("dtype", [F32, F64])
@pytest.mark.parametrize("trans_a,trans_b", list(itertools.product([0, 1, 2], repeat=2)))
@pytest.mark.parametrize("alpha", [1.0, -0.75, 3])
@pytest.mark.parametrize("m,n,k", [(5, 7, 9), (60, 50, 70)])  # below and above DOT_LIMIT
def test_same_result_as_the_general_path(rng, dtype, trans_a, trans_b, alpha, m, n, k):
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
    monkeypatch.setattr(crossover, "size_for", lambda dtype: 10)
    assert backend.quietly_numpy((9, 9, 9), F32)
    assert not backend.quietly_numpy((10, 10, 10), F32)
    a = rng.uniform(-1, 1, (10, 10)).astype(F32)
    for _ in range(2):  # the first call looks the size up, the second uses what it kept
        assert _small_host.product(1.0, a, a, 0.0, 0, 0, F32) is None
        assert short_route(a, a) is None
        assert _small_host.product(1.0, a[:9, :9], a[:9, :9], 0.0, 0, 0, F32) is not None
        assert short_route(a[:9, :9], a[:9, :9]) is not None
    # Skinny products move much data for little work: NumPy's, by intensity, at any size.
    tall = rng.uniform(-1, 1, (4000, 2)).astype(F32)
    assert _small_host.product(1.0, tall, tall, 0.0, 0, 1, F32) is not None
    # A set TUNEDGEMM_BACKEND is honoured at once, whatever was kept.
    monkeypatch.setenv("TUNEDGEMM_BACKEND", "gpu")
    assert short_route(a[:9, :9], a[:9, :9]) is None
    assert _small_host.product(1.0, a[:9, :9], a[:9, :9], 0.0, 0, 0, F32) is None


@pytest.mark.parametrize("dtype", [F32, F64])
@pytest.mark.parametrize("a_order,b_order", list(itertools.product("CF", repeat=2)))
@pytest.mark.parametrize("size", [1, 10])  # below and above DOT_LIMIT
def test_matmul_route_is_numpys_product(rng, dtype, a_order, b_order, size):
    a = np.asarray(rng.uniform(-1, 1, (5 * size, 9 * size)), dtype, order=a_order)
    b = np.asarray(rng.uniform(-1, 1, (9 * size, 7 * size)), dtype, order=b_order)
    fast = short_route(a, b)
    assert fast is not None and fast.dtype == dtype and fast.flags.c_contiguous
    np.testing.assert_array_equal(fast, np.matmul(a, b))
    np.testing.assert_array_equal(tg.matmul(a, b), np.matmul(a, b))


@pytest.mark.parametrize(
    "a_form,b_form",
    [
        ("1d", "2d"),
        ("2d", "1d"),
        ("3d", "2d"),
        ("f64", "2d"),
        ("int", "int"),
        ("2d", "misaligned"),
        ("list", "2d"),
        ("matrix", "2d"),
    ],
)
@pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")
def test_other_matmuls_take_the_general_path(rng, a_form, b_form):
    base = rng.uniform(-1, 1, (4, 4)).astype(F32)
    forms = {"2d": base, "1d": base[0], "3d": base[None], "f64": base.astype(F64),
             "int": (base * 10).astype(np.int32), "misaligned": base[:3], "list": base.tolist(),
             "matrix": np.asmatrix(base)}  # fmt: skip
    a, b = forms[a_form], forms[b_form]
    assert short_route(a, b) is None
    if b_form != "misaligned":  # the general path gives NumPy's answer
        np.testing.assert_allclose(tg.matmul(a, b), np.matmul(a, b), rtol=1e-5)


def test_errors_still_name_the_argument(rng):
    a = rng.uniform(-1, 1, (3, 4)).astype(F32)
    with pytest.raises(ValueError, match="do not align"):
        tg.sgemm(1.0, a, a)
    with pytest.raises(TypeError, match="trans_a"):
        tg.sgemm(1.0, a, a.T, trans_a=1.5)
    with pytest.raises(ValueError, match="trans_b"):
        tg.sgemm(1.0, a, a, trans_b=3)
    with pytest.raises(ValueError, match="inner dimensions"):
        tg.matmul(a, a)


def test_extension_is_built_where_it_can_be():
    """An install with a C compiler and Python's headers builds the extension (setup.py lets
    a failed build pass, so that installs without them work: this catches it failing here)."""
    include = sysconfig.get_paths()["include"]
    if not (shutil.which("cc") and os.path.exists(os.path.join(include, "Python.h"))):
        pytest.skip("no C compiler or no Python headers: the Python route serves")
    assert _small_host.NATIVE, "tunedgemm._short_route was not built (see setup.py's output)"
