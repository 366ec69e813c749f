"""Launch a compiled GEMM (and its split-K pre-pass) or a strided copy on the device."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from . import compiler
from ._layout import BlasForm, DeviceMatrix
from .families import family_of
from .params import KernelConfig

_SCALAR_CODE = {np.dtype(np.float32): "f", np.dtype(np.float64): "d"}
_DTYPE_CODE = {np.dtype(np.float32): 0, np.dtype(np.float64): 1}


def gemm_defines(config: KernelConfig, dtype: np.dtype, form: BlasForm) -> dict[str, int]:
    """Every define of one compiled variant: the config's tunables plus call-time facts."""
    family = family_of(config)
    return {
        **family.defines(config, np.dtype(dtype).name),
        "DTYPE": _DTYPE_CODE[np.dtype(dtype)],
        "TRANS_A": int(form.trans_a),
        "TRANS_B": int(form.trans_b),
        "ALIGNED": int(form.aligned()),
    }


@functools.cache
def _prepared(
    source: str, defines: tuple[tuple[str, int], ...], scalar: str, smem_bytes: int, ctx_id: int
) -> tuple[Any, Any]:
    from pycuda.driver import function_attribute

    mod = compiler.module(source, dict(defines))
    gemm = mod.get_function("gemm")
    if smem_bytes > 48 * 1024:
        gemm.set_attribute(function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, smem_bytes)
    gemm.prepare(f"iii{scalar}PiPi{scalar}Pi")
    scale = mod.get_function("scale_c")
    scale.prepare(f"ii{scalar}Pi")
    return gemm, scale


def gemm(
    form: BlasForm,
    dtype: np.dtype,
    alpha: float,
    beta: float,
    config: KernelConfig,
    stream: Any = None,
) -> None:
    """C = alpha op(A) op(B) + beta C for one column-major call, with one kernel config."""
    from . import cuda

    if form.m == 0 or form.n == 0:
        return
    dtype = np.dtype(dtype)
    family = family_of(config)
    geometry = family.geometry(config, dtype.name, form.m, form.n)
    defines = gemm_defines(config, dtype, form)
    kernel, scale = _prepared(
        family.source,
        tuple(sorted(defines.items())),
        _SCALAR_CODE[dtype],
        geometry.smem_bytes,
        id(cuda.context()),
    )
    real = dtype.type
    if geometry.split_k > 1:
        scale.prepared_async_call(
            ((form.m + 255) // 256, min(form.n, 65535), 1),
            (256, 1, 1),
            stream,
            form.m,
            form.n,
            real(beta),
            form.c,
            form.ldc,
        )
    kernel.prepared_async_call(
        geometry.grid,
        geometry.block,
        stream,
        form.m,
        form.n,
        form.k,
        real(alpha),
        form.a,
        form.lda,
        form.b,
        form.ldb,
        real(beta),
        form.c,
        form.ldc,
        shared_size=geometry.smem_bytes,
    )


_C_TYPES = {
    "float16": "__half",
    "float32": "float",
    "float64": "double",
    "bool": "bool",
    "int8": "signed char",
    "int16": "short",
    "int32": "int",
    "int64": "long long",
    "uint8": "unsigned char",
    "uint16": "unsigned short",
    "uint32": "unsigned int",
    "uint64": "unsigned long long",
}


def copy(src: DeviceMatrix, dst: DeviceMatrix, stream: Any = None) -> None:
    """dst = src (cast to dst's dtype), any strides on either side."""
    rows, cols = src.shape
    if rows == 0 or cols == 0:
        return
    try:
        defines = {
            "SRC_T": _C_TYPES[np.dtype(src.dtype).name],
            "DST_T": _C_TYPES[np.dtype(dst.dtype).name],
        }
    except KeyError as exc:
        raise TypeError(f"no device conversion from {src.dtype} to {dst.dtype}") from exc
    fn = compiler.function("copy2d.cu", defines, "copy2d")
    fn(
        np.int32(rows),
        np.int32(cols),
        np.uintp(src.ptr),
        np.int64(src.strides[0]),
        np.int64(src.strides[1]),
        np.uintp(dst.ptr),
        np.int64(dst.strides[0]),
        np.int64(dst.strides[1]),
        block=(32, 8, 1),
        grid=((rows + 31) // 32, min((cols + 7) // 8, 65535), 1),
        stream=stream,
    )
