"""New device results handed out again: a plan's previous result, once its caller dropped it.

A repeated device call with a new result (`sgemm(1.0, a, b)` on CuPy, PyTorch or PyCUDA
arrays) spent 2.3-4.9 us of a 15-20 us call making that result from the library's allocator
(H100 host, docs/results/profile). Most such callers drop the previous result before the next
call. A CallPlan keeps its last new result; when the next call finds that nothing else holds
it (reference counts back at what they were when it was made, no weak references, no views,
no other holder of its memory) and it runs on the same stream, that array is written again
instead of allocating. The stream order makes this as safe as the libraries' own pools, which
hand a block freed on a stream to the next allocation on that stream.

PyTorch is left out by default: a tensor handed to another stream with `record_stream` tells
PyTorch's allocator to wait for that stream before reusing the block, and nothing visible from
Python records it; TUNEDGEMM_RECYCLE_RESULTS=all takes torch in (for code that does not use
record_stream on these results). Results over RESULT_BYTES_MAX are not kept (their
allocation is small beside their product), and when the kept results of all plans pass
HELD_BYTES_MAX, the least recently made are let go. Free-threaded builds, where reference
counts say nothing, never recycle.
"""

from __future__ import annotations

import collections
import sys
import threading
import weakref
from collections.abc import Callable
from typing import Any

from . import settings

RESULT_BYTES_MAX = 16 << 20  # 2048^2 float32 fits; an 8192^2 product does not
HELD_BYTES_MAX = 64 << 20  # kept results of all plans together; the least recently made go

_GIL = getattr(sys, "_is_gil_enabled", lambda: True)()
_lock = threading.Lock()
# Spares that keep a result, least recently made first, and the bytes they keep. A plan whose
# result is reused call after call never makes again, so it ages, and may lose its result to
# newer plans: it then makes one more, and is the newest again.
_keeping: collections.OrderedDict[Spares, None] = collections.OrderedDict()
_held = [0]


def enabled(kind_name: str) -> bool:
    """Whether new results of this library may be recycled under the current setting."""
    if not _GIL:
        return False
    mode = settings.get("TUNEDGEMM_RECYCLE_RESULTS")
    return mode == "all" or (mode == "auto" and kind_name != "torch")


class Spares:
    """The last new result of one CallPlan, with the stream it was made on and its holder
    counts when only this object held it."""

    __slots__ = ("holders", "items", "nbytes")

    def __init__(self, holders: Callable[[list[Any]], tuple[int, ...]], nbytes: int) -> None:
        self.holders = holders
        self.nbytes = nbytes
        self.items: list[tuple[list[Any], int, tuple[int, ...]]] = []

    @staticmethod
    def of(kind: Any, nbytes: int) -> Spares | None:
        """Spares for a plan's new results, or None where they are not to be kept."""
        if nbytes > RESULT_BYTES_MAX or not enabled(kind.name):
            return None
        return Spares(kind.holders, nbytes)

    def take(self, stream: int) -> Any:
        """The kept result if nothing else holds it and it was made on `stream`; else None."""
        try:
            box, made_on, baseline = self.items.pop()  # atomic: two threads never share one
        except IndexError:
            return None
        if made_on != stream or self.holders(box) != baseline:
            return None  # its caller still holds it (or another stream): theirs to keep
        self.items.append((box, made_on, baseline))
        return box[0]

    def make(self, empty: Callable[..., Any], *args: Any, stream: int) -> Any:
        """A new result from `empty(*args)`, kept, and handed out. Its holder counts are taken
        while the box is its only holder, as `take` sees it."""
        box = [empty(*args)]
        baseline = self.holders(box)
        self.items[:] = [(box, stream, baseline)]
        with _lock:
            if self in _keeping:
                _keeping.move_to_end(self)
            else:
                _keeping[self] = None
                _held[0] += self.nbytes
            while _held[0] > HELD_BYTES_MAX:
                oldest, _ = _keeping.popitem(last=False)
                oldest.items.clear()
                _held[0] -= oldest.nbytes
        return box[0]


def release() -> None:
    """Drop every kept result (the plans are being dropped)."""
    with _lock:
        for spares in _keeping:
            spares.items.clear()
        _keeping.clear()
        _held[0] = 0


def counts(*objects: Any) -> tuple[int, ...]:
    """Reference counts of each object (as this call sees them) and the first's weak references."""
    return (*(sys.getrefcount(x) for x in objects), weakref.getweakrefcount(objects[0]))
