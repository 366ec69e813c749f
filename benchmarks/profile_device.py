"""Where a small device call's time goes: host cost per call, GPU time per call, what the plan
chose, and a profile of the Python work, for tunedgemm and its peers on the same operands.

    python benchmarks/profile_device.py [--sizes 64,256,512,1024] [--dtype float64] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import time
from typing import Any

import numpy as np


def host_us(work: Any, calls: int = 2000) -> float:
    """Host microseconds per call, the device allowed to lag (synchronised after)."""
    import cupy

    work()
    cupy.cuda.Device().synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        work()
    elapsed = time.perf_counter() - start
    cupy.cuda.Device().synchronize()
    return elapsed / calls * 1e6


def gpu_us(work: Any, calls: int = 300) -> float:
    """Microseconds per call between events around back-to-back calls (the longer of host
    and GPU time)."""
    import cupy

    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    work()
    start.record()
    for _ in range(calls):
        work()
    stop.record()
    stop.synchronize()
    return cupy.cuda.get_elapsed_time(start, stop) * 1e3 / calls


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="64,256,512,1024")
    parser.add_argument("--dtype", default="float32", choices=("float32", "float64"))
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    import cupy
    import torch

    import tunedgemm as tg
    from tunedgemm import plans

    torch.backends.cuda.matmul.allow_tf32 = False
    rng = np.random.default_rng()
    dtype = np.dtype(args.dtype)
    gemm = tg.sgemm if dtype == np.float32 else tg.dgemm
    for size in (int(s) for s in args.sizes.split(",")):
        host = rng.uniform(-1, 1, (size, size)).astype(dtype)
        x, y = cupy.asarray(host), cupy.asarray(host)
        tx, ty = torch.from_numpy(host).cuda(), torch.from_numpy(host).cuda()
        c = cupy.empty((size, size), dtype, order="F")
        tc = torch.empty((size, size), dtype=tx.dtype, device="cuda").t()  # column-major
        forms = {
            "cupy x @ y": lambda x=x, y=y: x @ y,
            "tg.matmul cupy": lambda x=x, y=y: tg.matmul(x, y),
            "tg.gemm cupy new": lambda x=x, y=y: gemm(1.0, x, y),
            "tg.gemm cupy into": lambda x=x, y=y, c=c: gemm(1.0, x, y, c=c, overwrite_c=1),
            "torch x @ y": lambda tx=tx, ty=ty: tx @ ty,
            "tg.matmul torch": lambda tx=tx, ty=ty: tg.matmul(tx, ty),
            "tg.gemm torch new": lambda tx=tx, ty=ty: gemm(1.0, tx, ty),
            "tg.gemm torch into": lambda tx=tx, ty=ty, tc=tc: gemm(1.0, tx, ty, c=tc,
                                                                   overwrite_c=1),
            "cupy.empty": lambda size=size: cupy.empty((size, size), np.float32),
            "torch.empty": lambda size=size: torch.empty((size, size), device="cuda"),
            # Cheaper ways to make a new result, for the plan's allocator (issue 13):
            "cupy.ndarray": lambda size=size: cupy.ndarray((size, size), np.float32),
            "torch new_empty": lambda tx=tx, size=size: tx.new_empty((size, size)),
            "torch empty_strided": lambda tx=tx, size=size: torch.empty_strided(
                (size, size), (size, 1), dtype=torch.float32, device=tx.device),
            "torch empty_like": lambda tx=tx: torch.empty_like(tx),
        }
        for name, work in forms.items():
            print(f"{size:5d} {name:22} host {host_us(work):7.1f} us   "
                  f"events {gpu_us(work):7.1f} us", flush=True)
        for key, plan in list(plans.device_plans.items.items()):
            if key.m == size:
                print(f"      plan {key}: {plan.choice} ({plan.reason[:90]})")
        if args.profile:
            for name in ("tg.matmul cupy", "tg.matmul torch", "tg.gemm cupy new",
                         "tg.gemm torch into"):
                profiler = cProfile.Profile()
                work = forms[name]
                profiler.enable()
                for _ in range(2000):
                    work()
                profiler.disable()
                text = io.StringIO()
                pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(14)
                print(f"--- profile {name} {size}^3 (2000 calls)")
                print("\n".join(text.getvalue().splitlines()[6:24]))


if __name__ == "__main__":
    main()
