"""Declaration of the dmma family: DGEMM on sm_90 FP64 tensor cores (mma.sync m16n8k{4,8,16})."""

from __future__ import annotations

from ..params import (
    Constraint,
    KernelFamily,
    Params,
    Tunable,
    blocks_fit_in_smem,
    divides,
    register_cap,
)


def _threads(p: Params) -> int:
    return (p["BM"] // p["WM"]) * (p["BN"] // p["WN"]) * 32


def _operand_stage(rows: int, bk: int, padded: bool) -> int:
    # Larger of the two layouts the kernel picks by transpose: [rows][BK+4] (k-contiguous)
    # or [BK][rows+16] (mn-contiguous); RING_PAD=0, either one unpadded.
    return max(rows * (bk + 4), bk * (rows + 16)) if padded else rows * bk


def _staging(p: Params) -> int:
    # Doubles of the staged epilogue (EPILOGUE=1): per warp, 8 columns of WM rows with column
    # stride WM + 2 (LDE in the kernel), in the operand ring once the main loop is done. Over
    # the declared values it needs at most 34 KiB and the smallest ring holds 40 KiB, so the
    # max below never grows a config's shared memory; it keeps an odd config launchable.
    return (p["BM"] // p["WM"]) * (p["BN"] // p["WN"]) * 8 * (p["WM"] + 2)


def _smem_bytes(p: Params, itemsize: int) -> int:
    padded = bool(p.get("RING_PAD", 1))
    ring = p["STAGES"] * (
        _operand_stage(p["BM"], p["BK"], padded) + _operand_stage(p["BN"], p["BK"], padded)
    )
    return itemsize * (max(ring, _staging(p)) if p.get("EPILOGUE", 0) else ring)


def _copies_per_thread(p: Params) -> int:
    # cp.async issued by one thread per k-tile in the worst (unaligned, 8-byte) case.
    return -(-(p["BM"] + p["BN"]) * p["BK"] // _threads(p))


def _regs_estimate(p: Params) -> int:
    # Accumulators plus two k-steps of A and B fragments (2 registers per double), the
    # per-thread copies of a k-tile (ADVANCE=1: a cursor per operand, whatever their number),
    # and addressing and loop state.
    acc = p["WM"] * p["WN"] // 16
    frags = 2 * 2 * ((p["WM"] // 16) * p["MMA_K"] // 2 + (p["WN"] // 8) * p["MMA_K"] // 4)
    copies = CURSOR_REGISTERS if p.get("ADVANCE", 0) else _copies_per_thread(p)
    return acc + frags + copies + 24


# Registers of ADVANCE=1's two cursors (a source pointer, its steps, up to 4 shared addresses
# and an edge mask each): ptxas (nvcc 13.0, sm_90a) put cuBLAS's tile (128 x 64, MMA_K = 4,
# two blocks per SM: 24 copies a thread per k-tile) in 200-204 registers with ADVANCE=1 in
# every aligned transpose pair and 230 unaligned, against 244-250 with load_tile; no spills.
CURSOR_REGISTERS = 8


# SPLITK_FUSED=1 (kernels/dgemm_mma.cu): split-K's slices summed by the tile's last block in
# the same launch instead of a splitk_reduce launch; the same bits. At 256^3 and 512^3 a
# dgemm call is bound by its host's launches (benchmarks/probe_call_cost.py, 2026-11-26: an
# own launch about 7 us, a split-K config's two about 13-14 us). Out of the search space
# until measured.
SPLITK_FUSED_ON = (1,)

# ADVANCE=1 (kernels/dgemm_mma.cu): the k-tile copies walk per-operand cursors set up once per
# block instead of load_tile recomputing every copy's address, byte count and edge tests per
# k-tile. Nsight Compute on the 4096^3 NN config (H100) counted 5.07 instructions issued per
# m16n8k4 DMMA against cuBLAS's 3.2, mostly that arithmetic; statically (nvcc 13.0, sm_90a) a
# k-tile of that config's main loop issues 238 instructions for its 64 DMMA instead of 318
# (181 instead of 282 without the never-executed fillers ptxas places, @!UPT UIADD3 and @!PT
# LDS), in 200 registers instead of 236. The same copies, so the same bits. Compiled and
# launchable when a config names it; out of the search space until the H100 measures it (then
# its value joins the tunable, and the table is regenerated).
ADVANCE_ON = (1,)

# The H100 (bench_kernels --dmma-advance, 2026-11-26 14:00 UTC; cuBLAS ms / ours): ADVANCE=1
# took the table's 4096^3 config from 0.91 to 0.96 (8192^3 0.86 to 0.91, 2048^3 0.90 to 0.99)
# and cuBLAS's tile (128 x 64, two blocks per SM) to 0.98 at 8192^3, with the same bits
# (tests/gpu/test_dmma_advance_gpu.py). A block's tile, and the blocks an SM holds, leave
# every element's sum in the same order (the same k-steps of the same mma shape), so each is
# a twin too: half the columns at twice the blocks per SM, cuBLAS's arrangement (Nsight
# Compute: its two independent blocks keep the DMMA pipe fuller than our one).
TWO_BLOCKS = {"BN": 64, "MIN_BLOCKS": 2}
# Since 2026-11-28 ADVANCE=1's aligned kernels run their whole k-tiles in a branch-free loop
# of their own (STEADY_LOOP in kernels/dgemm_mma.cu; the same bits, so the table's hash was
# re-stamped). bench_kernels --dmma-steady (H200, two runs) timed m16n8k8 tiles with it 2-6%
# faster (geometric means), the 128 x 128 m16n8k4 default within 1-3% either way by shape.
# Narrow tiles: 64 x 32 and 32 x 64 blocks of four 32 x 16 warp tiles, MMA_K 8, two blocks per
# SM, 8-byte copies. Over the float64 random shapes of bench_tuning (seed 1795689347) that
# lost most (0.77x cuBLAS at 1473x140x7081 and 65x1292x1285 on 2026-11-26 14:22 UTC),
# `benchmarks/probe_skinny.py --dtype float64 --narrow` (H100, 17:09 UTC) timed them at 1.14
# (64 x 32, 2 k-slices) and 1.00 (32 x 64, 4 slices), and 1.01 at 125x665x7720; best where
# the k-split gives one and a half to two blocks per SM. Those operands were unpadded (the
# unaligned kernel: 8-byte copies); on padded ones the 16-byte copies, which bypass L1, ran
# them at 0.82 and 0.82, and SMALL_COPIES=1 at 1.12, 0.98 and 0.99 (`--padded`, 17:17 UTC).
NARROW_TILES = tuple(
    {"BM": bm, "BN": bn, "WM": 32, "WN": 16, "MMA_K": 8, "BK": 16, "STAGES": 4,
     "MIN_BLOCKS": 2, "ADVANCE": 0, "SPLITK_FUSED": 0, "SMALL_COPIES": 1}
    for bm, bn in ((64, 32), (32, 64))
)  # fmt: skip
NARROW_BLOCKS_PER_SM = 1.5

# Stream-K (kernels/streamk.cuh, as simt's): compiled and launchable when a config names it
# (one k-slice; tests/gpu/test_dmma_stream_k_gpu.py passed on the H100, 2026-11-27 17:50 UTC),
# but neither in the search space nor among autotuning's variants (stream_k_changes stays
# None). probe_skinny.py --stream-k (H100, 2026-11-27 17:52 UTC) timed the table's first own
# candidate at 1-4 blocks an SM at 10 float64 shapes with few tiles: the best of them came
# within 5% of the same config's best k-split at one (256x256x256: 1.02x cuBLAS against 1.05)
# and ran 6-34% behind it at the other nine (600x508x2782: 0.65 against 0.83). --tiles (18:00)
# timed it on five other tilings at 12 shapes: within 5% of the tiling's best split in 4 of 60
# cases (ahead in one, 384x3072x1024 on 64 x 128: 0.72 against 0.70), and at every shape 8-43%
# behind the best config timed there. Nsight Compute at 600x508x2782 (64 x 32
# tiles): streamk_gemm's 264 blocks took 74 us at 11% achieved occupancy and the fixup 7 us,
# where the table's 64 x 64 candidate split 6 ways took 60 us a call. At the large squares,
# whose last wave of tiles is nearly empty (8192^3: 31 waves of 132 and 4 blocks), it lost
# too (bench_kernels.py --dmma-tail, 2026-11-28 05:24 UTC): the 128 x 128 tile 0.89x cuBLAS
# against 0.98x unsplit at 8192^3, 0.94x against 1.10x at 4096^3; Nsight Compute (05:31) found
# the persistent blocks' data-parallel tiles stalled on the memory-instruction queue.
STREAM_K_ON = (1, 2)
STREAM_K_CHANGES = {"SPLIT_K": 1, "SPLITK_FUSED": 0, "ADVANCE": 1}

# Tilings that autotuning times at their whole-round k-splits where the first candidate's
# tiles are fewer than its block slots (tunedgemm/plans.py, with_round_tiles). Both need the
# cursors (ADVANCE=1), and the first (BK 32, 24 copies a thread per k-tile) is outside the
# space for the copy limit. `probe_skinny.py --tiles` (H100, 2026-11-27 18:00 UTC, padded;
# cuBLAS ms / ours, beside the table's first own candidate at its best split):
# cuBLAS's own tile at float64's small grids (128 x 64, eight 32 x 32 warp tiles, BK 32; it
# runs m16n8k16, here MMA_K 8 was ahead of 16 at all 12 shapes) 0.93 at 962x302x1607 split 3
# ways (0.81), 0.94 at 1024x1024x384 unsplit (0.84); the 128 x 64 half of the 128 x 128 default
# at two blocks an SM (cuBLAS's tile at the squares: dmma.TWO_BLOCKS) 1.00 at 1387x230x8557
# split 6 ways (0.79), 0.92 at 600x508x2782 split 6 ways (0.83), 0.97 at 512x4096x512 (0.81).
# Their best splits were the whole-round ones (6 x 44 tiles = 264 blocks at 1387x230); a power
# of two either side ran 10-30% slower.
ROUND_TILES = (
    {"BM": 128, "BN": 64, "WM": 32, "WN": 32, "MMA_K": 8, "BK": 32, "STAGES": 3,
     "MIN_BLOCKS": 1, "GROUP_M": 8, "ADVANCE": 1, "SMALL_COPIES": 0, "SPLITK_FUSED": 0,
     "EPILOGUE": 0},
    {"BM": 128, "BN": 64, "WM": 64, "WN": 32, "MMA_K": 4, "BK": 16, "STAGES": 3,
     "MIN_BLOCKS": 2, "GROUP_M": 8, "ADVANCE": 1, "SMALL_COPIES": 0, "SPLITK_FUSED": 0,
     "EPILOGUE": 0, "SWAP_AB": 0},   # (m16n8k4 may not swap: a swapped candidate's would not)
)  # fmt: skip

# Timed unsplit at short k over many tiles (tunedgemm/plans.py, with_small_k_tiles): the 128 x
# 64 half of the default at two blocks an SM, in plain grid order. With the epilogue's interior
# path (kernels/dgemm_mma.cu), `probe_skinny.py --tiles` (step tiles-smallk, H100, 2026-11-28
# 00:16 UTC, padded NN) timed it the best of 11 tilings at 6 of 10 such shapes (0.97x cuBLAS
# at 8192x8192x128, where the table's 64 x 64 candidate ran 0.91) and within 3% of the best
# at two more; it lost where n holds few of its columns (16384x512x512: 0.84 against 0.91).
# With SWAP_AB, cuBLAS's own small-k arrangement (64 x 128, four 32 x 64 warp tiles, m16n8k8,
# two blocks an SM; Nsight Compute at 8192x8192x128) was the best tiling at all five k = 64
# shapes of the 02:37 UTC probe (1.02-1.13x cuBLAS, where the other tile ran 0.92-1.05 and the
# table's 64 x 64 0.97-1.05) and within 3% of the best at most of the rest.
SMALL_K_TILES = (
    {**ROUND_TILES[1], "GROUP_M": 1},
    {"BM": 64, "BN": 128, "WM": 32, "WN": 64, "MMA_K": 8, "BK": 16, "STAGES": 3,
     "MIN_BLOCKS": 2, "GROUP_M": 1, "ADVANCE": 1, "SMALL_COPIES": 0, "SPLITK_FUSED": 0,
     "EPILOGUE": 0, "SWAP_AB": 1},
)  # fmt: skip

# cuBLAS's DGEMM tilings at skinny and medium grids: blocks of four warps, three of them an SM.
# Nsight Compute (gpu_session.sh ncu-census, H200, 2026-11-29 20:17 UTC) found cuBLAS running
# 64 x 64 blocks of four 32 x 32 warp tiles at m16n8k8 (164 registers, 3 blocks an SM) at
# 6904x698x3920 and 1952x307x6314, and 64 x 32 ones at m16n8k16 at 8016x268x3704 and
# 3556x131x436, where our calls ran one or two blocks an SM of 128 x 64 or 64 x 64 tiles at
# 0.82-0.90x it. Ours at three blocks an SM (MIN_BLOCKS=3: 168 registers, no spills, nvcc 13.0
# sm_90a, every aligned transpose pair and unaligned NN; MIN_BLOCKS is 1 or 2 in the space)
# against cuBLAS on the same operands (probe_skinny.py --tiles, padded NN, 20:20 UTC; these
# two tiles, at the best of splits 1-6): 6904x698x3920 1.02 (the call's best own candidate
# 0.86-0.92 before), 8016x268x3704 0.94 (0.85), 3556x131x436 1.16 (64 x 32; 0.87-0.89),
# 962x302x1607 0.99 split 3 ways, 600x508x2782 0.97, 5742x893x364 0.94 (0.87 at two blocks an
# SM); no gain at 1952x307x6314, 1626x342x9572 and 700x2460x2744, and 0.91 against the table's
# first candidate's 0.95 at 3178x4043x2654. The 64 x 64 tile without the swap ran 1-2% ahead
# of it at four of the 11 shapes and 1-3% behind at five: one compile, not two.
# Both run the unpadded ring (RING_PAD=0, the same bits): probe_ring_pad.py (H200, 2026-12-01
# 23:17 UTC, padded NN, each at its best split) timed the 64 x 64 tile 1-7% faster than padded
# at all 7 skinny and medium shapes (1952x307x6314 0.88 -> 0.92x cuBLAS, 3178x4043x2654 0.95
# -> 1.02) and the 64 x 32 one 1-4% faster at all 7; a fourth (fifth) stage, which the
# unpadded ring fits at three blocks an SM, gained at 2 shapes and lost up to 5% at 2.
MEDIUM_TILES = (
    {"BM": 64, "BN": 64, "WM": 32, "WN": 32, "MMA_K": 8, "BK": 16, "STAGES": 3,
     "MIN_BLOCKS": 3, "GROUP_M": 8, "ADVANCE": 1, "SMALL_COPIES": 0, "SPLITK_FUSED": 0,
     "EPILOGUE": 0, "SWAP_AB": 1, "STREAM_K": 0, "RING_PAD": 0},
    {"BM": 64, "BN": 32, "WM": 32, "WN": 16, "MMA_K": 8, "BK": 16, "STAGES": 4,
     "MIN_BLOCKS": 3, "GROUP_M": 8, "ADVANCE": 1, "SMALL_COPIES": 0, "SPLITK_FUSED": 0,
     "EPILOGUE": 0, "SWAP_AB": 0, "STREAM_K": 0, "RING_PAD": 0},
)  # fmt: skip

# Tilings whose registers ptxas (nvcc 13.0, sm_90a) allotted without spills within the cap in
# all eight transpose and alignment variants, with SWAP_AB 0 and 1 (246-254 of 255), where
# _regs_estimate's 256 rules them out: the register constraint admits them unsplit
# (tests/unit/test_dmma_swap.py compiles them again).
PTXAS_CHECKED = (
    {"BM": 64, "BN": 128, "WM": 32, "WN": 64, "MMA_K": 8, "BK": 16, "STAGES": 3,
     "MIN_BLOCKS": 2, "GROUP_M": 1, "ADVANCE": 1, "SMALL_COPIES": 0, "SPLITK_FUSED": 0,
     "EPILOGUE": 0, "SPLIT_K": 1, "STREAM_K": 0},
)  # fmt: skip


# Timed beside the first candidate at large products (tunedgemm/plans.py, with_large_tiles):
# the default's 128 x 128 tile at m16n8k8 with the cursors. Under the H100's 700 W cap a
# product's speed there is its energy per flop, and DMMA.16x8x8 reads and writes the
# accumulators once for the flops two DMMA.16x8x4 do (cuBLAS's DGEMM runs it). Against the
# m16n8k4 config the call ran, in bench_device's interleaved loops and in sustained runs
# (probe_dgemm_layout.py, two runs, 2026-12-07 09:14 and 09:18 UTC): 8192^3 19.68 / 19.42 ms
# against 19.93 / 19.72 at TT and 19.59 / 19.47 against 20.03 / 19.80 at NN (cuBLAS 18.9-19.2);
# 4096^3 TT 2.40 / 2.36 against 2.40 / 2.42. ptxas (nvcc 13.0, sm_90a) gives it 246-255 of 255
# registers in every transpose, alignment, SWAP_AB and RING_PAD variant, spill-free but for
# 4-12 bytes in aligned variants (TT aligned 12 with SWAP_AB=0, the one timed above at TT), so
# the register estimate (256) would rule it out: it is admitted as ptxas-checked with those
# spills (LARGE_TILE_SPILL_BYTES; tests/unit/test_large_tiles.py compiles it again).
LARGE_TILES = (
    {"BM": 128, "BN": 128, "WM": 64, "WN": 32, "MMA_K": 8, "BK": 16, "STAGES": 3,
     "MIN_BLOCKS": 1, "GROUP_M": 8, "ADVANCE": 1, "SMALL_COPIES": 0, "SPLITK_FUSED": 0,
     "EPILOGUE": 0, "SWAP_AB": 0, "STREAM_K": 0, "RING_PAD": 0},
)  # fmt: skip
LARGE_TILE_SPILL_BYTES = 12
_REGISTERS_CHECKED = PTXAS_CHECKED + LARGE_TILES  # what the register rule admits as checked


def _fits_registers(p: Params) -> bool:
    cap = register_cap(_threads(p), p["MIN_BLOCKS"])
    checked = any(all(p.get(name) == value for name, value in tile.items())
                  for tile in _REGISTERS_CHECKED)  # fmt: skip
    return _regs_estimate(p) <= cap or checked


# SWAP_AB=1 (kernels/dgemm_mma.cu): the mma computes C's transpose, B's tile in its A role, so
# that each lane's accumulator pairs run down C's columns: the epilogue stores 16 bytes a lane
# (ALIGNED), as cuBLAS's DGEMM does, with half the stores and addresses. The same products
# summed in the same k order: the same bits (tests/gpu/test_dmma_swap_gpu.py, 63 passed on the
# H100, 2026-11-28 02:33 UTC). SWAP_AB=0 compiles to the PTX it did before the tunable (nvcc
# 13.0, 44 of the table's configs and variants). `gpu_session.sh swap` (probe_skinny.py
# --tiles, padded NN, unsplit; 02:33 and 02:37 UTC) timed five tilings with and without it at
# 10 and 16 float64 shapes with k 64-1024: with MMA_K 8 it gained 0-4% (64 x 128) and 1-3%
# (64 x 64) at nearly every shape, never losing more than 1%; with MMA_K 4 it lost up to 14%
# (64 x 64: 0.98 -> 0.90 at 4096x4096x64) or moved either way (128 x 64), so only m16n8k8
# configs swap. Out of the search space (a space change re-tunes the table); autotuning times
# it as a twin, and the small-k tiles use it.
SWAP_AB_ON = (1,)
SWAP_TWIN = {"ADVANCE": 1, "SWAP_AB": 1}

# The cursors' main loop with the blocks taking C's tiles in plain grid order (GROUP_M=1: down
# C's columns, so that the blocks in flight store one run of memory) and in groups of 8 block
# rows (L2 reuse of the operands): where C's stores weigh, the order matters. At 8192x8192x128
# the table's 64 x 64 tile ran 0.89x cuBLAS in grid order and 0.73x with GROUP_M=8
# (probe_skinny.py --tiles, H100, 2026-11-27 20:36 UTC), and of the 134 float64 entries that
# cuBLAS held within 10%, 128 kept no runner-up (of the four a table entry keeps) that was
# their own config at the other order.
RASTER_TWINS = tuple({"ADVANCE": a, "GROUP_M": g} for a in ADVANCE_ON for g in (1, 8))

# RING_PAD=0 (kernels/dgemm_mma.cu): shared-memory rows unpadded, the k-contiguous ones
# swizzled; the same values into the same fragments, so the same bits
# (tests/gpu/test_dmma_ring_pad_gpu.py, 70 passed on the H200, 2026-12-01 23:16 UTC), in 20%
# less shared memory and with fewer shared-memory wavefronts for the cp.async copies (Nsight
# Compute: 23% fewer at 6904x698x3920; bank conflicts were negligible both ways). With the
# cursors, the family's default tile (128 x 128) ran 0.95 -> 1.06x cuBLAS at 3178x4043x2654,
# 0.65 -> 0.69 at 1952x307x6314 and 0.88 -> 0.92 at 1626x342x9572, within 1% at the other
# five shapes (probe_ring_pad.py, H200, 23:17 UTC). Out of the space (a space change re-tunes
# the table); autotuning times it as a twin.
RING_TWIN = {"ADVANCE": 1, "RING_PAD": 0}

_TWINS = (
    *({"SPLITK_FUSED": v} for v in SPLITK_FUSED_ON),
    *({"ADVANCE": a} for a in ADVANCE_ON),
    *({"ADVANCE": a, "SPLITK_FUSED": v} for a in ADVANCE_ON for v in SPLITK_FUSED_ON),
    *({"ADVANCE": a, **TWO_BLOCKS} for a in ADVANCE_ON),
    SWAP_TWIN,
    RING_TWIN,
)


FAMILY = KernelFamily(
    name="dmma",
    source="dgemm_mma.cu",
    dtypes=("float64",),
    description=(
        "FP64 tensor-core mma.sync (m16n8k4/8/16), multi-stage cp.async pipeline, "
        "group-M raster, split-K"
    ),
    tunables=(
        Tunable("BM", (64, 128), "rows of C per block"),
        Tunable("BN", (64, 128), "columns of C per block"),
        Tunable("WM", (32, 64), "rows of C per warp"),
        Tunable("WN", (16, 32, 64), "columns of C per warp"),
        Tunable("BK", (16, 32), "depth of one k-tile staged in shared memory"),
        Tunable("MMA_K", (4, 8, 16), "k of the mma shape m16n8k{4,8,16}"),
        Tunable("STAGES", (2, 3, 4), "depth of the cp.async shared-memory pipeline"),
        Tunable("GROUP_M", (1, 8), "block-rows rasterised together for L2 reuse"),
        Tunable("SPLIT_K", (1, 2, 4), "k slices (partial sums reduced in a fixed order)"),
        Tunable("MIN_BLOCKS", (1, 2), "minimum resident blocks per SM (launch bounds)"),
        # Configs recorded before EPILOGUE existed (the shipped table's) ran the direct one.
        # 1 (staged) is built and compiles, but on the H100 (2026-11-25 16:48 UTC) it was not
        # bit-equal to 0 on 16-byte-aligned shapes (tests/gpu/test_dmma_epilogue_gpu.py): out
        # of the space, so neither the tuner nor a table can choose it, until that passes.
        Tunable("EPILOGUE", (0,), "C stores: 0 from the fragments, 1 staged along m", 0),
        # Recorded split-K configs ran splitk_reduce as a second launch: SPLITK_FUSED=0.
        Tunable("SPLITK_FUSED", (0,), "split-K sums by the last slice (0: splitk_reduce)", 0),
        # Recorded configs ran load_tile's per-k-tile addressing, which ADVANCE=0 compiles to
        # unchanged.
        Tunable("ADVANCE", (0,), "k-tile copies walk cursors set up once (0: recomputed)", 0),
        # Recorded configs copied 16 bytes at a time where aligned: SMALL_COPIES=0, unchanged.
        Tunable("SMALL_COPIES", (0,), "8-byte copies through L1 where aligned (0: 16-byte)", 0),
        # Recorded configs ran the data-parallel grid, which STREAM_K=0 compiles to unchanged.
        Tunable("STREAM_K", (0,), "persistent stream-K blocks per SM (0: data-parallel)", 0),
        # Recorded configs ran the mma on A's tile in its A role, which SWAP_AB=0 compiles to.
        Tunable("SWAP_AB", (0,), "the mma computes C's transpose: 16-byte C stores", 0),
        # Recorded configs padded their shared-memory rows, which RING_PAD=1 compiles to.
        Tunable("RING_PAD", (1,), "smem rows padded (0: unpadded, k-contiguous swizzled)", 1),
    ),
    constraints=(
        divides("WM", "BM"),
        divides("WN", "BN"),
        divides("MMA_K", "BK"),
        Constraint("WM is a multiple of 16", lambda p, s: p["WM"] % 16 == 0),
        Constraint("WN is a multiple of 16", lambda p, s: p["WN"] % 16 == 0),
        Constraint("BK is a multiple of 8", lambda p, s: p["BK"] % 8 == 0),
        Constraint(
            "BM and BN are multiples of 32 (conflict-free swizzle)",
            lambda p, s: p["BM"] % 32 == 0 and p["BN"] % 32 == 0,
        ),
        Constraint("MMA_K is 4, 8 or 16", lambda p, s: p["MMA_K"] in (4, 8, 16)),
        Constraint("STAGES >= 2", lambda p, s: p["STAGES"] >= 2),
        Constraint("SPLIT_K >= 1", lambda p, s: p["SPLIT_K"] >= 1),
        Constraint("GROUP_M >= 1", lambda p, s: p["GROUP_M"] >= 1),
        Constraint("MIN_BLOCKS >= 1", lambda p, s: p["MIN_BLOCKS"] >= 1),
        Constraint("EPILOGUE is 0 or 1", lambda p, s: p["EPILOGUE"] in (0, 1)),
        Constraint(
            "SPLITK_FUSED=1 needs SPLIT_K > 1 and EPILOGUE 0",
            lambda p, s: p["SPLITK_FUSED"] == 0 or (p["SPLIT_K"] > 1 and p["EPILOGUE"] == 0),
        ),
        # splitk_finish holds 4 x SPLIT_K partial sums a thread in registers: ptxas (nvcc
        # 13.0, sm_90a, the default config with ADVANCE=1) spilled 288 bytes at 32 slices and
        # 2340 at 64, none at 16.
        Constraint(
            "SPLITK_FUSED=1 needs SPLIT_K <= 16 (its sums are held in registers)",
            lambda p, s: p["SPLITK_FUSED"] == 0 or p["SPLIT_K"] <= 16,
        ),
        Constraint("ADVANCE is 0 or 1", lambda p, s: p["ADVANCE"] in (0, 1)),
        Constraint("SMALL_COPIES is 0 or 1", lambda p, s: p["SMALL_COPIES"] in (0, 1)),
        Constraint("SWAP_AB is 0 or 1", lambda p, s: p["SWAP_AB"] in (0, 1)),
        Constraint("RING_PAD is 0 or 1", lambda p, s: p["RING_PAD"] in (0, 1)),
        Constraint(
            "RING_PAD=0 swizzles 16-double rows (BK a multiple of 16)",
            lambda p, s: p["RING_PAD"] == 1 or p["BK"] % 16 == 0,
        ),
        Constraint(
            "SWAP_AB=1 stores from the fragments (EPILOGUE 0) and runs m16n8k8 (MMA_K 8)",
            lambda p, s: p["SWAP_AB"] == 0 or (p["EPILOGUE"] == 0 and p["MMA_K"] == 8),
        ),
        Constraint("STREAM_K is 0 to 8", lambda p, s: 0 <= p["STREAM_K"] <= 8),
        Constraint(
            "stream-K replaces split-K and stores from the fragments "
            "(STREAM_K > 0 needs SPLIT_K = 1 and EPILOGUE 0)",
            lambda p, s: p["STREAM_K"] == 0 or (p["SPLIT_K"] == 1 and p["EPILOGUE"] == 0),
        ),
        Constraint("float64 only", lambda p, s: s == 8),
        Constraint("between 4 and 16 warps per block", lambda p, s: 128 <= _threads(p) <= 512),
        Constraint(
            "at most 16 cp.async per thread per k-tile (more spill address registers), "
            "unless a cursor walks them (ADVANCE=1)",
            lambda p, s: _copies_per_thread(p) <= 16 or p["ADVANCE"] == 1,
        ),
        Constraint(
            "warp tile fits in registers at MIN_BLOCKS blocks per SM (or ptxas checked it)",
            lambda p, s: _fits_registers(p),
        ),
        blocks_fit_in_smem(_smem_bytes),
    ),
    defaults={
        "float64": {
            "BM": 128,
            "BN": 128,
            "WM": 64,
            "WN": 32,
            "BK": 16,
            "MMA_K": 4,
            "STAGES": 3,
            "GROUP_M": 8,
            "SPLIT_K": 1,
            "MIN_BLOCKS": 1,
            "EPILOGUE": 0,
            "SPLITK_FUSED": 0,
            "ADVANCE": 0,
            "SMALL_COPIES": 0,
            "STREAM_K": 0,
            "SWAP_AB": 0,
            "RING_PAD": 1,
        },
    },
    threads=_threads,
    smem_bytes=_smem_bytes,
    twins=_TWINS,
    raster_twins=RASTER_TWINS,
    narrow_tiles=NARROW_TILES,
    narrow_blocks_per_sm=NARROW_BLOCKS_PER_SM,
    round_tiles=ROUND_TILES,
    small_k_tiles=SMALL_K_TILES,
    medium_tiles=MEDIUM_TILES,
    large_tiles=LARGE_TILES,
)
