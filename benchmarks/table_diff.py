"""Shipped tuning table against an older commit's: own-chosen entries, geomean cuBLAS/own."""

from __future__ import annotations

import argparse
import json
import math
import subprocess
from pathlib import Path

TABLE = "tunedgemm/tables/tuned.json"


def entries(table: dict) -> dict[str, list[dict]]:
    """The first device's entries by key ("float64/NN", ...)."""
    return table["devices"][0]["entries"]


def own_count(rows: list[dict]) -> int:
    return sum(1 for row in rows if row["choice"] != "cublas")


def geomean_cublas_over_own(rows: list[dict]) -> float:
    # Each entry's best own time against cuBLAS timed in the same tuning run.
    return math.exp(sum(math.log(row["cublas_ms"] / row["own_ms"]) for row in rows) / len(rows))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("old", help="git revision whose table is the baseline, e.g. HEAD~1")
    parser.add_argument("--prefix", default="", help="only keys starting with this, e.g. float64/")
    args = parser.parse_args()
    old = entries(json.loads(subprocess.check_output(["git", "show", f"{args.old}:{TABLE}"])))
    new = entries(json.loads(Path(TABLE).read_text()))
    print(f"table {TABLE} against {args.old}")
    columns = ("entries", "own old", "own new", "changed", "gm old", "gm new")
    print(f"{'key':24s} " + " ".join(f"{c:>7s}" for c in columns))
    for key, rows in new.items():
        if not key.startswith(args.prefix) or key not in old:
            continue
        before = {(r["m"], r["n"], r["k"]): r for r in old[key]}
        changed = sum(1 for r in rows if before.get((r["m"], r["n"], r["k"])) != r)
        print(
            f"{key:24s} {len(rows):7d} {own_count(old[key]):7d} {own_count(rows):7d} {changed:7d} "
            f"{geomean_cublas_over_own(old[key]):7.3f} {geomean_cublas_over_own(rows):7.3f}"
        )


if __name__ == "__main__":
    main()
