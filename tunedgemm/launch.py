"""Launch a compiled GEMM (with its split-K reduction or stream-K fixup) or a strided copy."""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import compiler, cuda, streamk
from ._args import dtype_name
from ._layout import BlasForm, DeviceMatrix
from .families import family_of
from .params import ITEMSIZE, KernelConfig

_SCALAR_CODE = {"float32": "f", "float64": "d"}
REDUCE_THREADS = 256  # per block of splitk_reduce (its __launch_bounds__ in common.cuh)
# Whether the reduction takes a thread per element where its 16-byte grid leaves SMs idle
# (Plan.reduce_grid; off, as before 2026-12-02: probe_reduce_grid.py's "before")
REDUCE_ONE_EACH = True
_DTYPE_CODE = {"float32": 0, "float64": 1}


def gemm_defines(config: KernelConfig, dtype: np.dtype, form: BlasForm) -> dict[str, int]:
    """Every define of one compiled variant: the config's tunables plus call-time facts."""
    return _defines(config, dtype_name(dtype), form.trans_a, form.trans_b, form.aligned())


def _defines(
    config: KernelConfig, dtype: str, trans_a: bool, trans_b: bool, aligned: bool
) -> dict[str, int]:
    """gemm_defines from the call-time facts themselves."""
    return {**family_of(config).defines(config, dtype),
            **call_defines(dtype, trans_a, trans_b, aligned)}


@dataclass(frozen=True)
class Plan:
    """What launching one compiled variant needs, apart from m and n."""

    source: str
    defines: tuple[tuple[str, int], ...]  # sorted, as the compile memo keys them
    scalar: str  # PyCUDA's prepare code for alpha and beta
    block: tuple[int, int, int]
    tile: tuple[int, int]  # rows and columns of C per block
    split_k: int
    smem_bytes: int
    reduce_vector: int = 1  # elements per thread of the split-K reduction (ALIGNED: 16 bytes)
    stream_k: int = 0  # persistent stream-K blocks per SM (0: the data-parallel grid)

    def grid(self, m: int, n: int) -> tuple[int, int, int]:
        """The grid of an m x n call, as KernelFamily.geometry computes it."""
        return (-(-m // self.tile[0]), -(-n // self.tile[1]), self.split_k)

    def workspace_ld(self, m: int) -> int:
        """The leading dimension of each split-K slice in the workspace: m padded to 16
        bytes, so that the kernels' and the reduction's 16-byte accesses stay aligned."""
        step = 16 // self.itemsize
        return max(step, -(-m // step) * step)

    @property
    def itemsize(self) -> int:
        return 4 if self.scalar == "f" else 8

    def workspace_bytes(self, m: int, n: int, k: int = 0, sms: int = 0) -> int:
        """Device memory one m x n (x k) call needs for its split-K or stream-K partial sums
        (0: none); stream-K's depends on k and on the GPU's `sms` too."""
        if self.stream_k:
            slots = self.schedule(m, n, k, sms).slots
            return slots * self.tile[0] * self.tile[1] * self.itemsize
        if self.split_k == 1:
            return 0
        return self.split_k * self.workspace_ld(m) * n * self.itemsize

    def schedule(self, m: int, n: int, k: int, sms: int) -> streamk.Schedule:
        """The stream-K schedule of an m x n x k call on a GPU of `sms` multiprocessors."""
        if sms < 1:
            raise ValueError("a stream-K plan needs the GPU's SM count")
        bk = dict(self.defines)["BK"]
        return streamk.schedule(m, n, k, self.tile[0], self.tile[1], bk, sms * self.stream_k)

    def reduce_grid(self, m: int, n: int, sms: int) -> tuple[int, int, int]:
        """The grid of the split-K reduction: a thread per reduce_vector rows of a column, or a
        thread per element where that grid has fewer blocks than the GPU's `sms`
        multiprocessors (splitk_reduce reads which from the grid's size; the same bits): at
        67x43x5193 float32 split 64 ways, its 3 blocks took 14.1 us under Nsight Compute
        against the product's 7.9 (H200, 2026-12-02 22:27 UTC, gpu_session.sh ncu-census)."""
        vectors = -(-m // self.reduce_vector) * n
        if REDUCE_ONE_EACH and -(-vectors // REDUCE_THREADS) < sms:
            vectors = m * n
        return (-(-vectors // REDUCE_THREADS), 1, 1)


@functools.lru_cache(maxsize=1024)
def plan(config: KernelConfig, dtype: str, trans_a: bool, trans_b: bool, aligned: bool) -> Plan:
    """The launch plan of one variant, built once: families compute their geometry and
    defines in Python, through dicts and dataclasses, which costs microseconds a call."""
    family = family_of(config)
    geometry = family.geometry(config, dtype, 1, 1)  # all but the grid is independent of m, n
    defines = _defines(config, dtype, trans_a, trans_b, aligned)
    return Plan(family.source, tuple(sorted(defines.items())), _SCALAR_CODE[dtype],
                geometry.block, family.block_tile(config.as_dict()), geometry.split_k,
                geometry.smem_bytes, reduce_vector(dtype, aligned),
                family.stream_k(config.as_dict()))  # fmt: skip


def reduce_vector(dtype: str, aligned: bool) -> int:
    """Elements of splitk_reduce's vector (REDUCE_VEC in common.cuh): 16 bytes where aligned."""
    return 16 // ITEMSIZE[dtype] if aligned else 1


def call_defines(dtype: str, trans_a: bool, trans_b: bool, aligned: bool) -> dict[str, int]:
    """The call-time defines of every GEMM template (ABI in kernels/common.cuh)."""
    return {"DTYPE": _DTYPE_CODE[dtype], "TRANS_A": int(trans_a), "TRANS_B": int(trans_b),
            "ALIGNED": int(aligned)}  # fmt: skip


def raw_plan(source: str, defines: dict[str, int], dtype: str, aligned: bool,
             block: tuple[int, int, int], tile: tuple[int, int], split_k: int,
             smem_bytes: int = 0) -> Plan:  # fmt: skip
    """The launch plan of a GEMM template outside the families (tunedgemm/gemv_like.py), from
    its full defines (call_defines included) and geometry, with `smem_bytes` of dynamic
    shared memory."""
    return Plan(source, tuple(sorted(defines.items())), _SCALAR_CODE[dtype], block, tile,
                split_k, smem_bytes, reduce_vector(dtype, aligned))  # fmt: skip


class GemmLauncher:
    """One variant's kernel (and its split-K reduction) ready to launch on any raw stream,
    with its argument buffers built once (tunedgemm/_driver.py).

    Split-K is deterministic: the k-slices write their partial sums to a workspace that the
    caller passes (Plan.workspace_bytes; never one that a launch on another stream may be
    using), and splitk_reduce adds them in a fixed order into C with the epilogue. Stream-K
    (Plan.stream_k) is too: streamk_gemm's blocks leave the partial sums of split tiles in
    the workspace and streamk_fixup adds them in k order (tunedgemm/streamk.py)."""

    __slots__ = ("fixup", "fused", "gemm", "plan", "reduce", "sms")

    def __init__(self, p: Plan) -> None:
        from . import _driver

        defines = dict(p.defines)
        real = p.scalar  # "f" or "d", as struct codes too
        self.plan = p
        self.reduce = self.fixup = None
        self.sms = 0
        self.fused = bool(defines.get("SPLITK_FUSED", 0))
        if p.stream_k:
            self.sms = cuda.sm_count()
            self.gemm = _driver.Launcher(
                compiler.raw_function(p.source, defines, "streamk_gemm", p.smem_bytes),
                f"iii{real}PiPi{real}PiPiii", p.block, p.smem_bytes)  # fmt: skip
            self.fixup = _driver.Launcher(
                compiler.raw_function(p.source, defines, "streamk_fixup"),
                f"iii{real}P{real}Piiiii", (streamk.FIXUP_THREADS, 1, 1), 0)  # fmt: skip
            return
        fused_args = "PiP" if self.fused else ""  # C, ldc and the tile flags (splitk_flags)
        self.gemm = _driver.Launcher(
            compiler.raw_function(p.source, defines, "gemm", p.smem_bytes),
            f"iii{real}PiPi{real}Pi{fused_args}", p.block, p.smem_bytes)  # fmt: skip
        if p.split_k > 1 and not self.fused:
            self.sms = cuda.sm_count()  # (the reduction's grid)
            self.reduce = _driver.Launcher(
                compiler.raw_function(p.source, defines, "splitk_reduce"),
                f"ii{real}Pi{real}Pi", (REDUCE_THREADS, 1, 1), 0)  # fmt: skip

    def __call__(self, form: BlasForm, alpha: float, beta: float, stream: int,
                 workspace: int = 0, home: int | None = None) -> None:  # fmt: skip
        """The launches on stream; fused split-K's tile flags are those of stream `home`
        (default: stream), the stream a graph captured on another is replayed on."""
        m, n, p = form.m, form.n, self.plan
        if self.fixup is not None:
            self._stream_k(form, alpha, beta, stream, workspace)
            return
        if self.reduce is None and not self.fused:
            self.gemm.launch(p.grid(m, n), stream, (m, n, form.k, alpha, form.a, form.lda,
                             form.b, form.ldb, beta, form.c, form.ldc))  # fmt: skip
            return
        if not workspace:
            raise ValueError("a split-K launch needs a workspace (Plan.workspace_bytes)")
        ldw = p.workspace_ld(m)
        grid = p.grid(m, n)
        if self.fused:  # one launch: the tile's last k-slice block sums the slices
            self.gemm.launch(grid, stream, (m, n, form.k, alpha, form.a, form.lda, form.b,
                             form.ldb, beta, workspace, ldw, form.c, form.ldc,
                             splitk_flags(stream if home is None else home,
                                          grid[0] * grid[1])))  # fmt: skip
            return
        assert self.reduce is not None
        self.gemm.launch(grid, stream, (m, n, form.k, alpha, form.a, form.lda,
                         form.b, form.ldb, beta, workspace, ldw))  # fmt: skip
        self.reduce.launch(p.reduce_grid(m, n, self.sms), stream,
                           (m, n, alpha, workspace, ldw, beta, form.c, form.ldc))  # fmt: skip

    def launch_count(self, form: BlasForm) -> int:
        """How many kernels one call on the form queues (with split-K's reduction or
        stream-K's fixup where it has one)."""
        if self.fixup is not None:
            return 1 + bool(self.plan.schedule(form.m, form.n, form.k, self.sms).fixup_blocks)
        return 1 + (self.reduce is not None)

    def workspace_bytes(self, m: int, n: int, k: int) -> int:
        """The workspace one m x n x k call of this launcher needs (0: none)."""
        return self.plan.workspace_bytes(m, n, k, self.sms)

    def _stream_k(self, form: BlasForm, alpha: float, beta: float, stream: int,
                  workspace: int) -> None:  # fmt: skip
        """streamk_gemm over the schedule's blocks, then streamk_fixup (where more than one
        block shares the work) for the split tiles."""
        if not workspace:
            raise ValueError("a stream-K launch needs a workspace (Plan.workspace_bytes)")
        assert self.fixup is not None
        m, n, k = form.m, form.n, form.k
        sched = self.plan.schedule(m, n, k, self.sms)
        self.gemm.launch((sched.ctas, 1, 1), stream, (m, n, k, alpha, form.a, form.lda, form.b,
                         form.ldb, beta, form.c, form.ldc, workspace, *sched.args))  # fmt: skip
        if sched.fixup_blocks:
            self.fixup.launch((sched.fixup_blocks, 1, 1), stream, (m, n, k, alpha, workspace,
                              beta, form.c, form.ldc, sched.ctas, *sched.args))  # fmt: skip


# Fused split-K (SPLITK_FUSED=1): one int per tile that the k-slice blocks of the tile count
# on, 0 between launches (the last block puts it back). One buffer per context and stream,
# kept for the process: launches on one stream run in order and may share it, launches on
# two streams may run at once and must not.
SPLITK_FLAG_TILES = 1 << 20  # tiles of one launch at most (4 MiB of flags per stream)
_splitk_flags: dict[tuple[Any, ...], Any] = {}
_splitk_flags_lock = threading.Lock()


def splitk_flags(stream: int, tiles: int) -> int:
    """The address of the tile flags of fused split-K launches on the raw stream handle, zeroed
    on that stream before its first use."""
    from . import _driver

    if tiles > SPLITK_FLAG_TILES:
        raise ValueError(f"a fused split-K launch of {tiles} tiles (at most "
                         f"{SPLITK_FLAG_TILES}): use SPLITK_FUSED=0")  # fmt: skip
    key: tuple[Any, ...] = (_driver._context_key(), stream)
    if stream == cuda.CU_STREAM_PER_THREAD:
        key += (threading.get_ident(),)
    found = _splitk_flags.get(key)
    if found is None:
        with _splitk_flags_lock:
            found = _splitk_flags.get(key)
            if found is None:
                found = cuda.allocate(4 * SPLITK_FLAG_TILES)
                zero = _driver.lib().cuMemsetD32Async(int(found), 0, SPLITK_FLAG_TILES, stream)
                _driver.check(zero, "cuMemsetD32Async")
                _splitk_flags[key] = found
    return int(found)


def _drop_splitk_flags(index: int) -> None:
    """At exit, in GPU `index`'s context: free its streams' flags there (tunedgemm.cuda)."""
    for key in [k for k in _splitk_flags if k[0] == index]:
        del _splitk_flags[key]


cuda.on_release(_drop_splitk_flags)


@functools.lru_cache(maxsize=1024)
def launcher(config: KernelConfig, dtype: np.dtype, trans_a: bool, trans_b: bool, aligned: bool,
             ctx_id: int) -> GemmLauncher:  # fmt: skip
    """The shared launcher of one variant in one context (a plan makes its own)."""
    return GemmLauncher(plan(config, dtype_name(dtype), trans_a, trans_b, aligned))


def gemm(
    form: BlasForm,
    dtype: np.dtype,
    alpha: float,
    beta: float,
    config: KernelConfig,
    stream: Any = None,
    workspace: int = 0,
) -> None:
    """C = alpha op(A) op(B) + beta C for one column-major call, with one kernel config, on
    `stream` (None: the legacy default stream; a PyCUDA stream; or a raw handle). A split-K
    config (or a stream-K one) uses `workspace` (at least workspace_bytes; used only on this
    stream until these launches have run), or else one of its own from the pool."""
    if form.m == 0 or form.n == 0:
        return
    from ._driver import stream_handle

    run = launcher(config, np.dtype(dtype), form.trans_a, form.trans_b, form.aligned(),
                   id(cuda.context()))  # fmt: skip
    handle = stream_handle(stream)
    if (run.reduce is None and run.fixup is None and not run.fused) or workspace:
        run(form, alpha, beta, handle, workspace)
        return
    # A workspace of this call's own from the pool, back to it once the launches have run:
    # calls on other streams never get it while they may still use it.
    buffer = cuda.allocate(run.workspace_bytes(form.m, form.n, form.k))
    try:
        run(form, alpha, beta, handle, int(buffer))
    finally:  # (the kernel may be queued even where the reduction's launch failed)
        cuda.release_after([buffer], handle)


_C_TYPES = {
    "float16": "__half",
    "float32": "float",
    "float64": "double",
    "bool": "bool",
    "int8": "signed char",
    "int16": "short",
    "int32": "int",
    "int64": "long long",
    "uint8": "unsigned char",
    "uint16": "unsigned short",
    "uint32": "unsigned int",
    "uint64": "unsigned long long",
}


def workspace_bytes(config: KernelConfig, dtype: np.dtype, form: BlasForm) -> int:
    """The split-K or stream-K workspace one call of `config` on `form` needs (0: none)."""
    p = plan(config, dtype_name(dtype), form.trans_a, form.trans_b, form.aligned())
    return p.workspace_bytes(form.m, form.n, form.k, cuda.sm_count() if p.stream_k else 0)


def copy(src: DeviceMatrix, dst: DeviceMatrix, stream: Any = None) -> None:
    """dst = src (cast to dst's dtype), any strides on either side."""
    rows, cols = src.shape
    if rows == 0 or cols == 0:
        return
    try:
        defines = {
            "SRC_T": _C_TYPES[dtype_name(src.dtype)],
            "DST_T": _C_TYPES[dtype_name(dst.dtype)],
        }
    except KeyError as exc:
        raise TypeError(f"no device conversion from {src.dtype} to {dst.dtype}") from exc
    fn = compiler.function("copy2d.cu", defines, "copy2d")
    fn(
        np.int32(rows),
        np.int32(cols),
        np.uintp(src.ptr),
        np.int64(src.strides[0]),
        np.int64(src.strides[1]),
        np.uintp(dst.ptr),
        np.int64(dst.strides[0]),
        np.int64(dst.strides[1]),
        block=(32, 8, 1),
        grid=((rows + 31) // 32, min((cols + 7) // 8, 65535), 1),
        stream=stream,
    )
