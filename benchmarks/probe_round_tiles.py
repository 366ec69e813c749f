"""What a change of simt's round tiles (tunedgemm/plans.py, with_round_tiles) does through the
public call: --change three-blocks (2026-12-02, the default), the 128 x 64 tile at three blocks
an SM, its splits over one to three rounds and its timing where the first candidate splits
long k; --change tn-registers (2026-12-02), the round tiles timed as their TN layout twins
(both operands through registers, REG_TRANSPOSE=1) at TN with aligned operands; --change mirror
(2026-12-02), the 128 x 64 tile's 64 x 128 mirror, of the two the one each layout's short
side wants (NN: fewer columns, TT: fewer rows, NT and TN both), only the round tiles that C
nearly fills (three quarters of the block along each side); --change stream-k-first
(2026-12-02), the round tiles timed where the first candidate is a stream-K schedule at long k
(plans._round_tile_bases); --change unsplit-grids (2026-12-02), a first candidate that splits
short k over a full grid timed unsplit too, with the round tiles that fill their waves
(plans.with_unsplit_grids).

    python benchmarks/probe_round_tiles.py [--change three-blocks] [--shapes MxNxK,...]
        [--passes 2] [--own-only] [--dtype float32] [--trans NN] [--out DIR]

probe_host_ties.py's passes (PyCUDA GPUArrays into c, operands padded, fresh plans each pass,
against cuBLAS into c through scikit-cuda on the same operands), float32 by default, with
"before" autotuning without the change and "after" as now; writes
probe_round_tiles-CHANGE-<own|auto>[-TRANS].json. three-blocks' "before" is the 128 x 64 tile
at two blocks an SM, splits over one and two rounds, timed only where the first candidate's
tiles are fewer than its block slots; with --dtype float64 it times dmma's round tiles, whose
rounds are as before, where a split first candidate has long k. tn-registers runs TN unless
--trans says otherwise (elsewhere before and after time the same candidates); mirror runs TT
at MIRROR_SHAPES unless told otherwise; stream-k-first runs TT at STREAM_K_FIRST_SHAPES,
unsplit-grids TN at UNSPLIT_SHAPES.
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
# TN's long-k float32 entries that cuBLAS holds in the shipped table (0.83-0.88 there), and
# NN's widest loss there as TN.
TN_SHAPES = ("512x512x16384,4096x64x16384,512x4096x4096,4096x512x4096,64x4096x16384,"
             "512x512x4096,384x3072x8192")  # fmt: skip


def before_family() -> Any:
    """simt before three-blocks: its 128 x 64 round tile at two blocks an SM, one and two
    rounds (and no mirror)."""
    family = unmirrored_family()
    tiles = ({**family.round_tiles[0], "MIN_BLOCKS": 2}, *family.round_tiles[1:])
    return dataclasses.replace(family, round_tiles=tiles, round_tile_rounds=(1, 2))


# Long-k shapes where both tiles fit (TT's A through registers wants the mirror), and m of 64,
# where only the mirror does.
MIRROR_SHAPES = ("512x512x16384,384x3072x8192,512x4096x4096,4096x512x16384,512x4096x16384,"
                 "64x4096x16384,64x16384x4096")  # fmt: skip


def unmirrored_family() -> Any:
    """simt as it was before mirror: the 128 x 64 round tile and the two-warp 64 x 64."""
    from tunedgemm.families import FAMILIES

    family = FAMILIES["simt"]
    tiles = tuple(t for t in family.round_tiles if (t["BM"], t["BN"]) != (64, 128))
    return dataclasses.replace(family, round_tiles=tiles, round_tile_short_side={})


def every_round_tile(family: Any, params: Any, key: Any) -> list:
    """plans._round_tiles_here before mirror: every round tile, whether it fits in C or not."""
    return list(family.round_tiles)


def no_layout_twins(config: Any, key: Any) -> tuple[()]:
    """plans._layout_twins before tn-registers: round tiles came as declared."""
    return ()


# Long-k TT shapes where the table's first candidate is stream-K and autotuning kept a
# stream-K pick (2026-12-02, 0.92-0.96x cuBLAS through the call).
STREAM_K_FIRST_SHAPES = "384x3072x8192,4096x512x16384,512x4096x16384"


def split_bases_only(candidates: Any) -> list:
    """plans._round_tile_bases before stream-k-first: the k-split candidates alone."""
    from tunedgemm import plans

    return [(c, family, params, params["SPLIT_K"] > 1)
            for c, family, params in plans._split_k_configs(candidates)]  # fmt: skip


# Short-k TN shapes where the first candidate splits k over a full grid: TN's losses of the
# 2026-12-02 random shapes (0.82-0.83x cuBLAS) and random shapes of seeds 0-4 that get
# unsplit grids.
UNSPLIT_SHAPES = ("273x10224x374,307x9899x517,232x10211x603,280x13795x466,1408x3030x950,"
                  "8263x132x1561,10684x116x1630")  # fmt: skip


def no_unsplit_grids(candidates: Any, key: Any, sms: int) -> tuple[()]:
    """plans.with_unsplit_grids before unsplit-grids: nothing."""
    return ()


# Each change: its default shapes, its default transpose pair (None: the probe's, NN), and
# the settings that undo it (made when asked for: some build a family).
CHANGES: dict[str, tuple[str, str | None, Any]] = {
    "three-blocks": (SHAPES, None, lambda: {
        "families.FAMILIES[simt]": before_family(), "plans.ROUND_TILES_SPLIT_FROM_K": 1 << 40,
        "plans._round_tiles_here": every_round_tile}),
    "tn-registers": (TN_SHAPES, "TN", lambda: {"plans._layout_twins": no_layout_twins}),
    "mirror": (MIRROR_SHAPES, "TT", lambda: {
        "families.FAMILIES[simt]": unmirrored_family(),
        "plans._round_tiles_here": every_round_tile}),
    "stream-k-first": (STREAM_K_FIRST_SHAPES, "TT",
                       lambda: {"plans._round_tile_bases": split_bases_only}),
    "unsplit-grids": (UNSPLIT_SHAPES, "TN", lambda: {"plans.with_unsplit_grids": no_unsplit_grids}),
}  # fmt: skip


def _change(argv: list[str]) -> str:
    """--change's value, taken out of argv (the passes parse the rest)."""
    if "--change" not in argv:
        return "three-blocks"
    at = argv.index("--change")
    value = argv[at + 1]
    del argv[at : at + 2]
    return value


def main() -> int:
    from probe_host_ties import main as passes

    change = _change(sys.argv)
    if change not in CHANGES:
        raise SystemExit(f"--change: {', '.join(CHANGES)}, not {change!r}")
    shapes, trans, undone = CHANGES[change]
    defaults = ["--dtype", "float32", "--shapes", shapes, *(("--trans", trans) if trans else ())]
    before = undone()
    sys.argv[1:1] = defaults  # (later ones win)
    return passes(f"round_tiles-{change}", before, [], __doc__)


if __name__ == "__main__":
    sys.exit(main())
