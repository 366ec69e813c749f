"""The short route of repeated device calls: the launch worked out last time for the same memory.

A call on device arrays spends most of its Python time working out what to launch: reading
each operand's __cuda_array_interface__, checking it, laying the call out as column-major
BLAS and choosing a kernel. Code that calls sgemm in a loop on the same buffers asks the
same question every time, so a call on the default stream whose operands' addresses, shapes,
strides and dtypes, flags, scalars and tunedgemm settings all match an earlier call reuses
that call's launch. Two kinds of call repeat: into `c` in place (overwrite_c), and into a new
result (no c), which gets a new array of the same kind, shape and order, its address put in
the recorded launch. The key holds addresses, not objects: it keeps nothing alive. Only
calls that ran as one launch on the caller's memory, with nothing to wait for, are recorded."""

from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import _env, cuda, gpu_backend, selection, table
from ._layout import BlasForm
from .backend import BACKEND_ENV
from .params import KernelConfig

MAX_PLANS = 512  # distinct calls remembered; all are forgotten when full (loops repeat few)
NEW_RESULT = ("new result",)  # stands for c in the key of a call that makes its result


@dataclass(frozen=True)
class _Plan:
    """A recorded launch; for a call into a new result, also how to make that result."""

    form: BlasForm
    dtype: np.dtype
    config: KernelConfig | str
    new_shape: tuple[int, int] | None = None  # of the result a call makes (None: in place)


_plans: dict[tuple[Any, ...], _Plan] = {}
_SETTINGS = (BACKEND_ENV, selection.FAMILY_ENV, selection.CUBLAS_ENV, table.TABLE_ENV)


def _operand(obj: Any) -> tuple[Any, ...] | None:
    """What fixes an operand's part in the launch: its memory, layout, dtype and producer."""
    if type(obj) is _cupy_ndarray:
        # CuPy builds its interface dict on every read; these attributes cost a tenth. Its
        # interface names the current stream as producer, which key() adds once per call.
        return (obj.data.ptr, obj.shape, obj.strides, obj.dtype.char)
    cai = getattr(obj, "__cuda_array_interface__", None)
    if cai is None:
        return None
    return (cai["data"], cai["shape"], cai.get("strides"), cai["typestr"], cai.get("stream"),
            type(obj))  # fmt: skip


def key(alpha: Any, a: Any, b: Any, beta: Any, c: Any, trans_a: Any, trans_b: Any,
        dtype: Any) -> tuple[Any, ...] | None:  # fmt: skip
    """The memo key of an in-place device call (c None: of a call into a new result), or None
    when the call cannot repeat a plan (host operands, or arguments whose checks the key
    would not repeat)."""
    if type(alpha) not in (float, int) or type(beta) not in (float, int):
        return None
    if type(trans_a) is not int or type(trans_b) is not int:
        return None
    if _env.get(gpu_backend.LOG_SHAPES_ENV):  # shapes are logged by the full path only
        return None
    global _cupy_ndarray
    if _cupy_ndarray is None:
        _cupy_ndarray = _load_cupy()
    operands = (_operand(a), _operand(b), NEW_RESULT if c is None else _operand(c))
    if None in operands:
        return None
    producer = _cupy_current_stream().ptr if _cupy_ndarray is not None else None
    settings = tuple(_env.get(name) for name in _SETTINGS)
    return (dtype, alpha, beta, trans_a, trans_b, operands, producer, settings)


def run(memo_key: tuple[Any, ...], a: Any = None) -> Any:
    """Launch the plan recorded under memo_key, if there is one: None if there is not, else
    the result (a new array when the plan makes one; else True)."""
    plan = _plans.get(memo_key)
    if plan is None:
        return None
    form, result = plan.form, True
    if plan.new_shape is not None:
        from .device_arrays import empty_like_kind

        # F-ordered, as every new result of sgemm, dgemm and gemm (and of the same kind as
        # `a`, as normalise makes it: both operands are device arrays, or there is no key).
        result = empty_like_kind(a, plan.new_shape, plan.dtype, "F")
        form = dataclasses.replace(form, c=_address(result))
    cuda.context()
    gpu_backend.run(form, plan.dtype, float(memo_key[1]), float(memo_key[2]), plan.config, None)
    return result


def record(memo_key: tuple[Any, ...], launch: gpu_backend.Launch | None,
           result: Any = None) -> None:  # fmt: skip
    """Remember the launch of a call that just ran, when it was one launch on the caller's
    memory with nothing to wait for (gpu_backend reports only those). `result`: the new
    result of a call that made one."""
    if launch is None:
        return
    form, dtype, config = launch
    if len(_plans) >= MAX_PLANS:
        _plans.clear()
    if result is None:
        _plans[memo_key] = _Plan(form, dtype, config)
        return
    if _address(result) != form.c:  # the launch did not write the result directly
        return
    shape = tuple(result.shape)
    assert len(shape) == 2
    _plans[memo_key] = _Plan(form, dtype, config, (int(shape[0]), int(shape[1])))


def _address(array: Any) -> int:
    if type(array) is _cupy_ndarray:
        return int(array.data.ptr)
    return int(array.__cuda_array_interface__["data"][0])


def clear() -> None:
    _plans.clear()


def _load_cupy() -> Any:
    """cupy.ndarray if CuPy is imported already (then arrays may be CuPy's), else None; with
    it, CuPy's current-stream function, looked up once."""
    global _cupy_current_stream
    module = sys.modules.get("cupy")
    ndarray = getattr(module, "ndarray", None)
    if ndarray is not None:
        _cupy_current_stream = module.cuda.get_current_stream  # type: ignore[union-attr]
    return ndarray


_cupy_ndarray: Any = None
_cupy_current_stream: Any = None
