"""The main job: sgemm and dgemm on random matrices, checked, timed, and compared with cuBLAS."""

from __future__ import annotations

import sys
import warnings

import numpy as np

from . import backend, checks
from ._warnings import NumpyFallbackWarning
from .api import dgemm, sgemm
from .timing import gpu_median_ms, wall_median_ms

_ROWS_CHECKED = 64  # rows compared with the float64 reference (a full reference is slow on CPUs)


GPU_SIZES, NUMPY_SIZES = [1024, 4096], [512, 1024]  # NumPy takes seconds per 4096^3 product


def demo(sizes: list[int] | None = None) -> int:
    """Print one line per (routine, size); return 1 if any result fails its check."""
    with warnings.catch_warnings():
        # Without a GPU the one fallback warning comes here, before the table, and stays a
        # message even under `python -W error`: the demo runs anyway, and says why below.
        warnings.simplefilter("default", NumpyFallbackWarning)
        backend.for_call(on_device=False)
    sys.stderr.flush()
    name, reason = backend.selected()
    if sizes is None:
        sizes = GPU_SIZES if name == "gpu" else NUMPY_SIZES
    print(f"tunedgemm demo: backend {name} ({reason})")
    print(
        f"{'routine':7} {'shape':>16} {'kernel':>40} {'call ms':>9} {'GFLOP/s':>9} "
        f"{'kernel ms':>9} {'cuBLAS ms':>9} {'ratio':>6} {'check':>6}"
    )
    rng = np.random.default_rng()
    failures = 0
    for routine, dtype in ((sgemm, np.float32), (dgemm, np.float64)):
        for size in sizes:
            a = rng.uniform(-1, 1, (size, size)).astype(dtype)
            b = rng.uniform(-1, 1, (size, size)).astype(dtype)
            result = routine(1.0, a, b)
            call_ms = wall_median_ms(lambda: routine(1.0, a, b))  # noqa: B023
            rows = rng.choice(size, min(size, _ROWS_CHECKED), replace=False)
            ok, _, _ = checks.check(result[rows], 1.0, a[rows], b, 0.0, None, dtype)
            failures += not ok
            kernel, kernel_ms, cublas_ms = ("numpy", float("nan"), float("nan"))
            if name == "gpu":
                kernel, kernel_ms, cublas_ms = _kernel_times(size, dtype, rng)
            flops = 2.0 * size**3
            ratio = cublas_ms / kernel_ms if kernel_ms == kernel_ms else float("nan")
            print(
                f"{routine.__name__:7} {f'{size}x{size}x{size}':>16} {kernel:>40.40} "
                f"{call_ms:9.3f} {flops / call_ms / 1e6:9.1f} {kernel_ms:9.3f} "
                f"{cublas_ms:9.3f} {ratio:6.2f} {'ok' if ok else 'FAIL':>6}"
            )
    print(
        "call ms: host arrays in and out (transfers included); kernel ms and cuBLAS ms: "
        "CUDA-event medians on device operands; ratio: cuBLAS time / kernel time"
    )
    return 1 if failures else 0


def _kernel_times(size: int, dtype: type, rng: np.random.Generator) -> tuple[str, float, float]:
    from . import gpu_backend, reference
    from .tuning import problems

    problem = problems.make(size, size, size, dtype, rng=rng)
    config = gpu_backend.run(problem.form, problem.dtype, 1.0, 0.0)
    kernel_ms = gpu_median_ms(
        lambda: gpu_backend.run(problem.form, problem.dtype, 1.0, 0.0, config)
    )
    cublas_ms = float("nan")
    if reference.status()[0]:
        cublas_ms = gpu_median_ms(lambda: reference.gemm(problem.form, problem.dtype, 1.0, 0.0))
    return str(config), kernel_ms, cublas_ms
