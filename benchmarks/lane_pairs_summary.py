"""simt configs timed with LANE_PAIRS (or another 0/1 tunable) 0 and 1 side by side, from
probe_skinny --tiles JSON or from bench_tuning JSON (what the call's autotuning timed at each
shape).

Usage: python benchmarks/lane_pairs_summary.py [--tunable KMAJOR_LANES] lane-pairs-*.json ...

For each shape: each config (LANE_PAIRS aside) timed both ways, its two times (ms), their
ratio (time at 0 over time at 1: above 1, the tunable at 1 is faster), and the best of each
side against cuBLAS; for bench_tuning's, also the call's choice. gpu_session.sh lane-pairs,
wide-pairs-call and kmajor-lanes run it on theirs.
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
    keys = ("BM", "BN", "BK", "TM", "TN", "SPLIT_K", "REG_TRANSPOSE", "ASYNC_CURSOR",
            "LANE_PAIRS", "KMAJOR_LANES")
    return " ".join(f"{k}={p[k]}" for k in keys if k in p)


def shapes(data: dict, tunable: str) -> list[tuple[str, list[tuple[str, float]], float, str]]:
    """Per shape of a probe_skinny or bench_tuning file: its name, the (config, ms) timed,
    cuBLAS's ms, and what the call chose (bench_tuning's; else empty)."""
    if "shapes" in data:  # probe_skinny --tiles
        return [(f"{'x'.join(map(str, s['shape']))} {s['trans']}",
                 [(own["config"], own["ms"]) for own in s["own"]], s["cublas_ms"], "")
                for s in data["shapes"]]  # fmt: skip
    found = []
    for dtype in data["random"].values():
        for row in dtype["rows"]:
            # "float32 MxNxK precision=...: CONFIG; CONFIG: why; table: ..." -> the first CONFIG
            chosen = row.get("public_choice", "").split(": ", 1)[-1].split(";")[0]
            chosen_p = params(chosen)
            short = label(chosen_p) + f" {tunable}={chosen_p.get(tunable, '-')}" \
                if chosen_p else chosen
            found.append((f"{'x'.join(map(str, row['shape']))} {data['trans']}",
                          list(row.get("refine_timed", {}).items()), row["cublas"],
                          f"; the call ran {short}"))  # fmt: skip
    return found


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    tunable = "LANE_PAIRS"
    if args[:1] == ["--tunable"]:
        tunable, args = args[1], args[2:]
    ratios = []
    for path in args:
        with open(path) as file:
            data = json.load(file)
        print(f"# {path}: {data['device']}")
        for name, timed, cublas, choice in shapes(data, tunable):
            pairs: dict[str, dict[str, float]] = defaultdict(dict)
            for config, ms in timed:
                p = params(config)
                side = p.pop(tunable, "0")
                pairs[label(p)][side] = min(ms, pairs[label(p)].get(side, math.inf))
            both = {k: v for k, v in pairs.items() if "0" in v and "1" in v}
            print(f"{name}: cuBLAS {cublas:.4f} ms{choice}")
            for name, times in sorted(both.items(), key=lambda kv: kv[1]["0"]):
                ratio = times["0"] / times["1"]
                ratios.append(ratio)
                print(f"    {times['0']:.4f} -> {times['1']:.4f}  x{ratio:.3f}  {name}")
            for side in "01":
                best = min((t[side] for t in both.values()), default=math.nan)
                print(f"    best at {tunable}={side}: {cublas / best:.3f}x cuBLAS")
    if ratios:
        mean = math.exp(sum(map(math.log, ratios)) / len(ratios))
        print(f"# {len(ratios)} pairs: geometric mean x{mean:.3f}, "
              f"range x{min(ratios):.3f}-x{max(ratios):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
