"""compute-sanitizer over every config of the shipped table, on odd, unaligned and tiny shapes.

    python benchmarks/sanitize.py                      # memcheck, racecheck, initcheck
    python benchmarks/sanitize.py --tools memcheck --max-configs 10

Compiles every variant first (in parallel, outside the sanitizer), then runs this script as a
child under `compute-sanitizer --tool T` for each tool. The child launches each own config
the shipped table can choose (tests/conftest.py's table_configs: each entry's winner and
runners-up, split-K ones among them) in all four transposes on an odd shape whose pointers
are one element past 16-byte alignment with odd leading dimensions, on a tiny 1x1x1 call, and
once on an aligned shape (the vectorised variant); then a batched host matmul through the
GPU pipeline. Every launch is also checked against a NumPy reference. Prints errors per tool
and exits 1 on any error (or any wrong result). About 5 minutes on an H100.
"""

from __future__ import annotations

import argparse
import itertools
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

SANITIZER = "/usr/local/cuda/bin/compute-sanitizer"
TOOLS = ("memcheck", "racecheck", "initcheck")
ODD = {False: (37, 45, 67), True: (33, 29, 517)}  # (m, n, k) without and with split-K
TINY, ALIGNED = (1, 1, 1), (64, 64, 64)


def table_configs(limit: int | None) -> list[tuple[str, object]]:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from conftest import table_configs as configs

    found = configs()
    return found[:limit] if limit else found


def _device_matrix(rows: int, cols: int, dtype: np.dtype, offset: int, pad: int, rng):
    """A column-major (rows, cols) device matrix with leading dimension rows + pad, starting
    `offset` elements into its allocation, filled with random values (initcheck: no byte the
    kernel may read is left unwritten); returns (DeviceMatrix, host copy, allocation)."""
    import pycuda.driver as drv

    from tunedgemm._layout import DeviceMatrix

    ld = rows + pad
    host = np.asfortranarray(rng.uniform(-1, 1, (ld, cols + 1)).astype(dtype))
    allocation = drv.mem_alloc(max(host.nbytes, 1))
    drv.memcpy_htod(allocation, host)
    ptr = int(allocation) + offset * dtype.itemsize
    view = host.ravel(order="F")[offset:offset + ld * cols].reshape((ld, cols), order="F")
    return DeviceMatrix(ptr, (rows, cols), (1, ld), dtype, allocation), view[:rows], allocation


def _launch(config, dtype: np.dtype, shape, trans, aligned: bool, rng) -> str | None:
    """One launch of config; a description of a wrong result, or None."""
    import pycuda.driver as drv

    from tunedgemm import launch
    from tunedgemm._layout import blas_form

    m, n, k = shape
    offset, pad = (0, (-m) % (16 // dtype.itemsize) or 0) if aligned else (1, 1)
    shape_a = (k, m) if trans[0] else (m, k)
    shape_b = (n, k) if trans[1] else (k, n)
    a, host_a, keep_a = _device_matrix(*shape_a, dtype, offset, pad, rng)
    b, host_b, keep_b = _device_matrix(*shape_b, dtype, offset, pad, rng)
    c, host_c, keep_c = _device_matrix(m, n, dtype, offset, pad, rng)
    op_a, op_b = (a.T if trans[0] else a), (b.T if trans[1] else b)
    form = blas_form(op_a, op_b, c)
    assert form.aligned() == aligned, (form, aligned)
    launch.gemm(form, dtype, 0.75, 0.5, config)
    drv.Context.synchronize()
    out = np.empty((c.strides[1], n + 1), dtype, order="F")
    drv.memcpy_dtoh(out, keep_c)
    got = out.ravel(order="F")[offset:offset + c.strides[1] * n].reshape(
        (c.strides[1], n), order="F")[:m]  # fmt: skip
    want = 0.75 * ((host_a.T if trans[0] else host_a).astype(np.float64)
                   @ (host_b.T if trans[1] else host_b)) + 0.5 * host_c  # fmt: skip
    tol = 1e-3 if dtype == np.float32 else 1e-11
    if not np.allclose(got, want, rtol=tol, atol=tol * np.sqrt(k)):
        return f"{config} {dtype} {shape} trans={trans}: wrong result"
    del keep_a, keep_b
    return None


def child(limit: int | None) -> int:
    """Launch everything (under the sanitizer); 1 if any result was wrong."""
    import tunedgemm
    from tunedgemm import cuda

    cuda.context()
    rng = np.random.default_rng(11)
    wrong, launches = [], 0
    for dtype_name, config in table_configs(limit):
        dtype = np.dtype(dtype_name)
        split = config.as_dict().get("SPLIT_K", 1) > 1
        for trans in itertools.product((False, True), repeat=2):
            wrong.append(_launch(config, dtype, ODD[split], trans, False, rng))
            launches += 1
        wrong.append(_launch(config, dtype, TINY, (False, False), False, rng))
        wrong.append(_launch(config, dtype, ALIGNED, (False, True), True, rng))
        launches += 2
    os.environ["TUNEDGEMM_BACKEND"] = "gpu"
    batch_a, batch_b = rng.uniform(-1, 1, (3, 37, 45)), rng.uniform(-1, 1, (3, 45, 29))
    if not np.allclose(tunedgemm.matmul(batch_a, batch_b), batch_a @ batch_b, rtol=1e-10):
        wrong.append("batched matmul: wrong result")
    failures = [w for w in wrong if w]
    print(f"child: {launches} launches and one batched matmul, {len(failures)} wrong results")
    for failure in failures[:20]:
        print(f"  {failure}")
    return 1 if failures else 0


def precompile(limit: int | None) -> None:
    from tunedgemm.compiler import precompile as compile_all

    by_dtype: dict[str, list] = {}
    for dtype, config in table_configs(limit):
        by_dtype.setdefault(dtype, []).append(config)
    for dtype, configs in by_dtype.items():
        for ta, tb, aligned in itertools.product((False, True), repeat=3):
            compile_all(configs, dtype, ta, tb, aligned, jobs=os.cpu_count() or 8)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tools", nargs="+", choices=TOOLS, default=list(TOOLS))
    parser.add_argument("--max-configs", type=int, help="the first N table configs only")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args.max_configs)
    began = time.perf_counter()
    precompile(args.max_configs)
    print(f"compiled in {time.perf_counter() - began:.0f} s", flush=True)
    rows = []
    for tool in args.tools:
        start = time.perf_counter()
        command = [SANITIZER, "--tool", tool, "--print-limit", "20", sys.executable, __file__,
                   "--child", *(["--max-configs", str(args.max_configs)]
                                if args.max_configs else [])]  # fmt: skip
        if tool == "racecheck":
            command[3:3] = ["--racecheck-report", "all"]
        done = subprocess.run(command, capture_output=True, text=True)
        text = done.stdout + done.stderr
        # racecheck sums up as "RACECHECK SUMMARY: N hazards displayed (E errors, W warnings)"
        found = re.search(r"ERROR SUMMARY: (\d+) error", text) or \
            re.search(r"RACECHECK SUMMARY: \d+ hazards? displayed \((\d+) error", text)
        errors = int(found.group(1)) if found else -1  # -1: no summary (the run failed)
        hazards = re.search(r"RACECHECK SUMMARY: (\d+) hazard", text)
        wrong = re.search(r"child: .*?(\d+) wrong results", text)
        rows.append((tool, errors, int(hazards.group(1)) if hazards else 0,
                     int(wrong.group(1)) if wrong else -1, done.returncode,
                     time.perf_counter() - start))  # fmt: skip
        if errors != 0 or done.returncode != 0:
            print(text[-6000:])
        print(f"{tool}: errors {errors}, exit {done.returncode}, "
              f"{time.perf_counter() - start:.0f} s", flush=True)  # a time limit keeps these
    print(f"{'tool':10} {'errors':>7} {'hazards':>8} {'wrong':>6} {'exit':>5} {'s':>6}")
    for tool, errors, hazards, wrong, code, seconds in rows:
        print(f"{tool:10} {errors:7d} {hazards:8d} {wrong:6d} {code:5d} {seconds:6.0f}")
    print(f"total {time.perf_counter() - began:.0f} s")
    bad = any(e != 0 or h != 0 or w != 0 or c != 0 for _, e, h, w, c, _ in rows)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
