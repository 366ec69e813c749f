"""The tile queue on stand-in devices (threads sleeping per tile): balance, reuse, errors."""

from __future__ import annotations

import _thread
import itertools
import signal
import threading
import time
from collections import deque

import pytest

from tunedgemm.tile_queue import Assignment, Tile, TileQueue, run_tiles


class StandIn:
    """A device that takes `seconds` per tile and keeps panels in rings like a real one (the
    oldest panel goes when a ring is full), checking the queue's upload flags against them."""

    def __init__(self, name, seconds, row_slots=None, col_slots=None, fail_at=None,
                 fail_with=RuntimeError):  # fmt: skip
        self.name, self.seconds = name, seconds
        self.rows = deque(maxlen=row_slots)
        self.cols = deque(maxlen=col_slots)
        self.fail_at, self.fail_with = fail_at, fail_with
        self.uploads = 0
        self.thread = None
        self.opened = self.closed = False
        self.done = []

    def open(self):
        self.thread = threading.current_thread()
        self.opened = True

    def run(self, assignment: Assignment):
        assert threading.current_thread() is self.thread  # open, run, close: one thread
        if len(self.done) == self.fail_at:
            raise self.fail_with(f"{self.name} failed")
        tile = assignment.tile
        for ring, panel, upload in ((self.rows, tile.row, assignment.upload_row),
                                    (self.cols, tile.col, assignment.upload_col)):  # fmt: skip
            assert upload == (panel not in ring), "the queue's model and the device differ"
            if upload:
                ring.append(panel)
                self.uploads += 1
        time.sleep(self.seconds)
        self.done.append(tile)

    def close(self):
        assert threading.current_thread() is self.thread
        self.closed = True


def grid(rows, cols):
    return [Tile(r, c) for r, c in itertools.product(range(rows), range(cols))]


def test_faster_devices_take_proportionally_more():
    speeds = (4, 2, 1)  # tiles per unit of time
    # Sleeps long beside a thread's wake-up delay on a loaded machine (milliseconds).
    workers = [StandIn(f"gpu{i}", 0.015 * 4 / s) for i, s in enumerate(speeds)]
    tiles = grid(6, 7)
    stats = run_tiles(tiles, workers)
    for s, st in zip(speeds, stats, strict=True):
        expected = len(tiles) * s / sum(speeds)
        assert abs(len(st.tiles) - expected) <= 0.25 * expected + 2, (
            [len(x.tiles) for x in stats]
        )


@pytest.mark.parametrize("row_slots", [None, 2, 1])
@pytest.mark.parametrize("n_workers", [1, 2, 3])
def test_every_tile_once_and_panels_uploaded_once_per_device(row_slots, n_workers):
    rows, cols = 7, 5
    tiles = grid(rows, cols)
    workers = [StandIn(f"gpu{i}", 0.001 * (1 + i), row_slots) for i in range(n_workers)]
    stats = run_tiles(tiles, workers, row_slots=row_slots)
    done = sorted(t for st in stats for t in st.tiles)
    assert done == sorted(tiles)  # each exactly once
    for worker, st in zip(workers, stats, strict=True):
        assert st.tiles == worker.done
        assert st.row_uploads + st.col_uploads == worker.uploads
        assert st.row_uploads <= len({t.row for t in st.tiles})  # no row panel twice
        assert st.col_uploads <= len({t.col for t in st.tiles})
        assert worker.uploads <= rows + cols
        assert worker.opened and worker.closed


def test_one_worker_sweeps_rows_and_keeps_columns():
    """Alone, a worker with a ring of one A panel uploads each panel exactly once, row by row
    (in the caller's own thread)."""
    worker = StandIn("gpu0", 0.0, row_slots=1)
    (stats,) = run_tiles(grid(4, 3), [worker], row_slots=1)
    assert worker.thread is threading.current_thread()
    assert [t.row for t in stats.tiles] == [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3]
    assert (stats.row_uploads, stats.col_uploads) == (4, 3)


def test_workers_start_on_different_rows_and_share_the_last_from_its_far_end():
    queue = TileQueue(grid(2, 4), workers=3)
    first = [queue.take(w) for w in range(3)]
    # each from the first column: they need the same B panel first (one uploads it for all)
    assert [a.tile for a in first[:2]] == [Tile(0, 0), Tile(1, 0)]
    assert first[2].tile == Tile(0, 3)  # no free row: the fullest, from its far end
    assert all(a.upload_row and a.upload_col for a in first)
    assert queue.take(2).tile == Tile(0, 2)  # keeps going from that end
    assert queue.take(0).tile == Tile(0, 1)


def test_workers_sweep_their_rows_columns_in_the_same_order():
    queue = TileQueue(grid(2, 4), workers=2)
    assert queue.take(0).tile == Tile(0, 0)
    assert [queue.take(1).tile.col for _ in range(4)] == [0, 1, 2, 3]
    assert [queue.take(0).tile.col for _ in range(3)] == [1, 2, 3]


def test_held_columns_come_first():
    queue = TileQueue(grid(2, 3), workers=1)
    assert [queue.take(0).tile.col for _ in range(3)] == [0, 1, 2]
    nxt = queue.take(0)
    assert nxt.upload_row and not nxt.upload_col


def test_a_failing_worker_stops_the_others_and_its_error_reaches_the_caller():
    workers = [StandIn("gpu0", 0.002), StandIn("gpu1", 0.002, fail_at=3)]
    tiles = grid(10, 10)
    with pytest.raises(RuntimeError, match="gpu1 failed"):
        run_tiles(tiles, workers)
    assert all(w.closed for w in workers)
    assert len(workers[0].done) + len(workers[1].done) < len(tiles) // 2


def test_a_failing_open_is_raised_too():
    class NoContext(StandIn):
        def open(self):
            raise OSError("no context on gpu1")

    workers = [StandIn("gpu0", 0.002), NoContext("gpu1", 0.002)]
    with pytest.raises(OSError, match="no context"):
        run_tiles(grid(10, 10), workers)
    assert len(workers[0].done) < 100


def test_keyboard_interrupt_in_a_worker():
    workers = [StandIn("gpu0", 0.002, fail_at=2, fail_with=KeyboardInterrupt),
               StandIn("gpu1", 0.002)]  # fmt: skip
    with pytest.raises(KeyboardInterrupt):
        run_tiles(grid(10, 10), workers)
    assert all(w.closed for w in workers)


def test_ctrl_c_in_the_caller_stops_every_worker_before_it_returns():
    class Interrupting(StandIn):
        def run(self, assignment):
            super().run(assignment)
            if len(self.done) == 2:
                _thread.interrupt_main()  # as Ctrl-C would, in the waiting caller

    # 10 ms tiles: the caller notices the interrupt within its 0.1 s wait slice, long before
    # the 100 tiles could be done. Python's Ctrl-C handler is installed for the test: a
    # process started in the background (`cmd &` in a script) ignores SIGINT, and then
    # interrupt_main does nothing (the suite failed so when run with nohup ... &).
    workers = [Interrupting("gpu0", 0.01), StandIn("gpu1", 0.01)]
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            run_tiles(grid(10, 10), workers)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert all(w.closed for w in workers)
    assert len(workers[0].done) + len(workers[1].done) < 100


def test_bad_arguments():
    with pytest.raises(ValueError, match="row_slots"):
        TileQueue(grid(1, 1), workers=1, row_slots=0)
    with pytest.raises(ValueError, match="workers"):
        TileQueue(grid(1, 1), workers=0)


def test_no_tile_runs_before_every_worker_has_opened():
    """What an open allocates fails before any tile is written: a worker whose open is slow
    holds the others back, and one whose open fails leaves every tile undone."""
    events: list[str] = []

    class Slow(StandIn):
        def open(self):
            super().open()
            time.sleep(0.2)
            events.append(f"{self.name} opened")

    class Logged(StandIn):
        def open(self):
            super().open()
            events.append(f"{self.name} opened")

        def run(self, assignment):
            events.append(f"{self.name} ran")
            super().run(assignment)

    run_tiles(grid(3, 3), [Logged("fast", 0.0), Slow("slow", 0.0)], row_slots=2)
    assert events.index("slow opened") < events.index("fast ran")

    class Refused(StandIn):
        def open(self):
            time.sleep(0.1)
            raise MemoryError("out of device memory")

    fast = Logged("fast", 0.0)
    with pytest.raises(MemoryError):
        run_tiles(grid(3, 3), [fast, Refused("oom", 0.0)], row_slots=2)
    assert fast.done == []
