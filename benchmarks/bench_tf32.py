"""The tf32 family (modes tf32 and 3xtf32) against cuBLAS SGEMM and cuBLAS TF32: speed and error.

Usage: python benchmarks/bench_tf32.py [--out DIR] [--quick]

For each shape (squares 1024..16384 and a few irregular ones) it times a small sweep of
configs per mode (CUDA events behind a hold, median of 10 after warm-up; a config that fails
to compile or launch counts as inf), cuBLAS SGEMM (tunedgemm.reference) and cuBLAS TF32
(cublasGemmEx with CUBLAS_COMPUTE_32F_FAST_TF32, through the libcublas scikit-cuda loaded, on
the same handle), all on the same 16-byte aligned uniform(-1, 1) operands (NN). For the best
config of each mode and for both cuBLAS calls it measures the error against a float64
reference on a random sample of 256 x 256 elements: median and 99.9th percentile of
|C - exact| / (|A| |B|). An accuracy table follows (m = n = 512, k from 16 to 16384,
uniform(-1, 1) inputs and inputs with exponents spread over 2^-20..2^20) for each mode's
default, the 3xtf32 default without FLUSH (outside the family's space, the tensor cores'
truncation making it inaccurate; shown for contrast), and both cuBLAS calls. Prints tables
and writes DIR/bench_tf32.json. Runs in about three minutes on an H100.
"""

from __future__ import annotations

import argparse
import ctypes
import datetime
import json
import math
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import numpy as np

# The checkout this script lies in, ahead of any installed tunedgemm: the numbers must be
# those of these kernels.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

SQUARES = [(s, s, s) for s in (1024, 2048, 4096, 8192, 16384)]
IRREGULAR = [(8192, 8192, 128), (777, 3333, 1555), (3072, 96, 3072)]
ACCURACY_K = (16, 256, 4096, 16384)
SAMPLE = 256  # rows and columns of C compared with the float64 reference
SWEEP_UP_TO = 8192  # larger shapes time each mode's default and best few configs so far
BEST_FEW = 3

# Configs per mode: changes to the mode's default. Those that break the family's rules are
# reported and dropped.
SWEEP: dict[str, list[dict[str, int]]] = {
    "3xtf32": [
        {},
        {"CVT": 1},
        {"STAGES": 3},
        {"WM": 32, "WN": 64},
        {"BM": 64, "BN": 128},
        {"BM": 128, "BN": 64},
        {"BM": 64, "BN": 128, "WM": 32, "WN": 64, "MIN_BLOCKS": 2},
        {"BM": 128, "BN": 64, "WM": 32, "WN": 32, "BK": 32},
        {"BM": 64, "BN": 128, "WM": 32, "WN": 32, "BK": 32},
        {"BM": 128, "BN": 64, "WM": 32, "WN": 32, "BK": 16, "STAGES": 4},
        {"BM": 64, "BN": 64, "WM": 32, "WN": 32, "MIN_BLOCKS": 2},
        {"SPLIT_K": 2},
        {"SPLIT_K": 4},
    ],
    "tf32": [
        {},
        {"CVT": 1},
        {"STAGES": 3},
        {"BM": 128, "BN": 256, "BK": 16, "STAGES": 3},
        {"BM": 256, "BN": 128, "BK": 16, "STAGES": 3},
        {"BM": 128, "BN": 128, "WM": 64, "WN": 32, "BK": 32},
        {"BM": 128, "BN": 128, "WM": 32, "WN": 64, "BK": 32},
        {"BM": 128, "BN": 64, "WM": 64, "WN": 32, "BK": 16, "MIN_BLOCKS": 2},
        {"BM": 64, "BN": 128, "WM": 32, "WN": 64, "BK": 16, "MIN_BLOCKS": 2},
        {"BM": 128, "BN": 128, "WM": 64, "WN": 32, "BK": 16},
        {"BM": 64, "BN": 64, "WM": 32, "WN": 32, "BK": 32, "MIN_BLOCKS": 2},
        {"BM": 128, "BN": 256, "WM": 64, "WN": 64, "BK": 16, "STAGES": 4},
        {"SPLIT_K": 2},
    ],
}

# cuBLAS enums (cublas_api.h, library_types.h)
CUDA_R_32F = 0
CUBLAS_COMPUTE_32F_FAST_TF32 = 77
CUBLAS_GEMM_DEFAULT = -1


def tflops(m: int, n: int, k: int, ms: float) -> float:
    return 2.0 * m * n * k / ms / 1e9 if ms > 0 else math.nan


def sweep_configs(mode: str) -> list[Any]:
    from tunedgemm.families.tf32 import DEFAULTS_BY_PRECISION, FAMILY
    from tunedgemm.params import KernelConfig

    picked = []
    for changes in SWEEP[mode]:
        config = KernelConfig.make(FAMILY.name, {**DEFAULTS_BY_PRECISION[mode], **changes})
        problems = FAMILY.violations(config, "float32")
        if problems:
            print(f"  dropped {config}: {'; '.join(problems)}", file=sys.stderr)
        elif config not in picked:
            picked.append(config)
    return picked


class CublasTF32:
    """cublasGemmEx with FP32 data and CUBLAS_COMPUTE_32F_FAST_TF32 on tunedgemm's handle."""

    def __init__(self) -> None:
        from tunedgemm import reference

        lib = reference._cublas()._libcublas
        self.fn = lib.cublasGemmEx
        p, i = ctypes.c_void_p, ctypes.c_int
        self.fn.argtypes = [p, i, i, i, i, i, p, p, i, i, p, i, i, p, p, i, i, i, i]
        self.fn.restype = i
        self.alpha, self.beta = ctypes.c_float(1.0), ctypes.c_float(0.0)

    def __call__(self, form: Any) -> None:
        from tunedgemm import reference

        with reference._handle_lock:
            reference.set_stream(None)
            status = self.fn(reference._handle(), int(form.trans_a), int(form.trans_b),
                             form.m, form.n, form.k, ctypes.byref(self.alpha),
                             form.a, CUDA_R_32F, form.lda, form.b, CUDA_R_32F, form.ldb,
                             ctypes.byref(self.beta), form.c, CUDA_R_32F, form.ldc,
                             CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT)  # fmt: skip
        reference.check_status(status, "cublasGemmEx(FAST_TF32)")


def error_bound(mode: str, k: int) -> float:
    """The most elementwise error a mode may show (tests/gpu/test_tf32_gpu.py's bounds): the
    float32 K-scaled tolerance for 3xtf32, 2^-10 more for tf32. Faster configs above it are
    reported but never counted as the best."""
    from tunedgemm import checks

    return checks.tf32_tolerance(k) if mode == "tf32" else checks.tolerance(k, np.dtype(np.float32))


def time_ms(work: Any, label: str) -> float:
    from tunedgemm.timing import gpu_median_ms

    try:
        return gpu_median_ms(work, warmup=3, reps=10)
    except Exception as exc:  # a config that fails costs infinity, and says why
        print(f"  {label}: failed ({type(exc).__name__}: {str(exc)[:300]})", file=sys.stderr)
        return math.inf


class Sampled:
    """A float64 reference for a random SAMPLE x SAMPLE block of C's elements."""

    def __init__(self, problem: Any, rng: np.random.Generator) -> None:
        m, n = problem.form.m, problem.form.n
        self.rows = np.sort(rng.choice(m, min(m, SAMPLE), replace=False))
        self.cols = np.sort(rng.choice(n, min(n, SAMPLE), replace=False))
        a = problem.op_a[self.rows].astype(np.float64)
        b = problem.op_b[:, self.cols].astype(np.float64)
        self.exact = a @ b
        self.scale = np.abs(a) @ np.abs(b)

    def errors(self, c: np.ndarray) -> dict[str, float]:
        """Median and 99.9th percentile of |C - exact| / (|A| |B|) over the sample."""
        got = c[np.ix_(self.rows, self.cols)].astype(np.float64)
        if not np.isfinite(got).all():
            return {"err_median": math.inf, "err_p999": math.inf}
        rel = np.abs(got - self.exact) / np.maximum(self.scale, np.finfo(np.float64).tiny)
        return {"err_median": float(np.median(rel)), "err_p999": float(np.percentile(rel, 99.9))}


def run_shape(shape: tuple[int, int, int], configs: dict[str, list[Any]],
              tf32_gemm: CublasTF32 | None, rng: np.random.Generator,
              ) -> dict[str, Any]:  # fmt: skip
    """Every config of both modes and both cuBLAS calls at one shape, and their errors."""
    from tunedgemm import launch, reference
    from tunedgemm.tuning import problems

    m, n, k = shape
    problem = problems.make(m, n, k, np.float32, rng=rng, padded=True)
    sample = Sampled(problem, rng)
    row: dict[str, Any] = {"m": m, "n": n, "k": k, "configs": {}}

    def measure(label: str, work: Any) -> dict[str, Any]:
        problem.poison_c()
        try:
            work()
            errors = sample.errors(problem.c())
        except Exception as exc:
            print(f"  {label}: failed ({type(exc).__name__}: {str(exc)[:300]})", file=sys.stderr)
            errors = {"err_median": math.inf, "err_p999": math.inf}
        ms = time_ms(work, label) if math.isfinite(errors["err_median"]) else math.inf
        return {"ms": ms, "tflops": tflops(m, n, k, ms), **errors}

    row["cublas_sgemm"] = measure(
        "cuBLAS SGEMM", lambda: reference.gemm(problem.form, problem.dtype, 1.0, 0.0)
    )
    row["cublas_tf32"] = (measure("cuBLAS TF32", lambda: tf32_gemm(problem.form))
                          if tf32_gemm else {"ms": math.nan, "tflops": math.nan})  # fmt: skip
    for mode, mode_configs in configs.items():
        results = {}
        for config in mode_configs:
            result = measure(
                str(config), lambda c=config: launch.gemm(problem.form, problem.dtype, 1.0, 0.0, c)
            )
            result["accurate"] = result["err_p999"] <= error_bound(mode, k)
            if not result["accurate"]:
                print(f"  {config} at {m}x{n}x{k}: error {result['err_p999']:.3g} above the "
                      f"{mode} bound {error_bound(mode, k):.3g}", file=sys.stderr)  # fmt: skip
            results[str(config)] = result
        row["configs"][mode] = results
        accurate = [c for c in results if results[c]["accurate"]]
        best = min(accurate, key=lambda c: results[c]["ms"]) if accurate else None
        row[mode] = {"config": best, **(results[best] if best else {"ms": math.inf})}
    return row


def accuracy_table(rng: np.random.Generator, tf32_gemm: CublasTF32 | None) -> list[dict[str, Any]]:
    """Error against float64 at m = n = 512 for k over ACCURACY_K, two input kinds."""
    import pycuda.driver as drv

    from tunedgemm.families.tf32 import default_for
    from tunedgemm.params import KernelConfig
    from tunedgemm.tuning import problems

    no_flush = default_for("3xtf32").as_dict() | {"FLUSH": 0}
    runs: dict[str, Any] = {
        "3xtf32": default_for("3xtf32"),
        "3xtf32 FLUSH=0": KernelConfig.make("tf32", no_flush),
        "tf32": default_for("tf32"),
    }
    rows = []
    for inputs in ("uniform", "spread"):
        for k in ACCURACY_K:
            problem = problems.make(512, 512, k, np.float32, rng=rng, padded=True)
            if inputs == "spread":  # exponents 2^-20 .. 2^20, random signs
                for host, ptr in ((problem.a, problem.form.a), (problem.b, problem.form.b)):
                    shape = host.shape
                    values = (rng.uniform(1, 2, shape) * rng.choice([-1.0, 1.0], shape)
                              * 2.0 ** rng.integers(-20, 21, shape)).astype(np.float32)  # fmt: skip
                    host[...] = values
                    upload_padded(values, ptr, problem.form, host is problem.a)
            sample = Sampled(problem, rng)
            row: dict[str, Any] = {"inputs": inputs, "k": k}
            calls = named_calls(problem, runs, tf32_gemm)
            for name, call in calls.items():
                problem.poison_c()
                try:
                    call()
                    drv.Context.synchronize()
                    row[name] = sample.errors(problem.c())
                except Exception as exc:
                    print(f"  accuracy {name} k={k}: failed ({exc})", file=sys.stderr)
                    row[name] = {"err_median": math.inf, "err_p999": math.inf}
            rows.append(row)
    return rows


def named_calls(problem: Any, runs: dict[str, Any], tf32_gemm: CublasTF32 | None) -> dict[str, Any]:
    """cuBLAS SGEMM, cuBLAS TF32 and each of our configs, as callables on one problem."""
    from tunedgemm import launch, reference

    calls: dict[str, Any] = {
        "cuBLAS SGEMM": lambda: reference.gemm(problem.form, problem.dtype, 1.0, 0.0)
    }
    if tf32_gemm is not None:
        calls["cuBLAS TF32"] = lambda: tf32_gemm(problem.form)
    for name, config in runs.items():
        calls[name] = lambda c=config: launch.gemm(problem.form, problem.dtype, 1.0, 0.0, c)
    return calls


def upload_padded(values: np.ndarray, ptr: int, form: Any, is_a: bool) -> None:
    """Write a column-major host operand into its padded device buffer."""
    import pycuda.driver as drv

    ld = form.lda if is_a else form.ldb
    whole = np.zeros((ld, values.shape[1]), np.float32, order="F")
    whole[: values.shape[0]] = values
    drv.memcpy_htod(ptr, whole.ravel(order="K"))


def fmt_err(entry: dict[str, Any]) -> str:
    med, p999 = entry.get("err_median", math.nan), entry.get("err_p999", math.nan)
    return f"{med:9.2e} {p999:9.2e}"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", default="benchmarks/results")
    parser.add_argument("--quick", action="store_true", help="squares to 4096, defaults only")
    parser.add_argument("--sizes", help="squares to time, e.g. 2048,4096,8192 (no irregular)")
    args = parser.parse_args()
    started = time.perf_counter()

    from tunedgemm import cuda, reference
    from tunedgemm.compiler import precompile
    from tunedgemm.families.tf32 import default_for

    ok, why = cuda.status()
    if not ok:
        print(f"bench_tf32: needs a GPU ({why})")
        return 1
    device = cuda.device().name()
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    print(f"# {device}, {stamp}, {reference.status()[1]}", flush=True)
    tf32_gemm = None
    try:
        tf32_gemm = CublasTF32()
    except Exception as exc:
        print(f"cuBLAS TF32 unavailable: {exc}", file=sys.stderr)

    modes = ("3xtf32", "tf32")
    configs = {mode: ([default_for(mode)] if args.quick else sweep_configs(mode)) for mode in modes}
    every = sorted({c for cs in configs.values() for c in cs})
    t0 = time.perf_counter()
    precompile(every, "float32", False, False, True, jobs=os.cpu_count() or 8)
    print(f"# precompiled {len(every)} configs (NN, aligned) in {time.perf_counter() - t0:.0f} s",
          flush=True)  # fmt: skip
    shapes = [s for s in SQUARES if not args.quick or s[0] <= 4096] + (
        [] if args.quick else IRREGULAR
    )
    if args.sizes:
        shapes = [(int(n), int(n), int(n)) for n in args.sizes.split(",")]
    rng = np.random.default_rng(0)
    head = (f"{'m x n x k':>17} {'mode':>7} {'TFLOP/s':>8} {'xSGEMM':>7} {'xTF32':>6} "
            f"{'err med':>9} {'err p999':>9}  config")  # fmt: skip
    print(head, flush=True)
    rows, best_so_far = [], {mode: dict.fromkeys(configs[mode], math.inf) for mode in modes}
    for shape in shapes:
        chosen = configs
        if shape[0] * shape[1] * shape[2] > SWEEP_UP_TO**3:  # default and the best few so far
            chosen = {mode: list(dict.fromkeys([default_for(mode), *sorted(
                best_so_far[mode], key=best_so_far[mode].__getitem__)[:BEST_FEW]]))
                for mode in modes}  # fmt: skip
        try:
            row = run_shape(shape, chosen, tf32_gemm, rng)
        except Exception:
            traceback.print_exc()
            continue
        rows.append(row)
        for mode in modes:
            for config in chosen[mode]:
                ms = row["configs"][mode][str(config)]["ms"]
                best_so_far[mode][config] = min(
                    best_so_far[mode].get(config, math.inf), ms / row["cublas_sgemm"]["ms"]
                )
        sg, tf = row["cublas_sgemm"], row["cublas_tf32"]
        label = "x".join(map(str, shape))
        sg_tf, tf_tf = sg["tflops"], tf["tflops"]
        print(f"{label:>17} {'SGEMM':>7} {sg_tf:8.1f} {1.0:7.2f} {sg_tf / tf_tf:6.2f} "
              f"{fmt_err(sg)}  cuBLAS", flush=True)  # fmt: skip
        print(f"{'':>17} {'cuTF32':>7} {tf_tf:8.1f} {tf_tf / sg_tf:7.2f} {1.0:6.2f} "
              f"{fmt_err(tf)}  cuBLAS", flush=True)  # fmt: skip
        for mode in modes:
            best = row[mode]
            ours = best.get("tflops", math.nan)
            print(f"{'':>17} {mode:>7} {ours:8.1f} {ours / sg_tf:7.2f} {ours / tf_tf:6.2f} "
                  f"{fmt_err(best)}  {best.get('config')}", flush=True)  # fmt: skip
    print("\n# every config (TFLOP/s) per shape")
    for row in rows:
        for mode in modes:
            line = ", ".join(f"{v['tflops']:.0f}" for v in row["configs"][mode].values())
            print(f"{row['m']}x{row['n']}x{row['k']} {mode}: {line}")
    for mode in modes:
        for i, c in enumerate(configs[mode]):
            print(f"  {mode}[{i}] = {c}")

    print("\n# accuracy, m = n = 512: median / 99.9th percentile of |C - exact| / (|A| |B|)")
    accuracy = []
    try:
        accuracy = accuracy_table(rng, tf32_gemm)
        names = [n for n in accuracy[0] if n not in ("inputs", "k")]
        print(f"{'inputs':>8} {'k':>6} " + " ".join(f"{n:>21}" for n in names))
        for arow in accuracy:
            cells = " ".join(fmt_err(arow[n]) + "  " for n in names)
            print(f"{arow['inputs']:>8} {arow['k']:>6} {cells}", flush=True)
    except Exception:
        traceback.print_exc()

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    record = {"device": device, "date": stamp, "reference": reference.status()[1],
              "command": " ".join(["python", *sys.argv]), "rows": rows, "accuracy": accuracy,
              "configs": {m: [str(c) for c in cs] for m, cs in configs.items()},
              "seconds": time.perf_counter() - started}  # fmt: skip
    (out / "bench_tf32.json").write_text(json.dumps(record, indent=1, default=str))
    print(f"# wrote {out / 'bench_tf32.json'} after {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
