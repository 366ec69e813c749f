"""Declaration of the sgemm_simt family: fast strict-FP32 SGEMM on FFMA only (no tensor cores).

Block tile BM x BN split into WM x WN warp tiles of 32 TM x TN thread tiles (4x4 sub-blocks,
LDS.128 fragments), a STAGES-deep cp.async shared ring of BK-deep k-tiles stored k-outer,
group-M rasterisation and optional split-K (deterministic: a workspace and splitk_reduce) or
stream-K (deterministic: split tiles' partial sums in a workspace, streamk_fixup; see
tunedgemm/streamk.py).
"""

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

PAD = 4  # floats of padding per shared row, as in kernels/sgemm_simt.cu

# Stream-K blocks per SM beside 0 (data-parallel), compiled and launchable when a config
# names them (KernelConfig.make). Verified on the H100 (2026-11-25: tests/gpu/
# test_stream_k_gpu.py passed, bit-equal from run to run) and timed by benchmarks/
# bench_kernels.py --stream-k: 1 per SM cut 3072x96x3072 from 0.31 to 0.093 ms and
# 256x256x8192 from 0.84 to 0.12 ms, but slowed 4096x4096x512 (0.39 to 0.46 ms). Not yet in
# the search space: with MIN_BLOCKS=2 (128 registers) some tiles spill in streamk_gemm (20
# bytes at BM=BN=128, TM=TN=8: the slow whole-space compile test), and the space would grow
# from 1,728 configs to 2,880. Autotuning times stream-K variants with cursors instead
# (STREAM_K_CHANGES below), where a shape's tiles fill the SMs badly.
STREAM_K_ON = (1, 2)

# ADVANCE=1 (kernels/sgemm_simt.cu): the k-tile copies walk cursors set up once per block
# instead of recomputing every address and edge test per k-tile. In the 4096^3 NN config's
# main loop that is 171 of the 265 non-FFMA instructions per k-tile, which caps FFMA issue
# at 88.5% (docs/tuning.md, "The SIMT main loop in SASS"). Compiled and launchable when a
# config names it; not in the search space until the H100 says it is faster (then its value
# joins the tunable, and the table is regenerated).
ADVANCE_ON = (1,)
# Since 2026-11-28 (twenty-first session) ADVANCE=1's aligned kernels with a cursor on both
# operands run their whole k-tiles in a loop of their own whose copies have no tests
# (STEADY_LOOP in kernels/sgemm_simt.cu, its register-staged loads above the barrier): the
# same bits (same_bits.py: 0 of 576 results differ over 24 shipped configs), so the table's
# hash was re-stamped. bench_kernels --simt-steady (H200) timed the table's configs 1.7-2.9%
# faster at 2048^3-8192^3 and the large float32 near ties.

# ROLL_K=R (kernels/sgemm_simt.cu): the per-k-tile loop over BK k-steps runs BK/R rolled
# iterations of R unrolled k-steps instead of unrolling all BK. The 4096^3 NN config's
# unrolled loop body is ~37 KB of SASS against an instruction cache of about 12 KB per
# scheduler, with two warps per scheduler to hide a miss; rolled, it is a few KB, for a few
# loop-control instructions per iteration. Same fmas in the same k order (bit-equal results).
# Out of the search space until the H100 measures it, as ADVANCE_ON.
ROLL_K_ON = (2, 4)

# EARLY_BARRIER=1 (kernels/sgemm_simt.cu): each k-tile's barrier moves before the previous
# tile's last k-step, whose fmas cover the next tile's first fragment loads. Nsight Compute on
# the 4096^3 NN config (2026-11-26, docs/tuning.md) put 2.6% of all warp samples on the
# tile's first FFMA waiting for those loads, with the barrier at the top releasing both
# warps of a scheduler into the same wait. Out of the search space until measured.
EARLY_BARRIER_ON = (1,)

# MAXNREG=R (kernels/sgemm_simt.cu): __maxnreg__(R) in place of __launch_bounds__, a lower
# register budget that changes how ptxas schedules the main loop (with EARLY_BARRIER=1 at
# 255 registers it bunched the shared loads; nvcc 13.0 at 228: spread again, no spills).
# Out of the search space until measured.
MAXNREG_ON = (216, 224, 232)

# FMA_ORDER=1/2 (kernels/sgemm_simt.cu): each k-step's fmas walk the thread tile in
# serpentine order, rows (1) or columns (2), so that consecutive fmas share a source that
# ptxas can keep in the operand reuse cache. Nsight Compute on the 4096^3 NN config put
# 0.069 of the warp samples on dispatch stalls at FFMAs, against 0.046 in cuBLAS's kernel,
# more where an FFMA's sources share a register bank. Out of the search space until measured.
FMA_ORDER_ON = (1, 2)

# REG_TRANSPOSE=1 (kernels/sgemm_simt.cu): TN's two k-major operands are transposed through
# registers (16-byte loads along k, four shared stores each) as NN's B and TT's A are, instead
# of by one 4-byte cp.async per element. TN was the table's weakest layout: its own configs
# ran 0.81x / 0.83x cuBLAS at 4096^3 / 8192^3 where NN's ran at par; with both operands
# through registers, on NN's tilings, 0.93x / 0.94x (bench_kernels --reg-transpose, H100,
# 2026-11-27 10:56 UTC). Only TN (aligned) compiles differently; the same values land in
# the same shared positions, so the bits are REG_TRANSPOSE=0's.
REG_TRANSPOSE_ON = (1,)
# REG_TRANSPOSE=2 and 3: only TN's A (2) or only its B (3) through registers, the other by
# 4-byte cp.async (from cursors with ASYNC_CURSOR=1, which the steady loop needs). Through
# registers a k-tile's loads have one k-tile to land, by cp.async the ring's STAGES - 1; at
# 6906x530x1593 TN the 64 x 32 tile ran 17% slower from cursors than at NN, where only B is
# staged (H200, 2026-12-04). As kernels (gpu_session.sh kmajor-lanes, H200, 2026-12-05) the
# best of 2 and 3 ran 1.4-4.3% faster than both layout twins at four of five TN shapes and
# 3-6% slower at 6906x530x1593 (medium tiles).
REG_TRANSPOSE_ONE_OPERAND = (2, 3)
# REG_TRANSPOSE=4: the operand with the block tile's longer side through registers (A where
# BM >= BN: 2, else 3), the one whose 4-byte copies would take the more instructions. Of the
# 25 tile and shape pairs of that step, staging the longer side was the faster of 2 and 3 at
# 18; of the other seven none was more than 2.2% behind.
REG_TRANSPOSE_LONGER_SIDE = 4

# ASYNC_CURSOR=1 (kernels/sgemm_simt.cu, with ADVANCE=1): TN's k-major operands, copied by
# 4-byte cp.async at REG_TRANSPOSE=0, walk cursors as the other operands do, and the steady
# loop takes them. cuBLAS's 64 x 64 x 8 kernel at TN's medium shapes copies them so; ours
# spent 120 instructions a thread per k-tile on those copies' addresses and edge tests, and
# through registers its shared stores waited on the loads (Nsight Compute, H200, 2026-12-03).
ASYNC_CURSOR_ON = (1,)

# LANE_PAIRS=1 (kernels/sgemm_simt.cu): in 8 x 4 and 8 x 8 thread tiles, lanes 2i and 2i+1
# share their rows of C. By Nsight Compute's counts (probe_lds_wavefronts, H200, 2026-12-04)
# a fragment's LDS.128 takes 2 shared wavefronts where no group of four lanes reads more than
# two addresses, 4 where one reads four, as unpaired lanes do of A's rows: a k-step's loads
# take 10 -> 6 wavefronts at 8 x 4 (cuBLAS's 64 x 64 x 8 kernel at TN's medium shapes pairs
# its lanes so, 2026-12-03), 12 -> 8 at 8 x 8, where autotuning's 8 x 8 candidates ran 1.5%
# faster paired in geometric mean (0.99-1.09, 50 timings, two rounds) and the call 3-4% at
# 777x3333x1555 TN and 1-2% at 627x1738x2098 TN (gpu_session.sh wide-pairs-call, H200,
# 2026-12-04 17:10 UTC). Inert in 16 x 8 tiles, where the 4096^3 config ran 1.7% slower. The
# table's configs predate the tunable and read as LANE_PAIRS=0; their loop twins pair. The
# same bits.
LANE_PAIRS_ON = (1,)

# KMAJOR_LANES=1 (kernels/kmajor_lanes.cuh): the k-major operands' copies laid over the lanes
# so that a warp's shared stores hit 32 distinct banks, and register-staged threads holding 2
# or 4 adjacent rows store them with one 8- or 16-byte store a k-row. Shared rows are 4 mod
# 32 words long, so with k walked first across the lanes (KMAJOR_LANES=0) k-rows 8 apart share
# banks: by the bank model of benchmarks/kmajor_banks.py (nvcc-free, CPU), a block's stores
# of a k-major k-tile take twice the least wavefronts at BK = 16 and four times at BK = 32,
# the least at BK = 8; with KMAJOR_LANES=1 the least at every BK. NN's B, TT's A and TN's
# both are k-major. Every value lands where it did: the same bits (GPU test, H200). As
# kernels at TN's shapes it ran x0.995 over 100 pairs, 2-11% slower at 4096^3 (gpu_session.sh
# kmajor-lanes, H200, 2026-12-05): out of the space and of the twins.
KMAJOR_LANES_ON = (1,)


def pairs_lanes(p: Params) -> bool:
    """Whether the config's kernel pairs lanes (the kernel's PAIR_LANES): LANE_PAIRS in a
    thread tile four columns wide or 8 x 8."""
    return bool(p.get("LANE_PAIRS")) and (p.get("TN") == 4 or (p.get("TM"), p.get("TN")) == (8, 8))


def _inert(p: Params) -> Params:
    """LANE_PAIRS where pairs_lanes says no compiles the unpaired kernel, so the loop twin
    of a recorded 16 x 8 config that already walks cursors is that config: one compile and
    one timing, not two."""
    return {"LANE_PAIRS": 0} if p.get("LANE_PAIRS") and not pairs_lanes(p) else {}


# The main loop autotuning times beside each recorded config (the family's twin): cursors
# walked from one set-up (ADVANCE=1) and serpentine rows (FMA_ORDER=1). On the H100
# (bench_kernels --fma-order, 2026-11-26 10:29 UTC) it ran the table's own configs 4-7%
# faster at 1024^3-8192^3 and as fast at 777x3333x1555, with the same bits. And paired lanes
# (LANE_PAIRS=1, at 8 x 4 thread tiles): the medium tiles, through registers and from cursors
# at TN, ran 2-19% faster paired than unpaired at each of the 71 shape and split pairs printed
# (48 TN, 23 NN; probe_skinny --tiles, padded, gpu_session.sh lane-pairs, H200, 2026-12-03
# 17:53 UTC).
LOOP_TWIN = {"ADVANCE": 1, "FMA_ORDER": 1, "LANE_PAIRS": LANE_PAIRS_ON[0]}
# TN's second twin (aligned operands): the loop twin with the operand of the block tile's
# longer side through registers and the other copied by 4-byte cp.async from a cursor
# (REG_TRANSPOSE=4, ASYNC_CURSOR). Only TN's kernel changes. Its third: the loop twin with
# both operands copied from cursors, faster at BK = 8 than through registers (the medium
# tiles 2-6% ahead of both staged at four of TN's medium shapes; gpu_session.sh async-cursor,
# H200, 2026-12-03). Until 2026-12-05 the second twin staged both operands (REG_TRANSPOSE=1);
# in the kernel times of gpu_session.sh kmajor-lanes (five tiles at five TN shapes, H200,
# 2026-12-05; benchmarks/twin_sets.py reads them) each shape's best over the tiles is the
# same with these two twins as with all three, and 4.1% faster than with the old two at
# 475x2751x6475, 2.9% at 627x1738x2098, 1.5-1.6% at 2925x440x178 and 4096^3, as fast at
# 6906x530x1593. Staging one costs BK * max(BM, BN) / THREADS registers, as NN's and TT's
# kernels do, so every config of the space that has a loop twin has it (both staged cost
# BK * (BM + BN) / THREADS, which 162 of the space's 1,728 configs lacked). Each twin sets
# the other's tunable too: the cursor is on in both, REG_TRANSPOSE names which operands it
# leaves to cp.async.
LAYOUT_TWINS = {(True, False): ({**LOOP_TWIN, "REG_TRANSPOSE": REG_TRANSPOSE_LONGER_SIDE,
                                 "ASYNC_CURSOR": ASYNC_CURSOR_ON[0]},
                                {**LOOP_TWIN, "REG_TRANSPOSE": 0,
                                 "ASYNC_CURSOR": ASYNC_CURSOR_ON[0]})}  # fmt: skip

# The loop twin with the blocks taking C's tiles in plain grid order (GROUP_M=1: down C's
# columns, so that the blocks in flight store one run of memory) and in the widest groups of
# block rows (16: L2 reuse of the operands), as dmma's RASTER_TWINS; of the 145 float32
# entries that cuBLAS held within 10%, 136 kept no runner-up (of the four a table entry keeps)
# that was their own config at another order. (8, the third value, is left to the tuner: each
# raster twin is one more compile on a shape's first call.)
RASTER_TWINS = tuple({**LOOP_TWIN, "GROUP_M": g} for g in (1, 16))

# A candidate's stream-K variant, which autotuning times where its data-parallel grid's
# last wave leaves SMs idle (tunedgemm/plans.py, with_stream_k): one k-slice, the loop
# twin's main loop. The table's grid points are mostly powers of two, whose 128 x 128 or
# 256 x 128 tiles come in multiples of 128 on the H100's 132 SMs, so its entries never met
# the wave losses of shapes between them: 256x13726x3982 float32 (108 tiles of 256 x 128)
# ran 0.84x cuBLAS, 0.92x with stream-K (bench_tuning, H100, 2026-11-27 07:47 UTC). With cursors
# (ADVANCE=1) streamk_gemm compiles without spills for each of the table's 21 tiles at its
# MIN_BLOCKS (nvcc 13.0, sm_90a, NN, TN and NT aligned: 90-238 registers).
STREAM_K_CHANGES = {"SPLIT_K": 1, **LOOP_TWIN}
# ... and, at long k, the stream-K schedules of the large tiles, whose main loops run nearest
# the FFMA ceiling (256 x 128 and 128 x 128 blocks, 16 x 8 a thread). probe_skinny.py --large
# --padded (H100, 2026-11-27 07:44 UTC): 256x13726x3982 ran 0.92x cuBLAS with the 256 x 128
# tile at STREAM_K=1 where the call's pick ran 0.84x, 486x5263x6156 0.99x where it ran 0.92x;
# at k of 890-1771 they lost to the call's picks (0.71x at 948x2190x1017).
STREAM_K_TILES = tuple(
    {"BM": bm, "BN": 128, "BK": 16, "WM": 64, "WN": 64, "TM": 16, "TN": 8, "STAGES": 2,
     "MIN_BLOCKS": 1, "STREAM_K": per_sm}
    for bm, per_sm in ((256, 1), (128, 2))
)  # fmt: skip

# The 64 x 64 block as two warps of 8 x 8 a thread (64 threads, four blocks an SM or more for
# latency) where the space's 64 x 64 blocks hold four warps of 8 x 4: a k-step loads 16 values
# for 64 fmas instead of 12 for 32. Each element's sum takes the same k-steps in the same
# order, so it is a twin of those configs (tests/gpu/test_two_warp_tiles_gpu.py). On the H200
# (probe_skinny.py --tiles, step tiles-two-warp, 2026-11-28, padded NN), at float32's worst
# random shapes of the day, it ran ahead of the four-warp 64 x 64 at the best split of each:
# 2445x275x1106 0.95x cuBLAS against 0.82, 60x13147x390 0.85 against 0.76, 267x3099x502 0.85
# against 0.79. Among the twins, the narrow tiles and the round tiles (below). The
# constraints let the twin in at BK 8 and 16 of the 64 x 64 tiles and at BK 8 of the 128 x 64
# and 64 x 128 ones (there: their 8 x 8 tiles as four 32 x 64 warps at four blocks an SM,
# 123-128 registers, no spills); at BK 32 a thread's copies, at larger tiles its registers,
# rule it out.
TWO_WARP = {"WM": 32, "WN": 64, "TM": 8, "TN": 8, "MIN_BLOCKS": 4}

# Narrow tiles: 128 x 32 and 32 x 128 blocks, BK 16, with the loop twin. The tuning space's BM
# and BN start at 64. Where m x n holds few tiles and k is long they beat every config of the
# table's kind: over the float32 random shapes of bench_tuning (seed 1795689347) that lost
# most, `benchmarks/probe_skinny.py` (H100, 2026-11-26 17:00 and 17:02 UTC) timed the best of
# the table's first four configs and the default, each with k-splits 1-64, its loop twin and
# stream-K, at 0.63-0.82x cuBLAS, and a narrow tile (then four warps of 8 x 4) at 0.72-0.87x
# (1473x140x7081: 0.63 to 0.81; 9947x78x1422: 0.73 to 0.87), best with k-splits that give 4
# blocks per SM or more; at 319x2218x9857 the table's kind won. They are two warps of 8 x 8
# now (TWO_WARP's arrangement: a 128 x 32 of two 64 x 32 warp tiles, a 32 x 128 of two
# 32 x 64): at eight skinny float32 shapes that lost (`gpu_session.sh narrow-two-warp`, H200,
# 2026-11-28, padded NN, each tile's best split) they ran 3-10% ahead of the four-warp tiles of
# the same shape at every one: 1920x774x1096 0.92x cuBLAS against 0.84, 77x10737x4312 0.91
# against 0.84, 2445x275x1106 0.93 against 0.87, 10662x56x12626 0.84 against 0.79. Their 40
# element copies a thread at ALIGNED=0 build without spills (nvcc 13.0, sm_90a: 123-176
# registers at every transpose and alignment). Autotuning times them at such shapes
# (tunedgemm/plans.py, with_narrow_tiles: two more compiles on a shape's first call, so only
# where a dimension is narrow and k long).
NARROW_TILES = tuple(
    {"BM": bm, "BN": bn, "BK": 16, **TWO_WARP, "WM": wm, "WN": wn, "STAGES": 3,
     "STREAM_K": 0, **LOOP_TWIN}
    for bm, bn, wm, wn in ((128, 32, 64, 32), (32, 128, 32, 64))
)  # fmt: skip
NARROW_BLOCKS_PER_SM = 4  # the k-split of a narrow tile gives at least this many blocks per SM

# The tiling autotuning also times at its whole-round k-splits (and unsplit where it fills half
# a round) where the first candidate's tiles are fewer than its block slots, or where it splits
# long k (tunedgemm/plans.py, with_round_tiles): 128 x 64 blocks of 8 x 8 a thread, three an
# SM (below), the loop twin's main loop.
# `probe_skinny.py --tiles` (H100, 2026-11-27 18:28 UTC, padded; step tiles-float32) timed five
# simt tilings at 1-8 slices at float32's ten worst random shapes of the day, and this one was
# best at seven: 1920x774x1096 0.96x cuBLAS at 2 slices (the public call had run 0.83),
# 118x1391x3260 0.91 at 6 (0.86), 813x398x14465 0.95 at 8 (0.88). Its best splits were the
# whole-round ones at two of the three (2 and 6); elsewhere they were not (813x398: 8 slices
# 0.95, the one-round 5 untimed, 6 slices 0.73), so this catches part of what it offers.
# Beside it the two-warp 64 x 64 (TWO_WARP), at four blocks an SM: in the same probe on the
# H200 it ran those three shapes at 0.94, 0.86 and 0.93, and led the rest at 2445x275x1106.
# The 128 x 64 tile is declared at three blocks an SM (it was two until 2026-12-02), the blocks
# it holds: ptxas (nvcc 13.0, sm_90a) fits it in 122-167 registers at two, within three's cap
# of 168, in every transpose and alignment, split or not, with no spills, and Nsight Compute
# counted 165 at 4096x64x16384 (H200). Declared at two, its whole-round splits filled 264 of
# 396 slots: at 8192x128x8192 (128 tiles) it was timed at 2 and 4 slices, where 3 ran best
# (0.95x cuBLAS, gpu_session.sh longk-float32, 2026-12-02 00:46 UTC). MIN_BLOCKS sets the
# register cap alone, so each element's sum is the same.
# Beside it its mirror, 64 x 128 as 64 x 32 warp tiles, also three blocks an SM (ptxas: 122-167
# registers in every transpose and alignment, split or not, 156-159 at TN through registers,
# no spills); each element's sum is the 128 x 64's, bit for bit. NN stages B's k-tile through
# registers and TT stages A's, and each ran faster with the tile whose short side is that
# operand's (ROUND_TILE_SHORT_SIDE). `gpu_session.sh round-mirror` (H200, 2026-12-02 03:25 UTC,
# probe_skinny.py --tiles, padded, each tile's best split): at TT the 64 x 128 ran ahead of
# the 128 x 64 at all five shapes where both fit, 0.92-0.98x cuBLAS against 0.87-0.93
# (512x4096x4096 0.93 against 0.87); at NN behind it at all five, 0.88-0.98 against 0.94-1.05.
# Where m is 64 it is the one that fits: 64x4096x16384 ran 1.04-1.05x at NN and TT, where the
# call's first candidate ran 0.87-0.88 and the 128 x 64 0.50-0.59.
ROUND_TILES = (
    {"BM": 128, "BN": 64, "BK": 16, "WM": 32, "WN": 64, "TM": 8, "TN": 8, "STAGES": 3,
     "MIN_BLOCKS": 3, "GROUP_M": 8, "STREAM_K": 0, "REG_TRANSPOSE": 0, **LOOP_TWIN},
    {"BM": 64, "BN": 128, "BK": 16, "WM": 64, "WN": 32, "TM": 8, "TN": 8, "STAGES": 3,
     "MIN_BLOCKS": 3, "GROUP_M": 8, "STREAM_K": 0, "REG_TRANSPOSE": 0, **LOOP_TWIN},
    {"BM": 64, "BN": 64, "BK": 16, "STAGES": 3, "GROUP_M": 8, "STREAM_K": 0,
     "REG_TRANSPOSE": 0, **TWO_WARP, **LOOP_TWIN},
)  # fmt: skip
# The tiling autotuning also times at medium shapes (tunedgemm/plans.py, with_medium_tiles):
# cuBLAS's own at TN's worst random float32 shapes of 2026-12-02, whose Nsight Compute census
# (gpu_session.sh ncu-census, NCU_TRANS=TN, H200, 19:03 UTC) named its kernel a 64 x 64 x 8
# tile of three stages and four warps, 128 registers: 19.2 us at 2925x440x178 (322 blocks)
# and 21.7 at 1317x812x232. Ours in that tiling, 8 x 4 a thread, four blocks an SM (93
# registers at TN through registers), its twin's loop (`gpu_session.sh cublas-tiles`,
# probe_skinny.py --tiles, padded TN, 19:04 UTC): 0.83x cuBLAS at 2925x440x178 unsplit, where
# the best of 57 tilings of before ran 0.77 and the public call 0.75; 0.84 at 1317x812x232
# split 3 ways (0.82). At long k it lost to the tilings autotuning times already.
# And 64 x 32 x 8 of two warps, eight blocks an SM: the mirror of cuBLAS's 32 x 64 x 8 at NN's
# 3477x273x169 (Nsight Compute: 495 blocks of 64 threads, 15.4 us; ours 15.2), fewer columns
# of B through registers at NN. gpu_session.sh medium-simt (H200, 2026-12-03 07:07 UTC,
# probe_skinny.py --tiles, padded NN), unsplit: 1.02x cuBLAS at 3477x273x169 (the 64 x 64
# tile 0.77, the best other own tiling 0.72), 0.91 at 4955x899x119 (0.91), 0.90 at
# 2756x503x193 (0.89); split 2 ways 0.89 at 1301x546x536 (the best other 0.86).
MEDIUM_TILES = (
    {"BM": 64, "BN": 64, "BK": 8, "WM": 32, "WN": 32, "TM": 8, "TN": 4, "STAGES": 3,
     "MIN_BLOCKS": 4, "GROUP_M": 8, "STREAM_K": 0, **LOOP_TWIN},
    {"BM": 64, "BN": 32, "BK": 8, "WM": 32, "WN": 32, "TM": 8, "TN": 4, "STAGES": 3,
     "MIN_BLOCKS": 8, "GROUP_M": 8, "STREAM_K": 0, **LOOP_TWIN},
)  # fmt: skip
# NN (B through registers): the block of fewer columns; TT (A): of fewer rows. NT copies both
# operands straight to shared memory and TN's twins stage the longer side's operand or none,
# so both are timed there.
ROUND_TILE_SHORT_SIDE = {(False, False): "n", (True, True): "m"}
# The rounds of blocks whose k-splits the round tiles are timed at: one to three (other
# families, one and two). At the shipped table's long-k float32 entries that cuBLAS holds
# (same run), the 128 x 64 tile at three blocks an SM ran best at 3, 12 and 8 slices of 128, 32
# and 48 tiles (one round of 396 blocks), and at 8 slices of 144 tiles (three rounds:
# 384x3072x8192 0.93x cuBLAS, 3072x384x8192 1.01x), where 2 and 5 slices (one and two rounds)
# were not among its best four.
ROUND_TILE_ROUNDS = (1, 2, 3)


def _threads(p: Params) -> int:
    return (p["BM"] // p["WM"]) * (p["BN"] // p["WN"]) * 32


def _smem_bytes(p: Params, itemsize: int) -> int:
    # STAGES ring slots of As[BK][BM + PAD] and Bs[BK][BN + PAD].
    return itemsize * p["STAGES"] * p["BK"] * (p["BM"] + PAD + p["BN"] + PAD)


def _copies(p: Params) -> int:
    # Element copies a thread makes per k-tile of both operands (ALIGNED=0's 4-byte cp.async).
    return p["BK"] * (p["BM"] + p["BN"]) // _threads(p)


def _pow2(x: int) -> bool:
    return x > 0 and x & (x - 1) == 0


def _reg_estimate(p: Params) -> int:
    # Accumulators, double-buffered A/B fragments, the register-staged transpose of one
    # k-major operand (ALIGNED=1, worst of A and B; both with REG_TRANSPOSE=1), plus
    # addressing and loop state.
    # Calibrated against ptxas (sm_90a) so that every config allowed compiles without spills.
    staged = p["BK"] * max(p["BM"], p["BN"]) // _threads(p)
    if p["REG_TRANSPOSE"] == 1:
        staged = p["BK"] * (p["BM"] + p["BN"]) // _threads(p)
    return p["TM"] * p["TN"] + 2 * (p["TM"] + p["TN"]) + staged + 24


def _even_divisor(r: int, bk: int) -> bool:
    return r > 0 and r % 2 == 0 and bk % r == 0


def _launch_cap(p: Params) -> int:
    return register_cap(_threads(p), p["MIN_BLOCKS"])


def _cap_above_128(p: Params) -> bool:
    return _launch_cap(p) > 128


def _loads_whole(p: Params) -> bool:
    # Every thread copies whole 16-byte vectors of both k-tiles (ALIGNED=1); this also
    # makes the 4-byte element copies of ALIGNED=0 whole.
    t = _threads(p)
    return (
        (p["BM"] * p["BK"] // 4) % t == 0
        and (p["BN"] * p["BK"] // 4) % t == 0
        and (p["BM"] * p["BK"] // 4 >= t and p["BN"] * p["BK"] // 4 >= t)
    )


FAMILY = KernelFamily(
    name="simt",
    source="sgemm_simt.cu",
    dtypes=("float32",),
    description="FFMA-only SGEMM: warp tiles, LDS.128 fragments, cp.async ring, group-M, split-K",
    tunables=(
        Tunable("BM", (64, 128, 256), "rows of C per block"),
        Tunable("BN", (64, 128, 256), "columns of C per block"),
        Tunable("BK", (8, 16, 32), "depth of one k-tile staged in shared memory"),
        Tunable("WM", (32, 64), "rows of C per warp"),
        Tunable("WN", (32, 64), "columns of C per warp"),
        Tunable("TM", (8, 16), "rows of C per thread (multiple of 4)"),
        Tunable("TN", (4, 8), "columns of C per thread (multiple of 4)"),
        Tunable("STAGES", (2, 3, 4), "depth of the shared-memory cp.async ring"),
        Tunable("GROUP_M", (1, 8, 16), "block rows per group of the L2-friendly rasterisation"),
        Tunable("SPLIT_K", (1, 2, 4), "k slices (partial sums reduced in a fixed order)"),
        Tunable("MIN_BLOCKS", (1, 2), "__launch_bounds__ minimum resident blocks per SM"),
        # Configs recorded before STREAM_K existed (the shipped table's) ran the
        # data-parallel grid, which STREAM_K=0 compiles to unchanged (the same SASS).
        Tunable("STREAM_K", (0,), "persistent stream-K blocks per SM (0: data-parallel)", 0),
        # Recorded configs ran the per-k-tile addressing, which ADVANCE=0 compiles to unchanged.
        Tunable("ADVANCE", (0,), "k-tile copies walk cursors set up once (0: recomputed)", 0),
        # Recorded configs ran the fully unrolled BK loop, which ROLL_K=0 compiles to unchanged.
        Tunable("ROLL_K", (0,), "k-steps per rolled iteration of the BK loop (0: unrolled)", 0),
        # Recorded configs ran under __launch_bounds__, which MAXNREG=0 keeps.
        Tunable("MAXNREG", (0,), "register cap __maxnreg__ (0: __launch_bounds__'s)", 0),
        # Recorded configs ran the barrier at each k-tile's top: EARLY_BARRIER=0, unchanged.
        Tunable("EARLY_BARRIER", (0,), "k-tile barrier before the last k-step (0: at the top)", 0),
        # Recorded configs ran each k-step's fmas row by row: FMA_ORDER=0, unchanged.
        Tunable("FMA_ORDER", (0,), "fma order in a k-step (0: rows; 1, 2: serpentine)", 0),
        # Recorded configs ran TN's operands through 4-byte cp.async: REG_TRANSPOSE=0, unchanged.
        Tunable("REG_TRANSPOSE", (0,), "TN's k-major operands through registers (0: cp.async)", 0),
        # Recorded configs recomputed the 4-byte copies' addresses: ASYNC_CURSOR=0, unchanged.
        Tunable("ASYNC_CURSOR", (0,), "4-byte k-major copies walk cursors (with ADVANCE)", 0),
        # Recorded configs gave neighbouring lanes neighbouring rows: LANE_PAIRS=0, unchanged.
        Tunable("LANE_PAIRS", (0,), "8 x 4 and 8 x 8 thread tiles: lanes 2i, 2i+1 share C rows", 0),
        # Recorded configs walked k first across the lanes of k-major copies: KMAJOR_LANES=0.
        Tunable("KMAJOR_LANES", (0,), "k-major copies' lanes for conflict-free shared stores", 0),
    ),
    constraints=(
        divides("WM", "BM"),
        divides("WN", "BN"),
        divides("TM", "WM"),
        divides("TN", "WN"),
        Constraint(
            "TM and TN are multiples of 4", lambda p, s: p["TM"] % 4 == 0 and p["TN"] % 4 == 0
        ),
        Constraint(
            "TN <= TM <= 2 * TN (square-ish thread tiles)",
            lambda p, s: p["TN"] <= p["TM"] <= 2 * p["TN"],
        ),
        Constraint(
            "a warp tile holds exactly 32 thread tiles",
            lambda p, s: (p["WM"] // p["TM"]) * (p["WN"] // p["TN"]) == 32,
        ),
        Constraint(
            "BM, BN, BK, THREADS are powers of two",
            lambda p, s: all(_pow2(v) for v in (p["BM"], p["BN"], p["BK"], _threads(p))),
        ),
        # (64 with four blocks an SM or more: TWO_WARP, outside the space's MIN_BLOCKS)
        Constraint(
            "128 to 512 threads per block (64 at four blocks an SM or more)",
            lambda p, s: 128 <= _threads(p) <= 512 or (_threads(p) == 64 and p["MIN_BLOCKS"] >= 4),
        ),
        Constraint("whole 16-byte vectors of each k-tile per thread", lambda p, s: _loads_whole(p)),
        # (40 in the two-warp blocks, whose four blocks an SM leave each thread 255 registers:
        # their 128 x 32 and 32 x 128 narrow tiles build without spills)
        Constraint(
            "at most 32 element copies per thread per k-tile (ALIGNED=0 uses 4-byte cp.async;"
            " 40 in 64-thread blocks)",
            lambda p, s: _copies(p) <= 32 or (_threads(p) == 64 and _copies(p) <= 40),
        ),
        Constraint("STAGES >= 2", lambda p, s: p["STAGES"] >= 2),
        Constraint("STREAM_K is 0 to 8", lambda p, s: 0 <= p["STREAM_K"] <= 8),
        Constraint(
            "stream-K replaces split-K (STREAM_K > 0 needs SPLIT_K = 1)",
            lambda p, s: p["STREAM_K"] == 0 or p["SPLIT_K"] == 1,
        ),
        Constraint("ADVANCE is 0 or 1", lambda p, s: p["ADVANCE"] in (0, 1)),
        Constraint(
            "ROLL_K is 0 or an even divisor of BK (fragments stay double-buffered)",
            lambda p, s: p["ROLL_K"] == 0 or _even_divisor(p["ROLL_K"], p["BK"]),
        ),
        # ptxas (nvcc 13.0, sm_90) gives a rolled iteration of 4 or more k-steps more registers
        # than the unrolled loop (199 -> 255 in the 4096^3 config): at a 128-register cap it
        # spilled 128-440 bytes in 7 of the shipped configs (none with ROLL_K = 2).
        Constraint(
            "ROLL_K >= 4 needs more than 128 registers per thread (THREADS x MIN_BLOCKS <= 256)",
            lambda p, s: p["ROLL_K"] <= 2 or _cap_above_128(p),
        ),
        Constraint("EARLY_BARRIER is 0 or 1", lambda p, s: p["EARLY_BARRIER"] in (0, 1)),
        Constraint("FMA_ORDER is 0, 1 or 2", lambda p, s: p["FMA_ORDER"] in (0, 1, 2)),
        Constraint(
            "REG_TRANSPOSE is 0, 1 (both), 2 (A), 3 (B) or 4 (the block tile's longer side)",
            lambda p, s: p["REG_TRANSPOSE"] in (0, 1, 2, 3, 4),
        ),
        Constraint("ASYNC_CURSOR is 0 or 1", lambda p, s: p["ASYNC_CURSOR"] in (0, 1)),
        Constraint("LANE_PAIRS is 0 or 1", lambda p, s: p["LANE_PAIRS"] in (0, 1)),
        Constraint("KMAJOR_LANES is 0 or 1", lambda p, s: p["KMAJOR_LANES"] in (0, 1)),
        Constraint(
            "EARLY_BARRIER=1 runs the unrolled BK loop (ROLL_K = 0)",
            lambda p, s: p["EARLY_BARRIER"] == 0 or p["ROLL_K"] == 0,
        ),
        # The next tile's fragments live beside the last k-step's (ptxas, nvcc 13.0: 199 -> 253
        # registers in the 4096^3 config; at a 128-register cap the family default spilled
        # 8-16 bytes).
        Constraint(
            "EARLY_BARRIER=1 needs over 128 registers per thread (THREADS x MIN_BLOCKS <= 256)",
            lambda p, s: p["EARLY_BARRIER"] == 0 or _cap_above_128(p),
        ),
        Constraint(
            "MAXNREG is 0 or a multiple of 8 within __launch_bounds__'s cap",
            lambda p, s: p["MAXNREG"] == 0
            or (p["MAXNREG"] % 8 == 0 and p["MAXNREG"] <= _launch_cap(p)),
        ),
        Constraint(
            "registers fit __launch_bounds__(THREADS, MIN_BLOCKS) without spills",
            lambda p, s: _reg_estimate(p) <= (p["MAXNREG"] or _launch_cap(p)),
        ),
        blocks_fit_in_smem(_smem_bytes),
    ),
    # The config that won 2048^3 and 4096^3 in the H100 sweep of 2026-11-22
    # (benchmarks/bench_kernels.py --sweep 12).
    defaults={
        "float32": {
            "BM": 128,
            "BN": 128,
            "BK": 8,
            "WM": 32,
            "WN": 64,
            "TM": 8,
            "TN": 8,
            "STAGES": 3,
            "GROUP_M": 16,
            "SPLIT_K": 1,
            "MIN_BLOCKS": 2,
            "STREAM_K": 0,
            "ADVANCE": 0,
            "ROLL_K": 0,
            "EARLY_BARRIER": 0,
            "MAXNREG": 0,
            "FMA_ORDER": 0,
            "REG_TRANSPOSE": 0,
            "ASYNC_CURSOR": 0,
            "LANE_PAIRS": 0,
            "KMAJOR_LANES": 0,
        },
    },
    threads=_threads,
    smem_bytes=_smem_bytes,
    twins=(LOOP_TWIN, {**LOOP_TWIN, **TWO_WARP}),
    layout_twins=LAYOUT_TWINS,
    raster_twins=RASTER_TWINS,
    inert=_inert,
    narrow_tiles=NARROW_TILES,
    round_tiles=ROUND_TILES,
    medium_tiles=MEDIUM_TILES,
    round_tile_rounds=ROUND_TILE_ROUNDS,
    round_tile_short_side=ROUND_TILE_SHORT_SIDE,
    narrow_blocks_per_sm=NARROW_BLOCKS_PER_SM,
    stream_k_changes=STREAM_K_CHANGES,
    stream_k_tiles=STREAM_K_TILES,
)
