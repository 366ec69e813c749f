"""The stream-K schedule of the simt family: which block does which (tile, k-tile), on the host.

Mirrors kernels/sgemm_simt.cu (SkSchedule, SkStep, streamk_fixup) exactly, so that the
launcher sizes the workspace and grids from the same arithmetic the kernels use, and the unit
tests check that arithmetic on the CPU.
"""

from __future__ import annotations

from dataclasses import dataclass

FIXUP_THREADS = 256  # per block of streamk_fixup (its __launch_bounds__ in sgemm_simt.cu)
MAX_ITERS = 2**31 - 1  # the kernels' schedule arithmetic is in int


@dataclass(frozen=True)
class Schedule:
    """Stream-K work of one m x n x k call: `tiles` tiles of `ipt` k-tiles ("iterations")
    each, tile-major, shared by `ctas` blocks in contiguous ranges."""

    tiles: int
    ipt: int
    ctas: int

    @property
    def iters(self) -> int:
        return self.tiles * self.ipt

    def begin(self, b: int) -> int:
        """First iteration of block b (b = ctas: the end of the last range)."""
        return b * self.iters // self.ctas

    def owner(self, i: int) -> int:
        """The block whose range holds iteration i."""
        return ((i + 1) * self.ctas - 1) // self.iters

    def slot(self, b: int, t: int) -> int:
        """Workspace slot of block b's partial sum of tile t: 2b for b's first tile, 2b + 1
        for its last, where that is another."""
        return 2 * b + (1 if self.begin(b) < t * self.ipt else 0)

    def steps(self, b: int) -> list[tuple[int, int, int, bool, int]]:
        """Block b's walk, as streamk_gemm's SkStep takes it: (tile, first k-tile, k-tiles,
        whole tile?, slot) per step."""
        out, it, end = [], self.begin(b), self.begin(b + 1)
        while it < end:
            t = it // self.ipt
            kt, nxt = it - t * self.ipt, min(end, (t + 1) * self.ipt)
            whole = kt == 0 and nxt - it == self.ipt
            out.append((t, kt, nxt - it, whole, self.slot(b, t)))
            it = nxt
        return out

    def pieces(self, t: int) -> list[tuple[int, int, int]]:
        """(block, first k-tile, end k-tile) of each block's share of tile t, in k order."""
        lo, hi = t * self.ipt, (t + 1) * self.ipt
        first, last = self.owner(lo), self.owner(hi - 1)
        return [(b, max(lo, self.begin(b)) - lo, min(hi, self.begin(b + 1)) - lo)
                for b in range(first, last + 1)]  # fmt: skip

    def fixed_tile(self, j: int) -> int | None:
        """The tile fixup block j - 1 (boundary j, 1 <= j < ctas) sums: the one that boundary
        j is the first to split, or None."""
        s = self.begin(j)
        t = s // self.ipt
        if s == t * self.ipt or self.owner(t * self.ipt) != j - 1:
            return None
        return t

    def split_tiles(self) -> list[int]:
        """Tiles whose k range is shared by more than one block, in order."""
        return [t for j in range(1, self.ctas) if (t := self.fixed_tile(j)) is not None]

    @property
    def slots(self) -> int:
        """Workspace slots (each a tile of partial sums): two per block."""
        return 2 * self.ctas

    @property
    def fixup_blocks(self) -> int:
        """Blocks of streamk_fixup: one per interior boundary between ranges."""
        return self.ctas - 1


def schedule(m: int, n: int, k: int, bm: int, bn: int, bk: int, ctas: int) -> Schedule:
    """The stream-K schedule of an m x n x k call with BM x BN tiles of BK-deep k-tiles over
    at most `ctas` blocks (SMs x STREAM_K).

    Every tile has max(1, ceil(k / BK)) iterations (k = 0 still visits each tile once, so
    beta C is applied), and there are never more blocks than iterations, so no range is
    empty. Block b walks [floor(b W / G), floor((b+1) W / G)) of the W iterations; a tile
    split across blocks is summed by streamk_fixup from its 2..ceil(G / tiles) + 1 slots."""
    tiles = -(-m // bm) * -(-n // bn)
    ipt = max(1, -(-k // bk))
    if tiles * ipt > MAX_ITERS:
        raise ValueError(f"stream-K: {tiles * ipt} iterations exceed the kernels' int range")
    return Schedule(tiles, ipt, max(1, min(ctas, tiles * ipt)))
