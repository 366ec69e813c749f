"""Which set of TN layout twins kernel times and calls favour (no GPU: reads stored JSON).

Usage: python benchmarks/twin_sets.py TIMES.json[.gz]
       python benchmarks/twin_sets.py --calls DIR [--arms OLD NEW] [--dtype DTYPE]

TIMES is `probe_skinny.py --tiles --json` output in which each tile ran TN's copy variants
(REG_TRANSPOSE x ASYNC_CURSOR, as `gpu_session.sh kmajor-lanes` times them; its raw file
`kmajor-lanes-TN.json.gz`). For each candidate set of twins, at KMAJOR_LANES=0 (the family's
value), it prints each shape's best time over the tiles with only that set's variants, and
that time over the best with the set simt ships (`simt.LAYOUT_TWINS`): above 1, the shipped
set is the faster. REG_TRANSPOSE=4 is resolved to 2 or 3
by the tile's shape, as the kernel's preprocessor does.

--calls: DIR holds a step's bench_tuning JSON in two arms, files bench_tuning-ARM-PAIR-*:
by default `gpu_session.sh one-staged-call`'s, arm "both" (the both-staged twin,
`--both-staged-tn-twin`) and arm "one" (the shipped twins), of one or more rounds; `--arms
OLD NEW` names others (`edge-panel`: off on). For each shape and arm: the public call's least
time over the rounds (own kernels only, and auto), cuBLAS's, the fastest candidate the call's
autotuning timed and what the call ran; then each shape's own call OLD/NEW (above 1, NEW is
the faster).
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# (REG_TRANSPOSE, ASYNC_CURSOR) of each twin; the name says what TN's copies do.
TWIN_SETS = {
    "both staged + both cursors (to 2026-12-05)": ((1, 0), (0, 1)),
    "longer side staged + both cursors": ((4, 1), (0, 1)),
    "all three": ((1, 0), (4, 1), (0, 1)),
    "A staged + B staged + both cursors": ((2, 1), (3, 1), (0, 1)),
}


def _params(config: str) -> dict[str, int]:
    return {k: int(v) for k, v in re.findall(r"(\w+)=(-?\d+)", config)}


def _resolved(rt: int, p: dict[str, int]) -> int:
    if rt == 4:
        return 2 if p["BM"] >= p["BN"] else 3
    return rt


def best_by_set(shape: dict, twins: tuple[tuple[int, int], ...]) -> float | None:
    """The least time at this shape over the tiles, with only these twins' copies."""
    times = []
    for run in shape["own"]:
        p = _params(run["config"])
        if p.get("KMAJOR_LANES", 0) != 0:
            continue
        if any((_resolved(rt, p), ac) == (p["REG_TRANSPOSE"], p["ASYNC_CURSOR"])
               for rt, ac in twins):  # fmt: skip
            times.append(run["ms"])
    return min(times) if times else None


def _load(path: Path) -> dict:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        return json.load(f)


def _short(config: str) -> str:
    p = _params(config)
    keys = ("BM", "BN", "BK", "SPLIT_K", "STREAM_K", "REG_TRANSPOSE", "ASYNC_CURSOR")
    return config.split("(")[0] + " " + " ".join(f"{k}={p[k]}" for k in keys if k in p)


def calls(directory: Path, old: str = "both", new: str = "one", dtype: str = "float32") -> int:
    """Two arms of a step's bench_tuning runs side by side (see the module docstring)."""
    runs: dict[str, dict[str, list[dict]]] = {}
    for path in sorted(directory.glob("bench_tuning-*-*-*.json*")):
        arm, pair = path.name.removeprefix("bench_tuning-").split("-")[:2]
        for row in _load(path)["random"].get(dtype, {}).get("rows", []):
            shape = "x".join(map(str, row["shape"])) + " " + pair
            runs.setdefault(shape, {}).setdefault(arm, []).append(row)
    ratios = []
    for shape, arms in runs.items():
        if not {old, new} <= set(arms):
            continue
        print(f"{shape} {dtype}")
        for arm in (old, new):
            rows = arms[arm]
            fastest = min(rows, key=lambda r: r["public"])
            timed = min((t, c) for r in rows for c, t in r.get("refine_timed", {}).items())
            ran = fastest["public_choice"].split(": ", 1)[-1].split(";")[0]
            print(f"    {arm}: own {fastest['public']:.4f} auto "
                  f"{min(r['public_auto'] for r in rows):.4f} cuBLAS "
                  f"{min(r['cublas'] for r in rows):.4f}; autotuning's fastest {timed[0]:.4f} "
                  f"({_short(timed[1])}); ran {_short(ran)}")  # fmt: skip
        ratios.append(min(r["public"] for r in arms[old]) /
                      min(r["public"] for r in arms[new]))  # fmt: skip
        print(f"    own {old}/{new} x{ratios[-1]:.3f}")
    if ratios:
        print(f"{len(ratios)} shapes: own {old}/{new} geometric mean "
              f"x{math.exp(sum(map(math.log, ratios)) / len(ratios)):.3f}")  # fmt: skip
    return 0


def main() -> int:
    from tunedgemm.families import simt

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("times", type=Path, help="probe JSON, or with --calls a directory")
    parser.add_argument("--calls", action="store_true")
    parser.add_argument("--arms", nargs=2, default=("both", "one"), metavar=("OLD", "NEW"),
                        help="--calls: the two arms' tags (default: both one)")
    parser.add_argument("--dtype", default="float32", help="--calls: the rows' dtype")
    args = parser.parse_args()
    if args.calls:
        old, new = args.arms
        return calls(args.times, old, new, args.dtype)
    path = args.times
    data = _load(path)
    shipped = tuple((t["REG_TRANSPOSE"], t["ASYNC_CURSOR"])
                    for t in simt.LAYOUT_TWINS[(True, False)])  # fmt: skip
    sets = dict(TWIN_SETS)
    if shipped not in sets.values():
        sets["shipped"] = shipped
    print(f"# {path}: {data.get('device', '?')}; ms, best over the tiles (x: set / shipped)")
    logs: dict[str, list[float]] = {name: [] for name in sets}
    for shape in data["shapes"]:
        label = "x".join(map(str, shape["shape"])) + " " + shape["trans"]
        base = best_by_set(shape, shipped)
        cells = []
        for name, twins in sets.items():
            best = best_by_set(shape, twins)
            if best is None or base is None:
                cells.append(f"{name}: -")
                continue
            logs[name].append(math.log(best / base))
            cells.append(f"{name}: {best:.4f} (x{best / base:.3f})")
        print(f"{label}: cuBLAS {shape['cublas_ms']:.4f}\n    " + "\n    ".join(cells))
    for name, values in logs.items():
        if values:
            print(f"geometric mean {name} / shipped: x{math.exp(sum(values) / len(values)):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
