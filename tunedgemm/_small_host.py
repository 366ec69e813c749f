"""The short route of small host calls: NumPy's product, when the general path would end there.

A product below the CPU/GPU crossover takes NumPy a microsecond or two, so the general path's
argument handling would double its time. Calls on NumPy operands of the routine's dtype that
the backend choice sends to NumPy anyway are computed here (sgemm, dgemm and gemm with int
flags, with or without a c of that dtype, BLAS's rules for zero scalars; matmul with
vectors, broadcast batches or an `out`) with the BLAS call the NumPy backend makes; every
other call returns None and takes the general path, which also gives every error message.

Tiny products call BLAS through np.dot (see DOT_LIMIT), the settings are read straight from
the environment's dict, and the crossover size is kept per dtype. Still, the checks a Python
route needs cost 0.5-1 us, as much as a tiny product: where the C extension
tunedgemm._short_route is built, each public routine is a `Route` (see `routed`) that runs
this same decision and product in C, before any Python frame, and calls the Python routine
for everything else. This module's route stays the reference, and serves where the
extension is not built (and for the calls the C route passes on)."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any, TypeVar, cast

import numpy as np

from . import _host_blas, backend, crossover, cuda, settings
from ._args import GEMM_DTYPES, dtype_name
from .table import TABLE_ENV

_ndarray = np.ndarray
_dot, _matmul, _multiply, _add, _empty, _array, _copyto = (
    np.dot, np.matmul, np.multiply, np.add, np.empty, np.array, np.copyto
)
_broadcast_shapes, _prefer_numpy = np.broadcast_shapes, crossover.prefer_numpy
_blas_into = _host_blas.gemm_into
_F32, _F32_MAX = np.dtype(np.float32), float(np.finfo(np.float32).max)
# The largest magnitude that rounds to 0 in float32: half its smallest subnormal (a tie, which
# rounds to the even 0). sgemm tests alpha and beta for 0 after rounding (as BLAS sees them).
_F32_ROUNDS_TO_0 = 2.0**-150
# np.dot reaches BLAS with less dispatch than np.matmul (0.3-0.5 us less on tiny operands),
# but from about 128^3 it ran 1.2-1.3x slower than np.matmul on the H100 machine's 16 cores
# (bench_host, 2026-11-23): products whose a.size * b.size (n^4 for squares) is below this
# take np.dot, larger ones np.matmul.
DOT_LIMIT = 48**4
_SCALARS = (float, int)
_FLAGS = (int, bool)  # overwrite_c's types here
_found = settings.raw_keys(backend.BACKEND_ENV, TABLE_ENV)
# Where CPython's dict is missing, a key that is always there sends every call to the general
# decision, which reads os.environ.
_RAW, (_BACKEND_KEY, _TABLE_KEY) = _found if _found is not None else ({0: 0}, (0, 0))

_native: Any
try:
    from . import _short_route as _native
except ImportError:  # not built (setup.py says when): the Python routes serve
    _native = None
if _native is not None:
    if _found is None:
        _native = None  # it reads CPython's environment dict, which is missing
    else:
        _native.configure(_RAW, (_BACKEND_KEY, _TABLE_KEY), _matmul, float(DOT_LIMIT))
NATIVE = _native is not None

# (size**3, size, dtype name) for the crossover size per dtype under the default settings
# (neither variable above set): what crossover.prefer_numpy is given. Filled on first use.
_limits: dict[np.dtype, tuple[float, float, str]] = {}


def forget() -> None:
    """Drop the kept crossover sizes (tests that change the crossover or the GPU's state)."""
    _limits.clear()
    if _native is not None:
        _native.forget()


def _limits_for(dtype: np.dtype) -> tuple[float, float, str] | None:
    """The crossover's limits for dtype, or None where a call must take the general path to
    be decided (no GPU and the fallback's one warning not given yet)."""
    found = _limits.get(dtype)
    if found is None:  # (filled here only: the GEMM dtypes; any other is never NumPy's here)
        if cuda.status()[0]:
            size = crossover.size_for(dtype)
            found = (size**3, size, dtype_name(dtype))
        elif backend.has_warned():
            found = (math.inf, math.inf, dtype_name(dtype))  # no GPU: everything on NumPy
        else:
            return None
        _limits[dtype] = found
        _host_blas.routine()  # SciPy's BLAS handed to the C route before it serves a call
        if _native is not None:  # it knows the standard dtype objects only (an unpickled
            # array's float32 is equal to np.dtype(np.float32) but another object)
            _native.set_crossover(GEMM_DTYPES[GEMM_DTYPES.index(dtype)], found[1])
    return found


def _numpy_owns(m: int, n: int, k: int, dtype: np.dtype) -> bool:
    """Whether the backend choice sends the host product (m, n, k) of dtype to NumPy without
    a word: crossover.prefer_numpy under the default settings, the backend's own decision
    where a setting changes it."""
    if _BACKEND_KEY in _RAW or _TABLE_KEY in _RAW:
        return dtype in GEMM_DTYPES and backend.quietly_numpy((m, n, k), dtype)
    limits = _limits.get(dtype)
    if limits is None:
        if dtype not in GEMM_DTYPES:
            return False
        limits = _limits_for(dtype)
        if limits is None:
            return False
    work_limit, size, name = limits
    # prefer_numpy's first test, which decides most small calls, spared its call
    return m * n * k < work_limit or _prefer_numpy(name, m, n, k, size)


def _distinct_elements(c: np.ndarray) -> bool:
    """Whether no two elements of the 2-D array share memory: contiguous, or each axis's
    stride (by size) clears the span of those below it. A sufficient test (the C route's
    distinct_elements): an array it cannot vouch for takes the general path."""
    flags = c.flags
    if flags.c_contiguous or flags.f_contiguous:
        return True
    span = c.itemsize
    axes = zip(c.strides, c.shape, strict=True)
    for step, count in sorted((abs(stride), size) for stride, size in axes if size > 1):
        if step < span:
            return False
        span = step * count
    return True


def _usable(value: float, single: bool) -> bool:
    """Whether an alpha or beta that is read can be applied here: finite, held by a double,
    and within float32's range in sgemm (the cast warns beyond it); the general path takes
    the others."""
    try:
        return math.isfinite(value) and (not single or abs(value) <= _F32_MAX)
    except OverflowError:  # an int too large for a double
        return False


def product(alpha: Any, a: Any, b: Any, beta: Any, c: Any, trans_a: Any, trans_b: Any,
            overwrite_c: Any, dtype: np.dtype | None) -> np.ndarray | None:  # fmt: skip
    """alpha * op(a) @ op(b) + beta * c as BLAS defines it, or None for the general path.

    alpha == 0 or k == 0 reads neither a nor b, and beta == 0 does not read c, both tested in
    the routine's precision (sgemm(1e-50, ...) is 0 * op(a) @ op(b)). The result goes into
    c where it is overwritten (a writeable ndarray of the dtype whose elements do not
    overlap), else into a new Fortran-ordered array. Where SciPy is installed and BLAS takes
    the operands as they lie, one BLAS call computes it as SciPy does (tunedgemm._host_blas:
    no floating-point error is reported, as in SciPy); else NumPy, the result made in an
    array of its own first and copied into c last, so that an error (np.errstate's 'raise')
    leaves c as it was.
    dtype None (gemm) takes the inputs' dtype when they share a GEMM dtype."""
    if type(a) is not _ndarray or type(b) is not _ndarray or a.ndim != 2 or b.ndim != 2:
        return None
    dt = a.dtype
    if b.dtype is not dt or (dtype is not None and dt is not dtype):
        return None
    if type(alpha) not in _SCALARS or type(beta) not in _SCALARS:
        return None
    if type(trans_a) is not int or type(trans_b) is not int:
        return None
    if not (0 <= trans_a <= 2 and 0 <= trans_b <= 2):
        return None
    m, k = a.shape
    k_b, n = b.shape
    if trans_a:
        m, k = k, m
    if trans_b:
        k_b, n = n, k_b
    if k_b != k:
        return None  # the general path says why
    in_place = False
    if c is not None:
        if type(c) is not _ndarray or c.dtype is not dt or c.shape != (m, n):
            return None
        if not c.flags.aligned or type(overwrite_c) not in _FLAGS:
            return None
        if overwrite_c and c.flags.writeable:
            if not _distinct_elements(c):
                return None
            in_place = True
    elif beta != 0:
        return None  # the general path says c is needed
    if not _numpy_owns(m, n, k, dt):
        return None
    single = dt is _F32 or dt.itemsize == 4
    if beta != 0:
        if not _usable(beta, single):
            return None
        if single and abs(beta) <= _F32_ROUNDS_TO_0:
            beta = 0
    product_read = k > 0  # k == 0: alpha is not read either, whatever it is
    if product_read and alpha != 1:
        if not _usable(alpha, single):
            return None
        product_read = alpha != 0 and not (single and abs(alpha) <= _F32_ROUNDS_TO_0)
    if product_read and m and n:  # one BLAS call, as SciPy makes it, where SciPy is there
        if in_place:
            if _blas_into(alpha, a, b, beta, c, trans_a, trans_b):
                return c
        else:
            target = _empty((m, n), dt, order="F") if beta == 0 else _array(c, dt, order="F")
            if _blas_into(alpha, a, b, beta, target, trans_a, trans_b):
                return target
    # p = op(a) @ op(b) (C-ordered) for a C-ordered c written in place; else its transpose
    # op(b)^T op(a)^T, so that the result p.T is Fortran-ordered (BLAS writes straight into
    # sgemm's layout).
    direct = in_place and c.flags.c_contiguous and not c.flags.f_contiguous
    c_view = c if direct or c is None else c.T  # c as p is laid out (None: no c)
    if product_read:
        if direct:
            left, right = a.T if trans_a else a, b.T if trans_b else b
        else:
            left, right = b if trans_b else b.T, a if trans_a else a.T
        p = (_dot if a.size * b.size < DOT_LIMIT else _matmul)(left, right)
        if alpha != 1:
            _multiply(p, dt.type(alpha), out=p)
            if alpha < 0 and beta == 0:
                _add(p, 0.0, out=p)  # alpha * (+0) is -0; BLAS adds to a zeroed C: +0
        if beta != 0:
            _add(p, c_view if beta == 1 else _multiply(c_view, dt.type(beta)), out=p)
    else:
        p = _empty((m, n) if direct else (n, m), dt)
        if beta == 0:
            p[...] = 0
        else:
            _multiply(c_view, dt.type(beta), out=p)
    if in_place:
        _copyto(c_view, p)
        return c
    return p.T


def _numpy_matmul(a: np.ndarray, b: np.ndarray, out: Any) -> Any:
    """np.matmul(a, b, out=out) where the backend gives NumPy each 2-D product (vectors and
    broadcast batches as np.matmul has them; an `out` of the result's dtype and shape), or
    None for the general path."""
    dt = a.dtype
    a_ndim, b_ndim = a.ndim, b.ndim
    if b.dtype is not dt or a_ndim == 0 or b_ndim == 0:
        return None
    a_shape, b_shape = a.shape, b.shape
    batched = a_ndim > 2 or b_ndim > 2
    if a_ndim == 2 and b_ndim == 2:  # the common form, unpacked at least cost
        (m, k), (k_b, n) = a_shape, b_shape
    else:
        m, k = a_shape[-2:] if a_ndim > 1 else (1, a_shape[0])
        k_b, n = b_shape[-2:] if b_ndim > 1 else (b_shape[0], 1)
    if k_b != k:
        return None  # the general path says why
    if batched:
        try:
            batch = _broadcast_shapes(a_shape[:-2], b_shape[:-2])
        except ValueError:
            return None
    if not _numpy_owns(m, n, k, dt):
        return None
    if out is not None:
        shape = a_shape[-2:-1] + b_shape[-1:] if b_ndim > 1 else a_shape[-2:-1]
        if batched:
            shape = batch + shape
        if type(out) is not _ndarray or out.dtype is not dt or out.ndim == 0:
            return None
        if out.shape != shape or not out.flags.writeable:
            return None
    if not batched and a.size * b.size < DOT_LIMIT and (out is None or out.flags.carray):
        return _dot(a, b, out)
    return _matmul(a, b, out=out)


_Routine = TypeVar("_Routine", bound=Callable[..., Any])
_KINDS = ("sgemm", "dgemm", "gemm", "matmul")  # the extension's SGEMM, DGEMM, GEMM, MATMUL


def routed(routine: _Routine) -> _Routine:
    """The public routine with its short route in C in front (a Route, which presents the
    routine's name, docstring and signature, and pickles by name); the routine itself
    where the extension is not built."""
    if _native is None:
        return routine
    route = _native.Route(routine, _KINDS.index(routine.__name__))
    return cast(_Routine, functools.update_wrapper(route, routine))


def small_matmul(a: Any, b: Any, out: Any = None) -> np.ndarray | None:
    """np.matmul(a, b, out=out) for NumPy arrays the crossover gives NumPy (2-D, 1-D, batched),
    or None for the general path (which also gives every error message)."""
    if type(b) is not _ndarray:
        return None
    return _numpy_matmul(a, b, out)
