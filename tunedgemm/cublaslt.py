"""cuBLAS's GEMM through cuBLASLt with the algorithm chosen once per plan (the peer library's
fast path, as PyTorch takes it).

A cublasSgemm call spends 10-20 us of host time on the H100 machine choosing an algorithm,
every call; at 64^3-512^3 that is longer than the product. cuBLASLt lets the choice be made
once: a plan keeps the operation and layout descriptors and the heuristic's algorithm, and a
call is one cublasLtMatmul. The library is the libcublasLt beside the libcublas that
scikit-cuda loaded. Anything missing or refused here returns None, and the plan calls cuBLAS
through scikit-cuda as before.
"""

from __future__ import annotations

import ctypes
import functools
from pathlib import Path
from typing import Any

_P, _I, _U64, _I64 = ctypes.c_void_p, ctypes.c_int, ctypes.c_uint64, ctypes.c_int64
_SIZE = ctypes.c_size_t
CUDA_R_32F, CUDA_R_64F = 0, 1
COMPUTE = {("float32", "ieee"): 68, ("float64", "ieee"): 70, ("float32", "tf32"): 77}
DESC_TRANSA, DESC_TRANSB = 3, 4
LAYOUT_BATCH_COUNT, LAYOUT_STRIDED_BATCH_OFFSET = 5, 6
PREF_MAX_WORKSPACE_BYTES = 1
MAX_WORKSPACE = 32 << 20  # bytes an algorithm may use (per plan and stream)
# A repeated call (the same operands, scalars, workspace and stream as one of the last few) is
# captured as a CUDA graph and replayed from then on (tunedgemm/_fastlaunch.c): 1.7 us of
# host time a call instead of 5-12 at 256^3-512^3 float64 on the H100 machine
# (benchmarks/probe_graph_launch.py, 2026-11-26 16:25 UTC). 0 turns it off.
GRAPHS_ENV = "TUNEDGEMM_GRAPHS"


class _Heuristic(ctypes.Structure):
    """cublasLtMatmulHeuristicResult_t."""

    _fields_ = [("algo", ctypes.c_uint64 * 8), ("workspace_size", _SIZE), ("state", _I),
                ("waves", ctypes.c_float), ("reserved", _I * 4)]  # fmt: skip


@functools.lru_cache(maxsize=1)
def _lib() -> Any:
    from . import reference

    cublas = reference._cublas()._libcublas
    path = Path(getattr(cublas, "_name", "libcublas.so"))
    candidates = [str(path.with_name(path.name.replace("libcublas", "libcublasLt"))),
                  "libcublasLt.so", "libcublasLt.so.13", "libcublasLt.so.12"]  # fmt: skip
    for name in candidates:
        try:
            lt = ctypes.CDLL(name)
            break
        except OSError:
            continue
    else:
        raise OSError("libcublasLt not found")
    for fn, args in (
        ("cublasLtCreate", [ctypes.POINTER(_P)]),
        ("cublasLtMatmulDescCreate", [ctypes.POINTER(_P), _I, _I]),
        ("cublasLtMatmulDescSetAttribute", [_P, _I, _P, _SIZE]),
        ("cublasLtMatrixLayoutCreate", [ctypes.POINTER(_P), _I, _U64, _U64, _I64]),
        ("cublasLtMatrixLayoutSetAttribute", [_P, _I, _P, _SIZE]),
        ("cublasLtMatmulPreferenceCreate", [ctypes.POINTER(_P)]),
        ("cublasLtMatmulPreferenceSetAttribute", [_P, _I, _P, _SIZE]),
        ("cublasLtMatmulAlgoGetHeuristic", [_P, _P, _P, _P, _P, _P, _P, _I,
                                            ctypes.POINTER(_Heuristic), ctypes.POINTER(_I)]),
        ("cublasLtMatmul", [_P, _P, _P, _P, _P, _P, _P, _P, _P, _P, _P, _P, _P, _P, _SIZE, _P]),
    ):  # fmt: skip
        getattr(lt, fn).argtypes = args
        getattr(lt, fn).restype = _I
    return lt


def _handle() -> int:
    """The cuBLASLt handle of the GPU this thread works for."""
    from . import cuda

    return _handle_of(cuda._thread.__dict__.get("bound_ordinal"))


@functools.lru_cache(maxsize=64)
def _handle_of(bound_ordinal: int | None) -> int:
    from . import cuda

    cuda.context()  # called in a thread of that GPU
    handle = _P()
    _check(_lib().cublasLtCreate(ctypes.byref(handle)), "cublasLtCreate")
    return int(handle.value or 0)


def _check(status: int, what: str) -> None:
    if status != 0:
        from .reference import CublasError

        raise CublasError(f"tunedgemm: {what} failed with cuBLAS status {status}")


def _layout(dtype: int, rows: int, cols: int, ld: int, batch: int = 1, stride: int = 0) -> int:
    lt = _lib()
    layout = _P()
    _check(lt.cublasLtMatrixLayoutCreate(ctypes.byref(layout), dtype, rows, cols, max(ld, 1)),
           "cublasLtMatrixLayoutCreate")  # fmt: skip
    if batch > 1:
        count, offset = ctypes.c_int32(batch), ctypes.c_int64(stride)
        for attribute, value in ((LAYOUT_BATCH_COUNT, count), (LAYOUT_STRIDED_BATCH_OFFSET,
                                                               offset)):  # fmt: skip
            _check(lt.cublasLtMatrixLayoutSetAttribute(layout, attribute, ctypes.byref(value),
                                                       ctypes.sizeof(value)),
                   "cublasLtMatrixLayoutSetAttribute")  # fmt: skip
    return int(layout.value or 0)


def runner(dtype: str, precision: str, trans_a: bool, trans_b: bool, m: int, n: int, k: int,
           lda: int, ldb: int, ldc: int, batch: int = 1,
           strides: tuple[int, int, int] = (0, 0, 0)) -> Algorithm | None:  # fmt: skip
    """run(a, b, c, alpha, beta, stream) for one column-major product (or a strided batch of
    them: element strides of A, B, C) through cuBLASLt with its heuristic's first algorithm;
    None where cuBLASLt is missing or has no algorithm for it."""
    found = algorithms(dtype, precision, trans_a, trans_b, m, n, k, lda, ldb, ldc, batch,
                       strides, count=1)  # fmt: skip
    return found[0] if found else None


def algorithms(dtype: str, precision: str, trans_a: bool, trans_b: bool, m: int, n: int, k: int,
               lda: int, ldb: int, ldc: int, batch: int = 1,
               strides: tuple[int, int, int] = (0, 0, 0),
               count: int = 4) -> list[Algorithm]:  # fmt: skip
    """The heuristic's first `count` algorithms for the product, best first, each callable as
    run(a, b, c, alpha, beta, stream): candidates for autotuning (tunedgemm/autotune.py)."""
    compute = COMPUTE.get((dtype, precision))
    if compute is None or min(m, n, k) <= 0:
        return []
    try:
        problem = _Problem(dtype, compute, trans_a, trans_b, m, n, k, lda, ldb, ldc, batch,
                           strides)  # fmt: skip
        return [Algorithm(problem, found, i) for i, found in enumerate(problem.search(count))]
    except Exception:  # no library, no algorithm, a refused descriptor: cuBLAS as before
        return []


class _Problem:
    """The operation and layout descriptors of one product (shared by its algorithms)."""

    def __init__(self, dtype: str, compute: int, trans_a: bool, trans_b: bool, m: int, n: int,
                 k: int, lda: int, ldb: int, ldc: int, batch: int,
                 strides: tuple[int, int, int]) -> None:  # fmt: skip
        lt = _lib()
        kind = CUDA_R_32F if dtype == "float32" else CUDA_R_64F
        self.real = ctypes.c_float if dtype == "float32" else ctypes.c_double
        desc = _P()
        _check(lt.cublasLtMatmulDescCreate(ctypes.byref(desc), compute, kind),
               "cublasLtMatmulDescCreate")  # fmt: skip
        for attribute, flag in ((DESC_TRANSA, trans_a), (DESC_TRANSB, trans_b)):
            op = ctypes.c_int32(1 if flag else 0)
            _check(lt.cublasLtMatmulDescSetAttribute(desc, attribute, ctypes.byref(op), 4),
                   "cublasLtMatmulDescSetAttribute")  # fmt: skip
        self.desc = int(desc.value or 0)
        a_rows, a_cols = (k, m) if trans_a else (m, k)
        b_rows, b_cols = (n, k) if trans_b else (k, n)
        self.a_layout = _layout(kind, a_rows, a_cols, lda, batch, strides[0])
        self.b_layout = _layout(kind, b_rows, b_cols, ldb, batch, strides[1])
        self.c_layout = _layout(kind, m, n, ldc, batch, strides[2])
        self.matmul = lt.cublasLtMatmul
        self.handle = _handle()

    def search(self, count: int) -> list[_Heuristic]:
        """The heuristic's best `count` algorithms that fit MAX_WORKSPACE."""
        lt = _lib()
        pref = _P()
        _check(lt.cublasLtMatmulPreferenceCreate(ctypes.byref(pref)), "PreferenceCreate")
        limit = ctypes.c_uint64(MAX_WORKSPACE)
        _check(lt.cublasLtMatmulPreferenceSetAttribute(pref, PREF_MAX_WORKSPACE_BYTES,
                                                       ctypes.byref(limit), 8),
               "PreferenceSetAttribute")  # fmt: skip
        results, found = (_Heuristic * count)(), _I(0)
        _check(lt.cublasLtMatmulAlgoGetHeuristic(self.handle, self.desc, self.a_layout,
                                                 self.b_layout, self.c_layout, self.c_layout,
                                                 pref, count, results, ctypes.byref(found)),
               "cublasLtMatmulAlgoGetHeuristic")  # fmt: skip
        return [r for r in results[: found.value] if r.state == 0]


class Algorithm:
    """One cuBLASLt algorithm for one product, and a workspace per stream (two streams must
    not share one). Counts as cuBLAS among autotuning's candidates."""

    is_cublas = True

    def __init__(self, problem: _Problem, found: _Heuristic, index: int) -> None:
        self.problem, self.index = problem, index
        self.algo = found.algo  # kept alive: cublasLtMatmul reads it on every call
        self.algo_ref = ctypes.byref(self.algo)
        self.workspace_size = int(found.workspace_size)
        self.fast = _fast_matmul(problem, self.algo, self.workspace_size)
        self.workspaces: Any = None
        if self.workspace_size:
            from . import cuda

            self.workspaces = cuda.StreamWorkspaces(self.workspace_size)

    def reserve(self, stream: int) -> None:
        """Make the workspace of launches on `stream` now (before results are written)."""
        if self.workspaces is not None:
            self.workspaces(stream)

    def __call__(self, a: int, b: int, c: int, alpha: float, beta: float, stream: int) -> None:
        workspace = self.workspaces(stream) if self.workspaces is not None else None
        if self.fast is not None:
            status = self.fast(a, b, c, alpha, beta, workspace, stream)
            if status:
                _check(status, "cublasLtMatmul")
            return
        p = self.problem
        alpha_c, beta_c = p.real(alpha), p.real(beta)
        status = p.matmul(p.handle, p.desc, ctypes.byref(alpha_c), a, p.a_layout, b,
                          p.b_layout, ctypes.byref(beta_c), c, p.c_layout, c, p.c_layout,
                          self.algo_ref, workspace, self.workspace_size, stream)  # fmt: skip
        if status:
            _check(status, "cublasLtMatmul")

    def __str__(self) -> str:
        return f"cublasLt#{self.index}"

    __repr__ = __str__


def _fast_matmul(problem: _Problem, algo: Any, workspace_size: int) -> Any:
    """cublasLtMatmul for one algorithm, called from C (tunedgemm/_fastlaunch.c: the constant
    arguments kept once, the scalars on the C stack); None without the extension."""
    try:
        from . import _fastlaunch
    except ImportError:
        return None
    from . import _driver, settings

    p = problem
    graphs = _driver.graph_calls() if settings.get(GRAPHS_ENV) else None
    return _fastlaunch.LtMatmul(ctypes.cast(p.matmul, _P).value, p.handle, p.desc, p.a_layout,
                                p.b_layout, p.c_layout, ctypes.addressof(algo), workspace_size,
                                p.real is ctypes.c_double, graphs)  # fmt: skip


def available() -> bool:
    """Whether cuBLASLt loads and opens a handle here."""
    try:
        _handle()
        return True
    except Exception:
        return False
