"""The per-call fast path on device arrays, checked on the CPU with stand-in device arrays,
kernels and cuBLAS: it must give what the plain computations give."""

from __future__ import annotations

import ctypes
import dataclasses
import itertools
import json
import math
import sys
import types
import warnings

import numpy as np
import pytest
from helpers import assert_gemm, uniform

import tunedgemm as tg
from tunedgemm import (
    _args,
    _driver,
    _matmul,
    compiler,
    cublaslt,
    cuda,
    device_arrays,
    launch,
    plans,
    recycle,
    reference,
    selection,
    settings,
    streams,
    table,
)
from tunedgemm._layout import BlasForm, DeviceMatrix, blas_form, ld_layout
from tunedgemm.families import FAMILIES

H100 = ("NVIDIA H100 80GB HBM3", "9.0")  # a GPU of the shipped table


class FakeDeviceArray:
    """An object with __cuda_array_interface__ that counts how often the interface is read
    (CuPy and PyTorch build a new dict on every read)."""

    __module__ = "cupy"

    def __init__(self, ptr, shape, typestr="<f4", strides=None, readonly=False, stream=1):
        self.ptr, self.shape, self.typestr, self.strides = ptr, shape, typestr, strides
        self.readonly, self.stream, self.reads = readonly, stream, 0

    @property
    def __cuda_array_interface__(self):
        self.reads += 1
        return {"shape": self.shape, "typestr": self.typestr, "data": (self.ptr, self.readonly),
                "strides": self.strides, "version": 3, "stream": self.stream}  # fmt: skip


# --- argument normalisation -------------------------------------------------------------


def test_device_matrix_carries_the_readonly_flag():
    ro = _args.device_matrix(FakeDeviceArray(4096, (3, 5), readonly=True), "c")
    rw = _args.device_matrix(FakeDeviceArray(4096, (3, 5)), "c")
    assert ro.readonly and ro.T.readonly and not rw.readonly
    assert not _args._holds_result(ro, ro.owner) and _args._holds_result(rw, rw.owner)


def test_device_matrix_parses_the_interface():
    m = _args.device_matrix(FakeDeviceArray(4096, (3, 5), "<f8", stream=0x77), "a")
    assert (m.ptr, m.shape, m.strides, m.dtype, m.stream) == (4096, (3, 5), (5, 1), np.float64,
                                                             0x77)  # fmt: skip
    f = _args.device_matrix(FakeDeviceArray(8192, (3, 5), "<f4", strides=(4, 12)), "a")
    assert (f.strides, f.stream) == ((1, 3), None)
    with pytest.raises(ValueError, match="multiple of its item size"):
        _args.device_matrix(FakeDeviceArray(0, (3, 5), strides=(6, 4)), "a")
    with pytest.raises(ValueError, match="b must be 2-D, got 3-D"):
        _args.device_matrix(FakeDeviceArray(0, (3, 5, 2)), "b")
    with pytest.raises(TypeError, match="c has dtype complex64"):
        _args.device_matrix(FakeDeviceArray(0, (3, 5), "<c8"), "c")
    with pytest.raises(ValueError, match=r"a: .*invalid stream"):
        _args.device_matrix(FakeDeviceArray(0, (3, 5), stream=0), "a")


def test_normalise_reads_each_interface_once():
    a, b, c = (
        FakeDeviceArray(4096, (6, 4)),
        FakeDeviceArray(8192, (4, 5)),
        FakeDeviceArray(16384, (6, 5)),
    )
    problem = _args.normalise(1.0, a, b, 0.0, c, 0, 0, 1, np.float32)
    assert problem.result is c and problem.out.owner is c
    assert (a.reads, b.reads, c.reads) == (1, 1, 1)


def test_dtype_lookups_match_numpy():
    assert _args.dtype_of("<f4") is _args.dtype_of("<f4") == np.dtype(np.float32)
    for dtype in (np.float32, "float64", np.dtype("f4"), np.dtype(">f8"), np.int8, "complex64",
                  np.dtype(np.float16)):  # fmt: skip
        assert _args.dtype_name(dtype) == np.dtype(dtype).name


# --- layouts ------------------------------------------------------------------------------


def blas_form_by_transposed_views(a, b, c):
    """blas_form as first written: transposed views built as DeviceMatrix objects."""
    if c.layout()[0]:
        a, b, c = b.T, a.T, c.T
    (ta, lda), (tb, ldb), (_, ldc) = a.layout(), b.layout(), c.layout()
    return BlasForm(ta, tb, a.shape[0], b.shape[1], a.shape[1], a.ptr, lda, b.ptr, ldb, c.ptr,
                    ldc, c.dtype.itemsize)  # fmt: skip


def views(rows, cols, ptr):
    """Column-major, row-major and leading-dimension views of a rows x cols operand."""
    dt = np.dtype(np.float32)
    return [DeviceMatrix(ptr, (rows, cols), (1, rows), dt),
            DeviceMatrix(ptr, (rows, cols), (cols, 1), dt),
            DeviceMatrix(ptr, (rows, cols), (1, rows + 3), dt),
            DeviceMatrix(ptr, (rows, cols), (cols + 5, 1), dt)]  # fmt: skip


@pytest.mark.parametrize("m,n,k", [(6, 5, 4), (1, 5, 4), (6, 1, 4), (6, 5, 1), (1, 1, 1)])
def test_blas_form_matches_transposed_views(m, n, k):
    for a, b, c in itertools.product(views(m, k, 4096), views(k, n, 8192), views(m, n, 12288)):
        assert blas_form(a, b, c) == blas_form_by_transposed_views(a, b, c)


def test_aligned_matches_its_definition():
    rng = np.random.default_rng()
    for _ in range(500):
        ptrs = [int(x) for x in rng.choice([4096, 4100, 4104, 4112], 3)]
        lds = [int(x) for x in rng.choice([4, 6, 8, 12, 16], 3)]
        size = int(rng.choice([4, 8]))
        form = BlasForm(False, False, 4, 4, 4, ptrs[0], lds[0], ptrs[1], lds[1], ptrs[2], lds[2],
                        size)  # fmt: skip
        expected = all(p % 16 == 0 for p in ptrs) and all(ld * size % 16 == 0 for ld in lds)
        assert form.aligned() == expected


def ld_layout_as_first_written(shape, strides):
    rows, cols = shape
    s_row, s_col = strides
    if rows == 0 or cols == 0:
        return False, max(1, rows)
    if (s_row == 1 or rows <= 1) and (cols <= 1 or s_col >= max(1, rows)):
        return False, s_col if cols > 1 else max(1, rows)
    if (s_col == 1 or cols <= 1) and (rows <= 1 or s_row >= max(1, cols)):
        return True, s_row if rows > 1 else max(1, cols)
    return None


def test_ld_layout_unchanged():
    for shape in itertools.product((0, 1, 2, 5), repeat=2):
        for strides in itertools.product((0, 1, 2, 5, 7), repeat=2):
            assert ld_layout(shape, strides) == ld_layout_as_first_written(shape, strides)


# --- selection ----------------------------------------------------------------------------


@pytest.fixture
def clean_env(monkeypatch):
    for name in (selection.FAMILY_ENV, selection.CUBLAS_ENV, table.TABLE_ENV):
        monkeypatch.delenv(name, raising=False)
    selection._choose.cache_clear()
    yield monkeypatch
    selection._choose.cache_clear()


def test_choose_gives_what_the_uncached_lookup_gives(clean_env):
    uncached = selection._choose.__wrapped__
    state = ("", True, str(table.table_path()))
    for dtype, shape, trans in itertools.product(
        (np.float32, np.dtype(np.float64), "float32"),
        ((64, 64, 64), (1000, 129, 70), (4096, 4096, 4096), (3, 5000, 17)),
        ((False, False), (True, False), (False, True)),
    ):
        name = np.dtype(dtype).name
        got = selection.choose(dtype, *shape, *trans, *H100)
        assert got == uncached(name, *shape, *trans, *H100, state, True)


def test_choose_follows_the_environment_without_a_cache_clear(clean_env, tmp_path,
                                                              cublas_table):  # fmt: skip
    def choose():
        return selection.choose(np.float32, 64, 64, 64, False, False, *H100).config

    clean_env.setenv(table.TABLE_ENV, cublas_table)  # the shipped table, every choice cuBLAS
    assert choose() == table.CUBLAS
    clean_env.setenv(selection.CUBLAS_ENV, "off")
    assert choose() != table.CUBLAS
    clean_env.setenv(selection.FAMILY_ENV, "tiled")
    assert choose() == FAMILIES["tiled"].default_config("float32")
    clean_env.delenv(selection.FAMILY_ENV)
    clean_env.delenv(selection.CUBLAS_ENV)
    clean_env.setenv(table.TABLE_ENV, str(tmp_path / "absent.json"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert choose() == selection.default_config("float32")
    clean_env.setenv(table.TABLE_ENV, cublas_table)
    assert choose() == table.CUBLAS


# --- launch -------------------------------------------------------------------------------


def some_configs(family, dtype, count=25):
    configs = list(itertools.islice(family.space(dtype), 0, 4000, 160))[:count]
    return [family.default_config(dtype), *configs]


@pytest.mark.parametrize("name,dtype", [("tiled", "float32"), ("tiled", "float64"),
                                        ("simt", "float32"), ("dmma", "float64"),
                                        ("tf32", "float32")])  # fmt: skip
def test_plan_matches_family_geometry_and_defines(name, dtype):
    family = FAMILIES[name]
    shapes = [(1, 1), (64, 64), (1000, 129), (4097, 33), (129, 8191)]
    for config in some_configs(family, dtype):
        for trans_a, trans_b, aligned in itertools.product((False, True), repeat=3):
            plan = launch.plan(config, dtype, trans_a, trans_b, aligned)
            assert plan is launch.plan(config, dtype, trans_a, trans_b, aligned)
            form = types.SimpleNamespace(trans_a=trans_a, trans_b=trans_b,
                                         aligned=lambda a=aligned: a)  # fmt: skip
            defines = launch.gemm_defines(config, np.dtype(dtype), form)  # type: ignore[arg-type]
            assert plan.defines == tuple(sorted(defines.items()))
            assert plan.source == family.source
            for m, n in shapes:
                g = family.geometry(config, dtype, m, n)
                assert (plan.grid(m, n), plan.block, plan.smem_bytes, plan.split_k) == (
                    g.grid,
                    g.block,
                    g.smem_bytes,
                    g.split_k,
                )


class FakeDriver:
    """The CUDA driver as tunedgemm/_driver.py calls it, on the CPU: kernels 'loaded' through
    compiler.raw_function get handles; each cuLaunchKernel is recorded with its arguments read
    back from the parameter buffers as the GPU would read them (alpha and beta in the
    kernel's DTYPE); events are handles whose work is done once `finish` says so."""

    _INT, _PTR = ctypes.c_int, ctypes.c_void_p

    def __init__(self):
        self.functions: dict[int, tuple] = {}  # handle -> (source, defines, name, smem)
        self.launches: list[tuple] = []
        self.log: list[tuple] = []  # event records and stream waits
        self.pending: set[int] = set()  # events recorded and not yet passed
        self.next_event = 0xE000

    def raw_function(self, source, defines, name, smem_bytes=0):
        key = (source, tuple(sorted(defines.items())), name, smem_bytes)
        for handle, known in self.functions.items():
            if known == key:
                return handle
        handle = 0xF000 + len(self.functions)
        self.functions[handle] = key
        return handle

    def cuLaunchKernel(self, function, gx, gy, gz, bx, by, bz, smem, stream, params, extra):  # noqa: N802  (the driver's names)
        _, defines, name, _ = self.functions[function]
        real = ctypes.c_double if dict(defines)["DTYPE"] == 1 else ctypes.c_float
        i, p = self._INT, self._PTR
        types_ = {"gemm": (i, i, i, real, p, i, p, i, real, p, i),
                  "streamk_gemm": (i, i, i, real, p, i, p, i, real, p, i, p, i, i, i),
                  "streamk_fixup": (i, i, i, real, p, real, p, i, i, i, i, i),
                  "splitk_reduce": (i, i, real, p, i, real, p, i)}[name]
        values = tuple(ctypes.cast(params[j], ctypes.POINTER(t)).contents.value
                       for j, t in enumerate(types_))  # fmt: skip
        self.launches.append((name, function, (gx, gy, gz), (bx, by, bz), smem, stream, values))
        return 0

    def cuEventCreate(self, ref, flags):  # noqa: N802  (the driver's names)
        self.next_event += 1
        ref._obj.value = self.next_event
        return 0

    def cuEventRecord(self, event, stream):  # noqa: N802  (the driver's names)
        self.log.append(("record", event, stream))
        self.pending.add(event)
        return 0

    def cuEventQuery(self, event):  # noqa: N802  (the driver's names)
        return _driver.CUDA_ERROR_NOT_READY if event in self.pending else 0

    def cuStreamWaitEvent(self, waiter, event, flags):  # noqa: N802  (the driver's names)
        self.log.append(("wait", waiter, event))
        return 0

    def finish(self):
        """The GPU catches up: every event recorded so far has passed."""
        self.pending.clear()


FAKE_SMS = 12  # few: the shapes below take both of the split-K reduction's grids


@pytest.fixture
def fake_driver(monkeypatch):
    driver = FakeDriver()
    monkeypatch.setattr(_driver, "lib", lambda: driver)
    monkeypatch.setattr(_driver, "events", _driver._Events())  # no fake handle outlives this
    monkeypatch.setattr(compiler, "raw_function", driver.raw_function)
    monkeypatch.setattr(cuda, "context", lambda: "the context")
    monkeypatch.setattr(cuda, "sm_count", lambda: FAKE_SMS)
    launch.launcher.cache_clear()
    yield driver
    launch.launcher.cache_clear()


class _Buffer(int):
    """A fake pool buffer: its address, and the size class it was taken in."""

    size = 0


class FakePool:
    """cuda.allocate and cuda.release_after on the CPU: each buffer taken is recorded as
    (address, bytes), each handed back as (address, the stream whose work it waits for)."""

    def __init__(self):
        self.taken: list[tuple[int, int]] = []
        self.released: list[tuple[int, int]] = []

    def allocate(self, nbytes):
        buffer = _Buffer(0x7000_0000 + 0x100_0000 * len(self.taken))
        buffer.size = nbytes
        self.taken.append((int(buffer), nbytes))
        return buffer

    def release_after(self, buffers, stream):
        self.released += [(int(b), stream) for b in buffers]
        buffers.clear()


@pytest.fixture
def fake_pool(monkeypatch):
    pool = FakePool()
    monkeypatch.setattr(cuda, "allocate", pool.allocate)
    monkeypatch.setattr(cuda, "release_after", pool.release_after)
    return pool


@pytest.mark.parametrize("name,dtype", [("simt", np.float32), ("dmma", np.float64),
                                        ("tf32", np.float32)])  # fmt: skip
def test_launch_uses_the_family_geometry(fake_driver, fake_pool, name, dtype):
    family = FAMILIES[name]
    dname = np.dtype(dtype).name
    itemsize = np.dtype(dtype).itemsize
    config = family.default_config(dname)
    split = type(config).make(config.family, {**config.as_dict(), "SPLIT_K": 2})
    grids = [0, 0]  # reductions launched a thread per element, and 16 bytes a thread
    shapes = ((1000, 129, 70), (1000, 128, 70), (64, 64, 64))
    for cfg, (m, n, k), ldc in itertools.product((config, split), shapes, (None, 1024)):
        ldc = ldc or m
        form = BlasForm(False, True, m, n, k, 4096, m, 8192, n, 12288, ldc, itemsize)
        del fake_driver.launches[:], fake_pool.taken[:], fake_pool.released[:]
        launch.gemm(form, np.dtype(dtype), 1.5, 0.5, cfg, stream=0x99)
        defines = tuple(sorted(launch.gemm_defines(cfg, np.dtype(dtype), form).items()))
        g = family.geometry(cfg, dname, m, n)
        gemm, *reduce = fake_driver.launches
        kernel, function, grid, block, smem, stream, values = gemm
        assert (kernel, fake_driver.functions[function]) == (
            "gemm", (family.source, defines, "gemm", g.smem_bytes))
        assert (grid, block, smem, stream) == (g.grid, g.block, g.smem_bytes, 0x99)
        if g.split_k == 1:
            assert values == (m, n, k, 1.5, 4096, m, 8192, n, 0.5, 12288, ldc)
            assert reduce == [] and fake_pool.taken == []
            continue
        # Split-K: the slices' partial sums into a workspace of the call's own, [SPLIT_K][n]
        # columns of m padded to 16 bytes; then the reduction into C with alpha and beta.
        ldw = -(-m * itemsize // 16) * 16 // itemsize
        ((workspace, nbytes),) = fake_pool.taken
        assert nbytes == g.split_k * ldw * n * itemsize
        assert values == (m, n, k, 1.5, 4096, m, 8192, n, 0.5, workspace, ldw)
        ((kernel, function, grid, block, smem, stream, values),) = reduce
        assert fake_driver.functions[function][1:] == (defines, "splitk_reduce", 0)
        assert (stream, block, smem) == (0x99, (launch.REDUCE_THREADS, 1, 1), 0)
        assert values == (m, n, 1.5, workspace, ldw, 0.5, 12288, ldc)
        vector = 16 // itemsize if form.aligned() else 1
        if -(-(-(-m // vector) * n) // launch.REDUCE_THREADS) < FAKE_SMS:
            vector, grids[0] = 1, grids[0] + 1  # a thread per element: SMs left idle
        grids[1] += vector > 1
        assert grid[0] * block[0] >= -(-m // vector) * n > (grid[0] - 1) * block[0]
        assert fake_pool.released == [(workspace, 0x99)]  # back once the stream has run them
        del fake_pool.taken[:], fake_pool.released[:]
        launch.gemm(form, np.dtype(dtype), 1.5, 0.5, cfg, stream=0x99, workspace=0x5000)
        assert fake_driver.launches[-2][6][-2:] == (0x5000, ldw) and fake_pool.taken == []
    assert all(grids), grids


def test_launch_reuses_its_launcher_and_skips_empty_products(fake_driver):
    config = FAMILIES["simt"].default_config("float32")
    form = BlasForm(False, False, 64, 64, 64, 4096, 64, 8192, 64, 12288, 64, 4)
    for alpha in (1.0, 2.0):
        launch.gemm(form, np.dtype(np.float32), alpha, 0.0, config)
    (first, second) = fake_driver.launches
    assert first[:6] == second[:6] and (first[6][3], second[6][3]) == (1.0, 2.0)
    assert len(fake_driver.functions) == 1  # loaded once, its buffers refilled
    launch.gemm(dataclasses.replace(form, m=0), np.dtype(np.float32), 1.0, 0.0, config)
    assert len(fake_driver.launches) == 2


def test_scratch_returns_to_the_pool_only_after_its_work(fake_driver, monkeypatch):
    """cuda.release_after: buffers whose last users are queued on a stream come back to the
    pool once an event recorded after them has passed; the host never waits for it."""
    import collections

    pool = cuda._ScratchPool()
    monkeypatch.setattr(cuda, "_pending", collections.deque())
    keep = [cuda.ScratchBuffer(0xA000, 256, pool), cuda.ScratchBuffer(0xB000, 512, pool)]
    cuda.release_after(keep, 0x77)
    assert keep == [] and pool.held == {}  # queued work may still read them
    ((what, _, stream),) = fake_driver.log
    assert (what, stream) == ("record", 0x77)
    cuda._reap()
    assert pool.held == {} and len(cuda._pending) == 1  # not yet: the event has not passed
    later = [cuda.ScratchBuffer(0xC000, 256, pool)]
    cuda.release_after(later, None)  # the legacy default stream
    fake_driver.finish()
    cuda._reap()
    assert pool.held == {256: [0xA000, 0xC000], 512: [0xB000]} and not cuda._pending
    # reused, in the pool of the context they were made in (this thread's own: None)
    assert sorted(_driver.events.free[None]) == sorted(e for _, e, _ in fake_driver.log)
    assert fake_driver.log[1][2] == 0


# --- the device call, end to end, on a pretend GPU -------------------------------------------


class FakeMemory:
    """Pretend device memory: a host buffer whose bytes have device addresses from BASE."""

    BASE = 1 << 24

    def __init__(self, nbytes=1 << 22):
        self.data = np.zeros(nbytes, np.uint8)
        self.next = self.BASE

    def alloc(self, nbytes):
        ptr = self.next
        self.next += -(-max(nbytes, 1) // 256) * 256 + 256
        return ptr

    def view(self, ptr, shape, dtype, strides):
        """An ndarray on the bytes at ptr (byte strides)."""
        return np.ndarray(shape, dtype, buffer=self.data, offset=ptr - self.BASE, strides=strides)

    def column_major(self, ptr, rows, cols, ld, dtype):
        size = np.dtype(dtype).itemsize
        return self.view(ptr, (rows, cols), dtype, (size, max(ld, 1) * size))

    def gemm(self, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, dtype):
        """cuBLAS's column-major GEMM on this memory, in float64."""
        op_a = self.column_major(a, *((k, m) if ta else (m, k)), lda, dtype)
        op_b = self.column_major(b, *((n, k) if tb else (k, n)), ldb, dtype)
        op_a, op_b = (op_a.T if ta else op_a), (op_b.T if tb else op_b)
        out = self.column_major(c, m, n, ldc, dtype)
        product = alpha * (op_a.astype(np.float64) @ op_b.astype(np.float64))
        out[...] = product + beta * out if beta != 0 else product


class PlannedArray(FakeDeviceArray):
    """A device array of a library tunedgemm plans for (the fake_gpu fixture registers a
    Kind for it), whose elements live in a FakeMemory."""

    def __init__(self, memory, ptr, shape, dtype, strides):
        dtype = np.dtype(dtype)
        super().__init__(ptr, tuple(shape), dtype.str, tuple(strides))
        self.memory, self.dtype = memory, dtype

    def get(self):
        return self.memory.view(self.ptr, self.shape, self.dtype, self.strides).copy()


@dataclasses.dataclass
class FakeGpu:
    """What the fake_gpu fixture gives a test: the launches made, the device memory, and
    device arrays made by the pretend library (`made`)."""

    launches: list
    memory: FakeMemory
    driver: FakeDriver
    made: list
    current_stream: list  # the stream the pretend library queues on now

    def array(self, host, ptr_offset=0):
        """A PlannedArray holding a copy of a NumPy array (its layout kept)."""
        host = np.asarray(host)
        steps = zip(host.shape, host.strides, strict=True)
        span = sum((d - 1) * s for d, s in steps if d) + host.itemsize
        ptr = self.memory.alloc(span + ptr_offset) + ptr_offset  # views keep their strides
        array = PlannedArray(self.memory, ptr, host.shape, host.dtype, host.strides)
        if host.size:
            self.memory.view(ptr, host.shape, host.dtype, host.strides)[...] = host
        return array

    def empty(self, shape, dtype, order="C", ptr_offset=0):
        size = np.dtype(dtype).itemsize
        strides = tuple(s * size for s in device_arrays._strides(tuple(shape), order))
        ptr = self.memory.alloc(math.prod(shape) * size + ptr_offset) + ptr_offset
        return PlannedArray(self.memory, ptr, shape, dtype, strides)


@pytest.fixture(scope="module")
def cublas_table(tmp_path_factory) -> str:
    """The shipped table with every entry's choice cuBLAS and every own config one launch
    without a workspace (written once for the module): the pretend GPU computes cuBLAS calls
    only and allocates no device memory, and the shipped table chooses own kernels, split-K
    ones among them, at some of the small shapes these tests use."""
    data = json.loads(table.shipped_path().read_text())
    for device in data["devices"]:
        for entries in device["entries"].values():
            for entry in entries:
                entry["choice"] = table.CUBLAS
                for own in [entry["own"], *(top["config"] for top in entry.get("top", []))]:
                    params = own["params"]
                    params.update({name: 1 if name == "SPLIT_K" else 0 for name in
                                   ("SPLIT_K", "STREAM_K", "SPLITK_FUSED") if name in params})
    path = tmp_path_factory.mktemp("tables") / "cublas.json"
    path.write_text(json.dumps(data))
    return str(path)


@pytest.fixture
def fake_gpu(monkeypatch, fake_driver, cublas_table):
    """A usable 'GPU' (the shipped table's H100, each entry choosing cuBLAS) with a pretend
    library of device arrays (PlannedArray) that plans serve; cuBLAS calls are recorded and
    computed on the pretend device memory, own-kernel launches (TUNEDGEMM_CUBLAS=0) are
    recorded by the fake driver."""
    launches: list = []
    memory = FakeMemory()
    gpu = FakeGpu(launches, memory, fake_driver, [], [0x33])
    for name in settings.DECIDING:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(table.TABLE_ENV, cublas_table)
    monkeypatch.setenv("TUNEDGEMM_REFINE", "0")  # nothing to time on a pretend GPU
    monkeypatch.setattr(cuda, "status", lambda: (True, "pretend GPU"))
    monkeypatch.setattr(cuda, "ordinal", lambda: 0)
    monkeypatch.setattr(cuda, "device_count", lambda: 1)
    monkeypatch.setattr(selection, "_current_gpu", lambda: H100)
    monkeypatch.setattr(reference, "status", lambda: (True, "pretend cuBLAS"))

    def direct(dtype, precision="ieee"):
        def call(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, stream):
            launches.append(("cublas", np.dtype(dtype).name, precision, ta, tb, m, n, k, alpha,
                             a, lda, b, ldb, beta, c, ldc, stream))  # fmt: skip
            if min(a, b, c) >= memory.BASE:  # bare FakeDeviceArrays have no elements
                memory.gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, dtype)

        return call

    def gemm_batched(form, strides, batch, dtype, alpha, beta, stream=None):
        launches.append(("cublas batched", form, strides, batch, np.dtype(dtype).name, alpha,
                         beta, stream))  # fmt: skip
        size = form.itemsize
        for i in range(batch):
            a, b, c = (p + i * s * size for p, s in zip((form.a, form.b, form.c), strides,
                                                      strict=True))  # fmt: skip
            memory.gemm(form.trans_a, form.trans_b, form.m, form.n, form.k, alpha, a, form.lda,
                        b, form.ldb, beta, c, form.ldc, dtype)  # fmt: skip

    # cuBLASLt stands aside (as where it is missing), so the plans' cuBLAS calls are these:
    monkeypatch.setattr(cublaslt, "runner", lambda *args: None)
    monkeypatch.setattr(reference, "direct", direct)
    monkeypatch.setattr(reference, "gemm_batched", gemm_batched)
    monkeypatch.setattr(reference, "gemm", lambda *args: pytest.fail("plans call cuBLAS directly"))

    def empty(like, shape, dtype, order):
        gpu.made.append(gpu.empty(shape, dtype, order))
        return gpu.made[-1]

    kind = device_arrays.Kind(
        "cupy",  # compared with cuda.ordinal, as CuPy's device id is
        lambda x: (x.shape, x.strides, x.typestr, 0),
        lambda x: x.ptr,
        lambda x: gpu.current_stream[0],
        empty,
        lambda box: recycle.counts(box[0]),
    )
    monkeypatch.setitem(device_arrays._kinds, PlannedArray, kind)
    plans.clear()
    yield gpu
    plans.clear()  # no plan made on the pretend GPU outlives the test


def test_device_call_reaches_cublas_with_the_transposed_problem(fake_gpu, monkeypatch):
    """Arrays of a library tunedgemm does not plan for take the general path on every call:
    normalised each time (each interface read once), and launched on the default stream."""
    monkeypatch.setattr(streams, "for_call", lambda s: pytest.fail("no stream to bridge"))
    a, b, c = (
        FakeDeviceArray(4096, (64, 32)),
        FakeDeviceArray(8192, (32, 48)),
        FakeDeviceArray(12288, (64, 48)),
    )
    assert tg.sgemm(2.0, a, b, 0.0, c, overwrite_c=1) is c
    ((*what, alpha, pa, lda, pb, ldb, beta, pc, ldc, stream),) = fake_gpu.launches
    # Row-major C = A B is the column-major C^T = B^T A^T.
    assert what == ["cublas", "float32", "ieee", False, False, 48, 64, 32]
    assert (pa, lda, pb, ldb, pc, ldc) == (8192, 48, 4096, 32, 12288, 48)
    assert (alpha, beta, stream) == (2.0, 0.0, 0)
    assert (a.reads, b.reads, c.reads) == (1, 1, 1)
    tg.sgemm(2.0, a, b, 0.0, c, overwrite_c=1)
    assert (a.reads, b.reads, c.reads) == (2, 2, 2)
    assert fake_gpu.launches[0] == fake_gpu.launches[1]
    assert plans.call_plans.items == {}


def test_producer_streams_still_order_the_call(fake_gpu, monkeypatch):
    seen = []

    class Call:
        pycuda = None

        def after(self, producers):
            seen.append(set(producers))

        def finish(self):
            seen.append("finished")

    monkeypatch.setattr(streams, "for_call", lambda s: Call())
    a, b, c = (
        FakeDeviceArray(4096, (8, 8), stream=0x55),
        FakeDeviceArray(8192, (8, 8)),
        (FakeDeviceArray(12288, (8, 8))),
    )
    tg.sgemm(1.0, a, b, 0.0, c, overwrite_c=1)
    assert seen == [{0x55}, "finished"] and len(fake_gpu.launches) == 1


# --- the plan cache: repeated device calls of one kind launch their plan ---------------------


@pytest.fixture
def normalised(monkeypatch):
    """The calls normalised (each miss of the plan cache normalises once)."""
    from tunedgemm import api

    calls = []

    def counting(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)

    real = api.normalise
    monkeypatch.setattr(api, "normalise", counting)
    monkeypatch.setattr(_matmul, "normalise", counting)
    return calls


def operands(gpu, rng, dtype=np.float32, m=64, n=48, k=32):
    return (gpu.array(uniform(rng, (m, k), dtype)), gpu.array(uniform(rng, (k, n), dtype)),
            gpu.array(uniform(rng, (m, n), dtype)))  # fmt: skip


def test_a_repeated_call_launches_its_plan_without_normalising(fake_gpu, normalised, rng):
    a, b, c = operands(fake_gpu, rng)
    c0 = c.get()
    assert tg.sgemm(2.0, a, b, 0.5, c, overwrite_c=1) is c
    assert_gemm(c.get(), 2.0, a.get(), b.get(), 0.5, c0, np.float32)
    c1 = c.get()
    assert tg.sgemm(2.0, a, b, 0.5, c, overwrite_c=1) is c
    assert_gemm(c.get(), 2.0, a.get(), b.get(), 0.5, c1, np.float32)
    assert len(normalised) == 1 and len(plans.call_plans.items) == 1
    first, second = fake_gpu.launches
    assert first == second and first[:8] == ("cublas", "float32", "ieee", False, False, 48, 64,
                                             32)  # fmt: skip
    # C^T = B^T A^T, on the library's current stream:
    assert (first[9], first[11], first[14], first[16]) == (b.ptr, a.ptr, c.ptr, 0x33)
    assert (a.reads, b.reads, c.reads) == (1, 1, 1)  # a hit reads no interface


def test_a_plan_serves_new_addresses_and_scalars(fake_gpu, normalised, rng):
    a, b, c = operands(fake_gpu, rng)
    tg.sgemm(2.0, a, b, 0.0, c, overwrite_c=1)
    a2, b2, c2 = operands(fake_gpu, rng)
    c0 = c2.get()
    assert tg.sgemm(-1.5, a2, b2, 0.25, c2, overwrite_c=1) is c2
    assert_gemm(c2.get(), -1.5, a2.get(), b2.get(), 0.25, c0, np.float32)
    assert len(normalised) == 1
    last = fake_gpu.launches[-1]
    assert (last[8], last[13]) == (-1.5, 0.25)
    assert (last[9], last[11], last[14], last[16]) == (b2.ptr, a2.ptr, c2.ptr, 0x33)


def test_alignment_picks_the_aligned_or_unaligned_kernel(fake_gpu, normalised, monkeypatch, rng):
    """Own kernels have variants by 16-byte alignment: one call plan, a device plan each."""
    monkeypatch.setenv("TUNEDGEMM_CUBLAS", "0")
    a, b, c = operands(fake_gpu, rng)
    tg.sgemm(1.0, a, b, 0.0, c, overwrite_c=1)
    host = uniform(rng, (64, 32), np.float32)
    shifted = fake_gpu.array(host, ptr_offset=4)  # 4 bytes off 16-byte alignment
    tg.sgemm(1.0, shifted, b, 0.0, c, overwrite_c=1)
    assert len(normalised) == 1 and len(plans.device_plans.items) == 2
    aligned, unaligned = (fake_gpu.driver.functions[launched[1]]
                          for launched in fake_gpu.driver.launches[-2:])  # fmt: skip
    assert dict(aligned[1])["ALIGNED"] == 1 and dict(unaligned[1])["ALIGNED"] == 0
    assert fake_gpu.driver.launches[-1][6][6] == shifted.ptr  # b of C^T = B^T A^T


@pytest.fixture
def process_precision():
    """tunedgemm.set_precision's setting, restored after the test."""
    saved = sys.modules["tunedgemm.precision"]._process[0]
    yield
    tg.set_precision(saved)


@pytest.mark.parametrize(
    "change",
    ["shape", "strides", "dtype", "trans flag", "precision", "default precision", "cublas off",
     "new result", "bool flag", "beta without c"],
)  # fmt: skip
def test_anything_that_changes_the_launch_is_not_a_hit(fake_gpu, normalised, monkeypatch, rng,
                                                        process_precision, change):  # fmt: skip
    a, b, c = operands(fake_gpu, rng)
    tg.sgemm(2.0, a, b, 0.0, c, overwrite_c=1)
    args = {"alpha": 2.0, "a": a, "b": b, "beta": 0.0, "c": c, "overwrite_c": 1}
    routine = tg.sgemm
    if change == "shape":
        args["a"], args["c"] = operands(fake_gpu, rng, m=60)[::2]
    elif change == "strides":  # a view with a leading dimension of 40
        args["a"] = fake_gpu.array(uniform(rng, (64, 40), np.float32)[:, :32])
    elif change == "dtype":
        args["a"], args["b"], args["c"] = operands(fake_gpu, rng, np.float64)
        routine = tg.dgemm
    elif change == "trans flag":
        args["a"], args["trans_a"] = fake_gpu.array(uniform(rng, (32, 64), np.float32)), 1
    elif change == "precision":
        args["precision"] = "3xtf32"
    elif change == "default precision":
        tg.set_precision("3xtf32")  # the process's default (undone by the fixture below)
    elif change == "cublas off":
        monkeypatch.setenv("TUNEDGEMM_CUBLAS", "0")
    elif change == "new result":
        args["overwrite_c"] = 0
    elif change == "bool flag":
        # Accepted as 0 (as SciPy takes it) by the full path, which plans do not take.
        assert tg.sgemm(trans_b=False, **args) is c
        assert len(normalised) == 2
        return
    elif change == "beta without c":
        # c is zeros (as SciPy has it): the full path, a new result.
        result = tg.sgemm(2.0, a, b, 1.0)
        assert len(normalised) == 2 and result is not c
        return
    c0 = args["c"].get()
    result = routine(**args)
    assert len(normalised) == 2
    launches = fake_gpu.launches + fake_gpu.driver.launches
    assert len(launches) == 2 and launches[0] != launches[1]
    assert (result is args["c"]) == (change != "new result")
    if change != "cublas off":  # own kernels are recorded, not run, on the pretend GPU
        host_a = args["a"].get()
        assert_gemm(result.get(), 2.0, host_a.T if args.get("trans_a") else host_a,
                    args["b"].get(), 0.0, c0, (routine is tg.dgemm and np.float64) or np.float32)


def test_a_transpose_flag_alone_changes_the_plan(fake_gpu, normalised, rng):
    """Square operands: the flags are all that tells the calls apart (1 and 2 both mean
    transpose, so they share a plan)."""
    a, b, c = operands(fake_gpu, rng, m=32, n=32, k=32)
    for trans_a, misses in ((0, 1), (1, 2), (2, 2), (0, 2)):
        tg.sgemm(1.0, a, b, 0.0, c, trans_a=trans_a, overwrite_c=1)
        assert len(normalised) == misses
        assert_gemm(c.get(), 1.0, a.get().T if trans_a else a.get(), b.get(), 0.0, None,
                    np.float32)  # fmt: skip


def test_cublas_runs_through_cublaslt_where_it_serves(fake_gpu, monkeypatch, rng):
    """Where cuBLASLt has an algorithm for a plan's key, the plan runs it (built once)."""
    built = []

    def runner(dtype, precision, ta, tb, m, n, k, lda, ldb, ldc, batch=1, strides=(0, 0, 0)):
        built.append((dtype, precision, ta, tb, m, n, k, lda, ldb, ldc, batch, strides))

        def run(a, b, c, alpha, beta, stream):
            fake_gpu.launches.append(("cublaslt", a, b, c, alpha, beta, stream))
            fake_gpu.memory.gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, dtype)

        return run

    monkeypatch.setattr(cublaslt, "runner", runner)
    a, b, c = operands(fake_gpu, rng)
    for alpha in (1.0, -2.0):
        c0 = c.get()
        tg.sgemm(alpha, a, b, 1.0, c, overwrite_c=1)
        assert_gemm(c.get(), alpha, a.get(), b.get(), 1.0, c0, np.float32)
    assert built == [("float32", "ieee", False, False, 48, 64, 32, 48, 32, 48, 1, (0, 0, 0))]
    assert [x[0] for x in fake_gpu.launches] == ["cublaslt"] * 2


def test_a_new_result_is_made_on_every_call(fake_gpu, normalised, rng):
    a, b, _ = operands(fake_gpu, rng)
    first = tg.sgemm(2.0, a, b)
    second = tg.sgemm(2.0, a, b)
    assert len(normalised) == 1 and first is not second and first.ptr != second.ptr
    assert {first, second} <= set(fake_gpu.made)
    for result in (first, second):  # F-ordered, as sgemm's host results
        assert result.shape == (64, 48) and result.strides == (4, 256)
        assert_gemm(result.get(), 2.0, a.get(), b.get(), 0.0, None, np.float32)
    (*rest1, c1, ldc1, s1), (*rest2, c2, ldc2, s2) = fake_gpu.launches
    assert (c1, c2) == (first.ptr, second.ptr) and rest1 == rest2 and ldc1 == ldc2 == 64
    assert s1 == s2 == 0x33
    # C is column-major (no swap); A and B are row-major, so read transposed
    assert rest1[:8] == ["cublas", "float32", "ieee", True, True, 64, 48, 32]


def test_a_call_on_another_stream_waits_for_the_librarys(fake_gpu, rng):
    a, b, c = operands(fake_gpu, rng)
    for _ in range(2):  # the miss and the hit
        tg.sgemm(1.0, a, b, 0.0, c, overwrite_c=1, stream=0x44)
    assert [launched[-1] for launched in fake_gpu.launches] == [0x44, 0x44]
    (record, wait, *again) = fake_gpu.driver.log
    assert record[0::2] == ("record", 0x33) and wait == ("wait", 0x44, record[1])
    assert len(again) == 2
    fake_gpu.current_stream[0] = 0x44  # already the library's stream: nothing to wait for
    tg.sgemm(1.0, a, b, 0.0, c, overwrite_c=1, stream=0x44)
    assert len(fake_gpu.driver.log) == 4


@pytest.mark.parametrize(
    "a_shape,b_shape,launched",
    [((64, 32), (32, 48), ["cublas"]), ((4, 24, 16), (16, 8), ["cublas"]),  # folded: 1 product
     ((3, 24, 16), (16,), ["cublas"]), ((4, 24, 16), (4, 16, 8), ["cublas batched"]),
     ((24, 16), (3, 16, 8), ["cublas batched"]),
     ((2, 3, 24, 16), (3, 16, 8), ["cublas batched"] * 2),  # b repeats: a loop of 2 batches
     ((16,), (3, 16, 8), ["cublas batched"]), ((1, 24, 16), (4, 16, 8), ["cublas batched"]),
     ((2, 1, 24, 16), (1, 1, 16, 8), ["cublas"])],  # folded too
)  # fmt: skip
def test_device_matmul_broadcasts_as_numpy(fake_gpu, normalised, rng, a_shape, b_shape,
                                           launched):  # fmt: skip
    """N-d device matmul: one (possibly folded) strided-batched product, np.matmul's result
    (shape, C order, values); a repeat launches the plan without normalising."""
    host_a, host_b = uniform(rng, a_shape, np.float32), uniform(rng, b_shape, np.float32)
    a, b = fake_gpu.array(host_a), fake_gpu.array(host_b)
    expected = np.matmul(host_a.astype(np.float64), host_b.astype(np.float64))
    for _ in range(2):
        result = tg.matmul(a, b)
        assert result.shape == expected.shape
        assert result.strides == tuple(s // 2 for s in np.empty(expected.shape).strides)
        np.testing.assert_allclose(result.get(), expected, rtol=1e-5, atol=1e-5)
    assert len(normalised) == (len(a_shape) == len(b_shape) == 2)
    assert len(plans.call_plans.items) == 1
    assert [x[0] for x in fake_gpu.launches] == launched * 2


def test_device_matmul_of_batches_no_single_stride_walks(fake_gpu, rng):
    """Batch dimensions that no single stride walks (a view of every other matrix, an
    operand broadcast along one dimension only): a loop of strided-batched launches, still
    np.matmul's result."""
    host_a = uniform(rng, (2, 3, 24, 16), np.float32)[:, :2]  # the batch rows skip one
    host_b = uniform(rng, (2, 16, 8), np.float32)[:, None]  # broadcast along the second
    a, b = fake_gpu.array(host_a), fake_gpu.array(host_b)
    result = tg.matmul(a, b)
    expected = np.matmul(host_a.astype(np.float64), host_b.astype(np.float64))
    np.testing.assert_allclose(result.get(), expected, rtol=1e-5, atol=1e-5)
    assert len(fake_gpu.launches) > 1


# --- cuBLAS through scikit-cuda's binding ---------------------------------------------------

_P, _I = ctypes.c_void_p, ctypes.c_int
_GEMM_PROTOTYPE = ctypes.CFUNCTYPE(_I, _P, _I, _I, _I, _I, _I, _P, _P, _I, _P, _I, _P, _P, _I)


def fake_skcuda(status=0, binding=True):
    """A stand-in skcuda.cublas whose `_libcublas` holds ctypes functions typed as scikit-cuda
    declares cublas<t>gemm_v2 (so arguments go through ctypes' conversions); calls are
    recorded. binding False: no `_libcublas`; "untyped": functions without argtypes."""
    calls = []

    def binding_for(scalar):
        def gemm(handle, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc):
            calls.append(("direct", handle, ta, tb, m, n, k, scalar.from_address(alpha).value,
                          a, lda, b, ldb, scalar.from_address(beta).value, c, ldc))  # fmt: skip
            return status

        return _GEMM_PROTOTYPE(gemm)

    lib = types.SimpleNamespace(cublasSgemm_v2=binding_for(ctypes.c_float),
                                cublasDgemm_v2=binding_for(ctypes.c_double))  # fmt: skip

    def wrapper(*args):
        calls.append(("wrapper", *args))

    module = types.SimpleNamespace(cublasSgemm=wrapper, cublasDgemm=wrapper,
                                   cublasSetStream=lambda h, s: None)  # fmt: skip
    if binding == "untyped":  # ctypes functions before argtypes are declared
        untyped = types.SimpleNamespace(argtypes=None)
        module._libcublas = types.SimpleNamespace(cublasSgemm_v2=untyped, cublasDgemm_v2=untyped)
    elif binding:
        module._libcublas = lib
    return module, calls


@pytest.fixture
def cublas(monkeypatch):
    def install(**kw):
        module, calls = fake_skcuda(**kw)
        monkeypatch.setattr(reference, "_cublas", lambda: module)
        monkeypatch.setattr(reference, "_handle", lambda: 0x1234)
        monkeypatch.setattr(reference, "_stream_in_use", [None])
        reference._gemm_call.cache_clear()
        return calls

    yield install
    reference._gemm_call.cache_clear()


FORM = BlasForm(True, False, 5, 6, 7, 0x7F00_0000_1000, 7, 0x7F00_0000_2000, 7, 0x7F00_0000_3000,
                5, 4)  # fmt: skip


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cublas_called_through_the_binding(cublas, dtype):
    calls = cublas()
    reference.gemm(FORM, np.dtype(dtype), 1.25, -0.5)
    reference.gemm(FORM, np.dtype(dtype), 3.0, 0.0)
    assert calls == [
        ("direct", 0x1234, 1, 0, 5, 6, 7, 1.25, FORM.a, 7, FORM.b, 7, -0.5, FORM.c, 5),
        ("direct", 0x1234, 1, 0, 5, 6, 7, 3.0, FORM.a, 7, FORM.b, 7, 0.0, FORM.c, 5),
    ]


def test_cublas_status_is_checked(cublas):
    cublas(status=7)
    with pytest.raises(reference.CublasError, match=r"cublasSgemm_v2 .*INVALID_VALUE"):
        reference.gemm(FORM, np.dtype(np.float32), 1.0, 0.0)


@pytest.mark.parametrize("binding", [False, "untyped"])
def test_cublas_wrapper_used_without_the_typed_binding(cublas, binding):
    calls = cublas(binding=binding)
    reference.gemm(FORM, np.dtype(np.float64), 1.0, 2.0)
    assert calls == [
        ("wrapper", 0x1234, "t", "n", 5, 6, 7, 1.0, FORM.a, 7, FORM.b, 7, 2.0, FORM.c, 5)
    ]


def test_split_k_plans_keep_a_workspace_per_stream(fake_driver, fake_pool):
    """A split-K plan's launches write their partial sums into a workspace of the plan's
    own per stream: one stream's launches (a batch's too) share it, two streams never do,
    nor two threads on the per-thread default stream; reserve makes it before any launch."""
    import threading

    config = FAMILIES["dmma"].default_config("float64")
    split = type(config).make(config.family, {**config.as_dict(), "SPLIT_K": 4})
    key = plans.GemmKey("float64", "ieee", 100, 30, 4000, False, False, 100, 4000, 128, False,
                        batch=2, batch_strides=(0, 0, 128 * 30))  # fmt: skip
    run = plans.launcher(key, split)
    ldw = 100  # 100 doubles: 16-byte multiple already
    run.reserve(0x11)
    assert fake_pool.taken == [(0x7000_0000, 4 * ldw * 30 * 8)] and fake_driver.launches == []
    for stream in (0x11, 0x22, 0x11):
        run(0x1000, 0x2000, 0x3000, 2.0, 0.0, stream)
    workspaces = [launch[6][9] for launch in fake_driver.launches if launch[0] == "gemm"]
    reduced_into = [launch[6][6] for launch in fake_driver.launches if launch[0] != "gemm"]
    assert len(workspaces) == 6 and reduced_into == [0x3000, 0x3000 + 128 * 30 * 8] * 3
    assert workspaces[:2] == workspaces[4:] == [0x7000_0000] * 2
    assert workspaces[2] == workspaces[3] != workspaces[0]
    assert len(fake_pool.taken) == 2 and fake_pool.released == []  # kept by the plan
    together = threading.Barrier(2)  # both alive at once: two thread identities

    def per_thread_default_stream() -> None:
        run(0x1000, 0x2000, 0x3000, 2.0, 0.0, cuda.CU_STREAM_PER_THREAD)
        together.wait()

    threads = [threading.Thread(target=per_thread_default_stream) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    last = {launch[6][9] for launch in fake_driver.launches[-8:] if launch[0] == "gemm"}
    assert len(last) == 2 and len(fake_pool.taken) == 4


def test_plan_reserve_reaches_the_runner():
    made = []
    plan = plans.DevicePlan.__new__(plans.DevicePlan)
    plan.run = types.SimpleNamespace(reserve=made.append)
    plan.reserve(0x33)
    plan.run = lambda *args: None  # one launch, nothing to reserve
    plan.reserve(0x33)
    assert made == [0x33]


def test_events_are_reused_only_in_the_context_they_were_made_in(fake_driver, monkeypatch):
    """A thread bound to another GPU (cuda.bind) works in that GPU's context: it never gets an
    event made in the process's own context (cuEventRecord would refuse it)."""
    import threading

    own = _driver.events.take()
    _driver.events.give(own)
    seen = []

    def bound_thread():
        cuda._thread.bound_ordinal = 1
        try:
            made = _driver.events.take()
            seen.append(made)
            _driver.events.give(made)
        finally:
            del cuda._thread.bound_ordinal

    worker = threading.Thread(target=bound_thread)
    worker.start()
    worker.join()
    assert seen and seen[0] != own
    assert _driver.events.free == {None: [own], 1: seen}
    assert _driver.events.take() == own


# --- recycled new results (tunedgemm/recycle.py) ---------------------------------------------


def _new_results(gpu, rng, holder):
    """Two repeated new-result calls on fresh operands; `holder(r)` may keep the first result
    alive in some way before the second call. Both results are checked against float64."""
    a, b, _ = operands(gpu, rng)
    first = tg.sgemm(2.0, a, b)
    assert_gemm(first.get(), 2.0, a.get(), b.get(), 0.0, None, np.float32)
    ptr, values, made = first.ptr, first.get(), len(gpu.made)
    kept = holder(first)
    del first
    a2, b2, _ = operands(gpu, rng)
    second = tg.sgemm(2.0, a2, b2)
    assert_gemm(second.get(), 2.0, a2.get(), b2.get(), 0.0, None, np.float32)
    assert len(gpu.made) - made == (second.ptr != ptr)  # one allocation, or none
    return ptr, values, kept, second


def test_a_dropped_new_result_is_written_again(fake_gpu, normalised, rng):
    ptr, _, _, second = _new_results(fake_gpu, rng, lambda r: None)
    assert second.ptr == ptr and len(normalised) == 1


@pytest.mark.parametrize("holder", ["variable", "container", "weak reference", "view"])
def test_a_result_held_in_any_way_is_never_written_again(fake_gpu, rng, holder):
    import weakref

    def hold(r):
        if holder == "weak reference":
            return weakref.ref(r)
        if holder == "view":  # a view holds its base, as CuPy's, PyTorch's and PyCUDA's do
            return types.SimpleNamespace(base=r)
        return [r] if holder == "container" else r

    ptr, values, kept, second = _new_results(fake_gpu, rng, hold)
    assert second.ptr != ptr
    first = kept() if holder == "weak reference" else kept
    first = first.base if holder == "view" else first[0] if holder == "container" else first
    np.testing.assert_array_equal(first.get(), values)  # untouched by the second call


def test_a_result_made_on_another_stream_is_not_written_again(fake_gpu, rng):
    a, b, _ = operands(fake_gpu, rng)
    ptr = tg.sgemm(1.0, a, b).ptr
    fake_gpu.current_stream[0] = 0x77
    other = tg.sgemm(1.0, a, b).ptr
    assert other != ptr
    assert tg.sgemm(1.0, a, b).ptr == other  # kept for stream 0x77 now


@pytest.mark.parametrize("mode,recycled", [("off", False), ("auto", True), ("all", True)])
def test_recycling_follows_its_setting(fake_gpu, rng, monkeypatch, mode, recycled):
    monkeypatch.setenv("TUNEDGEMM_RECYCLE_RESULTS", mode)
    a, b, _ = operands(fake_gpu, rng)
    ptr = tg.sgemm(1.0, a, b).ptr
    assert (tg.sgemm(1.0, a, b).ptr == ptr) == recycled


def test_a_recycled_batched_matmul_result_is_right(fake_gpu, rng):
    a = fake_gpu.array(uniform(rng, (3, 24, 16), np.float64))
    b = fake_gpu.array(uniform(rng, (3, 16, 20), np.float64))
    ptr = tg.matmul(a, b).ptr
    a2 = fake_gpu.array(uniform(rng, (3, 24, 16), np.float64))
    again = tg.matmul(a2, b)
    assert again.ptr == ptr and again.shape == (3, 24, 20)
    want = np.matmul(a2.get(), b.get())
    np.testing.assert_allclose(again.get(), want, rtol=1e-12, atol=1e-12)


def test_stream_k_launches_its_kernel_and_fixup(fake_driver, fake_pool, monkeypatch):
    """A STREAM_K config: streamk_gemm over min(SMs x STREAM_K, iterations) blocks with C, a
    workspace of 2 slots per block and the schedule's (DP, S / G, S % G), then streamk_fixup
    over a block per boundary between their stream-K ranges; one block (a single iteration)
    or an all data-parallel schedule (tiles a multiple of the blocks) needs no fixup."""
    from tunedgemm import streamk

    monkeypatch.setattr(cuda, "sm_count", lambda: 132)
    family = FAMILIES["simt"]
    config = type(family.default_config("float32")).make(
        "simt", {**family.default_config("float32").as_dict(), "STREAM_K": 2})
    shapes = ((3072, 96, 3072), (5, 7, 3), (128 * 24, 128 * 11, 100), (128 * 53, 128 * 25, 64))
    for (m, n, k), ldc in itertools.product(shapes, (None, 4096)):
        ldc = ldc or m
        form = BlasForm(False, False, m, n, k, 4096, m, 8192, k, 12288, ldc, 4)
        del fake_driver.launches[:], fake_pool.taken[:], fake_pool.released[:]
        launch.gemm(form, np.dtype(np.float32), 1.5, 0.5, config, stream=0x99)
        sched = streamk.schedule(m, n, k, 128, 128, 8, 264)
        ((workspace, nbytes),) = fake_pool.taken
        assert nbytes == 2 * sched.ctas * 128 * 128 * 4
        gemm, *fixup = fake_driver.launches
        assert gemm[0] == "streamk_gemm" and gemm[2] == (sched.ctas, 1, 1)
        assert gemm[6] == (m, n, k, 1.5, 4096, m, 8192, k, 0.5, 12288, ldc, workspace,
                           *sched.args)  # fmt: skip
        if sched.ctas == 1 or sched.dp == sched.tiles:
            assert sched.fixup_blocks == 0
            assert fixup == []
        else:
            ((name, _, grid, block, smem, stream, values),) = fixup
            assert (name, grid, block, smem, stream) == (
                "streamk_fixup", (sched.ctas - 1, 1, 1), (streamk.FIXUP_THREADS, 1, 1), 0, 0x99)
            assert values == (m, n, k, 1.5, workspace, 0.5, 12288, ldc, sched.ctas, *sched.args)
        assert fake_pool.released == [(workspace, 0x99)]
        assert launch.workspace_bytes(config, np.dtype(np.float32), form) == nbytes
