"""A wave model: predict a kernel config's time at one shape from its time at a measured one.

A GEMM kernel's time is, to first order, the number of waves of blocks the GPU runs times
the k-steps each block takes, plus a fixed cost per block (prologue, epilogue, and for
split-K each slice's partial tile, written to a workspace and summed by the reduction
kernel); the tuning table holds measured times at grid shapes, and
a call falls between them. Scaling a measured time by the ratio of (waves x k-steps) at the
call's shape to those at the measured shape keeps what the measurement knows (the config's
speed on this GPU) and adds what it cannot know (wave and tile quantization at the call's
shape). Pure arithmetic over the family declarations: no GPU needed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from . import streamk
from .families import FAMILIES, family_of
from .params import ITEMSIZE, SMEM_PER_SM, SMEM_RESERVED_PER_BLOCK, KernelConfig

# Launch overhead plus the shortest kernel on an H100 (about 4 us): no config runs faster,
# and a measured time below it says nothing about how the work scales.
LAUNCH_FLOOR_MS = 0.004
MAX_THREADS_PER_SM = 2048  # sm_90
DEFAULT_NUM_SMS = 132  # H100 SXM, the GPU the shipped table was tuned on
NUM_SMS = DEFAULT_NUM_SMS  # what the tuner assumes where it cannot ask the GPU

MNK = tuple[int, int, int]

# The fixed costs, in k-steps, fitted by replaying the lookup on the H100 tuning runs of
# 2026-11-22 (benchmarks/replay_lookup.py): with them the configs the lookup picks are
# 7% slower than each shape's best, against 11-13% without.
BLOCK_OVERHEAD_STEPS = 6  # prologue and epilogue of one block
# Each split-K slice: its partial tile written to the workspace and read back by the
# reduction. (Fitted when slices added into C with atomics after a scaling pass of C, whose
# traffic was of the same order; not refitted since.)
SPLIT_STEPS = 4


def resident_blocks(config: KernelConfig, dtype: str) -> int:
    """Blocks of this config one SM holds at once.

    MIN_BLOCKS is what __launch_bounds__ guarantees (register use is unknown before ptxas
    runs, so more is not assumed; a family without it counts as 1), capped by shared memory
    and by threads per SM. Never below 1, so a damaged config cannot divide by zero."""
    family = family_of(config)
    params = config.as_dict()
    smem = family.smem_bytes(params, ITEMSIZE[dtype]) + SMEM_RESERVED_PER_BLOCK
    by_smem = SMEM_PER_SM // smem
    by_threads = MAX_THREADS_PER_SM // max(family.threads(params), 1)
    return max(1, min(params.get("MIN_BLOCKS", 1), by_smem, by_threads))


def waves(config: KernelConfig, dtype: str, shape: MNK, num_sms: int = DEFAULT_NUM_SMS) -> int:
    """Rounds of resident blocks needed for every tile (and every split-K slice) of C."""
    family = family_of(config)
    params = config.as_dict()
    tile_m, tile_n = family.block_tile(params)
    m, n, _ = shape
    tiles = -(-m // tile_m) * -(-n // tile_n) * family.split_k(params)
    return -(-tiles // (num_sms * resident_blocks(config, dtype)))


def k_steps(config: KernelConfig, shape: MNK) -> int:
    """k-tiles one block walks: its split-K slice of k in steps of BK (1 if BK is absent)."""
    params = config.as_dict()
    split = family_of(config).split_k(params)
    slice_k = -(-shape[2] // split)
    return max(1, -(-slice_k // params.get("BK", 1)))


def stream_k_units(config: KernelConfig, dtype: str, shape: MNK,
                   num_sms: int = DEFAULT_NUM_SMS) -> int:  # fmt: skip
    """work_units of a STREAM_K config (tunedgemm/streamk.py): rounds of its G persistent
    blocks, each doing its data-parallel tiles whole, then about S / G stream-K iterations
    with two blocks' fixed cost (two partial tiles) and a split-K slice's (the fix-up). Not
    fitted on a GPU; STREAM_K below the resident blocks leaves SMs' block slots empty,
    which the model (resident blocks not slowing each other) counts as whole idle waves."""
    family, params = family_of(config), config.as_dict()
    bm, bn = family.block_tile(params)
    ctas = num_sms * family.stream_k(params)
    s = streamk.schedule(*shape, bm, bn, params.get("BK", 1), ctas)
    rounds = -(-s.ctas // (num_sms * resident_blocks(config, dtype)))
    per_block = s.dp // s.ctas * (s.ipt + BLOCK_OVERHEAD_STEPS)
    if s.sk_iters:
        per_block += -(-s.sk_iters // s.ctas) + 2 * BLOCK_OVERHEAD_STEPS + SPLIT_STEPS
    return rounds * per_block


def work_units(config: KernelConfig, dtype: str, shape: MNK, num_sms: int = DEFAULT_NUM_SMS) -> int:
    """Waves times (k-steps + a block's fixed cost), plus the split-K slices' cost: the quantity
    the model takes a kernel's time to be proportional to (stream_k_units for stream-K)."""
    if family_of(config).stream_k(config.as_dict()):
        return stream_k_units(config, dtype, shape, num_sms)
    split = family_of(config).split_k(config.as_dict())
    per_block = k_steps(config, shape) + BLOCK_OVERHEAD_STEPS
    return waves(config, dtype, shape, num_sms) * per_block + (
        SPLIT_STEPS * split if split > 1 else 0
    )


def predicted_ms(
    config: KernelConfig,
    dtype: str,
    call_shape: MNK,
    measured_shape: MNK,
    measured_ms: float,
    num_sms: int = DEFAULT_NUM_SMS,
) -> float:
    """This config's time at call_shape, from measured_ms at measured_shape.

    Only the part above the launch floor scales with the work; the result never drops
    below the floor."""
    if not math.isfinite(measured_ms):
        return math.inf
    ratio = work_units(config, dtype, call_shape, num_sms) / work_units(
        config, dtype, measured_shape, num_sms
    )
    return max(LAUNCH_FLOOR_MS, LAUNCH_FLOOR_MS + (measured_ms - LAUNCH_FLOOR_MS) * ratio)


@dataclass(frozen=True, order=True)
class Shape:
    m: int
    n: int
    k: int

    def __str__(self) -> str:
        return f"{self.m}x{self.n}x{self.k}"

    @property
    def flops(self) -> float:
        return 2.0 * self.m * self.n * self.k


def prune_reason(config: KernelConfig, shape: Shape, num_sms: int = NUM_SMS) -> str | None:
    """Why a valid config is not worth timing at this shape (None: time it)."""
    family = FAMILIES.get(config.family)
    if family is not None and not family.within_work(shape.m, shape.n, shape.k):
        return f"more work than the {family.name} family is made for"
    p = config.as_dict()
    bm, bn = p.get("BM", 1), p.get("BN", 1)
    tiles = -(-shape.m // bm) * -(-shape.n // bn)
    split = p.get("SPLIT_K", 1)
    if split > 1:
        if tiles >= 2 * num_sms:
            return "split-K with two or more waves of tiles already"
        if shape.k < 4 * split * p.get("BK", 1):
            return "split-K slices shorter than four k-tiles"
    if bm >= 2 * _ceil_pow2(shape.m) and bm > 64:
        return "block tile more than twice the rows of C"
    if bn >= 2 * _ceil_pow2(shape.n) and bn > 64:
        return "block tile more than twice the columns of C"
    return None


def filling_split(config: KernelConfig, shape: Shape, num_sms: int = NUM_SMS,
                  ) -> KernelConfig | None:  # fmt: skip
    """The config with the SPLIT_K that comes nearest to filling the GPU at this shape, where
    its output tiles alone leave SMs idle (None: they do not, or no other split is better).

    The largest declared split whose blocks stay within two waves and that prune_reason
    accepts: slices long enough to pay for their share of the reduction."""
    family = FAMILIES.get(config.family)
    p = config.as_dict()
    if family is None or "SPLIT_K" not in p:
        return None
    tiles = -(-shape.m // p["BM"]) * -(-shape.n // p["BN"])
    if tiles >= num_sms:
        return None
    splits = next(t.values for t in family.tunables if t.name == "SPLIT_K")
    for split in sorted(splits, reverse=True):
        variant = KernelConfig.make(config.family, {**p, "SPLIT_K": split})
        if tiles * split <= 2 * num_sms and prune_reason(variant, shape, num_sms) is None:
            return None if variant == config else variant
    return None


def _ceil_pow2(x: int) -> int:
    return 1 << max(0, (x - 1).bit_length())
