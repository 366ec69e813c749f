"""tunedgemm.dask with one GPU worker: CuPy blocks stay on the device, NumPy blocks take the host
pipeline; with two GPUs, blocks handed between worker processes through CUDA IPC; results
checked against a float64 reference."""

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
from tunedgemm import dask_ipc  # noqa: E402  (after the skips: it needs dask)


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


def _copied_in():
    """On a worker: how many blocks it has copied in through an IPC handle."""
    from tunedgemm import dask_ipc

    return dask_ipc._received


def two_gpus():
    count = cupy.cuda.runtime.getDeviceCount()
    if count < 2:
        pytest.skip(f"CUDA IPC between workers needs two GPUs; this machine has {count}")


@pytest.fixture(scope="module")
def two_gpu_client():
    """Two worker processes (local_gpu_cluster), each seeing its GPU first."""
    two_gpus()
    with tgd.local_gpu_cluster(gpus=[0, 1]) as cluster, distributed.Client(cluster) as client:
        yield client


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_ipc_transfers_between_two_gpu_workers(two_gpu_client, rng, dtype):
    """The product on two GPU workers, blocks handed over through CUDA IPC (what "auto"
    picks here), checked against float64; the comm gives the same."""
    a = uniform(rng, (3000, 2500), dtype)
    b = uniform(rng, (2500, 2200), dtype)
    x, y = on_device(a, (768, 640)), on_device(b, (640, 600))
    with two_gpu_client.as_current():  # (the module's one-worker client may be alive)
        assert tgd._use_ipc("auto", [x, y])  # one host, a GPU per worker, CuPy blocks
        products = [tgd.matmul(x, y, transfer=transfer) for transfer in ("auto", "comm")]
    for product in products:
        out = two_gpu_client.compute(product).result()
        assert isinstance(out, cupy.ndarray)
        assert_gemm(out.get(), 1.0, a, b, 0.0, None, dtype)
    copied = two_gpu_client.run(_copied_in)
    assert sum(copied.values()) > 0  # blocks did come in through handles
    c = uniform(rng, (2500, 2500), dtype)
    out = two_gpu_client.compute(tgd.gemm(0.5, x, on_device(a, 700), -2.0, on_device(c, 800),
                                          1, 0, transfer="ipc")).result()  # fmt: skip
    assert_gemm(out.get(), 0.5, a.T, a, -2.0, c, dtype)


def test_a_shared_block_crosses_to_the_other_gpu(two_gpu_client):
    """A strided view inside a larger allocation (an offset from its base), shared on one
    worker and unwrapped on the other: the same values, in a copy on the receiver's GPU."""
    first, second = sorted(two_gpu_client.scheduler_info()["workers"])

    def make():
        import cupy

        big = cupy.arange(4000 * 3000, dtype=cupy.float32).reshape(4000, 3000)
        return big[1000:3000:2, 64:1000].T  # offset, strides, a transposed view

    def receive(shared):
        import cupy

        from tunedgemm import dask_ipc

        block = dask_ipc.unwrap(shared)
        got = block.get(), block.device.id, block.strides, cupy.cuda.runtime.getDevice()
        return (*got, dask_ipc._received)

    block = two_gpu_client.submit(make, workers=[first], pure=False)
    shared = two_gpu_client.submit(dask_ipc.share, block, workers=[first])
    before = two_gpu_client.run(_copied_in, workers=[second])[second]
    values, device, strides, current, after = two_gpu_client.submit(
        receive, shared, workers=[second]).result()  # fmt: skip
    assert after == before + 1  # it came through a handle
    expected = np.arange(4000 * 3000, dtype=np.float32).reshape(4000, 3000)[1000:3000:2, 64:1000].T
    np.testing.assert_array_equal(values, expected)
    assert device == current == 0  # the receiver's own GPU (its device 0)
    assert strides == (4, 2 * 3000 * 4)  # the view's layout kept


def test_a_kept_handle_reads_its_allocations_current_values(two_gpu_client):
    """A block of an allocation received before comes through the handle kept open (no
    second open), with the values the allocation holds now."""
    first, second = sorted(two_gpu_client.scheduler_info()["workers"])

    def make():
        import cupy

        return cupy.arange(1000 * 700, dtype=cupy.float32).reshape(1000, 700)

    def overwrite(block, value):
        block[...] = value  # in place: the same allocation
        return block

    def receive(shared):
        from tunedgemm import dask_ipc

        return dask_ipc.unwrap(shared).get(), dask_ipc._opens, dask_ipc._received

    block = two_gpu_client.submit(make, workers=[first], pure=False)
    got = []
    for value in (None, 7.0):
        if value is not None:
            block = two_gpu_client.submit(overwrite, block, value, workers=[first], pure=False)
        shared = two_gpu_client.submit(dask_ipc.share, block, workers=[first], pure=False)
        got.append(two_gpu_client.submit(receive, shared, workers=[second],
                                         pure=False).result())  # fmt: skip
    (values0, opens0, received0), (values1, opens1, received1) = got
    expected = np.arange(1000 * 700, dtype=np.float32).reshape(1000, 700)
    np.testing.assert_array_equal(values0, expected)
    assert received1 == received0 + 1 and opens1 == opens0  # through the kept handle
    assert (values1 == 7.0).all()


def test_a_received_block_goes_back_to_the_pool_only_after_its_readers():
    """In one process: a block leased to a received array is parked when the array is
    dropped, kept while a kernel queued before that still runs, and handed back after."""
    from tunedgemm import dask_ipc

    spin = cupy.RawKernel(r"""
    extern "C" __global__ void spin_then_add(long long cycles, float* block) {
        long long start = clock64();
        while (clock64() - start < cycles) {}
        block[threadIdx.x] += 1.0f;
    }""", "spin_then_add")  # fmt: skip
    with dask_ipc._lock:  # (as a receive: _reclaim's one consumer)
        dask_ipc._reclaim()
        parked = len(dask_ipc._deferred)
    with dask_ipc._receive_stream():
        local = cupy.empty(1 << 20, dtype=cupy.uint8)
    array = cupy.ndarray((1 << 18,), cupy.float32, memptr=dask_ipc._leased(local))
    array[...] = 1.0
    spin((1,), (32,), (cupy.int64(400_000_000), array))  # ~0.2 s, reading the block
    del array, local
    with dask_ipc._lock:
        assert len(dask_ipc._deferred) == parked + 1
        dask_ipc._reclaim()
        assert len(dask_ipc._deferred) == parked + 1  # the kernel still runs: kept
    cupy.cuda.runtime.deviceSynchronize()
    with dask_ipc._lock:
        dask_ipc._reclaim()
        assert len(dask_ipc._deferred) == parked
