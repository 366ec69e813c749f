"""Search strategies, each a module with one entry point `search`, found by name."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from typing import Protocol

from ...params import KernelConfig

Evaluate = Callable[[KernelConfig], float]
NAMES = ("exhaustive", "random")


class Strategy(Protocol):
    def __call__(
        self, candidates: Sequence[KernelConfig], evaluate: Evaluate, max_evals: int | None
    ) -> list[tuple[KernelConfig, float]]: ...


def get(name: str) -> Strategy:
    """The strategy module's `search` function; ValueError for an unknown name."""
    if name not in NAMES:
        raise ValueError(f"unknown strategy {name!r}; known: {', '.join(NAMES)}")
    return importlib.import_module(f"{__name__}.{name}").search
