"""A host call killed halfway (KeyboardInterrupt inside the pipeline, a device out-of-memory
error from the allocator) leaves no pinned or device memory behind, no damaged state for later
calls, and the caller's inputs as they were (issue 14, item 9). Each case runs REPEATS times:

    python -m pytest -q tests/gpu/test_faults.py
"""

from __future__ import annotations

import gc
import itertools

import numpy as np
import pytest
from helpers import assert_gemm, uniform

import tunedgemm as tg
from tunedgemm import cuda, gpu_backend, pinned

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.usefixtures("small_tiles"),
    # A stand-in pycuda MemoryError, collected later, makes PyCUDA's tp_clear print an
    # unraisable SystemError (1 case in 80 on the H100, 2026-11-23): PyCUDA's, not ours.
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]
REPEATS = 20


@pytest.fixture(autouse=True)
def _collect_the_stand_in_exceptions():
    """Clear each case's stand-in exceptions here, under this module's filter: their
    tracebacks hold PyCUDA events of a pipeline worker's context, whose cleanup from another
    thread PyCUDA reports as unraisable. Left to a later garbage collection, that report
    landed in whatever test ran then (test_host_pipeline, 2 runs in 3 on the H100,
    2026-11-26 11:2x UTC)."""
    yield
    gc.collect()
SHAPE = (700, 601, 333)  # 2 x 2 tiles of 512 with small_tiles
# Device memory may differ by the allocator's granularity and a cached kernel module or two.
MARGIN_BYTES = 64 << 20


def _operands(rng, dtype):
    m, n, k = SHAPE
    c = uniform(rng, (m, n), dtype, "F")
    return uniform(rng, (m, k), dtype), uniform(rng, (k, n), dtype), c


def _baseline() -> tuple[int, int]:
    """(device bytes free, pinned bytes pooled) once the pools have given back what they hold."""
    return cuda.free_bytes(release_pool=True), pinned._pooled_bytes


def _fail_on_call(count: int, error: BaseException, target):
    calls = {"n": 0}

    def failing(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == count:
            raise error
        return target(*args, **kwargs)

    return failing


def _out_of_memory() -> BaseException:
    import pycuda.driver as drv

    return drv.MemoryError("cuMemAlloc failed: out of memory (simulated)")


FAULTS = {
    "interrupt in a launch": lambda: (gpu_backend, "run", KeyboardInterrupt()),
    "out of memory": lambda: (cuda, "allocate", _out_of_memory()),
}


@pytest.mark.parametrize("repeat", range(REPEATS))
@pytest.mark.parametrize("fault", list(FAULTS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_killed_call_leaves_nothing_behind(rng, fault, dtype, repeat):
    a, b, c = _operands(rng, dtype)
    tg.gemm(1.0, a, b)  # compiled and pooled once, before the baseline
    free_before, pooled_before = _baseline()
    module, name, error = FAULTS[fault]()
    saved = [x.copy() for x in (a, b, c)]
    with pytest.MonkeyPatch.context() as patch, pytest.raises(type(error)):
        patch.setattr(module, name, _fail_on_call(3, error, getattr(module, name)))
        tg.gemm(0.75, a, b, 0.5, c, overwrite_c=0)
    for x, old in zip((a, b, c), saved, strict=True):
        np.testing.assert_array_equal(x, old)
    free_after, pooled_after = _baseline()
    assert free_after >= free_before - MARGIN_BYTES
    assert pooled_after <= max(pooled_before, pinned.MAX_POOLED_BYTES)
    out = tg.gemm(0.75, a, b, 0.5, c, overwrite_c=0)
    assert_gemm(out, 0.75, a, b, 0.5, c, dtype)
    c_nan = np.full_like(c, np.nan)
    assert tg.gemm(0.75, a, b, 0.0, c_nan, overwrite_c=1) is c_nan
    assert_gemm(c_nan, 0.75, a, b, 0.0, None, dtype)


@pytest.mark.parametrize("fault", list(FAULTS))
def test_a_killed_in_place_call_leaves_a_and_b_and_whole_tiles(rng, fault):
    """docs/semantics.md: with overwrite_c=1 an interrupted call may leave c partly updated,
    each tile either as it was or finished; a device out-of-memory error comes before any
    tile is written (the pipeline allocates everything first), so c is as it was."""
    a, b, c = _operands(rng, np.float32)
    module, name, error = FAULTS[fault]()
    saved = [x.copy() for x in (a, b, c)]
    with pytest.MonkeyPatch.context() as patch, pytest.raises(type(error)):
        patch.setattr(module, name, _fail_on_call(3, error, getattr(module, name)))
        tg.sgemm(0.75, a, b, 0.5, c, overwrite_c=1)
    np.testing.assert_array_equal(a, saved[0])
    np.testing.assert_array_equal(b, saved[1])
    if fault == "out of memory":
        np.testing.assert_array_equal(c, saved[2])
        return
    finished = tg.sgemm(0.75, a, b, 0.5, saved[2], overwrite_c=0)
    assert_gemm(finished, 0.75, a, b, 0.5, saved[2], np.float32)
    edge = 512  # small_tiles: 2 x 2 tiles of 512
    for rows, cols in itertools.product((slice(0, edge), slice(edge, None)), repeat=2):
        tile, old, new = c[rows, cols], saved[2][rows, cols], finished[rows, cols]
        assert np.array_equal(tile, old) or np.array_equal(tile, new), (rows, cols)
