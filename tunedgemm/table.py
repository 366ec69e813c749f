"""The tuning table: versioned JSON, validation, nearest-shape lookup and its fallback chain.

A table holds, per GPU, entries keyed by dtype and the BLAS transpose pair ("float32/NT");
each entry records a tuned shape, the winning choice (a kernel config or "cublas"), the
best own kernel (used when cuBLAS is switched off), their times, cuBLAS's time and the
measured error. The header records `family_hashes`, each kernel family's source hash (its
template with local includes inlined, comments and blank lines stripped): configs of a
family whose source changed are stale and are skipped, while the other families' entries,
and cuBLAS's, stay in use. (Tables without family_hashes record one `kernel_hash` over every
file in kernels/ and are stale as a whole on any change.) A file that is unreadable or
malformed in any way warns, naming itself and what is wrong, and the built-in defaults run.

An entry may also hold "top": the best own configs timed at its shape, fastest first, as
[{"config": {"family": ..., "params": {...}}, "ms": 0.21}, ...] (the writer stores up to
four). It is optional within schema version 1: tables written before it (the shipped one
among them) read as if "top" held the entry's own config alone. At run time the configs
of the nearest entries compete through the wave model (tunedgemm/model.py).
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import hashlib
import json
import math
import re
import warnings
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from ._warnings import TableWarning, caller_stacklevel
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
    always holds `own` (added when absent, so tables without "top" give ((own, own_ms),)).
    The table is frozen, so entries can be shared by the tables derived from it."""

    m: int
    n: int
    k: int
    choice: KernelConfig | str
    # None only in a cuBLAS entry whose own configs were all of stale families.
    own: KernelConfig | None
    own_ms: float
    cublas_ms: float
    error: float
    top: tuple[tuple[KernelConfig, float], ...] = ()

    def __post_init__(self) -> None:
        if self.own is not None and all(config != self.own for config, _ in self.top):
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


def key(dtype: str, trans_a: bool, trans_b: bool, precision: str = "ieee") -> str:
    """An entry key: "float32/NT"; precision modes other than IEEE as "float32@tf32/NT"."""
    return f"{_kind(dtype, precision)}/{'T' if trans_a else 'N'}{'T' if trans_b else 'N'}"


def _kind(dtype: str, precision: str) -> str:
    return dtype if precision == "ieee" else f"{dtype}@{precision}"


def kernel_hash() -> str:
    """SHA-256 over every kernel source file: the staleness test of tables written before
    family_hashes (any byte in kernels/ made them stale); still recorded in the shipped one."""
    from .compiler import kernels_dir

    digest = hashlib.sha256()
    for path in sorted(kernels_dir().glob("*.cu*")):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


# C and C++ comments, skipping string and character literals (which may hold "//").
_COMMENT_OR_LITERAL = re.compile(
    r"""("(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*')|/\*.*?\*/|//[^\n]*""", re.DOTALL
)


def code_only(source: str) -> str:
    """Source with comments and blank lines removed and each line's whitespace normalised:
    what a family's hash covers, so that editing a comment keeps its table entries."""
    text = _COMMENT_OR_LITERAL.sub(lambda m: m.group(1) or " ", source)
    lines = (" ".join(line.split()) for line in text.splitlines())
    return "\n".join(line for line in lines if line)


def family_hash(name: str) -> str:
    """SHA-256 of one family's template, its local includes inlined, as code_only."""
    from .compiler import inline_includes, kernels_dir
    from .families import FAMILIES

    text = code_only(inline_includes(FAMILIES[name].source, kernels_dir()))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@functools.cache
def family_hashes() -> dict[str, str]:
    """family_hash of every family, computed once per process (tests clear the cache)."""
    from .families import FAMILIES

    return {name: family_hash(name) for name in sorted(FAMILIES)}


def _config(raw: Any, where: str) -> KernelConfig | str:
    if raw == CUBLAS:
        return CUBLAS
    if not isinstance(raw, dict) or not isinstance(raw.get("family"), str):
        raise TableError(f"{where}: malformed config {_short(raw)}")
    params = raw.get("params")
    if not isinstance(params, dict) or not all(
        isinstance(k, str) and _is_int(v) for k, v in params.items()
    ):
        raise TableError(f"{where}: params of {raw['family']!r} are not names with integers")
    return recorded_config(raw["family"], params)


def recorded_config(family: str, params: dict[str, int]) -> KernelConfig:
    """A config as a table or checkpoint records it, its family's later tunables completed
    (KernelFamily.recorded); an unknown family's as written (its check says what is wrong)."""
    from .families import FAMILIES

    known = FAMILIES.get(family)
    return known.recorded(params) if known is not None else KernelConfig.make(family, params)


def _own_config(raw: Any, where: str) -> KernelConfig:
    config = _config(raw, where)
    if not isinstance(config, KernelConfig):
        raise TableError(f"{where}: an own kernel config is needed, got {_short(raw)}")
    return config


def config_json(config: KernelConfig | str) -> Any:
    if config == CUBLAS:
        return CUBLAS
    assert isinstance(config, KernelConfig)
    return {"family": config.family, "params": config.as_dict()}


def _is_int(value: Any) -> bool:
    return type(value) is int


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:57]}..."


def _positive_int(raw: dict[str, Any], name: str, where: str) -> int:
    value: Any = raw.get(name)
    if not _is_int(value) or value < 1:
        raise TableError(f"{where}: {name} must be a positive integer, got {_short(value)}")
    return int(value)


def _number(raw: dict[str, Any], name: str, where: str, finite: bool = False) -> float:
    value: Any = raw.get(name)
    if type(value) not in (int, float) or (finite and not math.isfinite(value)):
        kind = "a finite number" if finite else "a number"
        raise TableError(f"{where}: {name} must be {kind}, got {_short(value)}")
    return float(value)


def _top(raw: Any, where: str) -> tuple[tuple[KernelConfig, float], ...]:
    """The optional "top" list of an entry: own configs only, each with a finite time."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise TableError(f"{where}: top must be a list, got {_short(raw)}")
    top = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict):
            raise TableError(f"{where}: top[{i}] must be an object, got {_short(item)}")
        config = _own_config(item.get("config"), f"{where} top[{i}]")
        top.append((config, _number(item, "ms", f"{where} top[{i}]", finite=True)))
    return tuple(top)


def _entry(raw: Any, where: str) -> Entry:
    if not isinstance(raw, dict):
        raise TableError(f"{where}: an entry must be an object, got {_short(raw)}")
    m, n, k = (_positive_int(raw, name, where) for name in ("m", "n", "k"))
    return Entry(m, n, k, _config(raw.get("choice"), f"{where} choice"),
                 _own_config(raw.get("own"), f"{where} own"),
                 _number(raw, "own_ms", where), _number(raw, "cublas_ms", where),
                 _number(raw, "error", where), _top(raw.get("top"), where))  # fmt: skip


def _device(raw: Any, where: str) -> DeviceTable:
    if not isinstance(raw, dict):
        raise TableError(f"{where} must be an object, got {_short(raw)}")
    name, cc, versions = raw.get("name"), raw.get("compute_capability"), raw.get("versions", {})
    if not isinstance(name, str) or type(cc) not in (str, int, float):
        raise TableError(f"{where}: name and compute_capability are needed")
    if not isinstance(versions, dict):
        raise TableError(f"{where}: versions must be an object, got {_short(versions)}")
    entries = raw.get("entries")
    if not isinstance(entries, dict):
        raise TableError(f"{where}: entries must be an object of lists, got {_short(entries)}")
    parsed = {}
    for entry_key, items in entries.items():
        if not isinstance(items, list):
            raise TableError(f"{where}: entries[{entry_key!r}] must be a list")
        parsed[entry_key] = [_entry(e, f"{where} {entry_key}[{i}]") for i, e in enumerate(items)]
    return DeviceTable(name, str(cc), {str(k): str(v) for k, v in versions.items()}, parsed)


def parse(data: Any, path: str) -> Table:
    """Validate a decoded table; raises TableError naming what is wrong (and where)."""
    if not isinstance(data, dict):
        raise TableError("a table is a JSON object")
    if data.get("schema_version") != SCHEMA_VERSION:
        raise TableError(
            f"schema_version {_short(data.get('schema_version'))}, "
            f"this tunedgemm reads {SCHEMA_VERSION}"
        )
    hashes = data.get("family_hashes", {})
    if not isinstance(hashes, dict) or not all(isinstance(v, str) for v in hashes.values()):
        raise TableError(f"family_hashes must map family names to hashes, got {_short(hashes)}")
    devices = data.get("devices")
    if not isinstance(devices, list):
        raise TableError(f"devices must be a list, got {_short(devices)}")
    parsed = [_device(dev, f"devices[{i}]") for i, dev in enumerate(devices)]
    header = {k: v for k, v in data.items() if k != "devices"}
    return Table(path, header, parsed)


def read_json(path: str | Path) -> Any:
    """A JSON file's value; TableError for anything that is not a readable JSON text (a
    missing or binary file, bad syntax, nesting too deep to decode, numbers past float)."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:  # JSONDecodeError, UnicodeDecodeError
        raise TableError(f"cannot read {path}: {type(exc).__name__}: {_short(str(exc))}") from None


def load(path: str | Path) -> Table:
    return parse(read_json(path), str(path))


@functools.cache
def shipped_path() -> Path:
    # Cached: resolving package resources costs tens of microseconds, paid on every call.
    return Path(str(resources.files("tunedgemm") / "tables" / "tuned.json"))


def table_path() -> Path:
    from . import settings

    return Path(settings.get(TABLE_ENV) or shipped_path())


@functools.lru_cache(maxsize=8)
def _cached(path: str, mtime: float) -> Table | str:
    """The table at path, or the reason it cannot be used (stale, corrupt, missing), which
    names the file. Entries of families whose kernel source changed are left out (with one
    warning naming them); a table written before family_hashes is stale on any change."""
    try:
        table = load(path)
    except TableError as exc:
        return f"{path}: {exc}" if path not in str(exc) else str(exc)
    except Exception as exc:  # whatever else a damaged file does, the call goes on
        return f"{path}: unreadable ({type(exc).__name__}: {_short(str(exc))})"
    if "family_hashes" not in table.header:
        if table.kernel_hash != kernel_hash():
            return (f"{path} is stale: tuned for kernel sources {table.kernel_hash or '?'}, "
                    f"installed sources are {kernel_hash()}")  # fmt: skip
        return table
    recorded = table.header["family_hashes"]
    # A family the table never tuned (added since) has no entries: nothing of it is stale.
    stale = {name for name, digest in family_hashes().items()
             if name in recorded and recorded[name] != digest}  # fmt: skip
    if stale:
        warn_once(f"{path}: entries of kernel families {', '.join(sorted(stale))} are stale "
                  "(their kernel source changed since tuning) and are skipped")  # fmt: skip
        table = without_families(table, stale)
    return table


def without_families(table: Table, stale: set[str]) -> Table:
    """The table without the configs of the stale families: an entry that chose one of
    them keeps its fastest other config, or goes; a cuBLAS entry stays (cuBLAS still wins
    there), keeping only the configs of other families."""
    devices = []
    for device in table.devices:
        entries = {}
        for entry_key, items in device.entries.items():
            kept = (_without(entry, stale) for entry in items)
            entries[entry_key] = [entry for entry in kept if entry is not None]
        devices.append(dataclasses.replace(device, entries=entries))
    return dataclasses.replace(table, devices=devices)


def _without(entry: Entry, stale: set[str]) -> Entry | None:
    top = tuple((c, ms) for c, ms in entry.top if c.family not in stale)
    if entry.choice == CUBLAS:
        own, own_ms = top[0] if top else (None, math.inf)
        return dataclasses.replace(entry, own=own, own_ms=own_ms, top=top)
    if not top:
        return None
    own, own_ms = top[0]
    return dataclasses.replace(entry, choice=own, own=own, own_ms=own_ms, top=top)


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
    device: DeviceTable, dtype: str, trans_a: bool, trans_b: bool, m: int, n: int, k: int,
    precision: str = "ieee",
) -> tuple[Entry, float, str] | None:
    """(entry, distance, its key): nearest in log2 (m, n, k) with the same dtype and
    precision; entries of another transpose pair pay TRANS_PENALTY."""
    best: tuple[Entry, float, str] | None = None
    wanted = key(dtype, trans_a, trans_b, precision)
    prefix = f"{_kind(dtype, precision)}/"
    for entry_key, entries in device.entries.items():
        if not entry_key.startswith(prefix):
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
    entries = device.entries.get(entry_key, [])
    wins = collections.Counter(entry.own for entry in entries if entry.own is not None)
    return tuple(config for config, _ in wins.most_common(count))


def levels(table: Table, gpu: str, cc: str) -> list[tuple[str, list[DeviceTable]]]:
    """The lookup's fallback levels with their device sections: this GPU's, then those of its
    compute capability (an H200 without a section of its own is served by an H100's)."""
    return [
        ("device", [d for d in table.devices if d.name == gpu]),
        ("architecture", [d for d in table.devices if d.compute_capability == cc]),
    ]


def lookup(
    table: Table | str, gpu: str, cc: str, dtype: str, trans_a: bool, trans_b: bool,
    m: int, n: int, k: int, precision: str = "ieee",
) -> Lookup:  # fmt: skip
    """Fallback chain: this GPU's entries -> same compute capability -> built-in default.

    The nearest entry (other transpose pairs paying TRANS_PENALTY) picks the key that serves
    the call; its NEIGHBOURS nearest entries of that key come along for the wave model."""
    if isinstance(table, str):
        return Lookup(None, "default", f"no usable table ({table})")
    for level, devices in levels(table, gpu, cc):
        for device in devices:
            found = nearest(device, dtype, trans_a, trans_b, m, n, k, precision)
            if found is not None:
                entry, dist, entry_key = found
                return Lookup(entry, level, (
                    f"{table.path}: {device.name} entry {entry_key} "
                    f"{entry.m}x{entry.n}x{entry.k} (log2 distance {dist:.2f})"),
                    neighbours(device, entry_key, m, n, k),
                    generalists(device, entry_key))  # fmt: skip
    return Lookup(None, "default",
                  f"{table.path} has no {_kind(dtype, precision)} entries for {gpu} (sm {cc})")


_warned: set[str] = set()


def warn_once(message: str) -> None:
    if message not in _warned:
        _warned.add(message)
        warnings.warn(f"tunedgemm: {message}", TableWarning, stacklevel=caller_stacklevel())
