"""tunedgemm.dask on a local cluster: one worker per GPU (CuPy blocks), and the result checked.

Usage: python examples/dask_matmul.py [--n 8192] [--chunk 2048] [--dtype float32]

Each worker is a process that sees one GPU (tunedgemm.dask.local_gpu_cluster). Without a
GPU (or without CuPy) it runs on two CPU workers with NumPy blocks instead, and says so.
The same code runs on a cluster of machines: replace the cluster with
distributed.Client("tcp://scheduler:8786") (docs/multigpu.md).
"""

from __future__ import annotations

import argparse
import sys
import time

import dask.array as da
import distributed

import tunedgemm.dask as tgd
from tunedgemm import devices


def on_gpus() -> bool:
    if not devices.selected():
        return False
    try:
        import cupy  # noqa: F401
    except ImportError:
        return False
    return True


def synchronize() -> None:
    """Wait for the work queued on this worker's GPU."""
    import cupy

    cupy.cuda.runtime.deviceSynchronize()


def random_matrix(n: int, chunk: int, dtype: str, seed: int, gpu: bool) -> da.Array:
    """Uniform(-1, 1) values made on the workers, moved to their GPU when there is one."""
    x = da.random.default_rng(seed).uniform(-1, 1, (n, n), chunks=chunk).astype(dtype)
    if gpu:
        import cupy

        x = x.map_blocks(cupy.asarray, dtype=x.dtype, meta=cupy.empty((0, 0), dtype))
    return x


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=None, help="matrix edge (8192 on GPUs)")
    parser.add_argument("--chunk", type=int, default=None, help="block edge (n / 4)")
    parser.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    args = parser.parse_args()
    gpu = on_gpus()
    n = args.n or (8192 if gpu else 1024)
    chunk = args.chunk or max(n // 4, 1)
    if gpu:
        cluster = tgd.local_gpu_cluster()
        print(f"{len(cluster.workers)} GPU worker(s): {devices.describe()}")
    else:
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1,
                                           dashboard_address=":0")  # fmt: skip
        print("no GPU (or no CuPy) here: two CPU workers multiply NumPy blocks instead")
    with cluster, distributed.Client(cluster) as client:
        x = random_matrix(n, chunk, args.dtype, 1, gpu).persist()
        y = random_matrix(n, chunk, args.dtype, 2, gpu).persist()
        distributed.wait([x, y])
        start = time.perf_counter()
        product = tgd.matmul(x, y).persist()
        distributed.wait(product)
        if gpu:  # the products are queued on each GPU: count the time until they are done
            client.run(synchronize)
        seconds = time.perf_counter() - start
        print(f"{n}^2 {args.dtype} in blocks of {chunk}: {seconds:.2f} s, "
              f"{2 * n**3 / seconds / 1e9:.1f} GFLOP/s")  # fmt: skip
        passed, error, tol = tgd.check_sample(x, y, product, blocks=3)
        print(f"sampled blocks against float64: scaled error {error:.2e} (tolerance {tol:.2e}): "
              f"{'right' if passed else 'WRONG'}")  # fmt: skip
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
