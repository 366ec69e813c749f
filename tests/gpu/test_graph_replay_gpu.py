"""Graph replay of repeated cuBLASLt calls on the GPU: the replayed product has the direct
call's bits, writes every element, follows the stream order, and a call made while the
caller captures its own graph is recorded there."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import assert_gemm, uniform

import tunedgemm as tg
from tunedgemm import cublaslt, plans

pytestmark = pytest.mark.gpu
cupy = pytest.importorskip("cupy")


def _algorithms(dtype, m, n, k, trans_a, trans_b, graphs, monkeypatch):
    """cuBLASLt's first algorithms for the column-major product, made with replay on/off."""
    monkeypatch.setenv(cublaslt.GRAPHS_ENV, "1" if graphs else "0")
    lda = k if trans_a else m
    ldb = n if trans_b else k
    return cublaslt.algorithms(np.dtype(dtype).name, "ieee", trans_a, trans_b, m, n, k, lda,
                               ldb, m, count=3)  # fmt: skip


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(256, 256, 256), (300, 197, 61), (512, 512, 512)])
@pytest.mark.parametrize("trans", [(False, False), (True, False), (False, True)])
def test_replayed_calls_have_the_direct_calls_bits(rng, monkeypatch, dtype, shape, trans):
    m, n, k = shape
    ha = uniform(rng, (k, m) if trans[0] else (m, k), dtype, order="F")
    hb = uniform(rng, (n, k) if trans[1] else (k, n), dtype, order="F")
    a, b = cupy.asarray(ha, order="F"), cupy.asarray(hb, order="F")
    c = cupy.empty((m, n), dtype, order="F")
    stream = cupy.cuda.get_current_stream().ptr
    direct = _algorithms(dtype, m, n, k, *trans, False, monkeypatch)
    replayed = _algorithms(dtype, m, n, k, *trans, True, monkeypatch)
    assert direct and len(direct) == len(replayed)
    op_a, op_b = (ha.T if trans[0] else ha), (hb.T if trans[1] else hb)
    for plain, graph in zip(direct, replayed, strict=True):
        c.fill(np.nan)
        plain(a.data.ptr, b.data.ptr, c.data.ptr, 1.5, 0.0, stream)
        want = c.get()
        assert_gemm(want, 1.5, op_a, op_b, 0.0, None, dtype)
        for _ in range(4):  # direct, captured, then replayed twice
            c.fill(np.nan)  # queued before the replay on the same stream: overwritten
            graph(a.data.ptr, b.data.ptr, c.data.ptr, 1.5, 0.0, stream)
            assert c.get().tobytes() == want.tobytes(), str(graph)
        captures, replays, on = graph.fast.graph_counts()
        assert (captures, replays, on) == (1, 3, True), str(graph)
        assert plain.fast.graph_counts() == (0, 0, False)


def test_beta_and_alpha_are_part_of_the_replayed_call(rng, monkeypatch):
    m = n = k = 256
    ha, hb = uniform(rng, (m, k), np.float64, "F"), uniform(rng, (k, n), np.float64, "F")
    hc = uniform(rng, (m, n), np.float64, "F")
    a, b = cupy.asarray(ha, order="F"), cupy.asarray(hb, order="F")
    c = cupy.asarray(hc, order="F")
    (algo,) = _algorithms(np.float64, m, n, k, False, False, True, monkeypatch)[:1]
    stream = cupy.cuda.get_current_stream().ptr
    for alpha, beta in [(1.0, 0.0), (1.0, 0.0), (-2.0, 0.0), (-2.0, 0.0), (0.5, 1.0),
                        (0.5, 1.0), (1.0, 0.0)]:  # fmt: skip
        c[...] = cupy.asarray(hc, order="F")
        algo(a.data.ptr, b.data.ptr, c.data.ptr, alpha, beta, stream)
        assert_gemm(c.get(), alpha, ha, hb, beta, hc, np.float64)
    assert algo.fast.graph_counts()[:2] == (3, 4)


def test_public_calls_on_device_arrays_replay_and_stay_right(rng, monkeypatch):
    """dgemm at 512^3 (the shipped table: cuBLAS) on CuPy arrays, new results and into c."""
    monkeypatch.setenv("TUNEDGEMM_REFINE", "0")
    plans.clear()
    ha, hb = uniform(rng, (512, 512), np.float64), uniform(rng, (512, 512), np.float64)
    a, b = cupy.asarray(ha), cupy.asarray(hb)
    c = cupy.full((512, 512), np.nan, order="F")
    for _ in range(5):
        out = tg.dgemm(1.0, a, b)
        assert_gemm(out.get(), 1.0, ha, hb, 0.0, None, np.float64)
        c.fill(np.nan)
        assert tg.dgemm(1.0, a, b, c=c, overwrite_c=1) is c
        assert_gemm(c.get(), 1.0, ha, hb, 0.0, None, np.float64)
    runs = [p.run for p in plans.device_plans.items.values()]
    counts = [r.fast.graph_counts() for r in runs if getattr(r, "fast", None) is not None]
    if not counts:
        pytest.skip("the table does not choose cuBLAS at 512^3 float64 on this GPU")
    assert sum(replays for _, replays, _on in counts) >= 4
    plans.clear()


def test_a_call_inside_the_callers_own_capture_is_recorded_there(rng, monkeypatch):
    monkeypatch.setenv("TUNEDGEMM_REFINE", "0")
    plans.clear()
    ha, hb = uniform(rng, (512, 512), np.float64), uniform(rng, (512, 512), np.float64)
    a, b = cupy.asarray(ha), cupy.asarray(hb)
    c = cupy.empty((512, 512), order="F")
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        for _ in range(3):  # planned, and its graph captured and replayed, before capture
            tg.dgemm(1.0, a, b, c=c, overwrite_c=1)
        stream.synchronize()
        stream.begin_capture()
        tg.dgemm(1.0, a, b, c=c, overwrite_c=1)
        graph = stream.end_capture()
        c.fill(np.nan)
        graph.launch()
        stream.synchronize()
    assert_gemm(c.get(), 1.0, ha, hb, 0.0, None, np.float64)
    plans.clear()
