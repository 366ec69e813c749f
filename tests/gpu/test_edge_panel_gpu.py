"""Products whose last block column or row is nearly empty, as whole tiles and a narrow panel
(tunedgemm/edge_panel.py), on the GPU.

Both dtypes, every transpose pair, the family default and its twin as the main config with
the default and a split-K config as the panel, padded and unpadded leading dimensions, alpha
and beta with C filled with NaN first: every element written, within the float64
reference's K-scaled bound, bit-equal from run to run and through gpu_backend.run, the whole
tiles' columns (rows) the bits of the main config's one launch over all of C; and a public TT
call large enough for autotuning to time the runners once they are on:

    python -m pytest -q -m gpu tests/gpu/test_edge_panel_gpu.py
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from helpers import composed_runs

from tunedgemm import checks, edge_panel, gpu_backend, plans, selection
from tunedgemm.families import FAMILIES
from tunedgemm.params import KernelConfig

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module", autouse=True)
def _gpu():
    from tunedgemm import cuda

    if not cuda.status()[0]:
        pytest.skip("no GPU")


def _mains(dtype: str, trans_a: bool, trans_b: bool) -> list[KernelConfig]:
    """The family default and its twin at the layout."""
    default = selection.default_config(dtype)
    key = plans.GemmKey(dtype, "ieee", 512, 512, 512, trans_a, trans_b, 512, 512, 512, True)
    return list(dict.fromkeys([default, plans.fastest_twin(default, key)]))


def _panels(dtype: str) -> list[KernelConfig]:
    """The family default, and the same split in k four ways where the family allows it."""
    default = selection.default_config(dtype)
    split = KernelConfig.make(default.family, {**default.as_dict(), "SPLIT_K": 4})
    family = FAMILIES[default.family]
    return [default] + ([split] if not family.violations(split, dtype) else [])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("pair", ["NN", "NT", "TN", "TT"])
def test_split_runs_are_accurate_bit_equal_and_the_main_configs_bits(dtype, pair):
    from tunedgemm.tuning import problems

    rng = np.random.default_rng()
    ta, tb = pair[0] == "T", pair[1] == "T"
    for config, panel, padded in itertools.product(_mains(dtype, ta, tb), _panels(dtype),
                                                   (False, True)):  # fmt: skip
        bm, bn = FAMILIES[config.family].block_tile(config.as_dict())
        m, n, k = 2 * bm + 5, 3 * bn + 6, 333  # both edges nearly empty
        problem = problems.make(m, n, k, dtype, ta, tb, rng, padded=padded)
        f = problem.form
        key = plans.GemmKey.of(f, dtype, "ieee")
        for (axis, whole), (alpha, beta) in itertools.product(
                edge_panel.edges(m, n, (bm, bn)), ((1.0, 0.0), (-0.75, 0.5))):  # fmt: skip
            runner = edge_panel.EdgePanel(key, axis, whole, config, panel)
            what = f"{runner}: {dtype} {pair} {m}x{n}x{k} padded={padded} beta={beta}"
            c0 = None if beta == 0 else rng.uniform(-1, 1, (m, n)).astype(dtype)
            outs = composed_runs(problem, runner, alpha, beta, c0, (False, True, False))
            assert np.isfinite(outs[0]).all(), f"unwritten elements: {what}"
            assert all(o.tobytes() == outs[0].tobytes() for o in outs), f"not bit-equal: {what}"
            exact, scale = checks.float64_reference(alpha, problem.op_a, problem.op_b, beta, c0)
            error = checks.scaled_error(outs[0], exact, scale)
            assert error <= checks.tolerance(k, np.dtype(dtype)), f"error {error}: {what}"
            problem.poison_c() if c0 is None else problem.set_c(c0)
            gpu_backend.run(f, problem.dtype, alpha, beta, config)
            one = problem.c()
            part = (slice(None), slice(whole)) if axis == "n" else (slice(whole), slice(None))
            assert outs[0][part].tobytes() == one[part].tobytes(), f"not the one launch's: {what}"


def test_a_public_tt_call_times_the_runners_once_on_and_is_right(monkeypatch):
    """sgemm(trans_a=1, trans_b=1) on GPUArrays at 2100 x 392 x 2600 with the runners on:
    autotuning times one (plans._composed), whichever it picks the result is right."""
    import pycuda.gpuarray as gpuarray

    from tunedgemm import autotune, sgemm

    monkeypatch.setattr(edge_panel, "ENABLED", True)
    rng = np.random.default_rng()
    m, n, k = 2100, 392, 2600  # (n: 16-byte rows of B, 8 columns past 3 x 128)
    a = rng.uniform(-1, 1, (k, m)).astype(np.float32, order="F")
    b = rng.uniform(-1, 1, (n, k)).astype(np.float32, order="F")
    key = plans.GemmKey("float32", "ieee", m, n, k, True, True, k, n, m, True)
    found = edge_panel.candidates(key)
    assert found, "the shape's last block column is nearly empty"
    plans.clear()
    try:
        c = gpuarray.to_gpu(np.full((m, n), np.nan, np.float32, order="F"))
        sgemm(1.0, gpuarray.to_gpu(a), gpuarray.to_gpu(b), c=c, trans_a=1, trans_b=1,
              overwrite_c=1)  # fmt: skip
        timed = [r for r in autotune.history() if r["shape"][1:4] == (m, n, k)]
        assert timed and any(s in timed[-1]["candidates"] for s in map(str, found))
        exact, scale = checks.float64_reference(1.0, a.T, b.T, 0.0, None)
        error = checks.scaled_error(c.get(), exact, scale)
        assert error <= checks.tolerance(k, np.dtype(np.float32))
    finally:
        plans.clear()  # (plans made with the runners on stay out of later tests)
