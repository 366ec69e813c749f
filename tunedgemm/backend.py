"""Which backend runs a call: the GPU when usable, else NumPy (with one warning saying why)."""

from __future__ import annotations

import os
import warnings

BACKEND_ENV = "TUNEDGEMM_BACKEND"  # auto (default), gpu or numpy
_warned = False


class GpuUnavailableError(RuntimeError):
    """The GPU backend was required (by the environment or by device inputs) but is unusable."""


def requested() -> str:
    value = os.environ.get(BACKEND_ENV, "auto").strip().lower() or "auto"
    if value not in ("auto", "gpu", "numpy"):
        raise ValueError(f"{BACKEND_ENV} must be auto, gpu or numpy, got {value!r}")
    return value


def selected() -> tuple[str, str]:
    """(backend, reason) for host inputs under the current environment."""
    from . import cuda

    wish = requested()
    if wish == "numpy":
        return "numpy", f"{BACKEND_ENV}=numpy"
    ok, reason = cuda.status()
    if ok:
        return "gpu", f"GPU available: {reason}"
    if wish == "gpu":
        raise GpuUnavailableError(f"{BACKEND_ENV}=gpu but the GPU is unusable: {reason}")
    return "numpy", f"no usable GPU: {reason}"


def for_call(on_device: bool) -> str:
    """The backend of one call; warns once per process when falling back to NumPy."""
    global _warned
    if on_device:
        from . import cuda

        ok, reason = cuda.status()
        if not ok:
            raise GpuUnavailableError(f"device arrays given but the GPU is unusable: {reason}")
        if requested() == "numpy":
            raise ValueError(f"device arrays given but {BACKEND_ENV}=numpy")
        return "gpu"
    name, reason = selected()
    if name == "numpy" and requested() == "auto" and not _warned:
        _warned = True
        warnings.warn(f"tunedgemm: computing with NumPy ({reason})", RuntimeWarning, stacklevel=4)
    return name
