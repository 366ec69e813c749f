"""Normalise user arguments (NumPy arrays, device arrays, scalars, flags) into one GemmProblem."""

from __future__ import annotations

import decimal
import math
import numbers
import operator
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import DTypeLike

from ._layout import DeviceMatrix
from .streams import cai_stream

GEMM_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
# Kinds that cast to a float routine's dtype the way SciPy's BLAS wrappers cast them.
_CASTABLE_KINDS = "biuf"
# float32's largest finite value: sgemm's alpha and beta beyond it round to inf (as SciPy's).
_F32_MAX = float(np.finfo(np.float32).max)
# Device arrays repeat a few typestrs; np.dtype(typestr) is looked up once for each.
_TYPESTR_DTYPES: dict[str, np.dtype] = {}
# NumPy 2 computes dtype.name in Python (microseconds); the hot paths read it from here.
_DTYPE_NAMES: dict[Any, str] = {np.dtype(np.float32): "float32", np.dtype(np.float64): "float64"}

Matrix = np.ndarray | DeviceMatrix


@dataclass
class GemmProblem:
    """out = alpha * a @ b + beta * out, with a (m,k), b (k,n), out (m,n) of one dtype.

    `a` and `b` already hold op(A) and op(B) (transposes are views). `out` is what the
    backend writes: the caller's `c` when it is overwritten in place, else a new array.
    `c_init`, when set, holds values the backend copies into `out` first (a device `c`
    that is not overwritten; a host `c` is copied here already). `result` is what the
    API returns: `out` itself for host arrays, the device array object behind it else.
    """

    alpha: float
    a: Matrix
    b: Matrix
    beta: float
    out: Matrix
    result: Any
    c_init: DeviceMatrix | None = None
    # out is a new host array holding nothing yet: a backend may put another in its place
    # (the GPU path uses a pinned one it can write straight into).
    new_host_out: bool = False

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(self.out.dtype)

    @property
    def shape(self) -> tuple[int, int, int]:
        return self.a.shape[0], self.b.shape[1], self.a.shape[1]

    @property
    def on_device(self) -> bool:
        return isinstance(self.out, DeviceMatrix)


def is_device_array(obj: Any) -> bool:
    return hasattr(obj, "__cuda_array_interface__")


def as_scalar(value: Any, name: str) -> float:
    """A real scalar, as SciPy's wrappers take it: a Python or NumPy real number, a Decimal or
    Fraction, or a real array of one element (0-d or not). TypeError for anything else (complex
    included: SciPy would drop the imaginary part silently); ValueError past float's range."""
    if type(value) is float:  # the common case, checked cheaply
        return value
    if isinstance(value, np.ndarray):
        if value.size != 1:
            raise TypeError(f"{name} must be a real number, got an array of shape {value.shape}")
        value = value.item()
    elif isinstance(value, np.generic):
        value = value.item()
    if not isinstance(value, numbers.Real | decimal.Decimal):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    try:
        return float(value)
    except (OverflowError, ValueError) as exc:  # 10**400, Decimal("sNaN")
        shown = repr(value) if len(repr(value)) < 40 else f"{repr(value)[:36]}..."
        raise ValueError(f"{name} cannot be a float: {shown} ({exc})") from None


def in_precision(value: float, dtype: np.dtype) -> float:
    """value as the routine's dtype holds it: sgemm tests alpha and beta for zero after
    rounding them to float32, as BLAS sees them (1e-50 is 0 there; 1e39 is inf)."""
    if dtype.itemsize == 8:
        return value
    if abs(value) <= _F32_MAX or not math.isfinite(value):
        return float(np.float32(value))
    with np.errstate(over="ignore"):  # rounds to inf (or to the largest float32), silently
        return float(np.float32(value))


def as_trans(value: Any, name: str) -> bool:
    """A BLAS transpose flag: 0 (none), 1 (transpose) or 2 (conjugate transpose, for reals 1).

    As SciPy: an int, bool or NumPy integer, or a float of an integral value (1.0). Unlike
    SciPy, a fractional float (SciPy truncates 1.5 to 1), a string or None is refused."""
    if type(value) is int and 0 <= value <= 2:  # the common case, checked cheaply
        return value != 0
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, numbers.Integral) or (isinstance(value, float) and value.is_integer()):
        flag = int(value)
    else:
        raise TypeError(f"{name} must be 0, 1 or 2, got {value!r}")
    if flag not in (0, 1, 2):
        raise ValueError(f"{name} must be 0, 1 or 2, got {value!r}")
    return flag != 0


def as_flag(value: Any, name: str) -> bool:
    """overwrite_c as SciPy takes it: an int, bool or NumPy integer, true when nonzero.
    Anything else (the string "0", a float, None) is refused, as SciPy refuses it, rather
    than judged by Python's truthiness ("0" would be true)."""
    if type(value) is int or type(value) is bool:  # the common case, checked cheaply
        return bool(value)
    if isinstance(value, np.bool_):
        return bool(value)
    try:
        return operator.index(value) != 0
    except TypeError:
        raise TypeError(f"{name} must be an int or a bool, got {value!r}") from None


def check_castable(dtype: np.dtype, name: str) -> None:
    if dtype.kind not in _CASTABLE_KINDS:
        raise TypeError(f"{name} has dtype {dtype}, which cannot be cast to a real float type")


def dtype_of(typestr: str) -> np.dtype:
    """np.dtype(typestr), looked up once per typestr."""
    dtype = _TYPESTR_DTYPES.get(typestr)
    if dtype is None:
        dtype = _TYPESTR_DTYPES[typestr] = np.dtype(typestr)
    return dtype


def dtype_name(dtype: Any) -> str:
    """np.dtype(dtype).name, without computing it for the GEMM dtypes."""
    try:
        return _DTYPE_NAMES[dtype]
    except (KeyError, TypeError):  # another dtype, a type or a string (TypeError: unhashable)
        return np.dtype(dtype).name


def device_matrix(obj: Any, name: str, cai: dict[str, Any] | None = None) -> DeviceMatrix:
    """A DeviceMatrix view of an object exposing __cuda_array_interface__ (v2 or later).

    `cai` is the interface when the caller has read it already (CuPy builds a new dict on
    every read)."""
    if cai is None:
        cai = obj.__cuda_array_interface__
    shape = cai["shape"]
    dtype = dtype_of(cai["typestr"])
    check_castable(dtype, name)
    if len(shape) != 2:
        raise ValueError(f"{name} must be 2-D, got {len(shape)}-D")
    rows, cols = int(shape[0]), int(shape[1])
    itemsize = dtype.itemsize
    byte_strides = cai.get("strides")
    if not byte_strides:  # None: C-contiguous
        strides = (cols, 1)
    else:
        if byte_strides[0] % itemsize or byte_strides[1] % itemsize:
            raise ValueError(f"{name} has strides that are not a multiple of its item size")
        strides = (int(byte_strides[0]) // itemsize, int(byte_strides[1]) // itemsize)
    ptr, readonly = cai["data"]
    try:
        producer = cai_stream(cai)
    except ValueError as exc:
        raise ValueError(f"{name}: {exc}") from None
    return DeviceMatrix(int(ptr), (rows, cols), strides, dtype, obj, producer, bool(readonly))


def host_matrix(obj: Any, name: str, dtype: np.dtype | None) -> np.ndarray:
    """A 2-D NumPy array of obj, cast to dtype (no copy when it already has it)."""
    if obj is None:
        raise TypeError(f"{name} must be an array, got None")
    try:
        arr = np.asarray(obj)
    except Exception as exc:  # ragged lists and the like
        raise TypeError(f"{name} cannot be converted to an array: {exc}") from exc
    check_castable(arr.dtype, name)
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 2-D, got {arr.ndim}-D with shape {arr.shape}")
    return arr if dtype is None else arr.astype(dtype, copy=False)


def as_matrix(obj: Any, name: str) -> Matrix:
    """A 2-D operand in its own dtype: a DeviceMatrix for device arrays, else an ndarray."""
    if not isinstance(obj, np.ndarray):
        # Read once: the interface is a property that builds a new dict (CuPy, PyTorch).
        cai = getattr(obj, "__cuda_array_interface__", None)
        if cai is not None:
            return device_matrix(obj, name, cai)
    return host_matrix(obj, name, None)


def gemm_dtype(a: Matrix, b: Matrix) -> np.dtype:
    """float64 if either input is float64 (or an integer type), else float32, as np.matmul."""
    dtype = np.result_type(a.dtype, b.dtype, np.float32)
    return np.dtype(np.float64) if dtype.itemsize > 4 else np.dtype(np.float32)


def normalise(
    alpha: Any,
    a: Any,
    b: Any,
    beta: Any,
    c: Any,
    trans_a: Any,
    trans_b: Any,
    overwrite_c: Any,
    dtype: DTypeLike | None,
    result_order: Literal["C", "F"] = "F",
) -> GemmProblem:
    """Check and convert every argument; raises before anything of the caller's is touched.

    dtype None takes the dtype from the inputs (gemm); device inputs stay where they are
    (a cast to another dtype happens later, on the device). alpha and beta come out rounded
    to the dtype (in_precision), so the backends' zero tests see what BLAS would.

    `c` is written in place (and returned) only when overwrite_c is true and c can hold the
    result as it is: a NumPy array (or device array) of the routine's dtype and the result's
    shape, writeable, whose elements do not overlap one another (holds_distinct_elements).
    Otherwise the result is a new array, and c (a list, a tuple, a read-only or overlapping
    array, another dtype) is left as it was: SciPy does the same, save that SciPy also copies
    a C-ordered c, which tunedgemm writes in place. beta != 0 with c None takes c as zeros.
    """
    alpha_f = as_scalar(alpha, "alpha")
    beta_f = as_scalar(beta, "beta")
    ta = as_trans(trans_a, "trans_a")
    tb = as_trans(trans_b, "trans_b")
    overwrite = as_flag(overwrite_c, "overwrite_c")
    ma = as_matrix(a, "a")
    mb = as_matrix(b, "b")
    dtype = np.dtype(dtype) if dtype is not None else gemm_dtype(ma, mb)
    alpha_f, beta_f = in_precision(alpha_f, dtype), in_precision(beta_f, dtype)
    op_a = ma.T if ta else ma
    op_b = mb.T if tb else mb
    m, k = op_a.shape
    kb, n = op_b.shape
    if k != kb:
        raise ValueError(
            f"a and b do not align: op(a) is {m}x{k} and op(b) is {kb}x{n} "
            f"(trans_a={int(ta)}, trans_b={int(tb)})"
        )
    if isinstance(op_a, np.ndarray):
        op_a = op_a.astype(dtype, copy=False)
    if isinstance(op_b, np.ndarray):
        op_b = op_b.astype(dtype, copy=False)

    if c is None:
        like = next((x for x in (ma, mb) if isinstance(x, DeviceMatrix)), None)
        if beta_f != 0.0:
            return _zeros_for_c(alpha_f, op_a, op_b, beta_f, like, (m, n), dtype, result_order)
        out, result = _new_out(like, (m, n), dtype, result_order)
        return GemmProblem(alpha_f, op_a, op_b, beta_f, out, result, new_host_out=like is None)
    mc = as_matrix(c, "c")
    if mc.shape != (m, n):
        raise ValueError(f"c has shape {mc.shape}, expected {(m, n)} for op(a) @ op(b)")
    if overwrite and mc.dtype == dtype and _holds_result(mc, c):
        return GemmProblem(alpha_f, op_a, op_b, beta_f, mc, c)
    if isinstance(mc, DeviceMatrix):
        out, result = _new_out(mc, (m, n), dtype, result_order)
        c_init = mc if beta_f != 0.0 else None
        return GemmProblem(alpha_f, op_a, op_b, beta_f, out, result, c_init)
    if beta_f != 0.0:
        out = np.array(mc, dtype=dtype, order=result_order)
        return GemmProblem(alpha_f, op_a, op_b, beta_f, out, out)
    out = np.empty((m, n), dtype=dtype, order=result_order)
    return GemmProblem(alpha_f, op_a, op_b, beta_f, out, out, new_host_out=True)


def _zeros_for_c(alpha: float, a: Matrix, b: Matrix, beta: float, like: DeviceMatrix | None,
                 shape: tuple[int, int], dtype: np.dtype, order: Literal["C", "F"]
                 ) -> GemmProblem:  # fmt: skip
    """beta != 0 with no c: c is zeros, as SciPy takes it. On the host that is an array of
    zeros (beta inf or NaN then gives NaN, as in SciPy); on the device a finite beta adds
    nothing, and a non-finite one is refused rather than filled in."""
    if like is None:
        zeros = np.zeros(shape, dtype=dtype, order=order)
        return GemmProblem(alpha, a, b, beta, zeros, zeros)
    if not math.isfinite(beta):
        raise ValueError(f"beta is {beta} and c is None: give c (beta * 0 would be NaN)")
    out, result = _new_out(like, shape, dtype, order)
    return GemmProblem(alpha, a, b, 0.0, out, result)


def _holds_result(mat: Matrix, c: Any) -> bool:
    """Whether the result can be written into c itself: c is a NumPy array (mat its 2-D view,
    the same memory) or a device array, writeable, with no two elements overlapping."""
    if isinstance(mat, np.ndarray):
        if not isinstance(c, np.ndarray) or not mat.flags.writeable:
            return False  # a list or tuple was copied into mat: writing it would be lost
        if mat.flags.c_contiguous or mat.flags.f_contiguous:
            return True
        return holds_distinct_elements(mat.shape, mat.strides, mat.itemsize)
    itemsize = mat.dtype.itemsize
    byte_strides = (mat.strides[0] * itemsize, mat.strides[1] * itemsize)
    return not mat.readonly and holds_distinct_elements(mat.shape, byte_strides, itemsize)


def holds_distinct_elements(shape: tuple[int, ...], strides: tuple[int, ...],
                            itemsize: int) -> bool:  # fmt: skip
    """Whether no two elements of a 2-D layout (strides in bytes) share a byte: false for a
    zero stride (np.lib.stride_tricks.as_strided's broadcast views) or rows that interleave
    onto one another."""
    dims = sorted((abs(s), n) for s, n in zip(strides, shape, strict=True) if n > 1)
    if not dims or 0 in shape:  # at most one element, or none
        return True
    small, count = dims[0]
    if small < itemsize:
        return False
    if len(dims) == 1 or dims[1][0] >= small * (count - 1) + itemsize:
        return True
    # Rows that interleave without touching (strides (24, 16) for shape (2, 3) of float64):
    # rare enough to check element by element.
    offsets = np.add.outer(np.arange(count) * small, np.arange(dims[1][1]) * dims[1][0])
    return bool((np.diff(np.sort(offsets, axis=None)) >= itemsize).all())


def _new_out(
    like: DeviceMatrix | None, shape: tuple[int, int], dtype: np.dtype, order: Literal["C", "F"]
) -> tuple[Matrix, Any]:
    """A new output: on the host, or on the device as the same kind of array as `like`."""
    if like is None:
        out = np.empty(shape, dtype=dtype, order=order)
        return out, out
    from .device_arrays import empty_like_kind

    obj = empty_like_kind(like.owner, shape, dtype, order)
    return device_matrix(obj, "out"), obj
