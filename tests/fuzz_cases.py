"""Random calls of sgemm/dgemm/gemm/matmul and their judgement against SciPy and np.matmul.

One generator, two sources of choices: hypothesis (tests/unit/test_fuzz_semantics.py, which
shrinks a failure to a small case) and a seeded NumPy generator (benchmarks/fuzz.py, for
runs of 100,000 calls per routine). `draw_case` makes a call; `judge` runs it and returns
what is wrong with the result, or None."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
from scipy.linalg import blas as scipy_blas

ROUTINES = ("sgemm", "dgemm", "gemm", "matmul")
SIZES = (0, 1, 2, 3, 5, 8, 17, 33, 64)
DTYPES = ("float32", "float64", "int32", "int64", "float16", "bool", "complex64")
LAYOUTS = ("C", "F", "strided", "negative", "transposed", "overlapping", "both-strided")
FLAGS: tuple[Any, ...] = (0, 1, 2, True, False, np.int64(1), 1.0)
SCALARS = (0.0, 1.0, -1.0, 0.5, -2.5, 1e-50, 1e-320, 1e39, 1e308, np.inf, -np.inf, np.nan,
           np.float32(0.75), np.array(1.5), 3)  # fmt: skip
C_KINDS = ("none", "F", "C", "list", "readonly", "overlapping", "other-dtype", "strided",
           "alias-a", "alias-b")  # alias: c is the operand a (or b) itself, on a square call
OVERWRITE: tuple[Any, ...] = (0, 1, True, np.int8(1))


class Drawer(Protocol):
    def choice(self, options: Sequence[Any]) -> Any: ...
    def seed(self) -> int: ...


class NumpyDrawer:
    """Choices from a seeded NumPy generator (benchmarks/fuzz.py)."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng

    def choice(self, options: Sequence[Any]) -> Any:
        return options[int(self.rng.integers(len(options)))]

    def seed(self) -> int:
        return int(self.rng.integers(2**32))


@dataclass
class Case:
    routine: str
    args: dict[str, Any]
    description: dict[str, Any] = field(default_factory=dict)

    def repro(self) -> str:
        return f"{self.routine} {self.description}"


def _values(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.startswith("int"):
        return rng.integers(-3, 4, shape).astype(dtype)
    values = rng.uniform(-1, 1, shape)
    if dtype.startswith("complex"):
        values = values + 1j * rng.uniform(-1, 1, shape)
    return values.astype(dtype)


def _laid_out(rng: np.random.Generator, shape: tuple[int, int], dtype: str,
              layout: str) -> np.ndarray:  # fmt: skip
    """A (rows, cols) array of dtype in the layout named (values uniform, never all zero)."""
    rows, cols = shape
    if layout == "F":
        return np.asfortranarray(_values(rng, shape, dtype))
    if layout == "strided":
        return _values(rng, (rows, 2 * cols), dtype)[:, ::2]
    if layout == "negative":
        return _values(rng, (rows, cols), dtype)[::-1, ::-1]
    if layout == "transposed":
        return _values(rng, (cols, rows), dtype).T
    if layout == "overlapping":  # every row the same memory (read-only: as_strided's view)
        row = _values(rng, (cols,), dtype)
        return np.lib.stride_tricks.as_strided(row, shape, (0, row.strides[0]), writeable=False)
    if layout == "both-strided":
        return _values(rng, (2 * rows + 1, 3 * cols + 1), dtype)[1::2, ::-3][:, :cols]
    return _values(rng, shape, dtype)


def _c_operand(rng: np.random.Generator, shape: tuple[int, int], dtype: str, kind: str) -> Any:
    if kind == "none":
        return None
    if kind == "list":
        return _values(rng, shape, "float64").tolist()
    if kind == "other-dtype":
        return np.asfortranarray(_values(rng, shape, "float32" if dtype == "float64"
                                         else "float64"))  # fmt: skip
    if kind == "readonly":
        c = np.asfortranarray(_values(rng, shape, dtype))
        c.flags.writeable = False
        return c
    if kind == "overlapping":
        row = _values(rng, (shape[1],), dtype)
        return np.lib.stride_tricks.as_strided(row, shape, (0, row.strides[0]))
    return _laid_out(rng, shape, dtype, {"F": "F", "C": "C", "strided": "strided"}[kind])


def draw_case(draw: Drawer, routine: str | None = None) -> Case:
    routine = routine or draw.choice(ROUTINES)
    rng = np.random.default_rng(draw.seed())
    m, n, k = draw.choice(SIZES), draw.choice(SIZES), draw.choice(SIZES)
    dtype_a = draw.choice(DTYPES) if draw.choice((0, 1, 2, 3)) == 0 else draw.choice(DTYPES[:2])
    dtype_b = dtype_a if draw.choice((0, 1)) else draw.choice(DTYPES)
    layout_a, layout_b = draw.choice(LAYOUTS), draw.choice(LAYOUTS)
    if routine == "matmul":
        ndim_a, ndim_b = draw.choice((1, 2, 2, 3)), draw.choice((1, 2, 2, 3))
        a = _matmul_operand(rng, (m, k), ndim_a, dtype_a, layout_a)
        b = _matmul_operand(rng, (k, n), ndim_b, dtype_b, layout_b, right=True)
        desc = dict(m=m, n=n, k=k, a=(dtype_a, layout_a, a.shape), b=(dtype_b, layout_b, b.shape))
        return Case(routine, {"a": a, "b": b}, desc)
    c_kind = draw.choice(C_KINDS)
    if c_kind.startswith("alias"):
        n = k = m  # c can then be a or b itself
    trans_a, trans_b = draw.choice(FLAGS), draw.choice(FLAGS)
    shape_a = (k, m) if trans_a else (m, k)
    shape_b = (n, k) if trans_b else (k, n)
    a = _laid_out(rng, shape_a, dtype_a, layout_a)
    b = _laid_out(rng, shape_b, dtype_b, layout_b)
    dtype = routine_dtype(routine, a, b)
    aliases = {"alias-a": a, "alias-b": b}
    c = aliases[c_kind] if c_kind in aliases else _c_operand(rng, (m, n), dtype, c_kind)
    alpha, beta = draw.choice(SCALARS), draw.choice(SCALARS)
    overwrite = draw.choice(OVERWRITE)
    args = dict(alpha=alpha, a=a, b=b, beta=beta, c=c, trans_a=trans_a, trans_b=trans_b,
                overwrite_c=overwrite)  # fmt: skip
    desc = dict(m=m, n=n, k=k, a=(dtype_a, layout_a), b=(dtype_b, layout_b), c=c_kind,
                alpha=alpha, beta=beta, trans=(trans_a, trans_b),
                overwrite_c=overwrite)  # fmt: skip
    return Case(routine, args, desc)


def _matmul_operand(rng: np.random.Generator, core: tuple[int, int], ndim: int, dtype: str,
                    layout: str, right: bool = False) -> np.ndarray:  # fmt: skip
    """A matmul operand: a vector (along the inner dimension), a matrix or a batch of two."""
    if ndim == 1:
        return _laid_out(rng, (1, core[1 if not right else 0]), dtype, layout)[0]
    mat = _laid_out(rng, core, dtype, layout)
    return np.stack([mat, _laid_out(rng, core, dtype, layout)]) if ndim == 3 else mat


def routine_dtype(routine: str, a: np.ndarray, b: np.ndarray) -> str:
    if routine == "sgemm":
        return "float32"
    if routine == "dgemm":
        return "float64"
    wide = np.result_type(a.dtype, b.dtype, np.float32).itemsize > 4  # gemm's rule
    return "float64" if wide else "float32"


def _scipy_call(name: str, args: dict[str, Any]) -> Any:
    routine = scipy_blas.sgemm if name == "float32" else scipy_blas.dgemm
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return routine(**args)


def _real(x: Any) -> bool:
    return x is None or np.asarray(x).dtype.kind in "biuf"


def judge(case: Case, routines: dict[str, Callable[..., Any]]) -> str | None:
    """What is wrong with tunedgemm's answer to the case (None: nothing)."""
    if case.routine == "matmul":
        return _judge_matmul(case, routines["matmul"])
    args = case.args
    a, b, c = args["a"], args["b"], args["c"]
    before = [np.array(x, copy=True) if x is not None else None for x in (a, b, c)]
    dtype = routine_dtype(case.routine, a, b)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = routines[case.routine](**args)
        ours_error = None
    except (TypeError, ValueError) as exc:
        got, ours_error = None, exc
    except Exception as exc:
        return f"raised {type(exc).__name__}: {exc}"
    # SciPy gets a copy of c as it was (it may write into it); a list stays a list.
    scipy_c = c if c is None or isinstance(c, list) else np.array(before[2], order="F")
    scipy_args = {**args, "c": scipy_c}
    if case.description["c"].startswith("alias"):  # a and b as they were before our call
        scipy_args.update(a=before[0], b=before[1])
        case = Case(case.routine, {**args, "a": before[0], "b": before[1]}, case.description)
    try:
        want = _scipy_call(dtype, scipy_args)
        scipy_error = None
    except Exception as exc:
        want, scipy_error = None, exc
    # Documented differences (docs/semantics.md): complex operands are refused (SciPy drops
    # the imaginary part), as are fractional or string trans flags.
    expected_refusal = not (_real(a) and _real(b) and _real(c))
    expected_refusal |= any(not isinstance(f, bool | int | np.integer) and not (
        isinstance(f, float) and f.is_integer()) for f in (args["trans_a"], args["trans_b"]))
    if ours_error is not None:
        if scipy_error is None and not expected_refusal:
            return f"raised {type(ours_error).__name__} ({ours_error}); SciPy gave a result"
        return _untouched(a, b, c, before, "after an error")
    empty = 0 in (case.description["m"], case.description["n"], case.description["k"])
    if scipy_error is not None and not empty:  # SciPy's wrappers refuse some empty operands
        return f"gave a result; SciPy raised {type(scipy_error).__name__}: {scipy_error}"
    # (an operand that is c itself is judged as c below)
    untouched = _untouched(None if a is c else a, None if b is c else b, None, before, "")
    if untouched:
        return untouched
    holds = _can_hold(c, args["overwrite_c"], dtype)
    if holds and got is not c:
        return "c could hold the result but was not written in place"
    if not holds:
        if got is c:
            return "returned c, which cannot hold the result"
        if c is not None and _changed(c, before[2]):
            return "changed c without returning it"
    if not isinstance(got, np.ndarray) or got.dtype != np.dtype(dtype):
        return f"result {type(got).__name__} {getattr(got, 'dtype', '')}, expected {dtype}"
    # SciPy's wrappers give odd shapes for empty products (() for 0 x 0): the reference judges.
    return compare(np.asarray(got), None if empty else np.asarray(want), case, dtype, before[2])


def _can_hold(c: Any, overwrite: Any, dtype: str) -> bool:
    from tunedgemm._args import holds_distinct_elements

    return (bool(overwrite) and type(c) is np.ndarray and c.dtype == np.dtype(dtype)
            and c.flags.writeable
            and holds_distinct_elements(c.shape, c.strides, c.itemsize))  # fmt: skip


def _changed(x: Any, before: np.ndarray | None) -> bool:
    now = np.asarray(x)
    return before is not None and not np.array_equal(now, before, equal_nan=True)


def _untouched(a: Any, b: Any, c: Any, before: list[Any], when: str) -> str | None:
    for name, x, old in (("a", a, before[0]), ("b", b, before[1]), ("c", c, before[2])):
        if x is not None and _changed(x, old):
            return f"{name} was changed {when}".strip()
    return None


def compare(got: np.ndarray, want: np.ndarray | None, case: Case, dtype: str,
            c: np.ndarray | None) -> str | None:  # fmt: skip
    """Against SciPy: the same NaN and inf pattern; finite values within a K-scaled tolerance
    of a long-double reference (SciPy itself is only the pattern's oracle). want None: SciPy
    gave none (empty operands), the reference alone judges."""
    exact, scale = _reference(case, dtype, c)
    if want is None:
        want = exact.astype(dtype)
    if got.shape != want.shape:
        return f"shape {got.shape}, SciPy {want.shape}"
    eps = float(np.finfo(dtype).eps)
    k = case.description.get("k", 1)
    relative = 4 * (np.sqrt(max(k, 1)) + 3) * eps
    # With alpha inf (or rounding to it), an element whose product is zero up to rounding is
    # NaN, inf or -inf by the summation order's last bit: any of them is right there.
    decided = np.ones(got.shape, bool)
    alpha, beta = _scalars(case, dtype)
    if not np.isfinite(alpha):
        product, magnitude = _product(case, dtype)
        decided = np.abs(product) > relative * magnitude
    elif c is not None and beta != 0 and case.description.get("k", 1) != 0:
        # Where alpha op(a) op(b) can overflow the dtype and beta c is infinite, the element is
        # inf + -inf (NaN) or beta c's inf by whether alpha scales the sum or each product:
        # BLAS leaves that order open (ours scales the sum, the reference BLAS each product),
        # so NaN passes there for SciPy's inf; an inf must still match.
        _, magnitude = _product(case, dtype)
        with np.errstate(all="ignore"):
            overflows = abs(alpha) * magnitude > np.finfo(dtype).max
            infinite_c = np.isinf(beta * np.asarray(c).astype(dtype).astype(np.longdouble))
        got = np.where(overflows & infinite_c & np.isnan(got) & np.isinf(want), want, got)
    if not np.array_equal(np.isnan(got) & decided, np.isnan(want) & decided):
        return f"NaN pattern differs: ours {got.ravel()[:4]}, SciPy {want.ravel()[:4]}"
    both_inf = (np.isinf(got) | np.isinf(want)) & decided
    if not np.array_equal(got[both_inf], want[both_inf]):
        return f"inf differs: ours {got[both_inf][:4]}, SciPy {want[both_inf][:4]}"
    finite = np.isfinite(got) & np.isfinite(exact) & np.isfinite(scale)
    tolerance = relative * scale[finite] + float(np.finfo(dtype).tiny)
    # Results that overflowed in the dtype but not in the reference are judged by pattern.
    error = np.abs(got[finite].astype(np.longdouble) - exact[finite])
    if (error > tolerance).any():
        worst = float((error / np.maximum(tolerance, 1e-300)).max())
        return f"error {worst:.3g} x tolerance against the reference"
    return None


def _scalars(case: Case, dtype: str) -> tuple[float, float]:
    """alpha and beta as the routine rounds them."""
    from tunedgemm._args import as_scalar, in_precision

    to = np.dtype(dtype)
    return (in_precision(as_scalar(case.args["alpha"], "alpha"), to),
            in_precision(as_scalar(case.args["beta"], "beta"), to))  # fmt: skip


def _product(case: Case, dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """op(a) op(b) in long double, of the inputs as the routine casts them, and |op(a)||op(b)|."""
    args = case.args
    a = np.asarray(args["a"]).astype(dtype).astype(np.longdouble)
    b = np.asarray(args["b"]).astype(dtype).astype(np.longdouble)
    a, b = (a.T if args["trans_a"] else a), (b.T if args["trans_b"] else b)
    return a @ b, np.abs(a) @ np.abs(b)


def _reference(case: Case, dtype: str, c_before: np.ndarray | None
               ) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """alpha op(a) op(b) + beta c in long double, with the inputs and scalars as the routine
    rounds them (c as it was before the call), and the magnitude |alpha||a||b| + |beta||c|
    that errors scale with."""
    alpha, beta = _scalars(case, dtype)
    product, magnitude = _product(case, dtype)
    zeros = np.zeros(product.shape, np.longdouble)
    with np.errstate(all="ignore"):
        used = alpha != 0 and case.description["k"] != 0  # BLAS: alpha 0 or k 0 reads neither
        exact = alpha * product if used else zeros.copy()
        scale = abs(alpha) * magnitude if used else zeros.copy()
        if beta != 0:
            c = zeros if c_before is None else c_before.astype(dtype).astype(np.longdouble)
            exact, scale = exact + beta * c, scale + abs(beta) * np.abs(c)
    return exact, scale


def _judge_matmul(case: Case, matmul: Callable[..., Any]) -> str | None:
    a, b = case.args["a"], case.args["b"]
    before = [a.copy(), b.copy()]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = np.matmul(a, b)
    except Exception as exc:
        want, numpy_error = None, exc
    else:
        numpy_error = None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = matmul(a, b)
    except (TypeError, ValueError) as exc:
        if numpy_error is None:
            return f"raised {type(exc).__name__} ({exc}); np.matmul gave a result"
        return _untouched(a, b, None, [*before, None], "after an error")
    except Exception as exc:
        return f"raised {type(exc).__name__}: {exc}"
    if numpy_error is not None:
        return f"gave a result; np.matmul raised {type(numpy_error).__name__}"
    untouched = _untouched(a, b, None, [*before, None], "")
    if untouched:
        return untouched
    if type(got) is not type(want) or got.dtype != want.dtype or got.shape != want.shape:
        return f"result {type(got).__name__} {got.dtype} {got.shape}, np.matmul " \
               f"{type(want).__name__} {want.dtype} {want.shape}"  # fmt: skip
    if want.dtype.kind != "f" or want.dtype.itemsize < 4:
        if not np.array_equal(got, want, equal_nan=True):
            return "differs from np.matmul (exact dtype)"
        return None
    k = a.shape[-1]
    eps = float(np.finfo(want.dtype).eps)
    scale = np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64)
    tolerance = 4 * (np.sqrt(max(k, 1)) + 3) * eps * scale + float(np.finfo(want.dtype).tiny)
    if (np.abs(got.astype(np.float64) - want) > tolerance).any():
        return "differs from np.matmul beyond the tolerance"
    return None
