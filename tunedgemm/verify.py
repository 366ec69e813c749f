"""python -m tunedgemm verify: tunedgemm's error against cuBLAS and against a float64 reference."""

from __future__ import annotations

import itertools
import os

import numpy as np

from . import backend, checks, selection

SHAPES = [
    (1, 1, 1),
    (7, 31, 33),
    (127, 129, 65),
    (256, 256, 256),
    (1000, 999, 1001),
    (64, 2048, 512),
    (2048, 64, 512),
    (513, 257, 2049),
]
QUICK_SHAPES = SHAPES[:4]


def verify(quick: bool = False) -> int:
    """Print one line per (dtype, transposes, shape); return 1 if any check fails."""
    # verify checks tunedgemm's own kernels, so cuBLAS is kept out of the table's choices.
    os.environ[selection.CUBLAS_ENV] = "0"
    name, reason = backend.selected()
    print(f"tunedgemm verify: backend {name} ({reason})")
    if name != "gpu":
        return _verify_numpy(QUICK_SHAPES if quick else SHAPES)
    from . import gpu_backend, reference
    from .tuning import problems

    cublas_ok, cublas_why = reference.status()
    print(f"reference: {cublas_why}")
    print(
        f"{'dtype':8} {'op':3} {'m x n x k':>18} {'err vs f64':>11} {'cuBLAS vs f64':>13} "
        f"{'vs cuBLAS':>10} {'tolerance':>10} {'check':>6}  kernel"
    )
    failures = 0
    for dtype, (ta, tb), shape in itertools.product(
        ("float32", "float64"),
        itertools.product((False, True), repeat=2),
        QUICK_SHAPES if quick else SHAPES,
    ):
        m, n, k = shape
        problem = problems.make(m, n, k, dtype, ta, tb)
        c0 = np.random.default_rng().uniform(-1, 1, (m, n))
        problem.set_c(c0)
        ran = gpu_backend.run(problem.form, problem.dtype, 1.5, -0.5)
        ours = problem.c()
        ok, err, tol = checks.check(
            ours, 1.5, problem.op_a, problem.op_b, -0.5, c0.astype(dtype), problem.dtype
        )
        cublas_err = vs_cublas = float("nan")
        if cublas_ok:
            problem.set_c(c0)
            reference.gemm(problem.form, problem.dtype, 1.5, -0.5)
            theirs = problem.c()
            _, cublas_err, _ = checks.check(
                theirs, 1.5, problem.op_a, problem.op_b, -0.5, c0.astype(dtype), problem.dtype
            )
            vs_cublas = float(np.max(np.abs(ours - theirs)) / max(np.max(np.abs(theirs)), 1e-300))
        failures += not ok
        op = ("T" if ta else "N") + ("T" if tb else "N")
        kernel = getattr(ran, "family", ran)
        print(
            f"{dtype:8} {op:3} {f'{m}x{n}x{k}':>18} {err:11.2e} {cublas_err:13.2e} "
            f"{vs_cublas:10.2e} {tol:10.2e} {'ok' if ok else 'FAIL':>6}  {kernel}"
        )
    print(
        "errors: max |x - exact| / (|alpha||A||B| + |beta||C|), elementwise; "
        "'vs cuBLAS': max |ours - cuBLAS| / max |cuBLAS|"
    )
    return 1 if failures else 0


def _verify_numpy(shapes: list[tuple[int, int, int]]) -> int:
    from .api import gemm

    print("reference: cuBLAS unavailable without a GPU; checking the NumPy backend only")
    rng = np.random.default_rng()
    failures = 0
    for dtype, (m, n, k) in itertools.product((np.float32, np.float64), shapes):
        a = rng.uniform(-1, 1, (m, k)).astype(dtype)
        b = rng.uniform(-1, 1, (k, n)).astype(dtype)
        ok, err, tol = checks.check(gemm(1.0, a, b), 1.0, a, b, 0.0, None, dtype)
        failures += not ok
        print(
            f"{np.dtype(dtype).name:8} {f'{m}x{n}x{k}':>18} error {err:.2e} "
            f"(tolerance {tol:.2e}) {'ok' if ok else 'FAIL'}"
        )
    return 1 if failures else 0
