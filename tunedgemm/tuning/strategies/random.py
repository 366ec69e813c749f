"""Budgeted random sampling: each family's default, then a fixed pseudo-random order.

The order is a hash of the config, not of the shape, so the same configs recur across
shapes and each is compiled once per variant for the whole tuning run."""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Sequence

from ...families import FAMILIES
from ...params import KernelConfig
from . import Evaluate

DEFAULT_MAX_EVALS = 24


@functools.cache
def _rank(config: KernelConfig) -> str:
    return hashlib.sha256(str(config).encode()).hexdigest()


@functools.lru_cache(maxsize=1)
def _defaults() -> frozenset[KernelConfig]:
    return frozenset(f.default_config(d) for f in FAMILIES.values() for d in f.dtypes)


def order(candidates: Sequence[KernelConfig]) -> list[KernelConfig]:
    defaults = _defaults()
    first = [c for c in candidates if c in defaults]
    rest = sorted((c for c in candidates if c not in defaults), key=_rank)
    return first + rest


def search(
    candidates: Sequence[KernelConfig], evaluate: Evaluate, max_evals: int | None = None
) -> list[tuple[KernelConfig, float]]:
    """(config, ms) for at most max_evals candidates (default 24)."""
    budget = DEFAULT_MAX_EVALS if max_evals is None else max_evals
    return [(config, evaluate(config)) for config in order(candidates)[:budget]]
