"""The DGEMM squares by operand layout: the public call and dmma configs against cuBLAS.

Usage: TUNEDGEMM_CUBLAS=0 python benchmarks/probe_dgemm_layout.py [--shapes 8192x8192x8192]
       [--out DIR]

Issue 15's square floor (0.95x cuBLAS) is measured by bench_device on row-major (C-order)
GPUArrays into a column-major c, which the call runs as TT; the probes that timed dmma's
configs at 0.98x at 8192^3 (bench_kernels --dmma-large, probe_dgemm_squares) ran NN. For
each layout (TT: C-order a and b; NN: Fortran-order) this times, in bench_device's
interleaved loops against cuBLAS into c on the same operands: the public call into c, the
config its plan chose launched alone, and that config's neighbours (the k8 mma, two blocks
an SM, a deeper ring); then each arm and cuBLAS in long runs of their own (LONG_MS each,
ours-cuBLAS-cuBLAS-ours), over which nvidia-smi's samples of SM clock and power
(every 100 ms) are averaged, so that a kernel that runs at a lower clock under
the power cap shows as such. Under the 700 W cap the two timings differ: a sustained run of
one library's calls is what a user's loop gets, short alternating loops mix the two
kernels' power draw.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_device import _check, compare, cublas_into
from probe_power import read_samples, smi_sampling

SHAPES = [(8192, 8192, 8192), (4096, 4096, 4096)]
LAYOUTS = {"TT": "C", "NN": "F"}  # the call's transpose pair: the operands' NumPy order
# Neighbours of the plan's config, timed beside it (dmma's names; see families/dmma.py)
NEIGHBOURS = {"adv": {"ADVANCE": 1}, "k8": {"MMA_K": 8}, "two": {"BN": 64, "MIN_BLOCKS": 2},
              "two,k8": {"BN": 64, "MIN_BLOCKS": 2, "MMA_K": 8}, "s4": {"STAGES": 4},
              "g16": {"GROUP_M": 16}}  # fmt: skip
SMI_QUERY = "timestamp,clocks.sm,power.draw,temperature.gpu"  # (the CSV keeps the temperature)
LONG_MS = 800  # each long run: several of nvidia-smi's 100 ms samples


def long_run(work: Any, label: str, single_ms: float,
             windows: list[tuple[str, float, float]]) -> float:  # fmt: skip
    """Milliseconds a call over a long run of calls (CUDA events), its window noted."""
    from bench_device import time_per_call

    start = time.time()
    ms = time_per_call(work, max(3, int(LONG_MS / single_ms))) / 1e3
    windows.append((label, start, time.time()))
    return ms


def sustained(ours: Any, peer: Any, label: str, ours_ms: float, peer_ms: float,
              windows: list[tuple[str, float, float]]) -> tuple[float, float]:  # fmt: skip
    """(ours, peer) ms a call in long runs of each, ours-peer-peer-ours, so that neither
    always follows the other: the mean of each side's two runs."""
    first = long_run(ours, label, ours_ms, windows)
    peer_times = [long_run(peer, f"{label} cuBLAS", peer_ms, windows) for _ in range(2)]
    last = long_run(ours, label, ours_ms, windows)
    return (first + last) / 2, sum(peer_times) / 2


def neighbours(chosen: Any) -> dict[str, Any]:
    """The chosen dmma config and its neighbours that differ from it (KernelConfigs)."""
    from tunedgemm.params import KernelConfig

    out = {"plan": chosen}
    if not isinstance(chosen, KernelConfig) or chosen.family != "dmma":
        return out
    for label, changes in NEIGHBOURS.items():
        config = KernelConfig.make("dmma", {**chosen.as_dict(), **changes})
        if config not in out.values():
            out[label] = config
    return out


def probe(shape: tuple[int, int, int], layout: str, rng: np.random.Generator,
          windows: list[tuple[str, float, float]]) -> list[dict[str, Any]]:  # fmt: skip
    """Every arm at one shape and layout against cuBLAS, in bench_device's loops."""
    import pycuda.gpuarray as gpuarray

    from tunedgemm import dgemm, gpu_backend, plans
    from tunedgemm._args import as_matrix
    from tunedgemm._layout import blas_form
    from tunedgemm.compiler import precompile

    m, n, k = shape
    order: Any = LAYOUTS[layout]
    host_a = np.asarray(rng.uniform(-1, 1, (m, k)), order=order)
    host_b = np.asarray(rng.uniform(-1, 1, (k, n)), order=order)
    a, b = gpuarray.to_gpu(host_a), gpuarray.to_gpu(host_b)
    c = gpuarray.empty((m, n), np.float64, order="F")
    c_peer = gpuarray.empty((m, n), np.float64, order="F")
    c_peer.fill(np.nan)
    peer = cublas_into(c_peer, a, b, np.dtype(np.float64))
    peer()
    expected = c_peer.get()
    form = blas_form(as_matrix(a, "a"), as_matrix(b, "b"), as_matrix(c, "c"))
    assert (form.trans_a, form.trans_b) == (layout[0] == "T", layout[1] == "T"), form

    def call() -> None:
        dgemm(1.0, a, b, c=c, overwrite_c=1)

    call()  # autotuning at the shape, once
    chosen_plan = plans.device_plans.get(plans.GemmKey.of(form, "float64", "ieee"))
    chosen = getattr(chosen_plan, "choice", None)
    arms: dict[str, Any] = {"call": call}
    configs = neighbours(chosen)
    precompile(list(configs.values()), "float64", form.trans_a, form.trans_b, form.aligned())
    float64 = np.dtype(np.float64)
    for label, config in configs.items():
        arms[label] = lambda config=config: gpu_backend.run(form, float64, 1.0, 0.0, config)
    rows = []
    for label, arm in arms.items():
        c.fill(np.nan)
        try:
            arm()
            error = _check(f"{layout} {label}", c.get(), expected, k, np.dtype(np.float64))
        except Exception as exc:  # a neighbour outside the family's space: say so, go on
            print(f"{layout} {m}x{n}x{k} {label}: {type(exc).__name__}: {exc}", flush=True)
            continue
        ours_us, peer_us = compare(arm, peer)
        name = f"{layout} {m}x{n}x{k} {label}"
        long_ours, long_peer = sustained(arm, peer, name, ours_us / 1e3, peer_us / 1e3, windows)
        config = chosen if label == "call" else configs[label]
        rows.append({"shape": list(shape), "layout": layout, "arm": label, "config": str(config),
                     "ours_ms": ours_us / 1e3, "cublas_ms": peer_us / 1e3,
                     "ratio": peer_us / ours_us, "long_ours_ms": long_ours,
                     "long_cublas_ms": long_peer, "error": error})  # fmt: skip
        print(f"{name:26} {ours_us / 1e3:8.3f} ms  cuBLAS {peer_us / 1e3:8.3f}  ratio "
              f"{peer_us / ours_us:6.3f}  long {long_peer / long_ours:6.3f}  {config}",
              flush=True)  # fmt: skip
    return rows


def clocks_by_window(path: Path, windows: list[tuple[str, float, float]]) -> dict[str, Any]:
    """Mean SM clock (MHz) and power (W) over the windows of each label (pooled)."""
    samples = read_samples(path)
    inside: dict[str, list[dict[str, float]]] = {}
    for label, start, stop in windows:
        inside.setdefault(label, []).extend(v for v in samples if start <= v["t"] <= stop)
    return {label: [round(float(np.mean([v[field] for v in values])), 1)
                    for field in ("clock", "power")]
            for label, values in inside.items() if values}  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default=",".join("x".join(map(str, s)) for s in SHAPES))
    parser.add_argument("--out", default="benchmarks/results")
    args = parser.parse_args()
    from tunedgemm import cuda

    ok, why = cuda.status()
    if not ok:
        print(f"probe_dgemm_layout: needs a GPU ({why})")
        return 1
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    shapes = [(m, n, k) for m, n, k in (map(int, s.split("x")) for s in args.shapes.split(","))]
    rng = np.random.default_rng()
    windows: list[tuple[str, float, float]] = []
    smi_path = out / "probe_dgemm_layout-smi.csv"
    print(f"# {cuda.device_name()}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
          "ratio = cuBLAS ms / ours, bench_device's loops, float64, into c")  # fmt: skip
    with smi_sampling(smi_path, SMI_QUERY, 100):
        rows = [row for shape in shapes for layout in LAYOUTS
                for row in probe(shape, layout, rng, windows)]  # fmt: skip
    clocks = clocks_by_window(smi_path, windows)
    print("\n# mean SM MHz and W over each long run")
    for label, values in clocks.items():
        print(f"{label:34} {values[0]:7.0f} MHz {values[1]:6.0f} W")
    (out / "probe_dgemm_layout.json").write_text(json.dumps(
        {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "device": cuda.device_name(),
         "command": " ".join(["python", *sys.argv]), "rows": rows, "smi_by_window": clocks},
        indent=1))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
