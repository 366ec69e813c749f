"""What the split-K reduction's thread per element (launch.Plan.reduce_grid, where its 16-byte
grid leaves SMs idle) changes through the public call at small m x n with long k, beside
cuBLAS.

    python benchmarks/probe_reduce_grid.py [--shapes MxNxK,...] [--passes 2] [--own-only]
        [--dtype float32 float64] [--trans NN] [--out DIR]

probe_host_ties.py's passes (PyCUDA GPUArrays into c, fresh plans each pass, the GPU's median
by CUDA events and the host's least time a call; cuBLAS into c through scikit-cuda on the same
operands), with "before" the 16-byte grid everywhere (launch.REDUCE_ONE_EACH off) and "after"
as now. Writes probe_reduce_grid-<own|auto>[-<trans>].json.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from probe_host_ties import main

# NN float32's worst random shape of 2026-12-02 (67x43x5193, 0.80x cuBLAS), skinny long-k
# random shapes of the sessions before, and the table's small long-k grid points.
SHAPES = [(67, 43, 5193), (36, 270, 7956), (59, 191, 2380), (224, 56, 654), (55, 334, 9942),
          (64, 64, 4096), (128, 128, 8192), (128, 384, 1024), (35, 1111, 2555)]  # fmt: skip
BEFORE = {"launch.REDUCE_ONE_EACH": False}

if __name__ == "__main__":
    sys.exit(main("reduce_grid", BEFORE, SHAPES, __doc__))
