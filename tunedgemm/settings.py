"""Every TUNEDGEMM_* environment variable, declared once: type, default, accepted values, meaning.

This is the one module that reads the environment (Triton's `knobs` is the model). Each
setting is parsed where it is first read with a given value, once; a value that does not
parse warns once, naming the variable and the values it accepts, and the default applies.
Settings marked `decides` change what a call runs: the plan cache (tunedgemm/plans.py)
compares their raw values on every call and drops every plan when one changes.

os.environ.get encodes the name and decodes the value on every read (0.4-0.8 us, as much as
a whole small NumPy product). CPython keeps the encoded variables in a plain dict, which
os.environ (and so monkeypatch.setenv) updates in place: that dict is read directly, each
name encoded once. Where it is missing, os.environ serves.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

_raw: dict[Any, Any] | None = getattr(os.environ, "_data", None)


class SettingWarning(UserWarning):
    """A TUNEDGEMM_* variable holds a value tunedgemm does not accept (its default applies)."""


def _boolean(value: str) -> bool:
    text = value.strip().lower()
    if text in ("1", "yes", "true", "on"):
        return True
    if text in ("0", "no", "false", "off"):
        return False
    raise ValueError


def _choice(*values: str) -> Callable[[str], str]:
    def parse(value: str) -> str:
        text = value.strip().lower()
        if text not in values:
            raise ValueError
        return text

    return parse


def _path(value: str) -> str | None:
    return value or None


def _name(value: str) -> str | None:
    return value.strip() or None


_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def _bytes(value: str) -> int:
    """A positive size in bytes: 2G, 512M, 1048576."""
    text = value.strip().upper().removesuffix("B").removesuffix("I")
    unit = text[-1:] if text[-1:] in _UNITS else ""
    number = float(text[: len(text) - len(unit)])
    if not number > 0 or number == float("inf"):
        raise ValueError
    return int(number * _UNITS[unit])


@dataclass(frozen=True)
class Setting:
    """One environment variable: how to parse it, its default, what it accepts and means."""

    name: str
    parse: Callable[[str], Any]
    default: Any
    accepted: str
    help: str
    decides: bool = False  # a change invalidates cached decisions (plans, choices)


_DECLARED = (
    Setting("TUNEDGEMM_BACKEND", _choice("auto", "gpu", "numpy"), "auto", "auto, gpu or numpy",
            "which backend runs host calls (gpu also sends small host calls to the GPU)",
            decides=True),
    Setting("TUNEDGEMM_PRECISION", _choice("ieee", "tf32", "3xtf32", "ozaki"), "ieee",
            "ieee, tf32, 3xtf32 or ozaki",
            "default precision mode of products (tunedgemm.set_precision overrides it)",
            decides=True),
    Setting("TUNEDGEMM_TABLE", _path, None, "a path to a tuning table (JSON)",
            "use this tuning table (and the crossover file beside it) instead of the shipped one",
            decides=True),
    Setting("TUNEDGEMM_CUBLAS", _boolean, True, "1/0, yes/no, true/false, on/off",
            "0 keeps cuBLAS out of the choices: own kernels only", decides=True),
    Setting("TUNEDGEMM_FAMILY", _name, None, "a kernel family name (see tunedgemm/families/)",
            "force that family's default config", decides=True),
    Setting("TUNEDGEMM_REFINE", _boolean, True, "1/0, yes/no, true/false, on/off",
            "time the table's few best candidates on the first call of a shape (autotune)",
            decides=True),
    Setting("TUNEDGEMM_GRAPHS", _boolean, True, "1/0, yes/no, true/false, on/off",
            "replay a repeated cuBLAS or own-kernel call (same operands, scalars and stream) "
            "as a captured CUDA graph, which the host queues in a fraction of the time",
            decides=True),
    Setting("TUNEDGEMM_DEVICE_MEMORY", _bytes, None, "a positive size such as 2G or 512M",
            "cap on the device memory a host call plans to use on each GPU (default: 80% of "
            "what is free)",
            decides=True),
    Setting("TUNEDGEMM_PINNED_RESULTS", _boolean, True, "1/0, yes/no, true/false, on/off",
            "new host results in pooled pinned memory (0: ordinary arrays)"),
    Setting("TUNEDGEMM_RECYCLE_RESULTS", _choice("auto", "all", "off"), "auto",
            "auto, all or off",
            "a repeated device call writes its previous new result again once the caller has "
            "dropped it (auto: CuPy and PyCUDA; all: PyTorch too; see tunedgemm/recycle.py)",
            decides=True),
    Setting("TUNEDGEMM_LOG_SHAPES", _path, None, "a writable file path",
            "append each distinct GPU product shape to this file, for the tuner", decides=True),
    Setting("TUNEDGEMM_OZAKI_GEMM", _choice("auto", "wgmma", "mma"), "auto", "auto, wgmma or mma",
            "the INT8 GEMM of the ozaki mode: the wgmma family (sm_90 only), the mma.sync family, "
            "or auto (wgmma on sm_90, mma.sync elsewhere)",
            decides=True),
    Setting("TUNEDGEMM_DEVICES", _name, None, "all, or GPU ordinals such as 0,1",
            "which GPUs host calls spread their tiles over", decides=True),
)
SETTINGS: dict[str, Setting] = {s.name: s for s in _DECLARED}
DECIDING = tuple(s.name for s in _DECLARED if s.decides)

_encoded: dict[str, Any] = {}
_parsed: dict[tuple[str, str], Any] = {}  # (name, raw value) -> parsed value (or default)
_warned: set[tuple[str, str]] = set()


def raw(name: str) -> str | None:
    """The variable's text as set (None when unset), read fast."""
    if _raw is None:
        return os.environ.get(name)
    key = _encoded.get(name)
    if key is None:
        key = _encoded[name] = os.environ.encodekey(name)
    value = _raw.get(key)
    return None if value is None else os.environ.decodevalue(value)


def get(name: str) -> Any:
    """The parsed value of a declared setting; its default when unset or invalid."""
    if _raw is not None:
        key = _encoded.get(name)
        if key is not None and key not in _raw:  # unset: the common case, spared the decoding
            return SETTINGS[name].default
    text = raw(name)
    setting = SETTINGS[name]
    if text is None:
        return setting.default
    found = _parsed.get((name, text), _MISSING)
    if found is _MISSING:
        found = _parse(setting, text)
    return found


_MISSING = object()


def _parse(setting: Setting, text: str) -> Any:
    try:
        value = setting.parse(text)
    except (ValueError, IndexError, OverflowError):
        value = setting.default
        if (setting.name, text) not in _warned:
            _warned.add((setting.name, text))
            warnings.warn(
                f"tunedgemm: {setting.name}={text!r} is not valid (accepted: {setting.accepted}); "
                f"using the default ({setting.default!r})",
                SettingWarning,
                stacklevel=4,
            )
    _parsed[(setting.name, text)] = value
    return value


def check(name: str, text: str) -> Any:
    """Parse text as the setting `name` would, raising ValueError naming the variable."""
    setting = SETTINGS[name]
    try:
        return setting.parse(text)
    except (ValueError, IndexError, OverflowError):
        raise ValueError(
            f"{name}={text!r} is not valid (accepted: {setting.accepted})"
        ) from None


def _state_reader() -> Callable[[], tuple[Any, ...]]:
    if _raw is None:
        return lambda: tuple(os.environ.get(name) for name in DECIDING)
    keys = tuple(os.environ.encodekey(name) for name in DECIDING)
    get = _raw.get

    def state() -> tuple[Any, ...]:
        # One C-level pass over the environment's dict: the plan cache asks on every call.
        return tuple(map(get, keys))

    return state


decision_state = _state_reader()
decision_state.__doc__ = """The raw values of every setting that changes a decision: equal
tuples, same decisions."""


def raw_keys(*names: str) -> tuple[dict[Any, Any], tuple[Any, ...]] | None:
    """(the process's encoded environment, these names encoded), for the small host route,
    which tests `key in raw` itself (tens of ns); None where CPython's dict is missing."""
    if _raw is None:
        return None
    return _raw, tuple(os.environ.encodekey(name) for name in names)


def describe() -> list[tuple[str, str, str, str]]:
    """(name, current raw value or '', default, accepted values) of every setting, for info."""
    return [(s.name, raw(s.name) or "", repr(s.default), s.accepted) for s in _DECLARED]
