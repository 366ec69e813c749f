"""Per-kernel SASS summaries from the ncu step's per-instruction CSVs (ncu-*-sass-N.csv).

    python benchmarks/ncu_sass_mix.py ncu-dmma-sass-0.csv ncu-dmma-sass-1.csv ncu-dmma-sass-2.csv

Prints, a column per file: each opcode's warp instructions executed (millions) and its share
of the warp-state samples; then, per warp, the instructions grouped by how many times each
ran (the kernel's first instruction runs once a warp, so its count is the warps launched):
a k loop's body shows as its instructions times the k-tiles, the set-up and epilogue as the
instructions that ran once. At 8192x8192x128 float64 that split showed our 64 x 128 kernel
running 1569 instructions once a warp against cuBLAS's 638 (2026-11-28).

    python benchmarks/ncu_sass_mix.py --stalls 8000 ncu-dmma-sass-3.csv ncu-dmma-sass-4.csv

prints instead, per file, each instruction with at least that many warp-state samples and its
chief stall reasons, then the share of every reason over the kernel: at 8192^3 float64 that
put our loop's extra stalls on its copy block and the barrier (2026-11-28)."""

from __future__ import annotations

import argparse
import collections
import csv
import sys

TOP_OPCODES = 32


def _rows(path: str) -> tuple[list[str], list[list[str]]]:
    """The header and the instruction rows of the file's first function: a cuBLAS kernel's
    source page can list a second function after it, header and all (ncu on the H200,
    2026-12-03)."""
    with open(path, newline="") as file:
        rows = list(csv.reader(file))
    head = next(i for i, r in enumerate(rows) if "Instructions Executed" in r)
    end = next((i for i in range(head + 1, len(rows)) if rows[i][:1] == ["Kernel Name"]),
               len(rows))  # fmt: skip
    return rows[head], rows[head + 1 : end]


def read(path: str) -> list[tuple[str, int, int]]:
    """(opcode, instructions executed, samples) of each SASS instruction in the file."""
    names, body = _rows(path)
    executed, source = names.index("Instructions Executed"), names.index("Source")
    samples = names.index("Warp Stall Sampling (All Samples)")
    found = []
    for r in body:
        if len(r) <= max(executed, samples):
            continue
        words = [w for w in r[source].split() if not w.startswith("@")]
        opcode = words[0].split(".")[0] if words else "?"
        found.append((opcode, int(r[executed].replace(",", "") or 0),
                      int(r[samples].replace(",", "") or 0)))  # fmt: skip
    return found


def print_stalls(path: str, least: int) -> None:
    """The instructions of one kernel with at least `least` samples, their chief stall reasons
    (each over a tenth of the instruction's samples), then each reason's share of the kernel."""
    names, body = _rows(path)
    executed, source = names.index("Instructions Executed"), names.index("Source")
    reasons = [i for i, name in enumerate(names)
               if name.startswith("stall_") and "Not Issued" not in name]  # fmt: skip
    warps, totals = 0, collections.Counter[str]()
    print(f"{path}: instructions with {least}+ samples (runs a warp, samples, chief reasons)")
    for r in body:
        if len(r) <= max(reasons):
            continue
        runs = int(r[executed].replace(",", "") or 0)
        warps = warps or runs
        stalls = {names[i][len("stall_"):]: int(r[i].replace(",", "") or 0) for i in reasons}
        totals.update(stalls)
        sampled = sum(stalls.values())
        if sampled >= least:
            chief = sorted(((v, k) for k, v in stalls.items() if v > sampled / 10), reverse=True)
            print(f"{runs / max(warps, 1):7.0f} {sampled:8d}  {r[source].strip()[:46]:46s} " +
                  " ".join(f"{k} {v}" for v, k in chief))  # fmt: skip
    whole = sum(totals.values()) or 1
    print("  share of samples: " + ", ".join(
        f"{k} {v / whole:.3f}" for k, v in totals.most_common() if v / whole >= 0.005))  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("csv", nargs="+", help="ncu --page source --csv --print-source sass")
    parser.add_argument("--stalls", type=int, metavar="SAMPLES",
                        help="instructions with this many samples, and their stall reasons")
    args = parser.parse_args()
    if args.stalls is not None:
        for path in args.csv:
            print_stalls(path, args.stalls)
        return 0
    kernels = [read(path) for path in args.csv]
    mixes = []
    for instructions in kernels:
        counts, samples = collections.Counter[str](), collections.Counter[str]()
        for opcode, executed, sampled in instructions:
            counts[opcode] += executed
            samples[opcode] += sampled
        mixes.append((counts, samples, sum(samples.values()) or 1))
    opcodes = sorted(set().union(*(c for c, _, _ in mixes)),
                     key=lambda o: -max(c[o] for c, _, _ in mixes))  # fmt: skip
    print("opcode    " + "".join(f"{'inst(M)':>9} {'smp%':>5}" for _ in mixes))
    for opcode in opcodes[:TOP_OPCODES]:
        print(f"{opcode:10s}" + "".join(f"{c[opcode] / 1e6:9.2f} {100 * s[opcode] / t:5.1f}"
                                        for c, s, t in mixes))  # fmt: skip
    print("total     " + "".join(f"{sum(c.values()) / 1e6:9.2f}      " for c, _, _ in mixes))
    print("\nper warp: instructions x the times each ran")
    for path, instructions in zip(args.csv, kernels, strict=True):
        warps = next((executed for _, executed, _ in instructions if executed), 0)
        runs = collections.Counter(executed for _, executed, _ in instructions if executed)
        groups = sorted(runs.items(), key=lambda item: -item[0] * item[1])
        print(f"{path}: {warps} warps; " + ", ".join(
            f"{count} x {executed / warps:g}" for executed, count in groups))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
