"""Environment variables read on every call, at a tenth of os.environ.get's cost."""

from __future__ import annotations

import os
from typing import Any

# os.environ.get encodes the name and decodes the value on every read (about 0.4-0.8 us, as
# much as a whole small NumPy product). CPython keeps the encoded variables in a plain dict,
# which os.environ (and so monkeypatch.setenv) updates in place: read that directly, with
# each name encoded once. Elsewhere, or should that dict ever go, os.environ.get serves.
_raw: dict[Any, Any] | None = getattr(os.environ, "_data", None)
_encoded_names: dict[str, Any] = {}


def raw_keys(*names: str) -> tuple[dict[Any, Any], tuple[Any, ...]] | None:
    """(the process's encoded environment, these names encoded), for a hot path that tests
    `key in raw` itself (tens of ns, where even get's call costs more); None where CPython's
    dict is not there, and os.environ must be asked."""
    if _raw is None:
        return None
    return _raw, tuple(os.environ.encodekey(name) for name in names)


def get(name: str, default: str | None = None) -> str | None:
    """os.environ.get(name, default), fast."""
    if _raw is None:
        return os.environ.get(name, default)
    key = _encoded_names.get(name)
    if key is None:
        key = _encoded_names[name] = os.environ.encodekey(name)
    value = _raw.get(key)
    return default if value is None else os.environ.decodevalue(value)
