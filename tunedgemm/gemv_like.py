"""GEMV-like products, one side of C at most SHORT_MAX rows or columns: kernels/gemm_gemv.cu's
panels as candidates that autotuning times.

Where m (or n) is a few rows, a product reads the long operand (op(B), or op(A)) once for 2 m
flops an element: 0.5-8 flops a byte in float32 at m of 1-16, under the 19 that the FFMA
ceiling takes over HBM's bandwidth, so HBM bounds it (benchmarks/bench_memory_bound.py). The
families' block tiles of 64 rows and more spend 4-64 times the fmas the product has there,
and the table's configs at m of 1-16 are its nearest entries', tuned for 64 rows and more.
The panel kernel gives a block SHORT rows of C (the short side rounded up to a power of two)
by LONG lines of the long side, streams the long operand with 16-byte loads (each element
once), and splits k over the blocks (SPLIT_K, summed by splitk_reduce in a fixed order) where
the long side alone has too few blocks for the SMs. Autotuning times it beside the table's
candidates at such shapes (`candidates`): each LONG at the k-splits that give every SM about
FILL_BLOCKS blocks. Its bits are the same from run to run (tests/gpu/test_gemv_like_gpu.py).
It is no family of the table's: the tuner's grid (64 and more a side) does not hold these
shapes, and they are few.

Where the long operand runs along k, autotuning also times kernels/gemm_gemv_staged.cu's
panels once STAGED_ENABLED is on (`staged` configs, SHORT of STAGED_FROM and more): lanes
own lines of the long side, which arrives through shared memory by a cp.async pipeline, so
that every lane reads the same short-operand vector (a broadcast) instead of one of its own;
gemm_gemv.cu's lanes-over-k path spends a shared-memory read per 4-8 fmas there and ran at
a third of DRAM's peak at SHORT 16 (docs/tuning.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

SOURCE = "gemm_gemv.cu"
STAGED_SOURCE = "gemm_gemv_staged.cu"
SHORT_MAX = 16  # the kernel's widest SHORT
SHORTS = (1, 2, 4, 8, 16)
LONGS = (32, 128)  # lines of the long side per block (a lane's 1 or 4 where they run along it)
WARPS = 8
CHUNK = 256  # k of the kernel's staged chunk (KC in kernels/gemm_gemv.cu): the split's unit
# Blocks an SM that the k-splits aim for: 256 threads hold 1 an SM at float64's widest SHORT
# (156-220 registers) and up to 8 at SHORT 1 (32-64), so two aims, timed both.
FILL_BLOCKS = (2, 8)
# The long operand at least this many bytes: smaller products take a few microseconds, where
# launches, not bytes, bound a call, and the small family is timed.
FROM_BYTES = 1 << 22
GRID_Y_MAX = 65535
MODES = ("ieee",)
# The staged kernel: its LONGs (32 lanes times 1, 2 or 4 lines) by dtype (float64 at 64
# spills 4 bytes under the kernel's 80-register bound), from which SHORT, its pipeline's
# depth, and the shared memory a block may take so that 3 blocks fit an SM (228 KB) at its
# 64- to 16-deep stages.
STAGED_LONGS = {"float32": (64, 128), "float64": (32,)}
STAGED_FROM = 4
STAGES = 3
STAGED_SMEM_AIM = 72 * 1024
STAGED_BKS = (64, 32, 16)
# Off until tests/gpu/test_gemv_like_gpu.py has passed on the GPU with it and
# benchmarks/probe_gemv.py (which turns it on) has timed it: it was built and compiled in a
# session that got no GPU machine (no spills where aligned; unaligned, float32 SHORT 8 at
# LONG 128 spills 4 bytes where the short operand runs along its rows).
STAGED_ENABLED = False
# bench_memory_bound.py --before turns it off for its "before" arm (A/B in one process).
ENABLED = True


@dataclass(frozen=True)
class GemvConfig:
    """One panel kernel: C's short side `side` (0: m, 1: n) in blocks of `short`, the long
    side in blocks of `long`, `warps` warps a block, k in `split_k` slices."""

    side: int
    short: int
    long: int
    warps: int = WARPS
    split_k: int = 1
    staged: bool = False  # kernels/gemm_gemv_staged.cu (the long operand along k only)

    def tile(self) -> tuple[int, int]:
        """Rows and columns of C per block."""
        return (self.short, self.long) if self.side == 0 else (self.long, self.short)

    def source(self) -> str:
        """The kernel template it compiles."""
        return STAGED_SOURCE if self.staged else SOURCE

    def defines(self, dtype: str, trans_a: bool, trans_b: bool, aligned: bool) -> dict[str, int]:
        """The kernel's defines for one call's layout (ABI in kernels/common.cuh)."""
        from .launch import call_defines

        shared = {"SIDE": self.side, "SHORT": self.short, "WARPS": self.warps,
                  "THREADS": 32 * self.warps, "SPLIT_K": self.split_k,
                  **call_defines(dtype, trans_a, trans_b, aligned)}  # fmt: skip
        if not self.staged:
            return {**shared, "LONG": self.long}
        return {**shared, "LANE_LINES": self.long // 32, "BK": self.stage_k(dtype),
                "STAGES": STAGES, "SMEM_BYTES": self.smem_bytes(dtype)}  # fmt: skip

    def stage_k(self, dtype: str) -> int:
        """The staged kernel's BK: the deepest of STAGED_BKS whose stages fit STAGED_SMEM_AIM."""
        fits = [bk for bk in STAGED_BKS if self._stage_bytes(dtype, bk) <= STAGED_SMEM_AIM]
        return fits[0] if fits else STAGED_BKS[-1]

    def _stage_bytes(self, dtype: str, bk: int) -> int:
        itemsize = np.dtype(dtype).itemsize
        return STAGES * (self.long + self.short) * (bk + 16 // itemsize) * itemsize

    def smem_bytes(self, dtype: str) -> int:
        """Dynamic shared memory a block takes: the staged kernel's stages, or the warps'
        partials that reuse them if larger (its SMEM_BYTES); 0 for gemm_gemv.cu (static)."""
        if not self.staged:
            return 0
        k_parts = self.warps // (self.short // min(self.short, 8))  # (the kernel's WARPS_K)
        partials = k_parts * self.short * (self.long + 1) * np.dtype(dtype).itemsize
        return max(self._stage_bytes(dtype, self.stage_k(dtype)), partials)

    def __str__(self) -> str:
        staged = ",STAGED=1" if self.staged else ""
        return (f"gemv(SIDE={self.side},SHORT={self.short},LONG={self.long},"
                f"WARPS={self.warps},SPLIT_K={self.split_k}{staged})")  # fmt: skip


def short_tile(short: int) -> int:
    """The least of SHORTS that holds `short` rows (or columns)."""
    return next(s for s in SHORTS if s >= short)


def splits(blocks: int, k: int, sms: int) -> list[int]:
    """The least power-of-two k-splits that give `blocks` blocks FILL_BLOCKS an SM each, as
    far as k has two chunks a slice (at least 1, no repeats)."""
    widest = max(1, -(-k // CHUNK) // 2)
    found = []
    for per_sm in FILL_BLOCKS:
        split = 1
        while blocks * split < per_sm * sms and split * 2 <= widest:
            split *= 2
        found.append(split)
    return list(dict.fromkeys(found))


def configs(m: int, n: int, k: int, sms: int, trans_a: bool = False, trans_b: bool = False,
            dtype: str = "float32") -> list[GemvConfig]:  # fmt: skip
    """The panel configs autotuning times at an m x n x k product (none where both sides are
    longer than SHORT_MAX): each of LONGS at its `splits`, and where the long operand runs
    along k and SHORT is STAGED_FROM or more each of STAGED_LONGS staged (STAGED_ENABLED),
    where the grid fits."""
    if min(m, n) > SHORT_MAX:
        return []
    side = 0 if m <= n else 1
    short, long_side = (m, n) if side == 0 else (n, m)
    short = short_tile(short)
    along_k = not trans_b if side == 0 else trans_a
    kinds = [(long, False) for long in LONGS]
    if STAGED_ENABLED and along_k and short >= STAGED_FROM:
        kinds += [(long, True) for long in STAGED_LONGS[dtype]]
    found = []
    for long, staged in kinds:
        lines = -(-long_side // long)
        if side == 0 and lines > GRID_Y_MAX:  # (the grid's y holds SIDE 0's lines)
            continue
        for split in splits(lines, k, sms):
            found.append(GemvConfig(side, short, long, WARPS, split, staged))
    return found


def candidates(key: Any) -> tuple[GemvLike, ...]:
    """The panel runners autotuning may time for a plan's key: one product (no batch) in IEEE
    arithmetic (MODES) with one side of C at most SHORT_MAX and a long operand of at least
    FROM_BYTES."""
    if not ENABLED or key.batch != 1 or key.precision not in MODES or key.k == 0:
        return ()
    itemsize = np.dtype(key.dtype).itemsize
    if min(key.m, key.n) > SHORT_MAX or max(key.m, key.n) * key.k * itemsize < FROM_BYTES:
        return ()
    from . import cuda

    found = configs(key.m, key.n, key.k, cuda.sm_count(), key.trans_a, key.trans_b, key.dtype)
    return tuple(GemvLike(key, c) for c in found)


class GemvLike:
    """run(a, b, c, alpha, beta, stream) of one product by a panel kernel (and its split-K
    reduction), as plans run an own launcher (runs_itself: autotuning and plans call it as it
    is)."""

    runs_itself = True
    __slots__ = ("_run", "config", "key")

    def __init__(self, key: Any, config: GemvConfig) -> None:
        self.key, self.config = key, config
        self._run: Any = None

    def compile_jobs(self) -> tuple[Any, ...]:
        """No family's kernels (raw_compile_jobs has the panel's)."""
        return ()

    def raw_compile_jobs(self) -> tuple[tuple[str, dict[str, int]], ...]:
        """(source, defines) of the kernel it launches, for a parallel precompile."""
        key, config = self.key, self.config
        return ((config.source(), config.defines(key.dtype, key.trans_a, key.trans_b,
                                                 key.aligned)),)  # fmt: skip

    def _ready(self) -> Any:
        from . import launch, plans

        key, config = self.key, self.config
        defines = config.defines(key.dtype, key.trans_a, key.trans_b, key.aligned)
        plan = launch.raw_plan(config.source(), defines, key.dtype, key.aligned,
                               (32 * config.warps, 1, 1), config.tile(), config.split_k,
                               config.smem_bytes(key.dtype))  # fmt: skip
        self._run = plans.own_runner(launch.GemmLauncher(plan), key)
        return self._run

    def reserve(self, stream: int) -> None:
        """The split-K workspace for `stream`, allocated now (DevicePlan.reserve)."""
        reserve = getattr(self._run or self._ready(), "reserve", None)
        if reserve is not None:
            reserve(stream)

    def __call__(self, a: int, b: int, c: int, alpha: float, beta: float, stream: int) -> None:
        (self._run or self._ready())(a, b, c, alpha, beta, stream)

    def _identity(self) -> tuple[Any, ...]:
        return (self.key, self.config)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GemvLike) and self._identity() == other._identity()

    def __hash__(self) -> int:
        return hash(self._identity())

    def __str__(self) -> str:
        return str(self.config)
