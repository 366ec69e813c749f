"""The calls users make on device arrays, against the peer doing the same on the same operands.

Forms, each timed in the same process, interleaved with its peer, by CUDA events around loops
of back-to-back calls on the stream both queue on (so a call's host cost shows where it is
longer than its GPU time), median of several loops:

- sgemm/dgemm(1.0, a, b) (new result) on PyCUDA GPUArray, CuPy and PyTorch arrays, against
  cuBLAS through scikit-cuda's binding into a preallocated c (what a scikit-cuda user does);
- sgemm/dgemm(1.0, a, b, c=c, overwrite_c=1) on the same, against the same cuBLAS call;
- matmul(x, y) on CuPy and PyTorch, 2-D and batched, against x @ y (cupy.matmul,
  torch.matmul with TF32 off).

Ratio = peer's time / tunedgemm's time (1.0: as fast; above: faster). Each result is checked
against the peer's on the same operands. Writes bench_device.json (and a plot with --plot).

    python benchmarks/bench_device.py --out DIR [--quick] [--plot]
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

SQUARES = (64, 256, 512, 1024, 2048, 4096, 8192)
IRREGULAR = ((16384, 64, 4096), (64, 16384, 4096), (8192, 8192, 128), (4096, 4096, 64),
             (777, 3333, 1555), (3072, 96, 3072))  # fmt: skip
BATCHED = ((64, 512, 512, 512), (8, 2048, 2048, 2048), (256, 128, 128, 128),
           (16, 1024, 64, 1024))  # fmt: skip
TARGET_MS = 3.0  # each timed loop lasts about this long
LOOPS = 7  # timed loops per side (--loops); the median is reported
_LOOPS = [LOOPS]


def _events() -> tuple[Any, Any]:
    import cupy

    return cupy.cuda.Event(), cupy.cuda.Event()


def time_per_call(work: Any, calls: int) -> float:
    """Microseconds per call over one loop of `calls` back-to-back calls, by CUDA events on
    the legacy default stream (where every form here queues)."""
    import cupy

    start, stop = _events()
    start.record(cupy.cuda.Stream.null)
    for _ in range(calls):
        work()
    stop.record(cupy.cuda.Stream.null)
    stop.synchronize()
    return cupy.cuda.get_elapsed_time(start, stop) * 1e3 / calls


def compare(ours: Any, peer: Any) -> tuple[float, float]:
    """(ours us, peer us): medians of LOOPS interleaved loops, after warm-up."""
    for work in (ours, peer, ours, peer):
        work()
    import cupy

    cupy.cuda.Device().synchronize()
    t0 = time.perf_counter()
    peer()
    cupy.cuda.Device().synchronize()
    single_ms = max((time.perf_counter() - t0) * 1e3, 1e-3)
    calls = max(3, min(300, int(TARGET_MS / single_ms)))
    times: dict[str, list[float]] = {"ours": [], "peer": []}
    for _ in range(_LOOPS[0]):
        times["ours"].append(time_per_call(ours, calls))
        times["peer"].append(time_per_call(peer, calls))
    return statistics.median(times["ours"]), statistics.median(times["peer"])


def _check(name: str, ours: Any, peer: Any, k: int, dtype: np.dtype) -> float:
    """Max |ours - peer| / (max |peer| * k * eps): a few units is agreement."""
    a, b = np.asarray(ours, dtype=np.float64), np.asarray(peer, dtype=np.float64)
    if a.shape != b.shape or not np.isfinite(a).all():
        raise AssertionError(f"{name}: result shape {a.shape} vs {b.shape}, or non-finite")
    scale = max(float(np.abs(b).max()), 1e-30) * max(k, 1) * float(np.finfo(dtype).eps)
    error = float(np.abs(a - b).max()) / scale
    if error > 4:
        raise AssertionError(f"{name}: results differ by {error:.2f} k-scaled units")
    return error


class Libraries:
    """Device arrays of each library, and its host copy, for the same values."""

    def __init__(self) -> None:
        import cupy
        import torch

        self.cupy, self.torch = cupy, torch
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        try:
            import pycuda.gpuarray as gpuarray

            self.gpuarray: Any = gpuarray
        except ImportError:
            self.gpuarray = None

    def make(self, lib: str, host: np.ndarray) -> Any:
        if lib == "cupy":
            return self.cupy.asarray(host)
        if lib == "torch":
            return self.torch.from_numpy(np.ascontiguousarray(host)).cuda()
        return self.gpuarray.to_gpu(np.ascontiguousarray(host))

    def empty_f(self, lib: str, shape: tuple[int, int], dtype: np.dtype) -> Any:
        if lib == "cupy":
            return self.cupy.full(shape, np.nan, dtype=dtype, order="F")
        if lib == "torch":
            t = self.torch.empty_strided(shape, (1, shape[0]), device="cuda",
                                         dtype=getattr(self.torch, dtype.name))  # fmt: skip
            t.fill_(float("nan"))
            return t
        out = self.gpuarray.empty(shape, dtype, order="F")
        out.fill(np.nan)
        return out

    def host(self, x: Any) -> np.ndarray:
        if hasattr(x, "get"):
            return np.asarray(x.get())
        return np.asarray(x.cpu().numpy())


def cublas_into(c_matrix: Any, a: Any, b: Any, dtype: np.dtype) -> Any:
    """The peer of sgemm/dgemm: cuBLAS (scikit-cuda's binding) into preallocated c, on the
    legacy default stream, for the same column-major problem."""
    from tunedgemm import reference
    from tunedgemm._args import as_matrix
    from tunedgemm._layout import blas_form

    form = blas_form(as_matrix(a, "a"), as_matrix(b, "b"), as_matrix(c_matrix, "c"))
    call = reference.direct(dtype)

    def run() -> None:
        call(form.trans_a, form.trans_b, form.m, form.n, form.k, 1.0, form.a, form.lda,
             form.b, form.ldb, 0.0, form.c, form.ldc, 0)  # fmt: skip

    return run


def gemm_rows(libs: Libraries, dtype: np.dtype, shapes: list[tuple[int, int, int]],
              rng: np.random.Generator,
              names: tuple[str, ...]) -> list[dict[str, Any]]:  # fmt: skip
    import tunedgemm as tg

    routine = tg.sgemm if dtype == np.float32 else tg.dgemm
    rows = []
    for m, n, k in shapes:
        ha = rng.uniform(-1, 1, (m, k)).astype(dtype)
        hb = rng.uniform(-1, 1, (k, n)).astype(dtype)
        for lib in (x for x in ("pycuda", "cupy", "torch") if x in names):
            if lib == "pycuda" and libs.gpuarray is None:
                continue
            a, b = libs.make(lib, ha), libs.make(lib, hb)
            c_peer = libs.empty_f(lib, (m, n), dtype)
            peer = cublas_into(c_peer, a, b, dtype)
            peer()
            reference_result = libs.host(c_peer)
            for form in ("new", "into"):
                c = libs.empty_f(lib, (m, n), dtype)
                if form == "new":
                    ours = lambda a=a, b=b: routine(1.0, a, b)  # noqa: E731
                else:
                    ours = lambda a=a, b=b, c=c: routine(1.0, a, b, c=c, overwrite_c=1)  # noqa: E731
                got = ours() if form == "new" else (ours(), c)[1]
                error = _check(f"{lib} {form} {m}x{n}x{k}", libs.host(got), reference_result,
                               k, dtype)  # fmt: skip
                ours_us, peer_us = compare(ours, peer)
                rows.append({"form": f"{routine.__name__} {form} result ({lib})", "lib": lib,
                             "dtype": dtype.name, "shape": [m, n, k], "ours_us": ours_us,
                             "peer_us": peer_us, "ratio": peer_us / ours_us,
                             "peer": "cuBLAS (scikit-cuda) into c", "error": error,
                             "chosen": tg.plan(a, b, None if form == "new" else c,
                                               dtype=dtype).explain()})  # fmt: skip
                _print(rows[-1])
    return rows


def matmul_rows(libs: Libraries, dtype: np.dtype, shapes: list[tuple[int, ...]],
                rng: np.random.Generator,
                names: tuple[str, ...]) -> list[dict[str, Any]]:  # fmt: skip
    import tunedgemm as tg

    rows = []
    for shape in shapes:
        *batch, m, n, k = shape
        ha = rng.uniform(-1, 1, (*batch, m, k)).astype(dtype)
        hb = rng.uniform(-1, 1, (*batch, k, n)).astype(dtype)
        for lib in (x for x in ("cupy", "torch") if x in names):
            x, y = libs.make(lib, ha), libs.make(lib, hb)
            if lib == "cupy":
                peer = lambda x=x, y=y: libs.cupy.matmul(x, y)  # noqa: E731
            else:
                peer = lambda x=x, y=y: x @ y  # noqa: E731
            ours = lambda x=x, y=y: tg.matmul(x, y)  # noqa: E731
            error = _check(f"{lib} matmul {shape}", libs.host(ours()), libs.host(peer()), k, dtype)
            ours_us, peer_us = compare(ours, peer)
            kind = "batched" if batch else "2-D"
            rows.append({"form": f"matmul {kind} ({lib})", "lib": lib, "dtype": dtype.name,
                         "shape": list(shape), "ours_us": ours_us, "peer_us": peer_us,
                         "ratio": peer_us / ours_us,
                         "peer": "cupy.matmul" if lib == "cupy" else "torch.matmul (TF32 off)",
                         "error": error})  # fmt: skip
            _print(rows[-1])
    return rows


def _print(row: dict[str, Any]) -> None:
    shape = "x".join(map(str, row["shape"]))
    print(f"{row['form']:34} {row['dtype']:8} {shape:>20} {row['ours_us']:11.1f} "
          f"{row['peer_us']:11.1f} {row['ratio']:7.3f}  {row.get('chosen', '')[:70]}",
          flush=True)  # fmt: skip


def summary(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per form and dtype: geometric mean of the ratios, and the worst at m*n*k >= 256^3."""
    out = []
    for form in dict.fromkeys(r["form"] for r in rows):
        for dtype in ("float32", "float64"):
            mine = [r for r in rows if r["form"] == form and r["dtype"] == dtype]
            if not mine:
                continue
            big = [r for r in mine if math.prod(r["shape"]) >= 256**3]
            worst = min(big or mine, key=lambda r: r["ratio"])
            small = [r for r in mine if r["shape"][-3:] == [64, 64, 64]]
            out.append({"form": form, "dtype": dtype,
                        "geomean": math.exp(statistics.fmean(math.log(r["ratio"]) for r in mine)),
                        "worst_big": worst["ratio"], "worst_shape": worst["shape"],
                        "at_64": small[0]["ratio"] if small else None})  # fmt: skip
    return out


def why_not_here(script: str, libraries: tuple[str, ...]) -> str | None:
    """Why `script` cannot run here (None: it can): one of `libraries` does not import, or
    there is no usable GPU."""
    import importlib

    from tunedgemm import cuda

    for name in libraries:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            return f"{script} needs {', '.join(libraries)} and a GPU: {exc}"
    ok, why = cuda.status()
    return None if ok else f"{script} needs a GPU: {why}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="benchmarks/results", help="folder for the JSON")
    parser.add_argument("--quick", action="store_true", help="fewer, smaller shapes")
    parser.add_argument("--dtypes", default="float32,float64")
    parser.add_argument("--plot", action="store_true", help="also write the plot (PNG)")
    parser.add_argument("--loops", type=int, default=LOOPS, help="timed loops per side")
    parser.add_argument("--libs", default="pycuda,cupy,torch", help="libraries whose arrays "
                        "are timed, comma-separated")
    parser.add_argument("--name", default="bench_device", help="stem of the JSON (and plot)")
    parser.add_argument("--shapes", help="only these, comma-separated: MxNxK (gemm and matmul) "
                        "or BxMxNxK (batched matmul), to look again at rows that moved")
    parser.add_argument("--forms", default="gemm,matmul", help="gemm, matmul or both")
    args = parser.parse_args()
    names = tuple(args.libs.split(","))
    _LOOPS[0] = args.loops
    missing = why_not_here("bench_device", ("cupy", "torch"))
    if missing:
        print(missing)
        return 1
    import tunedgemm as tg
    from tunedgemm import autotune, cuda
    libs = Libraries()
    rng = np.random.default_rng()
    squares = [(s, s, s) for s in (SQUARES[:4] if args.quick else SQUARES)]
    irregular = list(IRREGULAR[:2] if args.quick else IRREGULAR)
    batched = list(BATCHED[:2] if args.quick else BATCHED)
    if args.shapes:
        chosen = [tuple(int(d) for d in s.split("x")) for s in args.shapes.split(",")]
        squares, irregular = [], [s for s in chosen if len(s) == 3]
        batched = [s for s in chosen if len(s) == 4]
    print(f"{'form':34} {'dtype':8} {'shape':>20} {'ours us':>11} {'peer us':>11} {'ratio':>7}")
    rows: list[dict[str, Any]] = []
    for name in args.dtypes.split(","):
        dtype = np.dtype(name)
        if "gemm" in args.forms.split(","):
            rows += gemm_rows(libs, dtype, squares + irregular, rng, names)
        if "matmul" in args.forms.split(","):
            rows += matmul_rows(libs, dtype, squares + irregular + batched, rng, names)
    table = summary(rows)
    print(f"\n{'form':34} {'dtype':8} {'geomean':>8} {'worst>=256^3':>13} {'at':>16} {'64^3':>6}")
    for s in table:
        at64 = f"{s['at_64']:.3f}" if s["at_64"] is not None else "-"
        print(f"{s['form']:34} {s['dtype']:8} {s['geomean']:8.3f} {s['worst_big']:13.3f} "
              f"{'x'.join(map(str, s['worst_shape'])):>16} {at64:>6}")  # fmt: skip
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    record = {
        "created": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "command": " ".join(["python", *sys.argv]),
        "gpu": cuda.device_name(),
        "tunedgemm": tg.__version__,
        "settings": {k: v for k, v in sorted(os.environ.items()) if k.startswith("TUNEDGEMM_")},
        "rows": rows,
        "summary": table,
        # What run-time autotuning timed and chose per shape (to tell a slow row's cause:
        # another algorithm than the peer's, or drift)
        "refine": autotune.history(),
    }
    (out / f"{args.name}.json").write_text(json.dumps(record, indent=1) + "\n")
    if args.plot:
        plot(record, out / f"{args.name}.png")
    return 0


def plot(record: dict[str, Any], path: Path) -> None:
    """Ratio to the peer against problem size (m*n*k per product), one panel per dtype; colour
    says the library, the marker the form, one legend for both panels."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = record["rows"]
    # Okabe-Ito: distinguishable with the common colour-vision deficiencies.
    colours = {"pycuda": "#0072B2", "cupy": "#E69F00", "torch": "#009E73"}
    markers = {"new result": "o", "into result": "s", "matmul 2-D": "^", "matmul batched": "D"}
    fig, axes = plt.subplots(1, 2, figsize=(13, 5.6), sharey=True)
    handles: dict[str, Any] = {}
    for ax, dtype in zip(axes, ("float32", "float64"), strict=True):
        for form in dict.fromkeys(r["form"] for r in rows if r["dtype"] == dtype):
            mine = sorted((r for r in rows if r["form"] == form and r["dtype"] == dtype),
                          key=lambda r: math.prod(r["shape"]))  # fmt: skip
            kind = next(k for k in markers if k in form)
            label = form.replace("sgemm ", "").replace("dgemm ", "")  # the panel says the dtype
            handles[label] = ax.plot(
                [math.prod(r["shape"][-3:]) for r in mine], [r["ratio"] for r in mine],
                linestyle="none", marker=markers[kind], color=colours[mine[0]["lib"]],
                markersize=7, alpha=0.85, label=label)[0]  # fmt: skip
        ax.axhline(1.0, color="0.4", linewidth=1)
        ax.set_xscale("log")
        ax.set_title(f"{dtype}: peer's time / tunedgemm's time (above 1: tunedgemm faster)",
                     fontsize=10)  # fmt: skip
        ax.set_xlabel("m*n*k of one product")
        ax.grid(True, which="major", alpha=0.3)
    axes[0].set_ylabel("ratio")
    fig.legend(handles.values(), handles.keys(), loc="lower center", ncol=4, fontsize=8,
               frameon=False)  # fmt: skip
    fig.suptitle(f"{record['gpu']}, {record['created']}: {record['command']}", fontsize=8)
    fig.tight_layout(rect=(0, 0.13, 1, 1))
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    sys.exit(main())
