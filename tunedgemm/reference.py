"""cuBLAS as the reference (and peer) GEMM, through scikit-cuda; the one place that imports it.

scikit-cuda 0.5.3, its last release, predates setuptools 81 (no `pkg_resources`) and
NumPy 2 (`skcuda.misc` fails). Only `skcuda.cublas` is used here. It is imported with
a stand-in `pkg_resources` that provides the two calls scikit-cuda makes (in its package
`__init__` and in `version`), whatever setuptools is installed, and with its warnings
silenced. Any failure is caught and reported by `status()`: the cuBLAS check is optional
and never affects `sgemm` itself.
"""

from __future__ import annotations

import functools
import importlib
import sys
import threading
import types
import warnings
from typing import Any

import numpy as np

from ._layout import BlasForm


def _stand_in_pkg_resources() -> types.ModuleType:
    """The two pkg_resources calls scikit-cuda makes: declare_namespace and require."""
    from importlib import metadata

    def require(name: str) -> list[types.SimpleNamespace]:
        return [types.SimpleNamespace(version=metadata.version(name))]

    module = types.ModuleType("pkg_resources")
    module.declare_namespace = lambda name: None  # type: ignore[attr-defined]
    module.require = require  # type: ignore[attr-defined]
    return module


@functools.lru_cache(maxsize=1)
def _cublas() -> Any:
    """skcuda.cublas, imported without the parts that fail on current Python packages."""
    saved = sys.modules.get("pkg_resources")
    sys.modules["pkg_resources"] = _stand_in_pkg_resources()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return importlib.import_module("skcuda.cublas")
    finally:
        if saved is None:
            sys.modules.pop("pkg_resources", None)
        else:
            sys.modules["pkg_resources"] = saved


@functools.lru_cache(maxsize=1)
def status() -> tuple[bool, str]:
    """(usable, description): scikit-cuda imports, finds libcublas, and opens a handle."""
    from . import cuda

    ok, reason = cuda.status()
    if not ok:
        return False, f"no GPU: {reason}"
    try:
        cublas = _cublas()
        version = cublas.cublasGetVersion(_handle())
    except Exception as exc:
        return False, f"scikit-cuda/cuBLAS unavailable ({type(exc).__name__}: {exc})"
    return True, f"cuBLAS {version} via scikit-cuda"


@functools.lru_cache(maxsize=1)
def _handle() -> int:
    from . import cuda

    cuda.context()
    return int(_cublas().cublasCreate())


_stream_in_use: list[Any] = [None]
# The handle's stream is state shared by every thread: setting it and launching go together.
_handle_lock = threading.Lock()


def set_stream(stream: Any) -> None:
    """Run later cuBLAS calls on this PyCUDA stream (None: the default stream)."""
    if stream is not _stream_in_use[0]:
        _cublas().cublasSetStream(_handle(), 0 if stream is None else stream.handle)
        _stream_in_use[0] = stream


def gemm(form: BlasForm, dtype: np.dtype, alpha: float, beta: float, stream: Any = None) -> None:
    """cublasSgemm / cublasDgemm on the same device operands as tunedgemm's own kernel."""
    cublas = _cublas()
    routine = cublas.cublasSgemm if np.dtype(dtype) == np.float32 else cublas.cublasDgemm
    if form.m == 0 or form.n == 0:
        return
    with _handle_lock:
        _launch(routine, form, alpha, beta, stream)


def _launch(routine: Any, form: BlasForm, alpha: float, beta: float, stream: Any) -> None:
    set_stream(stream)
    routine(
        _handle(),
        "t" if form.trans_a else "n",
        "t" if form.trans_b else "n",
        form.m,
        form.n,
        form.k,
        alpha,
        form.a,
        max(1, form.lda),
        form.b,
        max(1, form.ldb),
        beta,
        form.c,
        max(1, form.ldc),
    )
