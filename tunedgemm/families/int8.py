"""Declaration of the int8 family: the batched INT8 tensor-core GEMM of the Ozaki scheme II.

kernels/igemm_s8.cu multiplies the residues of every modulus in one launch (blockIdx.z is the
modulus). Its ABI is not the GEMM ABI of kernels/common.cuh (int8 operands in the padded
k-contiguous layout of kernels/ozaki.cu, no alpha or beta), so the family stays out of
families.FAMILIES, whose members the tuner, the tables and launch.py launch through that ABI:
tunedgemm/ozaki_device.py launches it. It computes float32 and float64 products in precision
"ozaki" only.
"""

from __future__ import annotations

from collections.abc import Callable

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

NAME = "int8"
PRECISION = "ozaki"
K_ALIGN = 128  # the conversion pads k to this (every BK of the space divides it)
LINE_ALIGN = 256  # and rows / columns to this (every BM and BN of the space divides it)


def within_padding(block_k: Callable[[Params], int]) -> Constraint:
    """The rule of every INT8 family: its block tiles divide the conversion's padding (BM and
    BN divide LINE_ALIGN, the k-tile `block_k` divides K_ALIGN), so the GEMM has no edges."""
    return Constraint(
        f"BM and BN divide {LINE_ALIGN}, the k-tile divides {K_ALIGN} (the conversion's padding)",
        lambda p, s: LINE_ALIGN % p["BM"] == 0 and LINE_ALIGN % p["BN"] == 0
        and K_ALIGN % block_k(p) == 0,
    )


def _threads(p: Params) -> int:
    return (p["BM"] // p["WM"]) * (p["BN"] // p["WN"]) * 32


def _smem_bytes(p: Params, itemsize: int) -> int:
    # STAGES ring slots of A [BM x BK] and B [BN x BK] int8 (swizzled, unpadded); the float
    # itemsize of the emulated product does not enter.
    return p["STAGES"] * (p["BM"] + p["BN"]) * p["BK"]


# Registers ptxas (CUDA 13.0, sm_90a) allocates by warp-tile area, without spills (measured
# with -Xptxas -v): 64 x 64 warp tiles hold 128 accumulators and two sets of 32 fragment
# registers, 254 in all with 8 warps; with 4 warps (twice the copies per thread) they spill.
_REGS_NEEDED = {1024: 112, 2048: 212, 4096: 254}


def _regs_needed(p: Params) -> float:
    return _REGS_NEEDED.get(p["WM"] * p["WN"], float("inf"))


DEFAULTS: dict[str, int] = {
    # 128 x 256 blocks of 8 warps of 64 x 64: the largest warp tile that fits (fewest shared
    # bytes per mma: 128 per m16n8k32, against the ~1.5 cycles an SM takes per mma) and the
    # widest block the registers allow (L2 traffic per MAC).
    "BM": 128,
    "BN": 256,
    "BK": 128,
    "WM": 64,
    "WN": 64,
    "STAGES": 3,
    "GROUP_M": 8,
    "MIN_BLOCKS": 1,
}

FAMILY = KernelFamily(
    name=NAME,
    source="igemm_s8.cu",
    dtypes=("float32", "float64"),
    precisions=(PRECISION,),
    precision_of=lambda p: PRECISION,
    description=(
        "INT8 tensor-core mma.sync m16n8k32 (s8 x s8 -> s32), one launch for all moduli, "
        "swizzled cp.async ring, ldmatrix fragments, products stored mod p as uint8"
    ),
    tunables=(
        Tunable("BM", (64, 128, 256), "rows of the product per block"),
        Tunable("BN", (64, 128, 256), "columns of the product per block"),
        Tunable("BK", (64, 128), "int8 k values (bytes) per k-tile in shared memory"),
        Tunable("WM", (32, 64), "rows per warp"),
        Tunable("WN", (32, 64), "columns per warp"),
        Tunable("STAGES", (2, 3, 4), "depth of the cp.async shared-memory ring"),
        Tunable("GROUP_M", (8,), "block-rows rasterised together for L2 reuse"),
        Tunable("MIN_BLOCKS", (1, 2), "minimum resident blocks per SM (launch bounds)"),
    ),
    constraints=(
        divides("WM", "BM"),
        divides("WN", "BN"),
        within_padding(lambda p: p["BK"]),
        Constraint("STAGES >= 2", lambda p, s: p["STAGES"] >= 2),
        Constraint("GROUP_M >= 1", lambda p, s: p["GROUP_M"] >= 1),
        Constraint("MIN_BLOCKS >= 1", lambda p, s: p["MIN_BLOCKS"] >= 1),
        Constraint("between 4 and 8 warps per block", lambda p, s: 128 <= _threads(p) <= 256),
        Constraint(
            "64 x 64 warp tiles only with 8 warps (4 warps spill)",
            lambda p, s: p["WM"] * p["WN"] < 4096 or _threads(p) == 256,
        ),
        Constraint(
            "every thread copies whole granules of each tile",
            lambda p, s: (p["BM"] * p["BK"] // 16) % _threads(p) == 0
            and (p["BN"] * p["BK"] // 16) % _threads(p) == 0,
        ),
        Constraint(
            "warp tile fits in registers at MIN_BLOCKS blocks per SM (measured, no spills)",
            lambda p, s: _regs_needed(p) <= register_cap(_threads(p), p["MIN_BLOCKS"]),
        ),
        blocks_fit_in_smem(_smem_bytes),
    ),
    defaults={"float32": DEFAULTS, "float64": DEFAULTS},
    mode_defaults={PRECISION: DEFAULTS},
    threads=_threads,
    smem_bytes=_smem_bytes,
)


def default_config() -> KernelConfig:
    """The family's default config."""
    return KernelConfig.make(NAME, DEFAULTS)
