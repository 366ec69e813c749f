"""What dmma's unpadded shared-memory ring (RING_PAD=0) and the stage it makes room for change
at the launch level, beside cuBLAS, at float64's long-k shapes over few tiles and the squares.

    python benchmarks/probe_ring_pad.py [--shapes MxNxK,...] [--trans NN,TN] [--out DIR]
    python benchmarks/probe_ring_pad.py --public [--passes 2] [--own-only] [--shapes ...]

For each shape and transpose pair, autotuning's own timing (autotune.time_candidates: cuBLAS
and the candidates in turn, three rounds, into scratch memory, operands padded to 16-byte
leading dimensions) of each tile as recorded (padded rows), unpadded at its stages, and
unpadded with one and two stages more, each at its best k-split of SPLITS (each slice keeping
two k-tiles; unsplit at the squares); a variant the family's rules forbid (its register
estimate aside: launch bounds keep it launchable) is left out. Prints cuBLAS ms / ours and
the split per variant; writes probe_ring_pad.json.

--public: through the public dgemm call instead, probe_host_ties.py's passes (PyCUDA
GPUArrays into c, fresh plans each pass, against cuBLAS into c through scikit-cuda), with
"before" the padded ring everywhere (the medium tiles padded, no unpadded twin) and "after" as
now; writes probe_ring_pad-<own|auto>.json.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from tunedgemm.families import dmma

# float64's shapes that the medium tiles left below cuBLAS (docs/tuning.md, 2026-11-29) and two
# squares, where only the large tiles are timed.
SHAPES = (
    "1952x307x6314,1626x342x9572,6904x698x3920,8016x268x3704,700x2460x2744,"
    "15526x179x4272,3178x4043x2654,4096x4096x4096"
)
SPLITS = (1, 2, 3, 4, 6)
TILES = {
    "64x64 medium": dmma.MEDIUM_TILES[0],
    "64x32 medium": dmma.MEDIUM_TILES[1],
    "64x32 BK32 k16": {**dmma.MEDIUM_TILES[1], "BK": 32, "MMA_K": 16, "STAGES": 3},
    "128x64 two-block": dmma.ROUND_TILES[1],
    "128x128 default": {"ADVANCE": 1},
}
LARGE = ("128x64 two-block", "128x128 default")  # the tiles timed at the squares
VARIANTS = {
    "padded": {"RING_PAD": 1},  # (the medium tiles run unpadded as declared)
    "unpadded": {"RING_PAD": 0},
    "+1 stage": {"RING_PAD": 0, "STAGES": 1},
    "+2 stages": {"RING_PAD": 0, "STAGES": 2},
}


def variant(tile: dict[str, int], changes: dict[str, int]) -> dict[str, int]:
    """The tile with a variant's changes (STAGES: stages added)."""
    from tunedgemm.families import FAMILIES

    params = {**FAMILIES["dmma"].default_config("float64").as_dict(), **tile}
    return {**params, **changes, "STAGES": params["STAGES"] + changes.get("STAGES", 0)}


def allowed(params: dict[str, int]) -> bool:
    from tunedgemm.families import FAMILIES
    from tunedgemm.params import KernelConfig

    broken = FAMILIES["dmma"].violations(KernelConfig.make("dmma", params), "float64")
    return all("registers" in text for text in broken)


def grid(
    names: tuple[str, ...], k: int, splits: tuple[int, ...] = SPLITS
) -> list[tuple[str, str, Any]]:
    """(tile, variant, config) at each split the tile's k-tiles allow."""
    from tunedgemm.params import KernelConfig

    found = []
    for name in names:
        for label, changes in VARIANTS.items():
            params = variant(TILES[name], changes)
            k_tiles = -(-k // params["BK"])
            for split in splits:
                p = {**params, "SPLIT_K": split}
                if (split == 1 or 2 * split <= k_tiles) and allowed(p):
                    found.append((name, label, KernelConfig.make("dmma", p)))
    return found


def padded_family() -> Any:
    """dmma as it was before the unpadded ring: its medium tiles padded, no RING_TWIN."""
    import dataclasses

    from tunedgemm.families import FAMILIES

    family = FAMILIES["dmma"]
    return dataclasses.replace(
        family,
        medium_tiles=tuple({**t, "RING_PAD": 1} for t in family.medium_tiles),
        twins=tuple(t for t in family.twins if t != dmma.RING_TWIN),
    )


# The public call's shapes: probe_medium_tiles.py's, two more of SHAPES, and two squares.
PUBLIC_SHAPES = (
    "6904x698x3920,8016x268x3704,1952x307x6314,3556x131x436,700x2460x2744,"
    "1626x342x9572,1473x140x7081,600x508x2782,962x302x1607,5742x893x364,3072x96x3072,"
    "96x6000x2000,3178x4043x2654,15526x179x4272,2048x2048x2048,4096x4096x4096"
)


def public() -> int:
    """--public: probe_host_ties.py's passes, before (padded_family) and after (as now)."""
    from probe_host_ties import main as passes

    sys.argv.remove("--public")
    sys.argv[1:1] = ["--dtype", "float64", "--shapes", PUBLIC_SHAPES]  # (later ones win)
    return passes("ring_pad", {"families.FAMILIES[dmma]": padded_family()}, [], __doc__)


def main() -> int:
    if "--public" in sys.argv:
        return public()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default=SHAPES)
    parser.add_argument("--trans", default="NN", help="transpose pairs, as NN,TN")
    parser.add_argument("--out", default=".")
    args = parser.parse_args()
    import numpy as np

    from tunedgemm import autotune, cuda, table
    from tunedgemm.tuning import problems

    cuda.context()
    dtype = np.dtype(np.float64)
    print(
        f"# {cuda.device_name()}, {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC; "
        "float64, padded operands; cuBLAS ms / ours (best split)",
        flush=True,
    )
    print(
        f"{'shape':>16} {'op':>2} {'cuBLAS ms':>9} {'tile':>17} | "
        + " | ".join(f"{v:>12}" for v in VARIANTS),
        flush=True,
    )
    rows = []
    for text in args.shapes.split(","):
        m, n, k = (int(v) for v in text.split("x"))
        large = min(m, n) >= 4096  # (unsplit)
        names = LARGE if large else tuple(TILES)
        for trans in args.trans.split(","):
            ta, tb = trans[0] == "T", trans[1] == "T"
            form = problems.make(m, n, k, dtype, ta, tb, padded=True).form
            found = grid(names, k, (1,) if large else SPLITS)
            ms = autotune.time_candidates(form, dtype, (table.CUBLAS, *(c for *_, c in found)))
            cublas = float(ms[0])
            for name in names:
                cells, best = [], {}
                for label in VARIANTS:
                    times = [(float(t), c) for (tn, tl, c), t in zip(found, ms[1:], strict=True)
                             if tn == name and tl == label]  # fmt: skip
                    if not times:
                        cells.append(f"{'-':>12}")
                        continue
                    t, c = min(times, key=lambda x: x[0])
                    best[label] = {"ms": t, "config": str(c)}
                    cells.append(f"{cublas / t:5.2f} split {c.as_dict()['SPLIT_K']}")
                print(
                    f"{text:>16} {trans:>2} {cublas:9.4f} {name:>17} | " + " | ".join(cells),
                    flush=True,
                )
                rows.append({"shape": [m, n, k], "trans": trans, "cublas_ms": cublas,
                             "tile": name, "variants": best})  # fmt: skip
            (Path(args.out) / "probe_ring_pad.json").write_text(
                json.dumps({"device": cuda.device_name(), "rows": rows}, indent=1)
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
