"""Run-time autotuning: the few configs the model ranks best, timed once at the call's shape.

The wave model (tunedgemm/model.py) predicts each candidate's time from measurements at the
nearest tuned shapes; between grid points its ranking is often right about the field but
wrong about the winner. So the first call of a shape times the model's best few candidates
(and cuBLAS, where it may compete; and for the first own ones, their twins and wave-filling
splits: tunedgemm/plans.py, own_candidates) on that exact shape, into scratch memory, and
every later call of the shape runs the fastest (a strided batch, which cuBLAS runs, times
cuBLASLt's first algorithms for it). That costs a few launches once per distinct
shape (and the compilation of any candidate not yet compiled, which the disk cache keeps for
later processes); TUNEDGEMM_REFINE=0 turns it off, and the table's predicted choice runs.

One pass of timings drifts by several percent (clocks, the GPU's other work), enough to
crown a candidate that is slower when timed again. So the incumbent (cuBLAS where it
competes, else the model's first pick) stays unless a finalist (the pass's fastest few)
beats it again in a second, interleaved round, by more than MARGIN (or by SEPARATED_MARGIN
where every one of its retimings is faster than every one of the incumbent's).

Long products run at a power cap: float64 at 4096^3-8192^3 drew up to 718 W on the H100,
its software power cap holding the SM clock at 1365-1965 MHz (nvidia-smi, 2026-11-26 19:52
UTC, benchmarks/probe_dgemm_squares.py), and the clock a launch ran at depended on the
launches before it. So each turn first runs the candidate for SETTLE_MS of GPU time, and
the turns of a pass go back and forth (a candidate's neighbours change from round to
round); candidates far behind after the first round are not timed again.

A candidate's time is what it costs per call in a run of calls: its GPU time, or where
that is less, the host's time to queue it plus the public call's own host time around the
launch (FRONT_DOOR_MS). At a few microseconds of work a call is bound by the host, and own
kernels (one or two cuLaunchKernel) and cuBLASLt (whose cublasLtMatmul alone took 15-18 us
of host time a call on the H100 machine) take different times to queue (docs/host.md).
"""

from __future__ import annotations

import dataclasses
import math
import statistics
import threading
from typing import Any

import numpy as np

from . import settings, table
from ._args import dtype_name
from ._layout import BlasForm
from .params import KernelConfig

REFINE_ENV = "TUNEDGEMM_REFINE"
WARMUP, REPS = 2, 5  # enough that noise rarely swaps near-equal candidates
# A pass times the candidates in turn this many times (REPS // ROUNDS + 1 launches each turn):
# timed one after another, the twins and relatives that come last in a pass ran on a GPU
# heated by the others; at 4096^3 float64 (H100, 2026-11-26 14:15 UTC) dmma's ADVANCE=1 twin
# timed 0.5% slower than its config there, and 5% faster interleaved (bench_kernels).
ROUNDS = 3
CONFIRM_ROUNDS = 3  # incumbent and finalists timed in turn, so drift hits them alike
# The pass's fastest FINALISTS within FINALIST_SPREAD of its best are timed again beside the
# incumbent: at 8192^3 float64 (H100, 2026-11-26 19:52 UTC) three passes ranked dmma's
# 128 x 128 ADVANCE=1 twin first, second and fifth (4.5% behind the best), and it ran 2-9%
# faster than the picks of the other two passes in a run of calls.
FINALISTS, FINALIST_SPREAD = 3, 0.06
# A turn's warm-up after the first round: enough launches for this much GPU time (at most
# MAX_SETTLE), so that the clock a power-capped product runs at is its own, not set by the
# candidate before it.
SETTLE_MS, MAX_SETTLE = 30.0, 6
PRUNE_ABOVE = 1.25  # after the first round, candidates this far behind the best drop out
MARGIN = 0.03  # a challenger must be this much faster than the incumbent to displace it
# ... or this much, where each of its retimings beat each of the incumbent's: at 8x2048^3
# float32 (H100, 2026-11-26 14:26 UTC) cuBLASLt's third batched algorithm ran 2.7% faster
# than its first in both passes, and the 3% margin kept the slower one.
SEPARATED_MARGIN = 0.015
# Host time of a public device call outside its launch: signature, plan lookup, the result's
# allocation. benchmarks/probe_host_ties.py on the H200 machine (2026-11-29 17:43 UTC): sgemm
# and dgemm into c on GPUArrays took 4.1-5.6 us of host time a call at 10 launch-bound
# shapes, where the graph replay of the own kernel alone took 1.5-1.7: about 3 us. (8 us
# until then: 24.2 us a call on CuPy at 512^3 on the H100 machine, 2026-11-23, of which
# cuBLASLt's call 15.5, before calls took the C route and replayed graphs.) Too small is the
# cheaper error: a pick by GPU time then costs at most the host time between two kinds of
# candidate (0.3 us between graphs of own kernels and cuBLASLt's); too large, it hides GPU
# time: at 512x512x128 float64 every candidate under 9.6 us cost the same.
FRONT_DOOR_MS = 0.003
# beta of the timed calls where the calls read C (reads_c): the epilogue's loads of C and
# split-K's reduction reading C cost differently by config (C's old values were loaded one
# column at a time until 2026-11-29, 0.66x cuBLAS at one random shape at beta 1 on the H200).
READ_BETA = 1.0
# Candidates that queue alike (own configs replayed as graphs, own configs of as many direct
# launches, cuBLAS's algorithms: host_group) share one host time: the median of their least
# host times. Taken one by one, that least time is noise: at 148x96x64 float32 (H200,
# 2026-11-29 15:25 UTC, benchmarks/probe_reads_c.py) 16 of 17 candidates cost 10.7-12.4 us,
# all bound by the host, and the pick flipped between passes among kernels of 4.3-6.7 us of
# GPU time. With the shared host time such candidates tie, and the tie goes to the least GPU
# time (which a call's latency, and other work on the GPU, see). At 10 launch-bound shapes
# the picks' GPU time fell 12% (float32) and 20% (float64) (H200, 2026-11-29 17:48 UTC,
# benchmarks/probe_host_ties.py).
HOST_TIES = True

Config = KernelConfig | str
Batch = tuple[int, tuple[int, int, int]]  # (products, element strides of A, B, C between them)
NO_BATCH: Batch = (1, (0, 0, 0))
_best: dict[tuple[Any, ...], Config] = {}
# The same results keyed by the candidates' identity: hashing ten configs costs microseconds
# on every call, and selection hands back the same tuple for a shape (it memoises choices).
# Each value holds its tuple, so that no other tuple can take its id while the entry lives.
_by_identity: dict[tuple[Any, ...], tuple[tuple[Config, ...], Config]] = {}
_lock = threading.Lock()
# What each refinement timed and chose (a few per distinct shape), for benchmarks and
# explanations: dicts with shape, candidates, ms, confirm (incumbent's and challenger's ms
# when retimed) and chosen.
_history: list[dict[str, Any]] = []


class Cost(float):
    """Ms per call of a candidate (call_cost), carrying its median GPU ms and least host ms:
    a float wherever a time is compared, its GPU ms the tie-break where the host binds."""

    __slots__ = ("gpu", "host")
    gpu: float
    host: float

    def __new__(cls, ms: float, gpu: float, host: float) -> Cost:
        cost = super().__new__(cls, ms)
        cost.gpu, cost.host = gpu, host
        return cost

    def __reduce__(self) -> tuple[Any, ...]:  # copy and pickle pass the three times
        return (Cost, (float(self), self.gpu, self.host))


def gpu_ms_of(time: float) -> float:
    """The GPU ms of a timing (a Cost's; a plain float is its own)."""
    return getattr(time, "gpu", time)


def _tie_break(gpu_ms: float) -> float:
    """What breaks a tie of equal costs: the GPU ms under HOST_TIES, else nothing (the
    candidates' order, as before it)."""
    return gpu_ms if HOST_TIES else 0.0


def history() -> list[dict[str, Any]]:
    """What refinement timed and chose so far in this process, oldest first."""
    with _lock:
        return list(_history)


def enabled() -> bool:
    return bool(settings.get(REFINE_ENV))


def choose(form: BlasForm, dtype: np.dtype, candidates: tuple[Config, ...],
           precision: str = "ieee", stream: Any = None, batch: Batch = NO_BATCH,
           reads_c: bool = False) -> Config:  # fmt: skip
    """The fastest of `candidates` at this form's shape (timed on first use, then remembered).

    Candidates come best-predicted first; a tie, or one that fails, keeps the incumbent.
    `batch`: (count, element strides of A, B, C) of a strided batch, whose candidates are
    cuBLASLt algorithms made for it. `reads_c`: the calls have beta != 0, and the candidates
    are timed so (READ_BETA)."""
    shape = (dtype_name(dtype), form.m, form.n, form.k, form.trans_a, form.trans_b,
             form.aligned(), precision, batch, reads_c)  # fmt: skip
    hit = _by_identity.get((id(candidates), *shape))
    if hit is not None and hit[0] is candidates:
        return hit[1]
    key = (*shape, candidates)
    with _lock:  # one thread times a shape; the others then find its result
        found = _best.get(key)
        if found is None:
            found = _fastest(form, dtype, candidates, stream, shape, precision, batch,
                             READ_BETA if reads_c else 0.0)  # fmt: skip
            _best[key] = found
        _by_identity[(id(candidates), *shape)] = (candidates, found)
    return found


def incumbent(candidates: tuple[Config, ...]) -> Config:
    """What runs unless another candidate proves faster: cuBLAS where it competes (the
    floor every call must meet), else the model's first pick."""
    if table.CUBLAS in candidates:
        return table.CUBLAS
    return next((c for c in candidates if getattr(c, "is_cublas", False)), candidates[0])


def _fastest(form: BlasForm, dtype: np.dtype, candidates: tuple[Config, ...], stream: Any,
             shape: tuple[Any, ...], precision: str = "ieee", batch: Batch = NO_BATCH,
             beta: float = 0.0) -> Config:  # fmt: skip
    holder = incumbent(candidates)
    times = time_candidates(form, dtype, candidates, stream, precision, batch, beta=beta)
    record: dict[str, Any] = {"shape": shape, "candidates": [str(c) for c in candidates],
                              "ms": times, "gpu_ms": [gpu_ms_of(t) for t in times],
                              "host_ms": [getattr(t, "host", None) for t in times],
                              "confirm": None}  # fmt: skip
    _history.append(record)
    chosen = holder
    entrants = (holder, *finalists(candidates, times, holder))
    if len(entrants) > 1:
        pass_ms = [times[candidates.index(c)] for c in entrants]
        again = time_candidates(form, dtype, entrants * CONFIRM_ROUNDS, stream, precision,
                                batch, rounds=1, expected_ms=pass_ms * CONFIRM_ROUNDS,
                                beta=beta)  # fmt: skip
        turns = [again[i :: len(entrants)] for i in range(len(entrants))]
        medians = [float(np.median(t)) for t in turns]
        gpu_medians = [float(np.median([gpu_ms_of(x) for x in t])) for t in turns]
        best = min(range(1, len(entrants)), key=lambda i: (medians[i], _tie_break(gpu_medians[i])))
        record["confirm"] = (medians[0], medians[best])
        record["finalists"] = {str(c): m for c, m in zip(entrants, medians, strict=True)}
        record["finalists_gpu"] = {str(c): m for c, m in zip(entrants, gpu_medians,
                                                              strict=True)}  # fmt: skip
        separated = max(turns[best]) < min(turns[0])
        margin = SEPARATED_MARGIN if separated else MARGIN
        cheaper = medians[best] < medians[0] * (1 - margin)
        # a tie of host-bound calls (HOST_TIES): the one with less GPU time, by the margin
        less_gpu = gpu_medians[best] < gpu_medians[0] * (1 - MARGIN)
        tie_won = HOST_TIES and medians[best] <= medians[0] and less_gpu
        if cheaper or tie_won:
            chosen = entrants[best]
    record["chosen"] = str(chosen)
    return chosen


def finalists(candidates: tuple[Config, ...], times: list[float],
              holder: Config) -> tuple[Config, ...]:  # fmt: skip
    """The pass's fastest FINALISTS other than the holder, within FINALIST_SPREAD of its best
    (the fastest always, where it is not the holder); of equal times, less GPU time first."""
    ranked = sorted((t, _tie_break(gpu_ms_of(t)), i) for i, t in enumerate(times)
                    if math.isfinite(t))  # fmt: skip
    if not ranked:
        return ()
    best = ranked[0][0]
    return tuple(candidates[i] for t, _, i in ranked[:FINALISTS]
                 if candidates[i] != holder and t <= best * (1 + FINALIST_SPREAD))  # fmt: skip


def time_candidates(form: BlasForm, dtype: np.dtype, candidates: tuple[Config, ...],
                    stream: Any = None, precision: str = "ieee", batch: Batch = NO_BATCH,
                    rounds: int = ROUNDS, expected_ms: list[float] | None = None,
                    beta: float = 0.0) -> list[float]:  # fmt: skip
    """Ms per call of each candidate on the form's operands (the median GPU time, or the
    least host time plus FRONT_DOOR_MS where that is longer: call_cost; as Costs, the host
    time of candidates that queue alike shared as HOST_TIES says), writing
    scratch memory instead of C (alpha 1 and `beta`, the scratch zeroed where beta != 0 so
    that it reads zeros; every product of a batch); one that fails to compile or run costs
    infinity, one that drops out (PRUNE_ABOVE) its first round's.
    `rounds` turns each, back and forth; `expected_ms` (each candidate's time, as far as
    known) sizes the first round's warm-up as the later ones' are (SETTLE_MS)."""
    from . import _driver, cublaslt, cuda, launch, plans, reference
    from .compiler import precompile, precompile_raw
    from .timing import samples

    own = [c for c in candidates if isinstance(c, KernelConfig)]
    if len(own) > 1:  # nvcc in parallel for those not yet in the disk cache
        precompile(own, dtype_name(dtype), form.trans_a, form.trans_b, form.aligned(),
                   jobs=len(own))  # fmt: skip
    # Composed runners' own kernels (in their own layouts), likewise.
    for ta, tb, configs in _composed_jobs(candidates):
        precompile(configs, dtype_name(dtype), ta, tb, form.aligned(), jobs=len(configs))
    # ... and the kernels of those outside the families (tunedgemm/gemv_like.py).
    raw = [job for c in candidates for job in getattr(c, "raw_compile_jobs", lambda: ())()]
    if len(raw) > 1:
        precompile_raw(raw, workers=len(raw))
    itemsize = np.dtype(dtype).itemsize
    count, strides = batch
    scratch_bytes = (max(form.ldc, 1) * max(form.n, 1) + (count - 1) * strides[2]) * itemsize
    scratch = cuda.allocate(scratch_bytes)
    handle = _driver.stream_handle(stream)
    if beta != 0.0:  # C's old values read: zeros, not what the allocation last held (NaN)
        zero = _driver.lib().cuMemsetD32Async(int(scratch), 0, scratch_bytes // 4, handle)
        _driver.check(zero, "cuMemsetD32Async")
    trial = dataclasses.replace(form, c=int(scratch))
    # One split-K workspace for every candidate (they run in turn on one stream), so that
    # split-K configs are timed as plans run them, without an allocation per launch.
    workspace_bytes = max((launch.workspace_bytes(c, dtype, form) for c in own), default=0)
    workspace = cuda.allocate(workspace_bytes) if workspace_bytes else None
    workspace_ptr = int(workspace or 0)
    # cuBLAS as plans call it: through cuBLASLt with its algorithm chosen once, where it loads.
    lt = cublaslt.runner(dtype_name(dtype), precision, trial.trans_a, trial.trans_b, trial.m,
                         trial.n, trial.k, trial.lda, trial.ldb, trial.ldc) \
        if table.CUBLAS in candidates else None  # fmt: skip
    works: list[Any] = []  # None: a config that does not compile or launch here
    host_groups: list[Any] = []  # candidates of one group queue alike (HOST_TIES)
    for config in candidates:
        host_groups.append(None)
        try:
            # an own config's kernel(s) as a plan queues them: the launcher made once
            kernels = (launch.launcher(config, np.dtype(dtype), trial.trans_a, trial.trans_b,
                                       trial.aligned(), id(cuda.context()))
                       if isinstance(config, KernelConfig) else None)  # fmt: skip
        except Exception:
            works.append(None)
            continue

        # Repeated as calls repeat them, own launches are replayed as graphs, as plans
        # replay them (plans.replayed): the host time timed is the replay's. Stream-K's
        # plans launch directly (plans.launcher), so their candidates are timed so too.
        replayed = kernels is not None and not plans.launched_directly(kernels)
        replay = plans.replayed(_queue_of(kernels, trial, workspace_ptr)) if replayed else None
        host_groups[-1] = host_group(config, kernels, replay, lt, trial)

        def work(config: Config = config, kernels: Any = kernels, replay: Any = replay) -> None:
            if replay is not None:
                replay(trial.a, trial.b, trial.c, 1.0, beta, handle, workspace_ptr)
            elif kernels is not None:
                kernels(trial, 1.0, beta, handle, workspace_ptr)
            elif getattr(config, "is_cublas", False) or getattr(config, "runs_itself", False):
                # one cuBLASLt algorithm, or a runner composed of launches (plans._composed)
                config(trial.a, trial.b, trial.c, 1.0, beta, handle)  # type: ignore[operator]
            elif lt is not None:  # cuBLAS
                lt(trial.a, trial.b, trial.c, 1.0, beta, handle)
            else:
                reference.gemm(trial, dtype, 1.0, beta, stream, precision)

        works.append(work)
    gpu_ms: list[list[float]] = [[] for _ in candidates]
    host_ms: list[list[float]] = [[] for _ in candidates]
    expected = list(expected_ms) if expected_ms else [math.nan] * len(candidates)
    timed = list(works)  # those still timed: a failure or a prune drops one
    # Candidates in turn, round after round, back and forth: a drift of the GPU's clocks
    # during the pass (a long float64 product heats it) falls on all of them alike, not on
    # those timed last, and no candidate always follows the same one.
    for round_ in range(rounds):
        order = range(len(works)) if round_ % 2 == 0 else reversed(range(len(works)))
        for i in order:
            work = timed[i]
            if work is None:
                continue
            try:
                gpu, host = samples(work, settle_launches(expected[i]), REPS // ROUNDS + 1,
                                    stream)  # fmt: skip
            except Exception:  # a config that fails to launch here: never chosen
                works[i] = timed[i] = None
                continue
            gpu_ms[i] += gpu
            host_ms[i] += host
            expected[i] = statistics.median(gpu_ms[i])
        if round_ == 0 and rounds > 1:  # the far slower ones have shown enough
            cost = costs(gpu_ms, host_ms, timed, host_groups)
            keep = min(cost) * PRUNE_ABOVE
            timed = [w if c <= keep else None for w, c in zip(timed, cost, strict=True)]
    del scratch, workspace  # every timed launch has finished: the timing waited for the last
    return costs(gpu_ms, host_ms, works, host_groups, whole=[w is not None for w in timed])


def _composed_jobs(candidates: tuple[Config, ...]) -> list[tuple[bool, bool, list[Any]]]:
    """(trans_a, trans_b, configs) of the own kernels that the composed runners among the
    candidates launch (their compile_jobs), grouped by layout."""
    layouts: dict[tuple[bool, bool], list[Any]] = {}
    for c in candidates:
        for config, ta, tb in getattr(c, "compile_jobs", lambda: ())():
            layouts.setdefault((ta, tb), []).append(config)
    return [(ta, tb, configs) for (ta, tb), configs in layouts.items()]


def costs(gpu_ms: list[list[float]], host_ms: list[list[float]], works: list[Any],
          groups: list[Any], whole: list[bool] | None = None) -> list[float]:  # fmt: skip
    """Each candidate's Cost from its samples (infinity where `works` has None): the median
    GPU ms and the least host ms, shared within its host group (HOST_TIES) by those timed in
    every round (`whole`, default all)."""
    gpu = [statistics.median(gpu_ms[i]) if work else math.inf for i, work in enumerate(works)]
    host = [min(host_ms[i]) if work else math.inf for i, work in enumerate(works)]
    shared = shared_host_ms(host, groups, whole or [True] * len(works)) if HOST_TIES else host
    return [Cost(call_cost(gpu[i], shared[i]), gpu[i], host[i]) if work is not None
            else math.inf for i, work in enumerate(works)]  # fmt: skip


def host_group(config: Config, kernels: Any, replay: Any, lt: Any, form: BlasForm) -> Any:
    """Which candidates queue alike on the host (HOST_TIES), or None for one alone: own
    configs replayed as graphs (one cuGraphLaunch, whatever their launches: at 512x512x128
    float64 on the H200, 2026-11-29, the least host times of those with a split-K reduction
    and of those without were 1.42-1.66 and 1.45-1.66 us), own configs launched directly by
    how many launches they queue, and cuBLAS's algorithms (one cublasLtMatmul each)."""
    if kernels is not None:
        if replay is not None:
            return "own graph"
        count = getattr(kernels, "launch_count", None)
        return ("own launches", count(form)) if count is not None else None
    if getattr(config, "is_cublas", False) or (config == table.CUBLAS and lt is not None):
        return "cublasLt"
    return None


def shared_host_ms(host_ms: list[float], groups: list[Any], whole: list[bool]) -> list[float]:
    """host_ms with each group's times (candidates whose group is not None and alike)
    replaced by the median of those timed in every round (`whole`; else of all of them)."""
    shared = list(host_ms)
    for group in {g for g in groups if g is not None}:
        members = [i for i, g in enumerate(groups) if g == group and math.isfinite(host_ms[i])]
        pooled = [host_ms[i] for i in members if whole[i]] or [host_ms[i] for i in members]
        if pooled:
            median = statistics.median(pooled)
            for i in members:
                shared[i] = median
    return shared


def _queue_of(kernels: Any, form: BlasForm, workspace: int) -> Any:
    """A Replay's queue for an own launcher on this form's operands."""

    def queue(a: int, b: int, c: int, alpha: float, beta: float, s: int, home: int) -> None:
        kernels(form, alpha, beta, s, workspace, home)

    return queue


def settle_launches(expected_ms: float) -> int:
    """Warm-up launches of a turn (beside the one `samples` times on the host): WARMUP while
    the candidate's time is unknown, else enough for SETTLE_MS of GPU time, at most
    MAX_SETTLE."""
    if not math.isfinite(expected_ms) or expected_ms <= 0:
        return WARMUP
    return min(MAX_SETTLE, max(0, math.ceil(SETTLE_MS / expected_ms) - 1))


def call_cost(gpu_ms: float, host_ms: float) -> float:
    """Ms a call costs in a run of calls: the GPU's time, or the host's where that is longer
    (the candidate's queueing plus the public call's own FRONT_DOOR_MS)."""
    return max(gpu_ms, host_ms + FRONT_DOOR_MS)


def clear() -> None:
    with _lock:
        _best.clear()
        _by_identity.clear()
        _history.clear()
