"""What autotuning's medium tiles (plans.with_medium_tiles: dmma's three-block 64 x 64 and
64 x 32 tiles) change through the public dgemm call at skinny and medium float64 shapes, beside
cuBLAS.

    python benchmarks/probe_medium_tiles.py [--shapes MxNxK,...] [--passes 3] [--own-only]
        [--dtype float64] [--out DIR]

probe_host_ties.py's passes (PyCUDA GPUArrays into c, fresh plans each pass, the GPU's median
by CUDA events and the host's least time a call; cuBLAS into c through scikit-cuda on the same
operands), with "before" the medium tiles left out (MEDIUM_UPTO 0) and "after" as they are.
Writes probe_medium_tiles-<own|auto>.json.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from probe_host_ties import main

# float64's worst random shapes of the sessions of 2026-11-27 to 2026-11-29 (bench_tuning),
# where dmma.MEDIUM_TILES was measured at the launch level, and the 3072x96x3072 and
# 96x6000x2000 skinny shapes of issue 15's first table.
SHAPES = [(6904, 698, 3920), (8016, 268, 3704), (1952, 307, 6314), (3556, 131, 436),
          (700, 2460, 2744), (1626, 342, 9572), (1473, 140, 7081), (600, 508, 2782),
          (962, 302, 1607), (5742, 893, 364), (3072, 96, 3072), (96, 6000, 2000)]  # fmt: skip
BEFORE = {"plans.MEDIUM_UPTO": 0}

if __name__ == "__main__":
    sys.argv[1:1] = ["--dtype", "float64"]  # (a later --dtype wins)
    sys.exit(main("medium_tiles", BEFORE, SHAPES, __doc__))
