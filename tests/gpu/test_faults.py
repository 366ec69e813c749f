"""A host call killed halfway (KeyboardInterrupt inside the pipeline, a device out-of-memory
error from the allocator) leaves no pinned or device memory behind, no damaged state for later
calls, and the caller's inputs as they were (issue 14, item 9). Each case runs REPEATS times:

    python -m pytest -q tests/gpu/test_faults.py
"""

from __future__ import annotations

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


@pytest.mark.xfail(strict=False, reason="the pipeline writes finished tiles into an in-place c "
                   "before a later tile fails; issue 14 item 4 on the GPU path: main engineer")
@pytest.mark.parametrize("fault", list(FAULTS))
def test_a_killed_in_place_call_leaves_c_as_it_was(monkeypatch, rng, fault):
    a, b, c = _operands(rng, np.float32)
    module, name, error = FAULTS[fault]()
    monkeypatch.setattr(module, name, _fail_on_call(3, error, getattr(module, name)))
    saved = c.copy()
    with pytest.raises(type(error)):
        tg.sgemm(0.75, a, b, 0.5, c, overwrite_c=1)
    np.testing.assert_array_equal(c, saved)

