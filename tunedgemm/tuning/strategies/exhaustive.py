"""Exhaustive search over the (already pruned) candidates: times every one."""

from __future__ import annotations

from collections.abc import Sequence

from ...params import KernelConfig
from . import Evaluate


def search(
    candidates: Sequence[KernelConfig], evaluate: Evaluate, max_evals: int | None = None
) -> list[tuple[KernelConfig, float]]:
    """(config, ms) for every candidate; max_evals is ignored (that is the point)."""
    return [(config, evaluate(config)) for config in candidates]
