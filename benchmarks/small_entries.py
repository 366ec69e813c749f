"""The shipped table's launch-bound shapes: those where cuBLAS took under --below ms.

Usage: python benchmarks/small_entries.py [--pairs NN] [--below 0.02]

Prints MxNxK,MxNxK,... (for tunedgemm-tune --shapes): the union over both IEEE dtypes and the
given transpose pairs of the entries whose cuBLAS time is under the bound. gpu_session.sh's
retune-small step retunes them (2026-11-27: own kernels' calls became graph replays, which
changes who wins there and nowhere else).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", nargs="+", default=["NN"], choices=["NN", "NT", "TN", "TT"])
    parser.add_argument("--below", type=float, default=0.02, help="cuBLAS ms (default 0.02)")
    args = parser.parse_args()

    from tunedgemm import table

    device = table.load(table.shipped_path()).devices[0]
    shapes = {
        entry.shape
        for dtype in ("float32", "float64")
        for pair in args.pairs
        for entry in device.entries.get(table.key(dtype, pair[0] == "T", pair[1] == "T"), [])
        if entry.cublas_ms < args.below
    }
    print(",".join("x".join(map(str, shape)) for shape in sorted(shapes)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
