"""What simt's round tile at three blocks an SM, its splits over one to three rounds and its
timing where the first candidate splits long k (2026-12-02) change through the public call.

    python benchmarks/probe_round_tiles.py [--shapes MxNxK,...] [--passes 2] [--own-only]
        [--dtype float32] [--trans NN] [--out DIR]

probe_host_ties.py's passes (PyCUDA GPUArrays into c, operands padded, fresh plans each pass,
against cuBLAS into c through scikit-cuda on the same operands), float32 by default, with
"before" the round tiles as they were (the 128 x 64 tile at two blocks an SM, splits over one
and two rounds, timed only where the first candidate's tiles are fewer than its block slots)
and "after" as now; writes probe_round_tiles-<own|auto>.json. With --dtype float64 it times
dmma's round tiles, whose rounds are as before, where a split first candidate has long k.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

# The shipped table's long-k float32 entries that cuBLAS holds (0.77-0.86 there; through the
# call on the H200 at 2026-12-02 00:46 UTC, 0.87-0.98), and a random shape of that kind.
SHAPES = ("384x3072x8192,3072x128x8192,8192x128x8192,512x512x16384,4096x64x16384,"
          "3072x384x8192,183x1144x6161")  # fmt: skip


def before_family() -> Any:
    """simt as it was: its 128 x 64 round tile at two blocks an SM, one and two rounds."""
    from tunedgemm.families import FAMILIES

    family = FAMILIES["simt"]
    tiles = ({**family.round_tiles[0], "MIN_BLOCKS": 2}, *family.round_tiles[1:])
    return dataclasses.replace(family, round_tiles=tiles, round_tile_rounds=(1, 2))


def main() -> int:
    from probe_host_ties import main as passes

    sys.argv[1:1] = ["--dtype", "float32", "--shapes", SHAPES]  # (later ones win)
    before = {"families.FAMILIES[simt]": before_family(),
              "plans.ROUND_TILES_SPLIT_FROM_K": 1 << 40}  # fmt: skip
    return passes("round_tiles", before, [], __doc__)


if __name__ == "__main__":
    sys.exit(main())
