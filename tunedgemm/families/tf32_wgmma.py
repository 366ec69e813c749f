"""Declaration of the tf32_wgmma family: the tf32 family's precision modes on Hopper's wgmma.

kernels/sgemm_tf32_wgmma.cu: two warpgroups of m64nBNk8 wgmma (sm_90a) on 128-byte-swizzled
K-major shared tiles, which a conversion pass fills from a cp.async ring (rounding to TF32, or
the 3xtf32 split, and the transpose of M-major operands). Opt-in until measured: the family
is registered, so launch.gemm runs its configs and tables may name it, but it serves no
precision mode (SELECTABLE), so neither selection nor the tuner offers it.
"""

from __future__ import annotations

from ..params import (
    Constraint,
    KernelConfig,
    KernelFamily,
    Params,
    Tunable,
    register_cap,
)
from .tf32 import PRECISIONS, mode_default, precision_of

NAME = "tf32_wgmma"
# False until the GPU tests and benchmarks (tests/gpu/test_tf32_wgmma_gpu.py,
# benchmarks/bench_tf32_wgmma.py) have passed on the H100: then the family serves PRECISIONS
# and selection and the tuner consider it beside the mma.sync family.
SELECTABLE = False
BLOCK_M = 128  # rows of C per block: two warpgroups of m64 (BM in the kernel)
BLOCK_K = 32  # k per tile: one 128-byte swizzle row of floats (BK in the kernel)
THREADS = 256
ALIGN_SLACK = 1024  # bytes the kernel may skip to put its swizzled tiles on 1024-byte bounds


def _threads(p: Params) -> int:
    return THREADS


def _smem_bytes(p: Params, itemsize: int) -> int:
    # STAGES raw slots plus two operand buffers of big (and in 3xtf32 small) copies, each
    # holding A [BLOCK_M x BLOCK_K] and B [BN x BLOCK_K] floats.
    tile = (BLOCK_M + p["BN"]) * BLOCK_K
    parts = p["PRECISION"] + 1
    return itemsize * (p["STAGES"] + 2 * parts) * tile + ALIGN_SLACK


# Registers ptxas (CUDA 13.0, sm_90a) allocates for the kernel, the most over the eight
# call-time variants, SPLIT_K 1 and 2 and STAGES 3 and 4 (-Xptxas -v, no spills in any).
# Accumulators: BN / 2 per thread in tf32; 3 * BN / 2 in 3xtf32 (temporaries, chain, total).
# The ALIGNED=0 variants (4-byte copies, 24 or 32 per operand tile and thread) take the most.
# Missing: 3xtf32 at BN = 128, which spills (8 to 84 bytes) in the ALIGNED=0 variants that mix
# a K-major and an M-major operand.
_REGS_NEEDED = {
    # (PRECISION, BN): registers
    (0, 64): 222,
    (0, 128): 244,
    (1, 64): 222,
}


def _regs_needed(p: Params) -> float:
    return _REGS_NEEDED.get((p["PRECISION"], p["BN"]), float("inf"))


DEFAULTS_BY_PRECISION: dict[str, dict[str, int]] = {
    "tf32": {"BN": 128, "STAGES": 4, "GROUP_M": 8, "PRECISION": 0, "CHAIN": 4, "SPLIT_K": 1},
    "3xtf32": {"BN": 64, "STAGES": 4, "GROUP_M": 8, "PRECISION": 1, "CHAIN": 4, "SPLIT_K": 1},
}


def default_for(precision: str) -> KernelConfig:
    """The family's default config for a precision mode ("tf32" or "3xtf32")."""
    return mode_default(NAME, DEFAULTS_BY_PRECISION, precision)


FAMILY = KernelFamily(
    name=NAME,
    source="sgemm_tf32_wgmma.cu",
    dtypes=("float32",),
    precisions=PRECISIONS if SELECTABLE else (),
    precision_of=precision_of,
    arch_suffix="a",
    description=(
        "TF32 tensor-core wgmma m64nNk8 (sm_90a), two warpgroups, cp.async ring and a "
        "conversion pass into 128B-swizzled K-major tiles (tf32 or 3xtf32), split-K"
    ),
    tunables=(
        Tunable("BN", (64, 128), "columns of C per block (the wgmma's n)"),
        Tunable("STAGES", (3, 4), "raw cp.async slots"),
        Tunable("GROUP_M", (8,), "block-rows rasterised together for L2 reuse"),
        Tunable("PRECISION", (0, 1), "0: tf32 (operands rounded); 1: 3xtf32 (big + small)"),
        Tunable("CHAIN", (4, 8), "3xtf32: k-tiles per chain before the running total"),
        Tunable("SPLIT_K", (1, 2, 4), "k slices (partial sums reduced in a fixed order)"),
    ),
    constraints=(
        Constraint("BN is 64 or 128", lambda p, s: p["BN"] in (64, 128)),
        Constraint("STAGES >= 3", lambda p, s: p["STAGES"] >= 3),
        Constraint("PRECISION is 0 or 1", lambda p, s: p["PRECISION"] in (0, 1)),
        Constraint("CHAIN >= 1", lambda p, s: p["CHAIN"] >= 1),
        # tf32 mode ignores CHAIN: one value keeps its configs distinct.
        Constraint("CHAIN is 4 in tf32 mode", lambda p, s: p["PRECISION"] == 1 or p["CHAIN"] == 4),
        Constraint("SPLIT_K >= 1", lambda p, s: p["SPLIT_K"] >= 1),
        Constraint("GROUP_M >= 1", lambda p, s: p["GROUP_M"] >= 1),
        Constraint("float32 only", lambda p, s: s == 4),
        Constraint(
            "accumulators fit in registers (measured, no spills)",
            lambda p, s: _regs_needed(p) <= register_cap(THREADS, 1),
        ),
    ),
    defaults={"float32": DEFAULTS_BY_PRECISION["tf32"]},
    mode_defaults=DEFAULTS_BY_PRECISION,
    threads=_threads,
    smem_bytes=_smem_bytes,
    block_tile=lambda p: (BLOCK_M, p["BN"]),
    k_tile=lambda p: BLOCK_K,
)
