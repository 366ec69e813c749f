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


class GemmLauncher:
    """One variant's kernel (and its split-K pre-pass) ready to launch on any raw stream, with
    its argument buffers built once (tunedgemm/_driver.py)."""

    __slots__ = ("gemm", "plan", "scale")

    def __init__(self, p: Plan) -> None:
        from . import _driver

        defines = dict(p.defines)
        real = p.scalar  # "f" or "d", as struct codes too
        self.plan = p
        self.gemm = _driver.Launcher(
            compiler.raw_function(p.source, defines, "gemm", p.smem_bytes),
            f"iii{real}PiPi{real}Pi", p.block, p.smem_bytes)  # fmt: skip
        self.scale = None
        if p.split_k > 1:
            self.scale = _driver.Launcher(compiler.raw_function(p.source, defines, "scale_c"),
                                          f"ii{real}Pi", (256, 1, 1), 0)  # fmt: skip

    def __call__(self, form: BlasForm, alpha: float, beta: float, stream: int) -> None:
        m, n = form.m, form.n
        if self.scale is not None:
            self.scale.launch(((m + 255) // 256, min(n, 65535), 1), stream,
                              (m, n, beta, form.c, form.ldc))  # fmt: skip
        self.gemm.launch(self.plan.grid(m, n), stream, (m, n, form.k, alpha, form.a, form.lda,
                         form.b, form.ldb, beta, form.c, form.ldc))  # fmt: skip


@functools.lru_cache(maxsize=1024)
def launcher(config: KernelConfig, dtype: np.dtype, trans_a: bool, trans_b: bool, aligned: bool,
             ctx_id: int) -> GemmLauncher:  # fmt: skip
    """The shared launcher of one variant in one context (a plan makes its own)."""
    return GemmLauncher(plan(config, dtype_name(dtype), trans_a, trans_b, aligned))


def gemm(
    form: BlasForm,
    dtype: np.dtype,
    alpha: float,
    beta: float,
    config: KernelConfig,
    stream: Any = None,
) -> None:
    """C = alpha op(A) op(B) + beta C for one column-major call, with one kernel config, on
    `stream` (None: the legacy default stream; a PyCUDA stream; or a raw handle)."""
    if form.m == 0 or form.n == 0:
        return
    from ._driver import stream_handle

    run = launcher(config, np.dtype(dtype), form.trans_a, form.trans_b, form.aligned(),
                   id(cuda.context()))  # fmt: skip
    run(form, alpha, beta, stream_handle(stream))


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
