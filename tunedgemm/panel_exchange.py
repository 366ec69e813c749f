"""B panels shared between the GPUs of one multi-GPU host call: each goes up from the host once.

Every GPU of a call takes rows of C, so each needs every panel of B. Uploaded by each GPU
from host memory, B crossed the host's memory twice: on two H100s 32768^2 float32 moved 16
GiB through pinned staging for 12 GiB of operands and result, and ran 1.73x one GPU
(2026-11-25). With the exchange, the first GPU to need a panel claims it and uploads it
from the host; the others wait for that upload to be queued and copy the panel from that
GPU's memory over NVLink (tunedgemm/_driver.copy_device, after the uploader's event).

The panels stay where they are for the whole call (plans that keep B only), so an
exchanged panel is never overwritten; the exchange also holds every GPU's blocks until all
of them are done reading (`leave`, then `wait_all`), since a copy queued by one GPU may
still read another's memory after that one's last tile.

The call's first panel is needed by every GPU at once (they sweep the columns in the same
order), while each also stages its own first A panel: it goes up in parts, one per GPU,
each GPU staging one part and copying the others' (`parts`, `claim_part`).
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Published:
    """A panel in GPU `ordinal`'s memory at `ptr` (nbytes), ready after raw `event`
    (recorded in that GPU's context, on its upload stream)."""

    ordinal: int
    ptr: int
    nbytes: int
    event: int


class PanelExchange:
    """The panels of one call, keyed as the pipeline's B blocks, shared by its GPU workers."""

    def __init__(self, split_first: bool = False) -> None:
        self.ready = threading.Condition()
        self.panels: dict[Any, Published] = {}
        self.claims: dict[Any, int] = {}  # panel -> the GPU uploading it now
        self.contexts: dict[int, int] = {}  # GPU -> its context handle (for peer access)
        # GPUs that have joined and may still read another's panels. Only those that joined:
        # a worker that never started (Ctrl-C while the threads start) never leaves, and no
        # panel is published before every worker has opened (run_tiles), so none is missed.
        self.working: set[int] = set()
        self.split_first = split_first  # the first panel asked for goes up in parts
        self.split: dict[Any, int] = {}  # panel -> the parts it goes up in (1: whole)
        self.uploads: Counter[int] = Counter()  # per GPU: panels it uploaded from the host
        self.parts: Counter[int] = Counter()  # per GPU: parts of split panels it uploaded
        self.copies: Counter[int] = Counter()  # per GPU: panels (or parts) it copied

    def join(self, ordinal: int, context: int) -> None:
        with self.ready:
            self.contexts[ordinal] = context
            self.working.add(ordinal)

    def take(self, key: Any, ordinal: int) -> Published | None:
        """A panel another GPU has uploaded (waiting while one is uploading it), or None:
        then this GPU has claimed it and must `publish` it (or `abandon` it)."""
        with self.ready:
            while True:
                found = self.panels.get(key)
                if found is not None and found.ordinal != ordinal:
                    return found
                claimer = self.claims.get(key)
                if claimer is None or claimer == ordinal:
                    self.claims[key] = ordinal
                    return None
                self.ready.wait()

    def claim(self, key: Any, ordinal: int) -> bool:
        """Claim a panel no GPU has published or claimed, without waiting: True if this GPU
        now uploads it (then `take` returns None for it here)."""
        with self.ready:
            if key in self.panels or self.claims.get(key, ordinal) != ordinal:
                return False
            self.claims[key] = ordinal
            return True

    def parts_of(self, key: Any) -> int:
        """The parts `key` goes up from the host in: one per GPU that joined for the call's
        first panel (when split_first), else 1. Decided once per panel, by the first GPU
        that asks."""
        with self.ready:
            if key not in self.split:
                first = self.split_first and not (self.split or self.panels or self.claims)
                self.split[key] = max(1, len(self.working)) if first else 1
            return self.split[key]

    def claim_part(self, key: Any, parts: int, ordinal: int) -> int | None:
        """Claim the first part of split panel `key` that no GPU has claimed or published:
        its index (the part's key is (key, index)), or None when every part is taken."""
        with self.ready:
            for index in range(parts):
                part = (key, index)
                if part not in self.panels and part not in self.claims:
                    self.claims[part] = ordinal
                    return index
            return None

    def publish(self, key: Any, panel: Published, part: bool = False) -> None:
        with self.ready:
            self.panels.setdefault(key, panel)
            (self.parts if part else self.uploads)[panel.ordinal] += 1
            self.claims.pop(key, None)
            self.ready.notify_all()

    def copied(self, ordinal: int) -> None:
        with self.ready:
            self.copies[ordinal] += 1

    def abandon(self, key: Any, ordinal: int) -> None:
        """The claimer failed: another GPU may upload the panel itself."""
        with self.ready:
            if self.claims.get(key) == ordinal:
                del self.claims[key]
            self.ready.notify_all()

    def context_of(self, ordinal: int) -> int | None:
        with self.ready:
            return self.contexts.get(ordinal)

    def leave(self, ordinal: int) -> None:
        """GPU `ordinal` reads no other GPU's panels any more (its copies have finished), and
        uploads none (its claims are dropped)."""
        with self.ready:
            self.working.discard(ordinal)
            for key in [k for k, owner in self.claims.items() if owner == ordinal]:
                del self.claims[key]
            self.ready.notify_all()

    def wait_all(self) -> None:
        """Until every GPU has left: only then may a GPU free the panels others copied."""
        with self.ready:
            while self.working:
                self.ready.wait()

    def give_events(self, ordinal: int) -> None:
        """Hand back to _driver's pool the events of the panels GPU `ordinal` published."""
        from . import _driver

        with self.ready:
            mine = [k for k, panel in self.panels.items() if panel.ordinal == ordinal]
            events = [self.panels.pop(k).event for k in mine]
        for event in events:
            _driver.events.give(event)
