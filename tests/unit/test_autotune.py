"""Run-time refinement: the fastest timed candidate runs, each shape is timed once, and the
switch and the candidate lists behave; timings are stand-ins (no GPU needed)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tunedgemm import autotune, gpu_backend, plans, selection, table
from tunedgemm._layout import BlasForm

H100 = ("NVIDIA H100 80GB HBM3", "9.0")


def form(m=300, n=500, k=700):
    return BlasForm(m=m, n=n, k=k, a=4096, lda=m, b=8192, ldb=k, c=12288, ldc=m,
                    trans_a=False, trans_b=False, itemsize=4)  # fmt: skip


def stand_in_gpu(monkeypatch, samples, launcher, replayed=None):
    """time_candidates without a GPU: `samples` for timing.samples, `launcher(config)` for
    each own config's launcher, `replayed` for plans.replayed (None: leave it as it is)."""
    from tunedgemm import compiler, cuda, launch, timing

    monkeypatch.setattr(timing, "samples", samples)
    monkeypatch.setattr(compiler, "precompile", lambda *a, **k: None)
    monkeypatch.setattr(cuda, "allocate", lambda nbytes: 0)
    monkeypatch.setattr(cuda, "context", lambda: None)
    monkeypatch.setattr(launch, "workspace_bytes", lambda *a: 0)
    monkeypatch.setattr(launch, "launcher", lambda config, *a: launcher(config))
    if replayed is not None:
        monkeypatch.setattr(plans, "replayed", replayed)


@pytest.fixture
def timings(monkeypatch):
    """Stand-in timings by candidate; records each timing request."""
    requests = []
    table_ms: dict = {}

    def fake(form, dtype, candidates, stream=None, precision="ieee", batch=autotune.NO_BATCH, **_):
        requests.append(candidates)
        return [table_ms.get(c, math.inf) for c in candidates]

    monkeypatch.setattr(autotune, "time_candidates", fake)
    plans.clear()  # also clears autotune's memo
    yield table_ms, requests
    plans.clear()  # no plan made with stand-ins outlives the test


def test_fastest_candidate_wins_and_each_shape_is_timed_once(timings):
    table_ms, requests = timings
    table_ms.update({"x": 2.0, "y": 1.0, table.CUBLAS: 1.5})
    candidates = ("x", "y", table.CUBLAS)
    f32 = np.dtype(np.float32)
    assert autotune.choose(form(), f32, candidates) == "y"
    assert autotune.choose(form(), f32, candidates) == "y"
    assert requests == [candidates, (table.CUBLAS, "y") * autotune.CONFIRM_ROUNDS]
    assert autotune.choose(form(k=701), f32, candidates) == "y"  # another shape: timed again
    assert len(requests) == 4


def test_calls_that_read_c_are_timed_reading_c_and_remembered_apart(monkeypatch):
    """reads_c (beta != 0): the candidates are timed at READ_BETA, and the shape's pick at
    beta 0 is neither reused for it nor replaced by it."""
    betas = []

    def fake(form, dtype, candidates, stream=None, precision="ieee", batch=autotune.NO_BATCH,
             beta=0.0, **_):  # fmt: skip
        betas.append(beta)
        fast = "y" if beta == 0.0 else "x"  # another winner once C is read
        return [0.5 if c == fast else 1.0 for c in candidates]

    monkeypatch.setattr(autotune, "time_candidates", fake)
    plans.clear()
    f32 = np.dtype(np.float32)
    try:
        assert autotune.choose(form(), f32, ("x", "y")) == "y"
        assert set(betas) == {0.0}
        betas.clear()
        assert autotune.choose(form(), f32, ("x", "y"), reads_c=True) == "x"
        assert betas and set(betas) == {autotune.READ_BETA} and autotune.READ_BETA != 0.0
        betas.clear()
        assert autotune.choose(form(), f32, ("x", "y")) == "y"  # both remembered
        assert autotune.choose(form(), f32, ("x", "y"), reads_c=True) == "x"
        assert betas == []
    finally:
        plans.clear()


def test_incumbent_is_cublas_where_it_competes_else_the_first_pick():
    assert autotune.incumbent(("a", "b", table.CUBLAS)) == table.CUBLAS
    assert autotune.incumbent(("a", "b")) == "a"


@pytest.mark.parametrize("challenger_ms", [1.0, 0.99, 1.2])
def test_incumbent_stays_unless_beaten_by_the_margin(timings, challenger_ms):
    table_ms, requests = timings
    table_ms.update({"first": 1.0, "other": challenger_ms})
    chosen = autotune.choose(form(), np.dtype(np.float32), ("first", "other"))
    assert chosen == "first"  # a tie, 1% faster (noise) or slower: no switch
    # retimed where it came within FINALIST_SPREAD of the pass's best
    assert len(requests) == (2 if challenger_ms <= 1.0 + autotune.FINALIST_SPREAD else 1)


@pytest.mark.parametrize("retimed, switch", [
    ((1.0, 0.975, 1.0, 0.975, 1.0, 0.975), True),  # 2.5% faster every time: it wins
    ((1.0, 0.96, 0.99, 0.975, 1.0, 1.0), False),  # 2.5% by median, one retiming as slow
    ((1.0, 0.99, 1.0, 0.99, 1.0, 0.99), False),  # faster every time, but by 1%
])  # fmt: skip
def test_a_smaller_lead_wins_where_every_retiming_shows_it(monkeypatch, retimed, switch):
    passes = []

    def timed(form, dtype, candidates, stream=None, precision="ieee", batch=autotune.NO_BATCH, **_):
        passes.append(candidates)
        return [1.0, 0.97] if len(passes) == 1 else list(retimed)

    monkeypatch.setattr(autotune, "time_candidates", timed)
    autotune.clear()
    chosen = autotune.choose(form(), np.dtype(np.float32), ("first", "other"))
    assert chosen == ("other" if switch else "first")
    autotune.clear()


def test_a_lead_that_does_not_hold_up_on_retiming_keeps_the_incumbent(monkeypatch):
    """The first pass flatters the challenger; timed again, alternately, it is no faster."""
    passes = []

    def drifting(form, dtype, candidates, stream=None, precision="ieee",
                 batch=autotune.NO_BATCH, **_):  # fmt: skip
        passes.append(candidates)
        if len(passes) == 1:
            return [1.0, 0.8]
        return [1.0 if c == "first" else 1.01 for c in candidates]

    monkeypatch.setattr(autotune, "time_candidates", drifting)
    autotune.clear()
    assert autotune.choose(form(), np.dtype(np.float32), ("first", "other")) == "first"
    assert passes[1] == ("first", "other") * autotune.CONFIRM_ROUNDS
    autotune.clear()


def test_failing_candidates_keep_the_best_predicted(timings):
    """No stand-in times: every candidate fails (costs infinity)."""
    assert autotune.choose(form(), np.dtype(np.float64), ("first", "second")) == "first"


def test_switch(monkeypatch):
    monkeypatch.delenv(autotune.REFINE_ENV, raising=False)
    assert autotune.enabled()
    for off in ("0", "off", "False"):
        monkeypatch.setenv(autotune.REFINE_ENV, off)
        assert not autotune.enabled()


@pytest.mark.parametrize("allow_cublas", [True, False])
def test_candidates_are_the_models_best_and_cublas_when_allowed(monkeypatch, allow_cublas):
    monkeypatch.delenv(selection.FAMILY_ENV, raising=False)
    monkeypatch.delenv(table.TABLE_ENV, raising=False)
    monkeypatch.setenv(selection.CUBLAS_ENV, "1" if allow_cublas else "0")
    for shape in [(300, 500, 700), (4000, 3000, 200), (128, 128, 8000)]:
        choice = selection.choose("float32", *shape, gpu=H100[0], cc=H100[1], warn=False)
        own = [c for c in choice.candidates if c != table.CUBLAS]
        assert (
            1
            <= len(own)
            <= (
                selection.REFINE_CANDIDATES + selection.GENERALIST_PICKS + selection.FILL_CANDIDATES
            )
        )
        assert len(set(own)) == len(own)
        assert (table.CUBLAS in choice.candidates) == allow_cublas
        assert choice.config in choice.candidates


def test_run_refines_only_when_enabled(monkeypatch, timings):
    """gpu_backend.run decides through the plan of the shape's key: the table's choice with
    TUNEDGEMM_REFINE=0, the timed fastest with 1 (the setting drops the first plan)."""
    table_ms, requests = timings
    ran = []
    monkeypatch.setattr(selection, "choose", lambda *a, **k: selection.Choice(
        "predicted", "stand-in", ("predicted", "faster")))  # fmt: skip
    # Stand-in configs are strings: the plan's launch records the config it would launch.
    monkeypatch.setattr(plans, "launcher", lambda key, config: (
        lambda a, b, c, alpha, beta, stream: ran.append(config)))  # fmt: skip
    table_ms.update({"predicted": 2.0, "faster": 1.0})
    monkeypatch.setenv(autotune.REFINE_ENV, "0")
    assert gpu_backend.run(form(), np.dtype(np.float32), 1.0, 0.0) == "predicted"
    monkeypatch.setenv(autotune.REFINE_ENV, "1")
    assert gpu_backend.run(form(), np.dtype(np.float32), 1.0, 0.0) == "faster"
    assert gpu_backend.run(form(), np.dtype(np.float32), 1.0, 0.0) == "faster"  # the plan kept
    assert ran == ["predicted", "faster", "faster"]
    assert len(requests) == 2  # a pass and its confirmation, once


def test_call_cost_counts_the_front_door_against_host_bound_candidates():
    # A candidate whose launch is cheap but whose kernel is slower beats one whose kernel is
    # faster but whose queueing costs more host time than the GPU takes: in a run of calls
    # the host's whole call (queueing plus the front door) is what a host-bound call costs.
    cheap_launch = autotune.call_cost(gpu_ms=0.016, host_ms=0.004)
    dear_launch = autotune.call_cost(gpu_ms=0.010, host_ms=0.0155)
    assert cheap_launch == 0.016
    assert dear_launch == 0.0155 + autotune.FRONT_DOOR_MS
    assert cheap_launch < dear_launch
    # GPU-bound candidates compare by GPU time alone.
    assert autotune.call_cost(1.0, 0.004) < autotune.call_cost(1.1, 0.001)


def test_composed_3xtf32_runner_is_offered_only_where_its_accuracy_was_measured(monkeypatch):
    from tunedgemm import plans, reference, tf32_cublas
    from tunedgemm._layout import BlasForm

    monkeypatch.setattr(reference, "status", lambda: (True, ""))
    monkeypatch.setattr(tf32_cublas, "TF32x3OnCublas", lambda key: ("runner", key))

    def offered(m, n, k, precision="3xtf32", dtype="float32", batch=1):
        form = BlasForm(False, False, m, n, k, 0, m, 0, k, 0, m, 4)
        return tf32_cublas.candidate(plans.GemmKey.of(form, dtype, precision, batch)) is not None

    big, k = tf32_cublas.MIN_MN, tf32_cublas.MIN_K
    assert offered(big, big, k)
    assert offered(8192, 8192, 8192)
    assert not offered(big, big, k - 1)  # short sums: cuBLAS SGEMM is more accurate there
    assert not offered(big - 1, 8192, 8192)
    assert not offered(8192, big - 1, 8192)
    assert not offered(8192, 8192, 8192, precision="tf32")
    assert not offered(8192, 8192, 8192, precision="ieee")
    assert not offered(8192, 8192, 8192, dtype="float64")
    assert not offered(8192, 8192, 8192, batch=4)
    monkeypatch.setattr(reference, "status", lambda: (False, "no cuBLAS"))
    assert not offered(8192, 8192, 8192)


def test_composed_3xtf32_runner_runs_sgemm_when_its_planes_do_not_fit(monkeypatch):
    from tunedgemm import cuda, reference, table, tf32_cublas
    from tunedgemm._layout import BlasForm
    from tunedgemm.plans import GemmKey

    class MemoryError(Exception):  # (pycuda.driver's is named so)
        pass

    def no_memory(nbytes):
        raise MemoryError("out of memory")

    calls = []
    monkeypatch.setattr(cuda, "allocate", no_memory)
    monkeypatch.setattr(reference, "gemm", lambda form, *args: calls.append((form, args)))
    monkeypatch.setattr(table, "warn_once", lambda message: calls.append(message))
    form = BlasForm(True, False, 4096, 2048, 4096, 11, 4096, 22, 4096, 33, 4096, 4)
    runner = object.__new__(tf32_cublas.TF32x3OnCublas)
    runner.key = GemmKey.of(form, "float32", "3xtf32")
    runner(11, 22, 33, 2.0, 0.5, 7)
    message, (sgemm_form, args) = calls
    assert "cuBLAS SGEMM ran instead" in message
    assert (sgemm_form.a, sgemm_form.b, sgemm_form.c, sgemm_form.trans_a) == (11, 22, 33, True)
    assert args[1:] == (2.0, 0.5, 7)
    monkeypatch.setattr(cuda, "allocate", lambda nbytes: (_ for _ in ()).throw(ValueError("x")))
    with pytest.raises(ValueError):  # any other failure is not swallowed
        runner(11, 22, 33, 2.0, 0.5, 7)


def test_a_strided_batch_times_cublaslt_algorithms_made_for_the_batch(monkeypatch, timings):
    """A batched key runs cuBLAS; with autotuning on, its plan times cuBLASLt's algorithms
    for the whole batch (their scratch covering every product) and runs the fastest."""
    from tunedgemm import cublaslt

    _, requests = timings
    made = []

    class Algorithm:
        is_cublas = True

        def __init__(self, index):
            self.index = index

        def __call__(self, a, b, c, alpha, beta, stream):
            pass

    def algorithms(*args, count):
        made.append(args)
        return [Algorithm(0), Algorithm(1)]

    monkeypatch.setattr(plans, "_cublas_usable", lambda: True)
    monkeypatch.setattr(selection, "choose", lambda *a, **k: selection.Choice(
        table.CUBLAS, "stand-in", (table.CUBLAS,)))  # fmt: skip
    monkeypatch.setattr(cublaslt, "algorithms", algorithms)
    monkeypatch.setattr(autotune, "time_candidates", lambda form, dtype, candidates, stream=None,
                        precision="ieee", batch=autotune.NO_BATCH, **_: (
                            requests.append((candidates, batch)) or
                            [1.0 if c.index == 0 else 0.5 for c in candidates]))  # fmt: skip
    monkeypatch.setenv(autotune.REFINE_ENV, "1")
    key = plans.GemmKey.of(form(), "float32", "ieee", 8, (300 * 700, 0, 300 * 500))
    plan = plans.DevicePlan(key, form(), 0)
    assert made[0][-2:] == (8, (300 * 700, 0, 300 * 500))  # the algorithms know the batch
    assert plan.run.index == 1 and "cublasLt" not in plan.choice  # runs as it was timed
    assert all(batch == (8, key.batch_strides) for _, batch in requests)
    monkeypatch.setenv(autotune.REFINE_ENV, "0")
    plans.clear()
    requests.clear()
    untimed = plans.DevicePlan(key, form(), 0)  # cuBLASLt's own pick, nothing timed
    assert untimed.choice == table.CUBLAS and untimed.run.index == 0 and not requests


def test_a_pass_times_the_candidates_in_turn_back_and_forth(monkeypatch):
    """Each candidate's launches are spread over the pass (ROUNDS turns, back and forth), each
    turn after the first warmed up for SETTLE_MS of its GPU time, so that a GPU warming up,
    heating or held at its power cap favours none; the cost is from all its samples, one that
    fails to launch costs infinity, and one far behind after the first round drops out."""
    from tunedgemm.params import KernelConfig

    simt = KernelConfig.make("simt", {})
    fails = KernelConfig.make("simt", {"STAGES": 2})
    other = KernelConfig.make("simt", {"STAGES": 4})
    slow = KernelConfig.make("simt", {"BK": 32})
    order = []
    gpu_of = {simt: 10.0, other: 12.0, slow: 13.0}

    def samples(work, warmup, reps, stream):
        config = work.__defaults__[0]
        order.append((config, warmup))
        if config == fails:
            raise RuntimeError("launch failed")
        return [gpu_of[config]] * reps, [0.001] * reps

    stand_in_gpu(monkeypatch, samples, lambda config: (lambda *args: None))
    times = autotune.time_candidates(form(), np.dtype(np.float32), (simt, fails, other, slow))
    assert times == [10.0, math.inf, 12.0, 13.0]
    warm = autotune.WARMUP
    first = [(simt, warm), (fails, warm), (other, warm), (slow, warm)]
    # settled: ceil(30 / 10) - 1 = 2 and ceil(30 / 12) - 1 = 2 launches; the failed one is
    # not retried, and `slow` (1.3x the best) is not timed again
    assert autotune.SETTLE_MS == 30.0 and autotune.PRUNE_ABOVE < 1.3 and autotune.ROUNDS == 3
    assert order == [*first, (other, 2), (simt, 2), (simt, 2), (other, 2)]  # back and forth


@pytest.mark.parametrize("expected, launches", [
    (math.nan, autotune.WARMUP), (25.0, 1), (10.0, 2), (1.0, autotune.MAX_SETTLE), (60.0, 0),
])  # fmt: skip
def test_a_turn_settles_for_a_while_of_gpu_time(expected, launches):
    assert autotune.settle_launches(expected) == launches


def test_a_finalist_behind_in_the_pass_wins_where_retiming_shows_it(monkeypatch):
    """Pass timings of a power-capped product rank near-equal candidates at random: the
    fastest few within FINALIST_SPREAD are timed again beside the incumbent, and the fastest
    on retiming wins (by the margin), not the pass's best."""
    passes = []
    pass_ms = {"first": 1.10, "lucky": 1.00, "real": 1.04, "far": 1.2}
    retimed = {"first": 1.10, "lucky": 1.06, "real": 1.00}

    def timed(form, dtype, candidates, stream=None, precision="ieee", batch=autotune.NO_BATCH,
              rounds=autotune.ROUNDS, expected_ms=None, **_):  # fmt: skip
        passes.append((candidates, rounds, expected_ms))
        return [(retimed if passes[1:] else pass_ms)[c] for c in candidates]

    monkeypatch.setattr(autotune, "time_candidates", timed)
    autotune.clear()
    chosen = autotune.choose(form(), np.dtype(np.float32), ("first", "lucky", "real", "far"))
    assert chosen == "real"
    entrants = ("first", "lucky", "real")  # "far" is 20% behind the pass's best
    assert passes[1] == (entrants * autotune.CONFIRM_ROUNDS, 1,
                         [1.10, 1.00, 1.04] * autotune.CONFIRM_ROUNDS)  # fmt: skip
    assert autotune.history()[-1]["finalists"] == retimed
    autotune.clear()


def test_own_configs_that_queue_alike_share_one_host_time(monkeypatch):
    """HOST_TIES: own configs of as many direct launches cost one host time (the median of
    their least host times), so where the host binds they tie, whatever each one's host
    noise, also when the pass drops the far slower ones; a config of two launches keeps a
    time of its own group, and each Cost keeps its GPU ms."""
    from tunedgemm.params import KernelConfig

    fast, slow, noisy, split = (KernelConfig.make("simt", {"STAGES": s}) for s in (2, 3, 4, 5))
    gpu_of = {fast: 0.004, slow: 0.006, noisy: 0.005, split: 0.003}
    host_of = {fast: 0.0040, slow: 0.0030, noisy: 0.0050, split: 0.0060}

    class Launcher:
        def __init__(self, config):
            self.config = config

        def __call__(self, *args):
            pass

        def launch_count(self, form):
            return 2 if self.config == split else 1

    turns = []

    def samples(work, warmup, reps, stream):
        config = work.__defaults__[0]
        turns.append(config)
        return [gpu_of[config]] * reps, [host_of[config]] * reps

    stand_in_gpu(monkeypatch, samples, Launcher, replayed=lambda queue: None)
    times = autotune.time_candidates(form(), np.dtype(np.float32), (fast, slow, noisy, split))
    shared = 0.0040 + autotune.FRONT_DOOR_MS  # the median of 4, 3 and 5 us, and the front door
    assert times[:3] == [pytest.approx(shared)] * 3 and len(set(times[:3])) == 1
    assert times[3] == pytest.approx(0.0060 + autotune.FRONT_DOOR_MS)
    assert [t.gpu for t in times] == [0.004, 0.006, 0.005, 0.003]
    assert [t.host for t in times] == [0.0040, 0.0030, 0.0050, 0.0060]  # as timed
    # its own host time would have put `noisy` out after the first round (PRUNE_ABOVE)
    assert turns.count(noisy) == autotune.ROUNDS
    monkeypatch.setattr(autotune, "HOST_TIES", False)
    alone = autotune.time_candidates(form(), np.dtype(np.float32), (fast, slow, noisy, split))
    assert alone[1] < alone[0] < alone[2]  # each its own host noise: the slowest kernel first


def test_shared_host_time_is_of_the_candidates_timed_in_every_round():
    host = [1.0, 2.0, 9.0, math.inf, 5.0]
    groups = [1, 1, 1, 1, None]
    whole = [True, True, False, False, True]
    assert autotune.shared_host_ms(host, groups, whole) == [1.5, 1.5, 1.5, math.inf, 5.0]
    assert autotune.shared_host_ms(host, groups, [False] * 5)[:3] == [2.0] * 3  # else all


@pytest.mark.parametrize("challenger_ms, challenger_gpu, ties, switch", [
    (0.012, 0.004, True, True),  # a tie, a third less GPU time: it wins
    (0.012, 0.0059, True, False),  # a tie, under MARGIN less GPU time: the incumbent stays
    (0.0121, 0.004, True, False),  # less GPU time but a dearer call: no tie to break
    (0.012, 0.004, False, False),  # HOST_TIES off: equal costs keep the incumbent, as before
])  # fmt: skip
def test_a_host_bound_tie_goes_to_the_less_gpu_time(monkeypatch, challenger_ms, challenger_gpu,
                                                    ties, switch):  # fmt: skip
    """Both cost the shared host time; the challenger wins only by MARGIN of GPU time, and
    only where its call costs no more."""
    monkeypatch.setattr(autotune, "HOST_TIES", ties)

    def timed(form, dtype, candidates, stream=None, precision="ieee", batch=autotune.NO_BATCH,
              **_):  # fmt: skip
        cost = {"first": 0.012, "other": challenger_ms}
        gpu = {"first": 0.006, "other": challenger_gpu}
        return [autotune.Cost(cost[c], gpu[c], 0.004) for c in candidates]

    monkeypatch.setattr(autotune, "time_candidates", timed)
    autotune.clear()
    chosen = autotune.choose(form(), np.dtype(np.float32), ("first", "other"))
    assert chosen == ("other" if switch else "first")
    record = autotune.history()[-1]
    assert record["gpu_ms"] == [0.006, challenger_gpu] and record["host_ms"] == [0.004] * 2
    autotune.clear()


def test_finalists_of_equal_time_come_less_gpu_time_first(monkeypatch):
    times = [autotune.Cost(1.0, gpu, 0.5) for gpu in (0.9, 0.5, 0.7, 0.6)]
    assert autotune.finalists(("h", "a", "b", "c"), times, "h") == ("a", "c", "b")
    monkeypatch.setattr(autotune, "HOST_TIES", False)  # as before: the pass's first three
    assert autotune.finalists(("h", "a", "b", "c"), times, "h") == ("a", "b")  # less "h"


def test_costs_survive_copy_and_pickle():
    import copy
    import pickle

    cost = autotune.Cost(0.012, 0.004, 0.002)
    for twin in (copy.deepcopy(cost), pickle.loads(pickle.dumps(cost))):
        assert (twin, twin.gpu, twin.host) == (0.012, 0.004, 0.002)


def test_a_group_shares_the_host_time_of_its_members_timed_every_round(monkeypatch):
    """A member pruned after the first round (far slower on the GPU) leaves the median to
    those timed throughout, and gets the shared time too."""
    from tunedgemm.params import KernelConfig

    a, b, pruned = (KernelConfig.make("simt", {"STAGES": s}) for s in (2, 3, 4))
    gpu_of, host_of = {a: 0.010, b: 0.010, pruned: 0.100}, {a: 0.001, b: 0.003, pruned: 0.050}

    class Launcher:
        def __call__(self, *args):
            pass

        def launch_count(self, form):
            return 1

    stand_in_gpu(monkeypatch, lambda work, warmup, reps, stream: (
        [gpu_of[work.__defaults__[0]]] * reps, [host_of[work.__defaults__[0]]] * reps),
        lambda config: Launcher(), replayed=lambda queue: None)  # fmt: skip
    monkeypatch.setattr(autotune, "FRONT_DOOR_MS", 0.020)  # every call bound by the host
    times = autotune.time_candidates(form(), np.dtype(np.float32), (a, b, pruned))
    shared = 0.002 + 0.020  # the median of a's and b's, not of all three (0.003)
    assert times[0] == times[1] == pytest.approx(shared)
    assert times[2] == pytest.approx(0.100)  # its GPU time binds it


def test_candidates_that_queue_alike_share_a_host_group():
    """Graph replays of own kernels are one group whatever their launches (one cuGraphLaunch);
    direct launches group by count; cuBLAS's algorithms are one group; the rest stand alone."""

    class Kernels:
        def __init__(self, count):
            self.launch_count = lambda form: count

    class Algorithm:
        is_cublas = True

    group = autotune.host_group
    replay = object()
    assert group("x", Kernels(1), replay, None, form()) == group("y", Kernels(2), replay, None,
                                                                 form())  # fmt: skip
    assert group("x", Kernels(1), None, None, form()) != group("y", Kernels(2), None, None,
                                                               form())  # fmt: skip
    assert group(Algorithm(), None, None, None, form()) == "cublasLt"
    assert group(table.CUBLAS, None, None, object(), form()) == "cublasLt"
    assert group(table.CUBLAS, None, None, None, form()) is None  # scikit-cuda's own path


def test_stream_k_candidates_are_timed_launched_directly_as_their_plans_run(monkeypatch):
    """plans.launcher replays one-launch and split-K runners as graphs, not stream-K ones:
    autotuning times each as its plan runs it, so a stream-K candidate's host time is that
    of its direct launches, in a host group of its own."""
    from tunedgemm.params import KernelConfig

    plain, streamed = (KernelConfig.make("simt", {"STAGES": s}) for s in (2, 3))
    replays, direct = [], []

    class Launcher:
        def __init__(self, config):
            self.fixup = object() if config == streamed else None
            self.config = config

        def __call__(self, *args):
            direct.append(self.config)

        def launch_count(self, form):
            return 2 if self.fixup else 1

    def replayed(queue):
        def replay(*args):
            replays.append(queue)
        return replay

    stand_in_gpu(monkeypatch, lambda work, warmup, reps, stream: (
        work(), ([0.001] * reps, [0.001] * reps))[1], Launcher, replayed=replayed)  # fmt: skip
    autotune.time_candidates(form(), np.dtype(np.float32), (plain, streamed))
    assert replays and set(direct) == {streamed}
