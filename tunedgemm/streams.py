"""The stream a call runs on: the caller's (PyCUDA, CuPy, PyTorch or a raw handle) or the default.

PyCUDA launches only on its own `Stream` objects, so a foreign stream is bridged with events:
our per-thread stream waits for the work already queued on the caller's stream (and on the
streams that produced the operands, from `__cuda_array_interface__`'s "stream" field), and
the caller's stream then waits for ours. The result is ordered on the caller's stream, as if
the call had been launched there, and the host never waits.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

# Handles with a meaning of their own (CUDA's CU_STREAM_LEGACY and CU_STREAM_PER_THREAD); the
# __cuda_array_interface__ protocol uses the same numbers.
LEGACY_DEFAULT = 1
PER_THREAD_DEFAULT = 2


def handle_of(stream: Any) -> int | None:
    """The raw CUstream handle of a stream argument; None for the legacy default stream."""
    if stream is None:
        return None
    if isinstance(stream, bool):
        raise TypeError("stream must be a CUDA stream (PyCUDA, CuPy, PyTorch) or a handle")
    if isinstance(stream, int):
        raw = stream
    elif hasattr(stream, "handle") and type(stream).__module__.startswith("pycuda"):
        raw = int(stream.handle)
    elif hasattr(stream, "cuda_stream"):  # torch.cuda.Stream
        raw = int(stream.cuda_stream)
    elif hasattr(stream, "ptr"):  # cupy.cuda.Stream / ExternalStream
        raw = int(stream.ptr)
    else:
        raise TypeError(
            f"stream must be a CUDA stream (PyCUDA, CuPy, PyTorch) or an int handle, "
            f"got {type(stream).__name__}"
        )
    if raw < 0:
        raise ValueError(f"stream handle must be non-negative, got {raw}")
    return None if raw in (0, LEGACY_DEFAULT) else raw


class _ThreadStream:
    """A thread's own PyCUDA stream for bridging, made on first use. Held by cuda.per_thread,
    so released while the thread's context is still current."""

    def __init__(self) -> None:
        self.stream: Any = None

    def own_stream(self) -> Any:
        if self.stream is None:
            import pycuda.driver as drv

            self.stream = drv.Stream()
        return self.stream


def _local() -> _ThreadStream:
    from . import cuda

    return cuda.per_thread("bridging", _ThreadStream)


def wait(waiter: int | None, producer: int | None) -> None:
    """Make stream `waiter` wait for the work queued so far on stream `producer` (an event
    from the driver module's pool; the host does not wait)."""
    if waiter == producer:
        return
    from . import _driver

    _driver.wait(waiter or 0, producer or 0)


@dataclass
class CallStream:
    """Where one call's device work goes: `pycuda` is the PyCUDA stream to launch on (None is
    the legacy default stream); `caller` is the foreign handle to hand the result back to."""

    pycuda: Any
    caller: int | None

    @property
    def handle(self) -> int | None:
        return None if self.pycuda is None else int(self.pycuda.handle)

    def after(self, producers: Iterable[int | None]) -> CallStream:
        """Order this call after the producers' queued work (operands' CAI streams)."""
        for producer in set(producers):
            if producer is not None and producer != self.handle:
                wait(self.handle, producer)
        return self

    def finish(self) -> None:
        """Hand the result back: the caller's stream waits for this call's work."""
        if self.caller is not None and self.caller != self.handle:
            wait(self.caller, self.handle)


def for_call(stream: Any) -> CallStream:
    """The CallStream of a `stream=` argument: PyCUDA streams are used as they are, any other
    stream is bridged through this thread's own PyCUDA stream."""
    raw = handle_of(stream)
    if raw is None:
        return CallStream(None, None)
    if type(stream).__module__.startswith("pycuda"):
        return CallStream(stream, None)
    ours = _local().own_stream()
    call = CallStream(ours, raw)
    wait(call.handle, raw)
    return call


def cai_stream(cai: dict[str, Any]) -> int | None:
    """The producer stream named by a __cuda_array_interface__ (v3 "stream"), None for the
    legacy default stream or when it names none."""
    value = cai.get("stream")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value == 0:
        raise ValueError(f"__cuda_array_interface__ has an invalid stream {value!r}")
    return None if value == LEGACY_DEFAULT else value
