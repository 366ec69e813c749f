"""Shared-memory wavefronts of a warp's LDS.128 by which lanes of the warp read one address.

Usage (on the GPU machine; `gpu_session.sh lds-wavefronts` runs it under Nsight Compute):

    ncu --csv --metrics l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,\
        smsp__inst_executed_op_shared_ld.sum python benchmarks/probe_lds_wavefronts.py > FILE
    python benchmarks/probe_lds_wavefronts.py --ncu-csv FILE   # the table of FILE's counts
    python benchmarks/probe_lds_wavefronts.py --source FILE    # the kernel's CUDA source

Why: simt's LANE_PAIRS (2026-12-03) came from one shape's Nsight Compute pages, where an
LDS.128 took two wavefronts when lanes 2i and 2i+1 read the same address and four when they
did not. That rule was read off two lane layouts; an 8 x 8 thread tile's layout cannot pair
both of its operands' lanes, and at 627x1738x2098 TN (2026-12-04) its LDS.128 took 12
wavefronts a k-step, against 16 FFMA cycles of the SM, with cuBLAS's at 10. Here each pattern
maps lane i to a 16-byte slot, and every warp of one block reads its slot again and again:
one launch a pattern, in PATTERNS' order; wavefronts per load instruction is ncu's count.
The patterns are the kernel's layouts (lane (lm, ln) reads A's slot lm and B's slot ln) and
every lane-bit layout of an 8 x 8 tile's 32 x 64 warp (4 lanes along m, 8 along n): which two
bits of the lane give lm, in which order (A), and which three give ln (B).
"""

from __future__ import annotations

import argparse
import csv
import functools
import itertools
import json
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

# name: lane i -> slot. The kernel layouts: simt's lane (lm, ln) reads A at slot lm (+ v * WTM)
# and B at slot ln (+ u * WTN); WTM = 4, WTN = 8 in the 8 x 8 and 8 x 4 tiles of 32 x 64 and
# 32 x 32 warps.
PATTERNS: dict[str, Callable[[int], int]] = {
    "every lane its own": lambda i: i,
    "all one": lambda i: 0,
    "i // 2 (pairs)": lambda i: i // 2,
    "i // 8 (quarter-warps)": lambda i: i // 8,
    "i // 16 (half-warps)": lambda i: i // 16,
    "i % 2": lambda i: i % 2,
    "i % 8 (quarters alike)": lambda i: i % 8,
    "i % 16 (halves alike)": lambda i: i % 16,
    "(i % 8) // 2": lambda i: (i % 8) // 2,
    "(i % 8) // 2 + 4 (i // 16)": lambda i: (i % 8) // 2 + 4 * (i // 16),
    "i ^ 1 (pairs swapped)": lambda i: i ^ 1,
    "i // 2 + 16 (i % 2) (pairs apart)": lambda i: i // 2 + 16 * (i % 2),
    "simt A unpaired: i % 4": lambda i: i % 4,
    "simt B unpaired: i // 4": lambda i: i // 4,
    "simt A paired: (i // 2) % 4": lambda i: (i // 2) % 4,
    "simt B paired: i % 2 + 2 (i // 8)": lambda i: i % 2 + 2 * (i // 8),
    "A: (i // 2) % 2 + 2 (i // 16)": lambda i: (i // 2) % 2 + 2 * (i // 16),
    "B: i % 2 + 2 ((i // 4) % 4)": lambda i: i % 2 + 2 * ((i // 4) % 4),
    "A: (i // 4) % 4": lambda i: (i // 4) % 4,
    "B: i % 4 + 4 (i // 16)": lambda i: i % 4 + 4 * (i // 16),
}


def _bits(lane: int, order: tuple[int, ...]) -> int:
    """The number whose bit j is bit order[j] of lane."""
    return sum(((lane >> bit) & 1) << j for j, bit in enumerate(order))


for _width, _name in ((2, "lm"), (3, "ln")):  # A: lm from two lane bits; B: ln from three
    for _order in itertools.permutations(range(5), _width):
        PATTERNS[f"{_name} bits {_order}"] = functools.partial(_bits, order=_order)

SOURCE = r"""
// Every thread reads its lane's 16-byte slot `reps` times. All four words feed the sum, so
// that ptxas keeps the 16-byte load (with one word used it narrowed it to LDS.32 in the
// first version of this probe, whose counts were those of 4-byte loads).
extern "C" __global__ void lds128(const int* __restrict__ slots, float* __restrict__ out,
                                  int reps) {
    __shared__ __align__(16) float buf[1024];
    for (int i = threadIdx.x; i < 1024; i += blockDim.x) buf[i] = (float)i;
    __syncthreads();
    const unsigned at = (unsigned)__cvta_generic_to_shared(buf) + 16u * slots[threadIdx.x % 32];
    float s = 0.f;
#pragma unroll 8
    for (int r = 0; r < reps; ++r) {
        float x, y, z, w;
        asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];"
                     : "=f"(x), "=f"(y), "=f"(z), "=f"(w) : "r"(at));
        s += (x + y) + (z + w);
    }
    out[threadIdx.x] = s;
}
"""

THREADS = 1024  # 32 warps, all with the pattern


def slots_of(pattern: Callable[[int], int]) -> list[int]:
    """The 32 lanes' slots."""
    return [pattern(lane) for lane in range(32)]


def launch_all(reps: int) -> None:
    """One launch of the kernel for each pattern."""
    import numpy as np
    import pycuda.driver as drv
    from pycuda.compiler import SourceModule

    from tunedgemm import cuda

    cuda.context()
    kernel = SourceModule(SOURCE, no_extern_c=True, arch=cuda.arch()).get_function("lds128")
    out = drv.mem_alloc(THREADS * 4)
    for pattern in PATTERNS.values():
        slots = np.array(slots_of(pattern), np.int32)
        kernel(drv.In(slots), out, np.int32(reps), block=(THREADS, 1, 1), grid=(1, 1))
    cuda.context().synchronize()


def ncu_wavefronts(path: str) -> list[float]:
    """Wavefronts per shared load instruction of each launch in an `ncu --csv` file, in
    launch order."""
    per_launch: dict[str, dict[str, float]] = {}
    with open(path) as handle:
        lines = [line for line in handle if line.startswith('"')]
    for record in csv.DictReader(lines):
        value = float(record["Metric Value"].replace(",", ""))
        per_launch.setdefault(record["ID"], {})[record["Metric Name"]] = value
    ratios = []
    for metrics in sorted(per_launch.items(), key=lambda item: int(item[0])):
        values = metrics[1]
        waves = values["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"]
        ratios.append(waves / values["smsp__inst_executed_op_shared_ld.sum"])
    return ratios


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=256)
    parser.add_argument("--ncu-csv", help="print the wavefronts per load of this ncu run")
    parser.add_argument("--json", help="with --ncu-csv: write the rows here too")
    parser.add_argument("--source", help="write the kernel's CUDA source here")
    args = parser.parse_args()
    if args.source:
        Path(args.source).write_text(SOURCE)
        return 0
    if args.ncu_csv:
        ratios = ncu_wavefronts(args.ncu_csv)
        ratios += [float("nan")] * (len(PATTERNS) - len(ratios))  # (a run cut short)
        print(f"{'pattern':40} {'unique':>6} {'wavefronts':>10}  slots of lanes 0-31")
        rows = []
        for (name, pattern), ratio in zip(PATTERNS.items(), ratios, strict=True):
            slots = slots_of(pattern)
            rows.append({"pattern": name, "slots": slots, "wavefronts": ratio})
            print(f"{name:40} {len(set(slots)):6d} {ratio:10.2f}  "
                  + "".join(f"{slot:x}" if slot < 16 else f"({slot})" for slot in slots))
        if args.json:
            Path(args.json).write_text(json.dumps(rows, indent=1))
        return 0
    from tunedgemm import cuda

    ok, why = cuda.status()
    if not ok:
        print(f"probe_lds_wavefronts: needs a GPU ({why})")
        return 1
    launch_all(args.reps)
    print(f"probe_lds_wavefronts: {len(PATTERNS)} launches (their counts come from ncu)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
