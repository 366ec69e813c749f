"""Declaration of the tf32 family: float32 GEMM on the TF32 tensor cores, in two precision modes.

PRECISION=0 ("tf32") rounds the operands to TF32; PRECISION=1 ("3xtf32") splits each operand
into two TF32 parts and sums three products, for FP32-level accuracy (kernels/sgemm_tf32.cu).
The family claims dtype float32 but never IEEE float32 arithmetic: `precisions` keeps it out
of the families that ordinary sgemm calls choose from (see KernelFamily.serves).
"""

from __future__ import annotations

from ..params import (
    Constraint,
    KernelConfig,
    KernelFamily,
    Params,
    Tunable,
    blocks_fit_in_smem,
    divides,
    register_cap,
)

NAME = "tf32"
PRECISIONS = ("tf32", "3xtf32")  # indexed by the PRECISION tunable


def _threads(p: Params) -> int:
    return (p["BM"] // p["WM"]) * (p["BN"] // p["WN"]) * 32


def _smem_bytes(p: Params, itemsize: int) -> int:
    # STAGES ring slots of A [BM x BK] and B [BN x BK] floats, unpadded (the layouts are
    # swizzled instead), and with FLUSH the block's float32 totals of C's tile [BM x BN] (the
    # outer level of the two-level accumulation).
    ring = p["STAGES"] * (p["BM"] + p["BN"]) * p["BK"]
    totals = p["BM"] * p["BN"] if p["FLUSH"] else 0
    return itemsize * (ring + totals)


def _copies_per_thread(p: Params) -> int:
    # cp.async issued by one thread per k-tile in the worst (ALIGNED=0, 4-byte) case.
    return -(-(p["BM"] + p["BN"]) * p["BK"] // _threads(p))


# Registers ptxas (CUDA 13.0, sm_90a) allocates without spilling, by mode, warp-tile area and
# BK: the most over the eight call-time variants of every such config of the space with
# CVT=0, and of one or two configs per entry with CVT=1, which never needed more (measured
# with -Xptxas -v; ptxas fills what the launch bounds allow, so entries near 255 are what it
# takes, not what it must have). Missing entries spilled in some variant and are excluded:
# 3xtf32 with 64 x 64 warp tiles (accumulators, split fragments and raw fragments exceed 255),
# FLUSH with 2048-element warp tiles at BK = 32, tf32 64 x 64 at BK = 32 (ALIGNED=0 spills).
# The FLUSH entries were measured again with the two-level accumulation (shared-memory
# totals) and the epilogue's IEEE recompute of non-finite sums: at most one register more.
_REGS_NEEDED = {
    # (PRECISION, FLUSH, WM * WN, BK): registers
    (0, 0, 1024, 16): 128,
    (0, 0, 1024, 32): 128,
    (0, 0, 2048, 16): 168,
    (0, 0, 2048, 32): 216,
    (0, 0, 4096, 16): 255,
    (1, 0, 1024, 16): 128,
    (1, 0, 1024, 32): 128,
    (1, 0, 2048, 16): 216,
    (1, 0, 2048, 32): 240,
    (1, 1, 1024, 16): 145,
    (1, 1, 1024, 32): 244,
    (1, 1, 2048, 16): 252,
}


def _regs_needed(p: Params) -> float:
    return _REGS_NEEDED.get((p["PRECISION"], p["FLUSH"], p["WM"] * p["WN"], p["BK"]), float("inf"))


def precision_of(p: Params) -> str:
    """The precision mode a config computes in: "tf32" or "3xtf32"."""
    return PRECISIONS[p["PRECISION"]]


# A good config per mode (mma.sync on the H100, by the throughput model in the kernel's header):
#   3xtf32: compute- and issue-bound (three mma, two conversions and about two FADD per
#     product pair); 64 x 32 warp tiles at BK 16 are the largest whose FLUSH temporaries fit
#     (~250 registers, 8 warps, 1 block per SM): 5.5 instructions per mma in the SASS main
#     loop against 6.3 for 32 x 32 tiles. FLUSH=1 (sums outside the tensor cores, in two
#     levels) is what makes the mode as accurate as cuBLAS SGEMM.
#   tf32: shared-memory-bound on mma.sync; the largest warp tile that fits (64 x 64, at BK 16)
#     reads the least shared memory per mma; 4 warps of 255 registers, 2 blocks per SM.
# The dtype-keyed `defaults` (what generic code asks for) holds the 3xtf32 one: the mode meant
# as a drop-in for float32. DEFAULTS_BY_PRECISION is what precision-aware code asks for.
DEFAULTS_BY_PRECISION: dict[str, dict[str, int]] = {
    "3xtf32": {
        "BM": 128,
        "BN": 128,
        "BK": 16,
        "WM": 64,
        "WN": 32,
        "STAGES": 4,
        "GROUP_M": 8,
        "MIN_BLOCKS": 1,
        "PRECISION": 1,
        "FLUSH": 1,
        "SPLIT_K": 1,
        "CVT": 0,
    },
    "tf32": {
        "BM": 128,
        "BN": 128,
        "BK": 16,
        "WM": 64,
        "WN": 64,
        "STAGES": 4,
        "GROUP_M": 8,
        "MIN_BLOCKS": 1,
        "PRECISION": 0,
        "FLUSH": 0,
        "SPLIT_K": 1,
        "CVT": 0,
    },
}


def mode_default(family: str, defaults: dict[str, dict[str, int]], precision: str) -> KernelConfig:
    """A TF32 family's default config for a precision mode ("tf32" or "3xtf32")."""
    try:
        return KernelConfig.make(family, defaults[precision])
    except KeyError:
        raise ValueError(
            f"family {family} has no precision {precision!r}; known: {PRECISIONS}"
        ) from None


def default_for(precision: str) -> KernelConfig:
    """The family's default config for a precision mode ("tf32" or "3xtf32")."""
    return mode_default(NAME, DEFAULTS_BY_PRECISION, precision)


FAMILY = KernelFamily(
    name=NAME,
    source="sgemm_tf32.cu",
    dtypes=("float32",),
    precisions=PRECISIONS,
    precision_of=precision_of,
    description=(
        "TF32 tensor-core mma.sync m16n8k8 (tf32 or 3xtf32 split fused into fragment loads), "
        "swizzled cp.async ring, group-M raster, split-K"
    ),
    tunables=(
        Tunable("BM", (64, 128, 256), "rows of C per block"),
        Tunable("BN", (64, 128, 256), "columns of C per block"),
        Tunable("BK", (16, 32), "depth of one k-tile staged in shared memory"),
        Tunable("WM", (32, 64), "rows of C per warp"),
        Tunable("WN", (32, 64), "columns of C per warp"),
        Tunable("STAGES", (3, 4), "depth of the cp.async shared-memory ring"),
        Tunable("GROUP_M", (8,), "block-rows rasterised together for L2 reuse"),
        Tunable("MIN_BLOCKS", (1, 2), "minimum resident blocks per SM (launch bounds)"),
        Tunable("PRECISION", (0, 1), "0: tf32 (operands rounded); 1: 3xtf32 (big + small)"),
        Tunable("FLUSH", (0, 1), "1: accumulate outside the tensor cores (3xtf32), 0 (tf32)"),
        Tunable("SPLIT_K", (1, 2, 4), "k slices (partial sums reduced in a fixed order)"),
        Tunable("CVT", (0, 1), "rounding to TF32: 0 cvt.rn (F2FP unit), 1 cvt.rna (ALU ops)"),
    ),
    constraints=(
        divides("WM", "BM"),
        divides("WN", "BN"),
        Constraint(
            "WM and WN are 32, 64 or 128",
            lambda p, s: p["WM"] in (32, 64, 128) and p["WN"] in (32, 64, 128),
        ),
        Constraint(
            "BM and BN are multiples of 32", lambda p, s: p["BM"] % 32 == 0 and p["BN"] % 32 == 0
        ),
        Constraint("BK is 16 or 32", lambda p, s: p["BK"] in (16, 32)),
        Constraint("PRECISION is 0 or 1", lambda p, s: p["PRECISION"] in (0, 1)),
        # 3xtf32 without FLUSH has many times float32's error at large k (the tensor cores
        # truncate): the tuner, which ranks by speed, must never be offered it.
        Constraint(
            "FLUSH in 3xtf32 mode only and always", lambda p, s: p["FLUSH"] == p["PRECISION"]
        ),
        Constraint("STAGES >= 2", lambda p, s: p["STAGES"] >= 2),
        Constraint("SPLIT_K >= 1", lambda p, s: p["SPLIT_K"] >= 1),
        Constraint("GROUP_M >= 1", lambda p, s: p["GROUP_M"] >= 1),
        Constraint("MIN_BLOCKS >= 1", lambda p, s: p["MIN_BLOCKS"] >= 1),
        Constraint("float32 only", lambda p, s: s == 4),
        Constraint("between 4 and 8 warps per block", lambda p, s: 128 <= _threads(p) <= 256),
        Constraint(
            "at most 32 cp.async per thread per k-tile (ALIGNED=0 copies 4 bytes each)",
            lambda p, s: _copies_per_thread(p) <= 32,
        ),
        Constraint(
            "warp tile fits in registers at MIN_BLOCKS blocks per SM (measured, no spills)",
            lambda p, s: _regs_needed(p) <= register_cap(_threads(p), p["MIN_BLOCKS"]),
        ),
        blocks_fit_in_smem(_smem_bytes),
    ),
    defaults={"float32": DEFAULTS_BY_PRECISION["3xtf32"]},
    mode_defaults=DEFAULTS_BY_PRECISION,
    threads=_threads,
    smem_bytes=_smem_bytes,
)
