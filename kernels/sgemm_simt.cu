// sgemm_simt: fast strict-FP32 SGEMM with FFMA only (no tensor cores), tuned for sm_90.
//
// Computes C = alpha * op(A) * op(B) + beta * C in BLAS column-major terms (ABI in
// common.cuh): any m, n, k >= 1, any lda/ldb/ldc >= rows, all four TRANS_A/TRANS_B combos.
// float32 only (DTYPE 0). When beta == 0, C is never read. With SPLIT_K > 1 every k-slice
// writes its raw partial sums to the launcher's workspace and splitk_reduce (common.cuh) adds
// them in a fixed order: deterministic.
//
// Layout assumptions: ALIGNED=1 means A, B, C are 16-byte aligned and lda, ldb, ldc are
// multiples of 4 floats, so 16-byte accesses along each operand's unit-stride dimension
// and 16-byte C accesses along m are legal. ALIGNED=0 assumes nothing (4-byte accesses).
//
// Technique (after the CUTLASS SIMT / siboehm-style kernels):
//  * one BM x BN tile of C per block, split into WM x WN warp tiles; each lane owns a
//    TM x TN register tile made of (TM/4) x (TN/4) 4x4 sub-blocks interleaved with stride
//    4*(WM/TM) along m and 4*(WN/TN) along n, so every shared read is one LDS.128 and a
//    warp's reads of one k-row are contiguous (conflict-free, mostly broadcast);
//  * shared tiles are stored k-outer: As[k][m] and Bs[k][n] (rows padded by PAD floats,
//    keeping 16-byte alignment and spreading the transposing stores over banks);
//  * STAGES-deep shared ring fed by cp.async (one cp.async group per k-tile, one
//    __syncthreads per k-tile). Operands whose unit stride runs along m / n (A with
//    TRANS_A=0, B with TRANS_B=1) go global->shared directly with 16-byte cp.async
//    (ALIGNED=1, partial vectors zero-filled by src-size) or 4-byte cp.async (ALIGNED=0).
//    Operands whose unit stride runs along k (A with TRANS_A=1, B with TRANS_B=0) are
//    transposed: with ALIGNED=1 and exactly one such operand (NN: B, TT: A) it is staged
//    through registers (LDG.128 along k issued before the k-tile's math, four scalar STS
//    after it, into the ring slot freed by the last barrier), as both are with REG_TRANSPOSE=1
//    (TN); otherwise (ALIGNED=0, or TN with REG_TRANSPOSE=0) 4-byte cp.async writes straight
//    to the transposed position.
//    Out-of-range elements (m, n and k edges) are zero-filled; out-of-range C is skipped;
//  * ADVANCE=1: each operand's copies walk a cursor set up once per block (pointer, row
//    stride, m/n-edge sizes), moved one k-tile on per load, instead of recomputing every
//    address (64-bit products of ld) and edge test per k-tile (CUTLASS's predicated tile
//    iterators do the same); the 4-byte k-major cp.async path (KMajor::load_async) is unchanged;
//  * KMAJOR_LANES=1: the k-major copies' lanes laid out so that a warp's shared stores hit 32
//    distinct banks, register-staged threads storing 2 or 4 adjacent rows at once
//    (kernels/kmajor_lanes.cuh); the same values in the same places;
//  * STEADY_LOOP (ADVANCE and ALIGNED by default; both operands on cursors, EARLY_BARRIER=0):
//    while the k-tile to load lies wholly inside k and the block's tile wholly inside m and n,
//    a loop of its own whose copies have no tests and no branch between whole and edge
//    copies, so that ptxas spreads them among the fmas (its register-staged loads are issued
//    above the k-tile's barrier, its cp.async copies after COPY_STEP k-steps' fmas); then the
//    general loop for the last loads, and for the blocks on C's edge that neither SHIFT_EDGE
//    nor CLAMP_EDGE brings inside. The same copies of the same values: the same bits;
//  * register fragments double-buffered across the BK loop, fully unrolled; or, with
//    ROLL_K=R, rolled into BK/R iterations of R unrolled k-steps, so that the loop body fits
//    the instruction cache (BK=16, TM=16, TN=8 unrolled: ~37 KB of SASS per k-tile);
//  * EARLY_BARRIER=1: the barrier of k-tile t+1 moves before tile t's last k-step, whose
//    fmas cover the loads of tile t+1's first fragments (CUTLASS's multistage main loop);
//    with EARLY_BARRIER=0 every k-tile's first fmas wait on its first shared loads;
//  * LANE_PAIRS=1: in 8 x 4 thread tiles, lanes 2i and 2i+1 share their rows of C (fewer
//    shared wavefronts for the A fragments' LDS.128; see its define);
//  * group-M rasterisation of the linear block index for L2 reuse;
//  * epilogue alpha/beta with 16-byte C accesses when ALIGNED (scalar at edges); with
//    SPLIT_K > 1 (blockIdx.z = contiguous range of k-tiles) the same stores write raw partial
//    sums into the slice's workspace tile instead.
#include <type_traits>

#include "common.cuh"

#if DTYPE != 0
#error "sgemm_simt supports float32 (DTYPE 0) only"
#endif

#ifndef BM
#define BM 128         // rows of C per block
#endif
#ifndef BN
#define BN 128         // columns of C per block
#endif
#ifndef BK
#define BK 16          // depth of one k-tile staged in shared memory
#endif
#ifndef WM
#define WM 64          // rows of C per warp
#endif
#ifndef WN
#define WN 32          // columns of C per warp
#endif
#ifndef TM
#define TM 8           // rows of C per thread (multiple of 4)
#endif
#ifndef TN
#define TN 8           // columns of C per thread (multiple of 4)
#endif
#ifndef STAGES
#define STAGES 3       // depth of the shared-memory cp.async ring (>= 2)
#endif
#ifndef GROUP_M
#define GROUP_M 8      // block rows per group of the L2-friendly rasterisation
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 2   // __launch_bounds__ minimum resident blocks per SM
#endif
#ifndef STREAM_K
#define STREAM_K 0     // persistent stream-K blocks per SM (0: one block per tile, data-parallel)
#endif
#ifndef ADVANCE
#define ADVANCE 0      // 1: k-tile copies walk pointers set up once (0: addresses recomputed per k-tile)
#endif
#ifndef ROLL_K
#define ROLL_K 0       // k-steps per iteration of a rolled BK loop, even, dividing BK (0: fully unrolled)
#endif
#ifndef EARLY_BARRIER
#define EARLY_BARRIER 0   // 1: each k-tile's barrier before its last k-step (0: at its top)
#endif
#ifndef FMA_ORDER
#define FMA_ORDER 0    // order of a k-step's fmas: 0 row by row, 1 rows serpentine, 2 columns serpentine
#endif
#ifndef MAXNREG
#define MAXNREG 0      // registers per thread ptxas may use (0: what __launch_bounds__ allows)
#endif
#ifndef REG_TRANSPOSE
#define REG_TRANSPOSE 0   // 1: TN's two k-major operands also transposed through registers (2: A, 3: B, 4: the longer side)
#endif
#ifndef ASYNC_CURSOR
#define ASYNC_CURSOR 0   // 1 (with ADVANCE): k-major operands copied by 4-byte cp.async walk a cursor too
#endif
#ifndef KMAJOR_LANES
#define KMAJOR_LANES 0   // 1: k-major copies laid over the lanes for conflict-free shared stores (kmajor_lanes.cuh)
#endif
// LANE_PAIRS=1: in thread tiles four columns wide (TN = 4) and in 8 x 8 ones, lanes 2i and
// 2i+1 of a warp own the same rows of C and neighbouring columns, where LANE_PAIRS=0 gives
// them neighbouring rows. Nsight Compute's counts for 100 lane-to-address patterns
// (probe_lds_wavefronts.py, H200, 2026-12-04) fit one rule: a warp's LDS.128 is served a
// half-warp at a time, lanes of a group of four that read one address read it once, and a
// wavefront carries 128 bytes of the half's reads. A fragment load takes 2 wavefronts where
// no group of four lanes reads more than two addresses, 4 where one reads four: unpaired, a
// group reads four rows of A; paired, two rows and two column sets. A k-step's wavefronts,
// unpaired -> paired: 8 x 4 10 -> 6 (the medium tiles ran 2-19% faster at 71 shapes and
// splits, 2026-12-03); 8 x 8 12 -> 8 (1.5% faster in geometric mean over 50 timings of 8 x 8
// candidates at 16 shapes, 0.99-1.09, two rounds, gpu_session.sh wide-pairs-call,
// 2026-12-04 17:10 UTC); 16 x 8 20 -> 12, where the 4096^3 config ran 1.7% slower, so 16 x 8
// tiles keep neighbouring rows. Every element gets the same fmas in the same k order
// wherever its lane sits: the same bits.
#ifndef LANE_PAIRS
#define LANE_PAIRS 0
#endif
#define PAIR_LANES (LANE_PAIRS && (TN == 4 || (TM == 8 && TN == 8)))
#ifndef STEADY_LOOP
#define STEADY_LOOP (ADVANCE && ALIGNED)   // 1: whole k-tiles in a loop of their own (0: one loop)
#endif
// Issued right after the barrier, the steady loop's cp.async copies met the k-tile's first
// shared loads in the shared-memory pipe: Nsight Compute saw the 4096^3 kernel's warps
// throttled there at each k-tile's top (H200, 2026-11-28). After a quarter of the k-steps
// the table's BK=16 configs ran 2.8-4.2% faster at the squares and near ties than right after
// the barrier, and after one k-step up to 12% slower at some (bench_kernels --simt-loop, H200,
// 2026-11-29 00:34 UTC); the default BK=8 config was fastest after two (00:28 UTC).
#ifndef COPY_STEP
#define COPY_STEP (BK / 4)   // the steady loop's k-step before whose fmas its cp.async copies issue
#endif
// (the rolled BK loop issues them at the k-tile's top)
#define STEADY_COPY_STEP (ROLL_K || COPY_STEP >= BK ? 0 : COPY_STEP)
// SHIFT_EDGE=1: a block on C's last, partial row (column) of tiles moves its tile back to end
// at m (n), so that it lies wholly inside C and runs the steady loop, and stores only the rows
// (columns) past the block before it. Each element is the same fmas in the same k order
// wherever it sits in a tile: the same bits. Where the 16-byte copies and stores stay aligned
// (m % 4 == 0; n % 4 == 0 for B along n), for m >= BM (n >= BN), and not under stream-K (its
// fixup maps workspace slots to tiles unshifted).
#ifndef SHIFT_EDGE
#define SHIFT_EDGE 1
#endif
// CLAMP_EDGE=1: an operand copied along m (n) needs no shift where its tile may not shift
// (SHIFT_FIRST; anywhere with SHIFT_FIRST=0): in a block on C's edge, a thread whose rows
// (columns) lie past m (n) copies a vector inside m (n) instead (CLAMP_SPREAD), and
// one whose vector straddles m (n) copies it whole, up to 3 elements past the column's end
// (inside ld, a multiple of 4 when aligned; the steady loop then leaves out the k-tile holding
// the last column, whose end may be the operand's). Those rows of the tile hold other values
// than zeros, and only rows and columns of C that are never stored depend on them. Blocks
// below one tile of m (n), or at odd m (n), then run the steady loop too.
#ifndef CLAMP_EDGE
#define CLAMP_EDGE 1
#endif
// CLAMP_SPREAD=1: a clamped thread copies the vector at its own position modulo the tile's
// whole vectors inside m (n), as dmma's; 0: the tile's first vector, which every clamped lane
// then reads. 1 made ptxas schedule the steady loop otherwise (129 registers, not 136, in the
// 128 x 64 TM 8 TN 8 tile) and 6% slower even where nothing clamps (bench_kernels
// --simt-clamp, H200, 2026-11-29 08:53 and 08:59 UTC).
#ifndef CLAMP_SPREAD
#define CLAMP_SPREAD 0
#endif
// SHIFT_FIRST=1: with CLAMP_EDGE, an operand copied along m (n) still shifts where the tile
// may, and clamps only where it may not (m below a tile, or m % 4 != 0), as dmma's; 0: such
// operands always clamp, and only the k-major ones shift. 1 was 6-8% faster at 10620x236x656,
// 809x9893x246 and 7479x182x146, none of 10 shapes over 1% slower (bench_kernels
// --simt-clamp, H200, 2026-11-29).
#ifndef SHIFT_FIRST
#define SHIFT_FIRST 1
#endif
// ptxas schedules the unrolled loop by the registers it may use: given all 255 of
// __launch_bounds__(256, 1), the EARLY_BARRIER loop bunched its shared loads (four LDS.128
// back to back, four cycles apart) instead of spreading them among the fmas; at 228 it
// spreads them again with no spills. __maxnreg__ may not stand beside __launch_bounds__.
#if MAXNREG
#define SIMT_BOUNDS __maxnreg__(MAXNREG)
#else
#define SIMT_BOUNDS __launch_bounds__(THREADS, MIN_BLOCKS)
#endif
// OLD_FIRST=1: a block whose tile lies wholly inside C stores it with no edge tests, and at
// beta != 0 every block loads the old values of OLD_COLS of a thread's columns (on C's edge,
// those inside C) before it stores any of them. store4's load, fma and store in turn, each
// behind the edge tests' branches, had ptxas keep one 16-byte load in flight at a time
// (cuobjdump, nvcc 13.0, sm_90a): TM * TN / 4 round trips to memory a thread. The same fma of
// the same values: the same bits (same_bits.py at beta 0 and 0.5, H200, 2026-11-29). Aligned
// data-parallel kernels only: in the unaligned ones the scalar loads, 32 with their addresses,
// and in streamk_gemm the walk's state beside the group, spilled (200 and 336 bytes in the
// family default at 128 registers).
#ifndef OLD_FIRST
#define OLD_FIRST 1
#endif
#define OLD_COLS (32 / TM < TN ? (32 / TM > 0 ? 32 / TM : 1) : TN)   // about 32 floats in flight
// Derived (passed by tunedgemm/families/simt.py; defaults here match the defaults above).
#ifndef THREADS
#define THREADS ((BM / WM) * (BN / WN) * 32)
#endif
#define WARPS_M (BM / WM)          // warps along m
#define WTM (WM / TM)              // lanes along m inside a warp
#define WTN (WN / TN)              // lanes along n inside a warp
#define PAD 4                      // floats of padding per shared row (keeps 16 B alignment)
#define LDA_S (BM + PAD)           // shared row length of As
#define LDB_S (BN + PAD)           // shared row length of Bs
#define A_STAGE (BK * LDA_S)       // floats per ring slot of As
#define B_STAGE (BK * LDB_S)       // floats per ring slot of Bs
// Operands transposed through registers (ALIGNED=1 and unit stride along k): only when
// the other operand is copied with 16-byte cp.async (NN: B; TT: A). With both operands
// k-major (TRANS_A=1, TRANS_B=0) both use 4-byte cp.async, which keeps registers in budget,
// unless REG_TRANSPOSE=1 stages both through registers: a quarter of the copy instructions
// (16-byte loads along k) for BK * (BM + BN) / THREADS more registers. The same values land
// in the same shared positions, so the fmas and their bits are REG_TRANSPOSE=0's.
// REG_TRANSPOSE=2 stages only TN's A through registers, 3 only its B: the other goes by
// 4-byte cp.async (from a cursor with ASYNC_CURSOR, which the steady loop needs), so that one
// operand's copies have the ring's STAGES - 1 k-tiles to land and the other's cost a quarter
// of the copy instructions. REG_TRANSPOSE=4 stages the operand with the block tile's longer
// side (A where BM >= BN: 2, else 3), whose 4-byte copies would be the more instructions;
// the preprocessor picks, so that its text is that of 2 or 3. (Defined apart so that
// REG_TRANSPOSE 0 and 1 preprocess as before.)
#if REG_TRANSPOSE >= 2
#if REG_TRANSPOSE == 4 && BM >= BN
#define STAGED_ONE 2
#elif REG_TRANSPOSE == 4
#define STAGED_ONE 3
#else
#define STAGED_ONE REG_TRANSPOSE
#endif
#define B_REG (ALIGNED && !TRANS_B && (!TRANS_A || STAGED_ONE == 3))
#define A_REG (ALIGNED && TRANS_A && (TRANS_B || STAGED_ONE == 2))
#else
#define B_REG (ALIGNED && !TRANS_B && (!TRANS_A || REG_TRANSPOSE))
#define A_REG (ALIGNED && TRANS_A && (TRANS_B || REG_TRANSPOSE))
#endif
// ASYNC_CURSOR=1: a k-major operand copied by 4-byte cp.async (TN's two at REG_TRANSPOSE=0,
// as cuBLAS's 64 x 64 x 8 kernel at TN's medium shapes copies them) walks a cursor, as the
// others do. Without it the 64 x 64 x 8 tile's loop ran 419 instructions a k-tile, 120 of
// them the copies' addresses and edge tests; with it 329, against cuBLAS's 343 (Nsight
// Compute at 2925x440x178 TN, H200, 2026-12-03).
#define A_ASYNC_CUR (ASYNC_CURSOR && ADVANCE && TRANS_A && !A_REG)
#define B_ASYNC_CUR (ASYNC_CURSOR && ADVANCE && !TRANS_B && !B_REG)
// The steady loop needs a cursor on both operands (x-major ones, k-major ones staged through
// registers or walked by ASYNC_CURSOR), and the barrier at each k-tile's top. (STEADY's text
// reaches C++ expressions, as !CLAMPS: at ASYNC_CURSOR=0 it stays as it was, so that the
// shipped configs' kernels preprocess as they did.)
#if ASYNC_CURSOR
#define STEADY (STEADY_LOOP && ADVANCE && ALIGNED && !EARLY_BARRIER && \
                (!TRANS_A || A_REG || A_ASYNC_CUR) && (TRANS_B || B_REG || B_ASYNC_CUR))
#else
#define STEADY (STEADY_LOOP && ADVANCE && ALIGNED && !EARLY_BARRIER && (!TRANS_A || A_REG) && \
                (TRANS_B || B_REG))
#endif
#define SHIFTS (STEADY && SHIFT_EDGE && !STREAM_K)
#define CLAMPS (STEADY && CLAMP_EDGE)

static_assert(WTM * WTN == 32, "a warp tile must hold exactly 32 thread tiles");
static_assert(TN % OLD_COLS == 0, "OLD_COLS must divide the thread tile's columns");
static_assert(TM % 4 == 0 && TN % 4 == 0, "thread tiles are made of 4x4 sub-blocks");
static_assert(BM % WM == 0 && BN % WN == 0, "warp tiles must tile the block tile");
static_assert(THREADS == (BM / WM) * (BN / WN) * 32, "THREADS must match the warp layout");
static_assert(BK % 4 == 0, "BK must be a multiple of 4");
static_assert(STAGES >= 2, "need at least two stages");
#if ROLL_K
static_assert(ROLL_K % 2 == 0 && BK % ROLL_K == 0, "ROLL_K must be even and divide BK");
#endif
#if EARLY_BARRIER
static_assert(ROLL_K == 0, "EARLY_BARRIER runs the unrolled BK loop (ROLL_K = 0)");
#endif
static_assert((THREADS & (THREADS - 1)) == 0 && (BM & (BM - 1)) == 0 && (BN & (BN - 1)) == 0 &&
              (BK & (BK - 1)) == 0, "THREADS, BM, BN, BK must be powers of two");
#if ALIGNED
static_assert((BM * BK / 4) % THREADS == 0, "A k-tile must be whole 16-byte vectors per thread");
static_assert((BN * BK / 4) % THREADS == 0, "B k-tile must be whole 16-byte vectors per thread");
#else
static_assert((BM * BK) % THREADS == 0, "A k-tile must be whole elements per thread");
static_assert((BN * BK) % THREADS == 0, "B k-tile must be whole elements per thread");
#endif

__device__ __forceinline__ void cp_async16(float* dst, const float* src, int src_bytes)
{
    const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(src), "r"(src_bytes)
                 : "memory");
}

__device__ __forceinline__ void cp_async4(float* dst, const float* src, int src_bytes)
{
    const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(s), "l"(src), "r"(src_bytes)
                 : "memory");
}

#if ASYNC_CURSOR
// cp_async4 with the L2 fetching the whole 128-byte line (cuBLAS's LDGSTS.E.LTC128B): a
// warp's 4-byte copies of a k-major tile read 32 bytes of each of four rows, and the next
// k-tile's copies the rest of those lines.
__device__ __forceinline__ void cp_async4_line(float* dst, const float* src, int src_bytes)
{
    const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    asm volatile("cp.async.ca.shared.global.L2::128B [%0], [%1], 4, %2;\n" ::"r"(s), "l"(src),
                 "r"(src_bytes) : "memory");
}
#endif

__device__ __forceinline__ float comp(const float4& v, int i)
{
    return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}

#if FMA_ORDER
// One k-step's outer product in serpentine order: FMA_ORDER=1 runs the rows, every other
// row backwards, so consecutive fmas share the a value within a row and the b value across
// a row change; FMA_ORDER=2 runs the columns likewise (b shared within a column). ptxas keeps
// a shared source in its operand reuse cache, so each fma reads fewer registers from the
// banked file (CUTLASS's SIMT thread-level mma walks its tile this way). The sums are the
// same fmas in the same k order as FMA_ORDER=0: the same bits. Two mirrored loops, not one
// whose row and column FMA_ORDER picks: nvcc 13.0 left the BK loop around that one partly
// rolled (704 of the 2,496 fmas of the 4096^3 config in the PTX).
__device__ __forceinline__ void outer_product(float (&acc)[TM][TN], const float4 (&af)[TM / 4],
                                              const float4 (&bf)[TN / 4])
{
#if FMA_ORDER == 1
#pragma unroll
    for (int r = 0; r < TM; ++r) {
        const float a = comp(af[r / 4], r % 4);
#pragma unroll
        for (int c0 = 0; c0 < TN; ++c0) {
            const int c = (r & 1) ? TN - 1 - c0 : c0;
            acc[r][c] = fmaf(a, comp(bf[c / 4], c % 4), acc[r][c]);
        }
    }
#else
#pragma unroll
    for (int c = 0; c < TN; ++c) {
        const float b = comp(bf[c / 4], c % 4);
#pragma unroll
        for (int r0 = 0; r0 < TM; ++r0) {
            const int r = (c & 1) ? TM - 1 - r0 : r0;
            acc[r][c] = fmaf(comp(af[r / 4], r % 4), b, acc[r][c]);
        }
    }
#endif
}
#endif

// Loader geometry. THREADS, BM, BN, BK are powers of two, so the chunk c = tid + r * THREADS
// of a tile splits into a per-thread part (from tid) plus a compile-time part (from r),
// which keeps one base address per operand and folds the rest into immediates.
//
// X-major operand: element (p, x) at G[x + p * ld] (unit stride along x = m or n), copied
// into dst[p * (BX + PAD) + x] in vectors of W floats (W = 4 if ALIGNED else 1).
template <int BX>
struct XMajor {
    static constexpr int W = ALIGNED ? 4 : 1;
    static constexpr int VX = BX / W;                  // vectors per k-row
    static constexpr int PER = BK * VX / THREADS;      // vectors per thread per tile
    static constexpr bool WIDE = THREADS >= VX;        // a pass of the block covers whole k-rows
    __device__ static constexpr int dp(int r) { return WIDE ? r * (THREADS / VX) : r / (VX / THREADS); }
    __device__ static constexpr int dx(int r) { return WIDE ? 0 : (r % (VX / THREADS)) * THREADS * W; }
    __device__ static int p0(int tid) { return WIDE ? tid / VX : 0; }
    __device__ static int x0(int tid) { return (WIDE ? tid % VX : tid) * W; }

    // Rows x >= ext and depths p >= kend are zero-filled (src-size 0 or partial).
    __device__ static void load(float* dst, const float* __restrict__ G, int ld, int ext, int xbase,
                                int k0, int kend, int tid)
    {
        ld = opaque(ld);
        const int p = p0(tid), x = x0(tid);
        const int gx = xbase + x, gp = k0 + p;
        const float* g = G + ((long long)gp * ld + gx);
        float* d = dst + p * (BX + PAD) + x;
#pragma unroll
        for (int r = 0; r < PER; ++r) {
            const int xr = gx + dx(r);
            const bool ok = gp + dp(r) < kend && xr < ext;
            const float* src = ok ? g + ((long long)dp(r) * ld + dx(r)) : G;
#if ALIGNED
            cp_async16(d + dp(r) * (BX + PAD) + dx(r), src, ok ? 4 * min(4, ext - xr) : 0);
#else
            cp_async4(d + dp(r) * (BX + PAD) + dx(r), src, ok ? 4 : 0);
#endif
        }
    }

#if ADVANCE
    // ADVANCE=1: the same copies from a cursor set up once per block (start) and moved one
    // k-tile on by each load: per k-tile a 64-bit add per row step instead of a 64-bit
    // product of ld per vector, and the m/n-edge sizes (k-invariant) computed once. A zero
    // src-size reads nothing, so the cursor may point past the operand (as CUTLASS's zfill).
    static constexpr int DSTEP = WIDE ? THREADS / VX : 1;   // dp(r) - dp(r - 1), or 0
    struct Cursor {
        const float* g;        // vector 0 of this thread in the next k-tile
        long long rstep, adv;  // floats from row dp(r) to dp(r) + DSTEP; to the next k-tile
        int size[PER];         // bytes of vector r inside m / n
        int krem;              // k-rows of the next k-tile left from this thread's row p0
        bool whole;            // every vector wholly inside m / n
    };
    __device__ static Cursor start(const float* __restrict__ G, int ld, int ext, int xbase, int k0,
                                   int kend, int tid)
    {
        Cursor c;
        const int p = p0(tid), x = xbase + x0(tid);
#if CLAMPS   // (WIDE: this thread's vectors all lie at x)
        const int whole = CLAMP_SPREAD ? (ext - xbase) / W * W : 0;
        const int xc = !WIDE || x < ext ? x : whole > 0 ? xbase + x0(tid) % whole : xbase;
        c.g = G + ((long long)(k0 + p) * ld + xc);
#else
        c.g = G + ((long long)(k0 + p) * ld + x);
#endif
        c.rstep = (long long)DSTEP * ld;
        c.adv = (long long)BK * ld;
#pragma unroll
        for (int r = 0; r < PER; ++r) {
            const int xr = x + dx(r);
            c.size[r] = xr < ext ? 4 * min(W, ext - xr) : 0;
            c.whole = (r == 0 || c.whole) && c.size[r] == 4 * W;
        }
        c.krem = kend - k0 - p;
        return c;
    }
    // A k-tile whose copies lie wholly inside m / n and k: constant sizes, no tests.
    __device__ static void load_whole(float* dst, Cursor& c, int tid)
    {
        float* d = dst + p0(tid) * (BX + PAD) + x0(tid);
        const float* src = c.g;
#pragma unroll
        for (int r = 0; r < PER; ++r) {
            if (r > 0 && dp(r) != dp(r - 1)) src += c.rstep;
            copy(d + dp(r) * (BX + PAD) + dx(r), src + dx(r), 4 * W);
        }
        c.g += c.adv;
        c.krem -= BK;
    }
    __device__ static void load(float* dst, Cursor& c, int tid)
    {
        if (c.whole && c.krem >= BK) {
            load_whole(dst, c, tid);
            return;
        }
        float* d = dst + p0(tid) * (BX + PAD) + x0(tid);
        const float* src = c.g;
#pragma unroll
        for (int r = 0; r < PER; ++r) {
            if (r > 0 && dp(r) != dp(r - 1)) src += c.rstep;
            copy(d + dp(r) * (BX + PAD) + dx(r), src + dx(r), dp(r) < c.krem ? c.size[r] : 0);
        }
        c.g += c.adv;
        c.krem -= BK;
    }
    __device__ static void copy(float* d, const float* src, int bytes)
    {
#if ALIGNED
        cp_async16(d, src, bytes);
#else
        cp_async4(d, src, bytes);
#endif
    }
#endif
};

#if KMAJOR_LANES
#include "kmajor_lanes.cuh"
#else
// K-major operand: element (p, x) at G[p + x * ld] (unit stride along k). Vectors of W
// floats run along k; consecutive lanes walk k first so global reads coalesce.
template <int BX, int W>
struct KMajor {
    static constexpr int VK = BK / W;                  // vectors per x-row
    static constexpr int PER = BK * BX / W / THREADS;  // vectors per thread per tile
    static constexpr int XSTEP = THREADS / VK;         // x advance between a thread's vectors
    __device__ static int p0(int tid) { return (tid % VK) * W; }
    __device__ static int x0(int tid) { return tid / VK; }

    // ALIGNED=0: 4-byte cp.async straight to the transposed shared position.
    __device__ static void load_async(float* dst, const float* __restrict__ G, int ld, int ext, int xbase,
                                      int k0, int kend, int tid)
    {
        ld = opaque(ld);
        const int p = p0(tid), x = x0(tid);
        const int gx = xbase + x, gp = k0 + p;
        const float* g = G + ((long long)gx * ld + gp);
        float* d = dst + p * (BX + PAD) + x;
        const bool kin = gp < kend;
#pragma unroll
        for (int r = 0; r < PER; ++r) {
            const bool ok = kin && gx + r * XSTEP < ext;
            const float* src = ok ? g + (long long)(r * XSTEP) * ld : G;
            cp_async4(d + r * XSTEP, src, ok ? 4 : 0);
        }
    }

    // ALIGNED=1, global half of the register-staged transpose: 16-byte loads along k,
    // zeros outside (element-wise at the k edge).
    __device__ static void load_regs(float4 (&reg)[PER], const float* __restrict__ G, int ld, int ext, int xbase,
                                     int k0, int kend, int tid)
    {
        ld = opaque(ld);
        const int p = p0(tid), x = x0(tid);
        const int gx = xbase + x, gp = k0 + p;
        const float* g = G + ((long long)gx * ld + gp);
        const int krem = kend - gp;                    // valid floats of this thread's vectors
#pragma unroll
        for (int r = 0; r < PER; ++r) {
            float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
            if (gx + r * XSTEP < ext) {
                const float* src = g + (long long)(r * XSTEP) * ld;
                if (krem >= 4) {
                    v = __ldg(reinterpret_cast<const float4*>(src));
                } else {
                    if (krem > 0) v.x = __ldg(src);
                    if (krem > 1) v.y = __ldg(src + 1);
                    if (krem > 2) v.z = __ldg(src + 2);
                }
            }
            reg[r] = v;
        }
    }

    // Shared half: four scalar stores per vector, down the k-rows.
    __device__ static void store_regs(float* dst, const float4 (&reg)[PER], int tid)
    {
        float* d = dst + p0(tid) * (BX + PAD) + x0(tid);
#pragma unroll
        for (int r = 0; r < PER; ++r) {
            d[0 * (BX + PAD) + r * XSTEP] = reg[r].x;
            d[1 * (BX + PAD) + r * XSTEP] = reg[r].y;
            d[2 * (BX + PAD) + r * XSTEP] = reg[r].z;
            d[3 * (BX + PAD) + r * XSTEP] = reg[r].w;
        }
    }

#if ADVANCE
    // ADVANCE=1: load_regs from a cursor set up once per block and moved one k-tile on by
    // each load (XMajor::Cursor says why). Its edge loads repeat the ones above on purpose:
    // with ADVANCE=0 the kernel's text, and so the shipped table's measurements, stay as
    // they were (a shared helper would change both).
    struct Cursor {
        const float* g;        // vector 0 of this thread in the next k-tile
        long long rstep;       // floats from x-row r * XSTEP to (r + 1) * XSTEP
        unsigned in;           // bit r: x-row r * XSTEP inside m / n
        int krem;              // valid floats of this thread's vectors in the next k-tile
    };
    __device__ static Cursor start(const float* __restrict__ G, int ld, int ext, int xbase, int k0,
                                   int kend, int tid)
    {
        Cursor c;
        const int gx = xbase + x0(tid), gp = k0 + p0(tid);
        c.g = G + ((long long)gx * ld + gp);
        c.rstep = (long long)XSTEP * ld;
        c.in = 0;
#pragma unroll
        for (int r = 0; r < PER; ++r) c.in |= (gx + r * XSTEP < ext ? 1u : 0u) << r;
        c.krem = kend - gp;
        return c;
    }
    // A k-tile whose loads lie wholly inside m / n and k: no tests.
    __device__ static void load_regs_whole(float4 (&reg)[PER], Cursor& c)
    {
        const float* src = c.g;
#pragma unroll
        for (int r = 0; r < PER; ++r) {
            if (r > 0) src += c.rstep;
            // A plain global load, not __ldg's read-only one: in the steady loop ptxas moved
            // those across the barrier and down to their shared stores near the k-tile's end
            // (SASS, nvcc 13.0), where Nsight Compute saw the fmas around the stores wait on
            // them; a plain load may not cross the barrier, so the steady loop's, issued
            // above it, stay there and have the whole k-tile to land.
            asm volatile("ld.global.v4.f32 {%0, %1, %2, %3}, [%4];\n"
                         : "=f"(reg[r].x), "=f"(reg[r].y), "=f"(reg[r].z), "=f"(reg[r].w)
                         : "l"(src));
        }
        c.g += BK;
        c.krem -= BK;
    }
    __device__ static void load_regs(float4 (&reg)[PER], Cursor& c)
    {
        const float* src = c.g;
        const int krem = c.krem;
        if (krem >= 4 && c.in == (1u << PER) - 1) {
            load_regs_whole(reg, c);
            return;
        }
#pragma unroll
        for (int r = 0; r < PER; ++r) {
            if (r > 0) src += c.rstep;
            float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
            if (c.in >> r & 1u) {
                if (krem >= 4) {
                    v = __ldg(reinterpret_cast<const float4*>(src));
                } else {
                    if (krem > 0) v.x = __ldg(src);
                    if (krem > 1) v.y = __ldg(src + 1);
                    if (krem > 2) v.z = __ldg(src + 2);
                }
            }
            reg[r] = v;
        }
        c.g += BK;
        c.krem -= BK;
    }
#endif
#if ADVANCE && ASYNC_CURSOR
    // ASYNC_CURSOR=1: load_async from a cursor set up by start (W = 1: krem counts from
    // this thread's k-row, p0, so its element lies inside k while krem > 0).
    // A k-tile whose copies lie wholly inside m / n and k: no tests.
    __device__ static void load_async_whole(float* dst, Cursor& c, int tid)
    {
        float* d = dst + p0(tid) * (BX + PAD) + x0(tid);
        const float* src = c.g;
#pragma unroll
        for (int r = 0; r < PER; ++r) {
            if (r > 0) src += c.rstep;
            cp_async4_line(d + r * XSTEP, src, 4);
        }
        c.g += BK;
        c.krem -= BK;
    }
    // A zero src-size reads nothing, so the cursor may point past the operand.
    __device__ static void load_async(float* dst, Cursor& c, int tid)
    {
        float* d = dst + p0(tid) * (BX + PAD) + x0(tid);
        const float* src = c.g;
        const bool kin = c.krem > 0;
#pragma unroll
        for (int r = 0; r < PER; ++r) {
            if (r > 0) src += c.rstep;
            cp_async4_line(d + r * XSTEP, src, kin && (c.in >> r & 1u) ? 4 : 0);
        }
        c.g += BK;
        c.krem -= BK;
    }
#endif
};
#endif

#if STREAM_K
#include "streamk.cuh"
static_assert(SPLIT_K == 1, "stream-K replaces split-K: SPLIT_K must be 1");

// A split tile's raw partial sums into its slot, the whole BM x BN tile (rows and columns past
// m and n hold zeros: the loads zero-fill them) with 16-byte stores; lane (lm, ln) of warp
// (wm, wn) owns the elements the epilogue below gives it.
__device__ __forceinline__ void store_partial(float* slot, const float (&acc)[TM][TN], int wm, int wn,
                                              int lm, int ln)
{
#pragma unroll
    for (int u = 0; u < TN / 4; ++u)
#pragma unroll
        for (int cb = 0; cb < 4; ++cb) {
            const int j = wn * WN + u * 4 * WTN + ln * 4 + cb;
#pragma unroll
            for (int v = 0; v < TM / 4; ++v) {
                const int i = wm * WM + v * 4 * WTM + lm * 4, c = u * 4 + cb;
                *reinterpret_cast<float4*>(slot + i + j * BM) =
                    make_float4(acc[v * 4 + 0][c], acc[v * 4 + 1][c], acc[v * 4 + 2][c], acc[v * 4 + 3][c]);
            }
        }
}
#endif

// The data-parallel kernel (one block per tile of C, or per tile and k-slice) and, with
// STREAM_K > 0, the stream-K one: the same body with the walk over tiles around it (the
// STREAM_K blocks below), so that STREAM_K = 0 compiles to the very same code as before.
extern "C" __global__ void SIMT_BOUNDS
#if STREAM_K
streamk_gemm(int m, int n, int k, REAL alpha, const REAL* __restrict__ A, int lda,
             const REAL* __restrict__ B, int ldb, REAL beta, REAL* __restrict__ C, int ldc,
             REAL* __restrict__ W, int sk_dp, int sk_q, int sk_r)
#else
gemm(int m, int n, int k, REAL alpha, const REAL* __restrict__ A, int lda,
     const REAL* __restrict__ B, int ldb, REAL beta, REAL* __restrict__ C, int ldc)
#endif
{
    extern __shared__ __align__(16) unsigned char smem_raw[];
    float* As = reinterpret_cast<float*>(smem_raw);    // [STAGES][BK][LDA_S]
    float* Bs = As + STAGES * A_STAGE;                   // [STAGES][BK][LDB_S]

#if STREAM_K
    // This block's walk (its data-parallel tiles, then its stream-K range), a tile at a time.
    const int grid_m = (m + BM - 1) / BM, grid_n = (n + BN - 1) / BN;
    // What the step does after its k loop, in shared memory rather than in registers through
    // the loop (where they make the register-staged variants spill): [0] its slot (-1: a
    // whole tile, finished here), [1] where the next step starts (-1: none). Thread 0 writes
    // it after the barrier that every thread passes only once done with the last step's.
    __shared__ int sk_after[2];
    int it = SkSchedule(k, BK, gridDim.x, sk_dp, sk_q, sk_r).start(blockIdx.x);
    for (bool first = true;; first = false) {   // (a block's range is never empty)
    const SkStep step(SkSchedule(k, BK, gridDim.x, sk_dp, sk_q, sk_r), blockIdx.x, it);
    if (!first) __syncthreads();   // every thread is done with the last tile's ring
    if (threadIdx.x == 0) {        // seen by all after the k loop's first barrier (nkt >= 1)
        sk_after[0] = step.whole ? -1 : step.slot;
        sk_after[1] = step.next == step.end ? -1 : step.next;
    }
    const int pid = step.t;
#else
    const int grid_m = gridDim.x, grid_n = gridDim.y;
    const int pid = blockIdx.x + blockIdx.y * grid_m;
#endif
    // Group-M rasterisation: consecutive linear tile ids sweep GROUP_M block rows
    // down one block column before moving right, so A and B panels are reused in L2.
    const int per_group = GROUP_M * grid_n;
    const int first_m = (pid / per_group) * GROUP_M;
    const int group_rows = min(grid_m - first_m, GROUP_M);
    const int pid_m = first_m + (pid % per_group) % group_rows;
    const int pid_n = (pid % per_group) / group_rows;
#if SHIFTS
    // The rows and columns this block stores start at row_first and col_first; its tile at
    // row0 and col0 (SHIFT_EDGE).
    const int row_first = pid_m * BM, col_first = pid_n * BN;
    // (with CLAMPS and not SHIFT_FIRST only the k-major operands' tiles shift)
    constexpr bool SHIFT_M = !CLAMPS || SHIFT_FIRST || TRANS_A;
    constexpr bool SHIFT_N = !CLAMPS || SHIFT_FIRST || !TRANS_B;
    const int row0 = SHIFT_M && row_first + BM > m && m >= BM && m % 4 == 0 ? m - BM : row_first;
    const int col0 = SHIFT_N && col_first + BN > n && n >= BN && (!TRANS_B || n % 4 == 0) ? n - BN
                                                                                       : col_first;
#else
    const int row0 = pid_m * BM;
    const int col0 = pid_n * BN;
#endif

    // k-tiles of this block (a contiguous range per k-slice when SPLIT_K > 1).
#if STREAM_K
    const int kt_begin = step.kt_begin;
    const int nkt = step.nkt;
#else
    const int ktiles = (k + BK - 1) / BK;
#endif
#if STREAM_K
#elif SPLIT_K > 1
    C = SPLIT_SLICE(C, ldc, n);
    const int per_slice = (ktiles + SPLIT_K - 1) / SPLIT_K;
    const int kt_begin = blockIdx.z * per_slice;
    const int nkt = min(ktiles - kt_begin, per_slice);
    if (nkt <= 0) {   // an empty slice: zeros for splitk_reduce to add
#if SHIFTS
        zero_slice_tile(C, ldc, m, n, row_first, col_first, BM, BN, THREADS);
#else
        zero_slice_tile(C, ldc, m, n, row0, col0, BM, BN, THREADS);
#endif
        return;
    }
#else
    const int kt_begin = 0;
    const int nkt = ktiles;
#endif

#if STREAM_K   // per step: else the thread's load offsets are hoisted out of the walk and spill
    const int tid = opaque((int)threadIdx.x);
#else
    const int tid = threadIdx.x;
#endif
    const int warp = tid / 32, lane = tid % 32;
    const int wm = warp % WARPS_M, wn = warp / WARPS_M;
#if PAIR_LANES
    static_assert(WTN % 2 == 0, "LANE_PAIRS=1 pairs lanes along n");
    const int lm = (lane / 2) % WTM, ln = lane % 2 + 2 * (lane / (2 * WTM));
#else
    const int lm = lane % WTM, ln = lane / WTM;
#endif

#if A_REG
    float4 a_reg[KMajor<BM, 4>::PER];
#endif
#if B_REG
    float4 b_reg[KMajor<BN, 4>::PER];
#endif

#if ADVANCE   // cursors at k-tile kt_begin; issue_tile is called for kt_begin, kt_begin + 1, ...
#if !TRANS_A
    auto a_cur = XMajor<BM>::start(A, lda, m, row0, kt_begin * BK, k, tid);
#elif A_REG
    auto a_cur = KMajor<BM, 4>::start(A, lda, m, row0, kt_begin * BK, k, tid);
#elif A_ASYNC_CUR
    auto a_cur = KMajor<BM, 1>::start(A, lda, m, row0, kt_begin * BK, k, tid);
#endif
#if TRANS_B
    auto b_cur = XMajor<BN>::start(B, ldb, n, col0, kt_begin * BK, k, tid);
#elif B_REG
    auto b_cur = KMajor<BN, 4>::start(B, ldb, n, col0, kt_begin * BK, k, tid);
#elif B_ASYNC_CUR
    auto b_cur = KMajor<BN, 1>::start(B, ldb, n, col0, kt_begin * BK, k, tid);
#endif
#endif

    // Issue every global load of k-tile `kt` into ring slot `s` (register-staged parts go
    // to a_reg / b_reg and are stored by store_regs).
    auto issue_tile = [&](int s, int kt) {
        const int k0 = kt * BK;
#if ADVANCE
        (void)k0;   // (the cursors know their k-tile)
#endif
#if TRANS_A
#if A_REG && ADVANCE
        KMajor<BM, 4>::load_regs(a_reg, a_cur);
#elif A_REG
        KMajor<BM, 4>::load_regs(a_reg, A, lda, m, row0, k0, k, tid);
#elif A_ASYNC_CUR
        KMajor<BM, 1>::load_async(As + s * A_STAGE, a_cur, tid);
#else
        KMajor<BM, 1>::load_async(As + s * A_STAGE, A, lda, m, row0, k0, k, tid);
#endif
#elif ADVANCE
        XMajor<BM>::load(As + s * A_STAGE, a_cur, tid);
#else
        XMajor<BM>::load(As + s * A_STAGE, A, lda, m, row0, k0, k, tid);
#endif
#if TRANS_B && ADVANCE
        XMajor<BN>::load(Bs + s * B_STAGE, b_cur, tid);
#elif TRANS_B
        XMajor<BN>::load(Bs + s * B_STAGE, B, ldb, n, col0, k0, k, tid);
#else
#if B_REG && ADVANCE
        KMajor<BN, 4>::load_regs(b_reg, b_cur);
#elif B_REG
        KMajor<BN, 4>::load_regs(b_reg, B, ldb, n, col0, k0, k, tid);
#elif B_ASYNC_CUR
        KMajor<BN, 1>::load_async(Bs + s * B_STAGE, b_cur, tid);
#else
        KMajor<BN, 1>::load_async(Bs + s * B_STAGE, B, ldb, n, col0, k0, k, tid);
#endif
#endif
    };
#if STEADY
    // issue_tile for a k-tile known to lie wholly inside both operands, in two halves: the
    // loads into registers (they may go before the barrier: the registers were stored at the
    // end of the last k-tile) and the cp.async copies into slot s (after it: it frees s).
    auto issue_whole_regs = [&]() {
#if A_REG
        KMajor<BM, 4>::load_regs_whole(a_reg, a_cur);
#endif
#if B_REG
        KMajor<BN, 4>::load_regs_whole(b_reg, b_cur);
#endif
    };
    auto issue_whole_async = [&](int s) {
#if !TRANS_A
        XMajor<BM>::load_whole(As + s * A_STAGE, a_cur, tid);
#elif A_ASYNC_CUR
        KMajor<BM, 1>::load_async_whole(As + s * A_STAGE, a_cur, tid);
#endif
#if TRANS_B
        XMajor<BN>::load_whole(Bs + s * B_STAGE, b_cur, tid);
#elif B_ASYNC_CUR
        KMajor<BN, 1>::load_async_whole(Bs + s * B_STAGE, b_cur, tid);
#endif
        (void)s;
    };
#endif
    auto store_regs = [&](int s) {
#if A_REG
        KMajor<BM, 4>::store_regs(As + s * A_STAGE, a_reg, tid);
#endif
#if B_REG
        KMajor<BN, 4>::store_regs(Bs + s * B_STAGE, b_reg, tid);
#endif
        (void)s;
    };

    float acc[TM][TN];
#pragma unroll
    for (int r = 0; r < TM; ++r)
#pragma unroll
        for (int c = 0; c < TN; ++c) acc[r][c] = 0.f;

    // Prologue: fill ring slots 0 .. STAGES-2 (one commit group per slot, even if empty).
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < nkt) {
            issue_tile(s, kt_begin + s);
            store_regs(s);
        }
        cp_async_commit();
    }

    // Per-lane fragment bases inside a ring slot.
    const int a_off = wm * WM + lm * 4;
    const int b_off = wn * WN + ln * 4;

#if EARLY_BARRIER
    // EARLY_BARRIER=1 (CUTLASS's multistage main loop order): the barrier that makes tile t+1
    // visible comes before tile t's last k-step, whose fmas then cover the loads of tile t+1's
    // first fragments; so no k-tile starts with its first fmas waiting on shared memory (with
    // the barrier at the top, both warps of a scheduler were released together into that
    // wait). Every read of tile t's slot is issued before that barrier (the last k-step's
    // fragments were prefetched in the one before), so the slot is free for tile t+STAGES
    // right after it. The same fmas in the same k order: the same bits as EARLY_BARRIER=0.
    cp_async_wait<STAGES - 2>();
    __syncthreads();
    float4 af[2][TM / 4], bf[2][TN / 4];
#pragma unroll
    for (int v = 0; v < TM / 4; ++v) af[0][v] = *reinterpret_cast<const float4*>(As + a_off + v * 4 * WTM);
#pragma unroll
    for (int u = 0; u < TN / 4; ++u) bf[0][u] = *reinterpret_cast<const float4*>(Bs + b_off + u * 4 * WTN);
    int rs = 0;               // ring slot read this iteration (tile t)
    int ws = STAGES - 1;      // ring slot written this iteration (tile t + STAGES - 1)
    for (int t = 0; t < nkt; ++t) {
        const bool more = t + STAGES - 1 < nkt;
        if (more) issue_tile(ws, kt_begin + t + STAGES - 1);
        cp_async_commit();

        const int ns = (rs + 1 == STAGES) ? 0 : rs + 1;   // tile t+1's slot
        const float* a_s = As + rs * A_STAGE + a_off;
        const float* b_s = Bs + rs * B_STAGE + b_off;
#pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
            const int cur = kk & 1;   // BK is even: the last k-step prefetches into buffer 0
            if (kk + 1 < BK) {
#pragma unroll
                for (int v = 0; v < TM / 4; ++v)
                    af[cur ^ 1][v] = *reinterpret_cast<const float4*>(a_s + (kk + 1) * LDA_S + v * 4 * WTM);
#pragma unroll
                for (int u = 0; u < TN / 4; ++u)
                    bf[cur ^ 1][u] = *reinterpret_cast<const float4*>(b_s + (kk + 1) * LDB_S + u * 4 * WTN);
            } else if (t + 1 < nkt) {
                // Register-staged operands of tile t+STAGES-1 into the slot freed by the last
                // barrier (more implies t + 1 < nkt); then tile t+1 landed and visible to all.
                if (more) store_regs(ws);
                cp_async_wait<STAGES - 2>();
                __syncthreads();
#pragma unroll
                for (int v = 0; v < TM / 4; ++v)
                    af[cur ^ 1][v] = *reinterpret_cast<const float4*>(As + ns * A_STAGE + a_off + v * 4 * WTM);
#pragma unroll
                for (int u = 0; u < TN / 4; ++u)
                    bf[cur ^ 1][u] = *reinterpret_cast<const float4*>(Bs + ns * B_STAGE + b_off + u * 4 * WTN);
            }
#if FMA_ORDER
            outer_product(acc, af[cur], bf[cur]);
#else
#pragma unroll
            for (int r = 0; r < TM; ++r) {
                const float a = comp(af[cur][r / 4], r % 4);
#pragma unroll
                for (int c = 0; c < TN; ++c) acc[r][c] = fmaf(a, comp(bf[cur][c / 4], c % 4), acc[r][c]);
            }
#endif
        }
        rs = ns;
        ws = (ws + 1 == STAGES) ? 0 : ws + 1;
    }
#else
    int rs = 0;               // ring slot read this iteration (tile t)
    int ws = STAGES - 1;      // ring slot written this iteration (tile t + STAGES - 1)
    // One k-tile: refill slot ws with k-tile t + STAGES - 1 (issue_whole_regs and, before
    // k-step STEADY_COPY_STEP, issue_whole_async where that k-tile is known to lie wholly
    // inside both operands: `whole` is std::true_type), then tile t's fmas. With the steady
    // loop the body is a lambda that two loops call; without it, the one loop's own body, as
    // before the steady loop: in a lambda, ptxas spilled 4 bytes of a 512-thread config at
    // its 128-register cap (BM=128, BN=256, TT unaligned; nvcc 13.0).
#if STEADY
    auto tile_step = [&](int t, auto whole) {
        constexpr bool WHOLE = decltype(whole)::value;
#else
    for (int t = 0; t < nkt; ++t) {
        constexpr bool WHOLE = false;
#endif
#if STEADY
        if constexpr (WHOLE) issue_whole_regs();
#endif
        // Tile t has landed for this thread; the barrier makes it visible to all and
        // guarantees everybody finished tile t-1, whose slot (ws) is refilled below.
        cp_async_wait<STAGES - 2>();
        __syncthreads();

        const bool more = WHOLE || t + STAGES - 1 < nkt;
        if constexpr (WHOLE) {
#if STEADY && STEADY_COPY_STEP == 0
            issue_whole_async(ws);
            cp_async_commit();
#endif
        } else {
            if (more) issue_tile(ws, kt_begin + t + STAGES - 1);
            cp_async_commit();
        }

        const float* a_s = As + rs * A_STAGE + a_off;
        const float* b_s = Bs + rs * B_STAGE + b_off;
        float4 af[2][TM / 4], bf[2][TN / 4];
#pragma unroll
        for (int v = 0; v < TM / 4; ++v) af[0][v] = *reinterpret_cast<const float4*>(a_s + v * 4 * WTM);
#pragma unroll
        for (int u = 0; u < TN / 4; ++u) bf[0][u] = *reinterpret_cast<const float4*>(b_s + u * 4 * WTN);
#if ROLL_K
        // ROLL_K=R: BK / R iterations of R unrolled k-steps, the same fmas in the same k order
        // as the unrolled loop below. R is even, so every iteration starts on fragment buffer
        // 0; its last k-step prefetches the next iteration's first fragments unless it ends
        // the tile (ptxas keeps two copies of that k-step, with and without the loads, and
        // branches between them). The fragment rows are walked by pointer: an add per
        // iteration, where kb * LDA_S recomputed costs an IMAD and a LEA per operand.
        const float* a_k = a_s;   // k-row kb of the tile
        const float* b_k = b_s;
#pragma unroll 1
        for (int kb = 0; kb < BK; kb += ROLL_K, a_k += ROLL_K * LDA_S, b_k += ROLL_K * LDB_S) {
#pragma unroll
            for (int j = 0; j < ROLL_K; ++j) {
                const int cur = j & 1;
                if (j + 1 < ROLL_K || kb + ROLL_K < BK) {
#pragma unroll
                    for (int v = 0; v < TM / 4; ++v)
                        af[cur ^ 1][v] = *reinterpret_cast<const float4*>(a_k + (j + 1) * LDA_S + v * 4 * WTM);
#pragma unroll
                    for (int u = 0; u < TN / 4; ++u)
                        bf[cur ^ 1][u] = *reinterpret_cast<const float4*>(b_k + (j + 1) * LDB_S + u * 4 * WTN);
                }
#if FMA_ORDER
                outer_product(acc, af[cur], bf[cur]);
#else
#pragma unroll
                for (int r = 0; r < TM; ++r) {
                    const float a = comp(af[cur][r / 4], r % 4);
#pragma unroll
                    for (int c = 0; c < TN; ++c) acc[r][c] = fmaf(a, comp(bf[cur][c / 4], c % 4), acc[r][c]);
                }
#endif
            }
        }
#else
#pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
            const int cur = kk & 1;
#if STEADY && STEADY_COPY_STEP > 0
            if constexpr (WHOLE) {
                if (kk == STEADY_COPY_STEP) {
                    issue_whole_async(ws);
                    cp_async_commit();
                }
            }
#endif
            if (kk + 1 < BK) {
#pragma unroll
                for (int v = 0; v < TM / 4; ++v)
                    af[cur ^ 1][v] = *reinterpret_cast<const float4*>(a_s + (kk + 1) * LDA_S + v * 4 * WTM);
#pragma unroll
                for (int u = 0; u < TN / 4; ++u)
                    bf[cur ^ 1][u] = *reinterpret_cast<const float4*>(b_s + (kk + 1) * LDB_S + u * 4 * WTN);
            }
#if FMA_ORDER
            outer_product(acc, af[cur], bf[cur]);
#else
#pragma unroll
            for (int r = 0; r < TM; ++r) {
                const float a = comp(af[cur][r / 4], r % 4);
#pragma unroll
                for (int c = 0; c < TN; ++c) acc[r][c] = fmaf(a, comp(bf[cur][c / 4], c % 4), acc[r][c]);
            }
#endif
        }
#endif

        // Register-staged operands: their slot was freed by this iteration's barrier and is
        // read STAGES-1 iterations from now, after at least one more barrier.
        if (more) store_regs(ws);

        rs = (rs + 1 == STAGES) ? 0 : rs + 1;
        ws = (ws + 1 == STAGES) ? 0 : ws + 1;
#if STEADY
    };
    // Steady state: while the k-tile to load (t + STAGES - 1) lies wholly inside k and in this
    // block's range, for blocks whose copies need no m / n tests (the tile inside m and n,
    // shifted there or clamped), a loop whose copies have no tests; then the general one for
    // the last STAGES - 1 tiles or so, and for the other blocks on C's edge.
    int t = 0;
#if CLAMPS
    // An operand along m (n) copied by whole k-rows a thread (WIDE) clamps its copies at C's
    // edge; a k-major one's tile must lie inside (shifted there where it may).
    const bool a_in = (!TRANS_A && XMajor<BM>::WIDE) || row0 + BM <= m;
    const bool b_in = (TRANS_B && XMajor<BN>::WIDE) || col0 + BN <= n;
    const int straddles = (!TRANS_A && row0 + BM > m && m % 4 != 0) ||
                          (TRANS_B && col0 + BN > n && n % 4 != 0);
    if (a_in && b_in) {
        const int steady = min(nkt, (k - straddles) / BK - kt_begin) - (STAGES - 1);
        for (; t < steady; ++t) tile_step(t, std::true_type{});
    }
#else
    if (row0 + BM <= m && col0 + BN <= n) {
        const int steady = min(nkt, k / BK - kt_begin) - (STAGES - 1);
        for (; t < steady; ++t) tile_step(t, std::true_type{});
    }
#endif
    for (; t < nkt; ++t) tile_step(t, std::false_type{});
#else
    }
#endif
#endif
    cp_async_wait<0>();   // only empty groups can remain; drain for tidiness

#if STREAM_K
    if (const int slot = sk_after[0]; slot >= 0) {   // a split tile: raw partial sums to its slot
        store_partial(W + (size_t)slot * (BM * BN), acc, wm, wn, lm, ln);
        if (sk_after[1] < 0) break;
        it = sk_after[1];
        continue;
    }
#endif
    // Epilogue: lane (lm, ln) owns rows  row0 + wm*WM + v*4*WTM + lm*4 + {0..3}
    //                         and columns col0 + wn*WN + u*4*WTN + ln*4 + {0..3}.
#if ALIGNED && OLD_FIRST && !STREAM_K
    // A tile wholly inside C (block-uniform; not shifted, so every element is its own): no
    // edge tests, and at beta != 0 the old values of OLD_COLS of the thread's columns loaded
    // before any of them is stored (OLD_FIRST above).
#if SHIFTS
    if (row0 + BM <= m && col0 + BN <= n && row0 == row_first && col0 == col_first) {
#else
    if (row0 + BM <= m && col0 + BN <= n) {
#endif
        REAL* const cw = C + (size_t)(row0 + wm * WM + lm * 4) + (size_t)(col0 + wn * WN + ln * 4) * ldc;
#define SIMT_C(c, v) (cw + (size_t)(((c) / 4) * 4 * WTN + (c) % 4) * ldc + (v) * 4 * WTM)
#define SIMT_ACC4(c, v) make_float4(acc[(v) * 4][c], acc[(v) * 4 + 1][c], acc[(v) * 4 + 2][c], \
                                    acc[(v) * 4 + 3][c])
#if SPLIT_K == 1
        if (beta != 0.f) {
#pragma unroll
            for (int c0 = 0; c0 < TN; c0 += OLD_COLS) {
                float4 old[OLD_COLS][TM / 4];
#pragma unroll
                for (int c = c0; c < c0 + OLD_COLS; ++c)
#pragma unroll
                    for (int v = 0; v < TM / 4; ++v)
                        old[c - c0][v] = *reinterpret_cast<const float4*>(SIMT_C(c, v));
#pragma unroll
                for (int c = c0; c < c0 + OLD_COLS; ++c)
#pragma unroll
                    for (int v = 0; v < TM / 4; ++v) {
                        const float4 o = old[c - c0][v], a = SIMT_ACC4(c, v);
                        *reinterpret_cast<float4*>(SIMT_C(c, v)) =
                            make_float4(fmaf(beta, o.x, alpha * a.x), fmaf(beta, o.y, alpha * a.y),
                                        fmaf(beta, o.z, alpha * a.z), fmaf(beta, o.w, alpha * a.w));
                    }
            }
        } else
#endif
        {
#pragma unroll
            for (int c = 0; c < TN; ++c)
#pragma unroll
                for (int v = 0; v < TM / 4; ++v)
                    store4(SIMT_C(c, v), SIMT_ACC4(c, v), alpha, beta);
        }
#undef SIMT_C
#undef SIMT_ACC4
    } else
#endif
#if ALIGNED && SPLIT_K == 1 && OLD_FIRST && !STREAM_K
    if (beta != 0.f) {   // (OLD_FIRST above) on C's edge: a group's old values inside C first
#pragma unroll
        for (int c0 = 0; c0 < TN; c0 += OLD_COLS) {
            float old[OLD_COLS][TM];
#pragma unroll
            for (int pass = 0; pass < 2; ++pass)   // 0: load the old values, 1: store
#pragma unroll
                for (int c = c0; c < c0 + OLD_COLS; ++c) {
                    const int gj = col0 + wn * WN + (c / 4) * 4 * WTN + ln * 4 + c % 4;
#if SHIFTS
                    const bool col_in = gj < n && gj >= col_first;
#else
                    const bool col_in = gj < n;
#endif
                    REAL* const ccol = C + (size_t)gj * ldc;
#pragma unroll
                    for (int v = 0; v < TM / 4; ++v) {
                        const int gi = row0 + wm * WM + v * 4 * WTM + lm * 4;
#if SHIFTS   // (the edge loop's tests below, as one flag)
                        const bool in_c = col_in && gi >= row_first;
#else
                        const bool in_c = col_in;
#endif
                        float* const o = old[c - c0] + v * 4;
                        if (in_c && gi + 3 < m) {
                            if (pass == 0) {
                                const float4 q = *reinterpret_cast<const float4*>(ccol + gi);
                                o[0] = q.x, o[1] = q.y, o[2] = q.z, o[3] = q.w;
                            } else {
                                *reinterpret_cast<float4*>(ccol + gi) = make_float4(
                                    fmaf(beta, o[0], alpha * acc[v * 4][c]),
                                    fmaf(beta, o[1], alpha * acc[v * 4 + 1][c]),
                                    fmaf(beta, o[2], alpha * acc[v * 4 + 2][c]),
                                    fmaf(beta, o[3], alpha * acc[v * 4 + 3][c]));
                            }
                            continue;
                        }
#pragma unroll
                        for (int rb = 0; rb < 4; ++rb) {
                            if (!in_c || gi + rb >= m) continue;
                            if (pass == 0)
                                o[rb] = ccol[gi + rb];
                            else
                                ccol[gi + rb] = fmaf(beta, o[rb], alpha * acc[v * 4 + rb][c]);
                        }
                    }
                }
        }
    } else
#endif
#pragma unroll
    for (int u = 0; u < TN / 4; ++u) {
#pragma unroll
        for (int cb = 0; cb < 4; ++cb) {
            const int gj = col0 + wn * WN + u * 4 * WTN + ln * 4 + cb;
            if (gj >= n) continue;
#if SHIFTS
            if (gj < col_first) continue;
#endif
            REAL* ccol = C + (size_t)gj * ldc;
#pragma unroll
            for (int v = 0; v < TM / 4; ++v) {
                const int gi = row0 + wm * WM + v * 4 * WTM + lm * 4;
                const int c = u * 4 + cb;
#if SHIFTS   // (gi and row_first are multiples of 4: the four rows are all stored or none)
                if (gi < row_first) continue;
#endif
#if ALIGNED   // (the split-K workspace is 16-byte aligned too)
                if (gi + 3 < m) {
                    store4(ccol + gi, make_float4(acc[v * 4 + 0][c], acc[v * 4 + 1][c],
                                                  acc[v * 4 + 2][c], acc[v * 4 + 3][c]),
                           alpha, beta);
                    continue;
                }
#endif
#pragma unroll
                for (int rb = 0; rb < 4; ++rb)
                    if (gi + rb < m) store_c(ccol + gi + rb, acc[v * 4 + rb][c], alpha, beta);
            }
        }
    }
#if STREAM_K
    if (sk_after[1] < 0) break;
    it = sk_after[1];
    }   // the walk over tiles
#endif
}
