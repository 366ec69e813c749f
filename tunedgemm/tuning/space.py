"""Shapes to tune and the candidate configs for each, pruned by constraints and by shape."""

from __future__ import annotations

import functools
import itertools
import json
from pathlib import Path

from ..families import serving
from ..model import NUM_SMS, Shape, prune_reason
from ..params import IEEE, KernelConfig

# Work cap of both grids: one pass over all four transpose pairs and both dtypes of the
# default grid fits the 30-minute budget on an H100.
MAX_WORK = 2 * 4096**3


def default_grid() -> list[Shape]:
    """Squares, tall-skinny, wide, small-k and long-k shapes from 64 to 16384 (62 shapes).

    Every (m, n, k) over {64, 512, 4096, 16384} whose work is at most 2 * 4096^3 flops,
    plus squares of 128 to 8192, so that one pass over all four transpose pairs and both
    dtypes fits the 30-minute budget on an H100."""
    sizes = (64, 512, 4096, 16384)
    shapes = set(_cube(sizes))
    shapes |= {Shape(s, s, s) for s in (128, 256, 1024, 2048, 8192)}
    return sorted(shapes)


def mid_grid() -> list[Shape]:
    """The points between the default grid's, where its entries are farthest (121 shapes).

    Every (m, n, k) over {128, 384, 1024, 3072, 8192} with the same work cap: 128 and 384
    lie between 64 and 512, 1024 and 3072 between 512 and 4096, 8192 between 4096 and
    16384, so that calls in 128..8192 (the range they mostly fall in) find measured
    neighbours about one size step (x3) away instead of x8, for the run-time wave model."""
    return sorted(_cube((128, 384, 1024, 3072, 8192)))


def _cube(sizes: tuple[int, ...]) -> list[Shape]:
    return [Shape(m, n, k) for m, n, k in itertools.product(sizes, repeat=3)
            if m * n * k <= MAX_WORK]  # fmt: skip


BENCHMARK_SHAPES = [Shape(s, s, s) for s in (1024, 2048, 4096, 8192)] + [
    Shape(8192, 8192, 128), Shape(16384, 64, 16384), Shape(64, 16384, 16384),
    Shape(4096, 4096, 256), Shape(1000, 1000, 1000), Shape(3000, 3000, 3000),
]  # fmt: skip


def parse_shapes(text: str) -> list[Shape]:
    """'MxNxK,MxNxK', or the names 'default', 'mid' and 'benchmark' joined by '+'."""
    named = {
        "default": default_grid,
        "mid": mid_grid,
        "benchmark": lambda: list(BENCHMARK_SHAPES),
    }
    if all(part in named for part in text.split("+")):
        return sorted({s for part in text.split("+") for s in named[part]()})
    shapes = []
    for item in text.split(","):
        try:
            m, n, k = (int(x) for x in item.lower().split("x"))
        except ValueError:
            raise ValueError(f"shape {item!r} is not MxNxK") from None
        shapes.append(Shape(m, n, k))
    return shapes


def shapes_from_log(path: str | Path) -> dict[tuple[str, bool, bool], list[Shape]]:
    """Shapes logged by TUNEDGEMM_LOG_SHAPES (one JSON object per call), grouped by key."""
    grouped: dict[tuple[str, bool, bool], set[Shape]] = {}
    for line in Path(path).read_text().splitlines():
        if line.strip():
            rec = json.loads(line)
            key = (rec["dtype"], bool(rec["trans_a"]), bool(rec["trans_b"]))
            grouped.setdefault(key, set()).add(Shape(rec["m"], rec["n"], rec["k"]))
    return {key: sorted(shapes) for key, shapes in grouped.items()}


def candidates(dtype: str, shape: Shape, num_sms: int = NUM_SMS,
               precision: str = IEEE) -> list[KernelConfig]:  # fmt: skip
    """Every valid config of every family for dtype in this precision mode (default: the
    dtype's own IEEE arithmetic), less those pruned at this shape."""
    return [c for c in valid_space(dtype, precision) if prune_reason(c, shape, num_sms) is None]


@functools.cache
def valid_space(dtype: str, precision: str = IEEE) -> tuple[KernelConfig, ...]:
    """Every config of every family for dtype in this precision mode that meets the family's
    constraints.

    Kept: checking a family's whole declared space takes seconds, and a tuning run (or
    --dry-run) asks for it once per shape. The baseline family is represented by its
    default only: it is there as a fallback, not as a contender."""
    found: list[KernelConfig] = []
    for family in serving(dtype, precision):
        tiled = family.name == "tiled"
        found += [family.default_config(dtype)] if tiled else family.space(dtype, precision)
    return tuple(found)
