"""A large product's last, nearly empty wave of tiles as a split-K launch of its own.

At 8192^3 float64 dmma's 128 x 128 tile makes 4096 blocks, 31 waves over the H100's 132 SMs
and 4 blocks more: the last wave idles 128 SMs for a whole tile's time, about 3% of the
product (dmma's stream-K, meant for this, ran 9-15% slower there: bench_kernels.py
--dmma-tail, 2026-11-28). Such a product can run as three launches instead:

- R1: C but its last block column, on the caller's stream;
- R2: that block column but its last q tiles (q: the blocks over whole waves), on a side stream;
- T: those q tiles, split in k into slots // q slices and reduced, on another side stream,

so that R1's part-filled last wave and R2 fill one wave, and T's short blocks one more.
benchmarks/probe_wave_split.py (H100, 2026-11-28 05:42 UTC, the dmma default with the
cursors): 0.973x -> 0.993x cuBLAS at 8192^3, 0.978x -> 0.998x in a long run of calls. Each
element of C is one launch's sum in a fixed order, so the bits are the same from run to run
(T's are split-K sums: other bits than the one launch's). For dmma, as measured; the side
streams are the calling thread's own, so that no two threads share a workspace. Off until
measured through the public call (FAMILIES, below).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from . import _driver, cuda, model
from ._layout import BlasForm

# Where the split applies: at least MIN_WAVES whole waves before the tail (the tail's gain
# against the extra launches), a last wave at most 1 / MAX_TAIL_SHARE full, k of at least
# MIN_K (measured at 4096 and 8192), and the tail within the last block column.
MIN_WAVES, MAX_TAIL_SHARE, MIN_K = 4, 8, 4096
# The families whose planned products take the split: none yet. The GPU test passed with
# dmma's (tests/gpu/test_tail_split_gpu.py, H100, 2026-11-28 05:45 UTC), and launches timed
# in turn gained 1-2% (probe_wave_split.py, 05:42: 0.973x -> 0.993x cuBLAS at 8192^3,
# 0.987x -> 0.998x at 8192x8192x4096), but through the public call in bench_device's long
# runs of calls, where the power cap sets the pace, 8192^3 ran 0.930 / 0.932x cuBLAS with it
# (05:47) against 0.941 / 0.937x without (05:21), and one long run at 8192x8192x4096 ran 7%
# slower with it. ("dmma",) turns it on once a run shows the gain through the public call.
FAMILIES: tuple[str, ...] = ()


def parts(form: BlasForm, tile: tuple[int, int], slots: int) -> list[tuple[BlasForm, int]] | None:
    """[(form, k-slices)] of R1, R2 and T for one product in blocks of `tile` (rows, columns)
    over `slots` blocks a wave; None where the split does not apply."""
    bm, bn = tile
    tiles_m, tiles_n = -(-form.m // bm), -(-form.n // bn)
    waves, tail = divmod(tiles_m * tiles_n, slots)
    if (tail == 0 or waves < MIN_WAVES or tail * MAX_TAIL_SHARE > slots or tail > tiles_m
            or tiles_n < 2 or form.k < MIN_K):  # fmt: skip
        return None
    size, col = form.itemsize, (tiles_n - 1) * bn
    rows = (tiles_m - tail) * bm  # R2's rows of the last block column; T has the rest
    b_col = form.b + col * (size if form.trans_b else form.ldb * size)
    a_row = form.a + rows * (form.lda * size if form.trans_a else size)
    r1 = dataclasses.replace(form, n=col)
    r2 = dataclasses.replace(form, m=rows, n=form.n - col, b=b_col,
                             c=form.c + col * form.ldc * size)  # fmt: skip
    t = dataclasses.replace(form, m=form.m - rows, n=form.n - col, a=a_row, b=b_col,
                            c=form.c + (col * form.ldc + rows) * size)  # fmt: skip
    return [(r1, 1), (r2, 1), (t, slots // tail)]


def runner(config: Any, dtype: str, form: BlasForm, whole: Any,
           aligned: bool) -> TailSplit | None:  # fmt: skip
    """The three launches of config's product of form's shape (operands `aligned` or not),
    `whole` its one-launch GemmLauncher; None where the split does not apply."""
    from .families import FAMILIES as ALL

    params = config.as_dict()
    if config.family not in FAMILIES or params.get("SPLIT_K", 1) != 1 or whole.fixup:
        return None
    family = ALL[config.family]
    slots = cuda.sm_count() * model.resident_blocks(config, dtype)
    found = parts(form, family.block_tile(params), slots)
    if found is None:
        return None
    return TailSplit(config, dtype, form, found, whole, aligned)


class TailSplit:
    """The three launches of one product's shape at any operands (see the module)."""

    __slots__ = ("offsets", "shapes", "split", "whole", "workspaces")

    def __init__(self, config: Any, dtype: str, form: BlasForm,
                 found: list[tuple[BlasForm, int]], whole: Any, aligned: bool) -> None:  # fmt: skip
        from . import launch
        from .params import KernelConfig

        (r1, _), (r2, _), (t, slices) = found
        self.whole = whole
        split = KernelConfig.make(config.family, {**config.as_dict(), "SPLIT_K": slices})
        # (The parts' offsets keep 16-byte alignment: rows and columns in whole tiles.)
        self.split = launch.GemmLauncher(launch.plan(split, dtype, form.trans_a, form.trans_b,
                                                     aligned))  # fmt: skip
        self.workspaces = cuda.StreamWorkspaces(self.split.workspace_bytes(t.m, t.n, t.k))
        self.shapes = [(p.m, p.n) for p in (r1, r2, t)]
        # Each part's operands as offsets from the product's (a, b, c).
        self.offsets = [(p.a - form.a, p.b - form.b, p.c - form.c) for p in (r1, r2, t)]

    def reserve(self, stream: int) -> None:
        self.workspaces(_side_streams()[1])

    def forms(self, form: BlasForm) -> list[BlasForm]:
        """The parts of a product of the shape at form's operands."""
        return [dataclasses.replace(form, m=m, n=n, a=form.a + da, b=form.b + db, c=form.c + dc)
                for (m, n), (da, db, dc) in zip(self.shapes, self.offsets, strict=True)]

    def run(self, form: BlasForm, alpha: float, beta: float, stream: int) -> None:
        """The three launches, R1 on stream and the others on this thread's side streams,
        which start after the work queued on stream and before which stream's later work
        waits."""
        r1, r2, t = self.forms(form)
        side = _side_streams()
        for s in side:
            _driver.wait(s, stream)
        self.whole(r1, alpha, beta, stream)
        self.whole(r2, alpha, beta, side[0])
        self.split(t, alpha, beta, side[1], self.workspaces(side[1]))
        for s in side:
            _driver.wait(stream, s)


def _side_streams() -> tuple[int, int]:
    """This thread's two side streams in the current GPU's context (raw handles)."""
    import pycuda.driver as drv

    made = cuda.per_thread(f"tail-split-streams-{cuda.current_ordinal()}",
                           lambda: (drv.Stream(), drv.Stream()))  # fmt: skip
    return int(made[0].handle), int(made[1].handle)
