"""Declaration of the gemm_small family: latency-bound products, k split across a block's warps.

At shapes whose whole product takes a few microseconds (the table's entries where cuBLAS runs
under 20 us), the other families' block tiles (64 x 64 and up, thread tiles of 32 or more
elements) leave most SMs idle and walk every k-step in one chain: on the H100 (2026-11-27
02:24 UTC, benchmarks/probe_small_launch.py) a 20-call graph took 6.9 us a call at float32
128^3 against cuBLAS's 4.5. This family has small tiles, small thread tiles and KSPLIT thread
groups that each take part of every k-slab (kernels/gemm_small.cu). At 05:46 UTC
(benchmarks/probe_small_family.py, head-to-head medians) its best config took 3.4-3.8 us at
float32 64^3, 64x512x64, 512x64x64 and 128^3 against cuBLAS's 4.5-6.0, and 6.1 against 8.4
at 256^3; 3.4-4.1 us at float64 64^3 to 128^3 against 3.9-4.5. At long k (64x64x4096) or more
work (float64 256^3) it loses: one chain per block still walks all of k (docs/tuning.md,
"The small family for launch-bound products").
"""

from __future__ import annotations

from ..params import Constraint, KernelFamily, Params, Tunable, divides

PAD_BYTES = 16  # padding per shared row, as in kernels/gemm_small.cu (rows stay 16-byte aligned)
# The tuner times this family only at shapes of at most this much work (m * n * k): beyond
# it the product's time is issue-bound, where the other families' larger thread tiles win.
# It won up to 256^3 float32 and 128^3 float64 (probe_small_family.py, 2026-11-27).
MAX_WORK = 2**25


# The wider values benchmarks/probe_small_family.py times (the family's constraints apply),
# from which the tunables' values below were chosen.
PROBED_VALUES = {"BM": (16, 32, 64), "BN": (16, 32, 64), "BK": (4, 8, 16), "TM": (1, 2, 4),
                 "TN": (1, 2, 4), "KSPLIT": (1, 2, 4, 8)}  # fmt: skip


def _threads(p: Params) -> int:
    return (p["BM"] // p["TM"]) * (p["BN"] // p["TN"]) * p["KSPLIT"]


def _smem_bytes(p: Params, itemsize: int) -> int:
    # The k-slab (BK * KSPLIT deep, k-outer, 16 bytes of padding per row), reused for the
    # groups' partial tiles when KSPLIT > 1.
    depth, pad = p["BK"] * p["KSPLIT"], PAD_BYTES // itemsize
    slab = depth * (p["BM"] + pad + p["BN"] + pad)
    partials = p["BM"] * p["BN"] * p["KSPLIT"] if p["KSPLIT"] > 1 else 0
    return itemsize * max(slab, partials)


def _stages_whole(p: Params) -> bool:
    # Every thread loads whole elements of both slabs, at least one of each.
    depth, t = p["BK"] * p["KSPLIT"], _threads(p)
    return all(rows * depth % t == 0 and rows * depth >= t for rows in (p["BM"], p["BN"]))


FAMILY = KernelFamily(
    name="small",
    source="gemm_small.cu",
    dtypes=("float32", "float64"),
    description="small tiles, k split across a block's thread groups: latency-bound products",
    # The values that hold the fastest config at every shape where the family beat cuBLAS,
    # out of PROBED_VALUES' 218 configs a dtype: benchmarks/probe_small_family.py, H100,
    # 2026-11-27 05:29 UTC.
    tunables=(
        Tunable("BM", (16, 32), "rows of C per block"),
        Tunable("BN", (16, 32), "columns of C per block"),
        Tunable("BK", (8, 16), "k-steps of each thread group per staged slab"),
        Tunable("TM", (2, 4), "rows of C per thread"),
        Tunable("TN", (2, 4), "columns of C per thread"),
        Tunable("KSPLIT", (4, 8), "thread groups splitting each slab's k (fixed-order sum)"),
    ),
    constraints=(
        divides("TM", "BM"),
        divides("TN", "BN"),
        # At 512 threads ptxas gets 128 registers a thread, and float64 tiles with 16 staged
        # elements spilled (nvcc 13.0, sm_90: 4-8 bytes); at 256 it gets 255.
        Constraint("64 to 256 threads per block", lambda p, s: 64 <= _threads(p) <= 256),
        Constraint("whole warps per block", lambda p, s: _threads(p) % 32 == 0),
        Constraint(
            "every thread stages whole elements of both slabs", lambda p, s: _stages_whole(p)
        ),
        Constraint(
            "at most 16 staged elements per thread per slab",
            lambda p, s: p["BK"] * p["KSPLIT"] * (p["BM"] + p["BN"]) // _threads(p) <= 16,
        ),
        Constraint(
            "a slab fits 48 KB of shared memory", lambda p, s: _smem_bytes(p, s) <= 48 * 1024
        ),
    ),
    defaults={
        "float32": {"BM": 32, "BN": 32, "BK": 8, "TM": 4, "TN": 4, "KSPLIT": 4},
        "float64": {"BM": 32, "BN": 32, "BK": 8, "TM": 4, "TN": 4, "KSPLIT": 4},
    },
    threads=_threads,
    smem_bytes=_smem_bytes,
    max_work=MAX_WORK,
)
