"""The GPU backend: operands to the device in a BLAS layout, kernel choice, launch, result back."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import numpy as np

from . import _env, cuda, launch, reference, refine, selection, streams, table
from ._args import GemmProblem, Matrix, dtype_name
from ._layout import BlasForm, DeviceMatrix, blas_form
from .params import KernelConfig


def upload(arr: np.ndarray, keep: list[Any]) -> DeviceMatrix:
    """Copy a host matrix to the device as it lies in memory (C or F order), no transposes."""
    import pycuda.driver as drv

    if not (arr.flags.c_contiguous or arr.flags.f_contiguous):
        arr = np.asfortranarray(arr)
    buf = cuda.allocate(arr.nbytes)
    keep.append(buf)
    if arr.nbytes:
        drv.memcpy_htod(int(buf), arr.ravel(order="K"))
    strides = tuple(s // arr.itemsize for s in arr.strides)
    return DeviceMatrix(int(buf), arr.shape, strides, arr.dtype, buf)  # type: ignore[arg-type]


def scratch(shape: tuple[int, int], dtype: np.dtype, keep: list[Any]) -> DeviceMatrix:
    """A column-major device buffer that lives as long as `keep`."""
    buf = cuda.allocate(shape[0] * shape[1] * np.dtype(dtype).itemsize)
    keep.append(buf)
    return DeviceMatrix(int(buf), shape, (1, max(1, shape[0])), np.dtype(dtype), buf)


def on_device(mat: Matrix, dtype: np.dtype, keep: list[Any], stream: Any = None) -> DeviceMatrix:
    """The operand on the device, in dtype and with a unit-stride dimension."""
    if isinstance(mat, np.ndarray):
        return upload(mat.astype(dtype, copy=False), keep)
    if mat.dtype == dtype and mat.layout() is not None:
        return mat
    dense = scratch(mat.shape, dtype, keep)
    launch.copy(mat, dense, stream)
    return dense


# One launch on the caller's device memory: the layout, dtype and what ran (a config or cuBLAS).
Launch = tuple[BlasForm, np.dtype, "KernelConfig | str"]


def gemm_into(problem: GemmProblem, config: KernelConfig | None = None, stream: Any = None
              ) -> Launch | None:  # fmt: skip
    """Compute problem.out on the GPU. Host problems go through the pinned, overlapped
    pipeline and are complete on return; device problems are queued on `stream` (the
    caller's, bridged if foreign; default: the legacy default stream).

    Returns the launch when the call was exactly one launch on the caller's memory on the
    legacy default stream with nothing to wait for (a repeat of it may launch the same)."""
    cuda.context()
    m, n, k = problem.shape
    if m == 0 or n == 0:
        return None
    operands = (problem.a, problem.b, problem.out)
    if all(isinstance(x, np.ndarray) for x in operands) and problem.alpha != 0.0 and k > 0:
        from . import pipeline

        pipeline.gemm(problem, config)
        return None
    producers = _producer_streams(problem)
    if stream is None and not producers:
        # The legacy default stream, after nothing: no bridging to set up or hand back.
        return _gemm_on_device(problem, config, None)
    call = streams.for_call(stream)
    call.after(producers)
    try:
        _gemm_on_device(problem, config, call.pycuda)
    finally:
        call.finish()
    return None


def _producer_streams(problem: GemmProblem) -> set[int]:
    """The streams the device operands' producers named (none: all on the default stream)."""
    named = set()
    for x in (problem.a, problem.b, problem.out, problem.c_init):
        if isinstance(x, DeviceMatrix) and x.stream is not None:
            named.add(x.stream)
    return named


def _gemm_on_device(problem: GemmProblem, config: KernelConfig | None, stream: Any
                    ) -> Launch | None:  # fmt: skip
    """The direct path: operands to the device as they are, one launch, result back. Returns
    the launch when it was the only work, on the caller's memory."""
    dtype = problem.dtype
    keep: list[Any] = []
    a = on_device(problem.a, dtype, keep, stream)
    b = on_device(problem.b, dtype, keep, stream)
    host_out = problem.out if isinstance(problem.out, np.ndarray) else None
    if host_out is not None:
        # Uploaded only when its values are used; otherwise just a buffer of its layout.
        c = upload(host_out, keep) if problem.beta != 0.0 else _buffer_like(host_out, keep)
    else:
        assert isinstance(problem.out, DeviceMatrix)
        c = problem.out
        if problem.c_init is not None:
            launch.copy(problem.c_init, c, stream)
    target = c if c.layout() is not None else scratch(c.shape, dtype, keep)
    if target is not c and problem.beta != 0.0:
        launch.copy(c, target, stream)
    form = blas_form(a, b, target)
    ran = run(form, dtype, problem.alpha, problem.beta, config, stream)
    if not keep and host_out is None and problem.c_init is None:
        return form, dtype, ran
    if target is not c:
        launch.copy(target, c, stream)
    if host_out is not None:
        import pycuda.driver as drv

        staged = np.empty(c.shape, dtype, order="F" if c.strides[0] == 1 else "C")
        if stream is not None:
            stream.synchronize()
        drv.memcpy_dtoh(staged.ravel(order="K"), c.ptr)
        np.copyto(host_out, staged)
    elif keep:
        import pycuda.driver as drv

        # Scratch buffers go back to the pool on return: let the kernels finish first.
        if stream is None:
            drv.Context.synchronize()
        else:
            stream.synchronize()
    return None


def run(
    form: BlasForm,
    dtype: np.dtype,
    alpha: float,
    beta: float,
    config: KernelConfig | str | None = None,
    stream: Any = None,
) -> KernelConfig | str:
    """Run one column-major call with the given (or the chosen) config, or cuBLAS.

    Returns what ran: a KernelConfig, or table.CUBLAS."""
    if alpha == 0.0:
        # BLAS: with alpha == 0, A and B are not read (NaN there must not reach C).
        form = dataclasses.replace(form, k=0)
    dtype = np.dtype(dtype)
    if config is None:
        choice = selection.choose(dtype, form.m, form.n, form.k, form.trans_a, form.trans_b)
        config = choice.config
        if len(choice.candidates) > 1 and form.k > 0 and refine.enabled():
            config = refine.choose(form, dtype, choice.candidates, stream)
        _log_shape(form, dtype)
    if config == table.CUBLAS:
        ok, why = reference.status()
        if ok:
            reference.gemm(form, dtype, alpha, beta, stream)
            return config
        table.warn_once(f"the table chose cuBLAS, which is unavailable ({why}); own kernel used")
        config = selection.default_config(dtype_name(dtype))
    assert isinstance(config, KernelConfig)
    launch.gemm(form, dtype, alpha, beta, config, stream)
    return config


LOG_SHAPES_ENV = "TUNEDGEMM_LOG_SHAPES"  # append each call's shape to this file, for the tuner


def _log_shape(form: BlasForm, dtype: np.dtype) -> None:
    path = _env.get(LOG_SHAPES_ENV)
    if path:
        record = {"dtype": dtype_name(dtype), "m": form.m, "n": form.n, "k": form.k,
                  "trans_a": form.trans_a, "trans_b": form.trans_b}  # fmt: skip
        with open(path, "a") as f:
            f.write(json.dumps(record) + "\n")


def _buffer_like(arr: np.ndarray, keep: list[Any]) -> DeviceMatrix:
    buf = cuda.allocate(arr.nbytes)
    keep.append(buf)
    order_f = arr.flags.f_contiguous or not arr.flags.c_contiguous
    rows, cols = arr.shape
    strides = (1, max(1, rows)) if order_f else (max(1, cols), 1)
    return DeviceMatrix(int(buf), (rows, cols), strides, arr.dtype, buf)
