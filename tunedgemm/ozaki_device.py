"""Ozaki scheme II on the GPU: conversion, one batched INT8 GEMM, reconstruction (issue 17).

One column-major call C = alpha op(A) op(B) + beta C (a BlasForm, float32 or float64) runs on
one stream as five launches, with the arithmetic of tunedgemm/ozaki.py:

1. ``line_exponents`` (kernels/ozaki.cu) for the rows of op(A) and the columns of op(B): the
   scaling exponents, and a flag set by any Inf or NaN;
2. ``residues`` for both: int8 residues of every modulus, k-contiguous, zero-padded to the
   int8 family's tile multiples (so the GEMM has no edge cases);
3. ``igemm``, all moduli in one launch: kernels/igemm_s8_wgmma.cu (wgmma) on sm_90,
   kernels/igemm_s8.cu (mma.sync) elsewhere, or as TUNEDGEMM_OZAKI_GEMM says (`gemm_family`).
   It computes the transposed product, op(B)^T-lines times op(A)-lines, so the residue
   products land in C's column-major order for step 4;
4. ``reconstruct``: CRT, scaling back, alpha and beta. With the flag set it writes nothing.

The flag comes back to the host after the call: `Outcome.fell_back()` waits for it, and
`gemm_or_ieee` then runs the IEEE GEMM the caller passes, on the same stream, so an emulated
result is never silently wrong (C is untouched until then). Workspace comes from the scratch
pool (tunedgemm/cuda.py) and goes back once the stream has passed the call.
"""

from __future__ import annotations

import ctypes
import functools
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import _driver, compiler, cuda, ozaki, settings
from ._layout import BlasForm
from .families import int8, int8_wgmma, ozaki_family_of
from .params import KernelConfig, KernelFamily

_REAL = {"float32": "f", "float64": "d"}
_DTYPE_CODE = {"float32": 0, "float64": 1}
BLOCK = (32, 8, 1)  # the conversion kernels' blocks
TILE = 32  # lines (and depths) per block of the conversion kernels
GRID_Y_MAX = 65535


def round_up(x: int, step: int) -> int:
    return -(-x // step) * step


@dataclass(frozen=True)
class Padded:
    """The padded extents the conversion writes and the GEMM reads: rows of op(A), columns of
    op(B) (multiples of int8.LINE_ALIGN) and k (a multiple of int8.K_ALIGN)."""

    m: int
    n: int
    k: int

    @classmethod
    def of(cls, m: int, n: int, k: int) -> Padded:
        return cls(round_up(m, int8.LINE_ALIGN), round_up(n, int8.LINE_ALIGN),
                   round_up(k, int8.K_ALIGN))  # fmt: skip


def workspace_bytes(m: int, n: int, k: int, count: int) -> int:
    """Device bytes one call needs: residues of both operands, the products mod p, exponents
    and the flag (each part 256-byte aligned)."""
    return sum(_workspace_parts(Padded.of(m, n, k), m, n, count).values()) + 256 * 6


def _workspace_parts(p: Padded, m: int, n: int, count: int) -> dict[str, int]:
    return {"res_a": count * p.m * p.k, "res_b": count * p.n * p.k, "products": count * p.n * p.m,
            "exps_a": 4 * m, "exps_b": 4 * n, "flag": 4}  # fmt: skip


def budgets(count: int) -> tuple[int, int]:
    """The bits of 2^ta ||row of A|| and 2^tb ||column of B|| (ozaki.scale's split of T)."""
    total = ozaki.moduli(count).product.bit_length() - 1 - 2
    return total - total // 2, total // 2


def crt_table(mods: ozaki.Moduli) -> np.ndarray:
    """The reconstruction's constants, as kernels/ozaki.cu reads them: the limbs of each CRT
    weight, the limbs of M, then 1 / float(M)."""
    mask = (1 << ozaki.LIMB_BITS) - 1

    def limbs(value: int) -> list[float]:
        return [float((value >> (ozaki.LIMB_BITS * s)) & mask) for s in range(mods.limbs)]

    values = [v for w in mods.weights for v in limbs(w)] + limbs(mods.product)
    return np.array([*values, 1.0 / float(mods.product)], np.float64)


def line_strides(form: BlasForm) -> tuple[tuple[int, int, bool], tuple[int, int, bool]]:
    """(s_line, s_k, k contiguous) of the rows of op(A) and of the columns of op(B)."""
    a = (form.lda, 1, True) if form.trans_a else (1, form.lda, False)
    b = (1, form.ldb, False) if form.trans_b else (form.ldb, 1, True)
    return a, b


def conversion_defines(dtype: str, count: int, kcontig: bool) -> dict[str, int]:
    return {"DTYPE": _DTYPE_CODE[dtype], "KCONTIG": int(kcontig), "COUNT": count,
            "LIMBS": ozaki.moduli(count).limbs}  # fmt: skip


def gemm_defines(config: KernelConfig, out_mod: bool = True) -> dict[str, int]:
    return {**ozaki_family_of(config).defines(config, "float64"), "OUT_MOD": int(out_mod)}


def gemm_family(arch: str, choice: str | None = None) -> KernelFamily:
    """The INT8 GEMM family for a GPU of this architecture (nvcc's "sm_90"): `choice`, by
    default the setting TUNEDGEMM_OZAKI_GEMM, is "wgmma" (sm_90 only: a ValueError naming
    the setting elsewhere), "mma" (mma.sync, every GPU) or "auto" (wgmma where it exists)."""
    choice = settings.get("TUNEDGEMM_OZAKI_GEMM") if choice is None else choice
    has_wgmma = arch in int8_wgmma.ARCHS
    if choice == "wgmma" and not has_wgmma:
        raise ValueError(f"TUNEDGEMM_OZAKI_GEMM=wgmma needs a GPU with wgmma "
                         f"({', '.join(int8_wgmma.ARCHS)}); this one is {arch}")  # fmt: skip
    if choice == "mma" or not has_wgmma:
        return int8.FAMILY
    return int8_wgmma.FAMILY


def default_gemm_config() -> KernelConfig:
    """The default config of the INT8 family `gemm_family` picks for the current GPU."""
    return gemm_family(cuda.arch()).default_config("float64", int8.PRECISION)


# ---- driver calls beyond tunedgemm/_driver.py's -------------------------------------------


@functools.lru_cache(maxsize=1)
def _calls() -> Any:
    lib = _driver.lib()
    ptr, uint, size, address = ctypes.c_void_p, ctypes.c_uint, ctypes.c_size_t, ctypes.c_uint64
    for name, args in (("cuMemsetD32Async", [address, uint, size, ptr]),
                       ("cuMemcpyDtoHAsync_v2", [ptr, address, size, ptr]),
                       ("cuEventSynchronize", [ptr])):  # fmt: skip
        function = getattr(lib, name)
        function.argtypes, function.restype = args, ctypes.c_int
    return lib


class _HostFlags:
    """Page-locked int32 flags for the asynchronous read-back, reused."""

    def __init__(self) -> None:
        self.free: list[np.ndarray] = []
        self.lock = threading.Lock()

    def take(self) -> np.ndarray:
        with self.lock:
            if self.free:
                return self.free.pop()
        import pycuda.driver as drv

        return drv.pagelocked_empty(1, np.int32)

    def give(self, flag: np.ndarray) -> None:
        with self.lock:
            self.free.append(flag)


_host_flags = _HostFlags()


# ---- kernels ------------------------------------------------------------------------------


GEMM_TYPES = "iiiPqPqPqiP"  # igemm.cuh's IGEMM_PARAMS


def gemm_launcher(config: KernelConfig, out_mod: bool = True) -> tuple[Any, tuple[int, int]]:
    """The launcher of an INT8 GEMM config (either family) in this context, and its block
    tile (rows, columns of the product per block: the grid is rows / tile, cols / tile, count)."""
    family = ozaki_family_of(config)
    params = config.as_dict()
    smem = family.smem_bytes(params, 1)
    function = compiler.raw_function(family.source, gemm_defines(config, out_mod), "igemm", smem)
    launcher = _driver.Launcher(function, GEMM_TYPES, (family.threads(params), 1, 1), smem)
    return launcher, family.block_tile(params)


def precompile_gemms(configs: list[KernelConfig], out_mod: bool = True, jobs: int = 16) -> None:
    """Compile INT8 GEMM configs with nvcc running in parallel (benchmarks, tests)."""
    compiler.precompile_raw([(ozaki_family_of(c).source, gemm_defines(c, out_mod))
                             for c in configs], jobs)  # fmt: skip


class Kernels:
    """The launchers of one (dtype, count, operand layouts, GEMM config) in this context."""

    def __init__(self, dtype: str, count: int, kcontig_a: bool, kcontig_b: bool,
                 config: KernelConfig) -> None:  # fmt: skip
        import pycuda.driver as drv

        launcher = _driver.Launcher
        real = _REAL[dtype]
        conv = {side: conversion_defines(dtype, count, kc)
                for side, kc in (("a", kcontig_a), ("b", kcontig_b))}  # fmt: skip
        def conversion(defines: dict[str, int], name: str, types: str) -> Any:
            return launcher(compiler.raw_function("ozaki.cu", defines, name), types, BLOCK, 0)

        self.exponents = {s: conversion(d, "line_exponents", "iiPqqiPP") for s, d in conv.items()}
        self.residues = {s: conversion(d, "residues", "iiPqqPPPii") for s, d in conv.items()}
        self.reconstruct = launcher(compiler.raw_function("ozaki.cu", conv["a"], "reconstruct"),
                                    f"iiPqiPPP{real}{real}PiP", BLOCK, 0)  # fmt: skip
        self.gemm, self.tile = gemm_launcher(config)
        mods = ozaki.moduli(count)
        # Constants of the count, on the device for the context's lifetime.
        self.moduli = drv.to_device(np.array(mods.values, np.int32))
        self.crt = drv.to_device(crt_table(mods))


@functools.lru_cache(maxsize=256)
def kernels(dtype: str, count: int, kcontig_a: bool, kcontig_b: bool, config: KernelConfig,
            ctx_id: int) -> Kernels:  # fmt: skip
    return Kernels(dtype, count, kcontig_a, kcontig_b, config)


# ---- one call -----------------------------------------------------------------------------


class Outcome:
    """A queued emulated call: whether it fell back is known once its flag is back."""

    def __init__(self, reason: str | None, event: int = 0, flag: np.ndarray | None = None) -> None:
        self.reason, self.event, self.flag = reason, event, flag

    def fell_back(self) -> bool:
        """True when the call was not emulated (C untouched): waits for the flag."""
        if self.flag is not None:
            _driver.check(_calls().cuEventSynchronize(self.event), "cuEventSynchronize")
            if int(self.flag[0]):
                self.reason = "Inf or NaN in A or B"
            _host_flags.give(self.flag)
            _driver.events.give(self.event)
            self.flag = None
        return self.reason is not None


Marks = Callable[[str], None]


def gemm(form: BlasForm, dtype: str, alpha: float, beta: float, stream: int,
         count: int | None = None, config: KernelConfig | None = None,
         marks: Marks | None = None) -> Outcome:  # fmt: skip
    """Queue C = alpha op(A) op(B) + beta C by Ozaki scheme II with `count` moduli (default
    ozaki.default_count) on the raw stream, with the INT8 GEMM config given or the default
    of `gemm_family`'s pick. Calls it cannot emulate (k = 0, or k beyond
    ozaki.INT32_SAFE_K) return a fallen-back Outcome at once. `marks(name)` is called after
    the conversion, the INT8 GEMM and the reconstruction are queued (the benchmark's events)."""
    m, n, k = form.m, form.n, form.k
    count = ozaki.default_count(np.dtype(dtype)) if count is None else count
    if m == 0 or n == 0:
        return Outcome(None)
    if k == 0 or k > ozaki.INT32_SAFE_K:
        return Outcome(f"k = {k} is outside 1..{ozaki.INT32_SAFE_K}")
    config = default_gemm_config() if config is None else config
    (sla, ska, kca), (slb, skb, kcb) = line_strides(form)
    kern = kernels(dtype, count, kca, kcb, config, id(cuda.context()))
    pad = Padded.of(m, n, k)
    parts = _workspace_parts(pad, m, n, count)
    workspace = cuda.allocate(sum(round_up(v, 256) for v in parts.values()))
    try:  # the workspace goes back once what was queued has run, whatever fails
        ptr, base = {}, int(workspace)
        for name, size in parts.items():
            ptr[name], base = base, base + round_up(size, 256)
        calls = _calls()
        _driver.check(calls.cuMemsetD32Async(ptr["flag"], 0, 1, stream), "cuMemsetD32Async")
        ta, tb = budgets(count)
        moduli, crt = int(kern.moduli), int(kern.crt)
        for side, lines, x, s_line, s_k, budget, lines_pad in (
            ("a", m, form.a, sla, ska, ta, pad.m),
            ("b", n, form.b, slb, skb, tb, pad.n),
        ):
            exps, flag_ptr = ptr["exps_" + side], ptr["flag"]
            kern.exponents[side].launch(
                (-(-lines // TILE), 1, 1), stream,
                (lines, k, x, s_line, s_k, budget, exps, flag_ptr))  # fmt: skip
            kern.residues[side].launch((pad.k // TILE, lines_pad // TILE, 1), stream,
                                       (lines, k, x, s_line, s_k, exps, moduli, ptr["res_" + side],
                                        lines_pad, pad.k))  # fmt: skip
        if marks:
            marks("converted")
        tile_rows, tile_cols = kern.tile
        kern.gemm.launch(
            (pad.n // tile_rows, pad.m // tile_cols, count), stream,
            (pad.n, pad.m, pad.k, ptr["res_b"], pad.n * pad.k, ptr["res_a"], pad.m * pad.k,
             ptr["products"], pad.n * pad.m, pad.m, moduli))  # fmt: skip
        if marks:
            marks("multiplied")
        kern.reconstruct.launch((-(-m // BLOCK[0]), min(-(-n // BLOCK[1]), GRID_Y_MAX), 1), stream,
                                (m, n, ptr["products"], pad.n * pad.m, pad.m, ptr["exps_a"],
                                 ptr["exps_b"], crt, alpha, beta, form.c, form.ldc,
                                 ptr["flag"]))  # fmt: skip
        if marks:
            marks("reconstructed")
        flag = _host_flags.take()
        _driver.check(calls.cuMemcpyDtoHAsync_v2(flag.ctypes.data, ptr["flag"], 4, stream),
                      "cuMemcpyDtoHAsync")  # fmt: skip
        event = _driver.events.take()
        _driver.check(_driver.lib().cuEventRecord(event, stream), "cuEventRecord")
    finally:
        cuda.release_after([workspace], stream)
    return Outcome(None, event, flag)


def gemm_or_ieee(form: BlasForm, dtype: str, alpha: float, beta: float, stream: int,
                 ieee: Callable[[], None], count: int | None = None,
                 config: KernelConfig | None = None) -> str | None:  # fmt: skip
    """`gemm`, then, where it fell back, `ieee()` (the caller's IEEE GEMM of the same call, on
    the same stream). Returns None when emulated, else why not. Waits for the flag (a host
    sync on the stream): the price of never returning a silently wrong product."""
    outcome = gemm(form, dtype, alpha, beta, stream, count, config)
    if outcome.fell_back():
        ieee()
        return outcome.reason
    return None
