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
from tunedgemm import _host_blas, _small_host, checks, numpy_backend
from tunedgemm._args import normalise

F32, F64 = np.dtype(np.float32), np.dtype(np.float64)


@pytest.fixture(autouse=True)
def numpy_backend_forced(monkeypatch):
    monkeypatch.setenv("TUNEDGEMM_BACKEND", "numpy")


def short_route(a, b):
    """matmul's result when its short route takes the call, else None (the general path).
    The Python route, as api.matmul calls it: for a NumPy array `a`, with no out, stream or
    precision."""
    return _small_host.small_matmul(a, b) if type(a) is np.ndarray else None


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
    fast = _small_host.product(alpha, a, b, 0.0, None, trans_a, trans_b, 0, dtype)
    assert fast is not None
    expected = general(alpha, a, b, trans_a, trans_b, dtype)
    assert fast.dtype == dtype and fast.shape == (m, n) and fast.flags.f_contiguous
    np.testing.assert_array_equal(fast, expected)


def test_gemm_takes_the_inputs_dtype(rng):
    a, b = rng.uniform(-1, 1, (3, 4)), rng.uniform(-1, 1, (4, 2))
    assert _small_host.product(1.0, a, b, 0, None, 0, 0, 0, None).dtype == F64
    a, b = a.astype(F32), b.astype(F32)
    assert _small_host.product(1.0, a, b, 0, None, 0, 0, 0, None).dtype == F32


@pytest.mark.parametrize(
    "change",
    [
        {"beta": 0.5},  # with no c: the general path says c is needed
        {"alpha": np.float32(1.0)},
        {"trans_a": True},
        {"trans_a": 3},
        {"a": "f64"},  # mixed dtypes: the general path casts
        {"a": "list"},
        {"a": "3d"},
        {"b": "misaligned"},
        {"alpha": float("inf")},  # not finite, with k > 0
        {"alpha": 1e300},  # beyond float32 (its cast warns)
        {"beta": float("nan"), "c": "c"},
        {"c": "c f64"},
        {"c": "c list"},
        {"c": "c wrong shape"},
        {"c": "c overlapping", "overwrite_c": 1},
        {"c": "c", "overwrite_c": "1"},
    ],
)
def test_other_calls_take_the_general_path(rng, change):
    args = {"alpha": 1.0, "a": rng.uniform(-1, 1, (3, 4)).astype(F32),
            "b": rng.uniform(-1, 1, (4, 2)).astype(F32), "beta": 0.0, "c": None, "trans_a": 0,
            "trans_b": 0, "overwrite_c": 0}  # fmt: skip
    c = rng.uniform(-1, 1, (3, 2)).astype(F32)
    forms = {"f64": args["a"].astype(F64), "list": args["a"].tolist(),
             "3d": args["a"][None], "misaligned": args["b"][:3], "c": c,
             "c f64": c.astype(F64), "c list": c.tolist(), "c wrong shape": c.T.copy(),
             "c overlapping": np.lib.stride_tricks.as_strided(c, (3, 2), (0, 4))}  # fmt: skip
    for name, value in change.items():
        args[name] = forms[value] if name in ("a", "b", "c") else value
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
        assert _small_host.product(1.0, a, a, 0.0, None, 0, 0, 0, F32) is None
        assert short_route(a, a) is None
        assert _small_host.product(1.0, a[:9, :9], a[:9, :9], 0.0, None, 0, 0, 0, F32) is not None
        assert short_route(a[:9, :9], a[:9, :9]) is not None
    # Skinny products move much data for little work: NumPy's, by intensity, at any size.
    tall = rng.uniform(-1, 1, (4000, 2)).astype(F32)
    assert _small_host.product(1.0, tall, tall, 0.0, None, 0, 1, 0, F32) is not None
    # A set TUNEDGEMM_BACKEND is honoured at once, whatever was kept.
    monkeypatch.setenv("TUNEDGEMM_BACKEND", "gpu")
    assert short_route(a[:9, :9], a[:9, :9]) is None
    assert _small_host.product(1.0, a[:9, :9], a[:9, :9], 0.0, None, 0, 0, 0, F32) is None


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
        ("3d", "3d other batch"),
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
    forms = {"2d": base, "3d": np.stack([base, base]), "f64": base.astype(F64),
             "3d other batch": np.stack([base, base, base]),
             "int": (base * 10).astype(np.int32), "misaligned": base[:3], "list": base.tolist(),
             "matrix": np.asmatrix(base)}  # fmt: skip
    a, b = forms[a_form], forms[b_form]
    assert short_route(a, b) is None
    if b_form not in ("misaligned", "3d other batch"):  # the general path gives NumPy's
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


def general_with_c(alpha, a, b, beta, c, trans_a, trans_b, overwrite_c, dtype):
    problem = normalise(alpha, a, b, beta, c, trans_a, trans_b, overwrite_c, dtype)
    numpy_backend.gemm_into(problem)
    return problem.result


@pytest.mark.parametrize("dtype", [F32, F64])
@pytest.mark.parametrize("order", ["F", "C"])
@pytest.mark.parametrize("overwrite_c", [0, 1])
@pytest.mark.parametrize("alpha,beta", [(1.0, 1.0), (-0.75, 0.5), (2, 0.0)])
def test_c_forms_same_result_as_the_general_path(rng, dtype, order, overwrite_c, alpha, beta):
    """With c: the general path's values (to rounding: it multiplies a @ b, the route
    (b.T @ a.T).T, which BLAS may sum in another order), in c where it writes in place, else
    in a new Fortran-ordered array (c untouched)."""
    for trans_a, trans_b in itertools.product([0, 1], repeat=2):
        a = rng.uniform(-1, 1, (9, 5) if trans_a else (5, 9)).astype(dtype)
        b = rng.uniform(-1, 1, (7, 9) if trans_b else (9, 7)).astype(dtype)
        values = rng.uniform(-1, 1, (5, 7))
        c, c_general = np.array(values, dtype, order=order), np.array(values, dtype, order=order)
        fast = _small_host.product(alpha, a, b, beta, c, trans_a, trans_b, overwrite_c, dtype)
        expected = general_with_c(alpha, a, b, beta, c_general, trans_a, trans_b, overwrite_c,
                                  dtype)  # fmt: skip
        assert fast is not None
        assert (fast is c) == bool(overwrite_c) and (expected is c_general) == bool(overwrite_c)
        if not overwrite_c:
            np.testing.assert_array_equal(c, np.asarray(values, dtype))
            assert fast.flags.f_contiguous
        scale = checks.float64_reference(alpha, a.T if trans_a else a, b.T if trans_b else b, beta,
                                 np.asarray(values, dtype))[1]  # fmt: skip
        error = checks.scaled_error(fast, np.asarray(expected, np.float64), scale)
        assert error <= checks.tolerance(9, dtype)


def test_blas_rules_at_the_edges(rng):
    """k == 0 and alpha == 0 read neither a nor b, beta == 0 does not read c, tested after
    rounding to the routine's dtype (issue 14 items 2 and 3)."""
    inf_a, ones_b = np.full((2, 3), np.inf, F32), np.ones((3, 2), F32)
    nan_c = np.full((2, 2), np.nan, F32, order="F")
    zeros = np.zeros((2, 2), F32)
    for alpha in (np.inf, np.nan, 1e300, 1e-50):  # k == 0
        result = _small_host.product(alpha, np.ones((2, 0), F32), np.ones((0, 2), F32), 0.0,
                                     None, 0, 0, 0, F32)  # fmt: skip
        np.testing.assert_array_equal(result, zeros)
    for alpha in (0.0, -0.0, 1e-50, 1e-46):  # 0 in float32: a unread
        result = _small_host.product(alpha, inf_a, ones_b, 0.0, None, 0, 0, 0, F32)
        np.testing.assert_array_equal(result, zeros)
        result = _small_host.product(alpha, inf_a, ones_b, 2.0, np.ones((2, 2), F32), 0, 0, 0,
                                     F32)  # fmt: skip
        np.testing.assert_array_equal(result, 2 * np.ones((2, 2)))
    for beta in (0.0, -0.0, 1e-320, 1e-46):  # 0 in float32: c unread
        c = nan_c.copy(order="F")
        result = _small_host.product(1.0, ones_b.T, ones_b, beta, c, 0, 0, 1, F32)
        assert result is c
        np.testing.assert_array_equal(c, 3 * np.ones((2, 2)))
    c = np.full((2, 2), np.nan)  # float64: 1e-320 is not 0, and c is read (as SciPy)
    assert np.isnan(_small_host.product(1.0, np.ones((2, 3)), np.ones((3, 2)), 1e-320, c, 0, 0,
                                        0, F64)).all()  # fmt: skip


@pytest.fixture
def without_scipy():
    """As if SciPy were missing: NumPy computes every product (tunedgemm._host_blas)."""
    _host_blas.use_scipy(False)
    yield
    _host_blas.use_scipy(True)


@pytest.mark.parametrize("beta", [0.0, 1.0])
def test_a_raise_leaves_c_as_it_was(beta, without_scipy):
    """Under np.errstate(over='raise'), an in-place call that overflows raises with c as it
    was (issue 14 item 4)."""
    c = np.full((3, 5), 7.0, order="F")
    with np.errstate(over="raise"), pytest.raises(FloatingPointError):
        _small_host.product(1e308, 10 * np.ones((3, 4)), np.ones((4, 5)), beta, c, 0, 0, 1, F64)
    np.testing.assert_array_equal(c, np.full((3, 5), 7.0))


@pytest.mark.parametrize("beta", [0.0, 1.0])
def test_by_blas_an_overflow_is_scipys(beta):
    """With SciPy's BLAS, the same call raises nothing and gives SciPy's result (Inf), the
    route's and the general path's alike."""
    scipy_blas = pytest.importorskip("scipy.linalg.blas")
    a, b = 10 * np.ones((3, 4)), np.ones((4, 5))
    c, c_general = np.full((3, 5), 7.0, order="F"), np.full((3, 5), 7.0, order="F")
    with np.errstate(over="raise"):
        assert _small_host.product(1e308, a, b, beta, c, 0, 0, 1, F64) is c
        general_with_c(1e308, a, b, beta, c_general, 0, 0, 1, F64)
        expected = scipy_blas.dgemm(1e308, a, b, beta, np.full((3, 5), 7.0, order="F"))
    np.testing.assert_array_equal(c, expected)
    np.testing.assert_array_equal(c_general, expected)
    assert np.isinf(expected).all()


@pytest.mark.parametrize("dtype", [F32, F64])
@pytest.mark.parametrize("a_shape,b_shape", [
    ((5, 4), (4,)), ((5,), (5, 3)), ((6,), (6,)), ((3, 5, 4), (3, 4, 2)), ((3, 5, 4), (4, 2)),
    ((2, 1, 5, 4), (3, 4, 2)), ((4,), (3, 4, 2)),
])  # fmt: skip
@pytest.mark.parametrize("with_out", [False, True])
def test_matmul_route_serves_vectors_batches_and_out(rng, dtype, a_shape, b_shape, with_out):
    a = rng.uniform(-1, 1, a_shape).astype(dtype)
    b = rng.uniform(-1, 1, b_shape).astype(dtype)
    expected = np.matmul(a, b)
    if with_out and np.ndim(expected) == 0:
        pytest.skip("a scalar result has no out here")
    out = np.full(np.shape(expected), np.nan, dtype) if with_out else None
    fast = _small_host._numpy_matmul(a, b, out)
    assert fast is not None and (fast is out or out is None)
    np.testing.assert_allclose(fast, expected, rtol=10 * np.finfo(dtype).eps, atol=1e-6)
    assert short_route(a, b) is not None
