"""The whole GPU test suite in several pytest processes at once, so that it fits one device call.

    python3 benchmarks/gpu_tests_sharded.py --shards 12 --limit 400 --out "$OUT" \
        --skip tests/gpu/test_shipped_table.py

Run one after another, the GPU tests (about 2,650) take longer than a device call may run:
most of their time is nvcc compiling kernel variants, one at a time. Here they are collected
once, grouped by file, and dealt out largest first to the shard with the fewest tests; a file
larger than an even share is cut into runs of consecutive tests (neighbours share kernels, so
each kernel is compiled in as few shards as possible). Each shard gets its own kernel cache
directory (XDG_CACHE_HOME): PyCUDA writes a cache entry in place, so one shard could otherwise
read another's half-written cubin. conftest's parallel precompile is off in the shards
(TUNEDGEMM_TEST_PRECOMPILE=0): the shards are the parallelism, and each would otherwise
compile every family default in 16 nvcc processes of its own. So are the test modules' own
(TUNEDGEMM_TEST_SHARD, helpers.precompiles_modules): a shard holding a slice of a module
would compile the whole module's kernels. Writes gpu-tests-shard-I.txt per
shard and a summary of the pass/fail/skip counts; exits 1 if any shard failed or ran out of time.

nvcc bounds it, not the GPU: on the one-H200 machine (16 cores, 2026-11-29) 12 shards ran about
1,040 tests in 420 s, and 16 shards ran fewer (the same kernels compiled in more shards at once).
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

PYTEST = [sys.executable, "-m", "pytest", "-v", "-m", "gpu", "-p", "no:cacheprovider"]
# (a parametrized id may hold spaces: "test_x[float32-interrupt in a launch-0]")
OUTCOME = re.compile(r"^(\S+::.+?) (PASSED|FAILED|SKIPPED|ERROR|XFAIL|XPASS)\b")


def collect(paths: list[str], skip: list[str]) -> dict[str, list[str]]:
    """Node ids of the GPU tests, by file, in collection order, less the files in skip."""
    listing = subprocess.run([*PYTEST, "-q", "-q", "--collect-only", *paths], capture_output=True,
                             text=True, check=False).stdout  # fmt: skip
    by_file: dict[str, list[str]] = defaultdict(list)
    for line in listing.splitlines():
        if "::" in line and line.split("::", 1)[0] not in skip:
            by_file[line.split("::", 1)[0]].append(line.strip())
    return by_file


def deal(by_file: dict[str, list[str]], shards: int,
         partial: frozenset[str] = frozenset()) -> list[list[str]]:  # fmt: skip
    """Whole files where they fit an even share, runs of consecutive ids where not (and for
    the `partial` files, of which only the ids given are to run); largest first, each to the
    shard with the fewest tests so far."""
    total = sum(len(ids) for ids in by_file.values())
    share = -(-total // shards)
    pieces: list[list[str]] = []
    for path, ids in by_file.items():
        if len(ids) <= share:
            pieces.append(ids if path in partial else [path])
            continue
        runs = -(-len(ids) // share)
        step = -(-len(ids) // runs)
        pieces += [ids[i : i + step] for i in range(0, len(ids), step)]
    weight = {path: len(ids) for path, ids in by_file.items()}
    pieces.sort(key=lambda piece: -sum(weight.get(item, 1) for item in piece))
    dealt: list[list[str]] = [[] for _ in range(shards)]
    counts = [0] * shards
    for piece in pieces:
        emptiest = counts.index(min(counts))
        dealt[emptiest] += piece
        counts[emptiest] += sum(weight.get(item, 1) for item in piece)
    return [shard for shard in dealt if shard]


def outcomes(log: Path) -> dict[str, str]:
    """Node id -> outcome (PASSED, FAILED, SKIPPED, ...) from a shard's verbose log."""
    found = {}
    for line in log.read_text(errors="replace").splitlines():
        match = OUTCOME.match(line)
        if match:
            found[match[1]] = match[2]
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", default=["tests"])
    parser.add_argument("--shards", type=int, default=8)
    parser.add_argument("--limit", type=float, default=420.0, help="seconds for all shards")
    parser.add_argument("--out", default=".")
    parser.add_argument("--skip", action="append", default=[], help="a test file to leave out")
    parser.add_argument("--after", type=Path, help="an earlier run's --out: the tests its "
                        "shard logs report are left out")  # fmt: skip
    args = parser.parse_args()
    out = Path(args.out)
    start = time.monotonic()
    earlier = sorted(args.after.glob("gpu-tests-shard-*.txt")) if args.after else []
    done = {node for log in earlier for node in outcomes(log)}
    collected = collect(args.paths, args.skip)
    by_file = {path: [node for node in ids if node not in done] for path, ids in collected.items()}
    partial = frozenset(path for path, ids in by_file.items() if len(ids) < len(collected[path]))
    shards = deal({path: ids for path, ids in by_file.items() if ids}, args.shards, partial)
    print(f"collected in {time.monotonic() - start:.0f} s; {len(done)} run before; "
          f"{sum(map(len, by_file.values()))} tests in {len(shards)} shards")  # fmt: skip
    running = []
    for index, items in enumerate(shards):
        env = dict(os.environ, XDG_CACHE_HOME=f"/tmp/tunedgemm-shard-cache-{index}",
                   TUNEDGEMM_TEST_PRECOMPILE="0", TUNEDGEMM_TEST_SHARD=str(index))  # fmt: skip
        log_path = out / f"gpu-tests-shard-{index}.txt"
        with log_path.open("w") as log:
            process = subprocess.Popen([*PYTEST, *items], stdout=log, stderr=subprocess.STDOUT,
                                       env=env)  # fmt: skip
        running.append((index, process, log_path))
    deadline = start + args.limit
    while time.monotonic() < deadline and any(p.poll() is None for _, p, _ in running):
        time.sleep(1.0)
    cut_shards = {index for index, process, _ in running if process.poll() is None}
    for index, process, _ in running:
        if index in cut_shards:
            # SIGINT: pytest stops after the test in hand and still prints its summary
            process.send_signal(signal.SIGINT)
    totals: dict[str, int] = defaultdict(int)
    for index, process, log_path in running:
        try:
            process.wait(timeout=max(1.0, deadline + 20 - time.monotonic()))
        except subprocess.TimeoutExpired:
            process.kill()
        code = "cut by the time limit" if index in cut_shards else process.returncode
        found = outcomes(log_path)
        for outcome in found.values():
            totals[outcome] += 1
        failed = [node for node, outcome in found.items() if outcome in ("FAILED", "ERROR")]
        dealt = sum(len(by_file.get(item, [item])) for item in shards[index])
        print(f"shard {index}: exit {code}; {len(found)} of {dealt} run")
        for node in failed:
            print(f"  failed: {node}")
    print(f"all shards: {time.monotonic() - start:.0f} s; " + ", ".join(
        f"{count} {outcome.lower()}" for outcome, count in sorted(totals.items()))
        + f"; {len(cut_shards)} shards cut")  # fmt: skip
    return 1 if cut_shards or totals["FAILED"] or totals["ERROR"] else 0


if __name__ == "__main__":
    sys.exit(main())
