"""cuBLAS as the reference (and peer) GEMM, through scikit-cuda; the one place that imports it.

scikit-cuda 0.5.3, its last release, predates setuptools 81 (no `pkg_resources`) and
NumPy 2 (`skcuda.misc` fails). Only `skcuda.cublas` is used here. It is imported with
a stand-in `pkg_resources` that provides the two calls scikit-cuda makes (in its package
`__init__` and in `version`), whatever setuptools is installed, and with its warnings
silenced. Any failure is caught and reported by `status()`: the cuBLAS check is optional
and never affects `sgemm` itself.

GEMM calls go straight to the ctypes functions scikit-cuda has loaded and typed
(`_libcublas.cublasSgemm_v2`), which saves its per-call Python wrapper; where they are
missing, the wrapper is used.
"""

from __future__ import annotations

import ctypes
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


def _handle() -> int:
    """The cuBLAS handle of the GPU this thread works for (a handle belongs to one GPU)."""
    from . import cuda

    return _handle_of(cuda._thread.__dict__.get("bound_ordinal"))


@functools.lru_cache(maxsize=64)
def _handle_of(bound_ordinal: int | None) -> int:
    from . import cuda

    cuda.context()  # called in a thread of that GPU: the handle is made for it
    return int(_cublas().cublasCreate())


# (cuBLAS handle, stream) last set: a handle's stream is state shared by every thread, so
# setting it and launching go together, under _handle_lock.
_stream_in_use: list[tuple[int, int] | None] = [None]
_handle_lock = threading.Lock()


def set_stream(stream: Any) -> None:
    """Run later cuBLAS calls on this stream: None (the legacy default stream), a PyCUDA
    stream or a raw handle. The caller holds _handle_lock."""
    from ._driver import stream_handle

    handle, cublas_handle = stream_handle(stream), _handle()
    if (cublas_handle, handle) != _stream_in_use[0]:
        _cublas().cublasSetStream(cublas_handle, handle)
        _stream_in_use[0] = (cublas_handle, handle)


class CublasError(RuntimeError):
    """A cuBLAS call returned a status other than CUBLAS_STATUS_SUCCESS."""


# cublasStatus_t values (cublas_api.h), for error messages.
_STATUS_NAMES = {
    1: "CUBLAS_STATUS_NOT_INITIALIZED",
    3: "CUBLAS_STATUS_ALLOC_FAILED",
    7: "CUBLAS_STATUS_INVALID_VALUE",
    8: "CUBLAS_STATUS_ARCH_MISMATCH",
    11: "CUBLAS_STATUS_MAPPING_ERROR",
    13: "CUBLAS_STATUS_EXECUTION_FAILED",
    14: "CUBLAS_STATUS_INTERNAL_ERROR",
    15: "CUBLAS_STATUS_NOT_SUPPORTED",
    16: "CUBLAS_STATUS_LICENSE_ERROR",
}
_OP_N, _OP_T = 0, 1  # cublasOperation_t


def check_status(status: int, routine: str) -> None:
    """Raise CublasError, naming the routine and the status, unless status is 0 (success)."""
    if status != 0:
        name = _STATUS_NAMES.get(status, "unknown status")
        raise CublasError(f"tunedgemm: {routine} failed with {name} ({status})")


class _DirectGemm:
    """cublas<t>gemm_v2 called through scikit-cuda's loaded ctypes binding, skipping its
    Python wrapper and its per-call conversions: the scalar buffers and their references are made
    once, and set under _handle_lock before each call. That sharing is safe because cuBLAS
    reads host scalars (the default pointer mode) before the call returns."""

    def __init__(self, function: Any, scalar: Any, name: str) -> None:
        self.function = function
        self.name = name
        self.alpha, self.beta = scalar(), scalar()
        self.alpha_ref, self.beta_ref = ctypes.byref(self.alpha), ctypes.byref(self.beta)

    def __call__(self, handle: int, form: BlasForm, alpha: float, beta: float) -> None:
        """One call; the caller holds _handle_lock."""
        self.alpha.value = alpha
        self.beta.value = beta
        status = self.function(
            handle,
            _OP_T if form.trans_a else _OP_N,
            _OP_T if form.trans_b else _OP_N,
            form.m,
            form.n,
            form.k,
            self.alpha_ref,
            form.a,
            max(1, form.lda),
            form.b,
            max(1, form.ldb),
            self.beta_ref,
            form.c,
            max(1, form.ldc),
        )
        check_status(status, self.name)


class _WrappedGemm:
    """cublasSgemm / cublasDgemm through scikit-cuda's Python wrapper (which checks the status)."""

    def __init__(self, routine: Any) -> None:
        self.routine = routine

    def __call__(self, handle: int, form: BlasForm, alpha: float, beta: float) -> None:
        self.routine(handle, "t" if form.trans_a else "n", "t" if form.trans_b else "n",
                     form.m, form.n, form.k, alpha, form.a, max(1, form.lda), form.b,
                     max(1, form.ldb), beta, form.c, max(1, form.ldc))  # fmt: skip


# The argument types scikit-cuda 0.5.3 declares for cublas<t>gemm_v2 (handle, transa, transb,
# m, n, k, alpha, A, lda, B, ldb, beta, C, ldc). The direct call relies on them (undeclared,
# ctypes would pass pointers as C ints), so it is used only when they are exactly these.
_P, _I = ctypes.c_void_p, ctypes.c_int
_GEMM_ARGTYPES = (_P, _I, _I, _I, _I, _I, _P, _P, _I, _P, _I, _P, _P, _I)


@functools.lru_cache(maxsize=4)
def _gemm_call(dtype: np.dtype) -> _DirectGemm | _WrappedGemm:
    """How to call cuBLAS GEMM in this dtype: directly when scikit-cuda exposes its binding."""
    cublas = _cublas()
    single = np.dtype(dtype) == np.float32
    name = "cublasSgemm_v2" if single else "cublasDgemm_v2"
    function = getattr(getattr(cublas, "_libcublas", None), name, None)
    if function is None or tuple(getattr(function, "argtypes", None) or ()) != _GEMM_ARGTYPES:
        return _WrappedGemm(cublas.cublasSgemm if single else cublas.cublasDgemm)
    return _DirectGemm(function, ctypes.c_float if single else ctypes.c_double, name)


def gemm(form: BlasForm, dtype: np.dtype, alpha: float, beta: float, stream: Any = None,
         precision: str = "ieee") -> None:  # fmt: skip
    """cublasSgemm / cublasDgemm on the same device operands as tunedgemm's own kernel (in
    "tf32" mode cuBLAS's TF32 GEMM; every other mode runs the IEEE routine, which is at least
    as accurate)."""
    if form.m == 0 or form.n == 0:
        return
    if precision == "tf32":
        _gemm_tf32(form, alpha, beta, stream)
        return
    call = _gemm_call(dtype)
    with _handle_lock:
        set_stream(stream)
        call(_handle(), form, alpha, beta)


def direct(dtype: np.dtype, precision: str = "ieee") -> Any:
    """call(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, stream): one
    cuBLAS GEMM on raw addresses and a raw stream handle, for plans (tunedgemm/plans.py)."""
    if precision == "tf32":

        def tf32(ta: bool, tb: bool, m: int, n: int, k: int, alpha: float, a: int, lda: int,
                 b: int, ldb: int, beta: float, c: int, ldc: int, stream: int) -> None:  # fmt: skip
            _gemm_tf32(BlasForm(ta, tb, m, n, k, a, lda, b, ldb, c, ldc, 4), alpha, beta, stream)

        return tf32
    call = _gemm_call(dtype)
    if not isinstance(call, _DirectGemm):
        size = np.dtype(dtype).itemsize

        def wrapped(ta: bool, tb: bool, m: int, n: int, k: int, alpha: float, a: int,
                    lda: int, b: int, ldb: int, beta: float, c: int, ldc: int,
                    stream: int) -> None:  # fmt: skip
            gemm(BlasForm(ta, tb, m, n, k, a, lda, b, ldb, c, ldc, size), dtype, alpha, beta,
                 stream)  # fmt: skip

        return wrapped
    function, alpha_ref, beta_ref, name = call.function, call.alpha_ref, call.beta_ref, call.name
    alpha_box, beta_box = call.alpha, call.beta
    handle = _handle()

    def run(ta: bool, tb: bool, m: int, n: int, k: int, alpha: float, a: int, lda: int, b: int,
            ldb: int, beta: float, c: int, ldc: int, stream: int) -> None:  # fmt: skip
        with _handle_lock:
            if (handle, stream) != _stream_in_use[0]:
                _cublas().cublasSetStream(handle, stream)
                _stream_in_use[0] = (handle, stream)
            alpha_box.value = alpha
            beta_box.value = beta
            status = function(handle, _OP_T if ta else _OP_N, _OP_T if tb else _OP_N, m, n, k,
                              alpha_ref, a, max(1, lda), b, max(1, ldb), beta_ref, c,
                              max(1, ldc))  # fmt: skip
        if status:
            check_status(status, name)

    return run


# cublasGemmEx with CUBLAS_COMPUTE_32F_FAST_TF32: cuBLAS's own TF32 GEMM (scikit-cuda has no
# binding for it). Arguments: handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype,
# ldb, beta, C, Ctype, ldc, computeType, algo.
_CUDA_R_32F = 0
_CUBLAS_COMPUTE_32F_FAST_TF32 = 77
_CUBLAS_GEMM_DEFAULT = -1
_GEMM_EX_ARGTYPES = (_P, _I, _I, _I, _I, _I, _P, _P, _I, _I, _P, _I, _I, _P, _P, _I, _I, _I, _I)


@functools.lru_cache(maxsize=1)
def _gemm_ex() -> Any:
    function = _cublas()._libcublas.cublasGemmEx
    function.argtypes = _GEMM_EX_ARGTYPES
    function.restype = ctypes.c_int
    return function


def _gemm_tf32(form: BlasForm, alpha: float, beta: float, stream: Any) -> None:
    """cuBLAS's TF32 tensor-core GEMM (float32 in and out, TF32 products)."""
    function = _gemm_ex()
    alpha_c, beta_c = ctypes.c_float(alpha), ctypes.c_float(beta)
    with _handle_lock:
        set_stream(stream)
        status = function(
            _handle(), _OP_T if form.trans_a else _OP_N, _OP_T if form.trans_b else _OP_N,
            form.m, form.n, form.k, ctypes.byref(alpha_c), form.a, _CUDA_R_32F, max(1, form.lda),
            form.b, _CUDA_R_32F, max(1, form.ldb), ctypes.byref(beta_c), form.c, _CUDA_R_32F,
            max(1, form.ldc), _CUBLAS_COMPUTE_32F_FAST_TF32, _CUBLAS_GEMM_DEFAULT)  # fmt: skip
    check_status(status, "cublasGemmEx (TF32)")


# cublas<t>gemmStridedBatched: (handle, transa, transb, m, n, k, alpha, A, lda, strideA, B, ldb,
# strideB, beta, C, ldc, strideC, batchCount), strides in elements (long long).
_L = ctypes.c_longlong
_BATCHED_ARGTYPES = (_P, _I, _I, _I, _I, _I, _P, _P, _I, _L, _P, _I, _L, _P, _P, _I, _L, _I)


@functools.lru_cache(maxsize=4)
def _batched_call(dtype: np.dtype) -> tuple[Any, Any]:
    """(cublas<t>gemmStridedBatched from the libcublas scikit-cuda loaded, its scalar type)."""
    single = np.dtype(dtype) == np.float32
    name = "cublasSgemmStridedBatched" if single else "cublasDgemmStridedBatched"
    function = getattr(_cublas()._libcublas, name)
    function.argtypes = _BATCHED_ARGTYPES
    function.restype = ctypes.c_int
    return function, ctypes.c_float if single else ctypes.c_double


def gemm_batched(form: BlasForm, strides: tuple[int, int, int], batch: int, dtype: np.dtype,
                 alpha: float, beta: float, stream: Any = None) -> None:  # fmt: skip
    """`batch` products of the form's shape, operand i at form's address + i * strides
    (elements; a stride of 0 broadcasts the operand), in one cuBLAS call."""
    if form.m == 0 or form.n == 0 or batch == 0:
        return
    function, real = _batched_call(dtype)
    with _handle_lock:
        set_stream(stream)
        status = function(
            _handle(), _OP_T if form.trans_a else _OP_N, _OP_T if form.trans_b else _OP_N,
            form.m, form.n, form.k, ctypes.byref(real(alpha)), form.a, max(1, form.lda),
            strides[0], form.b, max(1, form.ldb), strides[1], ctypes.byref(real(beta)),
            form.c, max(1, form.ldc), strides[2], batch)  # fmt: skip
    check_status(status, "cublasGemmStridedBatched")
