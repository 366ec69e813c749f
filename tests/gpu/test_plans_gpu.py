"""Planned device calls on the GPU: right results, reuse, no host waits, N-d batched matmul."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import assert_gemm, uniform

import tunedgemm as tg
from tunedgemm import plans

pytestmark = pytest.mark.gpu


def _lib(name):
    if name == "cupy":
        return pytest.importorskip("cupy")
    return pytest.importorskip("torch")


def _to(lib, name, host):
    if name == "cupy":
        return lib.asarray(host)
    return lib.from_numpy(np.ascontiguousarray(host)).cuda()


def _host(x):
    return x.get() if hasattr(x, "get") else x.cpu().numpy()


@pytest.mark.parametrize("name", ["cupy", "torch"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("trans", [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_repeated_device_calls_reuse_one_plan_and_stay_right(rng, name, dtype, trans):
    lib = _lib(name)
    m, n, k = 97, 130, 61
    routine = tg.sgemm if dtype == np.float32 else tg.dgemm
    ha = uniform(rng, (k, m) if trans[0] else (m, k), dtype)
    hb = uniform(rng, (n, k) if trans[1] else (k, n), dtype)
    a, b = _to(lib, name, ha), _to(lib, name, hb)
    op_a, op_b = (ha.T if trans[0] else ha), (hb.T if trans[1] else hb)
    first = routine(1.5, a, b, trans_a=trans[0], trans_b=trans[1])
    plans_after_first = len(plans.call_plans.items)
    results = [routine(1.5, a, b, trans_a=trans[0], trans_b=trans[1]) for _ in range(3)]
    assert len(plans.call_plans.items) == plans_after_first  # no new plan for repeats
    assert len({id(r) for r in [first, *results]}) == 4  # each call its own result
    for r in [first, *results]:
        assert type(r) is type(a)
        assert_gemm(_host(r), 1.5, op_a, op_b, 0.0, None, dtype)
    # In place: c filled with NaN shows any element the launch did not write.
    hc = np.full((m, n), np.nan, dtype, order="F")
    c = _to(lib, name, hc) if name == "cupy" else _to(lib, name, hc).T.contiguous().T
    for _ in range(2):
        out = routine(1.5, a, b, 0.0, c, trans[0], trans[1], overwrite_c=1)
        assert out is c
    assert_gemm(_host(c), 1.5, op_a, op_b, 0.0, None, dtype)


@pytest.mark.parametrize("name", ["cupy", "torch"])
@pytest.mark.parametrize(
    "a_shape,b_shape",
    [((8, 33, 17), (8, 17, 25)), ((8, 33, 17), (17, 25)), ((33, 17), (4, 17, 25)),
     ((2, 3, 33, 17), (3, 17, 25)), ((2, 1, 33, 17), (1, 5, 17, 25)), ((17,), (3, 17, 25)),
     ((3, 33, 17), (17,)), ((64, 128, 128), (64, 128, 128))],
)  # fmt: skip
def test_batched_device_matmul_is_np_matmul(rng, name, a_shape, b_shape):
    lib = _lib(name)
    for dtype in (np.float32, np.float64):
        ha, hb = uniform(rng, a_shape, dtype), uniform(rng, b_shape, dtype)
        got = tg.matmul(_to(lib, name, ha), _to(lib, name, hb))
        want = np.matmul(ha.astype(np.float64), hb.astype(np.float64))
        assert tuple(got.shape) == want.shape
        tol = 20 * np.finfo(dtype).eps * ha.shape[-1]
        assert np.abs(_host(got) - want).max() <= tol * max(1.0, np.abs(want).max())
        if name == "cupy":
            assert got.flags.c_contiguous


@pytest.mark.parametrize("name", ["cupy", "torch"])
@pytest.mark.parametrize("cublas", ["0", "1"])
def test_batched_matmul_is_right_and_repeatable_on_either_backend(rng, monkeypatch, name, cublas):
    """A strided batch writes every product, right against float64 and with the same bits
    each run, whether own kernels run it (cuBLAS off: a launch per product) or cuBLASLt's
    batched algorithms (timed, the fastest kept); the result's memory held NaN before."""
    lib = _lib(name)
    monkeypatch.setenv("TUNEDGEMM_CUBLAS", cublas)
    monkeypatch.setenv("TUNEDGEMM_REFINE", "1")
    for dtype in (np.float32, np.float64):
        for batch, m, n, k in ((5, 70, 33, 129), (3, 256, 256, 256)):
            ha, hb = uniform(rng, (batch, m, k), dtype), uniform(rng, (batch, k, n), dtype)
            a, b = _to(lib, name, ha), _to(lib, name, hb)
            outputs = []
            for _ in range(2):
                poison = _to(lib, name, np.full((batch, m, n), np.nan, dtype))
                del poison  # its block goes back to the pool, which hands it to the result
                outputs.append(_host(tg.matmul(a, b)))
            want = np.matmul(ha.astype(np.float64), hb.astype(np.float64))
            tol = 20 * np.finfo(dtype).eps * k
            assert np.abs(outputs[0] - want).max() <= tol * max(1.0, np.abs(want).max())
            np.testing.assert_array_equal(outputs[0], outputs[1])
    batched = [plan for plan in plans.device_plans.items.values() if plan.key.batch > 1]
    assert batched
    if cublas == "0":
        assert all(plan.choice != "cublas" for plan in batched)


def test_device_call_does_not_wait_for_the_device(rng):
    """A planned call on a stream busy with a long kernel returns before the stream is done."""
    cupy = pytest.importorskip("cupy")
    spin = cupy.RawKernel(r"""
        extern "C" __global__ void spin(long long cycles) {
            long long start = clock64();
            while (clock64() - start < cycles) { }
        }""", "spin")  # fmt: skip
    m = n = k = 512
    ha, hb = uniform(rng, (m, k), np.float32), uniform(rng, (k, n), np.float32)
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        a, b = cupy.asarray(ha), cupy.asarray(hb)
        tg.sgemm(1.0, a, b)  # plan made (autotuning may wait), then every call is a launch
        tg.matmul(a, b)
        stream.synchronize()
        spin((1,), (1,), (np.int64(2_000_000_000),))  # about a second at 1.98 GHz
        out = tg.sgemm(1.0, a, b)
        out2 = tg.matmul(a, b)
        assert not stream.done, "the call waited for the stream"
    stream.synchronize()
    assert_gemm(out.get(), 1.0, ha, hb, 0.0, None, np.float32)
    assert_gemm(out2.get(), 1.0, ha, hb, 0.0, None, np.float32)


def test_user_plan_runs_new_and_in_place(rng):
    cupy = pytest.importorskip("cupy")
    m, n, k = 300, 200, 100
    ha, hb = uniform(rng, (m, k), np.float32), uniform(rng, (k, n), np.float32)
    a, b = cupy.asarray(ha), cupy.asarray(hb)
    plan = tg.plan(a, b)
    assert "precision=ieee" in plan.explain()
    assert_gemm(plan.run(a, b).get(), 1.0, ha, hb, 0.0, None, np.float32)
    c = cupy.full((m, n), np.nan, np.float32, order="F")
    into = tg.plan(a, b, c)
    hc = uniform(rng, (m, n), np.float32)
    c[...] = cupy.asarray(hc)
    assert into.run(a, b, c, alpha=2.0, beta=0.5) is c
    assert_gemm(c.get(), 2.0, ha, hb, 0.5, hc, np.float32)
    with pytest.raises(ValueError, match="plan's kind"):
        plan.run(cupy.asarray(hb), cupy.asarray(ha))


def test_pycuda_results_come_from_the_pool_and_go_back(rng):
    import pycuda.gpuarray as gpuarray

    from tunedgemm import cuda

    a = gpuarray.to_gpu(uniform(rng, (256, 256), np.float32))
    first = tg.sgemm(1.0, a, a)
    address = first.ptr
    del first  # back to the pool: the next result of that size reuses the block
    second = tg.sgemm(1.0, a, a)
    assert isinstance(second.gpudata, cuda.ScratchBuffer)
    assert second.ptr == address


@pytest.mark.parametrize("mode", ["3xtf32", "tf32"])
@pytest.mark.parametrize("trans", [(0, 0), (1, 1)])
def test_precision_modes_through_the_public_call(rng, mode, trans):
    """sgemm(..., precision=mode) on device arrays: 3xtf32 within float32's bound, tf32
    within its documented one; explain() names the mode."""
    cupy = pytest.importorskip("cupy")
    from tunedgemm import checks

    m, n, k = 777, 333, 1555
    ha = uniform(rng, (k, m) if trans[0] else (m, k), np.float32)
    hb = uniform(rng, (n, k) if trans[1] else (k, n), np.float32)
    op_a, op_b = (ha.T if trans[0] else ha), (hb.T if trans[1] else hb)
    a, b = cupy.asarray(ha), cupy.asarray(hb)
    c = cupy.full((m, n), np.nan, np.float32, order="F")
    for _ in range(2):  # the plan's first call, then a repeat
        out = tg.sgemm(1.0, a, b, 0.0, c, trans[0], trans[1], overwrite_c=1, precision=mode)
    assert out is c
    exact, scale = checks.float64_reference(1.0, op_a, op_b, 0.0, None)
    error = checks.scaled_error(c.get(), exact, scale)
    bound = checks.tolerance(k, np.dtype(np.float32)) if mode == "3xtf32" else \
        checks.tf32_tolerance(k)  # fmt: skip
    assert error <= bound, f"{mode}: scaled error {error:.3e} > {bound:.3e}"
    assert f"precision={mode}" in tg.explain(m, n, k, "float32", precision=mode)
    with tg.precision(mode):
        again = tg.matmul(a if not trans[0] else a.T, b if not trans[1] else b.T)
    assert checks.scaled_error(again.get(), exact, scale) <= bound
    with pytest.raises(ValueError, match="float64"):
        tg.dgemm(1.0, a.astype(np.float64), b.astype(np.float64), 0.0, None, *trans,
                 precision=mode)


def _device(name, host):
    if name == "pycuda":
        import pycuda.gpuarray as gpuarray

        return gpuarray.to_gpu(host)
    return _to(_lib(name), name, host)


def _address(x):
    return x.data_ptr() if hasattr(x, "data_ptr") else int(x.ptr) if hasattr(x, "ptr") else \
        x.data.ptr  # fmt: skip


@pytest.mark.parametrize("name", ["cupy", "torch", "pycuda"])
@pytest.mark.parametrize("holder", ["view", "memory"])
def test_a_dropped_result_is_written_again_and_a_held_one_never_is(rng, monkeypatch, name,
                                                                    holder):  # fmt: skip
    """tunedgemm/recycle.py on each library: a result the caller dropped is the next call's
    result (right values), one still reachable through a view or its memory is left as it was."""
    if name == "pycuda" and holder == "view":
        pytest.skip("a GPUArray's view holds the array itself: the 'memory' case covers it")
    monkeypatch.setenv("TUNEDGEMM_RECYCLE_RESULTS", "all")
    m, n, k = 96, 80, 64
    calls = [[uniform(rng, (m, k), np.float32), uniform(rng, (k, n), np.float32)]
             for _ in range(3)]  # fmt: skip
    operands = [(_device(name, x), _device(name, y)) for x, y in calls]
    result = tg.sgemm(1.0, *operands[0])
    address = _address(result)
    del result
    result = tg.sgemm(1.0, *operands[1])
    assert _address(result) == address
    assert_gemm(_host(result), 1.0, *calls[1], 0.0, None, np.float32)
    if holder == "view":
        held = result[1:]
    elif name == "pycuda":
        held = result.gpudata
    else:
        held = result.data if name == "cupy" else result.untyped_storage()
    before = _host(result)
    del result
    third = tg.sgemm(1.0, *operands[2])
    assert _address(third) != address
    assert_gemm(_host(third), 1.0, *calls[2], 0.0, None, np.float32)
    if holder == "view":
        np.testing.assert_array_equal(_host(held), before[1:])
    del held


def test_a_tensor_saved_for_backward_is_never_written_again(rng, monkeypatch):
    torch = pytest.importorskip("torch")
    monkeypatch.setenv("TUNEDGEMM_RECYCLE_RESULTS", "all")
    m, n, k = 64, 48, 32
    host = [uniform(rng, shape, np.float32) for shape in ((m, k), (k, n), (m, k), (k, n))]
    a, b, a2, b2 = (_to(torch, "torch", x) for x in host)
    result = tg.sgemm(1.0, a, b)
    saved = _host(result)
    w = torch.ones((7, m), device="cuda", requires_grad=True)
    loss = (w @ result).sum()  # autograd keeps `result` for w's gradient
    del result
    assert_gemm(_host(tg.sgemm(1.0, a2, b2)), 1.0, host[2], host[3], 0.0, None, np.float32)
    loss.backward()
    want = np.ones((7, n), np.float32) @ saved.T
    np.testing.assert_allclose(w.grad.cpu().numpy(), want, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_calls_that_read_c_get_a_plan_of_their_own_and_stay_right(rng, dtype):
    """beta != 0 plans (and autotunes) apart from beta 0 at the same shape (GemmKey.reads_c),
    and each kind of call, alternating, is right; a plan made for beta != 0 is the one its
    runs at that beta use."""
    cupy = pytest.importorskip("cupy")
    m, n, k = 300, 257, 129
    routine = tg.sgemm if dtype == np.float32 else tg.dgemm
    ha, hb = uniform(rng, (m, k), dtype), uniform(rng, (k, n), dtype)
    a, b = cupy.asarray(ha), cupy.asarray(hb)
    plans.clear()
    for beta in (0.0, 0.75, 0.0, -1.5):
        hc = uniform(rng, (m, n), dtype) if beta else np.full((m, n), np.nan, dtype)
        c = cupy.asarray(np.asfortranarray(hc))
        assert routine(1.25, a, b, beta, c, overwrite_c=1) is c
        assert_gemm(cupy.asnumpy(c), 1.25, ha, hb, beta, hc if beta else None, dtype)
    keys = [key for key in plans.device_plans.items if {key.m, key.n} == {m, n}]
    assert sorted(key.reads_c for key in keys) == [False, True]
    hc = uniform(rng, (m, n), dtype)
    c = cupy.asarray(np.asfortranarray(hc))
    planned = tg.plan(a, b, c, beta=0.5)
    assert planned._device_plan is not None and planned._device_plan.key.reads_c
    planned.run(a, b, c, alpha=1.25, beta=0.5)
    assert_gemm(cupy.asnumpy(c), 1.25, ha, hb, 0.5, hc, dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_host_bound_own_candidates_tie_and_the_tie_goes_to_less_gpu_time(rng, dtype):
    """At a launch-bound shape (autotune.HOST_TIES) own candidates that queue as many
    launches cost one shared host time, so where that binds they cost the same, and the
    retiming's ties go to the least GPU time; the call stays right."""
    cupy = pytest.importorskip("cupy")
    from tunedgemm import autotune, selection

    m, n, k = 96, 80, 64  # a few microseconds of work
    routine = tg.sgemm if dtype == np.float32 else tg.dgemm
    ha, hb = uniform(rng, (m, k), dtype), uniform(rng, (k, n), dtype)
    a, b = cupy.asarray(ha), cupy.asarray(hb)
    c = cupy.asarray(np.full((m, n), np.nan, dtype, order="F"))
    plans.clear()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(selection.CUBLAS_ENV, "0")  # own kernels alone: every candidate can tie
        patch.setattr(autotune, "FRONT_DOOR_MS", 0.02)  # a host this slow binds every call
        plans.clear()
        assert routine(1.0, a, b, c=c, overwrite_c=1) is c
        records = [r for r in autotune.history() if r["shape"][1:4] == (m, n, k)]
    plans.clear()
    assert_gemm(cupy.asnumpy(c), 1.0, ha, hb, 0.0, None, dtype)
    assert records, "the call autotuned"
    record = records[-1]
    costs, gpu, host = record["ms"], record["gpu_ms"], record["host_ms"]
    bound = [i for i, t in enumerate(costs) if np.isfinite(t) and gpu[i] < t]
    assert len(bound) >= 2, "at least two candidates bound by the host"
    # every own candidate here is a graph replay: one group, one host time, one cost
    assert len({float(costs[i]) for i in bound}) == 1
    assert len({host[i] for i in bound}) > 1  # each timed its own host noise
    holder, chosen = record["candidates"][0], record["chosen"]
    if record["confirm"] is None:
        return
    retimed, retimed_gpu = record["finalists"], record["finalists_gpu"]
    entrants = list(retimed)  # the holder first, then the finalists in the pass's order
    best = min(range(1, len(entrants)),
               key=lambda i: (retimed[entrants[i]], retimed_gpu[entrants[i]]))  # fmt: skip
    challenger = entrants[best]
    less_gpu = retimed_gpu[challenger] < retimed_gpu[holder] * (1 - autotune.MARGIN)
    tie_won = retimed[challenger] <= retimed[holder] and less_gpu
    if chosen != holder:
        assert chosen == challenger
    else:  # kept: the challenger neither tied with less GPU time nor cost clearly less
        assert not tie_won
        assert retimed[challenger] >= retimed[holder] * (1 - autotune.MARGIN)
