"""What autotune.HOST_TIES and its smaller FRONT_DOOR_MS change at launch-bound shapes: picks
from pass to pass, and the public call's GPU time and cost, before and after, beside cuBLAS.

    python benchmarks/probe_host_ties.py [--shapes MxNxK,...] [--dtype float32 float64]
        [--passes 3] [--own-only] [--trans NN] [--out DIR]

Per shape and dtype, on one set of operands (NN or --trans, leading dimensions padded, as a PyCUDA
user's column-major GPUArrays: bench_tuning.public_call), PASSES times as autotuning was
before 2026-11-29 (BEFORE: HOST_TIES off, so no shared host times and no tie-break by GPU
time, and an 8 us front door; stream-K candidates are timed as now in both) and PASSES
times as it is, in alternation: every plan is made afresh (the kernels stay compiled), the
public call sgemm/dgemm(1.0, a, b, c=c) autotunes once and is checked
against a float64 product, then timed in a run of calls (tunedgemm.timing: the GPU's median
by CUDA events, the host's least time to queue it; the least of two measurements by their
larger part). cuBLAS into c through scikit-cuda's binding, on the same operands, is timed
the same way once per shape. Prints per shape and mode the distinct picks and the medians
over the passes; per dtype the shapes whose pick changed between passes and the geometric
means of GPU ms and call ms; writes probe_host_ties-<tag>.json after each shape (each pass's
pick, times and what autotuning timed: candidates, cost, GPU and host ms).
`main` takes another change's settings and shapes (probe_medium_tiles.py, probe_ring_pad.py
--public), as "module.NAME" of tunedgemm or "module.NAME[key]", an item of a mapping.
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import json
import math
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_epilogue import parse_shape
from bench_tuning import _cublas_call, _public_choice, cublas_setting, gmean, public_call

# Launch-bound at both dtypes on the H200 (2026-11-29, probe_reads_c.py: under 15 us a call),
# from a 64^3 product to a 512^3 one.
SHAPES = [(148, 96, 64), (64, 64, 64), (128, 256, 128), (256, 256, 256), (512, 512, 128),
          (384, 128, 512), (96, 1000, 64), (1024, 64, 256), (300, 300, 300),
          (512, 512, 512)]  # fmt: skip
MEASUREMENTS = 2
# autotune's settings until 2026-11-29, as "module.NAME" of tunedgemm (probe_medium_tiles.py
# sets its own)
BEFORE = {"autotune.HOST_TIES": False, "autotune.FRONT_DOOR_MS": 0.008}


def _module_and_name(setting: str) -> tuple[Any, str]:
    module, name = setting.rsplit(".", 1)
    return importlib.import_module(f"tunedgemm.{module}"), name


def _mapping_and_key(setting: str) -> tuple[Any, str] | None:
    """"module.NAME[key]": the mapping NAME and the key (a family of families.FAMILIES, which
    every lookup reads), else None."""
    if not setting.endswith("]"):
        return None
    where, key = setting[:-1].split("[", 1)
    return getattr(*_module_and_name(where)), key


def current(settings: dict[str, Any]) -> dict[str, Any]:
    """The values the settings named have now."""
    found = {}
    for s in settings:
        item = _mapping_and_key(s)
        found[s] = item[0][item[1]] if item else getattr(*_module_and_name(s))
    return found


def _shown(settings: dict[str, Any]) -> dict[str, Any]:
    """Settings as printed: plain values as they are, others (a family) by type and name."""
    plain = (bool, int, float, str, type(None))
    return {s: v if isinstance(v, plain) else f"<{type(v).__name__} {getattr(v, 'name', '')}>"
            for s, v in settings.items()}  # fmt: skip


def apply(settings: dict[str, Any]) -> None:
    for setting, value in settings.items():
        item = _mapping_and_key(setting)
        if item:
            item[0][item[1]] = value
        else:
            setattr(*_module_and_name(setting), value)


def call_parts(work: Any) -> tuple[float, float]:
    """(GPU, host) ms of a run of calls of `work`, the least of MEASUREMENTS by their larger."""
    from tunedgemm.timing import gpu_and_host_ms

    return min((gpu_and_host_ms(work, warmup=3, reps=10) for _ in range(MEASUREMENTS)), key=max)


def one_pass(problem: Any, after: bool, own_only: bool, now: dict[str, Any],
             before: dict[str, Any]) -> dict[str, Any]:  # fmt: skip
    """A fresh plan of the public call with autotuning as it is (`after`: `now`, its settings)
    or as it was (`before`): its pick and times."""
    from tunedgemm import autotune

    apply(now if after else before)
    with cublas_setting(not own_only):  # plans (and autotuning's history) cleared on entry
        call = public_call(problem)  # plans and autotunes afresh
        timed = autotune.history()
        gpu, host = call_parts(call)
        explained = _public_choice(problem)
    # what autotuning chose (the explanation's reason holds timings that differ every pass)
    pick = " / ".join(record.get("chosen", "?") for record in timed) or explained
    return {"after": after, "pick": pick, "explain": explained, "gpu_ms": gpu, "host_ms": host,
            "call_ms": max(gpu, host), "autotune": timed}  # fmt: skip


def precompile(problem: Any, own_only: bool, now: dict[str, Any],
               before: dict[str, Any]) -> None:  # fmt: skip
    """Compile, nvcc in parallel, every own config autotuning times at the problem in either
    mode: it would otherwise compile them one at a time, seconds each, on a fresh machine."""
    import os

    from tunedgemm import compiler, plans, selection
    from tunedgemm.params import KernelConfig

    form = problem.form
    key = plans.GemmKey.of(form, problem.dtype.name, "ieee")
    configs: set[Any] = set()
    for settings in (before, now):
        apply(settings)
        with cublas_setting(not own_only, fresh=False):
            choice = selection.choose(problem.dtype, form.m, form.n, form.k, form.trans_a,
                                      form.trans_b, warn=False)  # fmt: skip
            timed = plans.own_candidates(choice.candidates or (choice.config,), key)
        configs.update(c for c in timed if isinstance(c, KernelConfig))
    apply(now)
    compiler.precompile(sorted(configs), problem.dtype.name, form.trans_a, form.trans_b,
                        form.aligned(), jobs=os.cpu_count() or 8)  # fmt: skip


def probe(shape: tuple[int, int, int], dtype: str, passes: int, own_only: bool,
          now: dict[str, Any], before: dict[str, Any],
          trans: str = "NN") -> dict[str, Any]:  # fmt: skip
    from tunedgemm import reference
    from tunedgemm.tuning import problems

    problem = problems.make(*shape, dtype, trans[0] == "T", trans[1] == "T", padded=True)
    precompile(problem, own_only, now, before)
    gpu = host = math.nan  # the peer, where scikit-cuda's cuBLAS loads
    if reference.status()[0]:
        gpu, host = call_parts(_cublas_call(problem.form, problem.dtype))
    runs = [one_pass(problem, after, own_only, now, before)
            for _ in range(passes) for after in (False, True)]  # fmt: skip
    return {"shape": shape, "dtype": dtype, "trans": trans, "cublas_gpu_ms": gpu,
            "cublas_host_ms": host, "cublas_call_ms": max(gpu, host), "passes": runs}  # fmt: skip


def summary(row: dict[str, Any], after: bool) -> dict[str, Any]:
    runs = [r for r in row["passes"] if r["after"] == after]
    return {"picks": len({r["pick"] for r in runs}),
            "gpu_ms": statistics.median(r["gpu_ms"] for r in runs),
            "call_ms": statistics.median(r["call_ms"] for r in runs)}  # fmt: skip


def means(rows: list[dict[str, Any]], after: bool) -> str:
    """One mode's line over the shapes: picks that changed, geometric means."""
    modes = [summary(r, after) for r in rows]
    peer = [r["cublas_call_ms"] / x["call_ms"] for r, x in zip(rows, modes, strict=True)]
    return (f"picks changed between passes at {sum(x['picks'] > 1 for x in modes)} of "
            f"{len(modes)} shapes; geometric means: GPU "
            f"{gmean([x['gpu_ms'] * 1e3 for x in modes]):.2f} us, call "
            f"{gmean([x['call_ms'] * 1e3 for x in modes]):.2f} us; cuBLAS / ours {gmean(peer):.2f}")


def main(name: str = "host_ties", before: dict[str, Any] = BEFORE,
         shapes: list[tuple[int, int, int]] = SHAPES, doc: str = __doc__) -> int:  # fmt: skip
    """The probe of one change of autotuning (`before`: the settings that undo it; `doc`: the
    calling script's docstring, for --help)."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--shapes", default=None, help="MxNxK,... (default: the probe's own)")
    parser.add_argument("--dtype", nargs="+", default=["float32", "float64"])
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--own-only", action="store_true")
    parser.add_argument("--trans", default="NN", choices=["NN", "NT", "TN", "TT"])
    parser.add_argument("--out", default=".")
    args = parser.parse_args()
    if args.shapes:
        shapes = [parse_shape(s) for s in args.shapes.split(",")]
    from tunedgemm import cuda

    cuda.context()
    print(f"# {'own kernels only' if args.own_only else 'cuBLAS a candidate'}; "
          f"{args.passes} passes a mode; {args.trans}; {cuda.device_name()}; "
          f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC")
    tag = ("own" if args.own_only else "auto") + ("" if args.trans == "NN" else f"-{args.trans}")
    out = Path(args.out) / f"probe_{name}-{tag}.json"
    rows: list[dict[str, Any]] = []
    now = current(before)
    print(f"# before: {_shown(before)}; after: {_shown(now)}")
    try:
        for dtype in args.dtype:
            print(f"{dtype:8} {'m x n x k':>14} {'cuBLAS us':>9} | {'before: picks':>14} "
                  f"{'GPU us':>7} {'call us':>7} | {'after: picks':>14} {'GPU us':>7} "
                  f"{'call us':>7}")  # fmt: skip
            for shape in shapes:
                start = time.perf_counter()
                row = probe(shape, dtype, args.passes, args.own_only, now, before, args.trans)
                row["seconds"] = time.perf_counter() - start
                rows.append(row)  # written after each shape: a run cut short keeps its rows
                out.write_text(json.dumps({"device": cuda.device_name(), "rows": rows},
                                          indent=1, default=str))  # fmt: skip
                cells = " | ".join(f"{x['picks']:14d} {x['gpu_ms'] * 1e3:7.1f} "
                                   f"{x['call_ms'] * 1e3:7.1f}"
                                   for x in (summary(row, False), summary(row, True)))  # fmt: skip
                shape_name = "x".join(map(str, shape))
                print(f"{'':8} {shape_name:>14} {row['cublas_call_ms'] * 1e3:9.1f} | {cells}",
                      flush=True)  # fmt: skip
            for after in (False, True):
                print(f"{dtype}: {'after ' if after else 'before'}: "
                      + means([r for r in rows if r["dtype"] == dtype], after))
    finally:
        apply(now)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
