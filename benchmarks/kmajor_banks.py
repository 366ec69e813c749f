"""Shared-store wavefronts of simt's k-major copies by lane layout (KMAJOR_LANES), and what
ptxas makes of the KMAJOR_LANES=1 kernels. CPU only: g++ for the bank table, nvcc for --compile.

Usage: python benchmarks/kmajor_banks.py [--compile] [--out DIR]

The bank table builds tests/kmajor_lanes_check.cpp (kernels/kmajor_lanes.cuh's own geometry
functions) for every BK and block size of the family and prints, per k-major tile of BX rows,
a block's shared-store wavefronts per k-tile with KMAJOR_LANES=0 and 1 against the least the
bytes need, by the bank model that file states (no GPU measured it). --compile builds simt's
tilings that autotuning times (the default, the 4096^3 table config, the round, medium and
narrow tiles) with their loop twin in every layout, TN also with each way of copying its two
operands, with KMAJOR_LANES 0 and 1, and prints registers, spill bytes and the shared-store
instructions in the SASS (cuobjdump, where installed). Writes kmajor_banks.json to --out.
"""

from __future__ import annotations

import argparse
import collections
import itertools
import json
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

CHECK = ROOT / "tests" / "kmajor_lanes_check.cpp"
FIELDS = ("BX", "W", "PER", "GR", "covered", "walked", "old", "new", "ideal")


def bank_rows(bk: int, threads: int, workdir: Path) -> list[dict[str, int]]:
    """The host check's lines for one BK and block size, as dicts of FIELDS."""
    exe = workdir / f"check-{bk}-{threads}"
    subprocess.run(["g++", "-std=c++17", "-O1", "-Wno-unknown-pragmas", f"-I{ROOT / 'kernels'}",
                    f"-DBK={bk}", f"-DTHREADS={threads}", str(CHECK), "-o", str(exe)],
                   check=True, capture_output=True, text=True)  # fmt: skip
    out = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout
    return [dict(zip(FIELDS, map(int, line.split()), strict=True)) for line in out.splitlines()]


def bank_table(workdir: Path) -> list[dict[str, int]]:
    rows = []
    for bk, threads in itertools.product((8, 16, 32), (64, 128, 256, 512)):
        rows += [{"BK": bk, "THREADS": threads, **r} for r in bank_rows(bk, threads, workdir)]
    return rows


def tilings() -> dict[str, dict[str, int]]:
    """The tilings --compile builds: simt's default and 4096^3 table config, and the tiles
    autotuning adds, each with its loop twin."""
    from simt_variants import BASES

    from tunedgemm.families import simt

    named = {"default": BASES["default"], "4096^3 table": BASES["tuned"]}
    named.update({f"round {t['BM']}x{t['BN']}": t for t in simt.ROUND_TILES})
    named.update({f"medium {t['BM']}x{t['BN']}x{t['BK']}": t for t in simt.MEDIUM_TILES})
    named.update({f"narrow {t['BM']}x{t['BN']}": t for t in simt.NARROW_TILES})
    return {name: {**BASES["default"], **t, **simt.LOOP_TWIN} for name, t in named.items()}


# TN's ways of copying its two k-major operands: REG_TRANSPOSE with ASYNC_CURSOR.
TN_COPIES = {"both staged": (1, 0), "both 4-byte": (0, 1), "A staged": (2, 1), "B staged": (3, 1)}


def compile_one(name: str, changes: dict[str, int], trans: str, workdir: Path) -> dict:
    from helpers import compile_report

    from tunedgemm.families import FAMILIES
    from tunedgemm.launch import _defines
    from tunedgemm.params import KernelConfig

    simt = FAMILIES["simt"]
    config = KernelConfig.make("simt", changes)
    defines = _defines(config, "float32", trans[0] == "T", trans[1] == "T", True)
    where = Path(tempfile.mkdtemp(dir=workdir))
    report = compile_report(simt.source, defines, where)
    row: dict = {"tiling": name, "trans": trans,
                 **{k: changes[k] for k in ("REG_TRANSPOSE", "ASYNC_CURSOR", "KMAJOR_LANES")},
                 "registers": max(map(int, re.findall(r"Used (\d+) registers", report))),
                 "spill_bytes": sum(map(int, re.findall(r"(\d+) bytes spill stores", report))),
                 }  # fmt: skip
    if shutil.which("cuobjdump"):
        sass = subprocess.run(["cuobjdump", "-sass", str(where / "kernel.cubin")], check=True,
                              capture_output=True, text=True).stdout  # fmt: skip
        ops = collections.Counter(re.findall(r"\b(STS(?:\.\d+)?|LDGSTS[.A-Z0-9]*)\s", sass))
        row["stores"] = dict(sorted(ops.items()))
    return row


def compile_survey(workdir: Path) -> list[dict]:
    jobs = []
    for (name, base), trans in itertools.product(tilings().items(), ("NN", "NT", "TN", "TT")):
        copies = TN_COPIES.values() if trans == "TN" else [(base["REG_TRANSPOSE"], 0)]
        for (reg, cursor), lanes in itertools.product(copies, (0, 1)):
            changes = {**base, "REG_TRANSPOSE": reg, "ASYNC_CURSOR": cursor, "KMAJOR_LANES": lanes}
            jobs.append((name, changes, trans))
    with ThreadPoolExecutor(max_workers=4) as pool:
        return list(pool.map(lambda job: compile_one(*job, workdir), jobs))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compile", action="store_true", help="also build the kernels (nvcc)")
    parser.add_argument("--out", default=".")
    args = parser.parse_args()
    result: dict = {"command": " ".join(sys.argv)}
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        result["banks"] = bank_table(workdir)
        print("BK threads BX  W PER GR  wavefronts a k-tile: lanes 0 / lanes 1 / least")
        for r in result["banks"]:
            ok = "" if r["covered"] and r["walked"] else "  GEOMETRY WRONG"
            print(f"{r['BK']:2} {r['THREADS']:7} {r['BX']:3} {r['W']:2} {r['PER']:3} {r['GR']:2}"
                  f"  {r['old']:5} / {r['new']:5} / {r['ideal']:5}{ok}")  # fmt: skip
        if args.compile:
            result["compile"] = compile_survey(workdir)
            for r in result["compile"]:
                print(f"{r['tiling']:16} {r['trans']} REG_TRANSPOSE={r['REG_TRANSPOSE']} "
                      f"ASYNC_CURSOR={r['ASYNC_CURSOR']} KMAJOR_LANES={r['KMAJOR_LANES']}: "
                      f"{r['registers']} registers, {r['spill_bytes']} spill bytes, "
                      f"stores {r.get('stores', '?')}")  # fmt: skip
    Path(args.out, "kmajor_banks.json").write_text(json.dumps(result, indent=1))
    bad = [r for r in result["banks"] if not (r["covered"] and r["walked"])]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
