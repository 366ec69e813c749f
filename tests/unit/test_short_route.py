"""The short route in C (tunedgemm/_short_route.c): the Python route's results, and the Python
routine, arguments untouched, for every call it does not plainly own. (Whether it is built
where it can be: tests/unit/test_small_host.py.)"""

from __future__ import annotations

import inspect
import itertools
import math
import operator
import pickle
import sys
import warnings
import weakref

import numpy as np
import pytest

import tunedgemm as tg
from tunedgemm import _small_host, checks

F32, F64 = np.dtype(np.float32), np.dtype(np.float64)
pytestmark = pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")


native = pytest.importorskip("tunedgemm._short_route")
KINDS = {"sgemm": native.SGEMM, "dgemm": native.DGEMM, "gemm": native.GEMM,
         "matmul": native.MATMUL}  # fmt: skip
PASSED = object()  # what the stand-in Python routine returns


@pytest.fixture
def route(monkeypatch):
    """route(name) -> (a Route of that kind whose Python routine records its calls, calls)
    under a pretend GPU whose crossover size is 40 for either dtype."""
    from tunedgemm import crossover, cuda

    monkeypatch.delenv("TUNEDGEMM_BACKEND", raising=False)
    monkeypatch.delenv("TUNEDGEMM_TABLE", raising=False)
    monkeypatch.setattr(cuda, "status", lambda: (True, "pretend GPU"))
    monkeypatch.setattr(crossover, "size_for", lambda dtype: 40)
    for dtype in (F32, F64):  # what the Python route keeps on its first decision
        assert _small_host._limits_for(dtype) == (40**3, 40)
    calls = []

    def make(name):
        def python_routine(*args, **kwargs):
            calls.append((args, kwargs))
            return PASSED

        return native.Route(python_routine, KINDS[name]), calls

    return make


def operands(rng, m, n, k, dtype, trans_a=0, trans_b=0, orders="CC"):
    a = rng.uniform(-1, 1, (k, m) if trans_a else (m, k))
    b = rng.uniform(-1, 1, (n, k) if trans_b else (k, n))
    return np.asarray(a, dtype, order=orders[0]), np.asarray(b, dtype, order=orders[1])


def assert_near_reference(result, alpha, a, b, trans_a, trans_b):
    """result against alpha op(a) op(b) in float64, within a tolerance that grows with k."""
    passed, error, tolerance = checks.check(
        result, alpha, a.T if trans_a else a, b.T if trans_b else b, 0.0, None, a.dtype
    )
    assert passed, f"scaled error {error:.3g} above {tolerance:.3g}"


@pytest.mark.parametrize("name,dtype", [("sgemm", F32), ("dgemm", F64), ("gemm", F32),
                                        ("gemm", F64)])  # fmt: skip
@pytest.mark.parametrize("trans_a,trans_b", list(itertools.product([0, 1, 2], repeat=2)))
@pytest.mark.parametrize("alpha", [1.0, -0.75, 3])
@pytest.mark.parametrize("m,n,k", [(5, 7, 9), (1, 1, 1), (9, 1, 8), (0, 4, 3)])
def test_gemm_served_as_the_python_route_would(route, rng, name, dtype, trans_a, trans_b, alpha,
                                               m, n, k):  # fmt: skip
    routine, calls = route(name)
    a, b = operands(rng, m, n, k, dtype, trans_a, trans_b)
    result = routine(alpha, a, b, trans_a=trans_a, trans_b=trans_b)
    assert calls == []
    python_route = _small_host.product(alpha, a, b, 0.0, trans_a, trans_b, dtype)
    assert result.dtype == dtype and result.shape == (m, n) and result.flags.f_contiguous
    np.testing.assert_array_equal(result, python_route)
    assert_near_reference(result, alpha, a, b, trans_a, trans_b)


@pytest.mark.parametrize("orders", ["CC", "CF", "FC", "FF"])
def test_strided_and_fortran_operands(route, rng, orders):
    routine, calls = route("sgemm")
    a, b = operands(rng, 6, 5, 8, F32, orders=orders)
    a_view, b_view = a[::2, 1:], b[:7, ::2]  # (3, 7) @ (7, 3), neither contiguous
    result = routine(2.0, a_view, b_view)
    assert calls == [] and result.flags.f_contiguous
    assert_near_reference(result, 2.0, a_view, b_view, 0, 0)


def test_every_spelling_of_a_plain_call(route, rng):
    routine, calls = route("sgemm")
    a, b = operands(rng, 3, 4, 5, F32)
    expected = _small_host.product(1.0, a, b, 0.0, 0, 0, F32)
    spellings = [
        ((1.0, a, b), {}),
        ((1, a, b, 0), {}),
        ((1.0, a, b, 0.0, None, 0, 0, 0), {}),
        ((), {"alpha": 1.0, "a": a, "b": b}),
        ((1.0,), {"b": b, "a": a, "beta": -0.0, "c": None, "stream": None}),
        ((1.0, a, b), {"overwrite_c": 1, "trans_a": 0}),
        ((1.0, a, b), {"trans_b": 0, str("".join(["tr", "ans_a"])): 0}),  # a name not interned
    ]
    for args, kwargs in spellings:
        np.testing.assert_array_equal(routine(*args, **kwargs), expected)
    assert calls == []


@pytest.mark.parametrize(
    "change",
    [
        {"alpha": 0.0},  # BLAS: a and b unread
        {"alpha": True},
        {"alpha": np.float32(1.0)},
        {"alpha": 2**2000},  # no double holds it
        {"alpha": 1j},
        {"beta": 0.5},
        {"beta": False},
        {"c": "c"},
        {"stream": 0},
        {"trans_a": True},
        {"trans_a": 3},
        {"trans_b": -1},
        {"trans_b": 2**70},
        {"trans_a": 1.0},
        {"a": "f64"},  # mixed dtypes: Python casts
        {"a": "list"},
        {"a": "3d"},
        {"a": "matrix"},  # a subclass: Python decides
        {"b": "misaligned"},
        {"a": "int"},
        {"a": "big", "b": "big"},  # above the crossover (50^3 > 40^3)
        {"unknown": 1},
    ],
)
def test_other_gemm_calls_go_to_python_untouched(route, rng, change):
    routine, calls = route("gemm")
    a, b = operands(rng, 3, 2, 4, F32)
    forms = {"f64": a.astype(F64), "list": a.tolist(), "3d": a[None], "matrix": np.asmatrix(a),
             "misaligned": b[:3], "int": (a * 9).astype(np.int32), "c": np.ones((3, 2), F32),
             "big": np.ones((50, 50), F32)}  # fmt: skip
    kwargs = {name: forms[value] if isinstance(value, str) else value
              for name, value in change.items()}  # fmt: skip
    args = (kwargs.pop("alpha", 1.0), kwargs.pop("a", a), kwargs.pop("b", b))
    assert routine(*args, **kwargs) is PASSED
    assert len(calls) == 1
    ((got_args, got_kwargs),) = calls
    assert len(got_args) == len(args) and all(map(operator.is_, got_args, args))
    assert got_kwargs.keys() == kwargs.keys()
    assert all(got_kwargs[name] is kwargs[name] for name in kwargs)


@pytest.mark.parametrize("args,kwargs", [
    ((1.0, "a", "b", 0.0, None, 0, 0, 0, None), {}),  # stream is keyword-only
    ((1.0, "a", "b"), {"a": "a"}),  # a twice
    ((1.0,), {"a": "a"}),  # b missing
    (("a", "b"), {}),  # alpha missing
])  # fmt: skip
def test_malformed_calls_go_to_python(route, rng, args, kwargs):
    routine, calls = route("sgemm")
    a, b = operands(rng, 3, 2, 4, F32)
    named = {"a": a, "b": b}
    args = tuple(named.get(x, x) if isinstance(x, str) else x for x in args)
    kwargs = {k: named[v] for k, v in kwargs.items()}
    assert routine(*args, **kwargs) is PASSED and len(calls) == 1


@pytest.mark.parametrize("dtype", [F32, F64])
def test_served_exactly_where_the_crossover_says_numpy(route, rng, dtype):
    """Below the crossover's work, and skinny products of little work for their data (the
    backend's own decision, under the pretend crossover size 40), at any a.size * b.size."""
    from tunedgemm import backend

    matmul, calls = route("matmul")
    gemm, _ = route("gemm")
    sizes = (1, 2, 39, 40, 41, 64, 1500)
    for m, n, k in itertools.product(sizes, repeat=3):
        a = np.ones((m, k), dtype)
        b_t = np.ones((n, k), dtype)
        owned = backend.quietly_numpy((m, n, k), dtype)
        assert (matmul(a, b_t.T) is not PASSED) == owned, (m, n, k)
        assert (gemm(1.0, a, b_t, trans_b=1) is not PASSED) == owned, (m, n, k)
    assert 0 < len(calls) < len(sizes) ** 3


def test_dtype_bound_routines_pass_the_other_dtype(route, rng):
    sgemm, _ = route("sgemm")
    dgemm, _ = route("dgemm")
    a, b = operands(rng, 3, 2, 4, F64)
    assert sgemm(1.0, a, b) is PASSED
    assert dgemm(1.0, a.astype(F32), b.astype(F32)) is PASSED
    assert dgemm(1.0, a, b) is not PASSED


def test_settings_and_forgotten_limits_send_calls_to_python(route, rng, monkeypatch):
    routine, calls = route("sgemm")
    a, b = operands(rng, 3, 2, 4, F32)
    assert routine(1.0, a, b) is not PASSED
    for name in ("TUNEDGEMM_BACKEND", "TUNEDGEMM_TABLE"):
        with monkeypatch.context() as patch:
            patch.setenv(name, "numpy")
            assert routine(1.0, a, b) is PASSED  # honoured at once, whatever was kept
    assert routine(1.0, a, b) is not PASSED
    _small_host.forget()
    assert routine(1.0, a, b) is PASSED  # the limit is Python's to look up again
    assert len(calls) == 3


@pytest.mark.parametrize("dtype", [F32, F64])
@pytest.mark.parametrize("orders", ["CC", "CF", "FC", "FF"])
@pytest.mark.parametrize("m,n,k", [(5, 7, 9), (1, 1, 1), (2, 9, 1)])
def test_matmul_served_as_numpy_would(route, rng, dtype, orders, m, n, k):
    routine, calls = route("matmul")
    a, b = operands(rng, m, n, k, dtype, orders=orders)
    result = routine(a, b)
    assert calls == [] and result.dtype == dtype and result.flags.c_contiguous
    np.testing.assert_array_equal(result, np.matmul(a, b))
    np.testing.assert_array_equal(routine(a=a, b=b, out=None, stream=None), result)


@pytest.mark.parametrize("a_form,b_form,kwargs", [
    ("1d", "2d", {}), ("2d", "1d", {}), ("3d", "2d", {}), ("f64", "2d", {}),
    ("int", "int", {}), ("2d", "misaligned", {}), ("list", "2d", {}), ("matrix", "2d", {}),
    ("big", "big", {}), ("2d", "2d", {"out": "out"}), ("2d", "2d", {"stream": 0}),
    ("2d", "2d", {"order": "C"}),
])  # fmt: skip
def test_other_matmuls_go_to_python(route, rng, a_form, b_form, kwargs):
    routine, calls = route("matmul")
    base = rng.uniform(-1, 1, (4, 4)).astype(F32)
    forms = {
        "2d": base,
        "1d": base[0],
        "3d": base[None],
        "f64": base.astype(F64),
        "int": (base * 10).astype(np.int32),
        "misaligned": base[:3],
        "list": base.tolist(),
        "matrix": np.asmatrix(base),
        "big": np.ones((50, 50), F32),
        "out": np.empty((4, 4)),
    }
    kwargs = {k: forms.get(v, v) if isinstance(v, str) else v for k, v in kwargs.items()}
    assert routine(forms[a_form], forms[b_form], **kwargs) is PASSED and len(calls) == 1


def test_operands_keep_their_references(route, rng):
    """Reference counts come out even (a leak or a double free shows here first)."""
    sgemm, calls = route("sgemm")
    matmul, _ = route("matmul")
    a, b = operands(rng, 4, 4, 4, F32)
    alpha, huge = 2.5, 2**2000
    name = "".join(["tr", "ans_a"])  # not interned
    before = [sys.getrefcount(x) for x in (a, b, alpha, huge, name)]
    for _ in range(1000):
        sgemm(alpha, a, b)
        sgemm(alpha, a, b, trans_a=1, trans_b=2)
        sgemm(alpha=alpha, a=a, b=b, **{name: 0})
        matmul(a, b)
        sgemm(huge, a, b)  # to Python (recorded, then dropped below)
        sgemm(alpha, a, b, c=a)
        matmul(a, b, out=None, order="C")
    calls.clear()
    assert [sys.getrefcount(x) for x in (a, b, alpha, huge, name)] == before


def test_public_routines_look_like_their_python_functions():
    class Holder:
        held = tg.sgemm

    assert Holder.held is tg.sgemm and Holder().held.__func__ is tg.sgemm  # binds, as functions
    for routine in (tg.sgemm, tg.dgemm, tg.gemm, tg.matmul):
        assert isinstance(routine, native.Route)
        assert inspect.isroutine(routine) and weakref.ref(routine)() is routine
        python_function = routine.__wrapped__
        assert inspect.signature(routine) == inspect.signature(python_function)
        assert routine.__doc__ == python_function.__doc__ and routine.__doc__
        assert routine.__name__ == python_function.__name__
        assert pickle.loads(pickle.dumps(routine)) is routine
        assert python_function.__name__ in repr(routine)


def test_public_errors_come_from_python(rng):
    a = rng.uniform(-1, 1, (3, 4)).astype(F32)
    with pytest.raises(TypeError, match="unexpected keyword argument 'alhpa'"):
        tg.sgemm(alhpa=1.0, a=a, b=a.T)
    with pytest.raises(TypeError, match="multiple values for argument 'a'"):
        tg.sgemm(1.0, a, a.T, a=a)
    with pytest.raises(ValueError, match="do not align"):
        tg.sgemm(1.0, a, a)


def behaviour(call, *args, **kwargs):
    """What a call did: ("result", array, dtype, F-ordered) or ("raised", type, message),
    with the warnings it gave."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = call(*args, **kwargs)
            done = ("result", result, result.dtype, result.flags.f_contiguous)
        except Exception as exc:
            done = ("raised", type(exc), str(exc))
    return done, [(w.category, str(w.message)) for w in caught]


def assert_same_behaviour(route_call, python_call, *args, **kwargs):
    (got, got_warnings), (expected, expected_warnings) = (
        behaviour(route_call, *args, **kwargs),
        behaviour(python_call, *args, **kwargs),
    )
    assert got_warnings == expected_warnings
    assert got[0] == expected[0], (got, expected)
    if got[0] == "raised":
        assert got[1:] == expected[1:]
    else:
        np.testing.assert_array_equal(got[1], expected[1])
        assert got[2:] == expected[2:]


def real_route(name):
    """A Route in front of the public routine's own Python function."""
    return native.Route(getattr(tg, name).__wrapped__, KINDS[name])


@pytest.mark.parametrize("errors", ["warn", "raise", "ignore"])
@pytest.mark.parametrize("case", ["overflow", "cast overflow", "inf times zero", "inf", "nan",
                                  "cast underflow", "underflow"])  # fmt: skip
def test_floating_point_exceptions_as_numpy_reports_them(route, rng, errors, case):
    """np.errstate and the warnings filters apply as in the Python route: where scaling
    raises a floating-point exception, the call is Python's to redo and report."""
    a, b = operands(rng, 3, 2, 4, F32)
    alpha = {"overflow": 10.0, "cast overflow": 1e300, "inf times zero": math.inf,
             "inf": math.inf, "nan": math.nan, "cast underflow": 1e-40,
             "underflow": 1e-30}[case]  # fmt: skip
    if case == "overflow":
        a = np.full((3, 4), 1e38, F32)
    if case == "inf times zero":
        a, b = np.ones((3, 0), F32), np.ones((0, 2), F32)
    if case == "underflow":
        a = np.full((3, 4), 1e-10, F32)
    for name in ("sgemm", "gemm"):
        with np.errstate(all=errors):
            assert_same_behaviour(real_route(name), getattr(tg, name).__wrapped__, alpha, a, b)


def test_equal_but_other_dtype_objects(route, rng):
    """An unpickled array's float32 equals np.dtype(np.float32) but is another object: the
    first decision on it must not fail, and must leave the C route serving plain float32."""
    from tunedgemm import cuda

    _small_host.forget()
    a, b = operands(rng, 3, 2, 4, F32)
    a2, b2 = pickle.loads(pickle.dumps((a, b)))
    if a2.dtype is F32:
        a2, b2 = a.astype(np.dtype("f4", metadata={"unit": "m"})), b.astype(np.dtype("f4"))
    assert cuda.status()[0]  # (the fixture's pretend GPU)
    np.testing.assert_array_equal(tg.matmul(a2, b2), a @ b)
    np.testing.assert_array_equal(
        tg.gemm(1.0, a2, b2), _small_host.product(1.0, a, b, 0, 0, 0, F32)
    )
    matmul, calls = route("matmul")
    assert matmul(a, b) is not PASSED and calls == []


@pytest.mark.parametrize("dtype", [F32, F64])
@pytest.mark.parametrize("trans_a,trans_b", [(0, 0), (1, 2)])
def test_matmul_branch_above_dot_limit(route, rng, dtype, trans_a, trans_b):
    """Skinny products NumPy owns by intensity, above DOT_LIMIT: np.matmul's branch."""
    routine, calls = route("gemm")
    matmul, _ = route("matmul")
    a, b = operands(rng, 1500, 1400, 2, dtype, trans_a, trans_b)
    assert a.size * b.size >= _small_host.DOT_LIMIT
    result = routine(-0.5, a, b, trans_a=trans_a, trans_b=trans_b)
    assert calls == [] and result.flags.f_contiguous
    np.testing.assert_array_equal(
        result, _small_host.product(-0.5, a, b, 0, trans_a, trans_b, None)
    )
    assert_near_reference(result, -0.5, a, b, trans_a, trans_b)
    a, b = operands(rng, 1500, 1400, 2, dtype)
    product = matmul(a, b)
    assert product.flags.c_contiguous
    np.testing.assert_array_equal(product, np.matmul(a, b))


def operand_forms(rng):
    """Operands of (3, 4) @ (4, 2) in layouts and dtypes a caller may hand over."""
    a, b = operands(rng, 3, 2, 4, F32)
    raw = np.zeros(a.size * 4 + 1, np.uint8)
    unaligned = raw[1:].view(F32).reshape(3, 4)
    unaligned[...] = a
    read_only = a.copy()
    read_only.flags.writeable = False
    return {
        "plain": (a, b),
        "fortran": (np.asfortranarray(a), np.asfortranarray(b)),
        "reversed": (a[::-1, ::-1].copy()[::-1, ::-1], b[::-1]),
        "unaligned": (unaligned, b),
        "read-only": (read_only, b),
        "byte-swapped": (a.astype(">f4"), b.astype(">f4")),
        "metadata": (a.astype(np.dtype("f4", metadata={"k": 1})), b),
        "float64": (a.astype(F64), b.astype(F64)),
        "mixed": (a, b.astype(F64)),
        "int": ((a * 9).astype(np.int64), (b * 9).astype(np.int64)),
        "0-d": (np.float32(2.0), b),
        "1-d": (a[0], b),
        "empty": (np.ones((3, 0), F32), np.ones((0, 2), F32)),
    }


def test_a_random_differential_of_calls(route, rng):
    """Random calls, each spelt positionally or by keyword: a Route in front of a public
    routine's Python function behaves as that function does (values, dtype, layout, errors,
    warnings)."""
    forms = operand_forms(rng)
    alphas = [1.0, -0.75, 3, 0.0, True, 2**70, math.nan, np.float32(2.0), 1j]
    betas = [0.0, 0, -0.0, 0.5, math.nan, 2**2000, None]
    flags = [0, 1, 2, True, 3, -1, 1.0]
    names = ["sgemm", "dgemm", "gemm"]
    for _ in range(400):
        name = names[rng.integers(len(names))]
        a, b = forms[list(forms)[rng.integers(len(forms))]]
        trans_a, trans_b = (flags[i] for i in rng.integers(len(flags), size=2))
        if trans_a in (1, 2) and not isinstance(trans_a, bool) and np.ndim(a) == 2:
            a = np.ascontiguousarray(a.T)
        if trans_b in (1, 2) and not isinstance(trans_b, bool) and np.ndim(b) == 2:
            b = np.ascontiguousarray(b.T)
        call = {"alpha": alphas[rng.integers(len(alphas))], "a": a, "b": b,
                "trans_a": trans_a, "trans_b": trans_b}  # fmt: skip
        beta = betas[rng.integers(len(betas))]
        if beta is not None:
            call["beta"] = beta
        python_function = getattr(tg, name).__wrapped__
        if rng.integers(2):
            assert_same_behaviour(real_route(name), python_function, **call)
        else:
            positional = [call.pop(key) for key in ("alpha", "a", "b")]
            assert_same_behaviour(real_route(name), python_function, *positional, **call)
    for a, b in forms.values():
        assert_same_behaviour(real_route("matmul"), tg.matmul.__wrapped__, a, b)
