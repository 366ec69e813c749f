"""Declaration of the int8_wgmma family: the Ozaki scheme II's batched INT8 GEMM on wgmma.

kernels/igemm_s8_wgmma.cu: two warpgroups of m64nBNk32 .s32.s8.s8 wgmma (sm_90a) on
128-byte-swizzled K-major tiles of a cp.async ring, with wgmma.wait_group 1. Same ABI and
epilogue as the int8 family (kernels/igemm.cuh), so it stays out of families.FAMILIES with
it; families.OZAKI_FAMILIES holds both and tunedgemm/ozaki_device.py picks one per GPU.
"""

from __future__ import annotations

from ..params import (
    Constraint,
    KernelConfig,
    KernelFamily,
    Params,
    Tunable,
    blocks_fit_in_smem,
    register_cap,
)
from .int8 import PRECISION, within_padding

NAME = "int8_wgmma"
ARCHS = ("sm_90",)  # GPUs whose sm_<cc>a target has wgmma (Hopper)
BLOCK_K = 128  # int8 k values per k-tile: one 128-byte swizzle row (BK in the kernel)
THREADS = 256  # two warpgroups
ALIGN_SLACK = 1024  # bytes the kernel may skip to put its swizzled tiles on 1024-byte bounds


def _threads(p: Params) -> int:
    return THREADS


def _smem_bytes(p: Params, itemsize: int) -> int:
    # STAGES ring slots of A [BM x BLOCK_K] and B [BN x BLOCK_K] int8; the float itemsize of
    # the emulated product does not enter.
    return p["STAGES"] * (p["BM"] + p["BN"]) * BLOCK_K + ALIGN_SLACK


def _accumulators(p: Params) -> int:
    """int32 accumulator registers per thread: the block tile over the 256 threads."""
    return p["BM"] * p["BN"] // THREADS


# Registers ptxas (CUDA 13.0, sm_90a) needs without spills, by accumulators per thread
# (-Xptxas -v, the most of OUT_MOD 0 and 1: the mod-p epilogue takes the most): 128 (128 x 256
# and 256 x 128 tiles) use 254; 64 (128 x 128) use 168 when free and fit in 128 under
# __launch_bounds__(256, 2). 256 x 256 (256 accumulators) spills.
_REGS_NEEDED = {64: 128, 128: 254}


def _regs_needed(p: Params) -> float:
    return _REGS_NEEDED.get(_accumulators(p), float("inf"))


DEFAULTS: dict[str, int] = {
    # 128 x 256: m64n256k32 (the widest wgmma: fewest shared-memory bytes per MAC) for both
    # warpgroups, 128 accumulators each; 4 stages (193 KB) keep 2 k-tiles in flight.
    "BM": 128,
    "BN": 256,
    "STAGES": 4,
    "GROUP_M": 8,
    "MIN_BLOCKS": 1,
    "PROXY_FENCE": 1,
}

FAMILY = KernelFamily(
    name=NAME,
    source="igemm_s8_wgmma.cu",
    dtypes=("float32", "float64"),
    precisions=(PRECISION,),
    precision_of=lambda p: PRECISION,
    arch_suffix="a",
    description=(
        "INT8 tensor-core wgmma m64nNk32 (s8 x s8 -> s32, sm_90a), two warpgroups, "
        "128B-swizzled cp.async ring, wait_group 1, products stored mod p as uint8"
    ),
    tunables=(
        Tunable("BM", (128, 256), "rows of the product per block (BM / 2 per warpgroup)"),
        Tunable("BN", (128, 256), "columns of the product per block (the wgmma's n)"),
        Tunable("STAGES", (3, 4, 5, 6), "cp.async ring slots (STAGES - 2 k-tiles in flight)"),
        Tunable("GROUP_M", (8,), "block-rows rasterised together for L2 reuse"),
        Tunable("MIN_BLOCKS", (1, 2), "minimum resident blocks per SM (launch bounds)"),
        # The PTX memory model asks for the fence (cp.async writes in the generic proxy, wgmma
        # reads in the async proxy); 0 is a probe of its cost (benchmarks/bench_ozaki.py,
        # tests/gpu/test_ozaki_gpu.py), kept out of the space until measured.
        Tunable("PROXY_FENCE", (1,), "1: fence.proxy.async before each k-tile's wgmma"),
    ),
    constraints=(
        Constraint("BM is 128 or 256", lambda p, s: p["BM"] in (128, 256)),
        Constraint("BN is 128 or 256", lambda p, s: p["BN"] in (128, 256)),
        within_padding(lambda p: BLOCK_K),
        Constraint("STAGES >= 3", lambda p, s: p["STAGES"] >= 3),
        Constraint("GROUP_M >= 1", lambda p, s: p["GROUP_M"] >= 1),
        Constraint("MIN_BLOCKS >= 1", lambda p, s: p["MIN_BLOCKS"] >= 1),
        Constraint("PROXY_FENCE is 0 or 1", lambda p, s: p["PROXY_FENCE"] in (0, 1)),
        Constraint(
            "accumulators fit in registers at MIN_BLOCKS blocks per SM (measured, no spills)",
            lambda p, s: _regs_needed(p) <= register_cap(THREADS, p["MIN_BLOCKS"]),
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


def probes() -> list[KernelConfig]:
    """Configs outside the declared space that the GPU tests check and the benchmark times:
    the default without the proxy fence."""
    return [KernelConfig.make(NAME, {**DEFAULTS, "PROXY_FENCE": 0})]
