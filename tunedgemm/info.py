"""What tunedgemm would run on here: backend and why, GPU, library versions, kernel choice."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _install


def info() -> dict[str, Any]:
    """A dict describing the backend in use and why, the GPU, versions, and the kernel source."""
    from . import __version__, backend, cuda, reference, selection, table

    report: dict[str, Any] = {"tunedgemm": __version__, "numpy": np.__version__}
    try:
        name, why = backend.selected()
    except Exception as exc:  # a forced GPU backend that is unusable
        name, why = "unusable", str(exc)
    report["backend"] = name
    report["backend_reason"] = why
    from . import devices

    report["gpus"] = devices.describe()
    ok, _ = cuda.status()
    if ok:
        import pycuda
        import pycuda.driver as drv

        dev = cuda.device()
        report["gpu"] = dev.name()
        report["compute_capability"] = ".".join(map(str, dev.compute_capability()))
        report["pycuda"] = ".".join(map(str, pycuda.VERSION))
        report["cuda_driver"] = _version(drv.get_driver_version())
        report["cuda_toolkit (pycuda built against)"] = ".".join(map(str, drv.get_version()))
        report["cublas_reference"] = reference.status()[1]
        from . import pinned

        report["pinned_results"] = (
            f"new host results in pinned memory: {pinned.result_bytes() / 2**20:.0f} MiB held, "
            f"cap {pinned.MAX_RESULT_BYTES >> 20} MiB ({pinned.PINNED_RESULTS_ENV}=0: off)"
        )
        from . import crossover

        found, source = crossover.sizes(dev.name())
        report["cpu_gpu_crossover"] = (
            ", ".join(f"{d} n={n}" for d, n in found.items())
            + f" ({source}; smaller host calls run on NumPy)"
        )
    current = table.current()
    report["table"] = str(table.table_path())
    if isinstance(current, str):
        report["table_status"] = f"not used: {current}"
    else:
        gpus = ", ".join(f"{d.name} (sm {d.compute_capability})" for d in current.devices)
        report["table_status"] = f"usable; tuned on {gpus}; {current.header.get('created', '?')}"
    report["default_configs"] = ", ".join(
        f"{d} -> {selection.default_config(d)}" for d in ("float32", "float64")
    )
    report["cublas_as_candidate"] = selection.cublas_allowed()
    from . import cublaslt, plans
    from .precision import get_precision

    report["precision"] = (f"{get_precision()} (float32 default: tunedgemm.set_precision, "
                           "TUNEDGEMM_PRECISION; float64 always ieee)")  # fmt: skip
    if ok:
        report["cublaslt"] = ("cuBLASLt: autotuning times its first algorithms" if
                              cublaslt.available() else "cuBLASLt not found: cublas<t>gemm only")
    report["plans"] = (f"{len(plans.call_plans.items)} call plans, "
                       f"{len(plans.device_plans.items)} product plans cached "
                       f"(at most {plans.MAX_PLANS} each)")  # fmt: skip
    report["imported_from"] = _install.find().describe()
    report["small_host_route"] = small_host_route()
    report["device_launches"] = device_launches()
    return report


def device_launches() -> str:
    """How a planned device call launches: from C (tunedgemm._fastlaunch) or through ctypes."""
    try:
        from . import _fastlaunch  # noqa: F401
    except ImportError:
        return ("through ctypes: the C launcher (tunedgemm._fastlaunch) is not built; it needs "
                "a C compiler at install, no CUDA")  # fmt: skip
    return "from C (tunedgemm._fastlaunch)"


def small_host_route() -> str:
    """Which short route of small host calls runs, and, where it is Python's, why."""
    from . import _small_host

    if _small_host.NATIVE:
        return "in C (tunedgemm._short_route)"
    where = _install.find()
    if where.shadowed:
        return (f"in Python: this source tree ({where.imported}) has no build of the C "
                "extension, and it shadows the installed tunedgemm, which may have one (run "
                "from another directory, or build here: python setup.py build_ext --inplace)")
    return ("in Python: the C extension is not built (it needs a C compiler and Python's "
            "headers at install; see docs/development.md)")


def _version(code: int) -> str:
    return f"{code // 1000}.{(code % 1000) // 10}"


def format_info(report: dict[str, Any]) -> str:
    width = max(len(k) for k in report)
    return "\n".join(f"{k:<{width}}  {v}" for k, v in report.items())
