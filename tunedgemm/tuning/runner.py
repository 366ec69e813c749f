"""Time candidate configs on the GPU: parallel precompilation, CUDA-event medians over
rotated operand sets (so L2 does not flatter small shapes), each launched as a planned call
launches it, and verification of winners."""

from __future__ import annotations

import math
import statistics
import sys
from typing import Any

import numpy as np

from .. import checks, gpu_backend, plans, reference, table
from ..params import IEEE, KernelConfig
from . import problems
from .space import Shape

L2_BYTES = 50 * 2**20
MAX_OPERAND_SETS = 8
HEAD_TO_HEAD_ROUNDS = 3  # own winner against cuBLAS, in turn (Runner.head_to_head)


class Runner:
    """Operands for one (dtype, transposes, shape) and timers for configs and cuBLAS."""

    def __init__(self, dtype: str, trans_a: bool, trans_b: bool, shape: Shape,
                 warmup: int = 2, reps: int = 5, precision: str = "ieee") -> None:  # fmt: skip
        self.dtype = np.dtype(dtype)
        self.shape = shape
        self.precision = precision  # "tf32": cuBLAS's TF32 GEMM is the rival, TF32's bound holds
        self.warmup, self.reps = warmup, reps
        elements = shape.m * shape.k + shape.k * shape.n + shape.m * shape.n
        footprint = self.dtype.itemsize * elements
        count = min(MAX_OPERAND_SETS, max(1, math.ceil(2 * L2_BYTES / max(footprint, 1))))
        rng = np.random.default_rng()
        # Padded leading dimensions, as host calls lay out their tiles: the aligned variants.
        self.sets = [problems.make(shape.m, shape.n, shape.k, dtype, trans_a, trans_b, rng,
                                      padded=True) for _ in range(count)]  # fmt: skip
        self.failures: list[str] = []
        # One plan key serves every operand set: they share shape, layout and alignment.
        self.key = plans.GemmKey.of(self.sets[0].form, self.dtype.name, precision)

    def _median_ms(self, launch_one: Any) -> float:
        import pycuda.driver as drv

        # Each operand set twice at least: a call that repeats is captured as a graph on its
        # second sight and replayed from then on (plans.replayed, cuBLASLt's likewise), so the
        # timed calls are replays, as a run of repeated calls makes them.
        for i in range(max(self.warmup, 2 * len(self.sets))):
            launch_one(self.sets[i % len(self.sets)])
        start, stop = drv.Event(), drv.Event()
        times = []
        for _ in range(self.reps):
            # Each timed sample cycles through every operand set once.
            start.record()
            for problem in self.sets:
                launch_one(problem)
            stop.record()
            stop.synchronize()
            times.append(stop.time_since(start) / len(self.sets))
        return statistics.median(times)

    def _planned_ms(self, config: KernelConfig | str) -> float:
        """Median ms of config launched as a planned call launches it (tunedgemm/plans.py,
        launcher: the grid worked out once, a split-K workspace kept), so that the table
        compares what calls cost (through gpu_backend.run each launch also paid a set-up on
        the host that planned calls do once, which counts where a shape is launch-bound)."""
        run = plans.launcher(self.key, config)
        return self._median_ms(lambda p: run(p.form.a, p.form.b, p.form.c, 1.0, 0.0, 0))

    def time_config(self, config: KernelConfig) -> float:
        """Median ms; a config that fails to compile or launch costs infinity and is logged."""
        try:
            return self._planned_ms(config)
        except Exception as exc:
            self.failures.append(f"{config}: {type(exc).__name__}: {str(exc)[:200]}")
            print(f"tune: {self.shape} {config} failed: {type(exc).__name__}", file=sys.stderr)
            return math.inf

    def time_cublas(self) -> float:
        if not reference.status()[0]:
            return math.inf
        if self.precision == IEEE:  # as a call whose table entry chose cuBLAS runs it
            return self._planned_ms(table.CUBLAS)
        mode = "tf32" if self.precision == "tf32" else "ieee"  # 3xtf32's rival: SGEMM
        return self._median_ms(lambda p: reference.gemm(p.form, p.dtype, 1.0, 0.0, None, mode))

    def head_to_head(self, config: KernelConfig, rounds: int = HEAD_TO_HEAD_ROUNDS,
                     ) -> tuple[float, float]:  # fmt: skip
        """(config's ms, cuBLAS's ms), each the median of `rounds` timings taken in turn,
        the order swapped each round. The search's best own time is the least of a few
        dozen noisy timings and cuBLAS's a single one: at launch-bound shapes that
        difference decided entries (a cuBLAS timing of 8.4 us where it runs 4.3, 2026-11-27),
        so the final comparison times both alike."""
        own: list[float] = []
        cublas: list[float] = []
        for round_ in range(rounds):
            pair = ((own, lambda: self._planned_ms(config)), (cublas, self.time_cublas))
            for times, time_one in pair if round_ % 2 == 0 else reversed(pair):
                times.append(time_one())
        return statistics.median(own), statistics.median(cublas)

    def verify(self, config: KernelConfig | str) -> tuple[float, float]:
        """(error vs float64, error vs cuBLAS) of config on operands whose C is poisoned with
        NaN first. The float64 check covers 64 sampled rows; an unwritten element or an
        error over the K-scaled tolerance gives inf."""
        problem = self.sets[0]
        problem.poison_c()
        gpu_backend.run(problem.form, problem.dtype, 1.0, 0.0, config)
        ours = problem.c()
        if not np.isfinite(ours).all():
            return math.inf, math.inf
        rows = np.random.default_rng().choice(self.shape.m, min(self.shape.m, 64), replace=False)
        ok, error, _ = checks.check(ours[rows], 1.0, problem.op_a[rows], problem.op_b, 0.0, None,
                                    problem.dtype)  # fmt: skip
        if self.precision == "tf32":  # operands rounded to TF32: that mode's own bound
            exact, scale = checks.float64_reference(1.0, problem.op_a[rows], problem.op_b, 0.0,
                                                    None)  # fmt: skip
            error = checks.scaled_error(ours[rows], exact, scale)
            ok = error <= checks.tf32_tolerance(self.shape.k)
        vs_cublas = math.nan
        if reference.status()[0]:
            problem.poison_c()
            reference.gemm(problem.form, problem.dtype, 1.0, 0.0)
            theirs = problem.c()
            vs_cublas = float(np.abs(ours - theirs).max() / (np.abs(theirs).max() + 1e-300))
        return (error if ok else math.inf), vs_cublas
