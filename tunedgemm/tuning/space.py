"""Shapes to tune and the candidate configs for each, pruned by constraints and by shape."""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from pathlib import Path

from ..families import FAMILIES, serving
from ..params import IEEE, KernelConfig

NUM_SMS = 132  # H100 SXM; the runner passes the real count of the GPU at hand


@dataclass(frozen=True, order=True)
class Shape:
    m: int
    n: int
    k: int

    def __str__(self) -> str:
        return f"{self.m}x{self.n}x{self.k}"

    @property
    def flops(self) -> float:
        return 2.0 * self.m * self.n * self.k


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


def prune_reason(config: KernelConfig, shape: Shape, num_sms: int = NUM_SMS) -> str | None:
    """Why a valid config is not worth timing at this shape (None: time it)."""
    p = config.as_dict()
    bm, bn = p.get("BM", 1), p.get("BN", 1)
    tiles = -(-shape.m // bm) * -(-shape.n // bn)
    split = p.get("SPLIT_K", 1)
    if split > 1:
        if tiles >= 2 * num_sms:
            return "split-K with two or more waves of tiles already"
        if shape.k < 4 * split * p.get("BK", 1):
            return "split-K slices shorter than four k-tiles"
    if bm >= 2 * _ceil_pow2(shape.m) and bm > 64:
        return "block tile more than twice the rows of C"
    if bn >= 2 * _ceil_pow2(shape.n) and bn > 64:
        return "block tile more than twice the columns of C"
    return None


def filling_split(config: KernelConfig, shape: Shape, num_sms: int = NUM_SMS,
                  ) -> KernelConfig | None:  # fmt: skip
    """The config with the SPLIT_K that comes nearest to filling the GPU at this shape, where
    its output tiles alone leave SMs idle (None: they do not, or no other split is better).

    The largest declared split whose blocks stay within two waves and that prune_reason
    accepts: slices long enough to pay for their atomic adds."""
    family = FAMILIES.get(config.family)
    p = config.as_dict()
    if family is None or "SPLIT_K" not in p:
        return None
    tiles = -(-shape.m // p["BM"]) * -(-shape.n // p["BN"])
    if tiles >= num_sms:
        return None
    splits = next(t.values for t in family.tunables if t.name == "SPLIT_K")
    for split in sorted(splits, reverse=True):
        variant = KernelConfig.make(config.family, {**p, "SPLIT_K": split})
        if tiles * split <= 2 * num_sms and prune_reason(variant, shape, num_sms) is None:
            return None if variant == config else variant
    return None


def _ceil_pow2(x: int) -> int:
    return 1 << max(0, (x - 1).bit_length())


def candidates(dtype: str, shape: Shape, num_sms: int = NUM_SMS,
               precision: str = IEEE) -> list[KernelConfig]:  # fmt: skip
    """Every valid config of every family for dtype in this precision mode (default: the
    dtype's own IEEE arithmetic), less those pruned at this shape.

    The baseline family is represented by its default only: it is there as a fallback,
    not as a contender."""
    picked = []
    for family in serving(dtype, precision):
        if family.name == "tiled":
            space = [family.default_config(dtype)]
        else:
            space = list(family.space(dtype, precision))
        picked += [c for c in space if prune_reason(c, shape, num_sms) is None]
    return picked
