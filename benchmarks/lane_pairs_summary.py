"""simt configs timed with LANE_PAIRS 0 and 1 side by side, from probe_skinny --tiles JSON.

Usage: python benchmarks/lane_pairs_summary.py lane-pairs-*.json

For each shape: each config (LANE_PAIRS aside) timed both ways, its two times (ms), their
ratio (time at 0 over time at 1: above 1, paired lanes are faster), and the best of each side
against cuBLAS. gpu_session.sh lane-pairs runs it on its probes.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections import defaultdict


def params(text: str) -> dict[str, str]:
    """simt(A=1,B=2) -> {"A": "1", "B": "2"}."""
    inner = re.fullmatch(r"\w+\((.*)\)", text)
    return dict(kv.split("=") for kv in inner.group(1).split(",")) if inner else {}


def label(p: dict[str, str]) -> str:
    keys = ("BM", "BN", "BK", "TM", "TN", "SPLIT_K", "REG_TRANSPOSE", "ASYNC_CURSOR")
    return " ".join(f"{k}={p[k]}" for k in keys if k in p)


def main(paths: list[str] | None = None) -> int:
    ratios = []
    for path in sys.argv[1:] if paths is None else paths:
        with open(path) as file:
            data = json.load(file)
        print(f"# {path}: {data['device']}")
        for shape in data["shapes"]:
            pairs: dict[str, dict[str, float]] = defaultdict(dict)
            for own in shape["own"]:
                p = params(own["config"])
                side = p.pop("LANE_PAIRS", "0")
                pairs[label(p)][side] = min(own["ms"], pairs[label(p)].get(side, math.inf))
            both = {k: v for k, v in pairs.items() if "0" in v and "1" in v}
            cublas = shape["cublas_ms"]
            print(f"{'x'.join(map(str, shape['shape']))} {shape['trans']}: cuBLAS {cublas:.4f} ms")
            for name, times in sorted(both.items(), key=lambda kv: kv[1]["0"]):
                ratio = times["0"] / times["1"]
                ratios.append(ratio)
                print(f"    {times['0']:.4f} -> {times['1']:.4f}  x{ratio:.3f}  {name}")
            for side in "01":
                best = min((t[side] for t in both.values()), default=math.nan)
                print(f"    best at LANE_PAIRS={side}: {cublas / best:.3f}x cuBLAS")
    if ratios:
        mean = math.exp(sum(map(math.log, ratios)) / len(ratios))
        print(f"# {len(ratios)} pairs: geometric mean x{mean:.3f}, "
              f"range x{min(ratios):.3f}-x{max(ratios):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
