"""Launch a compiled GEMM (and its split-K pre-pass) or a strided copy on the device."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import compiler, cuda
from ._args import dtype_name
from ._layout import BlasForm, DeviceMatrix
from .families import family_of
from .params import KernelConfig

_SCALAR_CODE = {"float32": "f", "float64": "d"}
_DTYPE_CODE = {"float32": 0, "float64": 1}


def gemm_defines(config: KernelConfig, dtype: np.dtype, form: BlasForm) -> dict[str, int]:
    """Every define of one compiled variant: the config's tunables plus call-time facts."""
    return _defines(config, dtype_name(dtype), form.trans_a, form.trans_b, form.aligned())


def _defines(
    config: KernelConfig, dtype: str, trans_a: bool, trans_b: bool, aligned: bool
) -> dict[str, int]:
    """gemm_defines from the call-time facts themselves."""
    return {
        **family_of(config).defines(config, dtype),
        "DTYPE": _DTYPE_CODE[dtype],
        "TRANS_A": int(trans_a),
        "TRANS_B": int(trans_b),
        "ALIGNED": int(aligned),
    }


@dataclass(frozen=True)
class Plan:
    """What launching one compiled variant needs, apart from m and n."""

    source: str
    defines: tuple[tuple[str, int], ...]  # sorted, as the compile memo keys them
    scalar: str  # PyCUDA's prepare code for alpha and beta
    block: tuple[int, int, int]
    tile: tuple[int, int]  # rows and columns of C per block
    split_k: int
    smem_bytes: int

    def grid(self, m: int, n: int) -> tuple[int, int, int]:
        """The grid of an m x n call, as KernelFamily.geometry computes it."""
        return (-(-m // self.tile[0]), -(-n // self.tile[1]), self.split_k)


@functools.lru_cache(maxsize=1024)
def plan(config: KernelConfig, dtype: str, trans_a: bool, trans_b: bool, aligned: bool) -> Plan:
    """The launch plan of one variant, built once: families compute their geometry and
    defines in Python, through dicts and dataclasses, which costs microseconds a call."""
    family = family_of(config)
    geometry = family.geometry(config, dtype, 1, 1)  # all but the grid is independent of m, n
    defines = _defines(config, dtype, trans_a, trans_b, aligned)
    return Plan(family.source, tuple(sorted(defines.items())), _SCALAR_CODE[dtype],
                geometry.block, family.block_tile(config.as_dict()), geometry.split_k,
                geometry.smem_bytes)  # fmt: skip


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


@functools.lru_cache(maxsize=1024)
def _variant(
    config: KernelConfig, dtype: np.dtype, trans_a: bool, trans_b: bool, aligned: bool,
    ctx_id: int,
) -> tuple[Plan, Any, Any]:  # fmt: skip
    """(plan, prepared gemm, prepared scale_c) of one variant in one context, so that a
    launch costs one cache lookup."""
    p = plan(config, dtype_name(dtype), trans_a, trans_b, aligned)
    gemm, scale = _prepared(p.source, p.defines, p.scalar, p.smem_bytes, ctx_id)
    return p, gemm, scale


def gemm(
    form: BlasForm,
    dtype: np.dtype,
    alpha: float,
    beta: float,
    config: KernelConfig,
    stream: Any = None,
) -> None:
    """C = alpha op(A) op(B) + beta C for one column-major call, with one kernel config."""
    if form.m == 0 or form.n == 0:
        return
    dtype = np.dtype(dtype)
    p, kernel, scale = _variant(
        config, dtype, form.trans_a, form.trans_b, form.aligned(), id(cuda.context())
    )
    real = dtype.type
    if p.split_k > 1:
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
        p.grid(form.m, form.n),
        p.block,
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
        shared_size=p.smem_bytes,
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
            "SRC_T": _C_TYPES[dtype_name(src.dtype)],
            "DST_T": _C_TYPES[dtype_name(dst.dtype)],
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
