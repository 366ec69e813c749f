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
from tunedgemm import _host_blas, _small_host, checks

F32, F64 = np.dtype(np.float32), np.dtype(np.float64)
pytestmark = pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")


native = pytest.importorskip("tunedgemm._short_route")
KINDS = {"sgemm": native.SGEMM, "dgemm": native.DGEMM, "gemm": native.GEMM,
         "matmul": native.MATMUL}  # fmt: skip
PASSED = object()  # what the stand-in Python routine returns
try:
    import scipy.linalg.blas as scipy_blas
except ImportError:
    scipy_blas = None


@pytest.fixture(autouse=True, params=["blas", "numpy"])
def host_blas(request):
    """Every test twice: with SciPy's BLAS (where installed) serving the gemm calls it can
    take as they lie, and as if SciPy were missing (NumPy serves every call, as before).
    The value: whether BLAS serves."""
    if request.param == "blas" and scipy_blas is None:
        pytest.skip("SciPy is not installed")
    _host_blas.use_scipy(request.param == "blas")
    yield _host_blas.routine() is not None
    _host_blas.use_scipy(True)


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
        assert _small_host._limits_for(dtype)[:2] == (40**3, 40)
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
    python_route = _small_host.product(alpha, a, b, 0.0, None, trans_a, trans_b, 0, dtype)
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
    expected = _small_host.product(1.0, a, b, 0.0, None, 0, 0, 0, F32)
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
        {"alpha": True},
        {"alpha": np.float32(1.0)},
        {"alpha": 2**2000},  # no double holds it
        {"alpha": 1j},
        {"beta": 0.5},  # with no c: Python says c is needed
        {"beta": False},
        {"stream": 0},
        {"alpha": math.inf},  # not finite with k > 0: Python applies it
        {"alpha": 1e300},  # beyond float32 (its cast warns)
        {"beta": math.nan, "c": "c"},
        {"beta": -1e300, "c": "c"},
        {"c": "c f64"},  # another dtype: Python casts
        {"c": "c list"},
        {"c": "c matrix"},
        {"c": "c wrong shape"},
        {"c": "c overlapping", "overwrite_c": 1},  # cannot hold the result
        {"c": "c unaligned"},
        {"c": "c", "overwrite_c": "1"},
        {"c": "c", "overwrite_c": 1.0},
        {"c": "c", "overwrite_c": np.int64(1)},
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
    c = rng.uniform(-1, 1, (3, 2)).astype(F32)
    raw = np.zeros(c.nbytes + 1, np.uint8)
    forms = {"f64": a.astype(F64), "list": a.tolist(), "3d": a[None], "matrix": np.asmatrix(a),
             "misaligned": b[:3], "int": (a * 9).astype(np.int32), "big": np.ones((50, 50), F32),
             "c": c, "c f64": c.astype(F64), "c list": c.tolist(), "c matrix": np.asmatrix(c),
             "c wrong shape": c.T.copy(), "c unaligned": raw[1:].view(F32).reshape(3, 2),
             "c overlapping": np.lib.stride_tricks.as_strided(c, (3, 2), (0, 4))}  # fmt: skip
    kwargs = {name: forms[value] if name in ("a", "b", "c") and isinstance(value, str) else value
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
    ("f64", "2d", {}), ("int", "int", {}), ("2d", "misaligned", {}), ("list", "2d", {}),
    ("matrix", "2d", {}), ("big", "big", {}), ("2d", "2d", {"stream": 0}),
    ("2d", "2d", {"order": "C"}), ("0d", "2d", {}), ("3d", "3d other batch", {}),
    ("1d", "big batch", {}), ("3d", "misaligned", {}), ("1d", "1d short", {}),
    ("2d", "2d", {"out": "out f64"}), ("2d", "2d", {"out": "out wrong shape"}),
    ("2d", "2d", {"out": "out read-only"}), ("2d", "2d", {"out": "out list"}),
    ("2d", "2d", {"out": "out matrix"}), ("1d", "1d", {"out": "out 0-d"}),
    ("3d", "2d", {"out": "out"}),  # (4, 4, 4) expected
])  # fmt: skip
def test_other_matmuls_go_to_python(route, rng, a_form, b_form, kwargs):
    routine, calls = route("matmul")
    base = rng.uniform(-1, 1, (4, 4)).astype(F32)
    read_only = np.empty((4, 4), F32)
    read_only.flags.writeable = False
    forms = {
        "2d": base,
        "1d": base[0],
        "1d short": base[0, :3],
        "0d": np.float32(2.0) * np.ones((), F32),
        "3d": np.stack([base, base]),
        "3d other batch": np.stack([base, base, base]),
        "big batch": np.ones((2, 50, 50), F32),
        "f64": base.astype(F64),
        "int": (base * 10).astype(np.int32),
        "misaligned": base[:3],
        "list": base.tolist(),
        "matrix": np.asmatrix(base),
        "big": np.ones((50, 50), F32),
        "out": np.empty((4, 4), F32),
        "out f64": np.empty((4, 4)),
        "out wrong shape": np.empty((4, 3), F32),
        "out read-only": read_only,
        "out list": np.empty((4, 4), F32).tolist(),
        "out matrix": np.asmatrix(np.empty((4, 4), F32)),
        "out 0-d": np.empty((), F32),
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
        tg.gemm(1.0, a2, b2), _small_host.product(1.0, a, b, 0, None, 0, 0, 0, F32)
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
        result, _small_host.product(-0.5, a, b, 0, None, trans_a, trans_b, 0, None)
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


def c_form(values, layout, dtype):
    """A fresh c holding values, in a layout a caller may hand over."""
    m, n = values.shape
    if layout in ("F", "C"):
        return np.array(values, dtype, order=layout)
    if layout == "read-only":
        c = np.array(values, dtype, order="F")
        c.flags.writeable = False
        return c
    big = np.zeros((2 * m + 1, 2 * n + 1), dtype)
    strided, reversed_ = big[1 : 2 * m : 2, 0 : 2 * n : 2], big[2 * m - 1 :: -2, ::-1][:, :n]
    c = strided if layout == "strided" else reversed_
    c[...] = values
    return c


def assert_gemm_near_reference(result, alpha, a, b, beta, c, trans_a, trans_b):
    passed, error, tolerance = checks.check(
        result, alpha, a.T if trans_a else a, b.T if trans_b else b, beta, c, a.dtype
    )
    assert passed, f"scaled error {error:.3g} above {tolerance:.3g}"


@pytest.mark.parametrize("name,dtype", [("sgemm", F32), ("dgemm", F64), ("gemm", F32)])
@pytest.mark.parametrize("layout", ["F", "C", "strided", "reversed", "read-only"])
def test_gemm_with_c_served_as_the_python_route_would(route, rng, name, dtype, layout):
    """In place (overwrite_c, a writeable c) or into a new Fortran-ordered array, c unread
    where beta is 0: bit-equal to the Python route, near the float64 reference."""
    routine, calls = route(name)
    for (m, n, k), (trans_a, trans_b), (alpha, beta), overwrite_c in itertools.product(
        [(5, 7, 9), (9, 1, 8), (1, 6, 3)], [(0, 0), (1, 2)],
        [(1.0, 1.0), (-0.75, 0.5), (3, 0), (1.0, 0.0), (0.5, -2)], [1, True, 0],
    ):  # fmt: skip
        a, b = operands(rng, m, n, k, dtype, trans_a, trans_b)
        values = rng.uniform(-1, 1, (m, n))
        c, c_twin = c_form(values, layout, dtype), c_form(values, layout, dtype)
        before = c.copy()
        call = (alpha, a, b, beta, c, trans_a, trans_b, overwrite_c)
        result = routine(*call)
        twin = _small_host.product(alpha, a, b, beta, c_twin, trans_a, trans_b, overwrite_c,
                                   None if name == "gemm" else dtype)  # fmt: skip
        assert calls == [], call
        in_place = bool(overwrite_c) and layout != "read-only"
        assert (result is c) == in_place and (twin is c_twin) == in_place
        if not in_place:
            np.testing.assert_array_equal(c, before)
            assert result.flags.f_contiguous and result.dtype == dtype
        np.testing.assert_array_equal(result, twin)
        assert_gemm_near_reference(result, alpha, a, b, beta, before, trans_a, trans_b)


@pytest.mark.parametrize("name,dtype", [("sgemm", F32), ("dgemm", F64)])
def test_blas_rules_at_the_edges_as_scipy(route, rng, name, dtype):
    """k == 0 and alpha == 0 read neither a nor b whatever alpha is, beta == 0 does not read
    c, and sgemm tests both after rounding to float32 (issue 14, items 2 and 3): SciPy's
    results, exactly (small integers: every product exact)."""
    scipy_blas = pytest.importorskip("scipy.linalg.blas")
    routine, calls = route(name)
    theirs = getattr(scipy_blas, name)
    a = rng.integers(-3, 4, (3, 4)).astype(dtype)
    b = rng.integers(-3, 4, (4, 5)).astype(dtype)
    c = rng.integers(-3, 4, (3, 5)).astype(dtype)
    inf_a, nan_c = np.full((3, 4), np.inf, dtype), np.full((3, 5), np.nan, dtype)
    empty_a, empty_b = np.ones((3, 0), dtype), np.ones((0, 5), dtype)
    cases = [
        (math.inf, empty_a, empty_b, 0.0, None),  # k == 0: alpha unread
        (math.nan, empty_a, empty_b, 2.0, c),
        (1e300, empty_a, empty_b, -0.5, c),  # (beyond float32)
        (0.0, inf_a, b, 0.0, None),  # alpha == 0: a unread
        (-0.0, inf_a, b, 3.0, c),
        (1e-50, inf_a, b, 0.0, None),  # 0 in float32; inf in float64, as SciPy
        (1e-50, inf_a, b, 1.0, c),
        (2.0, a, b, 0.0, nan_c),  # beta == 0: c unread
        (2.0, a, b, -0.0, nan_c),
        (1.0, a, b, 1e-320, nan_c),  # 0 in float32; float64 reads c, as SciPy
        (1e-46, inf_a, b, 1e-46, nan_c),  # both 0 in float32
        (2.0**-150, inf_a, b, 2.0**-150, nan_c),  # the largest that rounds to 0 in float32
        (float(np.nextafter(2.0**-150, 1)), a, b, 0.0, None),  # 2**-149 in float32: a is read
        (-1.5, a, b, 0.5, c),
    ]
    for alpha, a_case, b_case, beta, c_case in cases:
        for overwrite_c in (0, 1):
            ours_c = None if c_case is None else np.array(c_case, order="F")
            their_c = None if c_case is None else np.array(c_case, order="F")
            with np.errstate(all="ignore"):  # (inf * 0 in the product, as NumPy reports it)
                got = routine(alpha, a_case, b_case, beta, ours_c, overwrite_c=overwrite_c)
                expected = theirs(alpha, a_case, b_case, beta, their_c, overwrite_c=overwrite_c)
            case = (name, alpha, beta, c_case is not None, overwrite_c)
            assert calls == [], case
            np.testing.assert_array_equal(got, expected, err_msg=str(case))
            assert got.dtype == dtype and got.flags.f_contiguous
            if c_case is not None:
                np.testing.assert_array_equal(ours_c, their_c, err_msg=str(case))


@pytest.mark.parametrize("name,dtype", [("sgemm", F32), ("dgemm", F64)])
@pytest.mark.parametrize("case", ["overflow, beta 0", "overflow, beta 1", "inf - inf",
                                  "alpha overflows", "underflow"])  # fmt: skip
@pytest.mark.parametrize("errors", ["raise", "warn as error", "warn", "ignore"])
def test_an_error_leaves_c_as_it_was(route, rng, name, dtype, case, errors, host_blas):
    """Where a step of alpha op(a) op(b) + beta c raises a floating-point exception, NumPy
    reports it as np.errstate and the warnings filters say; an in-place call that raises
    leaves c as it was (issue 14 item 4), one that does not gives the Python route's c.
    With SciPy's BLAS, nothing is reported, as in SciPy, and c holds SciPy's result."""
    big = float(np.finfo(dtype).max)
    tiny = float(np.finfo(dtype).tiny)
    a, b = np.ones((3, 4), dtype), np.ones((4, 5), dtype)
    c = rng.uniform(1, 2, (3, 5)).astype(dtype)
    alpha, beta = 1.0, 1.0
    if case == "overflow, beta 0":  # issue 14's example
        alpha, a, beta, c = big / 2, 10 * a, 0.0, np.full((3, 5), np.nan, dtype)
    elif case == "overflow, beta 1":
        a, c = np.full((3, 4), big / 8, dtype), np.full((3, 5), big, dtype)
    elif case == "inf - inf":
        a, c = np.full((3, 4), np.inf, dtype), np.full((3, 5), -np.inf, dtype)
    elif case == "alpha overflows":
        alpha, a, beta = big / 2, np.full((3, 4), 4.0, dtype), 0.5
    else:  # subnormal and inexact
        alpha, beta = tiny / 3, tiny / 3
    results = []
    for call in (real_route(name), getattr(tg, name).__wrapped__):
        into = np.array(c, order="F")
        with np.errstate(all=errors.split()[0]), warnings.catch_warnings():
            warnings.simplefilter("error" if errors == "warn as error" else "ignore")
            try:
                got = call(alpha, a, b, beta, into, overwrite_c=1)
            except (FloatingPointError, RuntimeWarning) as exc:
                assert errors in ("raise", "warn as error") and not host_blas, exc
                np.testing.assert_array_equal(into, c)
                results.append(type(exc))
                continue
        assert errors in ("warn", "ignore") or host_blas, errors
        assert got is into
        results.append(got)
    if isinstance(results[0], np.ndarray):
        np.testing.assert_array_equal(results[0], results[1])
    else:
        assert results[0] is results[1]
    if host_blas:
        theirs = getattr(scipy_blas, name)(alpha, a, b, beta, np.array(c, order="F"))
        np.testing.assert_array_equal(results[0], theirs)


MATMUL_FORMS = {  # name: (a's shape, b's shape)
    "matrix @ vector": ((5, 4), (4,)),
    "vector @ matrix": ((5,), (5, 3)),
    "vector @ vector": ((6,), (6,)),
    "batch @ batch": ((3, 5, 4), (3, 4, 2)),
    "batch @ matrix": ((3, 5, 4), (4, 2)),
    "matrix @ batch": ((5, 4), (2, 4, 3)),
    "batches broadcast": ((2, 1, 5, 4), (3, 4, 2)),
    "batch @ vector": ((3, 5, 4), (4,)),
    "vector @ batch": ((4,), (3, 4, 2)),
    "matrix @ matrix": ((5, 4), (4, 3)),
    "empty batch": ((0, 5, 4), (4, 3)),
    "k = 0": ((5, 0), (0, 3)),
}


def assert_matmul_near_reference(result, a, b):
    """result against np.matmul in float64, within a tolerance that grows with k."""
    a64, b64 = a.astype(F64), b.astype(F64)
    exact, scale = np.matmul(a64, b64), np.matmul(np.abs(a64), np.abs(b64))
    error = checks.scaled_error(np.asarray(result), np.asarray(exact), np.asarray(scale))
    tolerance = checks.tolerance(a.shape[-1], a.dtype)
    assert error <= tolerance, f"scaled error {error:.3g} above {tolerance:.3g}"


@pytest.mark.parametrize("dtype", [F32, F64])
@pytest.mark.parametrize("form", list(MATMUL_FORMS))
@pytest.mark.parametrize("out_order", [None, "C", "F"])
def test_matmul_forms_served_as_the_python_route_would(route, rng, dtype, form, out_order):
    """Vectors, batches broadcast as np.matmul broadcasts them, and out= (written, and
    returned): bit-equal to the Python route, near the float64 reference."""
    routine, calls = route("matmul")
    a_shape, b_shape = MATMUL_FORMS[form]
    a = np.asarray(rng.uniform(-1, 1, a_shape), dtype)
    b = np.asarray(rng.uniform(-1, 1, b_shape), dtype)
    shape = np.matmul(a, b).shape
    if out_order is not None and shape == ():
        pytest.skip("a scalar result has no out here (Python's)")
    out = None if out_order is None else np.full(shape, np.nan, dtype, order=out_order)
    out_twin = None if out is None else out.copy(order="K")
    result = routine(a, b) if out is None else routine(a, b, out=out)
    twin = _small_host._numpy_matmul(a, b, out_twin)
    assert calls == []
    assert type(result) is type(twin) and np.shape(result) == shape
    assert np.asarray(result).dtype == dtype
    if out is not None:
        assert result is out and twin is out_twin
    np.testing.assert_array_equal(result, twin)
    assert_matmul_near_reference(result, a, b)


@pytest.mark.parametrize("dtype", [F32, F64])
def test_new_forms_served_exactly_where_the_crossover_says_numpy(route, dtype):
    """gemm with c, matmul with vectors, out= and batches: served where the backend gives
    NumPy each 2-D product (under the pretend crossover size 40), as _small_host decides."""
    from tunedgemm import backend

    matmul, calls = route("matmul")
    gemm, _ = route("gemm")
    sizes = (1, 39, 40, 41, 1500)
    served = 0
    for m, n, k in itertools.product(sizes, repeat=3):
        owned = backend.quietly_numpy((m, n, k), dtype)
        assert _small_host._numpy_owns(m, n, k, dtype) == owned, (m, n, k)
        a, b_t, c = np.ones((m, k), dtype), np.ones((n, k), dtype), np.ones((m, n), dtype)
        checks_made = [
            (gemm(1.0, a, b_t, 1.0, c, 0, 1, 1) is not PASSED) == owned,
            (gemm(1.0, a, b_t, 0.0, c, 0, 1, 0) is not PASSED) == owned,
            (matmul(a[None], b_t.T) is not PASSED) == owned,
            (matmul(a, b_t.T, out=c) is not PASSED) == owned,
        ]
        assert all(checks_made), (m, n, k, checks_made)
        if k in (1, 39):  # vectors: (m, 1, k), (1, n, k); always NumPy's by intensity
            assert backend.quietly_numpy((m, 1, k), dtype)
            assert matmul(a, b_t[0]) is not PASSED and matmul(b_t[0], a.T) is not PASSED
        served += owned
    assert 0 < served < len(sizes) ** 3 and calls


def test_new_forms_keep_their_references(route, rng, host_blas):
    """Reference counts come out even for the new forms, served in place or not."""
    sgemm, calls = route("sgemm")
    matmul, _ = route("matmul")
    a, b = operands(rng, 4, 4, 4, F32)
    c, c_read_only = np.ones((4, 4), F32, order="F"), np.ones((4, 4), F32)
    out = np.empty((4, 4), F32)
    c_read_only.flags.writeable = False
    v, batch = a[0].copy(), np.stack([a, b])
    beta, inf_a, minus_inf = 0.5, np.full((4, 4), np.inf, F32), np.full((4, 4), -np.inf, F32)
    held = (a, b, c, c_read_only, out, v, batch, beta, inf_a, minus_inf)
    before = [sys.getrefcount(x) for x in held]
    for _ in range(1000):
        # inf - inf (invalid): to Python (recorded, then dropped below), minus_inf unchanged;
        # by BLAS, NaN, as SciPy
        sgemm(1.0, inf_a, np.abs(b), 1.0, minus_inf, overwrite_c=1)
        sgemm(1.0, a, b, beta, c, overwrite_c=1)
        sgemm(1.0, a, b, beta, c_read_only, overwrite_c=1)
        sgemm(1.0, a, b, beta, c)
        sgemm(0.0, a, b, beta, c, overwrite_c=1)
        matmul(a, b, out=out)
        matmul(a, v)
        matmul(v, v)
        matmul(batch, a)
        matmul(batch, v, out=np.empty((2, 4), F32))
    assert len(calls) == (0 if host_blas else 1000)
    calls.clear()
    assert [sys.getrefcount(x) for x in held] == before


def test_a_random_differential_of_the_new_forms(route, rng):
    """Random calls of the new forms with random doubts in them: a Route in front of each
    public routine's Python function behaves as that function does (values, layout, what
    was written into c or out, errors, warnings)."""
    def fresh(value):
        return value.copy(order="K") if isinstance(value, np.ndarray) else value

    def run(call, args):
        args = [fresh(x) for x in args]
        done, caught = behaviour(call, *args)
        return done, caught, [x for x in args if isinstance(x, np.ndarray)]

    base = rng.uniform(-1, 1, (5, 5))
    c_values = [base[:3, :2], np.full((3, 2), np.nan), np.full((3, 2), 3e38)]
    for _ in range(300):
        dtype = (F32, F64)[rng.integers(2)]
        if rng.integers(2):
            name = ("sgemm", "dgemm", "gemm")[rng.integers(3)]
            trans_a, trans_b = (int(x) for x in rng.integers(3, size=2))
            a = np.asarray(base[:3, :4] if not trans_a else base[:4, :3], dtype)
            b = np.asarray(base[:4, :2] if not trans_b else base[:2, :4], dtype)
            c = np.array(c_values[rng.integers(3)], dtype, order="FC"[rng.integers(2)])
            if rng.integers(4) == 0:
                c = c.astype((F32, F64)[rng.integers(2)])  # perhaps another dtype
            alpha = [1.0, -0.5, 0.0, 1e-50, math.inf, 2, 1e300][rng.integers(7)]
            beta = [0.0, 1.0, 0.25, 1e-320, math.nan, -0.0][rng.integers(6)]
            overwrite_c = [0, 1, True, "1"][rng.integers(4)]
            args = [alpha, a, b, beta, c, trans_a, trans_b, overwrite_c]
        else:
            name = "matmul"
            a_shape, b_shape = list(MATMUL_FORMS.values())[rng.integers(len(MATMUL_FORMS))]
            a = np.asarray(rng.uniform(-1, 1, a_shape), dtype)
            b = np.asarray(rng.uniform(-1, 1, b_shape), (F32, F64)[rng.integers(2)])
            shape = np.matmul(a, b).shape
            out = [None, np.empty(shape, dtype), np.empty(shape, F64), np.empty((7,), dtype)]
            args = [a, b, out[rng.integers(4)]]
        with np.errstate(all=["warn", "raise", "ignore"][rng.integers(3)]):
            (got, got_warnings, got_written), (expected, expected_warnings, written) = (
                run(real_route(name), args), run(getattr(tg, name).__wrapped__, args))
        assert got_warnings == expected_warnings
        assert got[0] == expected[0], (name, args, got, expected)
        if got[0] == "raised":
            assert got[1:] == expected[1:]
        else:
            np.testing.assert_array_equal(got[1], expected[1])
            assert got[2:] == expected[2:]
        for ours, theirs in zip(got_written, written, strict=True):
            np.testing.assert_array_equal(ours, theirs)


def blas_equivalent(x, trans):
    """x and its trans flag as BLAS reads x without a copy (the route's own choice): SciPy
    given these makes the same BLAS call as the route."""
    if x.flags.f_contiguous:
        return x, int(bool(trans))
    return x.T, int(not trans)


@pytest.mark.parametrize("name,dtype", [("sgemm", F32), ("dgemm", F64), ("gemm", F64)])
@pytest.mark.parametrize("orders", ["FF", "FC", "CF", "CC"])
@pytest.mark.parametrize("c_form", ["F in place", "C in place", "new", "none"])
def test_blas_path_as_scipy(route, rng, name, dtype, orders, c_form, host_blas):
    """Operands BLAS reads as they lie (F- or C-ordered, each trans flag), beta 0 (NaN in c:
    unread; reference BLAS and OpenBLAS do not read C when beta == 0), 1 or other, alpha 0
    (Inf in a: unread), in place (c returned) or new: near the float64 reference, and with
    BLAS, bit for bit SciPy's call on the same memory (F-ordered operands: SciPy's own call)."""
    routine, calls = route(name)
    betas = [0.0, 1.0, -0.5] if c_form != "none" else [0.0]
    m, n, k = 5, 7, 9
    for (trans_a, trans_b), alpha, beta in itertools.product(
        itertools.product([0, 1, 2], repeat=2), [1.0, -0.75, 0.0], betas
    ):
        a, b = operands(rng, m, n, k, dtype, trans_a, trans_b, orders)
        if alpha == 0.0:
            a = np.full_like(a, np.inf)
        values = np.full((m, n), np.nan) if beta == 0 else rng.uniform(-1, 1, (m, n))
        c = np.array(values, dtype, order="C" if c_form[0] == "C" else "F")
        c = None if c_form == "none" else c  # ("new": an F-ordered c, not overwritten)
        overwrite_c = int(c_form.endswith("in place"))
        before = None if c is None else c.copy(order="K")
        call = (alpha, a, b, beta, c, trans_a, trans_b, overwrite_c)
        result = routine(*call)
        assert calls == [], call
        assert (result is c) == bool(overwrite_c) and result.dtype == dtype
        if not overwrite_c:
            assert result.flags.f_contiguous
            if c is not None:
                np.testing.assert_array_equal(c, before)
        read_a = np.zeros_like(a) if alpha == 0 else a  # (Inf unread: 0 * Inf not formed)
        assert_gemm_near_reference(result, alpha, read_a, b, beta,
                                   None if beta == 0 else before, trans_a, trans_b)  # fmt: skip
        if not host_blas or alpha == 0.0:
            continue
        theirs = getattr(scipy_blas, "sgemm" if dtype == F32 else "dgemm")
        (a_f, ta), (b_f, tb) = blas_equivalent(a, trans_a), blas_equivalent(b, trans_b)
        if c_form == "C in place":  # c^T = op(b)^T op(a)^T
            (a_f, ta), (b_f, tb) = (b_f, 1 - tb), (a_f, 1 - ta)
            expected = theirs(alpha, a_f, b_f, beta, np.asfortranarray(before.T), ta, tb).T
        else:
            c_f = None if before is None else np.asfortranarray(before)
            expected = theirs(alpha, a_f, b_f, beta, c_f, ta, tb)
            if orders == "FF":  # SciPy's own call
                own = theirs(alpha, a, b, beta, None if c_f is None else c_f.copy(order="F"),
                             trans_a, trans_b)  # fmt: skip
                np.testing.assert_array_equal(result, own)
        np.testing.assert_array_equal(result, expected, err_msg=str(call))


@pytest.mark.parametrize("dtype", [F32, F64])
def test_blas_and_numpy_paths_agree(route, rng, dtype, host_blas):
    """The same call with SciPy's BLAS and as if SciPy were missing: near each other, and
    served by the C route either way (nothing passed to Python)."""
    routine, calls = route("gemm")
    a, b = operands(rng, 6, 5, 11, dtype, 0, 1, "CF")
    c = rng.uniform(-1, 1, (6, 5)).astype(dtype)
    results = []
    for scipy_wanted in (True, False):
        _host_blas.use_scipy(scipy_wanted)
        results.append(routine(-0.5, a, b, 2.0, c, 0, 1, 0))
    assert calls == []
    tolerance = 32 * np.finfo(dtype).eps
    np.testing.assert_allclose(results[0], results[1], rtol=tolerance, atol=tolerance)


def test_blas_refuses_capsules_of_another_signature(host_blas):
    """A capsule whose signature is not cython_blas's LP64 sgemm/dgemm (an ILP64 build, say)
    is not called: BLAS stays off (gemm_into does nothing)."""
    if not host_blas:
        pytest.skip("needs SciPy")
    from scipy.linalg import cython_blas

    capsules = cython_blas.__pyx_capi__
    a, b = np.ones((3, 4), F32), np.ones((4, 5), F32)
    out = np.zeros((3, 5), F32, order="F")
    assert native.set_blas(capsules["sgemm"], capsules["dgemm"]) is True
    for wrong in ((capsules["dgemm"], capsules["sgemm"]), (capsules["sgemm"], None),
                  (None, None), (capsules["sgemv"], capsules["dgemv"])):  # fmt: skip
        assert native.set_blas(*wrong) is False
        assert native.gemm_into(1.0, a, b, 0.0, out, 0, 0) is False
        np.testing.assert_array_equal(out, 0)
