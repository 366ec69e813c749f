"""The short route of small host calls: NumPy's product, when the general path would end there.

A product below the CPU/GPU crossover takes NumPy a microsecond or two, so the general path's
argument handling would double its time. Plain calls (NumPy operands of the routine's dtype,
no c or out, beta 0, int flags) that the backend choice sends to NumPy anyway are computed
here with the BLAS call the NumPy backend makes; every other call returns None and takes the
general path, which also gives every error message.

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

from . import _env, backend, crossover, cuda
from ._args import GEMM_DTYPES
from .table import TABLE_ENV

_ndarray = np.ndarray
_dot, _matmul, _multiply = np.dot, np.matmul, np.multiply
# np.dot reaches BLAS with less dispatch than np.matmul (0.3-0.5 us less on tiny operands),
# but from about 128^3 it ran 1.2-1.3x slower than np.matmul on the H100 machine's 16 cores
# (bench_host, 2026-11-23): products whose a.size * b.size (n^4 for squares) is below this
# take np.dot, larger ones np.matmul.
DOT_LIMIT = 48**4
_SCALARS = (float, int)
_found = _env.raw_keys(backend.BACKEND_ENV, TABLE_ENV)
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

# (size**3, size) for the crossover size per dtype under the default settings (neither
# variable above set): crossover.prefer_numpy's test, kept. Filled on first use.
_limits: dict[np.dtype, tuple[float, float]] = {}


def forget() -> None:
    """Drop the kept crossover sizes (tests that change the crossover or the GPU's state)."""
    _limits.clear()
    if _native is not None:
        _native.forget()


def _limits_for(dtype: np.dtype) -> tuple[float, float] | None:
    """The crossover's limits for dtype, or None where a call must take the general path to
    be decided (no GPU and the fallback's one warning not given yet)."""
    found = _limits.get(dtype)
    if found is None:  # (filled here only: the GEMM dtypes; any other is never NumPy's here)
        if cuda.status()[0]:
            size = crossover.size_for(dtype)
            found = (size**3, size)
        elif backend.has_warned():
            found = (math.inf, math.inf)  # no GPU: everything runs on NumPy
        else:
            return None
        _limits[dtype] = found
        if _native is not None:  # it knows the standard dtype objects only (an unpickled
            # array's float32 is equal to np.dtype(np.float32) but another object)
            _native.set_crossover(GEMM_DTYPES[GEMM_DTYPES.index(dtype)], found[1])
    return found


def _numpy_owns(a: np.ndarray, b: np.ndarray, dtype: np.dtype) -> bool:
    """Whether the backend choice sends the 2-D product a @ b to NumPy without a word.

    First a cheaper screen: under the default settings, a.size * b.size (which is at least
    m*n*k) below the crossover's work limit means NumPy's, without unpacking shapes (nor
    checking them: NumPy's product says when they do not align)."""
    limits = _limits.get(dtype)
    if (limits is not None and _BACKEND_KEY not in _RAW and _TABLE_KEY not in _RAW
            and a.size * b.size < limits[0]):  # fmt: skip
        return True
    if dtype not in GEMM_DTYPES:
        return False
    (m, k), (k_b, n) = a.shape, b.shape
    if k_b != k:
        return False  # the general path says why
    if _BACKEND_KEY in _RAW or _TABLE_KEY in _RAW:
        return backend.quietly_numpy((m, n, k), dtype)
    limits = _limits_for(dtype)
    if limits is None:
        return False
    work = m * n * k
    return work < limits[0] or 3 * work < (m * k + k * n + m * n) * limits[1]


def product(alpha: Any, a: Any, b: Any, beta: Any, trans_a: Any, trans_b: Any,
            dtype: np.dtype | None) -> np.ndarray | None:  # fmt: skip
    """alpha * op(a) @ op(b) as a new Fortran-ordered array, or None for the general path.

    dtype None (gemm) takes the inputs' dtype when they share a GEMM dtype."""
    if type(a) is not _ndarray or type(b) is not _ndarray or a.ndim != 2 or b.ndim != 2:
        return None
    dt = a.dtype
    if b.dtype is not dt or (dtype is not None and dt is not dtype):
        return None
    if type(alpha) not in _SCALARS or type(beta) not in _SCALARS or beta != 0:
        return None
    # alpha == 0 must not read A and B (BLAS): the general path handles it.
    if alpha == 0 or type(trans_a) is not int or type(trans_b) is not int:
        return None
    if not (0 <= trans_a <= 2 and 0 <= trans_b <= 2):
        return None
    # op(b)^T op(a)^T, transposed back: BLAS writes straight into a Fortran-ordered result.
    a_t = a if trans_a else a.T
    b_t = b if trans_b else b.T
    if not _numpy_owns(b_t, a_t, dt):
        return None
    try:
        result = (_dot if a.size * b.size < DOT_LIMIT else _matmul)(b_t, a_t).T
    except ValueError:  # inner dimensions differ: the general path says so
        return None
    if alpha != 1:
        _multiply(result, dt.type(alpha), out=result)
    return result


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


@routed
def matmul(a: Any, b: Any, out: Any = None, *, stream: Any = None) -> Any:
    """Matrix product with np.matmul's semantics: a @ b, broadcast over leading batch dimensions.

    float32 and float64 products run on tunedgemm (on the GPU where one is usable and the
    product is large enough to gain from it, else on NumPy); other dtypes run on NumPy
    unchanged. `out` is as for np.matmul. Device arrays (PyCUDA, CuPy, PyTorch, any
    __cuda_array_interface__; 2-D so far) give a device result, queued on `stream` as for
    sgemm."""
    # tunedgemm.matmul's Python routine, defined beside its short route: where the C route is
    # built it sees only the calls that route passes on; the rest goes to api.general_matmul.
    if out is None and stream is None and type(a) is _ndarray and type(b) is _ndarray:
        dt = a.dtype
        if a.ndim == 2 and b.ndim == 2 and b.dtype is dt and _numpy_owns(a, b, dt):
            try:
                return (_dot if a.size * b.size < DOT_LIMIT else _matmul)(a, b)
            except ValueError:
                pass  # inner dimensions differ: the general path says so
    from .api import general_matmul

    return general_matmul(a, b, out, stream)
