"""Kernel families vs cuBLAS (scikit-cuda) on device operands: CUDA-event medians, TFLOP/s.

Usage: python benchmarks/bench_kernels.py [--dtype float32 float64] [--sweep N] [--out DIR]
Each row times every family's default config (and, with --sweep N, N more configs from
its space, keeping the fastest) and cuBLAS on the same operands in the same process.

    python benchmarks/bench_kernels.py --stream-k [--out DIR]

times instead the simt default config against itself with STREAM_K = 1, 2 (issue 15, item 1:
shapes whose tiles fill the SMs badly) and cuBLAS, into bench_stream_k.json.

    python benchmarks/bench_kernels.py --advance [--out DIR]

times the simt config the table picks for own kernels (TUNEDGEMM_CUBLAS=0; the family default
where it picks another family) with ADVANCE = 0 and 1 (issue 15, item 3: the k-tile copies'
addressing), on squares and odd shapes, into bench_advance.json.

    python benchmarks/bench_kernels.py --roll [--out DIR]

times the same configs unrolled (ADVANCE 0 and 1) and with the BK loop rolled (ADVANCE=1,
ROLL_K in simt.ROLL_K_ON: a main loop that fits the instruction cache), into bench_roll.json.

    python benchmarks/bench_kernels.py --dmma [--out DIR]
    python benchmarks/bench_kernels.py --dmma-advance [--out DIR]

times the dmma config the table picks for own kernels at large float64 squares against the
tile shape of cuBLAS's DGEMM kernel (128 x 64, four warps, two blocks per SM) in our kernel,
outside the family's space, with each mma shape, into bench_dmma_tiles.json; --dmma-advance
times the best of those with ADVANCE 0 and 1 (dmma's k-tile copies from cursors set up once
per block), into bench_dmma_advance.json; --dmma-large the dmma default and cuBLAS's
arrangement with ADVANCE=1 and their neighbours at 8192^3 and 4096^3, into
bench_dmma_large.json; --dmma-tail the dmma default, a 128 x 64 MMA_K=8 tile and cuBLAS's
arrangement with and without stream-K at 8192^3, 4096^3 and 3000^3 (the last wave of
tiles), into bench_dmma_tail.json; --dmma-steady the dmma default, cuBLAS's arrangement and
the small-k swap tile with and without STEADY_LOOP (k-tiles wholly inside both operands in a
branch-free loop of their own), into bench_dmma_steady.json; --simt-steady the simt config
the table picks for own kernels at float32 squares and near ties, with its loop twin, with
and without STEADY_LOOP (the same for simt), into bench_simt_steady.json; --simt-loop the
same configs' steady loop with its cp.async copies after each of several k-steps
(COPY_STEP), also at BK 8 and 32, at those shapes and skinny ones, into bench_simt_loop.json;
--simt-shift the table's simt configs with blocks on C's edge in the steady loop (SHIFT_EDGE
and CLAMP_EDGE), without, and with the shift alone, at shapes with edges, into
bench_simt_shift.json, and autotuning's configs at four of them into
bench_simt_shift_refined.json; --dmma-shift the same switches in the table's dmma configs
with the cursors (ADVANCE=1), at float64 shapes with edges, into bench_dmma_shift.json, and in
the family default with the cursors at squares, into bench_dmma_shift_default.json;
--simt-clamp and --dmma-clamp the table's configs with those variants, and with the clamp's
first forms (every clamped lane copying the tile's first vector, CLAMP_SPREAD=0; simt's
operands along m or n clamped where they could shift, SHIFT_FIRST=0), at shapes that clamp,
into bench_simt_clamp.json and bench_dmma_clamp.json; --old-first both families' table configs
(simt's loop twin, dmma's with the cursors) with the epilogue's old values of C loaded a group
at a time before the stores (OLD_FIRST=1) and in turn, at beta 0 and 1 (C read), into
bench_{simt,dmma}_old_first-betaB.json.
--beta B times every other mode's calls at that beta.

    python benchmarks/bench_kernels.py --fma-order [--out DIR]

times the same configs with each k-step's fmas in serpentine order (FMA_ORDER in
simt.FMA_ORDER_ON) against row by row, with ADVANCE 0 and 1 and with ADVANCE=1 in a 4-deep
ring (the best of --around at 4096^3), into bench_fma_order.json.

    python benchmarks/bench_kernels.py --reg-transpose [--out DIR]

times, on TN operands (both k-major), the simt config the table picks for own kernels at
TN shapes against its loop twin and its TN twin (simt.LAYOUT_TWINS: both operands through
registers, REG_TRANSPOSE=1), and NN's config at the shape with both twins, into
bench_reg_transpose-MxNxK.json.
"""

from __future__ import annotations

import argparse
import datetime
import functools
import itertools
import json
import math
import os
import random
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

SQUARES = [(s, s, s) for s in (1024, 2048, 4096, 8192)]
IRREGULAR = [(8192, 8192, 128), (16384, 64, 16384), (64, 16384, 16384), (4096, 4096, 256),
             (1000, 1000, 1000), (3000, 3000, 3000)]  # fmt: skip


# Tile counts (128 x 128) that fill 132 SMs badly: 24, 47, 189, 4 (short k), 1056 (8 waves).
WAVE_SHAPES = [(3072, 96, 3072), (96, 6000, 2000), (777, 3333, 1555), (256, 256, 8192),
               (1000, 1000, 1000), (4096, 4096, 512), (3000, 3000, 3000)]  # fmt: skip


def tflops(m: int, n: int, k: int, ms: float) -> float:
    return 2.0 * m * n * k / ms / 1e9


def candidates(dtype: str, shape: tuple[int, int, int], sweep: int) -> list[Any]:
    """The tuning table's own-kernel choice for this shape, every family's default config,
    and `sweep` random configs of each family's space."""
    from tunedgemm import selection, table
    from tunedgemm.families import serving
    from tunedgemm.params import IEEE

    os.environ[selection.CUBLAS_ENV] = "0"  # the table's best own kernel, not cuBLAS
    tuned = selection.choose(dtype, *shape, warn=False).config
    del os.environ[selection.CUBLAS_ENV]
    picked = [] if tuned == table.CUBLAS else [tuned]
    for family in serving(dtype):  # IEEE arithmetic only, as cuBLAS SGEMM / DGEMM
        default = family.default_config(dtype)
        rest = [c for c in family.space(dtype, IEEE) if c != default]
        picked += [default, *random.Random(0).sample(rest, min(sweep, len(rest)))]
    return list(dict.fromkeys(picked))


def time_shape(shape: tuple[int, int, int], dtype: str, sweep: int) -> dict[str, Any]:
    """Fastest of our candidates and cuBLAS on the same fresh operands."""
    from tunedgemm import gpu_backend, reference
    from tunedgemm.timing import gpu_median_ms
    from tunedgemm.tuning import problems

    m, n, k = shape
    problem = problems.make(m, n, k, dtype)
    best_ms, best_config = math.inf, None
    for config in candidates(dtype, shape, sweep):
        try:
            ms = gpu_median_ms(
                lambda c=config: gpu_backend.run(problem.form, problem.dtype, 1.0, 0.0, c),
                warmup=2, reps=7,
            )  # fmt: skip
        except Exception as exc:  # a config that fails costs infinity, and is logged
            print(f"  {config}: failed ({type(exc).__name__}: {exc})", file=sys.stderr)
            ms = math.inf
        if ms < best_ms:
            best_ms, best_config = ms, config
    cublas_ms = math.nan
    if reference.status()[0]:
        cublas_ms = gpu_median_ms(
            lambda: reference.gemm(problem.form, problem.dtype, 1.0, 0.0), warmup=2, reps=7
        )
    ours, theirs = tflops(m, n, k, best_ms), tflops(m, n, k, cublas_ms)
    return {"dtype": dtype, "m": m, "n": n, "k": k, "config": str(best_config), "ms": best_ms,
            "cublas_ms": cublas_ms, "tflops": ours, "cublas_tflops": theirs,
            "ratio": ours / theirs, "with_cublas_ratio": max(ours, theirs) / theirs}  # fmt: skip


ADVANCE_SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192), (3000, 3000, 3000),
                  (1024, 1024, 1024), (777, 3333, 1555)]  # fmt: skip


def one_tunable(name: str, values: tuple[int, ...]) -> dict[str, dict[str, int]]:
    """Variants setting one tunable, labelled as the rows record them ("advance1")."""
    return {f"{name.lower()}{v}": {name: v} for v in values}


def roll_variants() -> dict[str, dict[str, int]]:
    """ADVANCE 0 and 1 unrolled (the measured pair), then ADVANCE=1 with each ROLL_K_ON."""
    from tunedgemm.families import simt

    pairs = [(0, 0), (1, 0), *((1, r) for r in simt.ROLL_K_ON)]
    return {f"advance{a}_roll_k{r}": {"ADVANCE": a, "ROLL_K": r} for a, r in pairs}


def fma_order_variants() -> dict[str, dict[str, int]]:
    """Each FMA_ORDER (0 and simt.FMA_ORDER_ON) with ADVANCE 0, 1, and ADVANCE=1 in 4 stages."""
    from tunedgemm.families import simt

    bases = {"advance0": {"ADVANCE": 0}, "advance1": {"ADVANCE": 1},
             "advance1_stages4": {"ADVANCE": 1, "STAGES": 4}}  # fmt: skip
    return {f"{label}_order{order}": {**changes, "FMA_ORDER": order}
            for label, changes in bases.items() for order in (0, *simt.FMA_ORDER_ON)}


AROUND_SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192)]
# Tunables --around leaves alone: ADVANCE is set, and the schedules (split-K, stream-K) and
# the rolled loop are measured by their own options.
AROUND_FIXED = ("ADVANCE", "EARLY_BARRIER", "FMA_ORDER", "MAXNREG", "ROLL_K", "SPLIT_K",
                "STREAM_K")  # fmt: skip


def _values(family: Any, name: str) -> tuple[int, ...]:
    return next(t.values for t in family.tunables if t.name == name)


def around_variants(base: dict[str, int]) -> dict[str, dict[str, int]]:
    """The base config with ADVANCE 0 and 1, then with ADVANCE=1 and EARLY_BARRIER 0 and 1:
    the base, each one-tunable neighbour and each pair of k-tile depth and ring depth
    (cuBLAS's FFMA kernel at 4096^3: BK=8 in 3 stages)."""
    from tunedgemm.families import FAMILIES

    simt = FAMILIES["simt"]
    changes: dict[str, dict[str, int]] = {"": {}}
    for tunable in simt.tunables:
        if tunable.name not in AROUND_FIXED:
            for value in tunable.values:
                if value != base[tunable.name]:
                    changes[f"{tunable.name}={value}"] = {tunable.name: value}
    for bk, stages in itertools.product(*(_values(simt, n) for n in ("BK", "STAGES"))):
        if bk != base["BK"] and stages != base["STAGES"]:
            changes[f"BK={bk},STAGES={stages}"] = {"BK": bk, "STAGES": stages}
    variants = {"advance0": {"ADVANCE": 0}}
    for early in (0, 1):
        for label, change in changes.items():
            name = ",".join(x for x in (label, "early" if early else "") if x) or "advance1"
            variants[name] = {"ADVANCE": 1, "EARLY_BARRIER": early, **change}
    # Register caps (ptxas schedules by them) on the base and the ring depths, both barriers.
    from tunedgemm.families.simt import MAXNREG_ON

    for cap, early, stages in itertools.product(MAXNREG_ON, (0, 1), _values(simt, "STAGES")):
        name = ",".join(x for x in (f"STAGES={stages}" if stages != base["STAGES"] else "",
                                    "early" if early else "", f"maxnreg={cap}") if x)  # fmt: skip
        variants[name] = {"ADVANCE": 1, "EARLY_BARRIER": early, "STAGES": stages,
                          "MAXNREG": cap}  # fmt: skip
    return variants


# variants_row's `outside` for variants that add development switches (defines outside the
# family's tunables, as STEADY_LOOP) to configs that must otherwise hold its constraints.
SWITCHES = "switches"
# Rounds of variants_row's timing (--rounds): float64 runs at the 700 W cap on the H200, where
# the clock drifts with the heat of the kernels before (2026-11-29: two rounds in one order
# put 4-12% between variants whose steady loops are the same length at shapes without edges).
ROUNDS = 2
# beta of every timed call (--beta), ours and cuBLAS's: != 0 reads C (drawn, not NaN) too.
BETA = 0.0


def _ruled_out(config: Any, dtype: str, outside: bool | str) -> tuple[list[str], bool]:
    """What of its family's rules the config breaks, and whether variants_row runs it anyway:
    with `outside`; with outside=SWITCHES only where the config without the switches (which
    the family's check stops at) breaks none."""
    from tunedgemm.families import FAMILIES
    from tunedgemm.params import KernelConfig

    family = FAMILIES[config.family]
    ruled_out = family.violations(config, dtype)
    if outside != SWITCHES:
        return ruled_out, bool(outside)
    names = {t.name for t in family.tunables}
    bare = KernelConfig.make(config.family, {k: v for k, v in config.as_dict().items()
                                             if k in names})  # fmt: skip
    return ruled_out, not family.violations(bare, dtype)


def variants_row(shape: tuple[int, int, int], base: dict[str, int],
                 variants: dict[str, dict[str, int]], family: str = "simt",
                 dtype: str = "float32", outside: bool | str = False,
                 trans: tuple[bool, bool] = (False, False)) -> dict[str, Any]:  # fmt: skip
    """A simt config with each variant's changes (their workspaces allocated once, outside
    the timing, as a plan keeps one) and cuBLAS, CUDA-event medians on the same operands, all
    timed ROUNDS times in turn, every other round in reverse order (the least median kept), so
    that clocks drift alike and no variant always follows the same one. A variant the
    family's constraints rule out for this config is not run (NaN, its reasons recorded),
    unless `outside` (a config named outside the space on purpose: it runs, the reasons still
    recorded); outside=SWITCHES overlooks only the development switches' defines."""
    from tunedgemm import cuda, gpu_backend, launch, reference
    from tunedgemm.params import KernelConfig
    from tunedgemm.timing import gpu_median_ms
    from tunedgemm.tuning import problems

    m, n, k = shape
    problem = problems.make(m, n, k, dtype, *trans, padded=True)
    if BETA != 0:
        import numpy as np

        problem.set_c(np.random.default_rng().uniform(-1, 1, (m, n)))
    row: dict[str, Any] = {"m": m, "n": n, "k": k, "trans": "".join("NT"[t] for t in trans),
                           "config": base, "beta": BETA}  # fmt: skip
    runs: list[tuple[str, Callable[[], Any]]] = []
    held = []  # the workspaces, alive until the timing is done
    for label, changes in variants.items():
        config = KernelConfig.make(family, {**base, **changes})
        row[f"{label}_ms"] = math.nan
        ruled_out, runs_anyway = _ruled_out(config, dtype, outside)
        if ruled_out:
            row[f"{label}_ruled_out"] = ruled_out
            if not runs_anyway:
                continue
        nbytes = launch.workspace_bytes(config, problem.dtype, problem.form)
        held.append(cuda.allocate(nbytes) if nbytes else None)
        runs.append((label, functools.partial(
            gpu_backend.run, problem.form, problem.dtype, 1.0, BETA, config,
            workspace=int(held[-1] or 0))))  # fmt: skip
        row[f"{label}_workspace_bytes"] = nbytes
    for label, _ in runs:
        row[f"{label}_ms"] = math.inf
    for turn in range(ROUNDS):
        for label, work in runs[::-1] if turn % 2 else runs:
            row[f"{label}_ms"] = min(gpu_median_ms(work, warmup=3, reps=15), row[f"{label}_ms"])
    row["cublas_ms"] = math.nan
    if reference.status()[0]:
        row["cublas_ms"] = gpu_median_ms(lambda: reference.gemm(
            problem.form, problem.dtype, 1.0, BETA), warmup=3, reps=15)  # fmt: skip
    return row


DMMA_SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192), (2048, 2048, 2048), (3000, 3000, 3000)]
# cuBLAS's DGEMM kernel at 4096^3 on the H100 (Nsight Compute, 2026-11-26 10:50 UTC):
# sm90_xmma_gemm_f64f64_..._tilesize128x64x16_stage3_warpsize2x2x1_tensor16x8x8, 128 threads,
# 246 registers, two blocks per SM; our table's 128 x 128 block of 256 threads runs one.
CUBLAS_DGEMM_TILE = {"BM": 128, "BN": 64, "WM": 64, "WN": 32, "BK": 16, "STAGES": 3,
                     "MIN_BLOCKS": 2}  # fmt: skip


def dmma_variants() -> dict[str, dict[str, int]]:
    """The table's dmma config, then cuBLAS's tile in our kernel (outside dmma's space: its
    register and copy estimates rule it out, though ptxas compiles it without spills at
    MMA_K=4 in every variant) with each mma shape and a few neighbours."""
    tile = CUBLAS_DGEMM_TILE
    return {"table": {}, "table,k8": {"MMA_K": 8},
            **{f"tile128x64,k{k}": {**tile, "MMA_K": k} for k in (4, 8, 16)},
            "tile128x64,k4,group1": {**tile, "MMA_K": 4, "GROUP_M": 1},
            "tile64x128,k4": {**tile, "BM": 64, "BN": 128, "WM": 32, "WN": 64, "MMA_K": 4}}


def dmma_advance_variants() -> dict[str, dict[str, int]]:
    """dmma_variants' best, each with ADVANCE 0 and 1 (k-tile copies from cursors set up once)."""
    tile = CUBLAS_DGEMM_TILE
    bases = {"table": {}, "table,k8": {"MMA_K": 8}, "tile128x64,k4": {**tile, "MMA_K": 4},
             "tile128x64,k8": {**tile, "MMA_K": 8}}  # fmt: skip
    return {f"{name},a{advance}": {**changes, "ADVANCE": advance}
            for name, changes in bases.items() for advance in (0, 1)}  # fmt: skip


# With ADVANCE=1 at 8192^3 (issue 15's DGEMM floor, 0.95): the dmma default (128 x 128, one
# block per SM) with a deeper ring, a deeper k-tile or wider rasterisation groups, and
# cuBLAS's arrangement (two blocks per SM: no room for a deeper ring) with wider groups or the
# k8 mma.
DMMA_LARGE_SHAPES = [(8192, 8192, 8192), (4096, 4096, 4096)]


def dmma_large_variants() -> dict[str, dict[str, int]]:
    """The dmma default and cuBLAS's arrangement with ADVANCE=1, and neighbours of each."""
    from tunedgemm.families import FAMILIES, dmma

    default = {**FAMILIES["dmma"].default_config("float64").as_dict(), "ADVANCE": 1}
    two = {**default, **dmma.TWO_BLOCKS}
    return {"d": default, "d,s4": {**default, "STAGES": 4}, "d,bk32": {**default, "BK": 32},
            "d,g16": {**default, "GROUP_M": 16}, "two": two,
            "two,g16": {**two, "GROUP_M": 16}, "two,k8": {**two, "MMA_K": 8},
            "d,k8": {**default, "MMA_K": 8}, "d,k8,s4": {**default, "MMA_K": 8, "STAGES": 4},
            "two,s4": {**two, "STAGES": 4}, "two,bk32": {**two, "BK": 32}}  # fmt: skip


# The DGEMM squares' last wave (issue 15's 0.95 floor at 8192^3): 128 x 128 tiles are 4096
# blocks at 8192^3, 31 waves of 132 and 4 blocks more (1024 at 4096^3: 7.76 waves), so the
# last wave idles most SMs. dmma's stream-K (data-parallel waves, then the last wave and a
# half shared out by k-tiles) against the same tiles unsplit; the default tile, the
# 128 x 64 MMA_K=8 one autotuning times there, and cuBLAS's arrangement, all with ADVANCE=1.
DMMA_TAIL_SHAPES = [(8192, 8192, 8192), (4096, 4096, 4096), (3000, 3000, 3000)]


def dmma_tail_variants() -> dict[str, dict[str, int]]:
    """Those tiles with and without stream-K at the blocks an SM each holds."""
    from tunedgemm.families import dmma

    mid = {"BN": 64, "WM": 32, "WN": 32, "MMA_K": 8}
    two = dmma.TWO_BLOCKS
    sk = {**dmma.STREAM_K_CHANGES, "STREAM_K": 1}
    return {"d": {}, "d,sk": sk, "k8": mid, "k8,sk": {**mid, **sk}, "two": two,
            "two,sk": {**two, **sk, "STREAM_K": 2}}  # fmt: skip


# dmma's steady-state loop (STEADY_LOOP, kernels/dgemm_mma.cu): Nsight Compute at 8192^3
# (H200, 2026-11-28) put 11-16% of our loops' stall samples on scoreboard waits around the
# k-tile copies' own block (a branch between the whole and edge copies kept ptxas from
# spreading them among the mma) and on the barrier, against under 4% of cuBLAS's. Each tiling
# with and without it, with ADVANCE=1, at the squares and at float64 table shapes that cuBLAS
# held narrowly.
DMMA_STEADY_SHAPES = [(8192, 8192, 8192), (4096, 4096, 4096), (2048, 2048, 2048),
                      (3072, 8192, 1024), (16384, 4096, 512), (8192, 3072, 384),
                      (3072, 3072, 8192)]  # fmt: skip


def dmma_steady_variants() -> dict[str, dict[str, int]]:
    """The dmma default, cuBLAS's arrangement (each at MMA_K 4 and 8) and the small-k swap
    tile, each with STEADY_LOOP 0 and 1; the MMA_K=8 ones also with ROW_RELOAD=1."""
    from tunedgemm.families import FAMILIES, dmma

    default = {**FAMILIES["dmma"].default_config("float64").as_dict(), "ADVANCE": 1}
    bases = {"d": default, "d,k8": {**default, "MMA_K": 8},
             "two": {**default, **dmma.TWO_BLOCKS},
             "two,k8": {**default, **dmma.TWO_BLOCKS, "MMA_K": 8},
             "swap": {**default, **dmma.SMALL_K_TILES[1], "GROUP_M": 8}}  # fmt: skip
    variants = {f"{name},s{steady}": {**base, "STEADY_LOOP": steady}
                for name, base in bases.items() for steady in (0, 1)}  # fmt: skip
    for name in ("d,k8", "two,k8", "swap"):
        variants[f"{name},s1,rr"] = {**bases[name], "STEADY_LOOP": 1, "ROW_RELOAD": 1}
    return variants


# simt's steady-state loop (STEADY_LOOP, kernels/sgemm_simt.cu): in the 4096^3 NN config's
# SASS (nvcc 13.0) a k-tile of the general loop is 2,296 instructions with 15 branches, 89.2%
# FFMA; of the steady loop 2,198 with one, 93.2%. Squares, and float32 table entries that
# cuBLAS held within 2% (tuned.json of 2026-11-28).
SIMT_STEADY_SHAPES = [(8192, 8192, 8192), (4096, 4096, 4096), (2048, 2048, 2048),
                      (3072, 8192, 3072), (512, 16384, 4096), (16384, 4096, 512),
                      (4096, 4096, 512), (1000, 1000, 1000)]  # fmt: skip


def simt_steady_variants() -> dict[str, dict[str, int]]:
    """The loop twin with STEADY_LOOP 0 and 1."""
    from tunedgemm.families import simt

    return {f"twin,s{steady}": {**simt.LOOP_TWIN, "STEADY_LOOP": steady} for steady in (0, 1)}


# Where simt's steady loop issues its cp.async copies (COPY_STEP, kernels/sgemm_simt.cu): right
# after the barrier, Nsight Compute found the 4096^3 kernel's warps throttled on the shared
# pipe at each k-tile's top (4 LDGSTS, LDGDEPBAR and 4 LDS.128 back to back; H200,
# 2026-11-28). The squares and near ties above, and float32 shapes with a partial row or
# column of tiles where bench_tuning's own kernels lost most (H200, 2026-11-28, 0.81-0.89x
# cuBLAS). (EDGE_STEADY, blocks on C's edge in a steady loop of their own with the cursors'
# edge sizes, was timed here too, at b493948: docs/tuning.md.)
SIMT_LOOP_SHAPES = [*SIMT_STEADY_SHAPES, (183, 1144, 6161), (199, 2809, 136), (38, 14126, 119),
                    (7479, 182, 146), (10472, 48, 11679)]  # fmt: skip


def simt_loop_variants() -> dict[str, dict[str, int]]:
    """The loop twin's steady loop with its copies before k-step 0, 2, 4 (BK / 4, the default
    for the table's BK=16) and 8, and with BK 8 and 32 before k-step 0 and BK / 4."""
    from tunedgemm.families import simt

    steady = {**simt.LOOP_TWIN, "STEADY_LOOP": 1}
    variants = {f"c{step}": {**steady, "COPY_STEP": step} for step in (0, 2, 4, 8)}
    variants |= {f"bk{bk},c{step}": {**steady, "BK": bk, "COPY_STEP": step}
                 for bk in (8, 32) for step in (0, bk // 4)}  # fmt: skip
    return variants


# simt's blocks on C's edge in the steady loop (SHIFT_EDGE: the last, partial row or column of
# tiles moved back to end at m or n; CLAMP_EDGE: copies along m or n past the edge clamped):
# float32 NN shapes where bench_tuning's own kernels lost to cuBLAS on the H200 (2026-11-29
# 00:47 UTC, 0.85-0.97x), skinny ones, and shapes with no edge (4096^3, 8192x8192x512: the
# same loop, the edge code around it).
SIMT_SHIFT_SHAPES = [(100, 4040, 13655), (157, 2337, 13040), (399, 1389, 7702),
                     (942, 2769, 1402), (809, 9893, 246), (10620, 236, 656), (9284, 223, 171),
                     (5144, 257, 2391), (3800, 2466, 288), (183, 1144, 6161), (199, 2809, 136),
                     (7479, 182, 146), (10472, 48, 11679), (1000, 1000, 1000),
                     (4096, 4096, 4096), (8192, 8192, 512)]  # fmt: skip


# Where autotuning (bench_tuning's refine, 00:47 UTC) kept another own config than the table's
# pick at those shapes, that config too (the public call ran it), into
# bench_simt_shift_refined.json.
SIMT_SHIFT_REFINED = {
    (100, 4040, 13655): {"BM": 128, "BN": 64, "BK": 16, "WM": 32, "WN": 64, "TM": 8, "TN": 8,
                         "STAGES": 3, "GROUP_M": 8, "MIN_BLOCKS": 2, "SPLIT_K": 4},
    (157, 2337, 13040): {"BM": 32, "BN": 128, "BK": 16, "WM": 32, "WN": 64, "TM": 8, "TN": 8,
                         "STAGES": 3, "GROUP_M": 8, "MIN_BLOCKS": 4, "SPLIT_K": 16},
    (399, 1389, 7702): {"BM": 64, "BN": 128, "BK": 16, "WM": 32, "WN": 64, "TM": 8, "TN": 8,
                        "STAGES": 4, "GROUP_M": 1, "MIN_BLOCKS": 1, "SPLIT_K": 8},
    (313, 10706, 10638): {"BM": 64, "BN": 128, "BK": 16, "WM": 32, "WN": 64, "TM": 8, "TN": 8,
                          "STAGES": 3, "GROUP_M": 16, "MIN_BLOCKS": 1, "STREAM_K": 2},
}  # fmt: skip


def simt_refined_config(shape: tuple[int, int, int]) -> dict[str, int]:
    """The table's simt config at the shape with SIMT_SHIFT_REFINED's tiling over it, and its
    loop (ADVANCE=1, FMA_ORDER=1, as all of them)."""
    return {**table_simt_config(shape), **SIMT_SHIFT_REFINED[shape], "ADVANCE": 1, "FMA_ORDER": 1}


def edge_variants() -> dict[str, dict[str, int]]:
    """A config with SHIFT_EDGE and CLAMP_EDGE (the defaults), with neither, and with the shift
    alone (simt's and dmma's switches alike)."""
    return {"edges": {}, "neither": {"SHIFT_EDGE": 0, "CLAMP_EDGE": 0},
            "shift": {"CLAMP_EDGE": 0}}  # fmt: skip


def clamp_variants(family: str) -> dict[str, dict[str, int]]:
    """edge_variants, and the other source of a clamped lane's copy (CLAMP_SPREAD: 0 the
    tile's first vector, dmma's first form; 1 its position modulo the tile's whole vectors
    inside m or n, simt's first try); for simt also the operands along m or n clamped wherever
    they could shift (SHIFT_FIRST=0), its first form."""
    variants = {**edge_variants(), "spread": {"CLAMP_SPREAD": int(family == "simt")}}
    if family == "simt":
        variants["clamp-always"] = {"SHIFT_FIRST": 0}
    return variants


# Where the clamp (CLAMP_EDGE) lost to the general loop on the H200 (2026-11-29: float64
# 65x8247x249 0.67 against 0.85, float32 809x9893x246 0.85 against 0.90, 10620x236x656 0.94
# against 1.00 with the shift alone), other skinny shapes that clamp (m below a tile or odd),
# and shapes with no edge or that shift alone.
SIMT_CLAMP_SHAPES = [(809, 9893, 246), (7479, 182, 146), (10620, 236, 656), (9284, 223, 171),
                     (183, 1144, 6161), (100, 4040, 13655), (65, 8247, 249), (74, 470, 3895),
                     (1000, 1000, 1000), (4096, 4096, 4096)]  # fmt: skip
DMMA_CLAMP_SHAPES = [(65, 8247, 249), (55, 1812, 310), (88, 1953, 252), (74, 470, 3895),
                     (99, 354, 8494), (1217, 34, 9376), (998, 911, 12892), (1389, 202, 1663),
                     (52, 6397, 1668), (1000, 1000, 1000), (4096, 4096, 4096)]  # fmt: skip


# dmma's blocks on C's edge in the steady loop (the same switches in kernels/dgemm_mma.cu):
# float64 NN shapes where bench_tuning's own kernels lost to cuBLAS or came closest on the H200
# (2026-11-28/29, 0.70-0.98x), skinny ones with long k, and shapes with no edge (4096^3,
# 8192x8192x512, 8192^3).
DMMA_SHIFT_SHAPES = [(998, 911, 12892), (342, 8090, 2562), (52, 6397, 1668), (1389, 202, 1663),
                     (1626, 342, 9572), (1952, 307, 6314), (8016, 268, 3704),
                     (4626, 3526, 3259), (1134, 2542, 145), (10474, 159, 1084),
                     (1000, 1000, 1000), (65, 8247, 249), (4096, 4096, 4096),
                     (8192, 8192, 512), (8192, 8192, 8192)]  # fmt: skip


# Where the epilogue weighs: small k (C's loads and stores against a short main loop), and
# shapes where the main loop does (OLD_FIRST in both kernels: at beta != 0 the old values of a
# group of columns loaded before any is stored; H200, 2026-11-29: the direct dmma epilogue ran
# 0.62-0.77x cuBLAS at beta 1 at these small-k shapes, 0.86-0.93 staged).
OLD_FIRST_SHAPES = [(12902, 2832, 54), (12902, 2832, 1), (8192, 8192, 128), (4096, 4096, 64),
                    (800, 4595, 208), (4096, 4096, 512), (1000, 1000, 1000),
                    (4096, 4096, 4096)]  # fmt: skip


def old_first_variants() -> dict[str, dict[str, int]]:
    """The epilogue with C's old values loaded first (the default) and in turn."""
    return {"old-first": {}, "in-turn": {"OLD_FIRST": 0}}


DMMA_SHIFT_SQUARES = [(4096, 4096, 4096), (8192, 8192, 8192), (2048, 2048, 2048),
                      (3000, 3000, 3000)]  # fmt: skip


def table_dmma_steady_config(shape: tuple[int, int, int]) -> dict[str, int]:
    """The table's dmma config at this float64 NN shape with the cursors (ADVANCE=1, the twin
    autotuning times beside it), whose aligned kernel runs the steady loop."""
    return {**table_dmma_config(shape), "ADVANCE": 1}


def table_own_config(family: str, dtype: str, shape: tuple[int, int, int],
                     trans: tuple[bool, bool] = (False, False)) -> dict[str, int]:  # fmt: skip
    """The config of `family` the table picks for own kernels at this shape (NN unless
    `trans` says), else the family's default (where the table picks another family)."""
    from tunedgemm import selection
    from tunedgemm.families import FAMILIES

    os.environ["TUNEDGEMM_CUBLAS"] = "0"
    selection.forget()
    chosen = selection.choose(dtype, *shape, *trans, warn=False).config
    if not isinstance(chosen, str) and chosen.family == family:
        return dict(chosen.as_dict())
    return dict(FAMILIES[family].default_config(dtype).as_dict())


def table_simt_config(shape: tuple[int, int, int]) -> dict[str, int]:
    """The simt config the table picks for own kernels at this float32 NN shape."""
    return table_own_config("simt", "float32", shape)


def table_simt_tn_config(shape: tuple[int, int, int]) -> dict[str, int]:
    """The simt config the table picks for own kernels at this float32 TN shape."""
    return table_own_config("simt", "float32", shape, (True, False))


# TN shapes where the shipped table's own configs lost most to cuBLAS (0.65-0.83x; tuned.json
# of 2026-11-27), and squares.
TN_SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192), (2048, 2048, 2048), (1024, 1024, 1024),
             (4096, 512, 4096), (4096, 64, 16384), (64, 4096, 16384), (512, 512, 16384)]


def reg_transpose_variants(shape: tuple[int, int, int]) -> dict[str, dict[str, int]]:
    """The table's TN config, its loop twin and its TN twin (both operands through
    registers); then NN's config at the shape (tuned where only B went through registers)
    with the same two twins."""
    from tunedgemm.families import simt

    nn, tn_twin = table_simt_config(shape), simt.LAYOUT_TWINS[(True, False)][0]
    return {"table": {}, "loop_twin": simt.LOOP_TWIN, "tn_twin": tn_twin,
            "nn_config_loop_twin": {**nn, **simt.LOOP_TWIN},
            "nn_config_tn_twin": {**nn, **tn_twin}}  # fmt: skip


def table_dmma_config(shape: tuple[int, int, int]) -> dict[str, int]:
    """The dmma config the table picks for own kernels at this float64 NN shape."""
    return table_own_config("dmma", "float64", shape)


def variants_main(out: Path, variants: dict[str, dict[str, int]], shapes: list[Any],
                  base: Any, filename: str, family: str = "simt", dtype: str = "float32",
                  outside: bool | str = False,
                  trans: tuple[bool, bool] = (False, False)) -> list[dict[str, Any]]:  # fmt: skip
    """Print and write (out/filename) variants_row for each shape; base(shape): the config."""
    from tunedgemm import cuda, reference

    device = cuda.device().name()
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    print(f"# {device}, {cuda.sm_count()} SMs, {stamp}, {reference.status()[1]}")
    print("# ms (CUDA-event medians); ratio = cuBLAS ms / ours; nan: ruled out for the config")
    names = {label: ",".join(f"{k}={v}" for k, v in changes.items()) or label
             for label, changes in variants.items()}  # fmt: skip
    width = {label: max(11, len(name)) for label, name in names.items()}
    print(f"{'m x n x k':>18} " + " ".join(f"{names[x]:>{width[x]}} {'ratio':>6}" for x in names) +
          f" {'cuBLAS':>9}")  # fmt: skip
    from tunedgemm.compiler import precompile
    from tunedgemm.params import KernelConfig

    # nvcc in parallel first (variants_row would compile them one at a time): aligned, as
    # problems.make(padded=True) lays the operands out.
    configs = {KernelConfig.make(family, {**base(shape), **changes})
               for shape in shapes for changes in variants.values()}  # fmt: skip
    checked = {c: _ruled_out(c, dtype, outside) for c in configs}
    precompile([c for c, (ruled_out, anyway) in checked.items() if anyway or not ruled_out],
               dtype, *trans, True, jobs=os.cpu_count() or 8)  # fmt: skip
    rows = []
    for shape in shapes:
        row = variants_row(shape, base(shape), variants, family, dtype, outside, trans)
        rows.append(row)
        cells = [(x, row[f"{x}_ms"], row["cublas_ms"] / row[f"{x}_ms"]) for x in variants]
        print(f"{'x'.join(map(str, shape)):>18} " +
              " ".join(f"{ms:{width[x]}.4f} {r:6.2f}" for x, ms, r in cells) +
              f" {row['cublas_ms']:9.4f}", flush=True)  # fmt: skip
    out.mkdir(parents=True, exist_ok=True)
    record = {"device": device, "sms": cuda.sm_count(), "date": stamp,
              "reference": reference.status()[1],
              "command": " ".join(["python", *sys.argv]), "rows": rows}  # fmt: skip
    (out / filename).write_text(json.dumps(record, indent=1))
    return rows


def geometric_mean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else math.nan


def main() -> int:
    global ROUNDS, BETA
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dtype", nargs="+", default=["float32", "float64"])
    parser.add_argument("--sweep", type=int, default=0, help="extra random configs per family")
    parser.add_argument("--shapes", default="all", choices=["all", "squares", "irregular"])
    parser.add_argument("--out", default="benchmarks/results")
    parser.add_argument("--rounds", type=int, default=ROUNDS,
                        help="timing rounds, every other one in reverse order")  # fmt: skip
    parser.add_argument("--stream-k", action="store_true",
                        help="simt STREAM_K 0/1/2 vs cuBLAS on wave-quantised shapes")  # fmt: skip
    parser.add_argument("--advance", action="store_true",
                        help="the table's simt config with ADVANCE 0/1 vs cuBLAS")  # fmt: skip
    parser.add_argument("--roll", action="store_true",
                        help="the table's simt config with ROLL_K 0/2/4 vs cuBLAS")  # fmt: skip
    parser.add_argument("--around", action="store_true",
                        help="the table's simt config and its neighbours vs cuBLAS")  # fmt: skip
    parser.add_argument("--dmma-large", action="store_true",
                        help="dmma with ADVANCE=1 and neighbours at 8192^3 and 4096^3")  # fmt: skip
    parser.add_argument("--dmma-tail", action="store_true",
                        help="dmma at large squares with and without stream-K")  # fmt: skip
    parser.add_argument("--dmma-advance", action="store_true",
                        help="those dmma configs with ADVANCE 0 and 1")  # fmt: skip
    parser.add_argument("--dmma-steady", action="store_true",
                        help="dmma tilings with and without the steady-state loop")  # fmt: skip
    parser.add_argument("--simt-steady", action="store_true",
                        help="table simt configs with and without the steady loop")  # fmt: skip
    parser.add_argument("--simt-loop", action="store_true",
                        help="where the steady loop issues its copies")  # fmt: skip
    parser.add_argument("--simt-shift", action="store_true",
                        help="edge blocks in the steady loop or not")  # fmt: skip
    parser.add_argument("--dmma-shift", action="store_true",
                        help="dmma edge blocks in the steady loop or not")  # fmt: skip
    parser.add_argument("--simt-clamp", action="store_true",
                        help="simt's clamp at C's edge, its two first forms")  # fmt: skip
    parser.add_argument("--dmma-clamp", action="store_true",
                        help="dmma's clamp at C's edge: spread or not")  # fmt: skip
    parser.add_argument("--old-first", action="store_true",
                        help="both families' epilogues, OLD_FIRST 1 and 0, beta 0 and 1")
    parser.add_argument("--beta", type=float, default=0.0,
                        help="beta of every timed call (!= 0: C is read)")  # fmt: skip
    parser.add_argument("--dmma", action="store_true",
                        help="the table's dmma config and cuBLAS's tile in our kernel")  # fmt: skip
    parser.add_argument("--fma-order", action="store_true",
                        help="the table's simt config with each FMA_ORDER vs cuBLAS")  # fmt: skip
    parser.add_argument("--reg-transpose", action="store_true",
                        help="TN: the table's simt config, its loop twin and TN twin")  # fmt: skip
    args = parser.parse_args()
    ROUNDS, BETA = args.rounds, args.beta

    from tunedgemm import cuda, reference

    ok, why = cuda.status()
    if not ok:
        print(f"bench_kernels: needs a GPU ({why})")
        return 1
    if args.around:
        for shape in AROUND_SHAPES:  # one file per shape: each has its own neighbours
            base = table_simt_config(shape)
            variants = around_variants(base)
            (row,) = variants_main(Path(args.out), variants, [shape], lambda s, b=base: b,
                                   f"bench_around-{shape[0]}.json")  # fmt: skip
            ranked = sorted(variants, key=lambda label: row[f"{label}_ms"])
            for label in ranked:  # fastest first, one per line
                ms = row[f"{label}_ms"]
                print(f"  {label:>14} {ms:9.4f} ms  cuBLAS / it {row['cublas_ms'] / ms:5.3f}")
        return 0
    if args.dmma_large:
        variants_main(Path(args.out), dmma_large_variants(), DMMA_LARGE_SHAPES,
                      table_dmma_config, "bench_dmma_large.json", "dmma", "float64",
                      outside=True)  # fmt: skip
        return 0
    if args.dmma_tail:
        from tunedgemm.families import FAMILIES

        base = {**FAMILIES["dmma"].default_config("float64").as_dict(), "ADVANCE": 1}
        variants_main(Path(args.out), dmma_tail_variants(), DMMA_TAIL_SHAPES,
                      lambda shape: base, "bench_dmma_tail.json", "dmma", "float64",
                      outside=True)  # fmt: skip
        return 0
    if args.dmma_steady:
        from tunedgemm.families import FAMILIES

        base = FAMILIES["dmma"].default_config("float64").as_dict()
        variants_main(Path(args.out), dmma_steady_variants(), DMMA_STEADY_SHAPES,
                      lambda shape: base, "bench_dmma_steady.json", "dmma", "float64",
                      outside=True)  # fmt: skip
        return 0
    if args.simt_steady:
        variants_main(Path(args.out), simt_steady_variants(), SIMT_STEADY_SHAPES,
                      table_simt_config, "bench_simt_steady.json", outside=True)  # fmt: skip
        return 0
    if args.simt_loop:
        variants_main(Path(args.out), simt_loop_variants(), SIMT_LOOP_SHAPES,
                      table_simt_config, "bench_simt_loop.json", outside=SWITCHES)  # fmt: skip
        return 0
    if args.simt_shift:
        variants_main(Path(args.out), edge_variants(), SIMT_SHIFT_SHAPES,
                      table_simt_config, "bench_simt_shift.json", outside=SWITCHES)  # fmt: skip
        variants_main(Path(args.out), edge_variants(), list(SIMT_SHIFT_REFINED),
                      simt_refined_config, "bench_simt_shift_refined.json",
                      outside=SWITCHES)  # fmt: skip
        return 0
    if args.dmma_shift:
        from tunedgemm.families import FAMILIES

        variants_main(Path(args.out), edge_variants(), DMMA_SHIFT_SHAPES,
                      table_dmma_steady_config, "bench_dmma_shift.json", "dmma", "float64",
                      outside=SWITCHES)  # fmt: skip
        # The family default with the cursors: what autotuning kept at the squares (H200).
        default = {**FAMILIES["dmma"].default_config("float64").as_dict(), "ADVANCE": 1}
        variants_main(Path(args.out), edge_variants(), DMMA_SHIFT_SQUARES,
                      lambda shape: default, "bench_dmma_shift_default.json", "dmma", "float64",
                      outside=SWITCHES)  # fmt: skip
        return 0
    if args.old_first:
        from tunedgemm.families import simt

        for beta in (0.0, 1.0):
            BETA = beta
            variants_main(Path(args.out), old_first_variants(), OLD_FIRST_SHAPES,
                          lambda shape: {**table_simt_config(shape), **simt.LOOP_TWIN},
                          f"bench_simt_old_first-beta{beta:g}.json", outside=SWITCHES)  # fmt: skip
            variants_main(Path(args.out), old_first_variants(), OLD_FIRST_SHAPES,
                          table_dmma_steady_config, f"bench_dmma_old_first-beta{beta:g}.json",
                          "dmma", "float64", outside=SWITCHES)  # fmt: skip
        return 0
    if args.simt_clamp:
        variants_main(Path(args.out), clamp_variants("simt"), SIMT_CLAMP_SHAPES,
                      table_simt_config, "bench_simt_clamp.json", outside=SWITCHES)  # fmt: skip
        return 0
    if args.dmma_clamp:
        variants_main(Path(args.out), clamp_variants("dmma"), DMMA_CLAMP_SHAPES,
                      table_dmma_steady_config, "bench_dmma_clamp.json", "dmma", "float64",
                      outside=SWITCHES)  # fmt: skip
        return 0
    if args.dmma_advance:
        variants_main(Path(args.out), dmma_advance_variants(), DMMA_SHAPES, table_dmma_config,
                      "bench_dmma_advance.json", "dmma", "float64", outside=True)  # fmt: skip
        return 0
    if args.dmma:
        variants_main(Path(args.out), dmma_variants(), DMMA_SHAPES, table_dmma_config,
                      "bench_dmma_tiles.json", "dmma", "float64", outside=True)  # fmt: skip
        return 0
    if args.reg_transpose:  # one file per shape: NN's config differs from shape to shape
        for shape in TN_SHAPES:
            variants_main(Path(args.out), reg_transpose_variants(shape), [shape],
                          table_simt_tn_config, f"bench_reg_transpose-{shape[0]}x{shape[1]}"
                          f"x{shape[2]}.json", trans=(True, False))  # fmt: skip
        return 0
    if args.fma_order:
        variants_main(Path(args.out), fma_order_variants(), ADVANCE_SHAPES, table_simt_config,
                      "bench_fma_order.json")  # fmt: skip
        return 0
    if args.stream_k or args.advance or args.roll:
        from tunedgemm.families import FAMILIES, simt

        if args.stream_k:
            default = FAMILIES["simt"].default_config("float32").as_dict()
            variants_main(Path(args.out), one_tunable("STREAM_K", (0, *simt.STREAM_K_ON)),
                          WAVE_SHAPES, lambda shape: default, "bench_stream_k.json")  # fmt: skip
        elif args.advance:
            variants_main(Path(args.out), one_tunable("ADVANCE", (0, *simt.ADVANCE_ON)),
                          ADVANCE_SHAPES, table_simt_config, "bench_advance.json")  # fmt: skip
        else:
            variants_main(Path(args.out), roll_variants(), ADVANCE_SHAPES, table_simt_config,
                          "bench_roll.json")  # fmt: skip
        return 0
    shapes = {"all": SQUARES + IRREGULAR, "squares": SQUARES, "irregular": IRREGULAR}
    device = cuda.device().name()
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    print(f"# {device}, {stamp}, {reference.status()[1]}")
    print(f"{'dtype':8} {'m x n x k':>18} {'best config':>60} {'ours TF':>8} {'cuBLAS TF':>9} "
          f"{'ratio':>6}")  # fmt: skip
    rows = []
    for dtype in args.dtype:
        for shape in shapes[args.shapes]:
            row = time_shape(shape, dtype, args.sweep)
            rows.append(row)
            print(f"{dtype:8} {'x'.join(map(str, shape)):>18} {row['config']:>60.60} "
                  f"{row['tflops']:8.1f} {row['cublas_tflops']:9.1f} {row['ratio']:6.2f}",
                  flush=True)  # fmt: skip
    for dtype in args.dtype:
        ratios = [r["ratio"] for r in rows if r["dtype"] == dtype
                  and (r["m"], r["n"], r["k"]) in IRREGULAR]  # fmt: skip
        print(f"{dtype}: geometric mean of ratios over the irregular shapes: "
              f"{geometric_mean(ratios):.2f}")  # fmt: skip
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    record = {"device": device, "date": stamp, "reference": reference.status()[1],
              "command": " ".join(["python", *sys.argv]), "rows": rows}  # fmt: skip
    (out / "bench_kernels.json").write_text(json.dumps(record, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
