"""The few CUDA driver calls made through ctypes: kernel launches on any stream, and events.

PyCUDA launches only on its own Stream objects and hides the CUfunction handle, so a call on
a CuPy or PyTorch stream had to be bridged through a PyCUDA stream with two event waits.
Kernels compiled through PyCUDA (tunedgemm/compiler.py) are also loaded here from the same
cubin, and launched with cuLaunchKernel on the caller's raw stream handle: no bridging, and
about half of PyCUDA's per-launch cost, since a plan fills its argument buffers once.
"""

from __future__ import annotations

import ctypes
import functools
import threading
from typing import Any

_P, _U, _I = ctypes.c_void_p, ctypes.c_uint, ctypes.c_int
_U64, _SIZE = ctypes.c_uint64, ctypes.c_size_t  # CUdeviceptr and size_t: 64-bit
CU_EVENT_DISABLE_TIMING = 2
CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
CUDA_ERROR_NOT_READY = 600
CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED = 704


class DriverError(RuntimeError):
    """A CUDA driver call returned an error."""


@functools.lru_cache(maxsize=1)
def lib() -> Any:
    """libcuda with the signatures of the calls used here declared (pointers stay 64-bit)."""
    cuda = ctypes.CDLL("libcuda.so.1")
    for name, args in (
        ("cuModuleLoadData", [ctypes.POINTER(_P), ctypes.c_char_p]),
        ("cuModuleGetFunction", [ctypes.POINTER(_P), _P, ctypes.c_char_p]),
        ("cuFuncSetAttribute", [_P, _I, _I]),
        ("cuLaunchKernel", [_P, _U, _U, _U, _U, _U, _U, _U, _P, _P, _P]),
        ("cuEventCreate", [ctypes.POINTER(_P), _U]),
        ("cuEventRecord", [_P, _P]),
        ("cuEventQuery", [_P]),
        ("cuEventSynchronize", [_P]),
        ("cuEventDestroy_v2", [_P]),
        ("cuStreamWaitEvent", [_P, _P, _U]),
        ("cuGetErrorName", [_I, ctypes.POINTER(ctypes.c_char_p)]),
        ("cuPointerGetAttribute", [_P, _I, ctypes.c_uint64]),
        ("cuMemGetAddressRange_v2", [ctypes.POINTER(_U64), ctypes.POINTER(_SIZE), _U64]),
        ("cuMemcpyDtoDAsync_v2", [_U64, _U64, _SIZE, _P]),
        ("cuMemsetD32Async", [_U64, _U, _SIZE, _P]),
        ("cuCtxGetCurrent", [ctypes.POINTER(_P)]),
        ("cuCtxEnablePeerAccess", [_P, _U]),
        ("cuDeviceGet", [ctypes.POINTER(_I), _I]),
        ("cuDeviceCanAccessPeer", [ctypes.POINTER(_I), _I, _I]),
    ):
        function = getattr(cuda, name)
        function.argtypes = args
        function.restype = _I
    return cuda


def check(code: int, what: str) -> None:
    if code != 0:
        name = ctypes.c_char_p()
        lib().cuGetErrorName(code, ctypes.byref(name))
        label = name.value.decode() if name.value else "unknown error"
        raise DriverError(f"tunedgemm: {what} failed with {label} ({code})")


def load_function(cubin: bytes, name: str, smem_bytes: int = 0) -> int:
    """The CUfunction `name` of a cubin loaded into the current context (kept for the
    process: modules are few and small)."""
    module, function = _P(), _P()
    check(lib().cuModuleLoadData(ctypes.byref(module), cubin), "cuModuleLoadData")
    check(lib().cuModuleGetFunction(ctypes.byref(function), module, name.encode()),
          f"cuModuleGetFunction({name})")  # fmt: skip
    if smem_bytes > 48 * 1024:
        check(lib().cuFuncSetAttribute(function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                       smem_bytes), "cuFuncSetAttribute")  # fmt: skip
    return int(function.value or 0)


def _fast_kernel(function: int, types: str, block: tuple[int, int, int], smem: int) -> Any:
    """The C launcher of tunedgemm/_fastlaunch.c for this kernel (None without the
    extension): it packs the arguments on its own stack, so it needs no lock either."""
    try:
        from . import _fastlaunch
    except ImportError:
        return None
    try:
        address = ctypes.cast(lib().cuLaunchKernel, _P).value
    except ctypes.ArgumentError:  # not a C function (the tests' stand-in driver)
        return None
    try:
        return _fastlaunch.Kernel(address, function, block, smem, types)
    except ValueError:  # an argument type the C side does not pack: ctypes does
        return None


# What tunedgemm/_fastlaunch.c's LtMatmul calls to capture and replay a cuBLASLt call as a
# CUDA graph, in the order it takes them.
GRAPH_CALLS = ("cuGraphLaunch", "cuStreamIsCapturing", "cuStreamCreate", "cuStreamDestroy_v2",
               "cuStreamBeginCapture_v2", "cuStreamEndCapture", "cuGraphInstantiateWithFlags",
               "cuGraphDestroy", "cuGraphExecDestroy")  # fmt: skip


_graph_calls: list[tuple[int, ...]] = []  # found once


def graph_calls() -> tuple[int, ...] | None:
    """The addresses of GRAPH_CALLS in libcuda (None where one is missing: a driver before
    CUDA 11.4, or the tests' stand-in driver)."""
    if not _graph_calls:
        try:
            cuda = lib()
            _graph_calls.append(tuple(int(ctypes.cast(getattr(cuda, name), _P).value or 0)
                                      for name in GRAPH_CALLS))  # fmt: skip
        except (AttributeError, OSError, ctypes.ArgumentError):
            return None
    return _graph_calls[0]


class Launcher:
    """One kernel with its argument buffer built once: the arguments packed at their C
    offsets (struct.pack_into, one call) and the pointer array cuLaunchKernel reads into it.
    A launch packs and launches under a lock: the buffer is shared, and the driver copies the
    arguments before cuLaunchKernel returns. `types`: struct codes ("i", "f", "d", "P").
    Where the C extension is built, it does the same from C (a third of the cost)."""

    __slots__ = ("block", "buffer", "fast", "format", "function", "launch_kernel", "lock",
                 "params", "smem")  # fmt: skip

    def __init__(self, function: int, types: str, block: tuple[int, int, int],
                 smem: int) -> None:  # fmt: skip
        import struct

        offsets, layout, end = [], "=", 0
        for code in types.replace("P", "Q"):  # pointers as 64-bit integers (standard sizes)
            size = struct.calcsize("=" + code)
            start = -(-end // size) * size  # each argument at its natural alignment
            layout += "x" * (start - end) + code
            offsets.append(start)
            end = start + size
        self.format = struct.Struct(layout)
        self.buffer = ctypes.create_string_buffer(max(end, 8))
        base = ctypes.addressof(self.buffer)
        self.params = (_P * len(types))(*(base + offset for offset in offsets))
        self.function, self.block, self.smem = function, block, smem
        self.launch_kernel = lib().cuLaunchKernel
        self.lock = threading.Lock()
        self.fast = _fast_kernel(function, types, block, smem)

    def launch(self, grid: tuple[int, int, int], stream: int, values: tuple[Any, ...]) -> None:
        """Launch with these argument values on the raw stream handle."""
        if self.fast is not None:
            code = self.fast(grid, stream, values)
            if code:
                check(code, "cuLaunchKernel")
            return
        block = self.block
        with self.lock:
            self.format.pack_into(self.buffer, 0, *values)
            code = self.launch_kernel(self.function, grid[0], grid[1], grid[2], block[0],
                                      block[1], block[2], self.smem, stream, self.params,
                                      None)  # fmt: skip
        if code:
            check(code, "cuLaunchKernel")


CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9


def device_of(address: int) -> int | None:
    """The ordinal of the GPU whose memory holds `address` (None: the driver cannot say,
    say for host memory)."""
    ordinal = ctypes.c_int(-1)
    code = lib().cuPointerGetAttribute(ctypes.byref(ordinal), CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                       address)  # fmt: skip
    return ordinal.value if code == 0 else None


def allocation_of(address: int) -> tuple[int, int]:
    """(base, size) of the device allocation holding `address` (a pool hands out pieces of
    larger allocations; CUDA IPC exports whole allocations). Needs the allocation's context
    current in this thread."""
    base, size = _U64(), _SIZE()
    check(lib().cuMemGetAddressRange_v2(ctypes.byref(base), ctypes.byref(size), address),
          "cuMemGetAddressRange")  # fmt: skip
    return int(base.value), int(size.value)


def stream_handle(stream: Any) -> int:
    """The raw handle of None (the legacy default stream), an int, or a PyCUDA stream."""
    if stream is None:
        return 0
    if isinstance(stream, int):
        return stream
    return int(stream.handle)


class _Events:
    """Events without timing, reused: a pool, since creating one costs a driver call. One pool
    per context: an event may only be recorded on streams of the context it was made in, and
    a thread bound to another GPU (tunedgemm.cuda.bind, the multi-GPU host path) works in that
    GPU's context."""

    def __init__(self) -> None:
        self.free: dict[Any, list[int]] = {}
        self.context_of: dict[int, Any] = {}  # event -> the context key it was made under
        self.lock = threading.Lock()

    def take(self) -> int:
        key = _context_key()
        with self.lock:
            pool = self.free.get(key)
            if pool:
                return pool.pop()
        handle = _P()
        check(lib().cuEventCreate(ctypes.byref(handle), CU_EVENT_DISABLE_TIMING), "cuEventCreate")
        event = int(handle.value or 0)
        with self.lock:
            self.context_of[event] = key
        return event

    def give(self, event: int) -> None:
        with self.lock:
            self.free.setdefault(self.context_of.get(event), []).append(event)


def _context_key() -> Any:
    """Which context this thread works in: the GPU it is bound to, else None (the process's
    own context)."""
    from . import cuda

    return cuda._thread.__dict__.get("bound_ordinal")


events = _Events()


def record(stream: int) -> int:
    """An event recorded now on the stream (give it back with events.give when done)."""
    event = events.take()
    check(lib().cuEventRecord(event, stream), "cuEventRecord")
    return event


def done(event: int) -> bool:
    """Whether the work before the event has finished (never waits)."""
    code = lib().cuEventQuery(event)
    if code == CUDA_ERROR_NOT_READY:
        return False
    check(code, "cuEventQuery")
    return True


def synchronize(event: int) -> None:
    """Wait (GIL released) until the work before the event has finished."""
    check(lib().cuEventSynchronize(event), "cuEventSynchronize")


def wait(waiter: int, producer: int) -> None:
    """Stream `waiter` waits for the work queued so far on stream `producer`."""
    if waiter == producer:
        return
    event = record(producer)
    try:
        wait_event(waiter, event)
    finally:
        # cuStreamWaitEvent captured the event's state: it may be recorded again at once.
        events.give(event)


def wait_event(stream: int, event: int) -> None:
    """Stream `stream` waits for `event`, which may belong to another GPU's context."""
    check(lib().cuStreamWaitEvent(stream, event, 0), "cuStreamWaitEvent")


def copy_device(dst: int, src: int, nbytes: int, stream: int) -> None:
    """Queue a copy between device addresses on `stream`; between two GPUs (unified
    addressing) it goes over their link once peer access is on (enable_peer_access)."""
    check(lib().cuMemcpyDtoDAsync_v2(dst, src, nbytes, stream), "cuMemcpyDtoDAsync")


def current_context() -> int:
    """The handle of this thread's current context (0: none)."""
    handle = _P()
    check(lib().cuCtxGetCurrent(ctypes.byref(handle)), "cuCtxGetCurrent")
    return int(handle.value or 0)


_peers: set[tuple[int, int]] = set()  # (context, peer context) with access on
_peers_lock = threading.Lock()


def enable_peer_access(ordinal: int, peer_ordinal: int, peer_context: int) -> bool:
    """Let the current context (GPU `ordinal`'s) read GPU `peer_ordinal`'s memory directly
    (once per pair: it lasts as long as the contexts); False where the GPUs cannot."""
    own = current_context()
    with _peers_lock:
        if (own, peer_context) in _peers:
            return True
    cuda, device, peer, can = lib(), _I(), _I(), _I()
    check(cuda.cuDeviceGet(ctypes.byref(device), ordinal), "cuDeviceGet")
    check(cuda.cuDeviceGet(ctypes.byref(peer), peer_ordinal), "cuDeviceGet")
    check(cuda.cuDeviceCanAccessPeer(ctypes.byref(can), device, peer), "cuDeviceCanAccessPeer")
    if not can.value:
        return False
    code = cuda.cuCtxEnablePeerAccess(peer_context, 0)
    if code != CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED:
        check(code, "cuCtxEnablePeerAccess")
    with _peers_lock:
        _peers.add((own, peer_context))
    return True
