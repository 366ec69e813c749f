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
compile every family default in 16 nvcc processes of its own. Writes gpu-tests-shard-I.txt per
shard and a summary of the pass/fail/skip counts; exits 1 if any shard failed or ran out of time.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

PYTEST = [sys.executable, "-m", "pytest", "-q", "-m", "gpu", "-p", "no:cacheprovider"]


def collect(paths: list[str], skip: list[str]) -> dict[str, list[str]]:
    """Node ids of the GPU tests, by file, in collection order, less the files in skip."""
    listing = subprocess.run([*PYTEST, "--collect-only", *paths], capture_output=True,
                             text=True, check=False).stdout  # fmt: skip
    by_file: dict[str, list[str]] = defaultdict(list)
    for line in listing.splitlines():
        if "::" in line and line.split("::", 1)[0] not in skip:
            by_file[line.split("::", 1)[0]].append(line.strip())
    return by_file


def deal(by_file: dict[str, list[str]], shards: int) -> list[list[str]]:
    """Whole files where they fit an even share, runs of consecutive ids where not; largest
    first, each to the shard with the fewest tests so far."""
    total = sum(len(ids) for ids in by_file.values())
    share = -(-total // shards)
    pieces: list[list[str]] = []
    for path, ids in by_file.items():
        if len(ids) <= share:
            pieces.append([path])
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", default=["tests"])
    parser.add_argument("--shards", type=int, default=8)
    parser.add_argument("--limit", type=float, default=420.0, help="seconds for all shards")
    parser.add_argument("--out", default=".")
    parser.add_argument("--skip", action="append", default=[], help="a test file to leave out")
    args = parser.parse_args()
    out = Path(args.out)
    start = time.monotonic()
    shards = deal(collect(args.paths, args.skip), args.shards)
    print(f"collected in {time.monotonic() - start:.0f} s; {len(shards)} shards")
    running = []
    for index, items in enumerate(shards):
        env = dict(os.environ, XDG_CACHE_HOME=f"/tmp/tunedgemm-shard-cache-{index}",
                   TUNEDGEMM_TEST_PRECOMPILE="0")
        log = open(out / f"gpu-tests-shard-{index}.txt", "w")  # noqa: SIM115 (closed below)
        log.write(" ".join(items if len(items) < 20 else [*items[:3], "..."]) + "\n")
        log.flush()
        process = subprocess.Popen([*PYTEST, *items], stdout=log, stderr=subprocess.STDOUT, env=env)
        running.append((index, process, log))
    failed = False
    for index, process, log in running:
        left = max(1.0, args.limit - (time.monotonic() - start))
        try:
            code = process.wait(timeout=left)
        except subprocess.TimeoutExpired:
            process.kill()
            code = "cut by the time limit"
        log.close()
        tail = (out / f"gpu-tests-shard-{index}.txt").read_text().strip().splitlines()[-1:]
        summary = tail[0] if tail and re.search(r"passed|failed|error|skipped", tail[0]) else "-"
        failed |= code != 0
        print(f"shard {index}: exit {code}; {summary}")
    print(f"all shards: {time.monotonic() - start:.0f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
