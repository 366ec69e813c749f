"""Where NumPy beats the GPU for host operands: a measured crossover, stored beside the table.

A host call pays for its transfers and a fixed cost per call before the GPU does any work,
so small products are faster on NumPy. The crossover is one size N per dtype: a host call
goes to the GPU when its work m*n*k is at least N**3 and its arithmetic intensity
m*n*k / (m*k + k*n + m*n) at least N/3 (that of the N^3 square), so that skinny products,
which move much data for little work, stay on NumPy too.

`python -m tunedgemm crossover` measures N on the machine at hand (NumPy against tunedgemm's
GPU path, host to host, on squares) and writes it to the user's cache directory (see
tunedgemm/_userdir.py) as `crossover.json`, or where --out says. A lookup reads the user's
file first, then `<table stem>.crossover.json` beside the tuning table in use (the shipped
one is measured on the project's H100); the first made for this GPU wins, and without one
the defaults below apply. A malformed file warns once, naming itself and what is wrong.
"""

from __future__ import annotations

import datetime
import json
import math
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from . import _userdir, cuda, settings
from ._args import dtype_name
from .table import TABLE_ENV

SCHEMA_VERSION = 1
# Measured on the project's H100 machine (16 CPU cores) on 2026-11-22, shipped beside the table
# as tables/tuned.crossover.json; a slower CPU gains from the GPU earlier, a faster one later.
DEFAULT_SIZE = {"float32": 1024, "float64": 768}
SWEEP = (32, 64, 96, 128, 192, 256, 384, 512, 768, 1024)


# A crossover size beyond this is no measurement (the sweep ends at 1024): refused.
MAX_SIZE = 1 << 16


def path_for(table_path: Path) -> Path:
    return table_path.with_name(f"{table_path.stem}.crossover.json")


def current_path() -> Path:
    """The crossover file beside the tuning table in use."""
    from . import table

    return path_for(table.table_path())


def user_path() -> Path:
    """The user's own crossover file, which `python -m tunedgemm crossover` writes."""
    return _userdir.base() / "crossover.json"


def _load(path: Path) -> dict[str, Any] | None:
    """{"gpu": name, dtype: size, ...} from a crossover file; None where there is none, or
    (with one warning naming the file and the fault) where it is malformed."""
    from .table import TableError, read_json, warn_once

    if not path.exists():
        return None
    try:
        return _parse(read_json(path))
    except TableError as exc:
        warn_once(f"crossover file {path} not used (the defaults apply): {exc}")
        return None


def _parse(data: Any) -> dict[str, Any]:
    from .table import TableError

    if not isinstance(data, dict) or data.get("schema_version") != SCHEMA_VERSION:
        raise TableError(f"not a crossover file of schema version {SCHEMA_VERSION}")
    gpu, size = data.get("gpu"), data.get("size")
    if not isinstance(gpu, str) or not isinstance(size, dict):
        raise TableError('"gpu" (a name) and "size" (an object) are needed')
    found: dict[str, Any] = {"gpu": gpu}
    for dtype in DEFAULT_SIZE:
        value = size.get(dtype)
        if value is None:
            continue
        if type(value) is not int or not 1 <= value <= MAX_SIZE:
            raise TableError(f"size of {dtype} must be an integer from 1 to {MAX_SIZE}, "
                             f"got {str(value)[:40]}")  # fmt: skip
        found[dtype] = value
    return found


# (TUNEDGEMM_TABLE's value, GPU name) -> sizes and their source. Every small host call asks,
# and resolving the path and reading the file cost about 20 us: the file is read once per
# process for each table path.
_sizes_cache: dict[tuple[str, str], tuple[dict[str, int], str]] = {}


def sizes(gpu: str) -> tuple[dict[str, int], str]:
    """Crossover size per dtype for this GPU, and where it came from."""
    key = (settings.raw(TABLE_ENV) or "", gpu)
    found = _sizes_cache.get(key)
    if found is None:
        found = (dict(DEFAULT_SIZE), "built-in default")
        for path in (user_path(), current_path()):
            loaded = _load(path)
            if loaded is not None and loaded["gpu"] == gpu:
                values = {d: loaded.get(d, DEFAULT_SIZE[d]) for d in DEFAULT_SIZE}
                found = (values, f"measured ({path})")
                break
        _sizes_cache[key] = found
    return found


def prefer_numpy(dtype: str, m: int, n: int, k: int, size: float) -> bool:
    """Whether a host call of this shape is faster on NumPy, for crossover size `size`."""
    work = m * n * k
    moved = m * k + k * n + m * n
    # (3 * work, not moved * size / 3: exact in integers, as the C route's test is in doubles)
    return work < size**3 or 3 * work < moved * size


def size_for(dtype: np.dtype) -> int:
    """The current GPU's crossover size for dtype."""
    name = dtype_name(dtype)
    found, _ = sizes(cuda.device_name())
    return found.get(name, DEFAULT_SIZE.get(name, 0))


def for_call(dtype: np.dtype, m: int, n: int, k: int) -> bool:
    """prefer_numpy for the current GPU's crossover."""
    return prefer_numpy(dtype_name(dtype), m, n, k, size_for(dtype))


def _median_s(work: Callable[[], Any], reps: int) -> float:
    work()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _on_gpu(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a @ b as a host call on the GPU path, whatever the crossover says."""
    from . import gpu_backend
    from ._args import normalise

    problem = normalise(1.0, a, b, 0.0, None, 0, 0, 0, a.dtype)
    gpu_backend.gemm_into(problem)
    return problem.result


def measure(dtypes: tuple[str, ...] = ("float32", "float64"), reps: int = 7,
            sweep: tuple[int, ...] = SWEEP) -> dict[str, Any]:  # fmt: skip
    """Time NumPy and the GPU path on host squares; N is the smallest size from which the GPU
    is faster at every larger size of the sweep."""
    from . import cuda

    rng = np.random.default_rng()
    result: dict[str, Any] = {"size": {}, "sweep": {}}
    for dtype in dtypes:
        rows = []
        for size in sweep:
            a = rng.uniform(-1, 1, (size, size)).astype(dtype)
            b = rng.uniform(-1, 1, (size, size)).astype(dtype)
            numpy_s = _median_s(lambda: a @ b, reps)  # noqa: B023
            gpu_s = _median_s(lambda: _on_gpu(a, b), reps)  # noqa: B023
            rows.append({"n": size, "numpy_ms": numpy_s * 1e3, "gpu_ms": gpu_s * 1e3})
        crossover = sweep[-1]
        for row in reversed(rows):
            if row["gpu_ms"] >= row["numpy_ms"]:
                break
            crossover = int(row["n"])
        result["size"][dtype] = crossover
        result["sweep"][dtype] = rows
    result["gpu"] = cuda.device().name()
    return result


def write(path: Path, measured: dict[str, Any], command: str) -> None:
    data = {
        "_comment": "generated by python -m tunedgemm crossover; do not edit, rerun it",
        "schema_version": SCHEMA_VERSION,
        "created": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "command": command,
        **measured,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1) + "\n")


def main(out: str | None, command: str) -> int:
    """The `crossover` command: measure, print a table, write the file."""
    from . import cuda

    ok, why = cuda.status()
    if not ok:
        print(f"tunedgemm crossover: needs a GPU ({why})")
        return 1
    measured = measure()
    print(f"{'dtype':8} {'n':>6} {'NumPy ms':>10} {'GPU ms':>10} {'faster':>7}")
    for dtype, rows in measured["sweep"].items():
        for row in rows:
            faster = "GPU" if row["gpu_ms"] < row["numpy_ms"] else "NumPy"
            print(f"{dtype:8} {row['n']:6d} {row['numpy_ms']:10.3f} {row['gpu_ms']:10.3f} "
                  f"{faster:>7}")  # fmt: skip
        print(f"{dtype}: crossover at n = {measured['size'][dtype]} "
              f"(work {measured['size'][dtype] ** 3:.3g} = m*n*k)")  # fmt: skip
    path = Path(out) if out else user_path()
    if not out and _userdir.private_dir(path.parent) is None:
        print(f"tunedgemm crossover: cannot use {path.parent}; give --out")
        return 1
    write(path, measured, command)
    print(f"written to {path}")
    return 0 if all(math.isfinite(r["gpu_ms"]) for rows in measured["sweep"].values()
                    for r in rows) else 1  # fmt: skip
