"""tunedgemm.dask's CUDA IPC transfers without a GPU: the decision, the graph, the wrapper's
round trip through pickle and distributed's serialisation on NumPy stand-ins."""

from __future__ import annotations

import collections
import contextlib
import pickle
import sys
import types

import numpy as np
import pytest
from helpers import assert_gemm, dask_client, numpy_backend_for_module, uniform

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")
tgd = pytest.importorskip("tunedgemm.dask")
from tunedgemm import dask_ipc, dask_placement  # noqa: E402  (after the skip: it needs dask)


@pytest.fixture(scope="module")
def numpy_backend():
    yield from numpy_backend_for_module()


@pytest.fixture
def client(numpy_backend):
    """Two workers of one thread each in this process (in-process comms pass objects)."""
    yield from dask_client(2, processes=False)


class FakeCupyArray:
    """A meta whose type says "cupy", as a CuPy block's would."""

    __module__ = "cupy._core.core"


class Operand:
    def __init__(self, meta):
        self._meta = meta


# The decision -----------------------------------------------------------------------------


def test_one_host_with_gpus():
    one = dask_ipc.one_host_with_gpus
    both = ("gpu0", "gpu1")
    assert one([("h/b", "gpu0", both), ("h/b", "gpu1", both)])
    assert not one([("h/b", "gpu0", both)])  # one worker: nothing moves
    assert not one([("h/b", "gpu0", both), ("g/b", "gpu1", both)])  # two hosts
    assert not one([("h/b", "gpu0", both), ("h/b", None, ())])  # a worker without a GPU
    assert not one([("h/b", "gpu0", ("gpu0",)), ("h/b", "gpu1", ("gpu1",))])  # blind to peers
    assert not one([])


def test_transfer_names_the_choice():
    cupy_like = [Operand(FakeCupyArray()), Operand(FakeCupyArray())]
    assert tgd._use_ipc("ipc", cupy_like) and tgd._use_ipc("ipc", [])
    assert not tgd._use_ipc("comm", cupy_like)
    with pytest.raises(ValueError, match="transfer must be one of auto, ipc, comm"):
        tgd._use_ipc("nvlink", cupy_like)


def test_auto_without_a_client_uses_the_comm():
    assert not tgd._use_ipc("auto", [Operand(FakeCupyArray()), Operand(FakeCupyArray())])


def test_auto_asks_the_workers(client, monkeypatch):
    """IPC only with CuPy blocks and workers of one host that all report a GPU (the two
    in-process workers share this host; their GPU is faked, then real: none here)."""
    cupy_like = [Operand(FakeCupyArray()), Operand(FakeCupyArray())]
    numpy_like = [Operand(np.empty((0, 0))), Operand(FakeCupyArray())]
    monkeypatch.setattr(tgd, "_reports", {})
    monkeypatch.setattr(dask_ipc, "gpu_identity", lambda ordinal=None: "GPU-fake")
    monkeypatch.setattr(dask_ipc, "_visible_gpus", lambda: frozenset({"GPU-fake"}))
    assert tgd._use_ipc("auto", cupy_like)
    assert not tgd._use_ipc("auto", numpy_like)
    monkeypatch.setattr(tgd, "_reports", {})
    monkeypatch.setattr(dask_ipc, "gpu_identity", lambda ordinal=None: None)
    assert not tgd._use_ipc("auto", cupy_like)
    monkeypatch.setattr(tgd, "_reports", {})
    def two_hosts(dask_worker):  # each worker its own host (client.run passes the worker)
        return f"host-{dask_worker.name}/boot", "GPU-fake", ("GPU-fake",)

    monkeypatch.setattr(dask_ipc, "identity", two_hosts)
    assert not tgd._use_ipc("auto", cupy_like)


# The graph --------------------------------------------------------------------------------


def _dependencies(layer, key):
    from dask.core import get_dependencies

    return get_dependencies(layer, key)


def test_ipc_graph_reads_every_input_block_through_one_share_task(numpy_backend, rng):
    a, b, c = (uniform(rng, shape, np.float64) for shape in ((60, 50), (50, 80), (60, 80)))
    x, y = da.from_array(a, chunks=(20, 25)), da.from_array(b, chunks=(25, 20))
    cd = da.from_array(c, chunks=(20, 20))
    product = tgd.gemm(1.5, x, y, -0.5, cd, transfer="ipc")
    layer = dict(product.dask.layers[product.name])
    shares = {k: v for k, v in layer.items() if k[0].startswith("tunedgemm-share-")}
    sources = [v[1] for v in shares.values()]
    assert all(v[0] is dask_ipc.share for v in shares.values())
    assert len(sources) == len(set(sources)) == 3 * 2 + 2 * 4 + 3 * 4  # x, y and c blocks
    products = [k for k, v in layer.items() if v[0] is dask_ipc.share and k not in shares]
    products += [k for k, v in layer.items() if v[0] is tgd._gemm_block]
    full = dict(product.dask)
    for key in products:  # every product reads shared blocks only
        task = layer[key][1] if layer[key][0] is dask_ipc.share else layer[key]
        if task[0] is tgd._gemm_block:
            assert all(dep in shares for dep in _dependencies(full, key))
    outputs = [k for k in layer if k[0] == product.name]
    assert len(outputs) == 3 * 4
    assert all(layer[k][0] is not dask_ipc.share for k in outputs)  # outputs stay plain
    out = product.compute(scheduler="synchronous")
    assert isinstance(out, np.ndarray)
    assert_gemm(out, 1.5, a, b, -0.5, c, np.float64)


def test_comm_never_shares(client, rng, monkeypatch):
    monkeypatch.setattr(tgd, "_reports", {})
    monkeypatch.setattr(dask_ipc, "gpu_identity", lambda ordinal=None: "GPU-fake")
    monkeypatch.setattr(dask_ipc, "_visible_gpus", lambda: frozenset({"GPU-fake"}))
    x = da.from_array(uniform(rng, (40, 40), np.float32), chunks=20)
    product = tgd.matmul(x, x, transfer="comm")
    assert not any(k[0].startswith("tunedgemm-share-") for k in dict(product.dask))
    assert dask_ipc.share not in {v[0] for v in dict(product.dask).values()
                                  if isinstance(v, tuple)}  # fmt: skip


def test_ipc_on_a_cluster(client, rng):
    """Shared blocks on two workers (in-process: the wrappers themselves are handed over),
    results as with the comm; the output blocks are plain arrays."""
    a, b = uniform(rng, (90, 70), np.float32), uniform(rng, (70, 50), np.float32)
    x, y = da.from_array(a, chunks=(30, 20)), da.from_array(b, chunks=(20, 25))
    out = client.compute(tgd.matmul(x, y, transfer="ipc", split_every=2)).result()
    assert isinstance(out, np.ndarray)
    assert_gemm(out, 1.0, a, b, 0.0, None, np.float32)
    gram = client.compute(tgd.matmul(x.T, x, transfer="ipc")).result()  # transposed views
    assert_gemm(gram, 1.0, a.T, a, 0.0, None, np.float32)


def test_ipc_deals_output_blocks_to_workers_in_turn(client, rng):
    """With IPC, every product and partial sum of output block (i, j) runs on worker
    (i * columns + j) mod workers (sorted addresses), so each worker gets as many; the
    share tasks stay where their blocks are."""
    a, b = uniform(rng, (80, 60), np.float32), uniform(rng, (60, 80), np.float32)
    x, y = da.from_array(a, chunks=20), da.from_array(b, chunks=20)
    product = tgd.matmul(x, y, transfer="ipc", split_every=2)
    workers = sorted(client.scheduler_info()["workers"])
    with distributed.get_task_stream(client) as stream:
        out = client.compute(product).result()
    assert_gemm(out, 1.0, a, b, 0.0, None, np.float32)
    ran = {}
    for record in stream.data:
        key = record["key"]
        if isinstance(key, tuple) and key[0].startswith("tunedgemm-matmul-"):
            ran[key] = record["worker"]
    assert len(ran) == 16 * (3 + 2)  # per output block: 3 products (k in 3 blocks), 2 sums
    for key, worker in ran.items():
        assert worker == workers[(key[1] * 4 + key[2]) % 2], key
    counts = [list(ran.values()).count(w) for w in workers]
    assert counts[0] == counts[1]


def test_ipc_share_tasks_come_before_every_product(client, rng):
    """Share tasks run first on their worker (the Dealer raises their priority): a share's
    event recorded after queued products would make a sender wait for those products."""
    a = uniform(rng, (80, 60), np.float32)
    x = da.from_array(a, chunks=20)
    product = tgd.matmul(x, x.T, transfer="ipc").persist()
    distributed.wait(product)

    def priorities(dask_scheduler):
        return {ts.key: ts.priority for ts in dask_scheduler.tasks.values()
                if isinstance(ts.key, tuple) and str(ts.key[0]).startswith("tunedgemm-")}

    found = client.run_on_scheduler(priorities)
    shares = [p for key, p in found.items() if dask_placement.is_share(key)]
    others = [p for key, p in found.items() if not dask_placement.is_share(key)]
    assert shares and others and max(shares) < min(others)
    assert_gemm(product.compute(), 1.0, a, a.T, 0.0, None, np.float32)


def test_first_priority_outranks_its_graph():
    assert dask_placement.first((0, 3, 17)) < (0, 3, 0)
    assert dask_placement.first((0, 3, 17)) > (-1, 0, 0)  # a higher user priority still leads
    assert dask_placement.first((-2, 1, 5)) == (-2.5, 1, 5)
    assert dask_placement.first((-0.5, 1, 5)) == (-1.0, 1, 5)  # float user priorities too


def test_a_share_task_is_raised_once_however_many_graphs_touch_it(client, rng):
    """Persisting products that read the same input again touches its share tasks again:
    their priority is raised once, not once per graph."""
    x = da.from_array(uniform(rng, (80, 60), np.float32), chunks=20).persist()

    def share_priorities(dask_scheduler):
        return sorted(ts.priority[0] for ts in dask_scheduler.tasks.values()
                      if dask_placement.is_share(ts.key))  # fmt: skip

    kept = [tgd.matmul(x, x.T, transfer="ipc").persist()]
    distributed.wait(kept)
    before = client.run_on_scheduler(share_priorities)
    for _ in range(3):
        kept.append(tgd.matmul(x, x.T, transfer="ipc", split_every=3).persist())
        distributed.wait(kept[-1])
    after = client.run_on_scheduler(share_priorities)
    assert before and min(after) >= min(before)
    assert dask_placement.is_share(("tunedgemm-share-0a1b", 0, 1))
    assert not dask_placement.is_share(("tunedgemm-matmul-0a1b", 0, 1))
    assert not dask_placement.is_share("tunedgemm-share-0a1b")


def test_comm_leaves_placement_to_the_scheduler(client, rng):
    x = da.from_array(uniform(rng, (40, 40), np.float32), chunks=20)
    assert "dealt" not in tgd.matmul(x, x, transfer="comm").name


def test_owner_of_dealt_keys():
    name = dask_placement.dealt_name("tunedgemm-gemm-partial-0a1b", 3)
    workers = ["tcp://a", "tcp://b"]
    assert [dask_placement.owner((name, i, j, 1, 0), workers) for i in range(2)
            for j in range(3)] == ["tcp://a", "tcp://b", "tcp://a", "tcp://b", "tcp://a",
                                   "tcp://b"]  # fmt: skip
    assert dask_placement.owner(("tunedgemm-share-0a1b", 0, 1), workers) is None
    assert dask_placement.owner((name, 0, 1), []) is None
    assert dask_placement.owner(name, workers) is None


# The wrapper ------------------------------------------------------------------------------


@pytest.fixture
def fake_ipc(monkeypatch):
    """Export and open on NumPy stand-ins: the "handle" names an array in a dict; opening it
    copies, as the real one copies device to device."""
    exported, opened = {}, []

    def export(array):
        exported[id(array)] = array
        return {"handle": id(array), "offset": 0, "gpu": "GPU-fake"}

    def open_copy(payload):
        opened.append(payload)
        source = exported[payload["handle"]]
        return np.lib.stride_tricks.as_strided(source.copy(order="K"), payload["shape"],
                                               payload["strides"]).copy()  # fmt: skip

    monkeypatch.setattr(dask_ipc, "_exportable", lambda array: True)
    monkeypatch.setattr(dask_ipc, "_export", export)
    monkeypatch.setattr(dask_ipc, "_open_copy", open_copy)
    return opened


def test_a_pickled_block_travels_as_a_handle_and_arrives_as_a_copy(fake_ipc, monkeypatch):
    block = np.arange(12.0).reshape(3, 4).T  # a transposed view: strides travel too
    wire = pickle.dumps(dask_ipc.SharedBlock(block))
    assert len(wire) < 1000  # a handle, not the bytes
    monkeypatch.setattr(dask_ipc.os, "getpid", lambda: -1)  # as if another process
    received = pickle.loads(wire)
    assert isinstance(received, dask_ipc.SharedBlock)
    np.testing.assert_array_equal(received.array, block)
    assert received.array is not block
    (payload,) = fake_ipc
    assert payload["shape"] == (4, 3) and payload["strides"] == block.strides
    assert payload["dtype"] == "<f8" and payload["host"] == dask_ipc.host_identity()


def test_a_handle_from_another_host_is_refused(fake_ipc, monkeypatch):
    wire = pickle.dumps(dask_ipc.SharedBlock(np.ones((2, 2))))
    monkeypatch.setattr(dask_ipc.os, "getpid", lambda: -1)
    monkeypatch.setattr(dask_ipc, "host_identity", lambda: "elsewhere/boot")
    with pytest.raises(RuntimeError, match="one host only"):
        pickle.loads(wire)
    assert not fake_ipc  # nothing opened


def test_in_its_own_process_a_handle_finds_its_block(fake_ipc):
    shared = dask_ipc.SharedBlock(np.ones((2, 3)))
    received = pickle.loads(pickle.dumps(shared))
    assert received.array is shared.array and not fake_ipc  # CUDA cannot open its own


def test_an_unexportable_block_is_pickled_as_it_is(monkeypatch):
    def refuse(array):
        raise RuntimeError("managed memory")

    monkeypatch.setattr(dask_ipc, "_exportable", lambda array: True)
    monkeypatch.setattr(dask_ipc, "_export", refuse)
    block = np.arange(6.0).reshape(2, 3)
    received = pickle.loads(pickle.dumps(dask_ipc.SharedBlock(block)))
    np.testing.assert_array_equal(received.array, block)
    numpy_block = np.arange(4.0)  # NumPy blocks never take the IPC route
    assert np.array_equal(pickle.loads(pickle.dumps(dask_ipc.SharedBlock(numpy_block))).array,
                          numpy_block)  # fmt: skip


def test_distributed_sends_a_handle_only_between_processes_of_one_host(fake_ipc, monkeypatch):
    """A comm between two addresses of one host: the handle; a spill to disk (no context) or
    a peer on another host: the bytes, and nothing exported."""
    from distributed.protocol import deserialize, serialize, serialize_bytelist
    from distributed.protocol.serialize import deserialize_bytes

    block = np.arange(20.0).reshape(4, 5)
    shared = dask_ipc.SharedBlock(block)
    local = {"sender": {"address": "tcp://10.1.2.3:4000"},
             "recipient": {"address": "tcp://10.1.2.3:5000"}}  # fmt: skip
    header, frames = serialize(shared, serializers=("dask",), context=local)
    assert header["sub-header"]["ipc"] and sum(len(memoryview(f)) for f in frames) < 1000
    monkeypatch.setattr(dask_ipc.os, "getpid", lambda: -1)
    np.testing.assert_array_equal(deserialize(header, frames).array, block)
    assert len(fake_ipc) == 1
    remote = {"sender": {"address": "tcp://10.1.2.3:4000"},
              "recipient": {"address": "tcp://10.9.9.9:5000"}}  # fmt: skip
    header, frames = serialize(shared, serializers=("dask",), context=remote)
    assert not header["sub-header"]["ipc"]
    np.testing.assert_array_equal(deserialize(header, frames).array, block)
    spilled = deserialize_bytes(b"".join(map(bytes, serialize_bytelist(shared))))
    np.testing.assert_array_equal(spilled.array, block)
    assert len(fake_ipc) == 1  # neither exported a handle


def test_sizeof_is_the_blocks():
    from dask.sizeof import sizeof

    assert sizeof(dask_ipc.SharedBlock(np.ones((100, 100)))) >= 80000


def test_extent_of_strided_layouts():
    assert dask_ipc._extent((3, 4), (32, 8), 8) == (0, 96)  # C order
    assert dask_ipc._extent((3, 4), (8, 24), 8) == (0, 96)  # F order
    assert dask_ipc._extent((3, 4), (-32, 8), 8) == (-64, 96)  # rows reversed
    assert dask_ipc._extent((2, 2), (64, 8), 8) == (0, 80)  # a slice of wider rows


def test_host_identity_names_host_and_boot():
    host, _, boot = dask_ipc.host_identity().partition("/")
    assert host and boot


def test_a_scheduler_that_refuses_the_dealer_leaves_placement_to_it(client, rng, monkeypatch):
    def refuse(*args, **kwargs):
        raise RuntimeError("no plugins here")

    monkeypatch.setattr(dask_placement, "_registered", set())
    monkeypatch.setattr(client, "register_plugin", refuse)
    a = uniform(rng, (40, 40), np.float32)
    product = tgd.matmul(da.from_array(a, chunks=20), da.from_array(a, chunks=20),
                         transfer="ipc")  # fmt: skip
    assert "dealt" not in product.name
    assert_gemm(client.compute(product).result(), 1.0, a, a, 0.0, None, np.float32)


class FakeCupy(types.ModuleType):
    """Just what dask_ipc's handle cache and deferred release touch of CuPy."""

    def __init__(self) -> None:
        super().__init__("cupy")
        self.closed: list[int] = []
        runtime = types.SimpleNamespace(ipcCloseMemHandle=self.closed.append)
        event = type("Event", (), {"__init__": lambda self, **kw: None, "done": False,
                                   "record": lambda self, stream: None})  # fmt: skip
        self.cuda = types.SimpleNamespace(
            runtime=runtime, Device=lambda i: contextlib.nullcontext(), Event=event,
            Stream=types.SimpleNamespace(null=None))  # fmt: skip


@pytest.fixture
def fake_cupy(monkeypatch):
    fake = FakeCupy()
    monkeypatch.setitem(sys.modules, "cupy", fake)
    monkeypatch.setattr(dask_ipc, "_opened", collections.OrderedDict())
    monkeypatch.setattr(dask_ipc, "_deferred", collections.deque())
    return fake


def test_kept_handles_close_beyond_the_limit_when_idle_and_at_exit(fake_cupy):
    for n, used in ((1, 10.0), (2, 20.0), (3, 30.0)):  # in order of last use
        dask_ipc._opened[(7, bytes([n]))] = (100 + n, 0, used)
    dask_ipc._close_kept(float("-inf"), 2)
    assert fake_cupy.closed == [101] and len(dask_ipc._opened) == 2
    dask_ipc._close_kept(25.0)  # unused since before 25 s
    assert fake_cupy.closed == [101, 102] and list(dask_ipc._opened) == [(7, bytes([3]))]
    dask_ipc._close_kept(float("-inf"), 0)  # HANDLES_KEPT = 0: none kept
    assert fake_cupy.closed == [101, 102, 103] and not dask_ipc._opened
    dask_ipc._opened[(8, b"x")] = (200, 1, 1e12)
    dask_ipc._close_all_kept()  # at exit, however recent
    assert fake_cupy.closed[-1] == 200 and not dask_ipc._opened


def test_a_dropped_block_waits_for_its_readers_and_never_blocks_a_collection(fake_cupy):
    """A received block goes back to CuPy's pool only once its event is done, and a lease
    dropped while _reclaim runs (a garbage collection inside it) cannot hang it."""
    local = types.SimpleNamespace(device=types.SimpleNamespace(id=0))
    lease = dask_ipc._Lease(local)
    del lease
    ((block, event),) = dask_ipc._deferred
    assert block is local and event.done is False
    dask_ipc._reclaim()
    assert len(dask_ipc._deferred) == 1  # its readers may still run: kept
    later = [dask_ipc._Lease(types.SimpleNamespace(device=types.SimpleNamespace(id=0)))]

    class DropsALeaseWhenAsked:
        @property
        def done(self):
            later.clear()  # the lease's __del__ runs here, inside _reclaim
            return True

    dask_ipc._deferred.append(("finished", DropsALeaseWhenAsked()))
    dask_ipc._reclaim()
    kept = [item[0] for item in dask_ipc._deferred]
    assert "finished" not in kept and local in kept and len(kept) == 2  # the new one waits
