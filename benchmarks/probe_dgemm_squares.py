"""What autotuning times and picks for own float64 kernels at large squares, pass after pass.

Usage: TUNEDGEMM_CUBLAS=0 python benchmarks/probe_dgemm_squares.py [--passes 3] [--out DIR]

Issue 15's DGEMM floor (0.95x cuBLAS at 4096^3 and 8192^3 through the public call) was met
or missed by which candidate autotuning kept: at 8192^3 (H100, 2026-11-26) dmma's ADVANCE=1
twin of the 128 x 128 config ran at 20.3-20.7 ms where it was kept and the config itself at
22.4-22.6 where that was. For each shape this forgets every plan and autotuning result and
calls dgemm(1.0, a, b, c=c) on PyCUDA GPUArrays `passes` times, printing each pass's timed
candidates (median ms), the confirmation round and the pick, then times the pick in a run
of calls beside cuBLAS into c; nvidia-smi samples SM clock, power and throttle reasons every
100 ms into OUT/probe_dgemm_squares-smi.csv meanwhile.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_device import cublas_into

SHAPES = [(8192, 8192, 8192), (4096, 4096, 4096)]


def short(config: str) -> str:
    """The fields of a dmma config's string that tell its candidates apart."""
    if "(" not in config:
        return config
    fields = dict(f.split("=") for f in config[config.index("(") + 1 : -1].split(","))
    keys = ("BM", "BN", "WM", "WN", "BK", "MMA_K", "STAGES", "MIN_BLOCKS", "SPLIT_K", "ADVANCE")
    return " ".join(f"{k}{fields[k]}" for k in keys if k in fields)


def probe_shape(shape: tuple[int, int, int], passes: int) -> list[dict[str, Any]]:
    """Each pass: autotuning from scratch at the shape, then the pick against cuBLAS."""
    import pycuda.gpuarray as gpuarray

    from tunedgemm import autotune, cuda, dgemm, plans
    from tunedgemm.timing import samples

    m, n, k = shape
    rng = np.random.default_rng()

    def operand(rows: int, cols: int, fill: Any = None) -> Any:
        host = rng.standard_normal((rows, cols)) if fill is None else np.full((rows, cols), fill)
        return gpuarray.to_gpu(np.asfortranarray(host))

    a, b, c, c_peer = operand(m, k), operand(k, n), operand(m, n, np.nan), operand(m, n, np.nan)
    peer = cublas_into(c_peer, a, b, np.dtype(np.float64))

    def ours() -> None:
        dgemm(1.0, a, b, c=c, overwrite_c=1)

    rows = []
    for p in range(passes):
        autotune.clear()
        plans.clear()
        t0 = time.time()
        ours()
        cuda.context().synchronize()
        rec = autotune.history()[-1]
        stamp = time.strftime("%H:%M:%S")
        print(f"{m}x{n}x{k} pass {p} ({time.time() - t0:.1f} s, {stamp} UTC)")
        for cand, ms in sorted(zip(rec["candidates"], rec["ms"], strict=True), key=lambda x: x[1]):
            print(f"   {ms:8.3f} ms  {short(cand)}")
        print(f"   confirm {rec['confirm']}  chosen {short(rec['chosen'])}")
        ours_ms: list[float] = []
        peer_ms: list[float] = []
        for _ in range(3):  # interleaved, so that clocks drift alike for both
            ours_ms += samples(ours, 1, 3, None)[0]
            peer_ms += samples(peer, 1, 3, None)[0]
        o, q = float(np.median(ours_ms)), float(np.median(peer_ms))
        print(f"   run of calls: ours {o:.3f} ms, cuBLAS {q:.3f} ms, ratio {q / o:.3f}", flush=True)
        rows.append({"shape": list(shape), "pass": p, "history": rec, "ours_ms": o,
                     "cublas_ms": q, "ratio": q / o})  # fmt: skip
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--out", default="benchmarks/results")
    args = parser.parse_args()

    from tunedgemm import cuda

    ok, why = cuda.status()
    if not ok:
        print(f"probe_dgemm_squares: needs a GPU ({why})")
        return 1
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    query = "timestamp,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active"
    with open(out / "probe_dgemm_squares-smi.csv", "w") as log:
        smi = subprocess.Popen(["nvidia-smi", f"--query-gpu={query}", "--format=csv", "-lms",
                                "100"], stdout=log, stderr=subprocess.DEVNULL)  # fmt: skip
        try:
            rows = [row for shape in SHAPES for row in probe_shape(shape, args.passes)]
        finally:
            smi.terminate()
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    (out / "probe_dgemm_squares.json").write_text(json.dumps(
        {"date": stamp, "device": cuda.device().name(), "command": " ".join(sys.argv),
         "rows": rows}, indent=1, default=str))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
