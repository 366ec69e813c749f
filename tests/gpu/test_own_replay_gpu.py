"""Graph replay of repeated own-kernel calls (plans.replayed, tunedgemm/_fastlaunch.c's
Replay): a replayed product has the direct call's bits, writes every element (C poisoned with
NaN before each call), follows the stream order, and a split-K graph replayed on a stream
uses that stream's workspace (two streams at once stay right):

    TUNEDGEMM_TEST_PRECOMPILE=0 python -m pytest -q -m gpu tests/gpu/test_own_replay_gpu.py
"""

from __future__ import annotations

import itertools
import os

import numpy as np
import pytest
from helpers import precompiles_modules

from tunedgemm import checks, cublaslt, plans
from tunedgemm.families import FAMILIES
from tunedgemm.params import KernelConfig

pytestmark = pytest.mark.gpu

# One launch, split-K with its reduction launch, and (dmma) fused split-K: each kind of own
# launcher that replays.
CHANGES = {
    "float32": {"one": {}, "split8": {"SPLIT_K": 8}},
    "float64": {"one": {}, "split8": {"SPLIT_K": 8},
                "fused8": {"SPLIT_K": 8, "SPLITK_FUSED": 1}},
}  # fmt: skip
CASES = [(dtype, name) for dtype, names in CHANGES.items() for name in names]
SHAPES = [(256, 256, 256), (131, 67, 300), (512, 64, 512)]


def _config(dtype: str, name: str) -> KernelConfig:
    family = FAMILIES["simt" if dtype == "float32" else "dmma"]
    config = KernelConfig.make(family.name, {**family.default_config(dtype).as_dict(),
                                             **CHANGES[dtype][name]})  # fmt: skip
    assert family.violations(config, dtype) == [], config
    return config


@pytest.fixture(scope="module", autouse=True)
def _compiled() -> None:
    """The variants the tests launch (padded operands: aligned), compiled in parallel."""
    from tunedgemm.compiler import precompile

    if not precompiles_modules():
        return
    for dtype, (ta, tb) in itertools.product(CHANGES, ((False, False), (True, True))):
        configs = sorted({_config(dtype, name) for name in CHANGES[dtype]})
        precompile(configs, dtype, ta, tb, True, jobs=os.cpu_count() or 4)


def _launcher(problem, config, graphs: bool, monkeypatch):
    monkeypatch.setenv(cublaslt.GRAPHS_ENV, "1" if graphs else "0")
    return plans.launcher(plans.GemmKey.of(problem.form, problem.dtype.name, "ieee"), config)


def _counts(run) -> tuple[int, int, bool]:
    replay = getattr(run, "replay", run)  # _SplitK holds its Replay; a one-launch run is one
    return replay.graph_counts()


def _call(problem, run, alpha, stream=None) -> np.ndarray:
    import pycuda.driver as drv

    problem.poison_c()  # a copy on the legacy stream: before the call on it, or synchronised
    handle = 0 if stream is None else int(stream.handle)
    form = problem.form
    run(form.a, form.b, form.c, alpha, 0.0, handle)
    if stream is not None:
        stream.synchronize()
    drv.Context.synchronize()
    return problem.c()


@pytest.mark.parametrize("dtype,name", CASES)
@pytest.mark.parametrize("trans", [(False, False), (True, True)])
def test_replayed_own_calls_have_the_direct_calls_bits(monkeypatch, dtype, name, trans):
    from tunedgemm.tuning import problems

    config = _config(dtype, name)
    rng = np.random.default_rng()
    for m, n, k in SHAPES:
        problem = problems.make(m, n, k, dtype, *trans, rng, padded=True)
        direct = _launcher(problem, config, False, monkeypatch)
        replayed = _launcher(problem, config, True, monkeypatch)
        where = (dtype, name, m, n, k, trans)
        want = _call(problem, direct, 1.5)
        exact, scale = checks.float64_reference(1.5, problem.op_a, problem.op_b, 0.0, None)
        assert checks.scaled_error(want, exact, scale) <= checks.tolerance(k, problem.dtype)
        for _ in range(4):  # direct, captured, then replayed twice
            got = _call(problem, replayed, 1.5)
            assert got.tobytes() == want.tobytes(), f"not the direct call's bits at {where}"
        assert _counts(replayed) == (1, 3, True), where
        got = _call(problem, replayed, -0.5)  # another alpha: another call, direct
        exact, scale = checks.float64_reference(-0.5, problem.op_a, problem.op_b, 0.0, None)
        assert checks.scaled_error(got, exact, scale) <= checks.tolerance(k, problem.dtype)


@pytest.mark.parametrize("dtype,name", [case for case in CASES if case[1] != "one"])
def test_split_k_graphs_on_two_streams_use_their_own_workspaces(monkeypatch, dtype, name):
    """The same product replayed on two streams in turn, unsynchronised: were both graphs to
    share one workspace, the slices of one would land in the other's sums."""
    import pycuda.driver as drv

    from tunedgemm.tuning import problems

    config = _config(dtype, name)
    rng = np.random.default_rng()
    m, n, k = 512, 64, 512
    first, second = (problems.make(m, n, k, dtype, False, False, rng, padded=True)
                     for _ in range(2))  # fmt: skip
    run = _launcher(first, config, True, monkeypatch)
    streams = drv.Stream(), drv.Stream()
    for _ in range(6):
        for problem, stream in zip((first, second), streams, strict=True):
            form = problem.form
            run(form.a, form.b, form.c, 1.0, 0.0, int(stream.handle))
    drv.Context.synchronize()
    assert _counts(run)[1] >= 8  # replays on both streams
    for problem in (first, second):
        exact, scale = checks.float64_reference(1.0, problem.op_a, problem.op_b, 0.0, None)
        got = problem.c()
        assert checks.scaled_error(got, exact, scale) <= checks.tolerance(k, problem.dtype)
