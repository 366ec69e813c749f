"""The stream-K schedule of the simt and dmma kernels: which block does which (tile, k-tile).

Mirrors kernels/streamk.cuh (SkSchedule, SkStep, SkFixup) exactly, so that the
launcher sizes the workspace and grids from the same arithmetic the kernels use, and the unit
tests check that arithmetic on the CPU.

The schedule is the "data-parallel + stream-K" hybrid of Osama et al. (PPoPP 2023) in its
two-kernel deterministic form. With T tiles and G blocks:

- T a multiple of G: every tile is data-parallel (T / G whole waves), no stream-K part;
- otherwise the first floor(T / G) - 1 waves (none when T < 2G) are data-parallel, and the
  last G + (T mod G) tiles (all T when T < G) are stream-K: their iterations are split
  evenly over the G blocks, so each block gets between one and two tiles' worth (at least
  one iteration when T < G), and the last, partial wave no longer idles SMs.

Block b first does the data-parallel tiles b, b + G, ... whole, then its stream-K range.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

FIXUP_THREADS = 256  # per block of streamk_fixup (kernels/streamk.cuh)
MAX_ITERS = 2**31 - 1  # the kernels' schedule arithmetic is in int


def dp_tiles(tiles: int, ctas: int) -> int:
    """Tiles done whole in data-parallel waves (the rule above; SkSchedule's `dp`)."""
    if tiles % ctas == 0:
        return tiles
    return max(tiles // ctas - 1, 0) * ctas


@dataclass(frozen=True)
class Schedule:
    """Stream-K work of one m x n x k call: `tiles` tiles of `ipt` k-tiles ("iterations")
    each, tile-major, on `ctas` blocks: the first `dp` tiles whole, round robin, and the
    rest's iterations in contiguous ranges, one per block."""

    tiles: int
    ipt: int
    ctas: int

    @property
    def iters(self) -> int:
        return self.tiles * self.ipt

    @property
    def dp(self) -> int:
        """Tiles done data-parallel: 0 .. dp - 1."""
        return dp_tiles(self.tiles, self.ctas)

    @property
    def sk_iters(self) -> int:
        """Iterations of the stream-K tiles dp .. tiles - 1 (0 or at least ctas)."""
        return (self.tiles - self.dp) * self.ipt

    @property
    def args(self) -> tuple[int, int, int]:
        """What the kernels take after their own arguments (sk_dp, sk_q, sk_r): DP and
        S = sk_iters divided by G, so that they divide by nothing but G (b * r / G)."""
        return self.dp, self.sk_iters // self.ctas, self.sk_iters % self.ctas

    def begin(self, b: int) -> int:
        """First iteration of block b's stream-K range (b = ctas: the end of the last):
        DP IPT + floor(b S / G), as the kernels' int arithmetic has it."""
        _, q, r = self.args
        return self.dp * self.ipt + b * q + b * r // self.ctas

    def start(self, b: int) -> int:
        """First iteration of block b's walk: its first data-parallel tile's, if any."""
        return b * self.ipt if self.dp else self.begin(b)

    def owner(self, i: int) -> int:
        """The block whose stream-K range holds iteration i (of a stream-K tile)."""
        return ((i - self.dp * self.ipt + 1) * self.ctas - 1) // self.sk_iters

    def slot(self, b: int, t: int) -> int:
        """Workspace slot of block b's partial sum of stream-K tile t: 2b for the tile its
        range starts in, 2b + 1 for its last, where that is another."""
        return 2 * b + (1 if self.begin(b) < t * self.ipt else 0)

    def step(self, b: int, it: int) -> tuple[int, int, int, bool, int, int, int]:
        """SkStep: block b's step from iteration `it`: (tile, first k-tile, k-tiles, whole
        tile?, slot, next step's iteration, end of the walk)."""
        end, t = self.begin(b + 1), it // self.ipt
        if t < self.dp:  # data-parallel: the whole tile, then b's next one or its range
            nxt = (t + self.ctas) * self.ipt if t + self.ctas < self.dp else self.begin(b)
            return t, 0, self.ipt, True, self.slot(b, t), nxt, end
        kt, nxt = it - t * self.ipt, min(end, (t + 1) * self.ipt)
        whole = kt == 0 and nxt - it == self.ipt
        return t, kt, nxt - it, whole, self.slot(b, t), nxt, end

    def steps(self, b: int) -> list[tuple[int, int, int, bool, int]]:
        """Block b's walk, as streamk_gemm takes it: (tile, first k-tile, k-tiles, whole
        tile?, slot) per step."""
        out, it = [], self.start(b)
        while True:
            *head, nxt, end = self.step(b, it)
            out.append(tuple(head))
            if nxt == end:
                return out  # type: ignore[return-value]
            it = nxt

    def pieces(self, t: int) -> list[tuple[int, int, int]]:
        """(block, first k-tile, end k-tile) of each block's share of stream-K tile t, in
        k order."""
        lo, hi = t * self.ipt, (t + 1) * self.ipt
        first, last = self.owner(lo), self.owner(hi - 1)
        return [(b, max(lo, self.begin(b)) - lo, min(hi, self.begin(b + 1)) - lo)
                for b in range(first, last + 1)]  # fmt: skip

    def fixed_tile(self, j: int) -> int | None:
        """The tile fixup block j - 1 (boundary j, 1 <= j < ctas) sums: the one that boundary
        j splits, where block j - 1's range starts at or before it (so j is the first
        boundary inside it), or None."""
        s = self.begin(j)
        t = s // self.ipt
        if s == t * self.ipt or self.begin(j - 1) > t * self.ipt:
            return None
        return t

    def fixup_slots(self, j: int) -> list[int]:
        """The slots fixup block j - 1 adds, in order, as streamk_fixup finds them (none if
        it fixes no tile): block j - 1's, then 2b for each later block b whose range starts
        before the tile's end."""
        t = self.fixed_tile(j)
        if t is None:
            return []
        last = j
        while last + 1 < self.ctas and self.begin(last + 1) < (t + 1) * self.ipt:
            last += 1
        return [self.slot(j - 1, t), *(2 * b for b in range(j, last + 1))]

    def split_tiles(self) -> list[int]:
        """Tiles whose k range is shared by more than one block, in order."""
        return [t for j in range(1, self.ctas) if (t := self.fixed_tile(j)) is not None]

    @property
    def slots(self) -> int:
        """Workspace slots (each a tile of partial sums): two per block, also where the
        schedule is all data-parallel (the launch contract keeps one workspace rule)."""
        return 2 * self.ctas

    @property
    def fixup_blocks(self) -> int:
        """Blocks of streamk_fixup: one per interior boundary between stream-K ranges
        (none without a stream-K part)."""
        return self.ctas - 1 if self.sk_iters else 0


@functools.lru_cache(maxsize=1024)  # every stream-K launch asks: a call shape's is made once
def schedule(m: int, n: int, k: int, bm: int, bn: int, bk: int, ctas: int) -> Schedule:
    """The stream-K schedule of an m x n x k call with BM x BN tiles of BK-deep k-tiles over
    at most `ctas` blocks (SMs x STREAM_K).

    Every tile has max(1, ceil(k / BK)) iterations (k = 0 still visits each tile once, so
    beta C is applied), and there are never more blocks than iterations, so no stream-K
    range is empty. After dp_tiles' data-parallel tiles, block b walks stream-K iterations
    [dp IPT + floor(b S / G), dp IPT + floor((b+1) S / G)) of the S left; a tile split
    across blocks is summed by streamk_fixup from its 2..ceil(G / tiles) + 1 slots."""
    tiles = -(-m // bm) * -(-n // bn)
    ipt = max(1, -(-k // bk))
    if tiles * ipt > MAX_ITERS:
        raise ValueError(f"stream-K: {tiles * ipt} iterations exceed the kernels' int range")
    if ctas * ctas > MAX_ITERS:  # b * (S % G) < G * G in the kernels' begin(b)
        raise ValueError(f"stream-K: {ctas} blocks exceed the kernels' int range")
    return Schedule(tiles, ipt, max(1, min(ctas, tiles * ipt)))
