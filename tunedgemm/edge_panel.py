"""A product whose last block column (or row) of C is nearly empty, as its whole tiles by one
own launch and the few columns (rows) left by a narrow one: candidates that autotuning times.

A tile's grid covers C in whole tiles, so where n is a little over a multiple of the tile's
BN, the last column of blocks computes a few columns of C for the cost of full tiles, over
all of k. At 7557x390x14408 TT (random draw, H100, 2026-12-06) 390 mod BN is 6 for every BN
from 8 to 128: autotuning's fastest own kernel, 256 x 128 stream-K, ran 2.32 ms against
cuBLAS's 1.91 and spent a quarter of its FMAs on that last column of 6. Such a product can
run as two launches on the caller's stream instead:

1. the columns in whole tiles (n - n mod BN) by the config's launches;
2. the n mod BN columns left by the own config the table offers at that narrow shape (its
   twin first), on the same operands at offsets: op(B)'s columns and C's from there.

Rows likewise, where m mod BM is small. The two parts write disjoint elements of C, each one
launch's sum in a fixed order, so the bits are the same from run to run (a column of the
panel has other bits than the one launch would give it: another kernel sums it). The offsets
are whole tiles, so aligned operands stay 16-byte aligned. The panel reads op(A) (op(B))
once more: m k (n k) elements against the 2 m n k flops, so only large products
(FROM_FLOPS) try it. On since 2026-12-07, when its GPU test passed on an H100 and the public
call ran x1.06 faster with it at two TT shapes and no slower at five others
(`gpu_session.sh edge-panel`, docs/results/edge-panel-2026-12-07/).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from .params import KernelConfig

ENABLED = True  # bench_tuning.py --no-edge-panels turns it off for a run (A/B)
# Where autotuning times the split: the last block column (row) at most 1 / MAX_EDGE_SHARE
# full, at least two tiles across, and the product at least FROM_FLOPS of work.
MAX_EDGE_SHARE, FROM_FLOPS = 4, 2e9
MAIN_CONFIGS = 2  # of the table's own candidates at the key (two compiles more each)
MODES = ("ieee",)


def edges(m: int, n: int, tile: tuple[int, int]) -> list[tuple[str, int]]:
    """[(axis, whole)] of a product in blocks of `tile` (rows, columns): "n" with the columns
    in whole tiles where the last block column is nearly empty, "m" with the rows so."""
    found = []
    for axis, size, edge in (("n", n, tile[1]), ("m", m, tile[0])):
        left = size % edge
        if size >= 2 * edge and left > 0 and left * MAX_EDGE_SHARE <= edge:
            found.append((axis, size - left))
    return found


def part_keys(key: Any, axis: str, whole: int) -> tuple[Any, Any]:
    """The keys of the two launches: the whole tiles', then the panel's."""
    main = dataclasses.replace(key, **{axis: whole})
    panel = dataclasses.replace(key, **{axis: getattr(key, axis) - whole})
    return main, panel


def panel_offsets(key: Any, axis: str, whole: int) -> tuple[int, int, int]:
    """The panel's operands as byte offsets from the product's (a, b, c): op(B)'s columns and
    C's from `whole` on ("n"), or op(A)'s rows and C's ("m"); column-major storage."""
    size = np.dtype(key.dtype).itemsize
    if axis == "n":
        return 0, whole * size * (1 if key.trans_b else key.ldb), whole * size * key.ldc
    return whole * size * (key.lda if key.trans_a else 1), 0, whole * size


def candidates(key: Any) -> tuple[EdgePanel, ...]:
    """The split runners autotuning may time for a plan's key: one product (no batch), IEEE
    (MODES), at least FROM_FLOPS, on the first MAIN_CONFIGS own configs the table offers at
    the key (each as its fastest twin) whose tiles leave a nearly empty edge."""
    if not ENABLED or key.batch != 1 or key.precision not in MODES or key.k == 0:
        return ()
    if 2.0 * key.m * key.n * key.k < FROM_FLOPS:
        return ()
    from . import plans
    from .families import FAMILIES

    found: list[EdgePanel] = []
    for config in _own_configs(key, key.m, key.n)[:MAIN_CONFIGS]:
        config = plans.fastest_twin(config, key)
        tile = FAMILIES[config.family].block_tile(config.as_dict())
        for axis, whole in edges(key.m, key.n, tile):
            panel_key = part_keys(key, axis, whole)[1]
            own = _own_configs(key, panel_key.m, panel_key.n)
            if own:
                panel = plans.fastest_twin(own[0], panel_key)
                found.append(EdgePanel(key, axis, whole, config, panel))
    return tuple(dict.fromkeys(found))


def _own_configs(key: Any, m: int, n: int) -> list[KernelConfig]:
    """The own configs the table offers at key's layout and dtype and shape m x n x k."""
    from . import selection

    choice = selection.choose(key.dtype, m, n, key.k, key.trans_a, key.trans_b, warn=False)
    return [c for c in choice.candidates or (choice.config,) if isinstance(c, KernelConfig)]


class EdgePanel:
    """run(a, b, c, alpha, beta, stream) of one product as its whole tiles along `axis` by
    `config`, then the rest by `panel` (runs_itself: autotuning and plans call it as it is)."""

    runs_itself = True
    __slots__ = ("_edge", "_main", "axis", "config", "key", "panel", "whole")

    def __init__(self, key: Any, axis: str, whole: int, config: KernelConfig,
                 panel: KernelConfig) -> None:  # fmt: skip
        self.key, self.axis, self.whole, self.config, self.panel = key, axis, whole, config, panel
        self._main: Any = None
        self._edge: Any = None

    def compile_jobs(self) -> tuple[tuple[KernelConfig, bool, bool], ...]:
        """(config, trans_a, trans_b) of the own kernels it launches, for a parallel
        precompile."""
        layout = (self.key.trans_a, self.key.trans_b)
        return tuple(dict.fromkeys([(self.config, *layout), (self.panel, *layout)]))

    def __call__(self, a: int, b: int, c: int, alpha: float, beta: float, stream: int) -> None:
        if self._main is None:
            from . import plans

            main_key, panel_key = part_keys(self.key, self.axis, self.whole)
            self._main = plans.launcher(main_key, self.config)
            self._edge = plans.launcher(panel_key, self.panel)
        da, db, dc = panel_offsets(self.key, self.axis, self.whole)
        self._main(a, b, c, alpha, beta, stream)
        self._edge(a + da, b + db, c + dc, alpha, beta, stream)

    def _identity(self) -> tuple[Any, ...]:
        return (self.key, self.axis, self.whole, self.config, self.panel)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, EdgePanel) and self._identity() == other._identity()

    def __hash__(self) -> int:
        return hash(self._identity())

    def __str__(self) -> str:
        size = getattr(self.key, self.axis)
        what = "columns" if self.axis == "n" else "rows"
        return (f"{self.axis} {self.whole} + {size - self.whole}: {self.config}; the last "
                f"{size - self.whole} {what}: {self.panel}")  # fmt: skip

    __repr__ = __str__
