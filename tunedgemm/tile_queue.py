"""A shared queue of C tiles for several devices: dynamic balance, each panel uploaded once per
device.

C is cut into row panels (each needs one panel of A) and column panels (one panel of B); a
tile is a (row, col) pair. One worker per device takes the next tile when it is ready for
one, so a faster or less busy device simply takes more: there is no static split. The
queue keeps, per worker, the panels it holds on its device and hands each worker first a
tile whose panels it holds, then one in a row it holds, then a new row, so that:

* a worker sweeps a row to its end before it starts another, and never comes back to a row
  it left (every tile of a row it left was taken), so it uploads each A panel at most once,
  even when it keeps only one or two A panels (a ring, as pipeline.py keeps);
* it keeps the B panels it has, when there is room for them all (`col_slots` None), so it
  uploads each B panel at most once: at most rows + cols panel uploads per device;
* workers start on different rows, and only when every row is taken does one share a row
  another is on (from the far end of it), so that the last tiles are shared too;
* every worker sweeps the columns of its rows in the same order, so that with a panel
  exchange (tunedgemm/panel_exchange.py) the workers need the same B panel at about the same
  time: one uploads it while the others stage their own A panels, then they copy it. (Each
  starting at its own column made every worker upload a B panel of its own at the start of
  a call, all at once through the host's memory: on two H200s, 2026-11-26, the first
  products started 31 ms into a 16384^2 float32 call of 125 ms, as late as on one GPU.)

Held panels are modelled as a ring per worker: with `row_slots` (or `col_slots`) set, the
oldest panel makes room for a new one, which is what a device ring that takes its next slot
round-robin at each upload does. Each Assignment says which panels the worker must upload.

`run_tiles` drives one thread per worker (the caller's own thread when there is one worker,
unless asked otherwise):
a worker's exception, KeyboardInterrupt included, stops the others after their current tile
and is raised in the caller once every worker has closed.
"""

from __future__ import annotations

import threading
import traceback
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True, order=True)
class Tile:
    """A tile of C: its row panel (an A panel) and column panel (a B panel)."""

    row: int
    col: int


@dataclass(frozen=True)
class Assignment:
    """A tile for a worker, and which of its panels the worker must upload first."""

    tile: Tile
    upload_row: bool
    upload_col: bool


@dataclass
class WorkerStats:
    """What one worker did: its tiles, in order, and its panel uploads."""

    name: str
    tiles: list[Tile] = field(default_factory=list)
    row_uploads: int = 0
    col_uploads: int = 0


class _Held:
    """The panels of one kind a worker holds, oldest first, in at most `slots` places."""

    def __init__(self, slots: int | None) -> None:
        self.slots = slots
        self.order: deque[int] = deque()

    def __contains__(self, panel: int) -> bool:
        return panel in self.order

    def add(self, panel: int) -> None:
        if self.slots is not None and len(self.order) >= self.slots:
            self.order.popleft()
        self.order.append(panel)


class TileQueue:
    """Tiles left to do, handed out under a lock to workers 0..workers-1 (see the module
    docstring for the order). `stop` makes every later `take` return None."""

    def __init__(self, tiles: Iterable[Tile], workers: int, row_slots: int | None = None,
                 col_slots: int | None = None) -> None:  # fmt: skip
        for slots, name in ((row_slots, "row_slots"), (col_slots, "col_slots")):
            if slots is not None and slots < 1:
                raise ValueError(f"{name} must be None or at least 1, got {slots}")
        if workers < 1:
            raise ValueError(f"workers must be at least 1, got {workers}")
        self.left: dict[int, list[int]] = {}  # row -> its columns not yet handed out
        for tile in sorted(set(tiles)):
            self.left.setdefault(tile.row, []).append(tile.col)
        self.rows = [_Held(row_slots) for _ in range(workers)]
        self.cols = [_Held(col_slots) for _ in range(workers)]
        self.from_end: list[set[int]] = [set() for _ in range(workers)]  # rows shared late
        self.lock = threading.Lock()
        self.stopped = False

    def stop(self) -> None:
        with self.lock:
            self.stopped = True

    def take(self, worker: int) -> Assignment | None:
        """The next tile for `worker`, or None when none is left or the queue was stopped."""
        with self.lock:
            if self.stopped or not self.left:
                return None
            rows, cols = self.rows[worker], self.cols[worker]
            row = next((r for r in reversed(rows.order) if r in self.left), None)
            if row is None:
                row = self._new_row(worker)
            left = self.left[row]
            held = [c for c in left if c in cols]
            col = (held or left)[-1 if row in self.from_end[worker] else 0]
            left.remove(col)
            if not left:
                del self.left[row]
            assignment = Assignment(Tile(row, col), row not in rows, col not in cols)
            if assignment.upload_row:
                rows.add(row)
            if assignment.upload_col:
                cols.add(col)
            return assignment

    def _new_row(self, worker: int) -> int:
        """A row for a worker that holds none with tiles left: the first row no other worker
        is on, else the fullest one, whose tiles it then takes from the far end."""
        others = {r for w, held in enumerate(self.rows) if w != worker for r in held.order}
        free = [r for r in self.left if r not in others]
        if free:
            return min(free)
        row = max(self.left, key=lambda r: (len(self.left[r]), -r))
        self.from_end[worker].add(row)
        return row


class TileWorker(Protocol):
    """One device's worker. open and close run in the worker's own thread, close always (also
    after an error), so that a device's context, streams and staging live in one thread."""

    name: str

    def open(self) -> None: ...

    def run(self, assignment: Assignment) -> None: ...

    def close(self) -> None: ...


def run_tiles(tiles: Iterable[Tile], workers: Sequence[TileWorker], row_slots: int | None = None,
              col_slots: int | None = None,
              own_threads: bool = False) -> list[WorkerStats]:  # fmt: skip
    """Do every tile exactly once, on whichever worker is ready first (see the module
    docstring); returns what each worker did, in the order of `workers`. `own_threads`:
    a thread per worker even for one (a worker that binds its thread to a GPU)."""
    queue = TileQueue(tiles, len(workers), row_slots, col_slots)
    stats = [WorkerStats(w.name) for w in workers]
    errors: list[BaseException] = []
    finished = [threading.Event() for _ in workers]
    # No worker takes a tile before every worker has opened (or the call has stopped): what
    # an open allocates (device blocks, workspaces) then fails before any tile is written.
    opened, ready = [0], threading.Condition()

    def all_open() -> bool:
        return opened[0] == len(workers) or queue.stopped

    def work(index: int) -> None:
        worker, done = workers[index], stats[index]
        try:
            worker.open()
            try:
                with ready:
                    opened[0] += 1
                    ready.notify_all()
                    while not all_open():  # (a stop notifies no one: look again now and then)
                        ready.wait(0.05)
                while (assignment := queue.take(index)) is not None:
                    worker.run(assignment)
                    done.tiles.append(assignment.tile)
                    done.row_uploads += assignment.upload_row
                    done.col_uploads += assignment.upload_col
            except BaseException:
                queue.stop()  # before close, which may wait for the other workers to finish
                raise
            finally:
                worker.close()
        except BaseException as exc:  # KeyboardInterrupt too: the caller re-raises it
            # The frames' locals go here, in the worker's thread: they may hold the GPU
            # objects of a context current only here (PyCUDA frees them nowhere else).
            traceback.clear_frames(exc.__traceback__)
            errors.append(exc)
            queue.stop()
        finally:
            finished[index].set()

    if len(workers) == 1 and not own_threads:
        # No thread: the caller's thread-local streams serve as they are.
        work(0)
    else:
        _in_threads(work, workers, finished, queue, errors)
    if errors:
        raise errors[0]
    return stats


def _in_threads(work: Callable[[int], None], workers: Sequence[TileWorker],
                finished: list[threading.Event], queue: TileQueue,
                errors: list[BaseException]) -> None:  # fmt: skip
    """work(i) in a thread per worker, waited for here even when Ctrl-C comes meanwhile.

    The threads are started from a launcher thread, and waited for on events, not joined:
    a KeyboardInterrupt (which lands in this thread) inside Thread.start could leave a
    worker running that we would not know of, and one inside Thread.join makes CPython 3.11
    take a live thread for finished (its bpo-45274 handling releases the thread's lock)."""
    started: list[int] = []
    launched, launch_done = threading.Event(), threading.Event()

    def launch() -> None:
        launched.set()
        try:
            for index, worker in enumerate(workers):
                if queue.stopped:
                    return
                threading.Thread(target=work, args=(index,), name=f"tunedgemm-{worker.name}",
                                 daemon=True).start()  # fmt: skip
                started.append(index)
        except BaseException as exc:  # no more threads: those started finish the tiles
            errors.append(exc)
            queue.stop()
        finally:
            launch_done.set()

    def wait_for_all() -> None:
        _wait(launch_done)  # first: then `started` is complete
        for index in started:
            _wait(finished[index])

    try:
        threading.Thread(target=launch, name="tunedgemm-launcher", daemon=True).start()
        wait_for_all()
    except BaseException as exc:  # KeyboardInterrupt while starting or waiting
        queue.stop()  # from here on no worker starts a tile
        if launched.is_set():  # else no worker has started, and none will take a tile
            wait_for_all()  # none may touch the caller's arrays after we return
        errors.insert(0, exc)


def _wait(event: threading.Event) -> None:
    while not event.wait(0.1):  # in slices, so that Ctrl-C reaches this thread
        pass
