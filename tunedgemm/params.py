"""Types for declaring kernel families: tunables, constraints, derived values, launch geometry."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

Params = Mapping[str, int]

# Limits of the targets we build for (sm_90); the tuner and the run-time check of a
# table entry both prune with them.
MAX_THREADS_PER_BLOCK = 1024
MAX_DYNAMIC_SMEM_BYTES = 227 * 1024
MAX_REGS_PER_THREAD = 255
REGS_PER_SM = 65536
SMEM_PER_SM = 228 * 1024  # of which the runtime reserves 1 KB for each resident block
SMEM_RESERVED_PER_BLOCK = 1024
ITEMSIZE = {"float32": 4, "float64": 8}
IEEE = "ieee"  # the precision mode of a dtype's own arithmetic; every other mode is opt-in


@dataclass(frozen=True)
class Tunable:
    """One compile-time parameter: its define name, the values the tuner may try, its meaning.

    `absent` is the value a recorded config without this parameter stands for (one written
    before the parameter existed, whose kernel that value reproduces); None: configs must
    name it."""

    name: str
    values: tuple[int, ...]
    help: str
    absent: int | None = None


@dataclass(frozen=True)
class Constraint:
    """A rule over a family's parameters; `holds(params, itemsize)` says whether it is met."""

    text: str
    holds: Callable[[Params, int], bool]


@dataclass(frozen=True, order=True)
class KernelConfig:
    """A frozen, hashable, printable choice of every tunable of one family."""

    family: str
    params: tuple[tuple[str, int], ...] = ()

    @classmethod
    def make(cls, family: str, params: Params) -> KernelConfig:
        return cls(family, tuple(sorted((str(k), int(v)) for k, v in params.items())))

    def as_dict(self) -> dict[str, int]:
        return dict(self.params)

    def __getitem__(self, name: str) -> int:
        return self.as_dict()[name]

    def __str__(self) -> str:
        inner = ",".join(f"{k}={v}" for k, v in self.params)
        return f"{self.family}({inner})"


@dataclass(frozen=True)
class LaunchGeometry:
    """What the launcher needs: block and grid sizes and dynamic shared memory."""

    block: tuple[int, int, int]
    grid: tuple[int, int, int]
    smem_bytes: int
    split_k: int


@dataclass(frozen=True)
class KernelFamily:
    """One kernel template in kernels/ and everything the tuner and the launcher know of it.

    Every template gets THREADS (from `threads`) as a define; `derived(params, itemsize)`
    may add more defines computed from the tunables, so that each formula lives here only.
    By default the block tile is BM x BN and split-K is the SPLIT_K tunable (1 if absent).

    `precisions` are the precision modes the family computes in ("ieee": the dtype's own
    arithmetic; "tf32", "3xtf32": tensor-core modes that callers must ask for), and
    `precision_of(params)` the mode of one config. Code that picks families for a call
    filters with `serves(dtype, precision)`, so IEEE calls never meet a TF32 family.
    """

    name: str
    source: str
    dtypes: tuple[str, ...]
    tunables: tuple[Tunable, ...]
    constraints: tuple[Constraint, ...]
    defaults: Mapping[str, Params]
    threads: Callable[[Params], int]
    smem_bytes: Callable[[Params, int], int]
    block_tile: Callable[[Params], tuple[int, int]] = field(default=lambda p: (p["BM"], p["BN"]))
    # k per k-tile (a family whose kernel fixes it declares its own).
    k_tile: Callable[[Params], int] = field(default=lambda p: p.get("BK", 1))
    derived: Callable[[Params, int], Params] = field(default=lambda p, s: {})
    split_k: Callable[[Params], int] = field(default=lambda p: p.get("SPLIT_K", 1))
    # Persistent stream-K blocks per SM (0: the data-parallel grid; tunedgemm/streamk.py).
    stream_k: Callable[[Params], int] = field(default=lambda p: p.get("STREAM_K", 0))
    description: str = ""
    precisions: tuple[str, ...] = (IEEE,)
    precision_of: Callable[[Params], str] = field(default=lambda p: IEEE)
    # A default config per precision mode, for families of opt-in modes (else `defaults`).
    mode_defaults: Mapping[str, Params] = field(default_factory=dict)
    # Appended to the GPU's architecture when compiling ("a": sm_90a, whose wgmma the plain
    # sm_90 target lacks).
    arch_suffix: str = ""
    # Changes that compute the same bits (a kernel the recorded configs predate, or a tiling
    # that keeps every element's sum in the same order): run-time autotuning times each
    # candidate's twin (where the constraints allow it) beside it, so that a measured
    # improvement reaches calls before the table is regenerated with it.
    twins: tuple[Params, ...] = ()
    # Twins timed only for one transpose pair (trans_a, trans_b) with aligned operands: changes
    # whose kernel differs there alone (elsewhere they would be one more compile of the same
    # code), and that may cost registers other layouts' twins need not spend.
    layout_twins: Mapping[tuple[bool, bool], tuple[Params, ...]] = field(default_factory=dict)
    # Twins of the first candidate's data-parallel grid (stream_k(params) == 0; plans.py,
    # with_raster_twins): its main-loop twin with the blocks taking C's tiles in another
    # order (GROUP_M), which leaves every tile's sums as they were; a stream-K schedule splits
    # tiles at points that follow that order, so there it would change the bits.
    raster_twins: tuple[Params, ...] = ()
    # Narrow tiles (changes to a candidate's tiling) that autotuning times at skinny shapes
    # with long k, each with the least power-of-two k-split that gives every SM
    # `narrow_blocks_per_sm` blocks (tunedgemm/plans.py, with_narrow_tiles).
    narrow_tiles: tuple[Params, ...] = ()
    narrow_blocks_per_sm: float = 1.0
    # Tilings that autotuning times, unsplit and at their whole-round k-splits, beside the first
    # candidate at shapes where its tiles are fewer than its block slots, and at their
    # whole-round splits where it splits long k (tunedgemm/plans.py, with_round_tiles): larger
    # tiles that few-tile shapes need split to fill the SMs.
    round_tiles: tuple[Params, ...] = ()
    # The rounds of blocks over the SMs whose k-splits of each round tile autotuning times.
    round_tile_rounds: tuple[int, ...] = (1, 2)
    # Of a round tile and its mirror (the block's sides swapped) where both fit in C, the one
    # autotuning times at a transpose pair: "n" keeps the block of fewer columns, "m" the one
    # of fewer rows (the short side along the operand the kernel stages through registers);
    # at pairs not named it times both.
    round_tile_short_side: Mapping[tuple[bool, bool], str] = field(default_factory=dict)
    # Tilings that autotuning times, unsplit, beside the first candidate at shapes with short k
    # whose tiles fill at least a round of its block slots (tunedgemm/plans.py,
    # with_small_k_tiles): where a block's work is mostly its tile's set-up and C's stores.
    small_k_tiles: tuple[Params, ...] = ()
    # Tilings that autotuning times beside the first candidate at skinny and medium shapes
    # (one of m and n short, the product not launch-bound): unsplit where their tiles fill
    # half a round of their block slots, and at the k-splits that fill the rest
    # (tunedgemm/plans.py, with_medium_tiles): small blocks that more of fit on an SM.
    medium_tiles: tuple[Params, ...] = ()
    # Tilings that autotuning times, unsplit, beside the first candidate at large products
    # of many tiles (tunedgemm/plans.py, with_large_tiles): main loops that spend less energy
    # a flop, where the power cap sets the clock.
    large_tiles: tuple[Params, ...] = ()
    # The changes that make a candidate's stream-K variant (STREAM_K itself is set to the
    # blocks an SM holds), which autotuning times where the candidate's data-parallel grid
    # leaves its last wave's SMs idle (tunedgemm/plans.py, with_stream_k); None: the family
    # has no stream-K schedule.
    stream_k_changes: Params | None = None
    # Tilings (with their STREAM_K) whose stream-K variants autotuning also times at shapes
    # with long k where they fill the SMs badly: the large tiles whose main loops run fastest,
    # which the table's candidates at mid-sized m x n do not hold (with_stream_k).
    stream_k_tiles: tuple[Params, ...] = ()
    # The most work (m * n * k) of a shape at which the tuner times the family (None: any).
    max_work: int | None = None
    # Settings that a config's other parameters make inert, at the values that name the same
    # kernel (simt's LANE_PAIRS outside 8 x 4 thread tiles): see `canonical`.
    inert: Callable[[Params], Params] = field(default=lambda p: {})

    def within_work(self, m: int, n: int, k: int) -> bool:
        """Whether the tuner times the family at a shape of this size (its `max_work`)."""
        return self.max_work is None or m * n * k <= self.max_work

    def serves(self, dtype: str, precision: str = IEEE) -> bool:
        """Whether the family has configs for dtype in this precision mode."""
        return dtype in self.dtypes and precision in self.precisions

    def default_config(self, dtype: str, precision: str = IEEE) -> KernelConfig:
        if precision in self.mode_defaults:
            return KernelConfig.make(self.name, self.mode_defaults[precision])
        return KernelConfig.make(self.name, self.defaults[dtype])

    def canonical(self, config: KernelConfig) -> KernelConfig:
        """The config with its inert settings at the values that name the same kernel, so that
        one kernel has one compile key and autotuning does not time it twice."""
        reset = self.inert(config.as_dict())
        return KernelConfig.make(self.name, {**config.as_dict(), **reset}) if reset else config

    def recorded(self, params: Params) -> KernelConfig:
        """A config as a table or checkpoint records it, with each tunable it lacks that has
        an `absent` value set to that value (the kernel it was timed as)."""
        missing = {t.name: t.absent for t in self.tunables
                   if t.absent is not None and t.name not in params}  # fmt: skip
        return KernelConfig.make(self.name, {**params, **missing})

    def twins_for(self, trans_a: bool, trans_b: bool, aligned: bool) -> tuple[Params, ...]:
        """The twins autotuning times in this layout: `twins`, then this transpose pair's
        `layout_twins` where the operands are aligned."""
        return self.twins + self.layout_twins_for(trans_a, trans_b, aligned)

    def layout_twins_for(self, trans_a: bool, trans_b: bool,
                         aligned: bool) -> tuple[Params, ...]:  # fmt: skip
        """This transpose pair's `layout_twins` where the operands are aligned (else none)."""
        return tuple(self.layout_twins.get((trans_a, trans_b), ())) if aligned else ()

    def for_layout(self, config: KernelConfig, trans_a: bool, trans_b: bool,
                   aligned: bool) -> KernelConfig:  # fmt: skip
        """The config as it compiles for this layout: tunables that only `layout_twins` set,
        and that this layout's twins do not, back at their recorded (`absent`) value, where
        they compile to the same kernel (simt's REG_TRANSPOSE and ASYNC_CURSOR outside TN)."""
        layout_only = {name for twins in self.layout_twins.values() for changes in twins
                       for name in changes}  # fmt: skip
        here = self.twins_for(trans_a, trans_b, aligned)
        inert = layout_only - {name for changes in here for name in changes}
        absent = {t.name: t.absent for t in self.tunables if t.name in inert}
        params = config.as_dict()
        reset = {n: v for n, v in absent.items() if v is not None and n in params}
        return KernelConfig.make(self.name, {**params, **reset}) if reset else config

    def violations(self, config: KernelConfig, dtype: str) -> list[str]:
        """Every rule the config breaks (empty when it may be compiled and launched)."""
        if config.family != self.name:
            return [f"config is for family {config.family!r}, not {self.name!r}"]
        if dtype not in self.dtypes:
            return [f"family {self.name} does not support {dtype}"]
        params = config.as_dict()
        names = {t.name for t in self.tunables}
        problems = [f"unknown parameter {k}" for k in params if k not in names]
        problems += [f"missing parameter {k}" for k in names if k not in params]
        if problems:
            return problems
        itemsize = ITEMSIZE[dtype]
        problems = [c.text for c in self.constraints if not _holds(c, params, itemsize)]
        if problems:
            return problems  # derived values may be meaningless (or divide by zero)
        if self.threads(params) > MAX_THREADS_PER_BLOCK:
            problems.append(f"more than {MAX_THREADS_PER_BLOCK} threads per block")
        if self.smem_bytes(params, itemsize) > MAX_DYNAMIC_SMEM_BYTES:
            problems.append(f"more than {MAX_DYNAMIC_SMEM_BYTES} bytes of shared memory")
        return problems

    def space(self, dtype: str, precision: str | None = None) -> Iterator[KernelConfig]:
        """Every config of the declared values that meets all constraints (in one precision
        mode if given; all of the family's modes if None)."""
        names = [t.name for t in self.tunables]
        for values in itertools.product(*(t.values for t in self.tunables)):
            params = dict(zip(names, values, strict=True))
            if precision is not None and self.precision_of(params) != precision:
                continue
            config = KernelConfig.make(self.name, params)
            if not self.violations(config, dtype):
                yield config

    def space_size(self) -> int:
        return math.prod(len(t.values) for t in self.tunables)

    def defines(self, config: KernelConfig, dtype: str) -> dict[str, int]:
        params = config.as_dict()
        return {**params, "THREADS": self.threads(params), **self.derived(params, ITEMSIZE[dtype])}

    def geometry(self, config: KernelConfig, dtype: str, m: int, n: int) -> LaunchGeometry:
        params = config.as_dict()
        tile_m, tile_n = self.block_tile(params)
        split = self.split_k(params)
        return LaunchGeometry(
            block=(self.threads(params), 1, 1),
            grid=(-(-m // tile_m), -(-n // tile_n), split),
            smem_bytes=self.smem_bytes(params, ITEMSIZE[dtype]),
            split_k=split,
        )


def _holds(constraint: Constraint, params: Params, itemsize: int) -> bool:
    """A constraint that cannot even be evaluated (say, a zero tile from a damaged table
    entry) counts as broken rather than raising."""
    try:
        return bool(constraint.holds(params, itemsize))
    except (ArithmeticError, KeyError, TypeError, ValueError):
        return False


def register_cap(threads: int, min_blocks: int) -> int:
    """Registers per thread ptxas may use under __launch_bounds__(threads, min_blocks)."""
    return min(MAX_REGS_PER_THREAD, REGS_PER_SM // (threads * min_blocks) // 8 * 8)


def blocks_fit_in_smem(smem_bytes: Callable[[Params, int], int]) -> Constraint:
    """Constraint: MIN_BLOCKS blocks of this shared-memory use fit in one SM."""
    return Constraint(
        "MIN_BLOCKS blocks fit in one SM's shared memory",
        lambda p, s: p["MIN_BLOCKS"] * (smem_bytes(p, s) + SMEM_RESERVED_PER_BLOCK) <= SMEM_PER_SM,
    )


def divides(a: str, b: str) -> Constraint:
    """Constraint: parameter `a` divides parameter `b`."""
    return Constraint(f"{a} divides {b}", lambda p, s: p[b] % p[a] == 0)
