"""Which backend runs a call: the GPU when usable, else NumPy (with one warning saying why)."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from . import crossover, cuda, settings
from ._warnings import NumpyFallbackWarning, caller_stacklevel

BACKEND_ENV = "TUNEDGEMM_BACKEND"  # auto (default), gpu or numpy
_warned = False


class GpuUnavailableError(RuntimeError):
    """The GPU backend was required (by the environment or by device inputs) but is unusable."""


def requested() -> str:
    return str(settings.get(BACKEND_ENV))


def selected() -> tuple[str, str]:
    """(backend, reason) for host inputs under the current environment."""
    wish = requested()
    if wish == "numpy":
        return "numpy", f"{BACKEND_ENV}=numpy"
    ok, reason = cuda.status()
    if ok:
        return "gpu", f"GPU available: {reason}"
    if wish == "gpu":
        raise GpuUnavailableError(f"{BACKEND_ENV}=gpu but the GPU is unusable: {reason}")
    return "numpy", f"no usable GPU: {reason}"


def _warn_fallback(reason: str) -> None:
    """The one warning of a NumPy fallback, at the caller's line. It is given before anything
    is computed: under `python -W error` the first call raises it, arrays untouched, and
    later calls compute (docs/settings.md, "Warnings")."""
    from .plans import LOG_SHAPES_ENV  # (the module that logs them)

    global _warned
    # Set before warnings.warn, which may raise (-W error): the next call must not repeat it.
    _warned = True
    level = caller_stacklevel()
    log_shapes = settings.raw(LOG_SHAPES_ENV)
    warnings.warn(f"tunedgemm: computing with NumPy (no usable GPU: {reason})",
                  NumpyFallbackWarning, stacklevel=level)  # fmt: skip
    if log_shapes:
        warnings.warn(f"tunedgemm: {LOG_SHAPES_ENV}={log_shapes} logs no shapes here: only "
                      "calls that run on the GPU are logged", NumpyFallbackWarning,
                      stacklevel=level)  # fmt: skip


def has_warned() -> bool:
    """Whether the one warning of a NumPy fallback has been given in this process."""
    return _warned


def quietly_numpy(shape: tuple[int, int, int], dtype: np.dtype) -> bool:
    """Whether for_call would send this host call to NumPy without a word (no warning due)."""
    wish = requested()
    if wish == "numpy":
        return True
    if wish != "auto":
        return False
    if not cuda.status()[0]:
        return _warned
    return crossover.for_call(dtype, *shape)


def for_call(on_device: bool, shape: tuple[int, int, int] | None = None,
             dtype: Any = None) -> str:  # fmt: skip
    """The backend of one call; warns once per process when falling back to NumPy.

    With auto selection, host calls of a shape below the measured CPU/GPU crossover
    (tunedgemm/crossover.py) run on NumPy, which is faster there; that is no fallback and
    says nothing."""
    global _warned
    wish = requested()
    if on_device:
        ok, reason = cuda.status()
        if not ok:
            raise GpuUnavailableError(f"device arrays given but the GPU is unusable: {reason}")
        if wish == "numpy":
            raise ValueError(f"device arrays given but {BACKEND_ENV}=numpy")
        return "gpu"
    if wish == "numpy":
        return "numpy"
    ok, reason = cuda.status()
    if not ok:
        if wish == "gpu":
            raise GpuUnavailableError(f"{BACKEND_ENV}=gpu but the GPU is unusable: {reason}")
        if not _warned:
            _warn_fallback(reason)
        return "numpy"
    if wish == "auto" and shape is not None and crossover.for_call(dtype, *shape):
        return "numpy"
    return "gpu"
