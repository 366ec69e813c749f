"""Would replaying a captured CUDA graph queue a cuBLASLt product faster than calling it?

Usage: python benchmarks/probe_graph_launch.py [--sizes 256,512] [--dtype float64]

Issue 13: dgemm with a new PyTorch result at 512^3 costs 14-15 us of host time a call, about
the GPU time of the product, so small stalls of the host leave the GPU idle; cublasLtMatmul
alone takes 6-9 us of it (benchmarks/probe_call_cost.py). For cuBLASLt's first algorithms at
N^3 (NN, the operands of tunedgemm.tuning.problems), this times back-to-back calls of each,
made directly and as a one-call graph captured once and replayed with cuGraphLaunch (ctypes):
host us per call and CUDA-event us per call, the least of 5 loops of 50 calls. The graph's
results are checked against the direct call's (bit-equal).
"""

from __future__ import annotations

import argparse
import ctypes
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from probe_call_cost import run_us

CU_STREAM_NON_BLOCKING = 1
CU_STREAM_CAPTURE_MODE_RELAXED = 2


def _driver() -> ctypes.CDLL:
    cuda = ctypes.CDLL("libcuda.so.1")
    p, pp = ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)
    for name, args in (("cuStreamCreate", [pp, ctypes.c_uint]),
                       ("cuStreamBeginCapture_v2", [p, ctypes.c_int]),
                       ("cuStreamEndCapture", [p, pp]),
                       ("cuGraphInstantiateWithFlags", [pp, p, ctypes.c_ulonglong]),
                       ("cuGraphLaunch", [p, p])):  # fmt: skip
        getattr(cuda, name).argtypes = args
        getattr(cuda, name).restype = ctypes.c_int
    return cuda


def _ok(code: int, what: str) -> None:
    if code:
        raise RuntimeError(f"{what} failed ({code})")


def captured(cuda: ctypes.CDLL, call, on: int | None = None) -> ctypes.c_void_p:
    """The executable graph of what call(stream) queues, captured on the (non-default)
    stream `on`, or on a stream made for it."""
    stream, graph, executable = ctypes.c_void_p(on), ctypes.c_void_p(), ctypes.c_void_p()
    if on is None:
        _ok(cuda.cuStreamCreate(ctypes.byref(stream), CU_STREAM_NON_BLOCKING), "cuStreamCreate")
    _ok(cuda.cuStreamBeginCapture_v2(stream, CU_STREAM_CAPTURE_MODE_RELAXED), "BeginCapture")
    call(stream.value)
    _ok(cuda.cuStreamEndCapture(stream, ctypes.byref(graph)), "EndCapture")
    _ok(cuda.cuGraphInstantiateWithFlags(ctypes.byref(executable), graph, 0), "Instantiate")
    return executable


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="256,512")
    parser.add_argument("--dtype", default="float64")
    args = parser.parse_args()
    dtype = np.dtype(args.dtype)

    import os

    import pycuda.driver as drv

    # The direct column calls cublasLtMatmul each time: tunedgemm's own replay off.
    os.environ["TUNEDGEMM_GRAPHS"] = "0"

    from tunedgemm import cublaslt, cuda
    from tunedgemm.tuning import problems

    cuda.context()
    driver = _driver()
    print(f"# {cuda.device_name()}, {dtype.name} NN; us per call (host / events)")
    print(f"{'size':>5} {'algorithm':12} {'direct':>15} {'graph replay':>15} {'same bits':>9}")
    for n in (int(s) for s in args.sizes.split(",")):
        problem = problems.make(n, n, n, dtype, padded=True)
        form = problem.form
        nbytes = form.ldc * n * dtype.itemsize
        for algo in cublaslt.algorithms(dtype.name, "ieee", form.trans_a, form.trans_b, n, n,
                                        n, form.lda, form.ldb, form.ldc, count=10):  # fmt: skip
            direct = run_us(lambda algo=algo, f=form: algo(f.a, f.b, f.c, 1.0, 0.0, 0))
            drv.Context.synchronize()
            want = np.empty(nbytes, np.uint8)
            drv.memcpy_dtoh(want, form.c)
            drv.memset_d8(form.c, 0xFF, nbytes)  # NaNs: an unwritten element shows
            algo.reserve(0)  # the workspace of stream 0, which the captured call bakes in
            graph = captured(driver, lambda s, algo=algo, f=form: _with_workspace_of(algo, 0, s, f))
            replay = run_us(lambda g=graph: driver.cuGraphLaunch(g, None))
            drv.Context.synchronize()
            got = np.empty(nbytes, np.uint8)
            drv.memcpy_dtoh(got, form.c)
            same = bool(np.array_equal(got, want))
            print(f"{n:5d} {algo!s:12} {direct[0]:7.1f} {direct[1]:7.1f} "
                  f"{replay[0]:7.1f} {replay[1]:7.1f} {same!s:>9}", flush=True)  # fmt: skip
    return 0


def _with_workspace_of(algo, stream: int, captured_on: int, form) -> None:
    """algo's call captured on `captured_on` with the workspace of `stream` (the stream the
    graph is replayed on)."""
    workspace = algo.workspaces(stream) if algo.workspaces is not None else None
    if algo.fast is not None:
        status = algo.fast(form.a, form.b, form.c, 1.0, 0.0, workspace, captured_on)
    else:
        raise RuntimeError("needs tunedgemm's _fastlaunch extension")
    _ok(status, "cublasLtMatmul under capture")


if __name__ == "__main__":
    sys.exit(main())
