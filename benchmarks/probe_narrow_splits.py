"""What the narrow tiles' least k-split (tunedgemm/plans.py, _narrow_splits: the least split of
any size that gives every SM its blocks, beside the power of two and half and twice it) does
through the public call: probe_host_ties.py's passes (PyCUDA GPUArrays into c, operands
padded, fresh plans each pass, against cuBLAS into c through scikit-cuda on the same
operands), float32 TT by default, with "before" autotuning the powers of two alone and "after"
as now; writes probe_narrow_splits-<own|auto>-<TRANS>.json.

    python benchmarks/probe_narrow_splits.py [--shapes MxNxK,...] [--passes 2] [--own-only]
        [--dtype float32 float64] [--trans TT] [--out DIR]
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

# TT float32's worst random shape of 2026-12-01 (0.73-0.76x cuBLAS through the call) and other
# skinny long-k random TT shapes of 2026-12-02 (0.88-1.07x).
SHAPES = "146x5866x434,55x334x9942,5452x45x10371,1128x75x2067"


def powers_of_two_only(key: Any, tile: Any, k_tile: int, blocks: float) -> tuple[int, ...]:
    """plans._narrow_splits before the least split: the power of two, half and twice it."""
    from tunedgemm import plans

    split = plans._filling_split(key, tile, k_tile, blocks)
    return (split, split // 2, 2 * split)


def main() -> int:
    from probe_host_ties import main as passes

    sys.argv[1:1] = ["--dtype", "float32", "--shapes", SHAPES, "--trans", "TT"]  # (later win)
    return passes("narrow_splits", {"plans._narrow_splits": powers_of_two_only}, [], __doc__)


if __name__ == "__main__":
    sys.exit(main())
