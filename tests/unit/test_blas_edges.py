"""The edges of BLAS semantics (issue 14, items 1-4 and 7), each checked against SciPy.

Every test runs the public routines on two routes: "short" (no setting: small calls take the
short route, in C where the extension is built) and "numpy" (TUNEDGEMM_BACKEND=numpy: the
general path to the NumPy backend). Each call is made twice and both results must be
bit-equal: the first call of a process takes the general path, later ones the short route."""

from __future__ import annotations

import decimal
import fractions
import warnings

import numpy as np
import pytest
from helpers import uniform
from scipy.linalg import blas as scipy_blas

import tunedgemm as tg
from tunedgemm import _args, _small_host

ROUTINES = {"sgemm": (tg.sgemm, scipy_blas.sgemm), "dgemm": (tg.dgemm, scipy_blas.dgemm)}
# inf * 0 and the like: the NumPy backend reports them as np.errstate says (SciPy does not).
pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")


@pytest.fixture(params=["short", "numpy"])
def route(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "numpy":
        monkeypatch.setenv("TUNEDGEMM_BACKEND", "numpy")
    else:
        monkeypatch.delenv("TUNEDGEMM_BACKEND", raising=False)
    warnings.filterwarnings("ignore", "tunedgemm: computing with NumPy", RuntimeWarning)
    return request.param


def twice(routine, *args, **kwargs):
    """routine(*args, **kwargs) twice (general path, then short route): bit-equal results."""
    first = routine(*args, **kwargs)
    second = routine(*args, **kwargs)
    np.testing.assert_array_equal(np.asarray(first), np.asarray(second))
    assert np.asarray(first).tobytes() == np.asarray(second).tobytes()
    return second


def same_as_scipy(name, *args, **kwargs):
    """tunedgemm's and SciPy's results of one call: exactly equal (NaN where NaN)."""
    ours, theirs = ROUTINES[name]
    got = twice(ours, *args, **kwargs)
    want = theirs(*args, **kwargs)
    assert type(got) is np.ndarray and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-6 if name == "sgemm" else 1e-13, atol=0)
    return got


# 1. c that cannot hold the result is never "written in place".


@pytest.mark.parametrize("kind", [list, tuple])
def test_c_that_is_no_array_gets_a_new_result(route, kind):
    ones = np.ones((2, 2))
    c = kind(kind(row) for row in np.zeros((2, 2)).tolist())
    got = same_as_scipy("dgemm", 1.0, ones, ones, c=c, overwrite_c=1)
    np.testing.assert_array_equal(got, np.full((2, 2), 2.0))
    assert got is not c and c == kind(kind(row) for row in [[0.0, 0.0], [0.0, 0.0]])


@pytest.mark.parametrize("beta", [0.0, 0.5])
def test_overlapping_c_gets_a_new_result(route, beta):
    rng = np.random.default_rng()
    a, b = uniform(rng, (3, 4), np.float64), uniform(rng, (4, 5), np.float64)
    base = uniform(rng, (5,), np.float64)
    c = np.lib.stride_tricks.as_strided(base, (3, 5), (0, 8))  # each row is base
    assert c.flags.writeable
    before = base.copy()
    got = tg.dgemm(1.0, a, b, beta, c, overwrite_c=1)
    assert got is not c
    np.testing.assert_allclose(got, a @ b + beta * np.broadcast_to(before, (3, 5)), rtol=1e-13)
    np.testing.assert_array_equal(base, before)


def test_holds_distinct_elements():
    assert _args.holds_distinct_elements((3, 5), (0, 8), 8) is False
    assert _args.holds_distinct_elements((3, 5), (8, 8), 8) is False  # diagonals meet
    assert _args.holds_distinct_elements((2, 3), (24, 16), 8) is True  # interleaved, apart
    assert _args.holds_distinct_elements((2, 3), (8, 12), 8) is False  # interleaved, touching
    assert _args.holds_distinct_elements((1, 4), (0, -8), 8) is True
    assert _args.holds_distinct_elements((4, 1), (4, 0), 8) is False  # half an element apart


def test_interleaved_c_is_written_in_place(route):
    rng = np.random.default_rng()
    a, b = uniform(rng, (2, 4), np.float64), uniform(rng, (4, 3), np.float64)
    base = np.full(8, np.nan)  # elements 0, 2, 4 and 3, 5, 7
    c = np.lib.stride_tricks.as_strided(base, (2, 3), (24, 16))
    assert tg.dgemm(1.0, a, b, c=c, overwrite_c=1) is c
    np.testing.assert_allclose(c, a @ b, rtol=1e-13)


# 2./3. alpha and beta as BLAS sees them.


@pytest.mark.parametrize("alpha", [np.inf, -np.inf, np.nan])
@pytest.mark.parametrize("name", ["sgemm", "dgemm"])
def test_k_zero_ignores_a_non_finite_alpha(route, name, alpha):
    got = same_as_scipy(name, alpha, np.ones((3, 0)), np.ones((0, 5)))
    np.testing.assert_array_equal(got, np.zeros((3, 5)))
    c = np.asfortranarray(uniform(np.random.default_rng(), (3, 5), np.float64))
    got = same_as_scipy(name, alpha, np.ones((3, 0)), np.ones((0, 5)), 2.0, c)
    np.testing.assert_array_equal(got, (2.0 * c).astype(got.dtype))


def test_sgemm_alpha_that_rounds_to_zero_reads_neither_input(route):
    a = np.full((2, 2), np.inf, np.float32)
    got = same_as_scipy("sgemm", 1e-50, a, np.ones((2, 2), np.float32))
    np.testing.assert_array_equal(got, np.zeros((2, 2)))


def test_sgemm_alpha_that_rounds_to_zero_reads_neither_input_general_path(route):
    """The same case with beta and c, which the C route passes on to Python."""
    a = np.full((2, 2), np.inf, np.float32)
    c = np.ones((2, 2), np.float32, order="F")
    got = same_as_scipy("sgemm", 1e-50, a, a, 1.0, c)
    np.testing.assert_array_equal(got, c)


@pytest.mark.parametrize("c_mode", ["copy", "overwrite"])
def test_sgemm_beta_that_rounds_to_zero_does_not_read_c(route, c_mode):
    rng = np.random.default_rng()
    a, b = uniform(rng, (3, 4), np.float32), uniform(rng, (4, 2), np.float32)
    c = np.full((3, 2), np.nan, np.float32, order="F")
    got = same_as_scipy("sgemm", 1.0, a, b, 1e-320, c.copy(), overwrite_c=0)
    assert np.isfinite(got).all()
    if c_mode == "overwrite":
        assert tg.sgemm(1.0, a, b, 1e-320, c, overwrite_c=1) is c
        assert np.isfinite(c).all()


@pytest.mark.parametrize("alpha", [1e39, -1e39, 3.5e38])
def test_sgemm_alpha_beyond_float32_is_inf_as_in_scipy(route, alpha):
    rng = np.random.default_rng()
    a, b = uniform(rng, (3, 4), np.float32), uniform(rng, (4, 2), np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # SciPy rounds silently; so must tunedgemm
        got = same_as_scipy("sgemm", alpha, a, b)
    assert np.isinf(got).all()
    zero = np.zeros((3, 4), np.float32)
    np.testing.assert_array_equal(same_as_scipy("sgemm", alpha, zero, b), np.full((3, 2), np.nan))


# 4. An error leaves every input as it was.


@pytest.mark.parametrize("beta", [0.0, 1.0])
@pytest.mark.parametrize("scipy_there", [True, False])
def test_an_error_under_errstate_leaves_c_unchanged(route, beta, scipy_there):
    """Without SciPy (NumPy computes): the overflow raises, c as it was. With SciPy, its BLAS
    computes the call as SciPy does: nothing raised, SciPy's result in c."""
    from tunedgemm import _host_blas

    rng = np.random.default_rng()
    c = np.asfortranarray(uniform(rng, (3, 5), np.float64))
    before = c.copy()
    a, b = 10 * np.ones((3, 4)), np.ones((4, 5))
    _host_blas.use_scipy(scipy_there)
    try:
        if _host_blas.routine() is not None:
            scipy_blas = pytest.importorskip("scipy.linalg.blas")
            with np.errstate(over="raise"):
                got = tg.dgemm(1e308, a, b, beta, c, overwrite_c=1)
            assert got is c
            expected = scipy_blas.dgemm(1e308, a, b, beta, before.copy(order="F"))
            np.testing.assert_array_equal(c, expected)
            return
        if scipy_there:
            pytest.skip("SciPy is not installed")
        errors_leave_c_unchanged(a, b, beta, c, before)
    finally:
        _host_blas.use_scipy(True)


def errors_leave_c_unchanged(a, b, beta, c, before):
    with np.errstate(over="raise"), pytest.raises(FloatingPointError):
        tg.dgemm(1e308, a, b, beta, c, overwrite_c=1)
    np.testing.assert_array_equal(c, before)
    with np.errstate(over="raise"), pytest.raises(FloatingPointError):
        tg.dgemm(1.0, a, b, 1e308, c * 10, overwrite_c=1)
    np.testing.assert_array_equal(c, before)


# 7. Compatibility with SciPy.


@pytest.mark.parametrize("beta", [2.0, -0.5, np.inf])
@pytest.mark.parametrize("name", ["sgemm", "dgemm"])
def test_beta_without_c_takes_c_as_zeros(route, name, beta):
    rng = np.random.default_rng()
    a, b = uniform(rng, (3, 4), np.float64), uniform(rng, (4, 2), np.float64)
    got = same_as_scipy(name, 1.5, a, b, beta)
    if np.isinf(beta):
        assert np.isnan(got).all()  # inf * 0, as SciPy


@pytest.mark.parametrize("flag", [True, False, 1.0, 2.0, np.int8(1), np.uint64(2), np.bool_(1)])
def test_trans_flags_scipy_accepts(route, flag):
    rng = np.random.default_rng()
    a = uniform(rng, (4, 4), np.float64)
    same_as_scipy("dgemm", 1.0, a, a, trans_a=flag, trans_b=flag)


@pytest.mark.parametrize("flag,error", [(1.5, TypeError), ("1", TypeError), (None, TypeError),
                                        (3, ValueError), (np.float64(-1.0), ValueError)])
def test_trans_flags_refused(route, flag, error):
    with pytest.raises(error, match="trans_b"):
        tg.dgemm(1.0, np.ones((2, 2)), np.ones((2, 2)), trans_b=flag)


@pytest.mark.parametrize("make", [
    lambda v: np.array(v), lambda v: np.array([v]), lambda v: np.array([[v]]),
    lambda v: decimal.Decimal(repr(v)), lambda v: fractions.Fraction(v), lambda v: np.float32(v),
], ids=["0-d", "1-element", "1x1", "Decimal", "Fraction", "np.float32"])
def test_scalars_scipy_accepts(route, make):
    rng = np.random.default_rng()
    a, b = uniform(rng, (3, 4), np.float64), uniform(rng, (4, 2), np.float64)
    c = np.asfortranarray(uniform(rng, (3, 2), np.float64))
    same_as_scipy("dgemm", make(-1.25), a, b, make(0.5), c)


@pytest.mark.parametrize("scalar", [np.ones(2), 1 + 1j, "2", [2.0], None])
def test_scalars_refused(route, scalar):
    with pytest.raises(TypeError, match="alpha"):
        tg.dgemm(scalar, np.ones((2, 2)), np.ones((2, 2)))


@pytest.mark.parametrize("flag,in_place", [(1, True), (True, True), (np.int8(1), True),
                                           (0, False)])
def test_overwrite_c_as_scipy_takes_it(route, flag, in_place):
    rng = np.random.default_rng()
    a, b = uniform(rng, (3, 4), np.float64), uniform(rng, (4, 2), np.float64)
    c = np.asfortranarray(uniform(rng, (3, 2), np.float64))
    theirs = scipy_blas.dgemm(1.0, a, b, 1.0, c.copy(), overwrite_c=flag)
    ours = tg.dgemm(1.0, a, b, 1.0, c, overwrite_c=flag)
    assert (ours is c) is in_place
    np.testing.assert_allclose(ours, theirs, rtol=1e-13)


@pytest.mark.parametrize("flag", ["0", "1", 1.0, None])
def test_overwrite_c_scipy_refuses(route, flag):
    """SciPy refuses these with a TypeError; "0" would be true by Python's truthiness."""
    c = np.zeros((2, 2), order="F")
    with pytest.raises(TypeError):
        scipy_blas.dgemm(1.0, np.ones((2, 2)), np.ones((2, 2)), c=c, overwrite_c=flag)
    with pytest.raises(TypeError, match="overwrite_c"):
        tg.dgemm(1.0, np.ones((2, 2)), np.ones((2, 2)), c=c, overwrite_c=flag)
    np.testing.assert_array_equal(c, np.zeros((2, 2)))


def test_matmul_of_np_matrix_returns_what_np_matmul_returns(route):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PendingDeprecationWarning)
        a = np.matrix(uniform(np.random.default_rng(), (3, 3), np.float64))
        want = np.matmul(a, a)
        got = twice(tg.matmul, a, a)
    assert type(got) is type(want) is np.matrix
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", ["sgemm", "dgemm"])
def test_negative_alpha_on_zeros_gives_positive_zero(route, name):
    got = same_as_scipy(name, -1.0, np.zeros((2, 3)), np.ones((3, 2)))
    assert not np.signbit(got).any()
    got = same_as_scipy(name, -1.0, np.zeros((2, 0)), np.ones((0, 2)))
    assert not np.signbit(got).any()


def test_negative_alpha_on_zeros_gives_positive_zero_with_c(route):
    """beta * c with c = -0 and alpha * 0 = -0 sums to -0 in BLAS too: only the sign of a
    zero product term is BLAS's."""
    c = np.full((2, 2), -0.0, order="F")
    got = same_as_scipy("dgemm", -1.0, np.zeros((2, 3)), np.ones((3, 2)), 1.0, c)
    assert np.signbit(got).all()


@pytest.mark.parametrize("k", [7, 1000, 4000])
@pytest.mark.parametrize("name", ["sgemm", "dgemm", "matmul"])
def test_first_and_later_calls_give_the_same_bits(route, name, k):
    """Negatively strided vector-shaped operands: np.dot and np.matmul sum them in another
    order, and the first call (general path) once used the other one."""
    rng = np.random.default_rng()
    dtype = np.float32 if name == "sgemm" else np.float64
    a = uniform(rng, (1, 2 * k), dtype)[:, ::-2]
    b = uniform(rng, (2 * k, 1), dtype)[::-2, :]
    _small_host.forget()
    if name == "matmul":
        twice(tg.matmul, a, b)
    else:
        twice(getattr(tg, name), 1.0, a, b)
