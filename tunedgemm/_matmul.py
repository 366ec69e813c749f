"""np.matmul semantics (1-D promotion, broadcast batches) on top of the GEMM problem.

Host batches run one product at a time through the host pipeline. Device batches run as one
strided-batched launch: each operand's batch dimensions collapse to one stride (0 where it
is broadcast), and a batch of a whose rows follow on from each other against one 2-D b is a
single taller product, as PyTorch and CuPy fold it.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from . import backend, numpy_backend, plans
from ._args import GEMM_DTYPES, GemmProblem, dtype_of, is_device_array, normalise
from ._layout import DeviceMatrix, blas_form
from .device_arrays import kind_of
from .precision import resolve


def matmul(a: Any, b: Any, out: Any = None, stream: Any = None, precision: Any = None) -> Any:
    if is_device_array(a) or is_device_array(b) or is_device_array(out):
        return _device_matmul(a, b, out, stream, precision)
    if a is None or b is None:
        raise TypeError("matmul operands must be arrays, got None")
    if _subclass(a) or _subclass(b) or _subclass(out):
        # np.matrix, masked arrays, units...: their own __array_ufunc__ / __array_wrap__ decide
        # what np.matmul returns (np.matrix for np.matrix); NumPy computes them.
        return np.matmul(a, b, out=out)
    a = np.asarray(a)
    b = np.asarray(b)
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError("matmul: operands must have at least one dimension (scalars: use *)")
    dtype = np.result_type(a, b)
    if dtype not in GEMM_DTYPES:
        return np.matmul(a, b, out=out)  # ints, complex, float16...: NumPy's exact result
    mode = resolve(precision, dtype.name)
    m, k, n, batch, shape = _shapes(a.shape, b.shape)
    if out is not None:
        if not isinstance(out, np.ndarray):
            raise TypeError(f"out must be a NumPy array, got {type(out).__name__}")
        if out.shape != shape:
            raise ValueError(f"out has shape {out.shape}, expected {shape}")
        if not np.can_cast(dtype, out.dtype, casting="same_kind"):
            raise TypeError(f"out has dtype {out.dtype}; cannot cast the {dtype} result to it")
    # Each product of the batch is m x n x k: small ones are faster on NumPy (the crossover).
    if backend.for_call(False, (m, n, k), dtype) == "numpy":
        if out is None and a.ndim == 2 and b.ndim == 2:
            return numpy_backend.product(a, b)  # the short route's bits (see there)
        return np.matmul(a, b, out=out)

    from . import gpu_backend, pinned

    # In pinned memory where there is some to spare, so that each product comes straight down.
    result = pinned.result_array((*batch, m, n), dtype, "C")
    if result is None:
        result = np.empty((*batch, m, n), dtype=dtype)
    a2 = a[np.newaxis, :] if a.ndim == 1 else a
    b2 = b[:, np.newaxis] if b.ndim == 1 else b
    a_b = np.broadcast_to(a2, (*batch, m, k))
    b_b = np.broadcast_to(b2, (*batch, k, n))
    for index in itertools.product(*(range(d) for d in batch)):
        piece = result[index]
        problem = GemmProblem(1.0, a_b[index].astype(dtype, copy=False),
                              b_b[index].astype(dtype, copy=False), 0.0, piece, piece)  # fmt: skip
        gpu_backend.gemm_into(problem, precision=mode)
    result = result.reshape(shape)
    if out is None:
        return result[()] if shape == () else result  # vector . vector: a scalar, as np.matmul
    np.copyto(out, result, casting="same_kind")
    return out


def _subclass(x: Any) -> bool:
    return isinstance(x, np.ndarray) and type(x) is not np.ndarray


def _shapes(a_shape: tuple[int, ...], b_shape: tuple[int, ...]
            ) -> tuple[int, int, int, tuple[int, ...], tuple[int, ...]]:  # fmt: skip
    """(m, k, n, broadcast batch, result shape) of np.matmul on these shapes; ValueError
    naming the operands where they do not fit."""
    a2 = (1, *a_shape) if len(a_shape) == 1 else a_shape
    b2 = (*b_shape, 1) if len(b_shape) == 1 else b_shape
    m, k = a2[-2:]
    kb, n = b2[-2:]
    if k != kb:
        raise ValueError(
            f"matmul: a has core shape {tuple(a_shape[-2:])} and b {tuple(b_shape[-2:])}; "
            f"their inner dimensions ({k} and {kb}) differ"
        )
    try:
        batch = np.broadcast_shapes(tuple(a2[:-2]), tuple(b2[:-2]))
    except ValueError:
        raise ValueError(
            f"matmul: batch dimensions of a {tuple(a_shape)} and b {tuple(b_shape)} "
            "do not broadcast"
        ) from None
    shape = batch + ((m,) if len(a_shape) > 1 else ()) + ((n,) if len(b_shape) > 1 else ())
    return m, k, n, batch, shape


def _device_matmul(a: Any, b: Any, out: Any, stream: Any, precision: Any) -> Any:
    """Device operands: a 2-D product, or a batch as one strided-batched launch."""
    from .api import run

    for name, x in (("a", a), ("b", b)):
        if not is_device_array(x):
            raise TypeError(f"matmul: {name} is a host array and the other operand a device "
                            "array; move both to the device (or both to the host)")  # fmt: skip
    a_cai, b_cai = a.__cuda_array_interface__, b.__cuda_array_interface__
    sizes = (dtype_of(a_cai["typestr"]).itemsize, dtype_of(b_cai["typestr"]).itemsize)
    dtype = np.dtype(np.float64 if 8 in sizes else np.float32)
    mode = resolve(precision, dtype.name)
    if len(a_cai["shape"]) == 2 and len(b_cai["shape"]) == 2:
        problem = normalise(1.0, a, b, 0.0, out, 0, 0, 1, dtype, result_order="C")
        if out is not None and problem.result is not out:
            raise TypeError(f"out must be a writeable {dtype} device array of shape "
                            f"{problem.shape[:2]}")  # fmt: skip
        if out is None:
            call = plans.plan_call(problem, mode, a, b, None, order="C")
            if call is not None:
                signature = plans.matmul_signature(a, b, precision)
                if signature is not None:
                    plans.call_plans.put(signature, call)
                return call.run(1.0, a, b, None, 0.0, stream)
        return run(problem, stream, mode)
    if out is not None:
        raise NotImplementedError("matmul: `out` with batched device operands is not supported "
                                  "yet; use the returned array")  # fmt: skip
    call = _batched_plan(a, b, a_cai, b_cai, dtype, mode)
    signature = plans.matmul_signature(a, b, precision)
    if signature is not None:
        plans.call_plans.put(signature, call)
    return call.run(1.0, a, b, None, 0.0, stream)


def _core(cai: dict[str, Any], dtype: np.dtype) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(shape, element strides) of an interface, C-contiguous where it names no strides."""
    shape = tuple(int(d) for d in cai["shape"])
    strides = cai.get("strides")
    if not strides:
        steps, step = [], 1
        for d in reversed(shape):
            steps.append(step)
            step *= max(d, 1)
        return shape, tuple(reversed(steps))
    size = dtype_of(cai["typestr"]).itemsize
    return shape, tuple(int(s) // size for s in strides)


def _steps(batch: tuple[int, ...], shape: tuple[int, ...], strides: tuple[int, ...]
           ) -> list[int]:  # fmt: skip
    """An operand's element step along each broadcast batch dimension (0 where broadcast)."""
    own = len(shape) - 2
    own_steps = [s if d != 1 else 0 for d, s in zip(shape[:own], strides[:own], strict=True)]
    return [0] * (len(batch) - own) + own_steps


def _collapse(batch: tuple[int, ...], shape: tuple[int, ...], strides: tuple[int, ...]
              ) -> int | None:  # fmt: skip
    """The one element stride between consecutive products of an operand whose batch
    dimensions (its own, right-aligned against the broadcast batch) step evenly; 0 where it is
    broadcast; None where no single stride walks them."""
    return _single_stride(batch, _steps(batch, shape, strides))


def _single_stride(batch: tuple[int, ...], steps: list[int]) -> int | None:
    stride = None
    for extent, step in zip(reversed(batch), reversed(steps), strict=True):
        if extent == 1:
            continue
        if stride is None:
            stride, expected = step, step * extent
            continue
        if step != expected:
            return None
        expected = step * extent
    return stride or 0


def _batched_plan(a: Any, b: Any, a_cai: dict[str, Any], b_cai: dict[str, Any],
                  dtype: np.dtype, mode: str) -> plans.CallPlan:  # fmt: skip
    """The plan of an N-d device matmul: one (possibly folded) strided-batched product."""
    kind = kind_of(a)
    if kind is None or kind_of(b) is not kind:
        raise TypeError("matmul: batched device operands must both be CuPy, PyTorch or PyCUDA "
                        "arrays of one library")  # fmt: skip
    for name, cai in (("a", a_cai), ("b", b_cai)):
        if dtype_of(cai["typestr"]) != dtype:
            raise TypeError(f"matmul: batched device operands must share one dtype (float32 or "
                            f"float64); {name} has {dtype_of(cai['typestr'])}")  # fmt: skip
    a_shape, a_strides = _core(a_cai, dtype)
    b_shape, b_strides = _core(b_cai, dtype)
    if len(a_shape) == 1:
        a_shape, a_strides = (1, *a_shape), (0, *a_strides)
    if len(b_shape) == 1:
        b_shape, b_strides = (*b_shape, 1), (*b_strides, 0)
    m, k, n, batch, shape = _shapes(tuple(a_cai["shape"]), tuple(b_cai["shape"]))
    if 0 in (m, n, k, math.prod(batch)):
        raise NotImplementedError("matmul: empty batched device products are not supported "
                                  "yet")  # fmt: skip
    # The batch dimensions that one stride per operand walks are one launch; any outer ones
    # (an operand broadcast along one dimension but not another) are a loop of launches.
    steps_a, steps_b = _steps(batch, a_shape, a_strides), _steps(batch, b_shape, b_strides)
    steps_c = [math.prod(batch[i + 1:]) * m * n for i in range(len(batch))]
    split = next(i for i in range(len(batch) + 1)
                 if _single_stride(batch[i:], steps_a[i:]) is not None
                 and _single_stride(batch[i:], steps_b[i:]) is not None)  # fmt: skip
    sa = _single_stride(batch[split:], steps_a[split:]) or 0
    sb = _single_stride(batch[split:], steps_b[split:]) or 0
    count = math.prod(batch[split:])
    outer = [tuple(sum(i * s[d] for d, i in enumerate(index)) for s in (steps_a, steps_b, steps_c))
             for index in itertools.product(*(range(e) for e in batch[:split]))]  # fmt: skip
    a_core = DeviceMatrix(0, (m, k), (a_strides[-2], a_strides[-1]), dtype)
    b_core = DeviceMatrix(0, (k, n), (b_strides[-2], b_strides[-1]), dtype)
    c_core = DeviceMatrix(0, (m, n), (n, 1), dtype)
    if sb == 0 and count > 1 and sa == m * a_strides[-2] and a_strides[-1] == 1 and not split:
        # The batch of a is one taller matrix (rows follow on): one product of count*m rows.
        a_core = DeviceMatrix(0, (count * m, k), a_core.strides, dtype)
        c_core = DeviceMatrix(0, (count * m, n), (n, 1), dtype)
        count, sa = 1, 0
    try:
        form = blas_form(a_core, b_core, c_core)
    except ValueError:
        raise NotImplementedError("matmul: device operands with no unit stride are not "
                                  "supported in batches yet; make them contiguous first") from None
    swap = bool(c_core.layout()[0])  # type: ignore[index]
    strides = (sb, sa, m * n) if swap else (sa, sb, m * n)
    offsets = [(ob, oa, oc) if swap else (oa, ob, oc) for oa, ob, oc in outer]
    return plans.CallPlan(kind, form, swap, dtype, mode, (shape, "C"), count, strides,
                          None if split == 0 else tuple(offsets))  # fmt: skip
