"""Output blocks of a tunedgemm.dask product dealt to the workers in turn, by a scheduler plugin.

A block product on CuPy blocks only queues its kernel, so distributed measures it at
microseconds and sees moving a 256 MiB operand block as the dear part: it runs most products
where their operands already are. On two H100 workers, with CUDA IPC transfers, 32768^2
float32 in chunks of 8192 took 1.04 s against 1.40 s on one worker (2026-11-25), far from
half. Where blocks move over NVLink in milliseconds (transfer="ipc"), an even split is
worth more than locality: every product and partial sum of output block (i, j) goes to
worker (i * columns + j) mod workers, in the order of their addresses (two H100 workers then
ran 32 products each, and the product took 0.91 s).

The share tasks of the input blocks (tunedgemm/dask_ipc.py) run first on each worker: a
share records an event on the worker's stream, and a worker sending the block to another
waits for that event. Run after products had been queued, a share's event waited for them:
on two H200 workers (2026-11-26) a transfer took 58 ms on average, up to 0.3 s, for a copy of
about a millisecond. The Dealer raises their priority by half a user priority: ahead of the
products (and any task of the same user priority), behind tasks given a higher one.

Dask annotations would say the same, but dask.array's low-level fusion (on by default)
flattens the graph and drops them. So the graph names what it wants in its keys
(`dealt_name`), and a scheduler plugin (`Dealer`, registered by `deal` once per client and
scheduler) restricts each such task to its worker as the graph arrives, loosely: if that
worker is gone, another takes the task. Where the plugin cannot be registered, the graph is
not dealt out and the scheduler places it as before.
"""

from __future__ import annotations

import logging
import re
import weakref
from typing import Any

logger = logging.getLogger(__name__)

PLUGIN_NAME = "tunedgemm-dealer"
_DEALT = re.compile(r"^tunedgemm-.*-dealt(\d+)$")  # the key names dealt_name makes
SHARE_PREFIX = "tunedgemm-share-"  # the key names of share tasks (tunedgemm.dask._product)
_registered: set[str] = set()  # client id @ scheduler address, where the plugin is


def dealt_name(name: str, columns: int) -> str:
    """`name` marked so that the Dealer places task (name, i, j, ...) on worker
    (i * columns + j) mod workers."""
    return f"{name}-dealt{columns}"


def owner(key: Any, workers: list[str]) -> str | None:
    """The worker of a dealt task's key among `workers` (sorted); None for any other key."""
    if not workers or not isinstance(key, tuple) or len(key) < 3:
        return None
    found = _DEALT.match(str(key[0]))
    if found is None:
        return None
    return workers[(int(key[1]) * int(found.group(1)) + int(key[2])) % len(workers)]


def is_share(key: Any) -> bool:
    return isinstance(key, tuple) and bool(key) and str(key[0]).startswith(SHARE_PREFIX)


def first(priority: tuple[Any, ...]) -> tuple[Any, ...]:
    """A scheduler priority (-user priority, generation, order; lowest runs first) raised
    half a user priority: ahead of every task of the same user priority, behind those of a
    higher one."""
    return (priority[0] - 0.5, *priority[1:])


try:
    from distributed.diagnostics.plugin import SchedulerPlugin
except ImportError:  # tunedgemm.dask without distributed: nothing to register with
    SchedulerPlugin = object  # type: ignore[assignment,misc,unused-ignore]


class Dealer(SchedulerPlugin):
    """Restricts each new dealt task to its worker (loosely), and runs share tasks first,
    before the scheduler places them (plugins see a graph after its priorities are set and
    before its first transitions)."""

    idempotent = True  # registering it again is a no-op

    def update_graph(self, scheduler: Any, *, tasks: list[Any] = (), **kwargs: Any) -> None:  # type: ignore[assignment]
        workers = sorted(scheduler.workers)
        # Share tasks raised already: a later graph touching one again (its key unchanged)
        # must not raise it further. Weakly: the scheduler forgets tasks.
        raised = self.__dict__.setdefault("raised", weakref.WeakSet())
        for key in tasks:
            if is_share(key):
                state = scheduler.tasks.get(key)
                if (state is not None and state.state == "released" and state.priority
                        and state not in raised):  # fmt: skip
                    state.priority = first(state.priority)
                    raised.add(state)
                continue
            worker = owner(key, workers)
            state = scheduler.tasks.get(key) if worker is not None else None
            if state is None or state.state != "released" or state.worker_restrictions:
                continue
            state.worker_restrictions = {worker}
            state.loose_restrictions = True


def deal(client: Any) -> bool:
    """Make sure the scheduler of `client` has the Dealer (registered once per client and
    scheduler); False where it cannot be (an asynchronous client, whose registration would
    need awaiting; a scheduler that refuses it): then the graph is not dealt out."""
    if getattr(client, "asynchronous", False):
        return False
    try:
        key = f"{client.id}@{client.scheduler.address}"
        if key not in _registered:
            client.register_plugin(Dealer(), name=PLUGIN_NAME)
            _registered.add(key)
    except Exception as exc:  # e.g. tunedgemm not importable where the scheduler runs
        logger.warning("tunedgemm.dask: output blocks not dealt out (%s)", exc)
        return False
    return True
