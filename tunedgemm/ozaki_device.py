"""Ozaki scheme II on the GPU: conversion, one batched INT8 GEMM, reconstruction (issue 17).

One column-major call C = alpha op(A) op(B) + beta C (a BlasForm, float32 or float64) runs on
one stream as eight launches, with the arithmetic of tunedgemm/ozaki.py:

1. ``line_exponents`` (kernels/ozaki.cu) for the rows of op(A) and the columns of op(B): the
   scaling exponents, the accuracy guard's data (ozaki.gauges), and a flag bit set by any Inf
   or NaN (FLAG_NONFINITE);
2. ``residues`` for both: int8 residues of every modulus, then the magnitude plane (0..127),
   k-contiguous, zero-padded to the int8 family's tile multiples (so the GEMM has no edges);
3. ``igemm`` (OUT_MOD = 0) on the magnitude planes, then ``guard``: the reference's
   ozaki.unreliable per element; any failure sets FLAG_SPREAD. A launch of its own, not one
   more z-slice of step 4: the product of 0..127 planes reaches 127^2 k, which the uint8
   products mod p of step 4 cannot hold (int32 is exact up to INT32_SAFE_K). The test runs
   before step 5 because C must stay untouched for the fallback (beta != 0 reads it), so it
   cannot sit in the reconstruction, whose blocks write C as they go;
4. ``igemm`` (OUT_MOD = 1), all moduli in one launch: kernels/igemm_s8_wgmma.cu (wgmma) on
   sm_90, kernels/igemm_s8.cu (mma.sync) elsewhere, or as TUNEDGEMM_OZAKI_GEMM says
   (`gemm_family`; step 3 uses the same family). It computes the transposed product,
   op(B)^T-lines times op(A)-lines, so the residue products land in C's column-major order;
5. ``reconstruct``: CRT, scaling back, alpha and beta. With any flag bit set it writes nothing.

The flag comes back to the host after the call: `Outcome.fell_back()` waits for it, and
`gemm_or_ieee` then runs the IEEE GEMM the caller passes, on the same stream, so an emulated
result is never silently wrong (C is untouched until then). The guard's decision is the NumPy
reference's (tests/unit/test_ozaki_kernels.py emulates it); where the reference recomputes the
flagged elements, the GPU runs the whole call in IEEE arithmetic. Workspace comes from the scratch
pool (tunedgemm/cuda.py) and goes back once the stream has passed the call.
"""

from __future__ import annotations

import ctypes
import functools
import math
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
TILE = 32  # lines per block of residues
RES_DEPTH = 128  # depths per block of residues (16 per thread: one 16-byte store per plane)
REC_ROWS = 4  # rows of C per thread of reconstruct (one uchar4 load per modulus)
# Lines per block of line_exponents: k contiguous, a warp per line; else a lane per line.
EXP_LINES = {True: 8, False: 32}
GRID_Y_MAX = 65535
# Bits of the call's flag (kernels/ozaki.cu), each with the reason Outcome gives.
FLAG_NONFINITE = 1
FLAG_SPREAD = 2
GUARD_ROWS = 256  # columns of C per block of the guard (32 per thread, 8 threads along j)


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
    """Device bytes one call needs: residues and magnitudes of both operands, the products
    mod p, the magnitude product, exponents, gauges and the flag (each part 256-byte aligned)."""
    parts = _workspace_parts(Padded.of(m, n, k), m, n, count)
    return sum(parts.values()) + 256 * len(parts)


def _workspace_parts(p: Padded, m: int, n: int, count: int) -> dict[str, int]:
    # exps: e then q per line (int32); gauge: inv, 2^e max|x|, 2^e ||x|| per line (float64)
    return {"res_a": (count + 1) * p.m * p.k, "res_b": (count + 1) * p.n * p.k,
            "products": count * p.n * p.m, "magnitude": 4 * p.n * p.m,
            "exps_a": 8 * m, "exps_b": 8 * n, "gauge_a": 24 * m, "gauge_b": 24 * n,
            "flag": 4}  # fmt: skip


def pass_bytes(m: int, n: int, k: int, count: int, itemsize: int,
               beta: bool = False) -> dict[str, int]:  # fmt: skip
    """The bytes the memory-bound passes must move at least (the benchmark's GB/s): the
    conversion reads each operand once and writes its count + 1 int8 planes (padded); the
    reconstruction reads the count uint8 products of each element of C and writes C (reads
    it too where beta != 0)."""
    p = Padded.of(m, n, k)
    return {"conversion": itemsize * (m + n) * k + (count + 1) * (p.m + p.n) * p.k,
            "reconstruction": count * m * n + itemsize * m * n * (2 if beta else 1)}  # fmt: skip


def budgets(count: int) -> tuple[int, int]:
    """The bits of 2^ta ||row of A|| and 2^tb ||column of B|| (ozaki.scale's split of T)."""
    total = ozaki.moduli(count).product.bit_length() - 1 - 2
    return total - total // 2, total // 2


def digits(count: int) -> int:
    """Base-2^32 digits of the scaled integers (|A'|, |B'| < 2^ta, ta >= tb): the residues
    kernel reduces sum_i d_i (2^(32 i) mod p) instead of x' itself, exact below 2^53."""
    return max(1, -(-budgets(count)[0] // 32))


def power_table(mods: ozaki.Moduli, count_digits: int) -> np.ndarray:
    """2^(32 i) mod p for each modulus p and digit i, as kernels/ozaki.cu's residues reads it
    ([z * DIGITS + i], float64)."""
    return np.array([pow(2, 32 * i, p) for p in mods.values for i in range(count_digits)],
                    np.float64)  # fmt: skip


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
            "LIMBS": ozaki.moduli(count).limbs, "FLAG_NONFINITE": FLAG_NONFINITE,
            "FLAG_SPREAD": FLAG_SPREAD, "EXP_LINES": EXP_LINES[kcontig], "DIGITS": digits(count),
            "RES_DEPTH": RES_DEPTH, "REC_ROWS": REC_ROWS}  # fmt: skip


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


def fill_words(address: int, word: int, count: int, stream: int) -> None:
    """Queue `count` 32-bit words of value `word` from `address` on the raw stream."""
    _driver.check(_calls().cuMemsetD32Async(address, word, count, stream), "cuMemsetD32Async")


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

        self.exponents = {s: conversion(d, "line_exponents", "iiPqqiPPP")
                          for s, d in conv.items()}  # fmt: skip
        self.residues = {s: conversion(d, "residues", "iiPqqPPPPPii") for s, d in conv.items()}
        self.guard = conversion(conv["a"], "guard", "iiPiPiPiddP")
        self.reconstruct = launcher(compiler.raw_function("ozaki.cu", conv["a"], "reconstruct"),
                                    f"iiPqiPPP{real}{real}PiP", BLOCK, 0)  # fmt: skip
        self.gemm, self.tile = gemm_launcher(config)
        # The magnitude product: int32, exact (OUT_MOD = 0), by the same config.
        self.magnitude, self.magnitude_tile = gemm_launcher(config, out_mod=False)
        mods = ozaki.moduli(count)
        # Constants of the count, on the device for the context's lifetime.
        self.moduli = drv.to_device(np.array(mods.values, np.int32))
        self.crt = drv.to_device(crt_table(mods))
        self.powers = drv.to_device(power_table(mods, digits(count)))


@functools.lru_cache(maxsize=256)
def kernels(dtype: str, count: int, kcontig_a: bool, kcontig_b: bool, config: KernelConfig,
            ctx_id: int) -> Kernels:  # fmt: skip
    return Kernels(dtype, count, kcontig_a, kcontig_b, config)


# ---- one call -----------------------------------------------------------------------------


def fallback_reason(flag: int, count: int) -> str | None:
    """Why a call whose flag came back as `flag` fell back (None: it was emulated)."""
    if flag & FLAG_NONFINITE:
        return "Inf or NaN in A or B"
    if flag & FLAG_SPREAD:
        return f"exponents of A or B spread too widely for {count} moduli"
    return None


class Outcome:
    """A queued emulated call: whether it fell back is known once its flag is back."""

    def __init__(self, reason: str | None, event: int = 0, flag: np.ndarray | None = None,
                 count: int = 0) -> None:  # fmt: skip
        self.reason, self.event, self.flag, self.count = reason, event, flag, count

    def fell_back(self) -> bool:
        """True when the call was not emulated (C untouched): waits for the flag."""
        if self.flag is not None:
            _driver.check(_calls().cuEventSynchronize(self.event), "cuEventSynchronize")
            self.reason = fallback_reason(int(self.flag[0]), self.count)
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
    the conversion ("converted"), the guard ("guarded"), the INT8 GEMM ("multiplied") and the
    reconstruction ("reconstructed") are queued (the benchmark's events)."""
    m, n, k = form.m, form.n, form.k
    count = ozaki.default_count(np.dtype(dtype)) if count is None else count
    if m == 0 or n == 0:
        return Outcome(None)
    if k == 0 or k > ozaki.INT32_SAFE_K:
        return Outcome(f"k = {k} is outside 1..{ozaki.INT32_SAFE_K}")
    pad = Padded.of(m, n, k)
    parts = _workspace_parts(pad, m, n, count)
    nbytes = sum(round_up(v, 256) for v in parts.values())
    try:
        workspace = cuda.allocate(nbytes)
    except Exception as exc:  # pycuda.driver.MemoryError: C is untouched, IEEE runs the call
        if type(exc).__name__ != "MemoryError":
            raise
        return Outcome(f"device memory short for the emulation's workspace "
                       f"({nbytes / 2**20:.0f} MiB)")  # fmt: skip
    config = default_gemm_config() if config is None else config
    (sla, ska, kca), (slb, skb, kcb) = line_strides(form)
    try:  # the workspace goes back once what was queued has run, whatever fails
        kern = kernels(dtype, count, kca, kcb, config, id(cuda.context()))
        ptr, base = {}, int(workspace)
        for name, size in parts.items():
            ptr[name], base = base, base + round_up(size, 256)
        calls = _calls()
        fill_words(ptr["flag"], 0, 1, stream)
        ta, tb = budgets(count)
        moduli, crt = int(kern.moduli), int(kern.crt)
        for side, lines, x, s_line, s_k, kc, budget, lines_pad in (
            ("a", m, form.a, sla, ska, kca, ta, pad.m),
            ("b", n, form.b, slb, skb, kcb, tb, pad.n),
        ):
            exps, gauge, flag_ptr = ptr["exps_" + side], ptr["gauge_" + side], ptr["flag"]
            kern.exponents[side].launch(
                (-(-lines // EXP_LINES[kc]), 1, 1), stream,
                (lines, k, x, s_line, s_k, budget, exps, gauge, flag_ptr))  # fmt: skip
            kern.residues[side].launch((pad.k // RES_DEPTH, lines_pad // TILE, 1), stream,
                                       (lines, k, x, s_line, s_k, exps, gauge, moduli,
                                        int(kern.powers), ptr["res_" + side], lines_pad,
                                        pad.k))  # fmt: skip
        if marks:
            marks("converted")
        plane_a, plane_b = pad.m * pad.k, pad.n * pad.k
        tile_rows, tile_cols = kern.magnitude_tile
        kern.magnitude.launch(
            (pad.n // tile_rows, pad.m // tile_cols, 1), stream,
            (pad.n, pad.m, pad.k, ptr["res_b"] + count * plane_b, plane_b,
             ptr["res_a"] + count * plane_a, plane_a, ptr["magnitude"], pad.n * pad.m, pad.m,
             moduli))  # fmt: skip
        kern.guard.launch(
            (-(-m // BLOCK[0]), min(-(-n // GUARD_ROWS), GRID_Y_MAX), 1), stream,
            (m, n, ptr["magnitude"], pad.m, ptr["gauge_a"], m, ptr["gauge_b"], n,
             math.sqrt(k), ozaki.guard_factor(np.dtype(dtype)), ptr["flag"]))  # fmt: skip
        if marks:
            marks("guarded")
        tile_rows, tile_cols = kern.tile
        kern.gemm.launch(
            (pad.n // tile_rows, pad.m // tile_cols, count), stream,
            (pad.n, pad.m, pad.k, ptr["res_b"], plane_b, ptr["res_a"], plane_a,
             ptr["products"], pad.n * pad.m, pad.m, moduli))  # fmt: skip
        if marks:
            marks("multiplied")
        kern.reconstruct.launch((-(-m // (BLOCK[0] * REC_ROWS)), min(-(-n // BLOCK[1]), GRID_Y_MAX),
                                 1), stream,
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
    return Outcome(None, event, flag, count)


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
