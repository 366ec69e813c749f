"""The per-call fast path on device arrays, checked on the CPU with stand-in device arrays,
kernels and cuBLAS: it must give what the plain computations give."""

from __future__ import annotations

import ctypes
import dataclasses
import itertools
import types
import warnings

import numpy as np
import pytest

import tunedgemm as tg
from tunedgemm import _args, cuda, launch, reference, selection, streams, table
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
    assert not _args._writeable(ro) and _args._writeable(rw)


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


def test_choose_follows_the_environment_without_a_cache_clear(clean_env, tmp_path):
    def choose():
        return selection.choose(np.float32, 64, 64, 64, False, False, *H100).config

    assert choose() == table.CUBLAS  # the shipped table's H100 choice at 64^3
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
    clean_env.delenv(table.TABLE_ENV)
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


class FakeKernel:
    def __init__(self):
        self.calls = []

    def prepared_async_call(self, grid, block, stream, *args, shared_size=0):
        self.calls.append((grid, block, stream, args, shared_size))


@pytest.fixture
def fake_kernels(monkeypatch):
    kernels: dict[tuple, tuple[FakeKernel, FakeKernel]] = {}

    def prepared(source, defines, scalar, smem_bytes, ctx_id):
        return kernels.setdefault(
            (source, defines, scalar, smem_bytes), (FakeKernel(), FakeKernel())
        )

    monkeypatch.setattr(launch, "_prepared", prepared)
    monkeypatch.setattr(launch.cuda, "context", lambda: "ctx")
    launch._variant.cache_clear()
    yield kernels
    launch._variant.cache_clear()


@pytest.mark.parametrize("name,dtype", [("simt", np.float32), ("dmma", np.float64)])
def test_launch_uses_the_family_geometry(fake_kernels, name, dtype):
    family = FAMILIES[name]
    dname = np.dtype(dtype).name
    config = family.default_config(dname)
    split = type(config).make(config.family, {**config.as_dict(), "SPLIT_K": 2})
    for cfg, (m, n, k) in itertools.product((config, split), ((1000, 129, 70), (64, 64, 64))):
        form = BlasForm(False, True, m, n, k, 4096, m, 8192, n, 12288, m, np.dtype(dtype).itemsize)
        launch.gemm(form, np.dtype(dtype), 1.5, 0.5, cfg)
        defines = tuple(sorted(launch.gemm_defines(cfg, np.dtype(dtype), form).items()))
        g = family.geometry(cfg, dname, m, n)
        gemm, scale = fake_kernels[(family.source, defines, "f" if dname == "float32" else "d",
                                    g.smem_bytes)]  # fmt: skip
        grid, block, _, args, shared = gemm.calls[-1]
        assert (grid, block, shared) == (g.grid, g.block, g.smem_bytes)
        assert args[:3] == (m, n, k) and args[3] == 1.5 and args[3].dtype == dtype
        assert bool(scale.calls) == (g.split_k > 1)


# --- the device call, end to end ------------------------------------------------------------


@pytest.fixture
def fake_gpu(monkeypatch):
    """A usable 'GPU' whose cuBLAS calls are recorded instead of run."""
    calls = []
    monkeypatch.delenv("TUNEDGEMM_BACKEND", raising=False)
    for name in (selection.FAMILY_ENV, selection.CUBLAS_ENV, table.TABLE_ENV):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TUNEDGEMM_REFINE", "0")  # nothing to time on a pretend GPU
    monkeypatch.setattr(cuda, "status", lambda: (True, "pretend GPU"))
    monkeypatch.setattr(cuda, "context", lambda: None)
    monkeypatch.setattr(selection, "_current_gpu", lambda: H100)
    monkeypatch.setattr(reference, "status", lambda: (True, "pretend cuBLAS"))
    monkeypatch.setattr(reference, "gemm", lambda *args: calls.append(args))
    selection._choose.cache_clear()
    yield calls
    selection._choose.cache_clear()


def test_device_call_reaches_cublas_with_the_transposed_problem(fake_gpu, monkeypatch):
    monkeypatch.setattr(streams, "for_call", lambda s: pytest.fail("no stream to bridge"))
    a, b, c = (
        FakeDeviceArray(4096, (64, 32)),
        FakeDeviceArray(8192, (32, 48)),
        FakeDeviceArray(12288, (64, 48)),
    )
    assert tg.sgemm(2.0, a, b, 0.0, c, overwrite_c=1) is c
    ((form, dtype, alpha, beta, stream),) = fake_gpu
    # Row-major C = A B is the column-major C^T = B^T A^T.
    assert (form.m, form.n, form.k) == (48, 64, 32)
    assert (form.a, form.lda, form.b, form.ldb, form.c, form.ldc) == (8192, 48, 4096, 32, 12288,
                                                                      48)  # fmt: skip
    assert (dtype, alpha, beta, stream) == (np.float32, 2.0, 0.0, None)
    # Once for the repeat key and once to normalise (real CuPy arrays are keyed by their
    # attributes instead); a repeat of the call reads each once more and normalises nothing.
    assert (a.reads, b.reads, c.reads) == (2, 2, 2)
    tg.sgemm(2.0, a, b, 0.0, c, overwrite_c=1)
    assert (a.reads, b.reads, c.reads) == (3, 3, 3) and fake_gpu[0] == fake_gpu[1]


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
    assert seen == [{0x55}, "finished"]


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


# --- repeated in-place calls reuse their launch ---------------------------------------------


@pytest.fixture
def repeat_memo(fake_gpu):
    from tunedgemm import _repeat

    _repeat.clear()
    yield fake_gpu
    _repeat.clear()


def _operands():
    return (FakeDeviceArray(4096, (64, 32)), FakeDeviceArray(8192, (32, 48)),
            FakeDeviceArray(12288, (64, 48)))  # fmt: skip


def test_a_repeated_call_repeats_its_launch_without_normalising(repeat_memo, monkeypatch):
    from tunedgemm import api

    a, b, c = _operands()
    assert tg.sgemm(2.0, a, b, 0.5, c, overwrite_c=1) is c
    monkeypatch.setattr(api, "normalise", lambda *args: pytest.fail("not a repeat"))
    assert tg.sgemm(2.0, a, b, 0.5, c, overwrite_c=1) is c
    first, second = repeat_memo
    assert first == second


@pytest.mark.parametrize(
    "change",
    ["pointer", "alpha", "flag", "cublas off", "readonly c", "new output", "bool flag"],
)
def test_anything_that_changes_the_launch_is_not_a_repeat(repeat_memo, monkeypatch, change):
    a, b, c = _operands()
    tg.sgemm(2.0, a, b, 0.0, c, overwrite_c=1)
    args = {"alpha": 2.0, "a": a, "b": b, "beta": 0.0, "c": c, "overwrite_c": 1}
    if change == "pointer":
        args["b"] = FakeDeviceArray(16384, (32, 48))
    elif change == "alpha":
        args["alpha"] = 3.0
    elif change == "flag":
        args["a"], args["trans_a"] = FakeDeviceArray(4096, (32, 64)), 1
    elif change == "cublas off":
        monkeypatch.setenv(selection.CUBLAS_ENV, "0")
        monkeypatch.setattr(launch, "gemm", lambda *args: repeat_memo.append(("own", args)))
    elif change == "readonly c":
        args["c"] = FakeDeviceArray(12288, (64, 48), readonly=True)
        monkeypatch.setattr(_args, "_new_out", lambda like, shape, dtype, order: (
            _args.device_matrix(FakeDeviceArray(65536, shape), "out"), "new"))  # fmt: skip
    elif change == "new output":
        args["overwrite_c"] = 0
        monkeypatch.setattr(_args, "_new_out", lambda like, shape, dtype, order: (
            _args.device_matrix(FakeDeviceArray(65536, shape), "out"), "new"))  # fmt: skip
    elif change == "bool flag":
        with pytest.raises(TypeError, match="trans_b"):
            tg.sgemm(trans_b=True, **args)
        return
    result = tg.sgemm(**args)
    assert len(repeat_memo) == 2 and repeat_memo[0] != repeat_memo[1]
    assert (result is args["c"]) == (change not in ("readonly c", "new output"))


@pytest.fixture
def new_results(monkeypatch):
    """New device results as fake CuPy arrays, each at a new address."""
    from tunedgemm import device_arrays

    made = []

    def empty_like_kind(like, shape, dtype, order):
        itemsize = np.dtype(dtype).itemsize
        strides = (itemsize, itemsize * shape[0]) if order == "F" else None
        made.append(FakeDeviceArray(1 << 20 + len(made), shape, np.dtype(dtype).str, strides))
        return made[-1]

    monkeypatch.setattr(device_arrays, "empty_like_kind", empty_like_kind)
    return made


def test_a_repeated_call_into_a_new_result_makes_one_and_repeats_the_launch(
    repeat_memo, new_results, monkeypatch
):
    from tunedgemm import api

    a, b, _ = _operands()
    first = tg.sgemm(2.0, a, b)
    monkeypatch.setattr(api, "normalise", lambda *args: pytest.fail("not a repeat"))
    second = tg.sgemm(2.0, a, b)
    assert new_results == [first, second] and first.ptr != second.ptr
    assert second.shape == (64, 48) and second.strides == (4, 256)  # F-ordered, as the first
    (form1, *rest1), (form2, *rest2) = repeat_memo
    assert (form1.c, form2.c) == (first.ptr, second.ptr) and rest1 == rest2
    assert dataclasses.replace(form1, c=0) == dataclasses.replace(form2, c=0)


def test_new_result_calls_that_differ_are_not_repeats(repeat_memo, new_results):
    a, b, _ = _operands()
    tg.sgemm(2.0, a, b)
    tg.sgemm(3.0, a, b)  # another alpha
    tg.sgemm(2.0, FakeDeviceArray(4096, (32, 64)), b, trans_a=1)  # another flag
    with pytest.raises(ValueError, match="c must be given"):
        tg.sgemm(2.0, a, b, 1.0)  # beta != 0 without c is still an error
    assert [args[2] for args in repeat_memo] == [2.0, 3.0, 2.0]
    assert len({args[0] for args in repeat_memo}) == 3  # three launches, three results
