"""Declaration of the gemm_tiled family: the portable shared-memory baseline."""

from __future__ import annotations

from ..params import Constraint, KernelFamily, Params, Tunable, divides


def _threads(p: Params) -> int:
    return (p["BM"] // p["TM"]) * (p["BN"] // p["TN"])


def _smem_bytes(p: Params, itemsize: int) -> int:
    # As[BK][BM+1] and Bs[BK][BN+1]: one element of padding per row.
    return itemsize * p["BK"] * (p["BM"] + 1 + p["BN"] + 1)


FAMILY = KernelFamily(
    name="tiled",
    source="gemm_tiled.cu",
    dtypes=("float32", "float64"),
    description="shared-memory tiles with a TM x TN register tile per thread; any layout",
    tunables=(
        Tunable("BM", (32, 64, 128), "rows of C per block"),
        Tunable("BN", (32, 64, 128), "columns of C per block"),
        Tunable("BK", (8, 16, 32), "depth of the k-slice staged in shared memory"),
        Tunable("TM", (2, 4, 8), "rows of C per thread"),
        Tunable("TN", (2, 4, 8), "columns of C per thread"),
    ),
    constraints=(
        divides("TM", "BM"),
        divides("TN", "BN"),
        Constraint("at least one warp per block", lambda p, s: _threads(p) >= 32),
        Constraint("whole warps per block", lambda p, s: _threads(p) % 32 == 0),
        Constraint(
            "every thread stages whole elements of both tiles",
            lambda p, s: (
                (p["BM"] * p["BK"]) % _threads(p) == 0 and (p["BN"] * p["BK"]) % _threads(p) == 0
            ),
        ),
        Constraint(
            "TM * TN accumulators fit in registers",
            lambda p, s: p["TM"] * p["TN"] * s <= 256,
        ),
    ),
    defaults={
        "float32": {"BM": 128, "BN": 128, "BK": 8, "TM": 8, "TN": 8},
        "float64": {"BM": 64, "BN": 64, "BK": 8, "TM": 4, "TN": 4},
    },
    threads=_threads,
    smem_bytes=_smem_bytes,
)
