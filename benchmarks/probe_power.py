"""SM clock and power while our call or cuBLAS runs alone, back to back, at each shape.

Usage: TUNEDGEMM_CUBLAS=0 python benchmarks/probe_power.py --dtype float64 \
           --shapes 1626x342x9572,8192x8192x8192 [--seconds 1.5] [--out DIR]

Under the H200's 700 W cap a launch's clock follows the power drawn before it. A kernel that
issues more instructions per flop draws more power and runs at a lower clock. In turn with
cuBLAS, both sides run at the same clock, so the difference does not show. This runs each
side alone for `seconds` (the public call into c on PyCUDA GPUArrays, then cuBLAS into c
through scikit-cuda, then ours again), timing each call with CUDA events. Meanwhile
nvidia-smi samples the SM clock and power every 50 ms. It prints, per side and shape, the
median ms a call, and the median SM clock and power of the samples taken while that side
ran. Results go to OUT/probe_power.json.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_device import cublas_into

QUERY = "timestamp,clocks.sm,power.draw,clocks_throttle_reasons.active"


def run_alone(work: Any, seconds: float) -> tuple[float, float, float]:
    """(median ms a call, wall start, wall end) of `work` called back to back for `seconds`."""
    import pycuda.driver as drv

    for _ in range(3):
        work()
    drv.Context.synchronize()
    start = time.time()
    times: list[float] = []
    while time.time() - start < seconds:
        begin, end = drv.Event(), drv.Event()
        begin.record()
        work()
        end.record()
        end.synchronize()
        times.append(end.time_since(begin))
    return float(np.median(times)), start, time.time()


def in_window(samples: list[dict[str, float]], start: float, end: float,
              field: str) -> float:  # fmt: skip
    """Median of `field` over the nvidia-smi samples taken between start and end (wall s)."""
    values = [s[field] for s in samples if start <= s["t"] <= end]
    return float(np.median(values)) if values else float("nan")


@contextlib.contextmanager
def smi_sampling(path: Path, query: str, interval_ms: int) -> Iterator[None]:
    """nvidia-smi writing `query` (timestamp first) to `path` every `interval_ms` meanwhile."""
    with open(path, "w") as log:
        command = ["nvidia-smi", f"--query-gpu={query}", "--format=csv", "-lms", str(interval_ms)]
        smi = subprocess.Popen(command, stdout=log, stderr=subprocess.DEVNULL)
        try:
            yield
        finally:
            smi.terminate()
            smi.wait()


def read_samples(path: Path) -> list[dict[str, float]]:
    """nvidia-smi's CSV as {t: wall seconds, clock: MHz, power: W} rows."""
    rows = []
    with open(path) as f:
        for row in csv.reader(f):
            if len(row) < 3 or row[0].startswith("timestamp"):
                continue
            stamp = time.mktime(time.strptime(row[0].strip()[:19], "%Y/%m/%d %H:%M:%S"))
            fraction = float("0." + row[0].strip()[20:]) if len(row[0].strip()) > 20 else 0.0
            rows.append({"t": stamp + fraction, "clock": float(row[1].split()[0]),
                         "power": float(row[2].split()[0])})  # fmt: skip
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dtype", default="float64", choices=("float32", "float64"))
    parser.add_argument("--shapes", default="1626x342x9572,8192x8192x8192")
    parser.add_argument("--seconds", type=float, default=1.5)
    parser.add_argument("--out", default="benchmarks/results")
    args = parser.parse_args()

    from tunedgemm import cuda, dgemm, sgemm

    ok, why = cuda.status()
    if not ok:
        print(f"probe_power: needs a GPU ({why})")
        return 1
    import pycuda.gpuarray as gpuarray

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    dtype = np.dtype(args.dtype)
    routine = dgemm if dtype == np.float64 else sgemm
    rng = np.random.default_rng()
    smi_path = out / "probe_power-smi.csv"
    phases: list[dict[str, Any]] = []
    with smi_sampling(smi_path, QUERY, 50):
        time.sleep(0.5)
        for text in args.shapes.split(","):
            m, n, k = (int(x) for x in text.split("x"))

            def operand(rows: int, cols: int) -> Any:
                values = rng.standard_normal((rows, cols)).astype(dtype)
                return gpuarray.to_gpu(np.asfortranarray(values))

            a, b = operand(m, k), operand(k, n)
            c, c_peer = operand(m, n), operand(m, n)
            sides = {"ours": lambda a=a, b=b, c=c: routine(1.0, a, b, c=c, overwrite_c=1),
                     "cuBLAS": cublas_into(c_peer, a, b, dtype)}  # fmt: skip
            for name in ("ours", "cuBLAS", "ours"):
                ms, start, end = run_alone(sides[name], args.seconds)
                phases.append({"shape": [m, n, k], "side": name, "ms": ms,
                               "start": start, "end": end})  # fmt: skip
    samples = read_samples(smi_path)
    print(f"# {cuda.device().name()}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
          f"{args.dtype}, each side alone for {args.seconds} s")  # fmt: skip
    print(f"{'shape':>18} {'side':>7} {'ms':>9} {'MHz':>6} {'W':>6} {'TFLOP/s':>8}")
    for p in phases:
        # The first 0.3 s of a phase carries the clock the phase before it left.
        p["clock"] = in_window(samples, p["start"] + 0.3, p["end"], "clock")
        p["power"] = in_window(samples, p["start"] + 0.3, p["end"], "power")
        m, n, k = p["shape"]
        tflops = 2 * m * n * k / p["ms"] / 1e9
        print(f"{'x'.join(map(str, p['shape'])):>18} {p['side']:>7} {p['ms']:9.4f} "
              f"{p['clock']:6.0f} {p['power']:6.0f} {tflops:8.1f}")  # fmt: skip
    (out / "probe_power.json").write_text(json.dumps(
        {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
         "device": cuda.device().name(), "command": " ".join(sys.argv), "phases": phases},
        indent=1))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
