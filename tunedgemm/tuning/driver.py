"""The tuning loop, independent of the GPU: runners are injected, so tests replay timings."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from ..params import KernelConfig
from ..table import CUBLAS, config_json, key
from . import strategies
from .checkpoint import Checkpoint
from .progress import Progress
from .space import Shape, candidates


@dataclass(frozen=True)
class Task:
    dtype: str
    trans_a: bool
    trans_b: bool
    shape: Shape
    precision: str = "ieee"  # the mode's own table entries: "float32@3xtf32/NN"

    @property
    def key(self) -> str:
        return key(self.dtype, self.trans_a, self.trans_b, self.precision)

    @property
    def id(self) -> str:
        return f"{self.key}/{self.shape}"


@dataclass
class Result:
    """What one task found; `timed` holds every (config, ms) that was measured."""

    task: Task
    choice: KernelConfig | str
    own: KernelConfig
    own_ms: float
    cublas_ms: float
    error: float
    vs_cublas: float
    timed: list[tuple[str, float]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"task": self.task.id, "dtype": self.task.dtype, "trans_a": self.task.trans_a,
                "trans_b": self.task.trans_b, "precision": self.task.precision,
                **asdict(self.task.shape),
                "choice": config_json(self.choice), "own": config_json(self.own),
                "own_ms": self.own_ms, "cublas_ms": self.cublas_ms, "error": self.error,
                "vs_cublas": self.vs_cublas, "timed": self.timed}  # fmt: skip


class Runner(Protocol):
    def time_config(self, config: KernelConfig) -> float: ...
    def time_cublas(self) -> float: ...
    def head_to_head(self, config: KernelConfig) -> tuple[float, float]: ...
    def verify(self, config: KernelConfig | str) -> tuple[float, float]: ...


def tasks_for(dtypes: Iterable[str], trans: Iterable[tuple[bool, bool]],
              shapes: Iterable[Shape], precision: str = "ieee") -> list[Task]:  # fmt: skip
    shapes = list(shapes)
    return [Task(d, ta, tb, s, precision) for d in dtypes for ta, tb in trans for s in shapes]


# What the tuner times at a task besides its strategy's sample (tunedgemm/tuning/seeds.py:
# what run-time autotuning would time there); none where the caller gives no function.
Seeds = Callable[[Task], Sequence[KernelConfig]]


def planned(task: Task, strategy: str, max_evals: int | None, num_sms: int,
            seeds: Sequence[KernelConfig] = ()) -> list[KernelConfig]:  # fmt: skip
    """The configs a strategy may time for a task, then the seeds it leaves out (for
    precompilation and --dry-run)."""
    cands = candidates(task.dtype, task.shape, num_sms, task.precision)
    if strategy == "random":
        from .strategies.random import DEFAULT_MAX_EVALS, order

        cands = order(cands)[: DEFAULT_MAX_EVALS if max_evals is None else max_evals]
    return list(dict.fromkeys([*cands, *seeds]))


def run_task(task: Task, runner: Runner, strategy: str, max_evals: int | None,
             allow_cublas: bool, num_sms: int,
             seeds: Sequence[KernelConfig] = ()) -> Result:  # fmt: skip
    search = strategies.get(strategy)
    timed = search(candidates(task.dtype, task.shape, num_sms, task.precision),
                   runner.time_config, max_evals)  # fmt: skip
    sampled = {config for config, _ in timed}
    timed += [(c, runner.time_config(c)) for c in dict.fromkeys(seeds) if c not in sampled]
    ranked = sorted((r for r in timed if math.isfinite(r[1])), key=lambda r: r[1])
    if not ranked:
        raise RuntimeError(f"{task.id}: every candidate failed")
    # The fastest own config that verifies wins among ours; a wrong one is never written.
    own, own_ms, error, vs_cublas = ranked[0][0], ranked[0][1], math.inf, math.nan
    for config, ms in ranked[:3]:
        error, vs_cublas = runner.verify(config)
        if math.isfinite(error):
            own, own_ms = config, ms
            break
    if not math.isfinite(error):
        raise RuntimeError(f"{task.id}: the fastest configs fail verification")
    # Then it meets cuBLAS in turns, both timed alike (Runner.head_to_head).
    own_ms, cublas_ms = runner.head_to_head(own)
    choice: KernelConfig | str = CUBLAS if allow_cublas and cublas_ms < own_ms else own
    return Result(task, choice, own, own_ms, cublas_ms, error, vs_cublas,
                  [(str(c), ms) for c, ms in timed])  # fmt: skip


def tune(
    tasks: list[Task],
    make_runner: Callable[[Task], Runner],
    strategy: str = "random",
    max_evals: int | None = None,
    allow_cublas: bool = True,
    checkpoint: Checkpoint | None = None,
    time_budget_s: float | None = None,
    prepare: Callable[[Task, list[KernelConfig]], None] | None = None,
    num_sms: int = 132,
    progress: Progress | None = None,
    seeds: Seeds | None = None,
) -> list[Result]:
    """Run every task not already in the checkpoint; stops early when the budget is spent.
    Each task times its strategy's sample and then its `seeds` (if given) that the sample
    left out."""
    done = checkpoint.load() if checkpoint else {}
    results = [done[t.id] for t in tasks if t.id in done]
    todo = [t for t in tasks if t.id not in done]
    progress = progress or Progress(len(tasks), initial=len(results))
    started = time.monotonic()
    prepared: set[str] = set()
    seeded: dict[str, Sequence[KernelConfig]] = {}

    def seeds_of(task: Task) -> Sequence[KernelConfig]:
        if seeds is None:
            return ()
        if task.id not in seeded:
            seeded[task.id] = tuple(seeds(task))
        return seeded[task.id]

    for index, task in enumerate(todo):
        if time_budget_s is not None and time.monotonic() - started > time_budget_s:
            progress.note(f"time budget spent; {len(todo) - index} tasks left for a rerun")
            break
        if prepare is not None and task.key not in prepared:
            # Compile everything this (dtype, transposes) key will time, in parallel, once.
            same_key = [t for t in todo if t.key == task.key]
            configs = sorted({c for t in same_key for c in planned(t, strategy, max_evals,
                                                                  num_sms, seeds_of(t))})
            progress.note(f"compiling {len(configs)} configs for {task.key}")
            prepare(task, configs)
            prepared.add(task.key)
        result = run_task(task, make_runner(task), strategy, max_evals, allow_cublas, num_sms,
                          seeds_of(task))  # fmt: skip
        results.append(result)
        if checkpoint:
            checkpoint.append(result)
        progress.step(f"{task.id}: {result.choice if result.choice == CUBLAS else 'own'} "
                      f"{min(result.own_ms, result.cublas_ms):.3f} ms")  # fmt: skip
    progress.close()
    return results
