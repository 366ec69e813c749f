"""tunedgemm.dask on NumPy blocks: threaded and process clusters, graph shape, a killed worker."""

from __future__ import annotations

import importlib
import os
import signal
import sys

import numpy as np
import pytest
from helpers import assert_gemm, dask_client, numpy_backend_for_module, uniform

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")
tgd = pytest.importorskip("tunedgemm.dask")


@pytest.fixture(scope="module")
def numpy_backend():
    yield from numpy_backend_for_module()


@pytest.fixture(scope="module")
def client(numpy_backend):
    """Two workers of one thread each in this process."""
    yield from dask_client(2, processes=False)


@pytest.fixture(scope="module")
def process_client(numpy_backend):
    """Two worker processes under nannies (each a few seconds to start on two cores)."""
    yield from dask_client(2, processes=True)


def blocks(rng, shape, chunks, dtype):
    values = uniform(rng, shape, dtype)
    return values, da.from_array(values, chunks=chunks)


# Uneven chunks along every axis; k chunks of x and y differ in the last case (realigned).
CASES = {
    "uneven": ((130, 75, 90), ((50, 47, 33), (25, 40, 10)), ((25, 40, 10), (60, 30))),
    "tall-k": ((40, 300, 35), (40, 64), (64, 35)),
    "realigned": ((70, 110, 50), ((35, 35), (60, 50)), ((33, 77), (20, 30))),
}


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matmul_on_a_cluster(client, rng, case, dtype):
    (m, k, n), x_chunks, y_chunks = CASES[case]
    a, x = blocks(rng, (m, k), x_chunks, dtype)
    b, y = blocks(rng, (k, n), y_chunks, dtype)
    product = tgd.matmul(x, y)
    assert product.dtype == dtype
    assert product.chunks[0] == x.chunks[0] and product.chunks[1] == y.chunks[1]
    out = client.compute(product).result()
    assert out.dtype == dtype
    assert_gemm(out, 1.0, a, b, 0.0, None, dtype)


@pytest.mark.parametrize("trans_a,trans_b", [(0, 1), (1, 0), (2, 1)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gemm_transposes_alpha_beta(client, rng, trans_a, trans_b, dtype):
    m, n, k = 90, 70, 110
    a, x = blocks(rng, (k, m) if trans_a else (m, k), 40, dtype)
    b, y = blocks(rng, (n, k) if trans_b else (k, n), 30, dtype)
    c, cd = blocks(rng, (m, n), 45, dtype)  # chunks unlike the output's: rechunked
    out = client.compute(tgd.gemm(-1.5, x, y, 0.75, cd, trans_a, trans_b)).result()
    assert out.dtype == dtype
    assert_gemm(out, -1.5, a.T if trans_a else a, b.T if trans_b else b, 0.75, c, dtype)


def test_process_workers(process_client, rng):
    """Tasks pickled to worker processes (which import tunedgemm there) give the same."""
    a, x = blocks(rng, (130, 90), ((50, 47, 33), (25, 40, 25)), np.float32)
    b, y = blocks(rng, (75, 90), (40, 45), np.float32)
    out = process_client.compute(tgd.gemm(0.5, x, y, trans_b=1)).result()
    assert out.dtype == np.float32
    assert_gemm(out, 0.5, a, b.T, 0.0, None, np.float32)


def test_shared_blocks_between_worker_processes(process_client, rng):
    """transfer="ipc" on NumPy blocks: the wrappers cross real process boundaries through
    distributed's serialisation (as the bytes: NumPy blocks have no IPC handle)."""
    a, x = blocks(rng, (70, 60), (30, 20), np.float64)
    b, y = blocks(rng, (60, 50), (20, 25), np.float64)
    c, cd = blocks(rng, (70, 50), 35, np.float64)
    process_client.run(_count_shared_sends, True)
    try:
        out = process_client.compute(tgd.gemm(2.0, x, y, -1.0, cd, transfer="ipc")).result()
    finally:
        sent = process_client.run(_count_shared_sends, False)
    assert isinstance(out, np.ndarray)
    assert_gemm(out, 2.0, a, b, -1.0, c, np.float64)
    assert sum(sent.values()) > 0  # some wrappers did go from one worker to the other


def _count_shared_sends(start):
    """On a worker: count SharedBlocks that distributed serialises (start), or stop counting
    and say how many."""
    from distributed.protocol import dask_serialize

    from tunedgemm import dask_ipc

    if start:
        sent = dask_ipc.__dict__.setdefault("_test_sent", [])

        def counting(block, context=None):
            sent.append(1)
            return dask_ipc._dumps(block, context=context)

        dask_serialize.register(dask_ipc.SharedBlock)(counting)
        return 0
    dask_serialize.register(dask_ipc.SharedBlock)(dask_ipc._dumps)
    return len(dask_ipc.__dict__.pop("_test_sent", []))


def test_local_gpu_cluster_gives_each_worker_its_gpu_first(numpy_backend, monkeypatch):
    """One worker process per GPU ordinal, seeing its GPU first and the other workers' GPUs
    after it (by the driver's numbering, through this process's CUDA_VISIBLE_DEVICES: CUDA
    IPC needs them visible), with tunedgemm's host calls on its own GPU only; the GPUs need
    not exist for that."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "5,7")
    with tgd.local_gpu_cluster(gpus=[0, 1]) as cluster, distributed.Client(cluster) as client:
        seen = client.run(lambda: (os.environ["CUDA_VISIBLE_DEVICES"],
                                   os.environ["TUNEDGEMM_DEVICES"]))  # fmt: skip
    assert sorted(seen.values()) == [("5,7", "0"), ("7,5", "0")]
    with pytest.raises(ValueError, match="no GPU"):
        tgd.local_gpu_cluster(gpus=[])


def test_transposed_dask_arrays(client, rng):
    """A .T of a dask array (blocks that are transposed views) as either operand."""
    a, x = blocks(rng, (80, 60), (30, 25), np.float32)
    b, y = blocks(rng, (50, 80), (20, 30), np.float32)
    out = client.compute(tgd.matmul(x.T, y.T)).result()
    assert_gemm(out, 1.0, a.T, b.T, 0.0, None, np.float32)


def test_blocks_are_computed_by_tunedgemm(numpy_backend, rng, monkeypatch):
    """Every block product is a tunedgemm call on the block's own arrays."""
    import tunedgemm

    calls = []
    real = tunedgemm.gemm

    def counting(*args, **kwargs):
        calls.append(args[1].shape)
        return real(*args, **kwargs)

    monkeypatch.setattr(tunedgemm, "gemm", counting)
    a, x = blocks(rng, (60, 50), (20, 25), np.float64)
    b, y = blocks(rng, (50, 40), (25, 40), np.float64)
    out = tgd.gemm(2.0, x, y).compute(scheduler="synchronous")
    assert len(calls) == 3 * 2 * 1  # row blocks x k blocks x column blocks
    assert set(calls) == {(20, 25)}
    assert_gemm(out, 2.0, a, b, 0.0, None, np.float64)


def test_precision_is_decided_on_the_client_and_reaches_every_block(numpy_backend, rng,
                                                                      monkeypatch):  # fmt: skip
    """precision= (or a tunedgemm.precision block around the call) goes with every block
    product, so workers run the mode the caller chose whatever their own defaults."""
    import tunedgemm

    modes = []
    real = tunedgemm.matmul

    def recording(a, b, **kwargs):
        modes.append(kwargs.get("precision"))
        return real(a, b, **kwargs)

    monkeypatch.setattr(tunedgemm, "matmul", recording)
    a, x = blocks(rng, (40, 30), (20, 15), np.float32)
    b, y = blocks(rng, (30, 20), (15, 20), np.float32)
    out = tgd.matmul(x, y, precision="3xtf32").compute(scheduler="synchronous")
    with tunedgemm.precision("tf32"):
        z = tgd.matmul(x, y)
    z.compute(scheduler="synchronous")  # computed outside the block: the mode stays
    assert modes == ["3xtf32"] * 4 + ["tf32"] * 4
    assert_gemm(out, 1.0, a, b, 0.0, None, np.float32)


def test_sums_are_a_bounded_tree(rng):
    """No task holds more than one x block and one y block (no panel concatenation), and no
    sum more than split_every partials; there are k-blocks - 1 sums' worth of inputs."""
    x = da.from_array(uniform(rng, (20, 90), np.float32), chunks=(10, 10))
    y = da.from_array(uniform(rng, (90, 20), np.float32), chunks=(10, 20))
    product = tgd.matmul(x, y, split_every=3)
    layer = product.dask.layers[product.name]
    summed = 0
    for task in layer.values():
        inputs = [dep for dep in _keys_in(task) if isinstance(dep, tuple)]
        assert sum(dep[0] == x.name for dep in inputs) <= 1
        assert sum(dep[0] == y.name for dep in inputs) <= 1
        assert len(inputs) <= 3
        if all(dep[0].startswith("tunedgemm-") for dep in inputs) and inputs:
            summed += len(inputs) - 1
    assert summed == 2 * (9 - 1)  # each of the 2 output blocks adds 9 partials pairwise


def _keys_in(task):
    """Keys that a legacy task tuple (or a newer Task object) refers to."""
    deps = getattr(task, "dependencies", None)
    if deps is not None:
        return list(deps)
    found = []
    for item in task[1:] if isinstance(task, tuple) else task:
        if isinstance(item, list):
            found += _keys_in(item)
        elif isinstance(item, tuple) and item and isinstance(item[0], str):
            found.append(item)
    return found


def test_check_sample_finds_a_wrong_block(numpy_backend):
    x = da.random.uniform(-1, 1, (120, 300), chunks=(40, 100))
    y = da.random.uniform(-1, 1, (300, 90), chunks=(100, 30))
    product = tgd.matmul(x, y)
    assert tgd.check_sample(x, y, product, blocks=3, lines=16)[0]
    one_term_off = product + x[:, :1] * y[:1, :]  # as if a k block were counted twice
    passed, error, tol = tgd.check_sample(x, y, one_term_off, blocks=1, lines=16)
    assert not passed and error > 100 * tol


def test_int_operands_give_matmuls_dtype(numpy_backend):
    x = da.from_array(np.arange(35, dtype=np.int32).reshape(5, 7), chunks=3)
    y = da.from_array(np.arange(21, dtype=np.int64).reshape(7, 3), chunks=2)
    product = tgd.matmul(x, y)
    expected = np.arange(35, dtype=np.int32).reshape(5, 7) @ np.arange(21).reshape(7, 3)
    assert product.dtype == expected.dtype
    np.testing.assert_array_equal(product.compute(scheduler="synchronous"), expected)
    assert tgd.gemm(1.0, x, y).dtype == np.float64  # as tunedgemm.gemm (and dgemm)


def test_inputs_are_left_as_they_were(numpy_backend, rng):
    a, x = blocks(rng, (30, 20), 10, np.float64)
    c, cd = blocks(rng, (30, 15), 10, np.float64)
    b, y = blocks(rng, (20, 15), 10, np.float64)
    kept = a.copy(), b.copy(), c.copy()
    tgd.gemm(1.0, x, y, 2.0, cd).compute(scheduler="synchronous")
    for before, after in zip(kept, (a, b, c), strict=True):
        np.testing.assert_array_equal(before, after)


@pytest.mark.parametrize(
    "call,error,words",
    [
        (lambda x, y: tgd.matmul(x, y.T), ValueError, "do not align"),
        (lambda x, y: tgd.matmul(x[0], y), ValueError, "x must be 2-D"),
        (lambda x, y: tgd.matmul(x, None), TypeError, "y must be an array"),
        (lambda x, y: tgd.gemm(1.0, x, y, 1.0), ValueError, "c must be given"),
        (lambda x, y: tgd.gemm(1.0, x, y, 1.0, x), ValueError, "c has shape"),
        (lambda x, y: tgd.gemm("2", x, y), TypeError, "alpha"),
        (lambda x, y: tgd.gemm(1.0, x, y, trans_b=3), ValueError, "trans_b"),
        (lambda x, y: tgd.gemm(1.0, x.astype(complex), y), TypeError, "x has dtype"),
        (lambda x, y: tgd.matmul(x, y, split_every=1), ValueError, "split_every"),
        (lambda x, y: tgd.matmul(x, y, precision="fast"), ValueError, "precision"),
        (lambda x, y: tgd.gemm(1.0, x, y, precision="tf32"), ValueError, "does not apply"),
    ],
)
def test_bad_arguments(call, error, words):
    x, y = da.ones((4, 6), chunks=2), da.ones((6, 5), chunks=2)
    with pytest.raises(error, match=words):
        call(x, y)


def test_dask_module_is_not_shadowed():
    """tunedgemm/dask.py imports the real dask (absolute imports), and says what it is."""
    import dask

    assert tgd.da is sys.modules["dask.array"]
    assert dask.__name__ == "dask" and tgd.__name__ == "tunedgemm.dask"


def test_without_dask_the_import_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "dask", None)  # `import dask...` now fails
    monkeypatch.delitem(sys.modules, "tunedgemm.dask")
    with pytest.raises(ImportError, match=r'pip install "tunedgemm\[dask\]"'):
        importlib.import_module("tunedgemm.dask")


def test_a_killed_worker_is_survived(process_client, rng, tmp_path):
    """A worker process kills itself the first time it computes one input block, in the
    middle of the product; the nanny restarts it, the scheduler recomputes what was lost on
    it, and the result is still right. (Last in the file: it shares the process cluster.)"""
    flag = str(tmp_path / "killed")

    def die_once(block, block_id=None):
        if block_id == (2, 0) and not os.path.exists(flag):
            with open(flag, "w") as file:
                file.write(str(os.getpid()))
            os.kill(os.getpid(), signal.SIGKILL)
        return block

    a, x = blocks(rng, (60, 80), 20, np.float64)
    b, y = blocks(rng, (80, 40), 20, np.float64)
    y = y.map_blocks(die_once, dtype=y.dtype)
    out = process_client.compute(tgd.matmul(x, y)).result(timeout=60)
    with open(flag) as file:
        killed = int(file.read())
    assert killed != os.getpid()
    with pytest.raises(ProcessLookupError):
        os.kill(killed, 0)  # that worker process is gone
    assert_gemm(out, 1.0, a, b, 0.0, None, np.float64)
