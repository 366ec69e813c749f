"""The tuning table: versioned JSON, validation, nearest-shape lookup and its fallback chain.

A table holds, per GPU, entries keyed by dtype and the BLAS transpose pair ("float32/NT");
each entry records a tuned shape, the winning choice (a kernel config or "cublas"), the
best own kernel (used when cuBLAS is switched off), their times, cuBLAS's time and the
measured error. The header records the kernel sources' hash: a table made from other
kernel sources is stale and is not used.

An entry may also hold "top": the best own configs timed at its shape, fastest first, as
[{"config": {"family": ..., "params": {...}}, "ms": 0.21}, ...] (the writer stores up to
four). It is optional within schema version 1: tables written before it (the shipped one
among them) read as if "top" held the entry's own config alone. At run time the configs
of the nearest entries compete through the wave model (tunedgemm/model.py).
"""

from __future__ import annotations

import collections
import functools
import hashlib
import json
import math
import os
import warnings
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from .params import KernelConfig

SCHEMA_VERSION = 1
TABLE_ENV = "TUNEDGEMM_TABLE"  # path of a user table, used instead of the shipped one
CUBLAS = "cublas"
# Lookup distance added when an entry's transpose pair differs from the call's: an entry
# of the exact pair wins unless it is more than this far away in log2 shape space.
TRANS_PENALTY = 3.0
# Entries whose configs compete at a call: the nearest few, so that a config tuned one grid
# step away can win where the wave model predicts it faster, while configs tuned for rather
# different shapes stay out (replaying the H100 runs, 4 beat 8 and 16: the model's error
# grows with the distance it extrapolates).
NEIGHBOURS = 4
GENERALISTS = 8  # per key, the most frequent winners a lookup brings for run-time refinement


class TableError(ValueError):
    """A table file that cannot be used (unreadable, wrong schema, malformed entry)."""


@dataclass(frozen=True)
class Entry:
    """One tuned shape: what won, the best own kernel, and the evidence.

    `top` holds (config, ms) of the best own configs measured here, fastest first; it
    always holds `own` (added when absent, so tables without "top" give ((own, own_ms),))."""

    m: int
    n: int
    k: int
    choice: KernelConfig | str
    own: KernelConfig
    own_ms: float
    cublas_ms: float
    error: float
    top: tuple[tuple[KernelConfig, float], ...] = ()

    def __post_init__(self) -> None:
        if all(config != self.own for config, _ in self.top):
            # A frozen dataclass sets a derived default only through object.__setattr__.
            object.__setattr__(self, "top", ((self.own, self.own_ms), *self.top))

    @property
    def ms(self) -> float:
        return self.cublas_ms if self.choice == CUBLAS else self.own_ms

    @property
    def shape(self) -> tuple[int, int, int]:
        return (self.m, self.n, self.k)


@dataclass
class DeviceTable:
    name: str
    compute_capability: str
    versions: dict[str, str]
    entries: dict[str, list[Entry]]


@dataclass
class Table:
    path: str
    header: dict[str, Any]
    devices: list[DeviceTable]

    @property
    def kernel_hash(self) -> str:
        return str(self.header.get("kernel_hash", ""))


def key(dtype: str, trans_a: bool, trans_b: bool) -> str:
    return f"{dtype}/{'T' if trans_a else 'N'}{'T' if trans_b else 'N'}"


def kernel_hash() -> str:
    """SHA-256 over every kernel source, so tables tuned on other sources are detected.

    Sources of families that compute in opt-in precision modes only (tf32, 3xtf32) are left
    out: the table's entries are IEEE ones, which adding or changing such a family leaves
    valid."""
    from .compiler import kernels_dir
    from .families import FAMILIES
    from .params import IEEE

    opt_in = {f.source for f in FAMILIES.values() if IEEE not in f.precisions}
    digest = hashlib.sha256()
    for path in sorted(kernels_dir().glob("*.cu*")):
        if path.name in opt_in:
            continue
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _config(raw: Any) -> KernelConfig | str:
    if raw == CUBLAS:
        return CUBLAS
    if not isinstance(raw, dict) or "family" not in raw or "params" not in raw:
        raise TableError(f"malformed config {raw!r}")
    return KernelConfig.make(raw["family"], raw["params"])


def config_json(config: KernelConfig | str) -> Any:
    if config == CUBLAS:
        return CUBLAS
    assert isinstance(config, KernelConfig)
    return {"family": config.family, "params": config.as_dict()}


def _top(raw: Any) -> tuple[tuple[KernelConfig, float], ...]:
    """The optional "top" list of an entry: own configs only, each with a finite time."""
    top = []
    for item in raw or ():
        config, ms = _config(item["config"]), float(item["ms"])
        if not isinstance(config, KernelConfig) or not math.isfinite(ms):
            raise TableError(f"malformed top entry {item!r}")
        top.append((config, ms))
    return tuple(top)


def parse(data: Any, path: str) -> Table:
    """Validate a decoded table; raises TableError naming what is wrong."""
    if not isinstance(data, dict):
        raise TableError("a table is a JSON object")
    if data.get("schema_version") != SCHEMA_VERSION:
        raise TableError(
            f"schema_version {data.get('schema_version')!r}, this tunedgemm reads {SCHEMA_VERSION}"
        )
    devices = []
    try:
        for dev in data["devices"]:
            entries = {
                k: [
                    Entry(
                        int(e["m"]), int(e["n"]), int(e["k"]), _config(e["choice"]),
                        _config(e["own"]),  # type: ignore[arg-type]
                        float(e["own_ms"]), float(e["cublas_ms"]), float(e["error"]),
                        _top(e.get("top")),
                    )
                    for e in items
                ]
                for k, items in dev["entries"].items()
            }  # fmt: skip
            devices.append(
                DeviceTable(dev["name"], str(dev["compute_capability"]),
                            dict(dev.get("versions", {})), entries)
            )  # fmt: skip
    except (KeyError, TypeError, ValueError) as exc:
        raise TableError(f"malformed table: {type(exc).__name__}: {exc}") from exc
    header = {k: v for k, v in data.items() if k != "devices"}
    return Table(path, header, devices)


def load(path: str | Path) -> Table:
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise TableError(f"cannot read {path}: {exc}") from exc
    return parse(data, str(path))


@functools.cache
def shipped_path() -> Path:
    # Cached: resolving package resources costs tens of microseconds, paid on every call.
    return Path(str(resources.files("tunedgemm") / "tables" / "tuned.json"))


def table_path() -> Path:
    return Path(os.environ.get(TABLE_ENV) or shipped_path())


@functools.lru_cache(maxsize=8)
def _cached(path: str, mtime: float) -> Table | str:
    """The table at path, or the reason it cannot be used (stale, corrupt, missing)."""
    try:
        table = load(path)
    except TableError as exc:
        return str(exc)
    if table.kernel_hash != kernel_hash():
        return (f"stale: tuned for kernel sources {table.kernel_hash or '?'}, "
                f"installed sources are {kernel_hash()}")  # fmt: skip
    return table


def current() -> Table | str:
    """The table in use (user table if TUNEDGEMM_TABLE is set), or why there is none."""
    path = table_path()
    try:
        mtime = path.stat().st_mtime
    except OSError:
        return f"no table at {path}"
    return _cached(str(path), mtime)


@dataclass(frozen=True)
class Lookup:
    entry: Entry | None
    level: str  # "device", "architecture" or "default"
    reason: str
    # Up to NEIGHBOURS entries of entry's key, nearest first (entry among them).
    neighbours: tuple[Entry, ...] = ()
    # The configs that win most often at entry's key, most often first.
    generalists: tuple[KernelConfig, ...] = ()


def _distance(entry: Entry, m: int, n: int, k: int) -> float:
    return math.dist(
        (math.log2(max(m, 1)), math.log2(max(n, 1)), math.log2(max(k, 1))),
        (math.log2(max(entry.m, 1)), math.log2(max(entry.n, 1)), math.log2(max(entry.k, 1))),
    )


def nearest(
    device: DeviceTable, dtype: str, trans_a: bool, trans_b: bool, m: int, n: int, k: int
) -> tuple[Entry, float, str] | None:
    """(entry, distance, its key): nearest in log2 (m, n, k) with the same dtype; entries of
    another transpose pair pay TRANS_PENALTY."""
    best: tuple[Entry, float, str] | None = None
    wanted = key(dtype, trans_a, trans_b)
    for entry_key, entries in device.entries.items():
        if not entry_key.startswith(f"{dtype}/"):
            continue
        penalty = 0.0 if entry_key == wanted else TRANS_PENALTY
        for entry in entries:
            d = _distance(entry, m, n, k) + penalty
            if best is None or d < best[1]:
                best = (entry, d, entry_key)
    return best


def neighbours(
    device: DeviceTable, entry_key: str, m: int, n: int, k: int, count: int = NEIGHBOURS
) -> tuple[Entry, ...]:
    """The count entries of one key nearest in log2 (m, n, k), nearest first (ties in table
    order, as in `nearest`, so the nearest entry comes first)."""
    entries = device.entries.get(entry_key, [])
    return tuple(sorted(entries, key=lambda e: _distance(e, m, n, k))[:count])


def generalists(device: DeviceTable, entry_key: str, count: int = GENERALISTS
                ) -> tuple[KernelConfig, ...]:  # fmt: skip
    """The count configs that win at the most entries of one key: good anywhere, so worth
    timing at any shape of it (run-time refinement offers them beside the model's picks)."""
    wins = collections.Counter(entry.own for entry in device.entries.get(entry_key, []))
    return tuple(config for config, _ in wins.most_common(count))


def lookup(
    table: Table | str, gpu: str, cc: str, dtype: str, trans_a: bool, trans_b: bool,
    m: int, n: int, k: int,
) -> Lookup:  # fmt: skip
    """Fallback chain: this GPU's entries -> same compute capability -> built-in default.

    The nearest entry (other transpose pairs paying TRANS_PENALTY) picks the key that serves
    the call; its NEIGHBOURS nearest entries of that key come along for the wave model."""
    if isinstance(table, str):
        return Lookup(None, "default", f"no usable table ({table})")
    levels = [
        ("device", [d for d in table.devices if d.name == gpu]),
        ("architecture", [d for d in table.devices if d.compute_capability == cc]),
    ]
    for level, devices in levels:
        for device in devices:
            found = nearest(device, dtype, trans_a, trans_b, m, n, k)
            if found is not None:
                entry, dist, entry_key = found
                return Lookup(entry, level, (
                    f"{table.path}: {device.name} entry {entry_key} "
                    f"{entry.m}x{entry.n}x{entry.k} (log2 distance {dist:.2f})"),
                    neighbours(device, entry_key, m, n, k),
                    generalists(device, entry_key))  # fmt: skip
    return Lookup(None, "default", f"{table.path} has no {dtype} entries for {gpu} (sm {cc})")


_warned: set[str] = set()


def warn_once(message: str) -> None:
    if message not in _warned:
        _warned.add(message)
        warnings.warn(f"tunedgemm: {message}", RuntimeWarning, stacklevel=5)
