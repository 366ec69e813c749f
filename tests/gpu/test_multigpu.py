"""Host calls over every GPU TUNEDGEMM_DEVICES selects (issue 19): right results on any number
of GPUs (one on the H100 machine, where the single-GPU pipeline runs), and with two or more,
work on each GPU and a failing GPU stopping the call cleanly.

    TUNEDGEMM_DEVICES=all python -m pytest -q -p no:cacheprovider tests/gpu/test_multigpu.py
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import assert_gemm, uniform

import tunedgemm as tg
from tunedgemm import cuda, devices, pipeline

pytestmark = [pytest.mark.gpu]
MARGIN_BYTES = 64 << 20  # allocator granularity, a kernel module or two


def gpus() -> tuple[int, ...]:
    return tuple(g.index for g in devices.selected())


@pytest.fixture
def all_gpus(monkeypatch):
    monkeypatch.setenv(devices.DEVICES_ENV, "all")
    pipeline._record({})


def run_and_check(rng, dtype, shape, trans=(0, 0), beta=0.0):
    m, n, k = shape
    a = uniform(rng, (k, m) if trans[0] else (m, k), dtype)
    b = uniform(rng, (n, k) if trans[1] else (k, n), dtype, "F")
    c = uniform(rng, (m, n), dtype, "F")
    c0, a0, b0 = c.copy(), a.copy(), b.copy()
    if beta == 0.0:
        c[...] = np.nan  # unwritten tiles show
    routine = tg.sgemm if dtype == np.float32 else tg.dgemm
    result = routine(0.75, a, b, beta, c, trans_a=trans[0], trans_b=trans[1], overwrite_c=1)
    assert result is c
    op_a, op_b = (a.T if trans[0] else a), (b.T if trans[1] else b)
    assert_gemm(c, 0.75, op_a, op_b, beta, c0 if beta else None, dtype)
    np.testing.assert_array_equal(a, a0)
    np.testing.assert_array_equal(b, b0)
    return pipeline.last_spread()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,trans,beta", [((1900, 1700, 333), (0, 0), 0.0),
                                              ((1500, 2100, 700), (1, 1), -1.5),
                                              ((2049, 1023, 96), (0, 1), 0.5)])  # fmt: skip
def test_tiled_host_calls_on_every_gpu(small_tiles, all_gpus, rng, dtype, shape, trans, beta):
    spread = run_and_check(rng, dtype, shape, trans, beta)
    assert set(spread) == set(gpus()) and sum(spread.values()) > 1, spread
    if len(gpus()) > 1:
        assert all(tiles > 0 for tiles in spread.values()), f"a GPU did no work: {spread}"
        # B stays on the GPUs at these sizes: each panel went up from the host once (the
        # first in one part per GPU), and the GPUs that needed it too copied it over their
        # link (tunedgemm/panel_exchange.py).
        traffic = pipeline.last_panel_traffic()
        plan = pipeline._plan(*shape, np.dtype(dtype).itemsize, None, gpus(),
                              pipeline.multi_gpu_panels(*shape[:2], len(gpus())))  # fmt: skip
        panels = len(pipeline.ranges(plan.n, plan.tn)) * len(pipeline.ranges(plan.k, plan.tk))
        split = pipeline.SPLIT_FIRST_PANEL
        assert sum(traffic["uploads"].values()) == panels - split, (traffic, panels)
        assert sum(traffic["parts"].values()) == (len(gpus()) if split else 0), traffic
        assert sum(traffic["copies"].values()) > 0, traffic


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_large_host_call_on_every_gpu(all_gpus, rng, dtype, monkeypatch):
    """Today's tile sizes (no small_tiles): 4096 is 2 x 2 tiles on one GPU."""
    monkeypatch.setattr(pipeline, "SPREAD_FROM", {})  # (4096 is below it: on one GPU)
    spread = run_and_check(rng, dtype, (4096, 4096, 1024))
    assert set(spread) == set(gpus()) and sum(spread.values()) >= 4, spread
    if len(gpus()) > 1:
        assert all(tiles > 0 for tiles in spread.values()), spread


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_new_results_come_down_straight_from_every_gpu(small_tiles, all_gpus, rng, dtype):
    """c=None: the result is a pinned array each GPU writes its tiles into directly."""
    a, b = uniform(rng, (1900, 333), dtype), uniform(rng, (333, 1700), dtype)
    result = (tg.sgemm if dtype == np.float32 else tg.dgemm)(1.25, a, b)
    assert_gemm(result, 1.25, a, b, 0.0, None, dtype)
    assert set(pipeline.last_spread()) == set(gpus())


def test_a_product_below_spread_from_stays_on_one_gpu(small_tiles, all_gpus, monkeypatch, rng):
    """Too small to gain from several GPUs (pipeline.SPREAD_FROM): tiled on one GPU only."""
    monkeypatch.setattr(pipeline, "SPREAD_FROM", {4: 2048})
    spread = run_and_check(rng, np.float32, (1900, 1700, 333), beta=0.5)
    assert len(spread) == 1 and sum(spread.values()) > 1, spread


def test_one_gpu_named_uses_only_it(small_tiles, monkeypatch, rng):
    last = gpus()[-1] if gpus() else 0
    monkeypatch.setenv(devices.DEVICES_ENV, str(last))
    pipeline._record({})
    spread = run_and_check(rng, np.float32, (1900, 1700, 333), beta=2.0)
    assert set(spread) == {last}


def test_a_failing_gpu_stops_the_call_and_releases_memory(small_tiles, all_gpus, rng):
    if len(gpus()) < 2:
        pytest.skip("needs two GPUs")
    shape = (1900, 1700, 333)
    run_and_check(rng, np.float32, shape)  # compiled and pooled once, before the baseline
    free_before = [cuda.free_bytes_of(g, release_pool=True) for g in gpus()]
    victim = gpus()[1]
    real_tile = pipeline._Run.tile

    def failing_tile(self, ti, tj):
        if cuda.current_ordinal() == victim:
            raise RuntimeError(f"GPU {victim} failed (simulated)")
        return real_tile(self, ti, tj)

    m, n, k = shape
    a, b = uniform(rng, (m, k), np.float32), uniform(rng, (k, n), np.float32)
    c = uniform(rng, (m, n), np.float32, "F")
    saved = [x.copy() for x in (a, b, c)]
    with pytest.MonkeyPatch.context() as patch, pytest.raises(RuntimeError, match="simulated"):
        patch.setattr(pipeline._Run, "tile", failing_tile)
        tg.sgemm(1.0, a, b, 0.5, c, overwrite_c=0)  # c is not written: overwrite_c=0
    for x, old in zip((a, b, c), saved, strict=True):
        np.testing.assert_array_equal(x, old)
    free_after = [cuda.free_bytes_of(g, release_pool=True) for g in gpus()]
    assert all(after >= before - MARGIN_BYTES for before, after in zip(free_before, free_after,
                                                                       strict=True))  # fmt: skip
    run_and_check(rng, np.float32, shape)  # and later calls still work


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("beta", [0.0, -0.5])
def test_early_products_segment_by_segment(small_tiles, all_gpus, monkeypatch, rng, dtype, beta):
    """pipeline.EARLY_PRODUCTS, with staging buffers small enough to cut each A panel into
    several segments: the row blocks multiplied as they land make the same result."""
    monkeypatch.setattr(pipeline, "EARLY_PRODUCTS", True)
    monkeypatch.setattr(pipeline, "STAGE_BYTES", 64 << 10)
    blocks: list[int] = []
    rows = pipeline._rows
    monkeypatch.setattr(pipeline, "_rows", lambda *args: blocks.append(1) or rows(*args))
    run_and_check(rng, dtype, (1900, 1700, 333), beta=beta)
    assert blocks, "no tile was multiplied segment by segment"
