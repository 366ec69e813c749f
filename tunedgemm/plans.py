"""Plans: what a GEMM call runs, decided once per call shape and kept (decide once, run many).

    call -> signature -> plan cache hit?  yes: plan.run -> launch -> result
                                          no:  normalise, decide (precision, table or
                                               cuBLAS, autotune, geometry) -> plan

A `GemmKey` names one column-major product: dtype, precision, shape, transposes, leading
dimensions, alignment and batch. A `DevicePlan` is what was decided for a key: an own kernel
config (with its launcher and argument buffers) or cuBLAS. A `CallPlan` maps one kind of
public call (its operands' library, shapes, strides and dtypes, flags, result layout) onto a
DevicePlan: reading the operands' addresses, making the result from the caller's allocator
and launching on the caller's stream is all a repeated call costs.

Plans are kept in bounded caches and dropped when a setting that decides changes
(tunedgemm/settings.py) or `clear()` is called. They are safe to use from several threads:
launch buffers are locked while they are filled, and building a plan twice is harmless.
"""

from __future__ import annotations

import collections
import dataclasses
import math
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import cuda, model, recycle, settings, tail_split
from ._layout import BlasForm
from .device_arrays import _kinds, kind_of
from .params import KernelConfig, Params
from .precision import IEEE, OZAKI, base_mode, get_precision, moduli_count, ozaki_summary

MAX_PLANS = 1024  # per cache; the least recently used go first


@dataclass(frozen=True, slots=True)
class GemmKey:
    """One column-major product C(m,n) = alpha op(A) op(B) + beta C, as the GPU runs it."""

    dtype: str
    precision: str
    m: int
    n: int
    k: int
    trans_a: bool
    trans_b: bool
    lda: int
    ldb: int
    ldc: int
    aligned: bool
    batch: int = 1
    batch_strides: tuple[int, int, int] = (0, 0, 0)  # elements between products of A, B, C
    # beta != 0: the product reads C's old values. Autotuning times the candidates so (their
    # epilogues' loads, split-K's reduction reading C), and a call at beta 0 keeps its pick.
    reads_c: bool = False

    @classmethod
    def of(cls, form: BlasForm, dtype: str, precision: str, batch: int = 1,
           batch_strides: tuple[int, int, int] = (0, 0, 0), reads_c: bool = False) -> GemmKey:
        return cls(dtype, precision, form.m, form.n, form.k, form.trans_a, form.trans_b,
                   form.lda, form.ldb, form.ldc, form.aligned(), batch, batch_strides,
                   reads_c)  # fmt: skip

    def __str__(self) -> str:
        batch = f" x{self.batch}" if self.batch > 1 else ""
        return (f"{self.dtype}/{self.precision} {self.m}x{self.n}x{self.k}{batch} "
                f"{'T' if self.trans_a else 'N'}{'T' if self.trans_b else 'N'}"
                f"{' aligned' if self.aligned else ''}{' reads C' if self.reads_c else ''}")


class _Cache:
    """A bounded, thread-safe LRU map that empties when a deciding setting changes."""

    def __init__(self, size: int = MAX_PLANS) -> None:
        self.size = size
        self.items: collections.OrderedDict[Any, Any] = collections.OrderedDict()
        self.lock = threading.Lock()

    def get(self, key: Any) -> Any:
        item = self.items.get(key)  # a plain read: dict reads are atomic under the GIL
        if item is not None and len(self.items) > self.size // 2:
            with self.lock:  # recency only matters once the cache may evict
                if key in self.items:
                    self.items.move_to_end(key)
        return item

    def put(self, key: Any, value: Any) -> None:
        with self.lock:
            self.items[key] = value
            while len(self.items) > self.size:
                self.items.popitem(last=False)

    def clear(self) -> None:
        with self.lock:
            self.items.clear()


device_plans = _Cache()  # GemmKey -> DevicePlan
call_plans = _Cache()  # call signature -> CallPlan
# DevicePlans of the other GPUs host calls spread over (tunedgemm/pipeline.py), by ordinal:
# a plan holds kernels loaded into one GPU's context, and that GPU's own table choice.
_other_devices: dict[int, _Cache] = {}
_state: list[Any] = [None]


def current(_state_now: Any = settings.decision_state, _state: list[Any] = _state) -> None:
    """Drop every plan if a setting that decides changed since the last call (one dict read
    per setting)."""
    state = _state_now()
    if state != _state[0]:
        clear()
        _state[0] = state


def clear() -> None:
    """Forget every plan and every memoised decision (a setting, table or GPU changed)."""
    from . import autotune, selection

    device_plans.clear()
    call_plans.clear()
    recycle.release()
    for index, cache in list(_other_devices.items()):
        with cuda.in_context_of(index):  # their kernels are freed in their GPU's context
            cache.clear()
    selection.forget()
    autotune.clear()


class DevicePlan:
    """What runs for one GemmKey: an own kernel config with its launcher, or cuBLAS."""

    __slots__ = ("choice", "key", "reason", "run")

    def __init__(self, key: GemmKey, form: BlasForm, stream: int) -> None:
        from . import autotune, selection, table

        self.key = key
        self.choice: KernelConfig | str
        if base_mode(key.precision) == OZAKI:
            self.choice, self.reason, self.run = _ozaki(key, form, stream)
            _log_shape(key)
            return
        choice = selection.choose(key.dtype, key.m, key.n, key.k, key.trans_a, key.trans_b,
                                  precision=key.precision)  # fmt: skip
        config, reason = choice.config, choice.reason
        candidates = choice.candidates
        tuned: Any = None
        timed: tuple[Any, ...] = ()
        if key.k > 0 and key.batch == 1 and autotune.enabled():
            timed = _with_lt_algorithms(key, own_candidates(candidates, key)) + _composed(key)
        if len(timed) > 1:
            tuned = autotune.choose(form, np.dtype(key.dtype), timed, key.precision,
                                    reads_c=key.reads_c)  # fmt: skip
            if tuned != config:
                reason = f"{tuned}: fastest when timed at this shape; table: {reason}"
            config = table.CUBLAS if getattr(tuned, "is_cublas", False) else tuned
        if config == table.CUBLAS and not _cublas_usable():
            table.warn_once("the table chose cuBLAS, which is unavailable; own kernel used")
            config = selection.default_config(key.dtype, key.precision)
            reason = f"{config}: built-in default (cuBLAS unavailable)"
        if key.batch > 1 and config != table.CUBLAS and _cublas_usable() and \
                selection.cublas_allowed():  # fmt: skip
            config, reason = table.CUBLAS, "cuBLAS strided-batched (own kernels run one product)"
        if key.batch > 1 and config == table.CUBLAS and key.k > 0 and autotune.enabled():
            algorithms = _lt_algorithms(key)
            if len(algorithms) > 1:
                tuned = autotune.choose(form, np.dtype(key.dtype), algorithms, key.precision,
                                        batch=(key.batch, key.batch_strides),
                                        reads_c=key.reads_c)  # fmt: skip
                reason = f"{tuned}: fastest of cuBLASLt's batched algorithms here; {reason}"
        self.choice, self.reason = config, reason
        # A cuBLASLt algorithm that autotuning timed fastest runs as it was timed.
        self.run = tuned if getattr(tuned, "is_cublas", False) else launcher(key, config)
        _log_shape(key)

    def reserve(self, stream: int) -> None:
        """Allocate now the workspace the plan's launches on `stream` use (split-K's, or
        cuBLASLt's), so that a call that must not fail halfway (the host pipeline) runs out
        of device memory before it writes any result."""
        reserve = getattr(self.run, "reserve", None)
        if reserve is not None:
            reserve(stream)

    def __repr__(self) -> str:
        return f"DevicePlan({self.key}: {self.choice})"


def _ozaki(key: GemmKey, form: BlasForm, stream: int) -> tuple[KernelConfig | str, str, Any]:
    """(choice, reason, run) of a key in an Ozaki mode: the emulation (tunedgemm/
    ozaki_device.py), with cuBLAS's IEEE GEMM (the native routine whose error bounds the
    mode's; the IEEE plan where cuBLAS is missing) for the calls it hands back. Batched keys
    and k outside the INT32 accumulator's range run the key's IEEE plan. So does plain "ozaki"
    where that plan, timed against the emulation at the key's shape when the plan is made
    (run-time autotuning, TUNEDGEMM_REFINE), is faster: the mode asks for the dtype's own
    accuracy, which IEEE arithmetic has, and is never slower than IEEE mode. "ozaki-N" (the
    expert knob) always emulates."""
    from . import autotune, ozaki

    ieee = device_plan(dataclasses.replace(key, precision=IEEE), form, stream, cache_here())
    count = moduli_count(key.precision, key.dtype)
    assert count is not None
    native = _cublas_usable()
    fallback = ("IEEE arithmetic: cuBLAS" if native
                else f"IEEE arithmetic: {ieee.choice} ({ieee.reason})")  # fmt: skip
    if key.batch > 1 or not 1 <= key.k <= ozaki.INT32_SAFE_K:
        why = (f"{key.batch} products in a batch" if key.batch > 1
               else f"k = {key.k} is outside 1..{ozaki.INT32_SAFE_K}")  # fmt: skip
        return ieee.choice, (f"{key.precision} not emulated ({why}); IEEE arithmetic: "
                             f"{ieee.choice} ({ieee.reason})"), ieee.run  # fmt: skip
    if key.precision == OZAKI and autotune.enabled():
        timed = _time_emulation(key, count, ieee.run)
        if timed is not None and timed[1] < timed[0]:
            return ieee.choice, (
                f"{key.precision}: IEEE arithmetic, faster here than the emulation with "
                f"{count} moduli ({timed[1]:.3g} against {timed[0]:.3g} ms a call, timed at "
                f"this shape): {ieee.choice} ({ieee.reason})"), ieee.run  # fmt: skip
    return (f"Ozaki scheme II with {count} moduli", ozaki_summary(key.precision, count, fallback),
            _Ozaki(key, count, ieee, native))  # fmt: skip


# The value the timing operands hold: float32 1.0, and as float64 (the word twice) 2^-7 and a
# little. Equal elements: scaling is exact and the guard never falls back, so the timing is
# the emulation's.
_TIMING_WORD = 0x3F800000


def _time_emulation(key: GemmKey, count: int, ieee_run: Any) -> tuple[float, float] | None:
    """(emulation, IEEE plan) ms a call at the key's shape, on scratch operands; None where
    they cannot be timed (device memory short, a launch failed)."""
    from . import autotune, ozaki_device, timing

    size = np.dtype(key.dtype).itemsize
    elements = (key.lda * (key.m if key.trans_a else key.k),
                key.ldb * (key.k if key.trans_b else key.n), key.ldc * key.n)  # fmt: skip
    buffers: list[Any] = []
    try:
        buffers += [cuda.allocate(max(e, 1) * size) for e in elements]
        for buffer, e in zip(buffers, elements, strict=True):
            ozaki_device.fill_words(int(buffer), _TIMING_WORD, max(e, 1) * size // 4, 0)
        a, b, c = (int(x) for x in buffers)
        form = BlasForm(key.trans_a, key.trans_b, key.m, key.n, key.k, a, key.lda, b, key.ldb,
                        c, key.ldc, size)  # fmt: skip
        outcomes: list[Any] = []

        def emulate() -> None:
            outcomes.append(ozaki_device.gemm(form, key.dtype, 1.0, 0.0, 0, count))

        # An emulated call waits for its flag before it returns: its GPU and host times add.
        emulated_ms = sum(timing.gpu_and_host_ms(emulate, 1, 3, None))
        ieee_ms = autotune.call_cost(*timing.gpu_and_host_ms(
            lambda: ieee_run(a, b, c, 1.0, 0.0, 0), 1, 3, None))  # fmt: skip
        if any([o.fell_back() for o in outcomes]):  # every flag back to its pool
            return None
    except Exception:  # memory short, or a launch failed: emulate, as asked
        return None
    finally:
        cuda.release_after(buffers, 0)  # back to the pool once the stream has passed them
    return emulated_ms, ieee_ms


class _Ozaki:
    """run(a, b, c, alpha, beta, stream) of one product by Ozaki scheme II, cuBLAS's IEEE
    GEMM (or without cuBLAS the IEEE plan) running it where the emulation falls back (Inf or
    NaN, or the accuracy guard: C is untouched until then). Waits for the call's flag (a host
    sync on the stream): the price of never returning a silently wrong product. `last` is why
    the latest call fell back (None: emulated; "" before the first call)."""

    __slots__ = ("count", "ieee", "key", "last", "native")

    def __init__(self, key: GemmKey, count: int, ieee: DevicePlan, native: bool) -> None:
        from . import reference

        self.key, self.count, self.ieee = key, count, ieee
        self.native = reference.direct(np.dtype(key.dtype)) if native else None
        self.last: str | None = ""

    def reserve(self, stream: int) -> None:
        from . import ozaki_device

        self.ieee.reserve(stream)
        key = self.key  # the pool keeps the workspace for the calls to come
        cuda.release_after([cuda.allocate(ozaki_device.workspace_bytes(
            key.m, key.n, key.k, self.count))], stream)  # fmt: skip

    def __call__(self, a: int, b: int, c: int, alpha: float, beta: float, s: int) -> None:
        from . import ozaki_device

        key, ieee, native = self.key, self.ieee.run, self.native
        form = BlasForm(key.trans_a, key.trans_b, key.m, key.n, key.k, a, key.lda, b, key.ldb,
                        c, key.ldc, np.dtype(key.dtype).itemsize)  # fmt: skip

        def fallback() -> None:
            if native is None:
                ieee(a, b, c, alpha, beta, s)
            else:
                native(key.trans_a, key.trans_b, key.m, key.n, key.k, alpha, a, key.lda, b,
                       key.ldb, beta, c, key.ldc, s)  # fmt: skip

        self.last = ozaki_device.gemm_or_ieee(form, key.dtype, alpha, beta, s, fallback,
                                              self.count)  # fmt: skip

    def status(self) -> str:
        """What the latest call did."""
        if self.last == "":
            return "no call yet"
        return "latest call emulated" if self.last is None else \
            f"latest call fell back to IEEE: {self.last}"  # fmt: skip


# cuBLASLt's first picks that autotuning times where cuBLAS competes: on the H100 machine the
# fastest at 256^3-512^3 were its 6th-8th, 1.5-2x faster there than cublasSgemm's own choice
# (benchmarks/profile_cublas_algos.py, 2026-11-23).
LT_ALGORITHMS = 10


def _lt_algorithms(key: GemmKey) -> tuple[Any, ...]:
    """cuBLASLt's first LT_ALGORITHMS algorithms for the key (a strided batch too), its own
    pick first; none where cuBLASLt does not serve."""
    from . import cublaslt

    return tuple(cublaslt.algorithms(key.dtype, key.precision, key.trans_a, key.trans_b, key.m,
                                     key.n, key.k, key.lda, key.ldb, key.ldc, key.batch,
                                     key.batch_strides, count=LT_ALGORITHMS))  # fmt: skip


def _with_lt_algorithms(key: GemmKey, candidates: tuple[Any, ...]) -> tuple[Any, ...]:
    """The candidates with cuBLAS replaced by cuBLASLt's first few algorithms for the key
    (cuBLAS's own pick first, so it stays the incumbent), where cuBLASLt serves."""
    from . import table

    if table.CUBLAS not in candidates:
        return candidates
    algorithms = _lt_algorithms(key)
    if not algorithms:
        return candidates
    out: list[Any] = []
    for c in candidates:
        out += algorithms if c == table.CUBLAS else [c]
    return tuple(out)


# Own candidates (the model's first, in its order) that autotuning also times as their
# wave-filling split and twins. Each relative is one more compile on a shape's first call
# (about 4 s each on the H100 machine's CPU, cached on disk after): at 64^3 float32 all seven
# of the table's candidates with theirs made 29 timings (bench_host, 2026-11-26 11:19 UTC).
RELATIVES_OF = 3
# Own candidates (the first) that autotuning also times as their raster twins: one more
# compile (dmma) or two (simt) on a shape's first call.
RASTERS_OF = 1


def own_candidates(candidates: tuple[Any, ...], key: GemmKey) -> tuple[Any, ...]:
    """What autotuning times of the table's candidates for the key: each, then for the first
    RELATIVES_OF own ones the wave-filling split of those that leave SMs idle, every one's
    twins, their stream-K variants where the last wave of tiles leaves SMs idle and their
    whole-round splits where their tiles are fewer than their block slots, the first
    RASTERS_OF ones' raster twins, and the first one's narrow tiles at skinny shapes with
    long k, its family's round tiles where its tiles are fewer than its block slots or it
    splits long k, itself and those round tiles that fill their waves unsplit where it splits
    short k over a full grid, its family's small-k tiles at short k over many tiles, its
    family's large tiles at large products of many tiles where cuBLAS is not a candidate,
    and its family's medium tiles at skinny and medium shapes.

    Whole-round splits for each of the first RELATIVES_OF, not the first alone: at
    1920x774x1096 float32 (H200, 2026-11-28) the first, a 128 x 32 tile, has more tiles than
    slots, while the second's 195 tiles of 128 x 64 split in two ran 0.96x cuBLAS against
    the call's 0.83x before (bench_tuning's worst-float32 shapes, 11:28 UTC)."""
    from . import table

    first = tuple(c for c in candidates if isinstance(c, KernelConfig))[:RELATIVES_OF]
    relatives, narrow, streamed, rounds = first, (), (), ()
    if any("SPLIT_K" in c.as_dict() for c in first):
        sms = cuda.sm_count()  # the driver's
        relatives = with_wave_filling_splits(first, key, sms)
        narrow = with_narrow_tiles(first[:1], key, sms)  # (skinny shapes only; no twins)
        streamed = with_stream_k(first, key, sms)  # (their main loop is the twin's already)
        rounds = with_whole_round_splits(first, key, sms)  # (as recorded: no twins)
        rounds += with_round_tiles(first[:1], key, sms)  # (they run the cursors already)
        rounds += with_unsplit_grids(first[:1], key, sms)  # (the same)
        rounds += with_small_k_tiles(first[:1], key, sms)  # (the same)
        if table.CUBLAS not in candidates:  # own kernels only (see LARGE_FROM_FLOPS)
            rounds += with_large_tiles(first[:1], key, sms)  # (the same)
    # The medium tiles (cursors already) on the first own candidate with a k-split among all
    # of them, not only the first RELATIVES_OF: at 194x2770x88 TN float32 the table's first
    # four are the small family's, so none were timed, and the call ran a 64 x 128 tile in
    # 13.1 us where the 64 x 32 medium tile ran 10.0 (H200, 2026-12-03 15:17 and 15:28 UTC).
    split_k_first = tuple(c for c, _, _ in _split_k_configs(candidates))[:1]
    if split_k_first:
        rounds += with_medium_tiles(split_k_first, key, cuda.sm_count())
    rasters = with_raster_twins(first[:RASTERS_OF], key.dtype)[len(first[:RASTERS_OF]):]
    relatives = with_twins(relatives, key.dtype, key)[len(first):] + rasters + narrow + streamed
    relatives = tuple(_canonical(c) for c in relatives + rounds)
    return candidates + tuple(dict.fromkeys(c for c in relatives if c not in candidates))


def _canonical(candidate: Any) -> Any:
    """An own config with its family's inert settings at the values that name the same
    kernel (KernelFamily.canonical); anything else as it is."""
    from .families import FAMILIES

    if isinstance(candidate, KernelConfig):
        return FAMILIES[candidate.family].canonical(candidate)
    return candidate


# The widest k-split autotuning tries (each slice keeps >= 2 k-tiles). 64, not 32: at
# 77x33x11843 float32 (H100, 2026-11-26 20:09 UTC, probe_skinny.py --narrow --padded) 64
# slices of simt's 128 x 32 tile ran 0.88x cuBLAS, 32 of them 0.71x. 128, not 64: where C
# is one tile, 64 slices leave half the 132 SMs idle; at 64x64x16384 float32 (H100,
# 2026-11-28, probe_skinny.py --splits around --padded) 128 slices of 64 x 64 ran 0.92x
# cuBLAS, 64 of them 0.84x, 132 0.90x. More blocks than that lost to splitk_reduce, whose
# threads sum every slice: 256 blocks (2 tiles x 128) at 77x33x11843 0.75x against 0.91x at
# 2 x 64, so the wave-filling powers of two stop at 128 for one tile.
MAX_SPLIT_K = 128


def _widest_split(key: GemmKey, k_tile: int) -> int:
    """The most k-slices key's k allows: each keeps two k-tiles, at most MAX_SPLIT_K."""
    return min(MAX_SPLIT_K, -(-key.k // k_tile) // 2)


def _tiles(key: GemmKey, tile: tuple[int, int]) -> int:
    """Output tiles of key's C in a grid of `tile`s (rows x columns)."""
    return -(-key.m // tile[0]) * -(-key.n // tile[1])


def _filling_split(key: GemmKey, tile: tuple[int, int], k_tile: int, blocks: float,
                   split: int = 1) -> int:  # fmt: skip
    """The least power-of-two multiple of `split` that gives key's grid of `tile`s at least
    `blocks` blocks, as far as _widest_split allows."""
    tiles = _tiles(key, tile)
    widest = _widest_split(key, k_tile)
    while tiles * split < blocks and 2 * split <= widest:
        split *= 2
    return split


def _split_k_configs(candidates: tuple[Any, ...]) -> list[tuple[KernelConfig, Any, dict]]:
    """(config, its family, its parameters) of the own candidates with a k-split to change:
    a SPLIT_K, and not a stream-K schedule."""
    from .families import FAMILIES

    found = []
    for c in candidates:
        if isinstance(c, KernelConfig) and "SPLIT_K" in c.as_dict():
            family, params = FAMILIES[c.family], c.as_dict()
            if not family.stream_k(params):
                found.append((c, family, params))
    return found


def with_wave_filling_splits(candidates: tuple[Any, ...], key: GemmKey,
                             sms: int) -> tuple[Any, ...]:  # fmt: skip
    """The candidates and, after them, each split-K-capable own config whose grid leaves SMs
    idle at this shape (tiles x SPLIT_K < sms) again with the least power-of-two split that
    fills them, as far as each slice keeps two k-tiles and MAX_SPLIT_K allows. The table's
    splits stop at 4, so at small m x n with long k (322x57x5243: 6 tiles of 64 x 64) its
    configs ran a few blocks on 132 SMs, at 0.43-0.65x cuBLAS (bench_tuning, 2026-11-26)."""
    wider = []
    for c, family, params in _split_k_configs(candidates):
        split = _filling_split(key, family.block_tile(params), family.k_tile(params), sms,
                               params["SPLIT_K"])  # fmt: skip
        if split != params["SPLIT_K"]:
            alternative = KernelConfig.make(c.family, {**params, "SPLIT_K": split})
            if alternative not in candidates and not family.violations(alternative, key.dtype):
                wider.append(alternative)
    return candidates + tuple(dict.fromkeys(wider))


# The rounds of blocks whose k-split autotuning also times (with_whole_round_splits). The
# powers of two split a few tiles into a number of blocks that leaves the last round over the
# SMs part-empty; the split that fills one or two rounds exactly, at one block per SM or at
# the blocks the config holds, beat every power of two at 4 of 11 losing table entries
# (probe_skinny.py --splits around, H100, 2026-11-27 14:12 UTC, cuBLAS ms / ours):
# 384x384x3072 float64, 36 tiles of 64 x 64, 2 blocks an SM: 7 slices (252 blocks) 1.08, 8
# slices 0.85; 384x384x1024 float64: 3 slices (108 blocks) 1.01, 4 slices 0.80;
# 128x3072x8192 float32, 24 tiles of 64 x 256, 1 an SM: 11 slices (264 blocks) 0.93, 8 and
# 16 slices 0.70 and 0.67; 384x384x3072 float32: 14 slices 0.95, 16 slices 0.89. Three
# rounds lost (16 slices at 128x3072x8192).
WHOLE_ROUNDS = (1, 2)


def with_whole_round_splits(candidates: tuple[Any, ...], key: GemmKey, sms: int,
                            rounds_of: tuple[int, ...] | None = None) -> tuple[Any, ...]:
    """For each own split-K candidate with fewer output tiles at this shape than the GPU has
    block slots for it (SMs x its resident blocks, model.resident_blocks), again with each
    k-split whose blocks fill `rounds_of` (default WHOLE_ROUNDS) rounds over the SMs as
    nearly as a whole number of slices can, at one block per SM and at the blocks it holds;
    as far as each slice keeps two k-tiles and MAX_SPLIT_K allows. Nothing for stream-K
    configs."""
    rounds_of = WHOLE_ROUNDS if rounds_of is None else rounds_of
    found = []
    for c, family, params in _split_k_configs(candidates):
        resident = model.resident_blocks(c, key.dtype)
        tiles = _tiles(key, family.block_tile(params))
        if tiles >= sms * resident:
            continue
        widest = _widest_split(key, family.k_tile(params))
        for per_sm in dict.fromkeys((1, resident)):
            for rounds in rounds_of:
                split = rounds * sms * per_sm // tiles
                config = KernelConfig.make(c.family, {**params, "SPLIT_K": split})
                if (2 <= split <= widest and config not in candidates
                        and not family.violations(config, key.dtype)):  # fmt: skip
                    found.append(config)
    return tuple(dict.fromkeys(found))


# Where the round tiles are timed beside a first candidate whose tiles fill its block slots:
# that candidate splits k, and k is at least this long. The table's long-k float32 entries
# that cuBLAS held with 128 x 32 tiles split 4 ways (384x3072x8192: 288 tiles on 264 slots, no
# round tiles timed) ran 0.87x cuBLAS through the call; the 128 x 64 tile at 8 slices 0.93x.
ROUND_TILES_SPLIT_FROM_K = 2048


def with_round_tiles(candidates: tuple[Any, ...], key: GemmKey, sms: int) -> tuple[Any, ...]:
    """For each own split-K candidate with fewer output tiles at this shape than the GPU has
    block slots for it (as with_whole_round_splits asks), or split in k, by a k-split or a
    stream-K schedule (_round_tile_bases), at k of at least ROUND_TILES_SPLIT_FROM_K, its
    family's `round_tiles` (dmma's two 128 x 64 tilings, simt's
    128 x 64 tile, its 64 x 128 mirror and the two-warp 64 x 64) on its other settings, each
    at the k-splits that fill the family's `round_tile_rounds` rounds (where its own tiles
    are fewer than its slots) and, where the candidate's tiles are few and its own fill at
    least half a round at one block per SM, unsplit; only the round tiles C nearly fills,
    and of a tile and its mirror the one whose short side the layout wants
    (_round_tiles_here). Where its family has `layout_twins` for the key's layout, each
    tiling comes as those instead of as declared (simt's TN, aligned: operands through
    registers, both staged 1.12-1.94x faster than the tile's 4-byte copies at each of the 56
    tiles and splits timed over six shapes: probe_round_tiles.py --change tn-registers, H200,
    2026-12-02 03:14 UTC; now the longer side's staged and the other copied from a cursor, and
    both copied from cursors, 1-3% behind both staged at 5173x795x285, 2026-12-03)."""
    found = []
    for c, family, params, splits_k in _round_tile_bases(candidates):
        if not family.round_tiles:
            continue
        few = _tiles(key, family.block_tile(params)) < sms * model.resident_blocks(c, key.dtype)
        if not (few or (splits_k and key.k >= ROUND_TILES_SPLIT_FROM_K)):
            continue
        for variant in _round_tile_variants(c, family, params, key):
            if few and 2 * _tiles(key, family.block_tile(variant.as_dict())) >= sms:
                found.append(variant)
            found += with_whole_round_splits((variant,), key, sms, family.round_tile_rounds)
    return tuple(dict.fromkeys(f for f in found if f not in candidates))


def _round_tile_variants(c: KernelConfig, family: Any, params: Params,
                         key: GemmKey) -> list[KernelConfig]:  # fmt: skip
    """The family's round tiles here (_round_tiles_here) on params, unsplit and data-parallel,
    each as its layout twins where the family has them for the key (else as declared), those
    the family's constraints allow."""
    variants = []
    for tile in _round_tiles_here(family, params, key) if family.round_tiles else ():
        tiled = KernelConfig.make(c.family, {**params, **tile, "SPLIT_K": 1, "STREAM_K": 0})
        variants += [v for v in _layout_twins(tiled, key) or (tiled,)
                     if not family.violations(v, key.dtype)]  # fmt: skip
    return variants


# Where a k-split first candidate's grid already fills its block slots at short k (under
# ROUND_TILES_SPLIT_FROM_K), the share of its waves a round tile's unsplit grid must fill for
# autotuning to time it (with_unsplit_grids). At TN 307x9899x517 the table's 64 x 128 tile split
# four ways (390 tiles on 264 slots) ran 0.83x cuBLAS through the call; unsplit 0.94x, and the
# 64 x 128 round tile at three blocks an SM (390 tiles on 396 slots, 98% of one wave) 0.95x;
# at 273x10224x374 the first candidate unsplit ran 0.85x against its split's 0.82x
# (layout-losers, H200, 2026-12-02 05:46 UTC).
UNSPLIT_ROUND_TILE_FILL = 0.9


def with_unsplit_grids(candidates: tuple[Any, ...], key: GemmKey, sms: int) -> tuple[Any, ...]:
    """For each own k-split candidate whose output tiles at this shape fill its block slots
    (SMs x its resident blocks) at k under ROUND_TILES_SPLIT_FROM_K: itself unsplit, and its
    family's round tiles here (as with_round_tiles takes them, layout twins too) unsplit where
    their grid fills at least UNSPLIT_ROUND_TILE_FILL of its waves of block slots. (At short k
    over a full grid each slice keeps few k-tiles, and the second launch's sums cost more than
    the fuller last wave saves: UNSPLIT_ROUND_TILE_FILL's shapes.)"""
    if key.k >= ROUND_TILES_SPLIT_FROM_K:
        return ()
    found = []
    for c, family, params in _split_k_configs(candidates):
        slots = sms * model.resident_blocks(c, key.dtype)
        if params["SPLIT_K"] == 1 or _tiles(key, family.block_tile(params)) < slots:
            continue
        itself = KernelConfig.make(c.family, {**params, "SPLIT_K": 1})
        if not family.violations(itself, key.dtype):
            found.append(itself)
        for variant in _round_tile_variants(c, family, params, key):
            block = family.block_tile(variant.as_dict())
            its_slots = sms * model.resident_blocks(variant, key.dtype)
            if _fill(key, block, its_slots) >= UNSPLIT_ROUND_TILE_FILL:
                found.append(variant)
    return tuple(dict.fromkeys(f for f in found if f not in candidates))


def _round_tile_bases(candidates: tuple[Any, ...]) -> list[tuple[KernelConfig, Any, Params, bool]]:
    """(config, family, parameters, whether it splits k) of the own candidates, in order, that
    with_round_tiles may retile: those with a k-split, and the stream-K ones (as their
    data-parallel grid), which split k by their schedule. (Where the table's first candidate
    at TT 384x3072x8192 was stream-K no round tile was timed, and the call's pick ran 0.93x
    cuBLAS; the 64 x 128 mirror at 8 slices ran 0.96x: round-mirror, H200, 2026-12-02.)"""
    from .families import FAMILIES

    found: list[tuple[KernelConfig, Any, Params, bool]] = []
    for c in candidates:
        if isinstance(c, KernelConfig) and "SPLIT_K" in c.as_dict():
            family, params = FAMILIES[c.family], c.as_dict()
            if family.stream_k(params):
                found.append((c, family, {**params, "STREAM_K": 0}, True))
            else:
                found.append((c, family, params, params["SPLIT_K"] > 1))
    return found


def _round_tiles_here(family: Any, params: Params, key: GemmKey) -> list[Params]:
    """The family's round tiles (on params) that autotuning times at the key: those whose
    block C fills at least three quarters of along each side (all where none is), and of a
    tile and its mirror both kept, the one the family's `round_tile_short_side` names for the
    key's transpose pair. (Rows and columns past C's are padding: at m = 64 simt's 128 x 64
    ran 0.50-0.59x cuBLAS where its mirror ran 1.04x, but at m = 126 it ran best: H200,
    2026-12-02.)"""
    tiles = family.round_tiles
    blocks = [family.block_tile({**params, **t}) for t in tiles]
    fits = [i for i, (bm, bn) in enumerate(blocks)
            if 4 * key.m >= 3 * bm and 4 * key.n >= 3 * bn]  # fmt: skip
    kept = fits or list(range(len(tiles)))
    side = family.round_tile_short_side.get((key.trans_a, key.trans_b))
    if side is not None:
        shapes = {blocks[i] for i in kept}

        def longer(block: tuple[int, int]) -> bool:  # along the side named, with its mirror kept
            bm, bn = block
            return (bn, bm) in shapes and (bn > bm if side == "n" else bm > bn)

        kept = [i for i in kept if not longer(blocks[i])]
    return [tiles[i] for i in kept]


def _layout_twins(config: KernelConfig, key: GemmKey) -> tuple[KernelConfig, ...]:
    """config with each of its family's `layout_twins` for the key's transpose pair applied,
    where the operands are aligned (none elsewhere)."""
    from .families import FAMILIES

    twins = FAMILIES[config.family].layout_twins_for(key.trans_a, key.trans_b, key.aligned)
    return tuple(KernelConfig.make(config.family, {**config.as_dict(), **t}) for t in twins)


# Where autotuning times a family's small-k tiles: k at most SMALL_K_UPTO (at 3072x8192x1024
# dmma's ran level with the best of 11 tilings, 0.95x cuBLAS; H100, 2026-11-28 00:16 UTC).
SMALL_K_UPTO = 1024


def with_small_k_tiles(candidates: tuple[Any, ...], key: GemmKey, sms: int) -> tuple[Any, ...]:
    """For each own split-K candidate at a shape with k at most SMALL_K_UPTO, its family's
    `small_k_tiles` on its other settings, unsplit, where that tiling's tiles fill at least
    one round of its block slots (fewer: with_round_tiles' shapes)."""
    if key.k > SMALL_K_UPTO:
        return ()
    return _unsplit_tiles(candidates, key, sms, lambda family: family.small_k_tiles, 1)


def _unsplit_tiles(candidates: tuple[Any, ...], key: GemmKey, sms: int,
                   tilings: Callable[[Any], tuple[Params, ...]], rounds: int) -> tuple[Any, ...]:
    """For each own split-K candidate, the `tilings` of its family on its other settings,
    unsplit, where a tiling's tiles fill at least `rounds` rounds of its block slots."""
    found = []
    for c, family, params in _split_k_configs(candidates):
        for tile in tilings(family):
            tiled = KernelConfig.make(c.family, {**params, **tile, "SPLIT_K": 1})
            slots = sms * model.resident_blocks(tiled, key.dtype)
            if (_tiles(key, family.block_tile(tiled.as_dict())) >= rounds * slots
                    and not family.violations(tiled, key.dtype)):  # fmt: skip
                found.append(tiled)
    return tuple(dict.fromkeys(f for f in found if f not in candidates))


# Where autotuning times a family's medium tiles: the shorter of m and n at most MEDIUM_UPTO,
# and at least MEDIUM_FROM_FLOPS of work (below it a call is bound by its launch, and each
# tiling is one more compile on a shape's first call). The medium tiles won at float64 shapes
# whose short side was 131-893 (dmma.MEDIUM_TILES) and tied at 700x2460x2744; at
# 3178x4043x2654 the table's 128 x 64 tile ran 4% ahead of them. 5e7, not 2e8: at 16 float32
# NN and TN shapes of 6.7e7-1.3e8 flops, the call with them timed ran 1.12-1.39x as fast at
# four (194x2770x88 NN, 300x2000x100 both ways, 3000x150x120 TN) and 0.99-1.03x at the other
# twelve (H200, 2026-12-03 15:28 UTC, gpu_session.sh medium-floor).
MEDIUM_UPTO, MEDIUM_FROM_FLOPS = 1024, 5e7


def with_medium_tiles(candidates: tuple[Any, ...], key: GemmKey, sms: int) -> tuple[Any, ...]:
    """For each own split-K candidate at a shape whose shorter side of C is at most
    MEDIUM_UPTO and whose work is at least MEDIUM_FROM_FLOPS, its family's `medium_tiles`
    (dmma's set every tunable; one added later keeps the candidate's value), as its layout
    twins where the family has them for the key (simt's TN: the longer side's operand through
    registers, and both copied from cursors), at the grids
    of _medium_grids (600x508x2782: 80 tiles of 64 x 64 on 396 slots ran best split 3 ways)."""
    if min(key.m, key.n) > MEDIUM_UPTO or 2 * key.m * key.n * key.k < MEDIUM_FROM_FLOPS:
        return ()
    found: list[KernelConfig] = []
    for c, family, params in _split_k_configs(candidates):
        for tile in family.medium_tiles:
            declared = KernelConfig.make(c.family, {**params, **tile, "SPLIT_K": 1})
            for tiled in _layout_twins(declared, key) or (declared,):
                if not family.violations(tiled, key.dtype):
                    found += _medium_grids(tiled, key, sms)
    return tuple(dict.fromkeys(f for f in found if f not in candidates))


def _medium_grids(tiled: KernelConfig, key: GemmKey, sms: int) -> list[KernelConfig]:
    """The grids with_medium_tiles times a medium tile at: unsplit where its tiles give every
    SM one at least, and where they fill less than a round of its block slots, at the least
    power-of-two k-split that fills one and at its whole-round splits. (Unsplit from half a
    round until 2026-12-02: 3477x273x169 NN float32 has 495 tiles of 64 x 32 on 1,056 slots,
    and unsplit ran 1.02x cuBLAS where split 2 ways ran 0.83; H200, 2026-12-03 07:07 UTC,
    gpu_session.sh medium-simt.)"""
    from .families import FAMILIES

    family, params = FAMILIES[tiled.family], tiled.as_dict()
    block = family.block_tile(params)
    slots = sms * model.resident_blocks(tiled, key.dtype)
    tiles = _tiles(key, block)
    found = [tiled] if tiles >= sms else []
    if tiles < slots:
        split = _filling_split(key, block, family.k_tile(params), slots)
        filled = KernelConfig.make(tiled.family, {**params, "SPLIT_K": split})
        if split > 1 and not family.violations(filled, key.dtype):
            found.append(filled)
        found += with_whole_round_splits((tiled,), key, sms)
    return found


# Where autotuning times a family's large tiles: at least LARGE_FROM_FLOPS of work over at
# least LARGE_ROUNDS rounds of the tile's block slots (there the main loop is nearly all of a
# call, and one more compile is little beside its autotuning). Measured at 4096^3 (7.8
# rounds of 128 x 128 tiles on 132 SMs, 1.4e11 flops) and 8192^3 (dmma.LARGE_TILES). Only
# where cuBLAS is not a candidate (TUNEDGEMM_CUBLAS=0): with it, autotuning's turns timed
# dmma's large tile 3-7% ahead of cuBLASLt at 8192^3 NN float64 and kept it, and matmul then
# ran 0.967-0.977x CuPy's and torch's matmul (cuBLAS) in bench_device's alternating loops,
# and 1.005-1.010x once the tile was not timed there (H100, 2026-12-07 09:37, 09:42 and 09:48
# UTC). At the 700 W cap the two orders of timing disagree by more than autotuning's margin,
# and the auto mode's floor is cuBLAS.
LARGE_FROM_FLOPS, LARGE_ROUNDS = 1e11, 4


def with_large_tiles(candidates: tuple[Any, ...], key: GemmKey, sms: int) -> tuple[Any, ...]:
    """For each own split-K candidate at a product of at least LARGE_FROM_FLOPS, its family's
    `large_tiles` (which set every tunable but SPLIT_K), unsplit, where their tiles fill at
    least LARGE_ROUNDS rounds of their block slots."""
    if 2 * key.m * key.n * key.k < LARGE_FROM_FLOPS:
        return ()
    return _unsplit_tiles(candidates, key, sms, lambda family: family.large_tiles, LARGE_ROUNDS)


# Where autotuning times a family's narrow tiles: min(m, n) at most NARROW_BELOW (four
# 128-wide tiles across) and k at least NARROW_FROM_K (long enough for k-splits to feed the
# SMs); elsewhere the table's tiles fill the GPU, and each narrow tile is one more compile.
# probe_skinny.py --narrow --padded (H100, 2026-11-26 20:09 UTC): simt's 128 x 32 tile ran
# 5453x392x3458 at 0.94x cuBLAS and 8058x140x460 at 1.01x, where the calls had run 0.75x and
# 0.82x outside the bounds of before (256, 512).
NARROW_BELOW, NARROW_FROM_K = 512, 256


def with_narrow_tiles(candidates: tuple[Any, ...], key: GemmKey, sms: int) -> tuple[Any, ...]:
    """For an own candidate at a skinny shape with long k, its family's narrow tiles
    (`narrow_tiles`: simt's 128 x 32 and 32 x 128, dmma's 64 x 32 and 32 x 64) on its other
    settings, each at the k-splits of `_narrow_splits`, as far as each slice keeps two
    k-tiles and MAX_SPLIT_K allows. Nothing for other shapes, stream-K configs or families
    without narrow tiles."""
    from .families import FAMILIES

    if min(key.m, key.n) > NARROW_BELOW or key.k < NARROW_FROM_K:
        return ()
    narrow = []
    for c in candidates:
        if not isinstance(c, KernelConfig):
            continue
        family, params = FAMILIES[c.family], c.as_dict()
        if family.stream_k(params) or "SPLIT_K" not in params:
            continue
        for tile in family.narrow_tiles:
            changed = {**params, **tile}
            k_tile = family.k_tile(changed)
            splits = _narrow_splits(key, family.block_tile(changed), k_tile,
                                    sms * family.narrow_blocks_per_sm)  # fmt: skip
            widest = max(_widest_split(key, k_tile), 1)
            for s in splits:
                config = KernelConfig.make(c.family, {**changed, "SPLIT_K": s})
                if (1 <= s <= widest and config not in candidates
                        and not family.violations(config, key.dtype)):  # fmt: skip
                    narrow.append(config)
    return tuple(dict.fromkeys(narrow))


def _narrow_splits(key: GemmKey, tile: tuple[int, int], k_tile: int,
                   blocks: float) -> tuple[int, ...]:  # fmt: skip
    """The k-splits a narrow tile is timed at: the least power of two that gives key's grid of
    `tile`s at least `blocks` blocks (every SM its family's `narrow_blocks_per_sm`), half and
    twice that, and the least split of any size that gives them.

    Half and twice: the last wave's fill and the slices' sums move the best split either way
    (probe_skinny.py, H100, 2026-11-26 20:09 UTC: 4 at 5453x392x3458 where the power of two is
    1, 8 at 77x1643x881 where it is 16). The least of any size: the power of two overshoots
    it by up to 2x, and each slice more is one more partial C to sum. At 146x5866x434 TT
    float32, 230 tiles of 32 x 128 on 528 slots, 3 slices ran 31.5-32.5 us at every GROUP_M
    against 37.2-37.9 at the power of two, 4, and 33.4-38.0 at 2 (cuBLAS 27.6 us;
    `gpu_session.sh narrow-splits`, H200, 2026-12-02 07:57 UTC)."""
    split = _filling_split(key, tile, k_tile, blocks)
    least = min(split, math.ceil(blocks / _tiles(key, tile)))
    return tuple(dict.fromkeys((split, split // 2, 2 * split, least)))


# Where autotuning times a candidate's stream-K variants: its data-parallel grid (one k-slice)
# fills less than STREAM_K_BELOW_FILL of the block slots of its waves, and k holds at least
# STREAM_K_FROM_KTILES k-tiles (below that a split tile's fix-up costs about what it saves);
# the family's large stream-K tiles from STREAM_K_TILES_FROM_K (probe_skinny.py --large, H100,
# 2026-11-27 07:44 UTC: they won at k of 3982 and 6156, lost at 890-1771). 256x13726x3982's
# 108 tiles of 256 x 128 fill 82% of 132 SMs, and stream-K ran it 9% faster.
STREAM_K_BELOW_FILL, STREAM_K_FROM_KTILES, STREAM_K_TILES_FROM_K = 0.9, 8, 2048


def _fill(key: GemmKey, tile: tuple[int, int], slots: int) -> float:
    """The share of the block slots of its waves that key's grid of `tile`s fills."""
    tiles = _tiles(key, tile)
    return tiles / (-(-tiles // slots) * slots)


def with_stream_k(candidates: tuple[Any, ...], key: GemmKey, sms: int) -> tuple[Any, ...]:
    """For each own candidate of a family with a stream-K schedule (`stream_k_changes`) whose
    output tiles fill the SMs' block slots badly at this shape (256x13726x3982: 108 tiles of
    256 x 128 on 132 slots), its stream-K variants: the family's changes,
    with STREAM_K the blocks an SM holds, so that the last wave's tiles are shared out by
    k-tiles among all the SMs (tunedgemm/streamk.py), and twice that, since MIN_BLOCKS is
    what the registers guarantee, not what ptxas leaves room for. At long k, the first
    candidate's settings on each of the family's `stream_k_tiles` that fill badly too."""
    from .families import FAMILIES

    variants = []
    own = [c for c in candidates if isinstance(c, KernelConfig)]
    for c in own:
        family, params = FAMILIES[c.family], c.as_dict()
        if family.stream_k_changes is None or family.stream_k(params):
            continue
        resident = model.resident_blocks(c, key.dtype)
        found = []
        if (_fill(key, family.block_tile(params), sms * resident) < STREAM_K_BELOW_FILL
                and key.k >= STREAM_K_FROM_KTILES * family.k_tile(params)):  # fmt: skip
            found += [{**params, **family.stream_k_changes, "STREAM_K": per_sm}
                      for per_sm in (resident, 2 * resident)]  # fmt: skip
        for tile in family.stream_k_tiles if c is own[0] and key.k >= STREAM_K_TILES_FROM_K else ():
            tiled = {**params, **family.stream_k_changes, **tile}
            if _fill(key, family.block_tile(tiled), sms * tile["STREAM_K"]) < STREAM_K_BELOW_FILL:
                found.append(tiled)
        for p in found:
            variant = KernelConfig.make(c.family, p)
            if variant not in candidates and not family.violations(variant, key.dtype):
                variants.append(variant)
    return tuple(dict.fromkeys(variants))


def fastest_twin(config: KernelConfig, key: GemmKey) -> KernelConfig:
    """config's first twin at key (the faster main loop with the same bits) where its family
    has one that its constraints allow, else config: the own kernel a composed runner
    (_composed) launches."""
    twins = with_twins((config,), key.dtype, key)[1:]
    return twins[0] if twins else config


def with_twins(candidates: tuple[Any, ...], dtype: str,
               key: GemmKey | None = None) -> tuple[Any, ...]:  # fmt: skip
    """The candidates and, after them, each own config's twins (its family's `twins`: the
    same bits by a kernel the table's configs predate, as dmma's one-launch split-K or
    simt's faster main loop; and, given the key, its `layout_twins` for the key's transpose
    pair where the operands are aligned), where the family's constraints allow them."""
    return _with_changes(candidates, dtype, lambda family, params: (
        family.twins if key is None
        else family.twins_for(key.trans_a, key.trans_b, key.aligned)))  # fmt: skip


def with_raster_twins(candidates: tuple[Any, ...], dtype: str) -> tuple[Any, ...]:
    """The candidates and, after them, each data-parallel own config's `raster_twins` (its
    family's main-loop twin with the blocks taking C's tiles in another order: the same
    bits), where the family's constraints allow them. (A stream-K schedule splits tiles where
    the order puts them: none there.)"""
    return _with_changes(candidates, dtype, lambda family, params: (
        () if family.stream_k(params) else family.raster_twins))  # fmt: skip


def _with_changes(candidates: tuple[Any, ...], dtype: str,
                  changes_of: Callable[[Any, Params], tuple[Params, ...]]) -> tuple[Any, ...]:
    """The candidates and, after them, each own config with each of changes_of(its family,
    its parameters) applied, where the family's constraints allow it and it is not a
    candidate already."""
    from .families import FAMILIES

    changed = []
    for c in candidates:
        if isinstance(c, KernelConfig):
            family = FAMILIES[c.family]
            for changes in changes_of(family, c.as_dict()):
                twin = KernelConfig.make(c.family, {**c.as_dict(), **changes})
                if twin not in candidates and not family.violations(twin, dtype):
                    changed.append(twin)
    return candidates + tuple(dict.fromkeys(changed))


def _composed(key: GemmKey) -> tuple[Any, ...]:
    """Runners composed of other launches that autotuning may time for the key: "3xtf32" on
    cuBLAS's TF32 GEMM (tunedgemm/tf32_cublas.py), where cuBLAS may compete, and large float32
    TN and TT products with an operand transposed first, then an own kernel of the layout that
    gives (tunedgemm/pretranspose.py), products whose last block column or row is nearly
    empty as whole tiles and a narrow panel (tunedgemm/edge_panel.py), and GEMV-like products
    by the panel kernel (tunedgemm/gemv_like.py)."""
    from . import edge_panel, gemv_like, pretranspose, selection, tf32_cublas

    found: tuple[Any, ...] = (pretranspose.candidates(key) + edge_panel.candidates(key)
                              + gemv_like.candidates(key))  # fmt: skip
    if key.precision == "3xtf32" and selection.cublas_allowed():
        on_cublas = tf32_cublas.candidate(key)
        found += (on_cublas,) if on_cublas is not None else ()
    return found


LOG_SHAPES_ENV = "TUNEDGEMM_LOG_SHAPES"


def _log_shape(key: GemmKey) -> None:
    """Append the key's shape to TUNEDGEMM_LOG_SHAPES's file (once per plan: the tuner reads
    distinct shapes); a file that cannot be written warns once and never fails the call."""
    path = settings.get(LOG_SHAPES_ENV)
    if not path:
        return
    import json

    record = {"dtype": key.dtype, "precision": key.precision, "m": key.m, "n": key.n,
              "k": key.k, "trans_a": key.trans_a, "trans_b": key.trans_b}  # fmt: skip
    try:
        with open(path, "a") as f:
            f.write(json.dumps(record) + "\n")
    except OSError as exc:
        from . import table

        table.warn_once(f"{LOG_SHAPES_ENV}={path!r} cannot be written ({exc}); shapes "
                        "are not logged")  # fmt: skip


def _cublas_usable() -> bool:
    from . import reference

    return reference.status()[0]


def launcher(key: GemmKey, config: Any) -> Any:
    """run(a, b, c, alpha, beta, stream): the launch of key's product at these addresses."""
    from . import launch, reference, table

    if getattr(config, "runs_itself", False):  # a composed runner (_composed)
        return config
    m, n, k, lda, ldb, ldc = key.m, key.n, key.k, key.lda, key.ldb, key.ldc
    ta, tb, dtype = key.trans_a, key.trans_b, np.dtype(key.dtype)
    if config == table.CUBLAS:
        from . import cublaslt

        lt = cublaslt.runner(key.dtype, key.precision, ta, tb, m, n, k, lda, ldb, ldc,
                             key.batch, key.batch_strides)  # fmt: skip
        if lt is not None:
            return lt
        if key.batch > 1:

            def run_batched(a: int, b: int, c: int, alpha: float, beta: float, s: int) -> None:
                form = BlasForm(ta, tb, m, n, k, a, lda, b, ldb, c, ldc, dtype.itemsize)
                reference.gemm_batched(form, key.batch_strides, key.batch, dtype, alpha, beta, s)

            return run_batched
        call = reference.direct(dtype, key.precision)

        def run_cublas(a: int, b: int, c: int, alpha: float, beta: float, s: int) -> None:
            call(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, s)

        return run_cublas
    own = launch.GemmLauncher(launch.plan(config, key.dtype, ta, tb, key.aligned))
    return own_runner(own, key, config)


def own_runner(own: Any, key: GemmKey, config: KernelConfig | None = None) -> Any:
    """run(a, b, c, alpha, beta, stream) of key's product by an own GemmLauncher: directly,
    with its split-K workspace, or replayed as a graph; a family's `config` may also split
    its last wave off (tail_split)."""
    m, n, k, lda, ldb, ldc = key.m, key.n, key.k, key.lda, key.ldb, key.ldc
    if launched_directly(own, key.batch):
        return _OwnLaunches(own, key)
    if own.reduce is not None or own.fused:
        return _SplitK(own, key)
    shape = BlasForm(key.trans_a, key.trans_b, m, n, k, 0, lda, 0, ldb, 0, ldc,
                     np.dtype(key.dtype).itemsize)  # fmt: skip
    parts = None if config is None else tail_split.runner(config, key.dtype, shape, own,
                                                          key.aligned)  # fmt: skip
    if parts is not None:  # the last, nearly empty wave as a launch of its own
        return _TailSplitRun(parts, shape)
    # One launch of one kernel: the grid worked out once, the arguments packed per call.
    grid, launch_gemm = own.plan.grid(m, n), own.gemm.launch

    def run_one(a: int, b: int, c: int, alpha: float, beta: float, s: int,
                home: int = 0) -> None:  # fmt: skip
        launch_gemm(grid, s, (m, n, k, alpha, a, lda, b, ldb, beta, c, ldc))

    return replayed(run_one) or run_one


def launched_directly(own: Any, batch: int = 1) -> bool:
    """Whether an own launcher's calls are launched directly, not replayed as a graph (the
    plan's runner, and what autotuning times): batches, and stream-K (a workspace per
    stream)."""
    return batch > 1 or getattr(own, "fixup", None) is not None


def replayed(queue: Any) -> Any:
    """queue's launches behind graph replay (tunedgemm/_fastlaunch.c's Replay): a call that
    repeats one of the last few (operands, scalars, stream, workspace) is captured once as a
    CUDA graph and replayed from then on, about 1.7 us of host time a call where each
    cuLaunchKernel took 3.4-4.8 on the H100 machine (benchmarks/probe_small_launch.py,
    2026-11-27). None where TUNEDGEMM_GRAPHS is off or the C extension or the driver's graph
    calls are missing. queue(a, b, c, alpha, beta, stream, home) queues the launches on stream
    with the workspace of stream `home`."""
    from . import _driver, cublaslt, settings

    calls = _driver.graph_calls() if settings.get(cublaslt.GRAPHS_ENV) else None
    if calls is None:
        return None
    try:
        from . import _fastlaunch
    except ImportError:
        return None
    return _fastlaunch.Replay(queue, calls)


class _SplitK:
    """run(a, b, c, alpha, beta, stream) of one product by an own split-K kernel: its
    k-slices into the plan's workspace for the stream, then the reduction into C, each one
    launch with its grid worked out once (fused split-K, SPLITK_FUSED: the one launch, whose
    last block of each tile reduces). (At 256^3-512^3 split-K configs are the fastest own
    kernels and the calls are bound by host time: the general launcher cost microseconds a
    call that the kernels do not.)"""

    __slots__ = ("flags", "gemm", "key", "ldw", "reduce", "replay", "tiles", "workspaces")

    def __init__(self, own: Any, key: GemmKey) -> None:
        from .launch import splitk_flags

        p, m, n = own.plan, key.m, key.n
        self.flags = splitk_flags  # (bound here: the call path imports nothing)
        self.key, self.ldw = key, p.workspace_ld(m)
        self.workspaces = cuda.StreamWorkspaces(p.workspace_bytes(m, n))
        grid = p.grid(m, n)
        self.gemm, self.tiles = (own.gemm.launch, grid), grid[0] * grid[1]
        self.reduce = None if own.fused else (own.reduce.launch, p.reduce_grid(m, n, own.sms))
        self.replay = replayed(self.queue)  # (a cycle through self.queue that gc collects)

    def reserve(self, stream: int) -> None:
        self.workspaces(stream)

    def __call__(self, a: int, b: int, c: int, alpha: float, beta: float, s: int) -> None:
        if self.replay is None:
            self.queue(a, b, c, alpha, beta, s, s)
        else:
            self.replay(a, b, c, alpha, beta, s, self.workspaces(s))

    def queue(self, a: int, b: int, c: int, alpha: float, beta: float, s: int,
              home: int) -> None:  # fmt: skip
        """The launches on stream s with the workspace and tile flags of stream `home`."""
        key, ldw = self.key, self.ldw
        workspace = self.workspaces(home)
        launch_gemm, grid = self.gemm
        if self.reduce is None:
            flags = self.flags(home, self.tiles)
            launch_gemm(grid, s, (key.m, key.n, key.k, alpha, a, key.lda, b, key.ldb, beta,
                                  workspace, ldw, c, key.ldc, flags))  # fmt: skip
            return
        launch_gemm(grid, s, (key.m, key.n, key.k, alpha, a, key.lda, b, key.ldb, beta,
                              workspace, ldw))  # fmt: skip
        launch_reduce, reduce_grid = self.reduce
        launch_reduce(reduce_grid, s, (key.m, key.n, alpha, workspace, ldw, beta, c, key.ldc))


class _TailSplitRun:
    """run(a, b, c, alpha, beta, stream) of one product in three launches (tail_split)."""

    __slots__ = ("parts", "shape")

    def __init__(self, parts: Any, shape: BlasForm) -> None:
        self.parts, self.shape = parts, shape

    def reserve(self, stream: int) -> None:
        self.parts.reserve(stream)

    def __call__(self, a: int, b: int, c: int, alpha: float, beta: float, s: int) -> None:
        self.parts.run(dataclasses.replace(self.shape, a=a, b=b, c=c), alpha, beta, s)


class _OwnLaunches:
    """run(a, b, c, alpha, beta, stream) of an own kernel over a batch: a launch per product
    (split-K ones with their reduction, stream-K ones with their fixup, through a workspace
    of the plan's per stream: the products of a batch, queued on one stream in turn, share
    it). Also a single stream-K product's runner."""

    __slots__ = ("key", "own", "workspaces")

    def __init__(self, own: Any, key: GemmKey) -> None:
        self.own, self.key = own, key
        nbytes = own.workspace_bytes(key.m, key.n, key.k)
        self.workspaces = cuda.StreamWorkspaces(nbytes) if nbytes else None

    def reserve(self, stream: int) -> None:
        if self.workspaces is not None:
            self.workspaces(stream)

    def __call__(self, a: int, b: int, c: int, alpha: float, beta: float, s: int) -> None:
        key, own = self.key, self.own
        workspace = self.workspaces(s) if self.workspaces is not None else 0
        sa, sb, sc = key.batch_strides
        size = np.dtype(key.dtype).itemsize
        for i in range(key.batch):  # batches of own kernels: a launch each (DevicePlan)
            own(BlasForm(key.trans_a, key.trans_b, key.m, key.n, key.k, a + i * sa * size,
                         key.lda, b + i * sb * size, key.ldb, c + i * sc * size, key.ldc,
                         size), alpha, beta, s, workspace)  # fmt: skip


def device_plan(key: GemmKey, form: BlasForm, stream: int,
                cache: _Cache = device_plans) -> DevicePlan:  # fmt: skip
    """The plan of key (built on first use; `form` holds the first call's operands, which
    autotuning reads)."""
    found = cache.get(key)
    if found is None:
        found = DevicePlan(key, form, stream)
        cache.put(key, found)
    return found


def _drop_other_device(index: int) -> None:
    cache = _other_devices.pop(index, None)
    if cache is not None:
        cache.clear()


cuda.on_release(_drop_other_device)


def cache_here() -> _Cache:
    """The DevicePlan cache of the GPU this thread works for (tunedgemm.cuda.bind)."""
    bound = cuda._thread.__dict__.get("bound_ordinal")
    if bound is None:
        return device_plans
    cache = _other_devices.get(bound)
    if cache is None:
        cache = _other_devices.setdefault(bound, _Cache())
    return cache


# CallPlan.plans' keys: 1 for aligned operands, plus READS_C for a call that reads C (beta != 0);
# an int, not a tuple, as CallPlan.run makes one every call.
READS_C = 2


class CallPlan:
    """One kind of device call of a public routine, mapped onto its product: the operands'
    order in the column-major form (`swap`: C is row-major, so C^T = B^T A^T), the result
    to make (None: c in place), and the DevicePlans by alignment and by whether C is read."""

    __slots__ = (
        "batch",
        "dtype",
        "kind",
        "ld_aligned",
        "make",
        "new",
        "outer",
        "plans",
        "precision",
        "spares",
        "swap",
        "template",
    )  # fmt: skip

    def __init__(self, kind: Any, form: BlasForm, swap: bool, dtype: np.dtype, precision: str,
                 new: tuple[tuple[int, ...], str] | None, batch: int = 1,
                 batch_strides: tuple[int, int, int] = (0, 0, 0),
                 outer: tuple[tuple[int, ...], ...] | None = None) -> None:  # fmt: skip
        self.kind, self.swap, self.dtype, self.precision = kind, swap, dtype, precision
        self.new = new
        self.template = form
        self.batch = (batch, batch_strides)
        size = dtype.itemsize
        self.ld_aligned = all((ld * size) % 16 == 0 for ld in (form.lda, form.ldb, form.ldc))
        # Element offsets of the (A, B, C) of each launch, where a batch takes several (None:
        # one); offsets that break 16-byte alignment make every launch unaligned.
        self.outer = outer
        if outer and any((o * size) % 16 for offsets in outer for o in offsets):
            self.ld_aligned = False
        self.plans: dict[int, DevicePlan] = {}
        self.spares = None if new is None else recycle.Spares.of(
            kind, int(np.prod(new[0], dtype=np.int64)) * size)
        self.make: Any = None if new is None else kind.result_maker(new[0], dtype, new[1])

    def run(self, alpha: float, a: Any, b: Any, c: Any, beta: float, stream: Any) -> Any:
        if cuda._thread.__dict__.get("pushed") is None:  # launches need the context current
            cuda.context()
        kind = self.kind
        handle = kind.stream(a)
        if stream is not None:
            from . import _driver, streams

            call = streams.handle_of(stream) or 0
            if handle and handle != call:  # the operands' producer queued on another stream
                _driver.wait(call, handle)
            handle = call
        pa, pb = kind.ptr(a), kind.ptr(b)
        if self.new is not None:
            beta = 0.0  # SciPy's c=None: zeros, which a new result does not hold
            spares = self.spares
            if spares is None:
                result = self.make(a)
            else:
                result = spares.take(handle)
                if result is None:
                    result = spares.make(self.make, a, stream=handle)
        else:
            result = c
        pc = kind.ptr(result)
        if self.swap:
            pa, pb = pb, pa
        slot = (self.ld_aligned and not (pa | pb | pc) & 15) + READS_C * (beta != 0.0)
        plan = self.plans.get(slot)
        if plan is None:
            plan = self._plan(slot, pa, pb, pc, handle)
        if self.outer is None:
            plan.run(pa, pb, pc, alpha, beta, handle)
        else:
            size = self.dtype.itemsize
            for oa, ob, oc in self.outer:
                plan.run(pa + oa * size, pb + ob * size, pc + oc * size, alpha, beta, handle)
        return result

    def _plan(self, slot: int, pa: int, pb: int, pc: int, stream: int) -> DevicePlan:
        t = self.template
        form = BlasForm(t.trans_a, t.trans_b, t.m, t.n, t.k, pa, t.lda, pb, t.ldb, pc, t.ldc,
                        t.itemsize)  # fmt: skip
        key = GemmKey.of(form, self.dtype.name, self.precision, *self.batch,
                         reads_c=slot >= READS_C)  # fmt: skip
        plan = self.plans[slot] = device_plan(key, form, stream)
        return plan


# --- the front door: a call's signature, and the plan of a call seen for the first time ---

_SCALARS = (float, int)
_INT_FLAGS = (int, bool)


def gemm_signature(dtype: Any, alpha: Any, a: Any, b: Any, beta: Any, c: Any, trans_a: Any,
                   trans_b: Any, overwrite_c: Any,
                   precision: Any) -> tuple[Any, ...] | None:  # fmt: skip
    """What fixes the plan of an sgemm/dgemm/gemm call on device arrays, read without
    normalising; None for calls a plan does not take (they run the general path each time):
    scalars and flags of other types, alpha zero or extreme (BLAS rules the general path
    keeps), operands of two libraries, a c that is not overwritten, beta with no c."""
    if type(alpha) not in _SCALARS or type(beta) not in _SCALARS:
        return None
    if not (1e-30 < alpha < 1e30 or -1e30 < alpha < -1e-30):
        return None
    if beta != 0 and not -1e30 < beta < 1e30:  # NaN, inf and beyond float32: general path
        return None
    if type(trans_a) is not int or type(trans_b) is not int:
        return None
    kind = _kinds.get(type(a)) or kind_of(a)
    if kind is None or type(b) is not type(a) or not (0 <= trans_a <= 2 and 0 <= trans_b <= 2):
        return None
    if c is None:
        if beta != 0:
            return None
        c_signature = None
    elif type(c) is type(a) and type(overwrite_c) in _INT_FLAGS and overwrite_c:
        c_signature = kind.signature(c)
    else:
        return None
    return (dtype, kind.signature(a), kind.signature(b), c_signature, trans_a != 0,
            trans_b != 0, precision, get_precision())  # fmt: skip


def matmul_signature(a: Any, b: Any, precision: Any) -> tuple[Any, ...] | None:
    """What fixes the plan of matmul(a, b) on device arrays of one library (no `out`)."""
    kind = _kinds.get(type(a)) or kind_of(a)
    if kind is None or type(b) is not type(a):
        return None
    return ("matmul", kind.signature(a), kind.signature(b), precision, get_precision())


def plan_call(problem: Any, precision: str, a: Any, b: Any, c: Any = None,
              order: str = "F") -> CallPlan | None:  # fmt: skip
    """The plan of a normalised device call, when it is one launch on the caller's memory:
    operands of one library on this GPU, in the routine's dtype, with BLAS layouts, and the
    result either c in place or a new array (None: the general path serves it)."""
    from ._layout import DeviceMatrix, blas_form

    out = problem.out
    if not all(isinstance(x, DeviceMatrix) for x in (problem.a, problem.b, out)):
        return None
    kind = kind_of(a)
    m, n, k = problem.shape
    if kind is None or kind_of(b) is not kind or problem.c_init is not None or 0 in (m, n, k):
        return None
    dtype = problem.dtype
    if problem.a.dtype != dtype or problem.b.dtype != dtype or problem.alpha == 0.0:
        return None
    if not _on_this_device(a, kind) or out.layout() is None:
        return None
    if c is not None and problem.result is not c:
        return None
    try:
        form = blas_form(problem.a, problem.b, out)
    except ValueError:  # an operand with no unit stride: copies needed
        return None
    swap = bool(out.layout()[0])
    new = None if c is not None else ((m, n), order)  # as normalise made it: `order`
    return CallPlan(kind, form, swap, np.dtype(dtype), precision, new)


def _on_this_device(array: Any, kind: Any) -> bool:
    device = kind.signature(array)[3] if kind.name in ("cupy", "torch") else 0
    return bool(device == cuda.ordinal())


# --- the plan users hold ----------------------------------------------------------------


class Gemm:
    """A planned GEMM: alpha op(a) op(b) + beta c for one kind of call, decided once.

        p = tunedgemm.plan(a, b)                     # decides: backend, precision, kernel
        c = p.run(a, b)                              # a new result (F-ordered, as sgemm)
        p.run(a2, b2, c, alpha=2.0, beta=1.0, stream=s)   # into c, on a stream

    The operands given to `plan` fix the call's kind: library, dtype, shapes, strides and
    transposes (and c's, when the plan writes into c); `run` takes any arrays of that kind,
    and a different kind is a ValueError. On device arrays `run` costs reading the
    addresses, making the result from the library's allocator and one launch; the first
    decision (and any autotuning, TUNEDGEMM_REFINE) happens in `plan`, for the `beta` the
    runs will use: a plan into c given beta != 0 times its candidates reading C, and a run
    at the other kind of beta (0 or not) decides on its first call. On host arrays `run`
    is sgemm/dgemm's host path (small products on NumPy, large ones through the pipeline).
    """

    def __init__(self, a: Any, b: Any, c: Any = None, *, trans_a: int = 0, trans_b: int = 0,
                 dtype: Any = None, precision: str | None = None,
                 beta: float = 0.0) -> None:  # fmt: skip
        from . import api
        from ._args import normalise
        from .precision import resolve

        problem = normalise(1.0, a, b, 0.0, c, trans_a, trans_b, 1, dtype)
        if c is not None and problem.result is not c:
            raise ValueError("c must be an array the result can be written into (the plan's "
                             "dtype, writeable, no overlapping elements)")  # fmt: skip
        self.dtype = problem.dtype
        self.precision = resolve(precision, self.dtype.name)
        self.trans = (trans_a, trans_b)
        self.into_c = c is not None
        self.shape = problem.shape
        kind = kind_of(a)
        self._kind = kind
        self._signature = _signatures(kind, a, b, c)
        self._call = None
        if kind is not None and problem.on_device:
            self._call = plan_call(problem, self.precision, a, b, c)
        self._routine = api.sgemm if self.dtype == np.float32 else api.dgemm
        self._device_plan: DevicePlan | None = None
        if self._call is not None:
            call = self._call
            pa, pb = kind.ptr(a), kind.ptr(b)  # type: ignore[union-attr]
            pc = kind.ptr(c) if c is not None else 0  # type: ignore[union-attr]
            if call.swap:
                pa, pb = pb, pa
            cuda.context()
            aligned = call.ld_aligned and not (pa | pb | pc) & 15
            reads_c = c is not None and beta != 0
            stream = kind.stream(a)  # type: ignore[union-attr]
            self._device_plan = call._plan(aligned + READS_C * reads_c, pa, pb, pc, stream)

    def run(self, a: Any, b: Any, c: Any = None, *, alpha: float = 1.0, beta: float = 0.0,
            stream: Any = None) -> Any:  # fmt: skip
        """alpha op(a) op(b) + beta c; into c when the plan was made with one."""
        if (c is not None) != self.into_c:
            raise ValueError("this plan writes " + ("into c: pass c" if self.into_c else
                                                    "a new result: pass no c"))  # fmt: skip
        if self._signature != _signatures(self._kind, a, b, c):
            raise ValueError("the operands are not of the plan's kind (library, dtype, "
                             "shape, strides); make a plan for them")  # fmt: skip
        alpha, beta = float(alpha), float(beta)
        plain = 1e-30 < abs(alpha) < 1e30 and (beta == 0 or 1e-30 < abs(beta) < 1e30)
        if self._call is not None and plain:  # (other scalars: BLAS's rules, sgemm's path)
            if c is None and beta != 0:
                raise ValueError("beta must be 0 for a plan that makes a new result")
            return self._call.run(alpha, a, b, c, beta, stream)
        return self._routine(alpha, a, b, beta, c, *self.trans, overwrite_c=1, stream=stream,
                             precision=self.precision)  # fmt: skip

    def explain(self) -> str:
        """What the plan runs and why."""
        m, n, k = self.shape
        head = f"{self.dtype.name} {m}x{n}x{k} precision={self.precision}"
        if self._device_plan is not None:
            plan = self._device_plan
            status = getattr(plan.run, "status", None)  # the Ozaki modes' latest outcome
            tail = f"; {status()}" if status is not None else ""
            return f"{head}: {plan.choice}; {plan.reason}{tail}"
        from .selection import explain

        general = explain(m, n, k, self.dtype.name, *self.trans, precision=self.precision)
        return (f"{head}: not a single launch on the operands' memory (host operands, "
                f"copies or casts); each run takes sgemm's general path. {general}")

    def __repr__(self) -> str:
        return f"<tunedgemm.Gemm {self.explain()}>"


def _signatures(kind: Any, a: Any, b: Any, c: Any) -> Any:
    """The signatures of a plan's operands, or None where they are not all of `kind`."""
    if any(x is not None and kind_of(x) is not kind for x in (a, b, c)):
        return None
    if kind is None:  # host arrays (or device arrays of no planned library): as NumPy's
        return tuple(None if x is None else (type(x), getattr(x, "shape", None),
                     getattr(x, "strides", None), getattr(x, "dtype", None))
                     for x in (a, b, c))  # fmt: skip
    return (kind.signature(a), kind.signature(b), None if c is None else kind.signature(c))


def plan(a: Any, b: Any, c: Any = None, *, trans_a: int = 0, trans_b: int = 0,
         dtype: Any = None, precision: str | None = None, beta: float = 0.0) -> Gemm:  # fmt: skip
    """A Gemm plan for calls like sgemm(alpha, a, b, beta, c, trans_a, trans_b): see Gemm."""
    return Gemm(a, b, c, trans_a=trans_a, trans_b=trans_b, dtype=dtype, precision=precision,
                beta=beta)  # fmt: skip
