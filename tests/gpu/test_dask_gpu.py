"""tunedgemm.dask with one GPU worker: CuPy blocks stay on the device, NumPy blocks take the host
pipeline, results checked against a float64 reference."""

from __future__ import annotations

import os

import numpy as np
import pytest
from helpers import assert_gemm, dask_client, uniform

pytestmark = pytest.mark.gpu
cupy = pytest.importorskip("cupy")
da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")
tgd = pytest.importorskip("tunedgemm.dask")


@pytest.fixture(scope="module")
def client():
    """One worker thread in this process: it shares the process's GPU and CUDA context."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TUNEDGEMM_CUBLAS", "0")  # tunedgemm's own kernels, not cuBLAS
        yield from dask_client(1, processes=False)


def on_device(values, chunks):
    return da.from_array(values, chunks=chunks).map_blocks(
        cupy.asarray, dtype=values.dtype, meta=cupy.empty((0, 0), values.dtype)
    )


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matmul_of_cupy_blocks(client, rng, dtype):
    a = uniform(rng, (1000, 1300), dtype)
    b = uniform(rng, (1300, 700), dtype)
    product = tgd.matmul(on_device(a, (384, 500)), on_device(b, (500, 300)))
    assert type(product._meta).__module__.startswith("cupy")
    block = client.compute(product.blocks[1, 1]).result()
    assert isinstance(block, cupy.ndarray)  # stayed on the device
    out = client.compute(product).result()
    assert isinstance(out, cupy.ndarray)
    assert_gemm(out.get(), 1.0, a, b, 0.0, None, dtype)


@pytest.mark.parametrize("trans_a,trans_b", [(0, 0), (1, 1)])
def test_gemm_of_cupy_blocks(client, rng, trans_a, trans_b):
    m, n, k = 700, 600, 900
    a = uniform(rng, (k, m) if trans_a else (m, k), np.float32)
    b = uniform(rng, (n, k) if trans_b else (k, n), np.float32)
    c = uniform(rng, (m, n), np.float32)
    product = tgd.gemm(1.5, on_device(a, 256), on_device(b, 300), -0.5, on_device(c, 350),
                       trans_a, trans_b)  # fmt: skip
    out = client.compute(product).result().get()
    assert_gemm(out, 1.5, a.T if trans_a else a, b.T if trans_b else b, -0.5, c, np.float32)


def test_numpy_blocks_through_the_host_pipeline(client, rng, monkeypatch):
    """With TUNEDGEMM_BACKEND=gpu the NumPy blocks go up to the GPU and come back down."""
    monkeypatch.setenv("TUNEDGEMM_BACKEND", "gpu")  # the worker is a thread: it sees this
    a = uniform(rng, (1500, 2000), np.float32)
    b = uniform(rng, (2000, 1200), np.float32)
    product = tgd.matmul(da.from_array(a, chunks=800), da.from_array(b, chunks=(800, 600)))
    out = client.compute(product).result()
    assert isinstance(out, np.ndarray)
    assert_gemm(out, 1.0, a, b, 0.0, None, np.float32)


def test_a_worker_process_per_gpu(rng):
    """local_gpu_cluster: a worker process that sees the GPU as its device 0."""
    a = uniform(rng, (1024, 1024), np.float32)
    with tgd.local_gpu_cluster(gpus=[0]) as cluster, distributed.Client(cluster) as client:
        x = on_device(a, 512)
        out = client.compute(tgd.matmul(x, x.T)).result().get()
        seen = client.run(lambda: __import__("os").environ["CUDA_VISIBLE_DEVICES"])
    ours = os.environ.get("CUDA_VISIBLE_DEVICES")
    assert list(seen.values()) == [ours.split(",")[0] if ours else "0"]
    assert_gemm(out, 1.0, a, a.T, 0.0, None, np.float32)
