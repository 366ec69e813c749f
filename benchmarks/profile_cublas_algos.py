"""What each cuBLAS route costs per call at a few shapes: cublasSgemm/Dgemm (scikit-cuda's
binding), cuBLASLt's first algorithms (the heuristic's order), PyTorch's and CuPy's x @ y, all
on the same operands, timed with events around back-to-back calls.

    python benchmarks/profile_cublas_algos.py [--sizes 256,512,1024] [--algorithms 12]
"""

from __future__ import annotations

# The timed lambdas run within the iteration that makes them.
# ruff: noqa: B023
import argparse

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="256,512,1024")
    parser.add_argument("--algorithms", type=int, default=12)
    args = parser.parse_args()
    import cupy
    import torch
    from profile_device import gpu_us  # (this folder: scripts run as benchmarks/NAME.py)

    from tunedgemm import cublaslt, cuda, reference

    torch.backends.cuda.matmul.allow_tf32 = False
    cuda.context()

    for dtype in ("float32", "float64"):
        for size in (int(s) for s in args.sizes.split(",")):
            host = np.random.default_rng().uniform(-1, 1, (size, size)).astype(dtype)
            x, y = cupy.asarray(host), cupy.asarray(host)
            c = cupy.empty((size, size), dtype, order="F")
            tx, ty = torch.from_numpy(host).cuda(), torch.from_numpy(host).cuda()
            classic = reference.direct(np.dtype(dtype))
            # C(F) = x @ y with C-ordered x, y: column-major op(A)=x^T^T... as sgemm runs it
            a, b, pc = x.data.ptr, y.data.ptr, c.data.ptr
            rows = {"cublas (scikit-cuda binding)": lambda: classic(True, True, size, size, size,
                                                                    1.0, a, size, b, size, 0.0,
                                                                    pc, size, 0),
                    "torch x @ y": lambda: tx @ ty, "cupy x @ y": lambda: x @ y}  # fmt: skip
            for algo in cublaslt.algorithms(dtype, "ieee", True, True, size, size, size, size,
                                            size, size, count=args.algorithms):  # fmt: skip
                rows[f"{algo} (ws {algo.workspace_size >> 10} KiB)"] = (
                    lambda algo=algo: algo(a, b, pc, 1.0, 0.0, 0))
            for name, work in rows.items():
                print(f"{dtype} {size:5d} {name:36} {gpu_us(work):8.1f} us", flush=True)


if __name__ == "__main__":
    main()
