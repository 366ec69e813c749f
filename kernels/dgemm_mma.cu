// dgemm_mma: DGEMM on the FP64 tensor cores of sm_90 (H100) with warp-level mma.sync.
// C = alpha * op(A) * op(B) + beta * C, float64 only, column-major BLAS semantics, any m, n,
// k >= 1, all four transposes, any leading dimensions (ABI in common.cuh).
//
// Technique
//   * One BM x BN tile of C per block; (BM/WM) x (BN/WN) warps, each owning a WM x WN warp
//     tile made of (WM/16) x (WN/8) accumulators of mma.sync.aligned.m16n8k{4,8,16}.row.col
//     .f64 (MMA_K selects the shape; all three run at the full DMMA rate on sm_90; the half-rate
//     m8n8k4 is not used).
//   * k is walked in BK-deep tiles through a STAGES-deep ring of shared-memory buffers filled
//     with cp.async (16-byte copies of 2 doubles when ALIGNED, else 8-byte copies); one
//     __syncthreads per k-tile. Out-of-range elements are zero-filled by cp.async (src-size
//     0 or 8 bytes), so edge tiles in m, n and k need no special path.
//   * ADVANCE=1: each operand's copies walk a cursor set up once per block (source pointer and
//     steps, each copy's m/n-edge size, shared addresses) and moved one k-tile on per load,
//     instead of load_tile deriving every address, byte count and edge test from k0 for each
//     k-tile; a k-tile wholly inside both operands is copied with no tests, the others (m, n or
//     k edge) test each copy. The same copies into the same slots: the same bits.
//     STEADY_LOOP (ALIGNED by default): while the k-tile to load lies wholly inside both
//     operands, a loop of its own whose body has no branch, so that ptxas spreads the copies
//     and cursor steps among the mma (Nsight Compute, H200, 8192^3: the branch between whole
//     and edge copies made them a block of their own, whose waits, and the barrier waits they
//     caused, were our loop's main excess over cuBLAS's); then the general loop for the last
//     loads. The same copies in the same order: the same bits. Blocks on C's edge run it too
//     where their tile shifts back inside C (SHIFT_EDGE) or their copies along m or n clamp
//     (CLAMP_EDGE); each element is the same sum in the same order wherever it sits in a
//     tile, and nothing past m or n is stored: the same bits.
//   * ROW_RELOAD=1 (a development switch, off): each mma row's fragment reloaded in place once
//     its row's mma have issued, instead of a second set of row fragments (cuBLAS's DGEMM
//     reloads that way); the same values into the same mma. Timed (bench_kernels
//     --dmma-steady); its GPU test (bit-equal to two fragment sets) passed on the H200
//     (2026-11-28, 18 of 18); outside autotuning until a twin rule for it is measured.
//   * Register fragments are double-buffered across k-steps and across k-tiles (the barrier sits
//     before the last k-step of a tile, whose mma cover the first fragment reads of the next
//     tile), as in CUTLASS's multistage mainloop.
//   * Shared layout per operand, chosen by the operand's unit-stride dimension so that cp.async
//     always copies along it:
//       k-contiguous in global (A with TRANS_A=1, B with TRANS_B=0): smem [mn][k], row stride
//         BK+4 doubles (4 * odd), so the 32 fragment reads of a warp (8 rows g x 4 columns t)
//         hit 32 distinct 8-byte bank pairs;
//       mn-contiguous in global (A with TRANS_A=0, B with TRANS_B=1): smem [k][mn], row stride
//         BM+16 (resp. BN+16) doubles (= 16 mod 32) and element mn stored at mn ^ (4*(k&3))
//         (an XOR of 16-byte granules inside each 16-double block), again 32 distinct bank
//         pairs per fragment read, and the 16-byte cp.async granules stay contiguous.
//     RING_PAD=0 drops both pads (20% less shared memory; a 64 x 64 tile at BK 16 fits four
//     stages in 64 KiB at three blocks an SM, as cuBLAS's does, though four ran 8% slower than
//     three here): mn-contiguous rows of BM (BN) doubles read the same bank
//     pairs as rows of BM + 16 (both 0 mod 16; the XOR spreads them), and a k-contiguous row
//     of BK doubles holds element k at k ^ KSWZ(x), x its row: 4 (x & 3) moves the 4-double
//     blocks (whole 16-byte granules) of rows g = 0..3 of a half-warp's read apart, so its 16
//     lanes again hit 16 distinct pairs. The XOR varies with the k-step's offset, which an
//     unpadded row cannot fold into the load's immediate: each lane keeps the offset of each
//     of a row's four 4-double blocks (three registers more an operand read k-contiguous).
//     The same values in the same fragments: the same bits. Nsight Compute (H200, 2026-12-01,
//     6904x698x3920 NN, the 64 x 64 medium tile): bank conflicts were 0.1-0.2% of the shared
//     loads' wavefronts either way; the cp.async stores into the ring took 46.6M wavefronts
//     unpadded against 60.5M padded (a padded k-contiguous row of 160 bytes starts off a
//     128-byte line), and the kernel 678 us against 684.
//   * Fragment layouts (PTX ISA "Matrix fragments for mma.m16n8k4/k8/k16" with .f64; g = lane/4,
//     t = lane%4): A value a[v0 + 2*v1] = A(g + 8*v0, t + 4*v1); B value b[v] = B(t + 4*v, g);
//     C value c[2*h + e] = C(g + 8*h, 2*t + e).
//   * Group-M rasterisation of the block index (GROUP_M block-rows walked together) for L2 reuse.
//   * Optional split-K: blockIdx.z takes a contiguous range of k-tiles and writes its raw partial
//     sums to the launcher's workspace, which splitk_reduce (common.cuh) adds in a fixed order:
//     deterministic. Otherwise an alpha/beta epilogue that never reads C when beta == 0.
//     SPLITK_FUSED=1 does that sum in the same launch (splitk_finish): one launch instead of
//     two, which a call bound by its host's launches feels most.
//   * Optional stream-K (STREAM_K blocks per SM, streamk.cuh): streamk_gemm's persistent blocks
//     walk the tiles' k-tiles in even shares, whole tiles finished by the usual epilogue and
//     split ones left as raw partial sums in the workspace, which streamk_fixup adds in k
//     order: deterministic, for shapes whose tiles fill the SMs' block slots badly.
//   * Epilogue (EPILOGUE): 0 stores each accumulator straight from its fragment, 8 bytes a lane,
//     a warp's access covering 8 rows (64 bytes, half a 128-byte line) of each of 4 columns;
//     1 stages each warp's tile, 8 columns (one n8 mma tile) at a time, in the operand ring
//     (free once the main loop is done) and writes it down the columns: with ALIGNED, 16 bytes
//     a lane, so a warp access covers whole 128-byte lines (of C, or of the workspace under
//     split-K) with half the store (and, for beta != 0, load) instructions; without, 8 bytes a
//     lane, 256 contiguous bytes. Both apply the same fma to the same sums: bit-equal results.
//   * SWAP_AB=1: the mma computes C's transpose (B's tile in its A role, A's in its B role, read
//     by the same accessors), so c[2*h + e] = C(2*t + e, g + 8*h): a lane's pair runs down one
//     of C's columns and the interior epilogue stores it as 16 bytes where ALIGNED. Each
//     element is the same sum of the same products in the same k order: bit-equal results.
#include <type_traits>

#include "common.cuh"

#if DTYPE != 1
#error "dgemm_mma.cu supports DTYPE=1 (float64) only"
#endif

#ifndef BM
#define BM 128         // rows of C per block
#endif
#ifndef BN
#define BN 128         // columns of C per block
#endif
#ifndef WM
#define WM 64          // rows of C per warp (multiple of 16)
#endif
#ifndef WN
#define WN 32          // columns of C per warp (multiple of 16)
#endif
#ifndef BK
#define BK 16          // depth of one k-tile staged in shared memory (multiple of 8 and of MMA_K)
#endif
#ifndef MMA_K
#define MMA_K 4        // k of the mma shape: 4 (m16n8k4), 8 (m16n8k8) or 16 (m16n8k16)
#endif
#ifndef STAGES
#define STAGES 3       // depth of the cp.async shared-memory pipeline (>= 2)
#endif
#ifndef GROUP_M
#define GROUP_M 8      // block-rows rasterised together for L2 reuse (1: plain grid order)
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1   // minimum resident blocks per SM (__launch_bounds__)
#endif
#ifndef EPILOGUE
#define EPILOGUE 0     // C stores: 0 straight from the fragments; 1 staged in shared memory, along m
#endif
#ifndef SPLITK_FUSED
#define SPLITK_FUSED 0 // split-K sums: 1 by the tile's last k-slice block; 0 by splitk_reduce
#endif
#ifndef ADVANCE
#define ADVANCE 0      // 1: k-tile copies walk cursors set up once per block (0: load_tile's)
#endif
#ifndef STEADY_LOOP   // ADVANCE=1: 1 runs the k-tiles wholly inside both operands in a loop of
#define STEADY_LOOP ALIGNED   // their own (not unaligned: ptxas spilled 2/SM m16n8k8 tiles there)
#endif
// SHIFT_EDGE=1 (with the steady loop, not stream-K): a block on C's last, partial row (column)
// of tiles moves its tile back to end at m (n), so that the tile lies inside C and runs the
// steady loop; it stores only the rows (columns) from its own tile's origin on, which the
// block before it does not. Rows shift only where m is even (16-byte copies and stores stay
// aligned), columns where n is (where B is copied along n). Stream-K is left out: its fixup
// maps workspace slots to tiles unshifted.
#ifndef SHIFT_EDGE
#define SHIFT_EDGE 1
#endif
// CLAMP_EDGE=1 (with the steady loop, not stream-K): where a tile cannot shift (m below one
// tile, or odd m) but at least half of it lies inside m, an operand copied along m (n) clamps
// instead. A thread copies all its k-rows at one m (n) position, so in a block on C's edge a
// thread past m copies a vector inside m instead (values only rows past m use; CLAMP_SPREAD),
// and a thread whose 16-byte vector straddles m copies it whole: one element past a column's
// end, inside ld (even where aligned) except in the operand's last column, so the k-tile
// holding that column is copied by the tested path. (simt clamped such operands even where
// they could shift; here the shift ran faster where both apply: bench_kernels --dmma-shift,
// H200, 2026-11-29; simt now shifts first too.)
#ifndef CLAMP_EDGE
#define CLAMP_EDGE 1
#endif
// The clamp serves tiles with at least half their rows (columns) inside m (n): at 65x8247x249
// (64 x 64 tiles, one row of the second inside) the clamped blocks' reads past m made the
// kernel 30% slower than the general loop, which reads nothing there; with 35-52 rows of 64
// (23 of 32) inside it took 12-24% less time (bench_kernels --dmma-clamp, H200, 2026-11-29
// 08:58 UTC). CLAMP_SPREAD=1: a clamped thread copies the vector at its own position modulo
// the tile's whole vectors inside m (n), so that a warp's lanes read distinct addresses; 0:
// the tile's first vector, which every clamped lane then reads (at 99x354x8494 the kernel
// took 34% longer).
#ifndef CLAMP_SPREAD
#define CLAMP_SPREAD 1
#endif
#ifndef ROW_RELOAD
#define ROW_RELOAD 0   // 1: each row fragment reloaded in place once its row's mma issued (0: two sets)
#endif
#ifndef SMALL_COPIES
#define SMALL_COPIES 0 // 1: 8-byte copies through L1 where aligned (0: 16-byte ones)
#endif
#ifndef STREAM_K
#define STREAM_K 0     // persistent stream-K blocks per SM (0: one block per tile, data-parallel)
#endif
#ifndef RING_PAD
#define RING_PAD 1     // 1: smem rows padded (BK + 4, BM + 16, BN + 16); 0: unpadded, swizzled
#endif
#ifndef SWAP_AB
#define SWAP_AB 0      // 1: the mma computes C's transpose (B's tile in its A role): 16-byte C stores
#endif
// OLD_FIRST=1: at beta != 0 a tile wholly inside C loads the old values of OLD_GROUP of the
// warp's mma rows (SWAP_AB, ALIGNED: 16-byte pairs) or columns (else) before it stores any of
// them, and a tile on C's edge those of EDGE_GROUP mma columns that lie inside C. store_c's
// load, fma and store for each element in turn let ptxas keep only one column's four loads in
// flight (cuobjdump, nvcc 13.0, sm_90a): a round trip to memory for each of a thread's 16
// columns. The same fma of the same values: the same bits (same_bits.py at beta 0 and 0.5,
// H200, 2026-11-29). At beta 1 the table's configs took 8-19% less time at k of 1-208
// (bench_kernels --old-first, H200, 2026-11-29 11:41 UTC: 12902x2832x54 0.330 -> 0.268 ms,
// cuBLAS 0.294).
#ifndef OLD_FIRST
#define OLD_FIRST 1
#endif
// Old doubles in flight a thread, by the registers __launch_bounds__ leaves it (65536 over
// THREADS * MIN_BLOCKS, at most 255): 32 at 255, 16 at 128, 8 below. Of the shipped configs
// and their twins, those whose groups these caps change all split k (no C is read there), so
// every shipped kernel is the one GPU-tested with 32 and 16 (2026-11-29).
#define OLD_VALUES (THREADS * MIN_BLOCKS <= 256 ? 32 : THREADS * MIN_BLOCKS <= 512 ? 16 : 8)
// On C's edge, the old values inside C of EDGE_GROUP of the mma columns j (as the accumulators
// are numbered, SWAP_AB or not) before their stores, each with its address: 16 (32 spilled in
// the 64 x 128 m16n8k8 tiles), and under a 128-register cap 16 beside 16 accumulators a
// thread but 8 beside more (16 spilled 8-24 bytes beside the 32 of sixteen 32 x 32 warps).
#define EDGE_VALUES (THREADS * MIN_BLOCKS <= 256 ? 16 : MT * NT * 4 <= 16 ? (OLD_VALUES < 16 ? \
                     OLD_VALUES : 16) : OLD_VALUES / 2)
#define EDGE_GROUP (MT * 4 * NT <= EDGE_VALUES ? NT : \
                    (EDGE_VALUES / (MT * 4) > 0 ? EDGE_VALUES / (MT * 4) : 1))
#if SWAP_AB   // (MT * 2 rows a group here, 2 * NT doubles each)
#define OLD_GROUP (MT * 2 * NT * 2 <= OLD_VALUES ? MT : \
                   (OLD_VALUES / (2 * NT * 2) > 0 ? OLD_VALUES / (2 * NT * 2) : 1))
#else         // (NT columns, 2 * MT * 2 each)
#define OLD_GROUP (NT * 2 * MT * 2 <= OLD_VALUES ? NT : \
                   (OLD_VALUES / (2 * MT * 2) > 0 ? OLD_VALUES / (2 * MT * 2) : 1))
#endif
// Derived (passed by tunedgemm/families/dmma.py; defaults here match the defaults above).
#ifndef THREADS
#define THREADS ((BM / WM) * (BN / WN) * 32)
#endif
#define WARPS_M (BM / WM)          // warps along m
#if SWAP_AB
#define MT (WN / 16)               // mma tiles per warp along the mma's rows (n)
#define NT (WM / 8)                // mma tiles per warp along the mma's columns (m)
#else
#define MT (WM / 16)               // mma tiles per warp along the mma's rows (m)
#define NT (WN / 8)                // mma tiles per warp along the mma's columns (n)
#endif
// Where accumulator c[2h + e] of mma tile (i, j) lies in the warp's tile (g = lane/4, t = lane%4):
// the mma's row 16i + 8h + g and column 8j + 2t + e, C's row and column or, with SWAP_AB, its
// column and row, so that a lane's pair e = 0, 1 runs down one of C's columns.
#if SWAP_AB
#define ACC_ROW(i, j, h, e) (8 * (j) + 2 * t + (e))
#define ACC_COL(i, j, h, e) (16 * (i) + 8 * (h) + g)
#else
#define ACC_ROW(i, j, h, e) (16 * (i) + 8 * (h) + g)
#define ACC_COL(i, j, h, e) (8 * (j) + 2 * t + (e))
#endif
#define KSTEPS (BK / MMA_K)        // mma k-steps per k-tile
#define A_FRAG (MMA_K / 2)         // doubles of A per thread per mma
#define B_FRAG (MMA_K / 4)         // doubles of B per thread per mma
#if SMALL_COPIES  // 8-byte copies through L1 (.ca), as the unaligned kernel makes, aligned or not
#define VEC 1
#else
#define VEC (ALIGNED ? 2 : 1)      // doubles per cp.async
#endif
#if RING_PAD
#define LDK (BK + 4)               // row stride of a k-contiguous smem tile
#define LDA_MN (BM + 16)           // row stride of an m-contiguous smem tile of A
#define LDB_MN (BN + 16)           // row stride of an n-contiguous smem tile of B
#define KPOS(x, k) k               // k-contiguous element (x, k) at x * LDK + KPOS(x, k)
#else
#define LDK BK
#define LDA_MN BM
#define LDB_MN BN
#define KSWZ(x) (((x) & 3) << 2)
#define KPOS(x, k) ((k) ^ KSWZ(x))
#endif
#define A_KCONTIG (TRANS_A)        // A's unit stride runs along k
#define B_KCONTIG (!TRANS_B)       // B's unit stride runs along k
#define A_STAGE (A_KCONTIG ? BM * LDK : BK * LDA_MN)   // doubles per stage of A
#define B_STAGE (B_KCONTIG ? BN * LDK : BK * LDB_MN)   // doubles per stage of B
#define LDE (WM + 2)               // column stride of a warp's staging buffer (EPILOGUE=1)
#define EVEC (ALIGNED ? 2 : 1)     // doubles per global access of C in the staged epilogue
#define STEADY (ADVANCE && STEADY_LOOP)
#define SHIFTS (STEADY && SHIFT_EDGE && !STREAM_K)
#define CLAMPS (STEADY && CLAMP_EDGE && !STREAM_K)

#if (BM % WM) || (BN % WN) || (WM % 16) || (WN % 16) || (BK % MMA_K) || (BK % 8)
#error "tile sizes violate the constraints of dgemm_mma"
#endif
#if SWAP_AB ? MT % OLD_GROUP : NT % OLD_GROUP
#error "OLD_GROUP must divide the warp's mma rows (SWAP_AB) or columns"
#endif
#if NT % EDGE_GROUP
#error "EDGE_GROUP must divide the warp's mma columns"
#endif
#if MMA_K != 4 && MMA_K != 8 && MMA_K != 16
#error "MMA_K must be 4, 8 or 16"
#endif
#if !RING_PAD && BK % 16
#error "RING_PAD=0 swizzles 16-double row blocks: BK a multiple of 16"
#endif
#if STAGES < 2
#error "STAGES must be at least 2"
#endif
#if EPILOGUE != 0 && EPILOGUE != 1
#error "EPILOGUE must be 0 or 1"
#endif
#if SPLITK_FUSED && (SPLIT_K == 1 || EPILOGUE != 0)
#error "SPLITK_FUSED needs SPLIT_K > 1 and EPILOGUE 0"
#endif
#if SWAP_AB && EPILOGUE != 0
#error "SWAP_AB stores from the fragments: EPILOGUE 0"
#endif
#if STREAM_K
#if SPLIT_K != 1 || EPILOGUE != 0
#error "STREAM_K replaces split-K and stores from the fragments: SPLIT_K 1 and EPILOGUE 0"
#endif
#include "streamk.cuh"

// A split tile's raw partial sums into its slot (column-major, leading dimension BM), the whole
// BM x BN tile (rows and columns past m and n hold zeros: the loads zero-fill them), each
// lane's elements where the epilogue below stores them in C.
__device__ __forceinline__ void store_partial(double* slot, const double (&acc)[MT][NT][4], int wm0,
                                              int wn0, int g, int t)
{
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j)
#pragma unroll
            for (int h = 0; h < 2; ++h)
#pragma unroll
                for (int e = 0; e < 2; ++e)
                    slot[(wm0 + ACC_ROW(i, j, h, e)) + (size_t)(wn0 + ACC_COL(i, j, h, e)) * BM] =
                        acc[i][j][2 * h + e];
}
#endif

// Stage one BX x BK slice of an operand G (extent X along mn, K along k) into shared memory.
// G(x, p) = KCONTIG ? G[p + x * ld] : G[x + p * ld]; x0/k0 are the slice's origin.
template <int KCONTIG, int BX, int LDMN>
__device__ __forceinline__ void load_tile(double* __restrict__ s, const double* __restrict__ G,
                                          int ld, int x0, int X, int k0, int K, int tid)
{
    if (KCONTIG) {
        constexpr int CPR = BK / VEC;              // copies per smem row (one row per x)
        constexpr int TOTAL = BX * CPR;
        constexpr int ITERS = (TOTAL + THREADS - 1) / THREADS;
        if (THREADS % CPR == 0) {
            // Every pass of the block covers RSTEP whole rows: k offset fixed per thread.
            constexpr int RSTEP = THREADS / CPR;
            const int tx = tid / CPR, tp = (tid % CPR) * VEC;
            const int rem = K - (k0 + tp);
            const int kbytes = rem > 0 ? 8 * (rem < VEC ? rem : VEC) : 0;
            const double* src = G + (size_t)(x0 + tx) * ld + (k0 + tp);
            const size_t step = (size_t)RSTEP * ld;
#if !RING_PAD
            static_assert(!KCONTIG || RSTEP % 4 == 0, "a thread's rows share KSWZ");
#endif
            double* dst = s + tx * LDK + KPOS(tx, tp);
#pragma unroll
            for (int it = 0; it < ITERS; ++it) {
                const int x = tx + it * RSTEP;
                if (TOTAL % THREADS != 0 && x >= BX) break;
                const int bytes = (x0 + x < X) ? kbytes : 0;
                cp_async<8 * VEC>(dst + it * RSTEP * LDK, bytes ? src : G, bytes);
                src += step;
            }
        } else {
#pragma unroll
            for (int it = 0; it < ITERS; ++it) {
                const int idx = tid + it * THREADS;
                if (TOTAL % THREADS != 0 && idx >= TOTAL) break;
                const int x = idx / CPR, p = (idx % CPR) * VEC;
                const int gx = x0 + x, gp = k0 + p;
                const int rem = K - gp;
                const int bytes = (gx < X && rem > 0) ? 8 * (rem < VEC ? rem : VEC) : 0;
                const double* src = bytes ? G + (size_t)gp + (size_t)gx * ld : G;
                cp_async<8 * VEC>(s + x * LDK + KPOS(x, p), src, bytes);
            }
        }
    } else {
        constexpr int CPR = BX / VEC;              // copies per smem row (one row per k)
        constexpr int TOTAL = BK * CPR;
        constexpr int ITERS = (TOTAL + THREADS - 1) / THREADS;
        if (THREADS % CPR == 0) {
            // Every pass of the block covers PSTEP whole k-rows: mn offset fixed per thread.
            constexpr int PSTEP = THREADS / CPR;
            const int tp = tid / CPR, tx = (tid % CPR) * VEC;
            const int rem = X - (x0 + tx);
            const int xbytes = rem > 0 ? 8 * (rem < VEC ? rem : VEC) : 0;
            const double* src = G + (x0 + tx) + (size_t)(k0 + tp) * ld;
            const size_t step = (size_t)PSTEP * ld;
#pragma unroll
            for (int it = 0; it < ITERS; ++it) {
                const int p = tp + it * PSTEP;
                if (TOTAL % THREADS != 0 && p >= BK) break;
                const int bytes = (k0 + p < K) ? xbytes : 0;
                cp_async<8 * VEC>(s + p * LDMN + (tx ^ ((p & 3) << 2)), bytes ? src : G, bytes);
                src += step;
            }
        } else {
#pragma unroll
            for (int it = 0; it < ITERS; ++it) {
                const int idx = tid + it * THREADS;
                if (TOTAL % THREADS != 0 && idx >= TOTAL) break;
                const int p = idx / CPR, x = (idx % CPR) * VEC;
                const int gx = x0 + x, gp = k0 + p;
                const int rem = X - gx;
                const int bytes = (gp < K && rem > 0) ? 8 * (rem < VEC ? rem : VEC) : 0;
                const double* src = bytes ? G + (size_t)gx + (size_t)gp * ld : G;
                cp_async<8 * VEC>(s + p * LDMN + (x ^ ((p & 3) << 2)), src, bytes);
            }
        }
    }
}

#if ADVANCE
// ADVANCE=1: a copy to a shared address computed once per block (cp_async converts a generic
// pointer, which ptxas redid per k-tile). FULL: all 8 * VEC bytes lie inside G, so no src-size
// is named and ptxas issues no zero-fill arithmetic; else src_bytes of them are read (0: none).
#if VEC == 2   // 16 bytes bypass L1 (.cg) and 8 may not, as in cp_async
#define CP_ASYNC_AT "cp.async.cg.shared.global [%0], [%1], 16"
#else
#define CP_ASYNC_AT "cp.async.ca.shared.global [%0], [%1], 8"
#endif
template <bool FULL>
__device__ __forceinline__ void cp_async_at(unsigned s, const double* g, int src_bytes)
{
    if (FULL)
        asm volatile(CP_ASYNC_AT ";\n" :: "r"(s), "l"(g) : "memory");
    else
        asm volatile(CP_ASYNC_AT ", %2;\n" :: "r"(s), "l"(g), "r"(src_bytes) : "memory");
}

// ADVANCE=1: load_tile's copies of one operand from a cursor set up once per block (start, at
// the block's first k-tile) and moved one k-tile on by each copy, which takes the next k-tile
// in order (CUTLASS's predicated tile iterators do the same). load_tile derives every copy's
// source (a 64-bit product of ld), byte count, edge tests and shared address from k0 anew for
// each k-tile: Nsight Compute (H100) counted 5.07 instructions issued per DMMA in the
// 4096^3 NN config, against cuBLAS's 3.2, mostly that. Here the thread's offsets, its copies'
// mn-edge sizes (k-invariant), the shared addresses and the steps are found once; a k-tile
// wholly inside both operands (every one but the last, in a block clear of the m and n edges)
// is copied with no tests (copy_whole), and only the others test each copy (copy_edge),
// against kleft, the k left from the k-tile's origin, which the kernel keeps for both
// operands. The same copies as load_tile (the same bytes into the same shared slots; a zero
// src-size reads from G itself): the same bits.
template <int KCONTIG, int BX, int LDMN>
struct TileCursor {
    // load_tile's geometry: copies per smem row, in all and per thread, and whether each pass
    // of the block covers whole rows (its first branch; then a thread's copies are STEP apart).
    static constexpr int CPR = KCONTIG ? BK / VEC : BX / VEC;
    static constexpr int TOTAL = (KCONTIG ? BX : BK) * CPR;
    static constexpr int ITERS = (TOTAL + THREADS - 1) / THREADS;
    static constexpr bool ROWS = THREADS % CPR == 0;
    static constexpr int STEP = ROWS ? THREADS / CPR : 1;      // load_tile's RSTEP or PSTEP
    static constexpr int ROW_LD = KCONTIG ? LDK : LDMN;        // doubles per smem row
    static constexpr int STAGE = KCONTIG ? BX * LDK : BK * LDMN;
    // mn-contiguous copy it lands at p * LDMN + (x ^ ((p & 3) << 2)), p = p0 + it * STEP:
    // copies R apart (R * STEP a multiple of 4) share the swizzle, so their addresses differ by
    // a constant.
    static constexpr int RR = KCONTIG || STEP % 4 == 0 ? 1 : STEP % 2 == 0 ? 2 : 4;
    static constexpr int R = RR < ITERS ? RR : ITERS;
    static_assert(ITERS <= 32, "copy_edge keeps one bit per copy of a thread in `in`");

    const double* g;     // this thread's first copy in the next k-tile
    size_t step;         // doubles from one copy of the thread to its next (STEP rows on)
    size_t adv;          // doubles from one k-tile to the next
    unsigned dst[R];     // shared address of copy r (< R) in stage 0
    int row;             // smem row of the thread's first copy (KCONTIG: x, else p)
    int kofs;            // the thread's offset along k inside a k-tile (p of its first copy)
    int xbytes;          // mn-contiguous: bytes of each copy inside mn (k-invariant)
    unsigned in;         // k-contiguous: bit it set when copy it's row lies inside mn
    bool inside;         // all BX rows of the block's slice inside mn, or clamped (block-uniform)
#if CLAMPS
    int straddle;        // 1 where a vector straddles X (the last k column's k-tile is tested)
#else
    static constexpr int straddle = 0;
#endif
    // Not ROWS (no declared config: THREADS and CPR are powers of two there, CPR <= THREADS):
    // a copy's x and p both follow tid + it * THREADS, so load_tile itself does each k-tile.
    double* s0;
    int ld, x0, X, K;

    __device__ __forceinline__ void start(double* s, const double* __restrict__ G, int ld_,
                                          int x0_, int X_, int k0, int K_, int tid)
    {
        s0 = s, ld = ld_, x0 = x0_, X = X_, K = K_;
        inside = x0_ + BX <= X_;
#if CLAMPS
        straddle = 0;
#endif
        if (!ROWS) return;
        const unsigned sbase = static_cast<unsigned>(__cvta_generic_to_shared(s));
        step = (size_t)STEP * ld_;
        if (KCONTIG) {   // load_tile's tx, tp
            const int tx = tid / CPR, tp = (tid % CPR) * VEC;
            row = tx, kofs = tp;
            g = G + (size_t)(x0_ + tx) * ld_ + (k0 + tp);
            adv = BK;
#if !RING_PAD
            static_assert(!KCONTIG || STEP % 4 == 0, "a thread's rows share KSWZ");
#endif
            dst[0] = sbase + 8 * (tx * LDK + KPOS(tx, tp));
            in = 0;
#pragma unroll
            for (int it = 0; it < ITERS; ++it)
                in |= (x0_ + tx + it * STEP < X_ ? 1u : 0u) << it;
        } else {         // load_tile's tp, tx
            const int tp = tid / CPR, tx = (tid % CPR) * VEC;
            row = tp, kofs = tp;
            const int rem = X_ - (x0_ + tx);
            xbytes = rem > 0 ? 8 * (rem < VEC ? rem : VEC) : 0;
#if CLAMPS   // (every copy of this thread lies at x0_ + tx)
            const int whole = CLAMP_SPREAD ? (X_ - x0_) / VEC * VEC : 0;
            const int xc = rem > 0 ? tx : whole > 0 ? tx % whole : 0;
            g = G + (x0_ + xc) + (size_t)(k0 + tp) * ld_;
            if (!inside && 2 * (X_ - x0_) >= BX) {   // (else copy_edge reads nothing past X)
                straddle = X_ % VEC != 0;
                inside = true;
            }
#else
            g = G + (x0_ + tx) + (size_t)(k0 + tp) * ld_;
#endif
            adv = (size_t)BK * ld_;
#pragma unroll
            for (int r = 0; r < R; ++r) {
                const int p = tp + r * STEP;
                dst[r] = sbase + 8 * (p * LDMN + (tx ^ ((p & 3) << 2)));
            }
        }
    }

    // Copies past the slice when the block's copies do not split evenly (load_tile's break).
    __device__ __forceinline__ bool past(int it) const
    {
        return TOTAL % THREADS != 0 && row + it * STEP >= (KCONTIG ? BX : BK);
    }

    // The block's copies may run untested (copy_whole) while the k-tile lies inside k.
    __device__ __forceinline__ bool steady() const { return ROWS && inside; }

    // The next k-tile is wholly inside G (kleft: K minus its origin), copied by copy_whole
    // (a straddling vector's k-tile also short of the last k column).
    __device__ __forceinline__ bool whole(int kleft) const
    {
        return steady() && kleft >= BK + straddle;
    }

    // The next k-tile into stage w, wholly inside G (whole()): every copy full, no tests.
    __device__ __forceinline__ void copy_whole(int w)
    {
        const unsigned s = w * (8 * STAGE);
        const double* src = g;
#pragma unroll
        for (int it = 0; it < ITERS; ++it) {
            if (past(it)) break;
            cp_async_at<true>(s + dst[it % R] + 8 * (it / R) * R * STEP * ROW_LD, src, 8 * VEC);
            src += step;
        }
        g += adv;
    }

    // The next k-tile into stage w, any k-tile: each copy's bytes from the mn and k edges.
    __device__ __forceinline__ void copy_edge(int w, const double* __restrict__ G, int kleft)
    {
        if (!ROWS) {
            load_tile<KCONTIG, BX, LDMN>(s0 + w * STAGE, G, ld, x0, X, K - kleft, K, threadIdx.x);
            return;
        }
        int kbytes = 0;   // k-contiguous: bytes of each copy inside k
        if (KCONTIG) {
            const int rem = kleft - kofs;
            kbytes = rem > 0 ? 8 * (rem < VEC ? rem : VEC) : 0;
        }
        const unsigned s = w * (8 * STAGE);
        const double* src = g;
        // Rolled over groups of R copies: unrolled, ptxas predicated this path into the main
        // loop beside copy_whole's, so that every k-tile issued both; R unrolled, dst[r] stays
        // in registers (indexed at run time, it went to local memory).
#pragma unroll 1
        for (int q = 0; q < (ITERS + R - 1) / R; ++q) {
#pragma unroll
            for (int r = 0; r < R; ++r) {
                const int it = q * R + r;
                if (it >= ITERS || past(it)) break;
                const int bytes = KCONTIG ? ((in >> it & 1u) ? kbytes : 0)
                                          : (kofs + it * STEP < kleft ? xbytes : 0);
                cp_async_at<false>(s + dst[r] + 8 * q * R * STEP * ROW_LD, bytes ? src : G, bytes);
                src += step;
            }
        }
        g += adv;
    }
};
#endif

#if SWAP_AB
// Rows r and r + 1 of one column of C (c at row r, r even), as store_c stores each: with
// ALIGNED (C and ldc 16-byte aligned, or the split-K workspace) one 16-byte access.
__device__ __forceinline__ void store_c_pair(double* c, double acc0, double acc1, double alpha,
                                             double beta)
{
#if ALIGNED
#if SPLIT_K > 1
    *reinterpret_cast<double2*>(c) = make_double2(acc0, acc1);
#else
    double2 out;
    if (beta == 0.0) {
        out = make_double2(fma(alpha, acc0, 0.0), fma(alpha, acc1, 0.0));
    } else {
        const double2 old = *reinterpret_cast<const double2*>(c);
        out = make_double2(fma(beta, old.x, alpha * acc0), fma(beta, old.y, alpha * acc1));
    }
    *reinterpret_cast<double2*>(c) = out;
#endif
#else
    store_c(c, acc0, alpha, beta);
    store_c(c + 1, acc1, alpha, beta);
#endif
}
#endif

__device__ __forceinline__ void mma_f64(double (&d)[4], const double (&a)[A_FRAG], const double (&b)[B_FRAG])
{
#if MMA_K == 4
    asm("mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64 "
        "{%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};\n"
        : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
        : "d"(a[0]), "d"(a[1]), "d"(b[0]));
#elif MMA_K == 8
    asm("mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 "
        "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
        : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(b[0]), "d"(b[1]));
#else
    asm("mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64 "
        "{%0,%1,%2,%3}, {%4,%5,%6,%7,%8,%9,%10,%11}, {%12,%13,%14,%15}, {%0,%1,%2,%3};\n"
        : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
        : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(a[4]), "d"(a[5]), "d"(a[6]), "d"(a[7]),
          "d"(b[0]), "d"(b[1]), "d"(b[2]), "d"(b[3]));
#endif
}

#if EPILOGUE == 1
// One element of the staged epilogue, as store_c computes it (the same bits): alpha * acc +
// beta * old, old unused when beta == 0; under split-K the raw sum.
__device__ __forceinline__ double epilogue_value(double acc, double old, double alpha, double beta)
{
#if SPLIT_K > 1
    return acc;
#else
    return beta == 0.0 ? fma(alpha, acc, 0.0) : fma(beta, old, alpha * acc);
#endif
}
#endif

#if SPLITK_FUSED
// SPLITK_FUSED=1: the k-slice blocks of a tile each take a ticket on the tile's flag once their
// partial sum is in the workspace (W, leading dimension ldw, slice z at W + z * ldw * n); the
// block that draws the last one adds the slices in the fixed order 0..SPLIT_K-1 and applies
// the epilogue to the caller's C, element by element as splitk_reduce does (the same bits),
// and puts the flag back to 0. No block waits on another. The flags (one int per tile, tile
// bm + bn * gridDim.x) belong to one stream and are 0 between its launches
// (tunedgemm/launch.py: splitk_flags).
__device__ __forceinline__ void splitk_finish(const REAL* W, int ldw, int m, int n, int row0,
                                              int col0, int bm, int bn, REAL alpha, REAL beta,
                                              REAL* C, int ldc, int* flags)
{
    __shared__ int last;
    __threadfence();   // this block's partial sums, visible to the block that sums them
    __syncthreads();
    if (threadIdx.x == 0) {
        int* const flag = flags + bm + bn * gridDim.x;
        last = atomicAdd(flag, 1) == SPLIT_K - 1;
        if (last) *flag = 0;   // every slice has drawn: ready for the next launch
    }
    __syncthreads();
    if (!last) return;
    __threadfence();
    // The tile's elements down its columns (coalesced), CHUNK per thread at a time with all
    // their slices' loads issued before the first add: one block does this pass alone, and
    // an add chain per element, one load after another, left it bound by L2's latency.
    constexpr int CHUNK = 4, ELEMS = BM * BN;
    static_assert(ELEMS % (THREADS * CHUNK) == 0, "whole chunks of the tile per thread");
    const size_t slice = (size_t)ldw * (size_t)n;
    for (int base = threadIdx.x; base < ELEMS; base += THREADS * CHUNK) {
        REAL part[CHUNK][SPLIT_K];
#pragma unroll
        for (int u = 0; u < CHUNK; ++u) {
            const int e = base + u * THREADS, i = row0 + e % BM, j = col0 + e / BM;
            const REAL* w = W + (size_t)min(i, m - 1) + (size_t)min(j, n - 1) * ldw;
#pragma unroll
            for (int z = 0; z < SPLIT_K; ++z) part[u][z] = __ldcg(w + z * slice);   // (L2)
        }
#pragma unroll
        for (int u = 0; u < CHUNK; ++u) {
            const int e = base + u * THREADS, i = row0 + e % BM, j = col0 + e / BM;
            if (i >= m || j >= n) continue;
            REAL sum = part[u][0];
#pragma unroll
            for (int z = 1; z < SPLIT_K; ++z) sum += part[u][z];
            REAL* const c = C + (size_t)i + (size_t)j * ldc;
            *c = blas_epilogue(sum, alpha, beta, c);
        }
    }
}
#endif

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
#if STREAM_K   // W: the workspace's 2G slots; sk_*: the schedule (streamk.Schedule.args)
streamk_gemm(int m, int n, int k, REAL alpha, const REAL* __restrict__ A, int lda,
             const REAL* __restrict__ B, int ldb, REAL beta, REAL* __restrict__ C, int ldc,
             REAL* __restrict__ W, int sk_dp, int sk_q, int sk_r)
#elif SPLITK_FUSED   // C, ldc name the workspace (as in every split-K launch); Cout, ldcout C
gemm(int m, int n, int k, REAL alpha, const REAL* __restrict__ A, int lda,
     const REAL* __restrict__ B, int ldb, REAL beta, REAL* C, int ldc, REAL* __restrict__ Cout,
     int ldcout, int* __restrict__ flags)
#else
gemm(int m, int n, int k, REAL alpha, const REAL* __restrict__ A, int lda,
     const REAL* __restrict__ B, int ldb, REAL beta, REAL* __restrict__ C, int ldc)
#endif
{
    extern __shared__ __align__(16) unsigned char smem_raw[];
    double* const sA = reinterpret_cast<double*>(smem_raw);
    double* const sB = sA + STAGES * A_STAGE;

#if STREAM_K
    // This block's walk (its data-parallel tiles, then its stream-K range), a step at a time:
    // the tile and k-tiles below come from the step, the rest of the body is the data-parallel
    // kernel's. What the step does after its k loop stays in shared memory, not in registers
    // through the loop: [0] its slot (-1: a whole tile, finished here), [1] where the next
    // step starts (-1: none). Thread 0 writes it after the barrier that every thread passes
    // only once done with the last step's, and all read it after the prologue's barrier.
    const int grid_m = (m + BM - 1) / BM, grid_n = (n + BN - 1) / BN;
    __shared__ int sk_after[2];
    const SkSchedule sk(k, BK, gridDim.x, sk_dp, sk_q, sk_r);
    for (int sk_it = sk.start(blockIdx.x), first_step = 1;; first_step = 0) {
    const SkStep step(sk, blockIdx.x, sk_it);
    if (!first_step) __syncthreads();   // every thread is done with the last step's ring
    if (threadIdx.x == 0) {
        sk_after[0] = step.whole ? -1 : step.slot;
        sk_after[1] = step.next == step.end ? -1 : step.next;
    }
    int bm, bn;
    group_m_tile(step.t, grid_m, grid_n, GROUP_M, bm, bn);
    const int row0 = bm * BM, col0 = bn * BN;
    const int kt0 = step.kt_begin, ntiles = step.nkt;
#else
    // Group-M rasterisation: consecutive linear block ids walk GROUP_M block-rows per block-column.
    int bm, bn;
    group_m_block(GROUP_M, bm, bn);
    const int row_first = bm * BM, col_first = bn * BN;   // C's rows and columns it stores from
#if SHIFTS
    // Its tile at row0, col0: moved back to end at m (n) on C's last, partial row (column) of
    // tiles (SHIFT_EDGE; where it may not, CLAMPS leaves the operands along m or n inside).
    const int row0 = row_first + BM > m && m >= BM && m % EVEC == 0 ? m - BM : row_first;
    const int col0 = col_first + BN > n && n >= BN && (B_KCONTIG || n % EVEC == 0) ? n - BN
                                                                                  : col_first;
#else
    const int row0 = row_first, col0 = col_first;
#endif

    // Range of k-tiles of this block (a contiguous slice when SPLIT_K > 1).
    int kt0, ntiles;
    block_k_tiles(k, BK, SPLIT_K, kt0, ntiles);
#endif
#if SPLIT_K > 1
#if SPLITK_FUSED
    REAL* const W = C;
#endif
    C = SPLIT_SLICE(C, ldc, n);
    if (ntiles <= 0) {   // an empty slice: zeros for splitk_reduce to add
        zero_slice_tile(C, ldc, m, n, row_first, col_first, BM, BN, THREADS);
#if SPLITK_FUSED
        splitk_finish(W, ldc, m, n, row_first, col_first, bm, bn, alpha, beta, Cout, ldcout, flags);
#endif
        return;
    }
#endif

    const int tid = threadIdx.x;
    const int warp = tid >> 5, lane = tid & 31;
    const int g = lane >> 2, t = lane & 3;
    const int wm0 = (warp % WARPS_M) * WM, wn0 = (warp / WARPS_M) * WN;

    // Per-thread fragment offsets inside one stage (see the layouts in the header comment).
#if ADVANCE
    // Opaque (tiling.cuh): without load_tile's arithmetic in the main loop, NVVM rebuilt parts
    // of these (lane, g, the xor) beside the fragment loads there, about 20 instructions a
    // k-tile (nvcc 13.0, the 4096^3 NN config).
#if A_KCONTIG && !RING_PAD
    int aoffk[4];
#pragma unroll
    for (int c = 0; c < 4; ++c) aoffk[c] = opaque((wm0 + g) * LDK + ((4 * c) ^ KSWZ(g)) + t);
#elif A_KCONTIG
    const int aoff = opaque((wm0 + g) * LDK + t);
#else
    const int aoff0 = opaque(t * LDA_MN + wm0 + (g ^ (t << 2)));
    const int aoff1 = opaque(t * LDA_MN + wm0 + ((8 + g) ^ (t << 2)));
#endif
#if B_KCONTIG && !RING_PAD
    int boffk[4];
#pragma unroll
    for (int c = 0; c < 4; ++c) boffk[c] = opaque((wn0 + g) * LDK + ((4 * c) ^ KSWZ(g)) + t);
#elif B_KCONTIG
    const int boff = opaque((wn0 + g) * LDK + t);
#else
    const int boff0 = opaque(t * LDB_MN + wn0 + (g ^ (t << 2)));
    const int boff1 = opaque(t * LDB_MN + wn0 + ((8 + g) ^ (t << 2)));
#endif
#else
#if A_KCONTIG && !RING_PAD   // (the row's 4-double block c = kofs / 4 % 4 at aoffk[c])
    int aoffk[4];
#pragma unroll
    for (int c = 0; c < 4; ++c) aoffk[c] = (wm0 + g) * LDK + ((4 * c) ^ KSWZ(g)) + t;
#elif A_KCONTIG
    const int aoff = (wm0 + g) * LDK + t;                   // + (16i + 8v0) * LDK + kofs
#else
    const int aoff0 = t * LDA_MN + wm0 + (g ^ (t << 2));    // v0 = 0; + 16i + kofs * LDA_MN
    const int aoff1 = t * LDA_MN + wm0 + ((8 + g) ^ (t << 2));
#endif
#if B_KCONTIG && !RING_PAD
    int boffk[4];
#pragma unroll
    for (int c = 0; c < 4; ++c) boffk[c] = (wn0 + g) * LDK + ((4 * c) ^ KSWZ(g)) + t;
#elif B_KCONTIG
    const int boff = (wn0 + g) * LDK + t;                   // + 8j * LDK + kofs
#else
    const int boff0 = t * LDB_MN + wn0 + (g ^ (t << 2));    // j even; + 16(j/2) + kofs * LDB_MN
    const int boff1 = t * LDB_MN + wn0 + ((8 + g) ^ (t << 2));
#endif
#endif

    // Element (x, k) = (w0 + 8q + g, kofs + t) of A's (B's) stage s, x along m (n) from the
    // warp's origin w0: rows g and g + 8 of the mma's 16 for q = 2i and 2i + 1, its column g
    // for q = j (the layouts in the header comment). Unpadded, a k-contiguous row's 4-double
    // block kofs / 4 % 4 lies at the lane's own offset, since KSWZ(w0 + 8q + g) = KSWZ(g).
#if A_KCONTIG && !RING_PAD
#define SA_AT(s, q, kofs) (s)[aoffk[((kofs) >> 2) & 3] + 8 * (q) * LDK + ((kofs) & ~15)]
#elif A_KCONTIG
#define SA_AT(s, q, kofs) (s)[aoff + 8 * (q) * LDK + (kofs)]
#else
#define SA_AT(s, q, kofs) (s)[((q) & 1 ? aoff1 : aoff0) + 16 * ((q) >> 1) + (kofs) * LDA_MN]
#endif
#if B_KCONTIG && !RING_PAD
#define SB_AT(s, q, kofs) (s)[boffk[((kofs) >> 2) & 3] + 8 * (q) * LDK + ((kofs) & ~15)]
#elif B_KCONTIG
#define SB_AT(s, q, kofs) (s)[boff + 8 * (q) * LDK + (kofs)]
#else
#define SB_AT(s, q, kofs) (s)[((q) & 1 ? boff1 : boff0) + 16 * ((q) >> 1) + (kofs) * LDB_MN]
#endif
#if SWAP_AB   // the mma's A role (its rows) from B's tile, its B role from A's
#define ROWS_AT(a_s, b_s, q, kofs) SB_AT(b_s, q, kofs)
#define COLS_AT(a_s, b_s, q, kofs) SA_AT(a_s, q, kofs)
#else
#define ROWS_AT(a_s, b_s, q, kofs) SA_AT(a_s, q, kofs)
#define COLS_AT(a_s, b_s, q, kofs) SB_AT(b_s, q, kofs)
#endif

    // The mma's row fragments of mma tile i (its A role), and its column fragments (B role),
    // of k-step ks of the stage at a_s / b_s.
    auto load_row_frag = [&](double (&ar_)[A_FRAG], const double* a_s_, const double* b_s_,
                             int ks, int i) {
#pragma unroll
        for (int v1 = 0; v1 < MMA_K / 4; ++v1) {
            const int kofs = ks * MMA_K + 4 * v1;
            ar_[2 * v1 + 0] = ROWS_AT(a_s_, b_s_, 2 * i + 0, kofs);
            ar_[2 * v1 + 1] = ROWS_AT(a_s_, b_s_, 2 * i + 1, kofs);
        }
    };
    auto load_col_frags = [&](double (&bf_)[NT][B_FRAG], const double* a_s_, const double* b_s_,
                              int ks) {
#pragma unroll
        for (int j = 0; j < NT; ++j)
#pragma unroll
            for (int v = 0; v < B_FRAG; ++v) {
                const int kofs = ks * MMA_K + 4 * v;
                bf_[j][v] = COLS_AT(a_s_, b_s_, j, kofs);
            }
    };
    auto load_frags = [&](double (&af_)[MT][A_FRAG], double (&bf_)[NT][B_FRAG],
                          const double* a_s_, const double* b_s_, int ks) {
#pragma unroll
        for (int i = 0; i < MT; ++i) load_row_frag(af_[i], a_s_, b_s_, ks, i);
        load_col_frags(bf_, a_s_, b_s_, ks);
    };

    double acc[MT][NT][4];
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0;

#if ADVANCE
    // Cursors at k-tile kt0: the prologue and the main loop load kt0, kt0 + 1, ... in order.
    TileCursor<A_KCONTIG, BM, LDA_MN> cur_a;
    TileCursor<B_KCONTIG, BN, LDB_MN> cur_b;
    cur_a.start(sA, A, lda, row0, m, kt0 * BK, k, tid);
    cur_b.start(sB, B, ldb, col0, n, kt0 * BK, k, tid);
    int kleft = k - kt0 * BK;   // k from the next k-tile's origin to k's end
    // The next k-tile of both operands into stage w: one test for both, so that the k-tiles
    // wholly inside (all but the last, away from the m and n edges) run one branch.
    auto load_next = [&](int w) {
        if (cur_a.whole(kleft) && cur_b.whole(kleft)) {
            cur_a.copy_whole(w);
            cur_b.copy_whole(w);
        } else {
            cur_a.copy_edge(w, A, kleft);
            cur_b.copy_edge(w, B, kleft);
        }
        kleft -= BK;
    };
#endif

    // Prologue: fill STAGES-1 stages (empty groups keep the wait counts uniform).
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < ntiles) {
#if ADVANCE
            load_next(s);
#else
            const int k0 = (kt0 + s) * BK;
            load_tile<A_KCONTIG, BM, LDA_MN>(sA + s * A_STAGE, A, lda, row0, m, k0, k, tid);
            load_tile<B_KCONTIG, BN, LDB_MN>(sB + s * B_STAGE, B, ldb, col0, n, k0, k, tid);
#endif
        }
        cp_async_commit();
    }

    // Main loop (one __syncthreads per k-tile). Fragments are double-buffered in registers:
    // the first k-step of tile it+1 is read right after the barrier that sits before the last
    // k-step of tile it, so the barrier and the shared-memory latency hide behind that k-step's
    // mma. Stage wstage (read by tile it-1) is refilled only after the barrier of iteration
    // it-1, which every thread reaches after its last read of tile it-1.
    int rstage = 0, wstage = STAGES - 1;
    cp_async_wait<STAGES - 2>();   // k-tile 0 has landed (for this thread) ...
    __syncthreads();               // ... for all threads
    const double* a_s = sA;
    const double* b_s = sB;
    double af[ROW_RELOAD ? 1 : 2][MT][A_FRAG];
    double bf[2][NT][B_FRAG];
    load_frags(af[0], bf[0], a_s, b_s, 0);

    // One k-tile: refill the stage read two tiles ago with k-tile it + STAGES - 1 (copy:
    // load_next, or copy_whole where that k-tile is known to lie wholly inside both operands),
    // then the mma of tile it.
    auto tile_step = [&](int it, auto whole) {
        {
            const int nxt = it + STAGES - 1;
            if constexpr (decltype(whole)::value) {
#if ADVANCE
                // No branch in the loop body: ptxas spreads these copies, and their cursor
                // steps, among the mma instead of issuing them as a block of their own.
                cur_a.copy_whole(wstage);
                cur_b.copy_whole(wstage);
                kleft -= BK;
#endif
            } else if (nxt < ntiles) {
#if ADVANCE
                load_next(wstage);
#else
                const int k0 = (kt0 + nxt) * BK;
                load_tile<A_KCONTIG, BM, LDA_MN>(sA + wstage * A_STAGE, A, lda, row0, m, k0, k, tid);
                load_tile<B_KCONTIG, BN, LDB_MN>(sB + wstage * B_STAGE, B, ldb, col0, n, k0, k, tid);
#endif
            }
            cp_async_commit();
            wstage = (wstage + 1 == STAGES) ? 0 : wstage + 1;
        }
#pragma unroll
        for (int ks = 0; ks < KSTEPS; ++ks) {
            // The fragments' next k-step: the next in this tile, or after the last the first of
            // tile it+1, read once the barrier has passed (after the last tile: an unused read
            // of a stale stage).
            const int next_ks = ks == KSTEPS - 1 ? 0 : ks + 1;
            if (ks == KSTEPS - 1) {
                cp_async_wait<STAGES - 2>();   // k-tile it+1 has landed (for this thread) ...
                __syncthreads();               // ... for all threads; tile it is no longer read
                rstage = (rstage + 1 == STAGES) ? 0 : rstage + 1;
                a_s = sA + rstage * A_STAGE;
                b_s = sB + rstage * B_STAGE;
            }
#if ROW_RELOAD
            // The column fragments of the next k-step into the other buffer; each row fragment
            // reloaded in place as soon as its row's mma have issued, so that one row's worth
            // of registers is in flight instead of a second set.
            load_col_frags(bf[(ks + 1) & 1], a_s, b_s, next_ks);
#pragma unroll
            for (int i = 0; i < MT; ++i) {
#pragma unroll
                for (int j = 0; j < NT; ++j) mma_f64(acc[i][j], af[0][i], bf[ks & 1][j]);
                load_row_frag(af[0][i], a_s, b_s, next_ks, i);
            }
#else
            load_frags(af[(ks + 1) & 1], bf[(ks + 1) & 1], a_s, b_s, next_ks);
#pragma unroll
            for (int i = 0; i < MT; ++i)
#pragma unroll
                for (int j = 0; j < NT; ++j) mma_f64(acc[i][j], af[ks & 1][i], bf[ks & 1][j]);
#endif
        }
        if (KSTEPS & 1) {   // odd k-steps: the next tile's first fragments sit in buffer 1
#if !ROW_RELOAD
#pragma unroll
            for (int i = 0; i < MT; ++i)
#pragma unroll
                for (int v = 0; v < A_FRAG; ++v) af[0][i][v] = af[1][i][v];
#endif
#pragma unroll
            for (int j = 0; j < NT; ++j)
#pragma unroll
                for (int v = 0; v < B_FRAG; ++v) bf[0][j][v] = bf[1][j][v];
        }
    };
#if ADVANCE && STEADY_LOOP
    // Steady state: while the k-tile to load lies wholly inside k and the block's slices wholly
    // inside m and n (copy_whole's conditions), a loop whose body has no branch; then the
    // general one for the last STAGES - 1 loads or so, and for blocks on C's edge.
    int it = 0;
    if (cur_a.steady() && cur_b.steady()) {
        // Loads from tile STAGES - 1 on, while copy_whole's k-tiles last.
        const int steady = min(ntiles - (STAGES - 1),
                               (kleft - max(cur_a.straddle, cur_b.straddle)) / BK);
        for (; it < steady; ++it) tile_step(it, std::true_type{});
    }
    for (; it < ntiles; ++it) tile_step(it, std::false_type{});
#else
    for (int it = 0; it < ntiles; ++it) tile_step(it, std::false_type{});
#endif
    cp_async_wait<0>();

#if STREAM_K
    if (const int slot = sk_after[0]; slot >= 0) {   // a split tile: raw partial sums to its slot
        store_partial(W + (size_t)slot * (BM * BN), acc, wm0, wn0, g, t);
    } else {   // a whole tile: the epilogue below
#endif
#if EPILOGUE == 0
    // Epilogue: c[2h + e] of mma tile (i, j) is C(ACC_ROW, ACC_COL) of the warp's tile.
#if SHIFTS   // a shifted tile stores part of itself: the edge path's tests
    if (row0 + BM <= m && col0 + BN <= n && row0 == row_first && col0 == col_first) {
#else
    if (row0 + BM <= m && col0 + BN <= n) {
#endif
#if SWAP_AB
        // A tile wholly inside C, a lane's pairs down C's columns: rows 8j + 2t, + 1 of column
        // 16i + 8h + g, one 16-byte store each when ALIGNED (cuBLAS's DGEMM stores 16 bytes a
        // lane; 8-byte stores took twice the instructions and addresses).
        REAL* const cw = C + (size_t)(row0 + wm0 + 2 * t) + (size_t)(col0 + wn0 + g) * ldc;
#if ALIGNED && SPLIT_K == 1 && OLD_FIRST
        if (beta != 0.0) {   // (OLD_FIRST above) a group's old pairs loaded before its stores
#pragma unroll
            for (int i0 = 0; i0 < MT; i0 += OLD_GROUP) {
                double2 old[OLD_GROUP][2][NT];
#pragma unroll
                for (int i = i0; i < i0 + OLD_GROUP; ++i)
#pragma unroll
                    for (int h = 0; h < 2; ++h)
#pragma unroll
                        for (int j = 0; j < NT; ++j)
                            old[i - i0][h][j] = *reinterpret_cast<const double2*>(
                                cw + (size_t)(16 * i + 8 * h) * ldc + 8 * j);
#pragma unroll
                for (int i = i0; i < i0 + OLD_GROUP; ++i)
#pragma unroll
                    for (int h = 0; h < 2; ++h)
#pragma unroll
                        for (int j = 0; j < NT; ++j) {
                            const double2 o = old[i - i0][h][j];
                            *reinterpret_cast<double2*>(cw + (size_t)(16 * i + 8 * h) * ldc + 8 * j) =
                                make_double2(fma(beta, o.x, alpha * acc[i][j][2 * h]),
                                             fma(beta, o.y, alpha * acc[i][j][2 * h + 1]));
                        }
            }
        } else
#endif
#pragma unroll
        for (int i = 0; i < MT; ++i)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                REAL* const col = cw + (size_t)(16 * i + 8 * h) * ldc;
#pragma unroll
                for (int j = 0; j < NT; ++j)
                    store_c_pair(col + 8 * j, acc[i][j][2 * h], acc[i][j][2 * h + 1], alpha, beta);
            }
#else
        // A tile wholly inside C (block-uniform): no edge tests, and one address a column,
        // its rows at constant offsets. The edge path below spent about 19 instructions an
        // element on a 64-bit address, the tests and a branch around each store: at
        // 8192x8192x128 (64 x 128, m16n8k8) half of the kernel's instructions, against a k
        // loop of 155 a k-tile (Nsight Compute, H100, 2026-11-28). The same values stored.
        REAL* const cw = C + (size_t)(row0 + wm0 + g) + (size_t)(col0 + wn0 + 2 * t) * ldc;
#if SPLIT_K == 1 && OLD_FIRST
        if (beta != 0.0) {   // (OLD_FIRST above) a group's old values loaded before its stores
#pragma unroll
            for (int j0 = 0; j0 < NT; j0 += OLD_GROUP) {
                double old[OLD_GROUP][2][MT][2];
#pragma unroll
                for (int j = j0; j < j0 + OLD_GROUP; ++j)
#pragma unroll
                    for (int e = 0; e < 2; ++e)
#pragma unroll
                        for (int i = 0; i < MT; ++i)
#pragma unroll
                            for (int h = 0; h < 2; ++h)
                                old[j - j0][e][i][h] = cw[(size_t)(8 * j + e) * ldc + 16 * i + 8 * h];
#pragma unroll
                for (int j = j0; j < j0 + OLD_GROUP; ++j)
#pragma unroll
                    for (int e = 0; e < 2; ++e)
#pragma unroll
                        for (int i = 0; i < MT; ++i)
#pragma unroll
                            for (int h = 0; h < 2; ++h)
                                cw[(size_t)(8 * j + e) * ldc + 16 * i + 8 * h] =
                                    fma(beta, old[j - j0][e][i][h], alpha * acc[i][j][2 * h + e]);
            }
        } else
#endif
#pragma unroll
        for (int j = 0; j < NT; ++j)
#pragma unroll
            for (int e = 0; e < 2; ++e) {
                REAL* const col = cw + (size_t)(8 * j + e) * ldc;
#pragma unroll
                for (int i = 0; i < MT; ++i)
#pragma unroll
                    for (int h = 0; h < 2; ++h)
                        store_c(col + 16 * i + 8 * h, acc[i][j][2 * h + e], alpha, beta);
            }
#endif
    } else {   // a tile on C's edge
        // Whether C's element (gi, gj) is the tile's to store, one test for both loops below: a
        // macro, as a helper function changed the whole kernel's SASS (nvcc 13.0, sm_90a).
#if SHIFTS
#define EDGE_IN_C(gi, gj) ((gi) < m && (gj) < n && (gi) >= row_first && (gj) >= col_first)
#else
#define EDGE_IN_C(gi, gj) ((gi) < m && (gj) < n)
#endif
#if SPLIT_K == 1 && OLD_FIRST
      if (beta != 0.0) {   // (OLD_FIRST above) a group's old values, those inside C, first
#pragma unroll
        for (int j0 = 0; j0 < NT; j0 += EDGE_GROUP) {
            double old[EDGE_GROUP][MT][2][2];
#pragma unroll
            for (int pass = 0; pass < 2; ++pass)   // 0: load the old values, 1: store
#pragma unroll
                for (int j = j0; j < j0 + EDGE_GROUP; ++j)
#pragma unroll
                    for (int i = 0; i < MT; ++i)
#pragma unroll
                        for (int h = 0; h < 2; ++h)
#pragma unroll
                            for (int e = 0; e < 2; ++e) {
                                const int gi = row0 + wm0 + ACC_ROW(i, j, h, e);
                                const int gj = col0 + wn0 + ACC_COL(i, j, h, e);
                                const bool in_c = EDGE_IN_C(gi, gj);
                                double* const c = C + (size_t)gi + (size_t)gj * ldc;
                                double& o = old[j - j0][i][h][e];
                                if (pass == 0)
                                    o = in_c ? *c : 0.0;
                                else if (in_c)
                                    *c = fma(beta, o, alpha * acc[i][j][2 * h + e]);
                            }
        }
      } else
#endif
#pragma unroll
        for (int i = 0; i < MT; ++i)
#pragma unroll
            for (int j = 0; j < NT; ++j)
#pragma unroll
                for (int h = 0; h < 2; ++h)
#pragma unroll
                    for (int e = 0; e < 2; ++e) {
                        const int gi = row0 + wm0 + ACC_ROW(i, j, h, e);
                        const int gj = col0 + wn0 + ACC_COL(i, j, h, e);
                        if (EDGE_IN_C(gi, gj))
                            store_c(C + (size_t)gi + (size_t)gj * ldc, acc[i][j][2 * h + e],
                                    alpha, beta);
                    }
    }
#if SPLITK_FUSED
    splitk_finish(W, ldc, m, n, row_first, col_first, bm, bn, alpha, beta, Cout, ldcout, flags);
#endif
#if STREAM_K
    }
    if (sk_after[1] < 0) break;
    sk_it = sk_after[1];
    }   // the walk over tiles
#endif
#else
    // Staged epilogue. Every warp is past its last read of the ring (the stale fragment reads
    // after the last tile's barrier included) before any warp overwrites it.
    __syncthreads();
    if (row0 + wm0 >= m) return;   // a warp wholly below C (no block barrier follows)
    // This warp's buffer: 8 columns of WM rows, column stride LDE = 2 (mod 16) doubles, so the
    // fragment writes (rows g, columns 2t + e) hit each 8-byte bank pair once per half-warp
    // and 16-byte reads stay aligned. _smem_bytes (families/dmma.py) covers every warp's.
    double* const stage = reinterpret_cast<double*>(smem_raw) + warp * (8 * LDE);
    constexpr int PER_COL = WM / EVEC;          // accesses per column of the buffer
    constexpr int PASSES = 8 * PER_COL / 32;    // accesses per lane per 8 columns
#if EVEC == 2
    typedef double2 Piece;                      // one access of C
#else
    typedef double Piece;
#endif
#pragma unroll
    for (int j = 0; j < NT; ++j) {
        const int col = col0 + wn0 + 8 * j;
        if (col >= n) break;                    // warp-uniform: columns past C's edge
        // Consecutive lanes take consecutive EVEC-element pieces down one column: pass p of
        // this lane is row r = ((lane + 32p) % PER_COL) * EVEC of column (lane + 32p) / PER_COL.
        // whole: all the piece's EVEC rows lie in C; first: only its first (C's last row, odd
        // m); neither: none, or its column is past n. Two flags, not a row count clamped to
        // [0, EVEC]: ptxas (nvcc 13.0, sm_90a) made that clamp a VIMNMX.RELU and branched on its
        // predicate output as if it meant "count == 2", so that a lane's first piece never read
        // its old value (beta != 0 results off by beta * C there; H200, 2026-11-29).
        bool whole[PASSES];
#if EVEC == 2
        bool first[PASSES];
#endif
        double* cp[PASSES];
#pragma unroll
        for (int pass = 0; pass < PASSES; ++pass) {
            const int v = lane + 32 * pass;
            const int gi = row0 + wm0 + (v % PER_COL) * EVEC, gj = col + v / PER_COL;
#if SHIFTS   // (gi - row_first is even where rows shift: a piece is stored whole or not at all)
            const bool in_c = gj < n && gj >= col_first && gi >= row_first;
#else
            const bool in_c = gj < n;
#endif
            whole[pass] = in_c && gi + EVEC <= m;
#if EVEC == 2
            first[pass] = in_c && gi + 1 == m;
#endif
            cp[pass] = C + (size_t)gi + (size_t)gj * ldc;
        }
        // Old values of C first (beta != 0), so that all of them are in flight together.
        Piece old[PASSES];
#pragma unroll
        for (int pass = 0; pass < PASSES; ++pass) {
            old[pass] = Piece{};
#if SPLIT_K == 1
            if (beta != 0.0) {
#if EVEC == 2
                if (whole[pass]) old[pass] = *reinterpret_cast<const double2*>(cp[pass]);
                else if (first[pass]) old[pass].x = *cp[pass];
#else
                if (whole[pass]) old[pass] = *cp[pass];
#endif
            }
#endif
        }
        // c[2h + e] of tile (i, j) is C(16i + 8h + g, 2t + e) of the warp's 8 columns.
#pragma unroll
        for (int i = 0; i < MT; ++i)
#pragma unroll
            for (int h = 0; h < 2; ++h)
#pragma unroll
                for (int e = 0; e < 2; ++e)
                    stage[(2 * t + e) * LDE + 16 * i + 8 * h + g] = acc[i][j][2 * h + e];
        __syncwarp();
#pragma unroll
        for (int pass = 0; pass < PASSES; ++pass) {
            const int v = lane + 32 * pass;
            const Piece val = *reinterpret_cast<const Piece*>(stage + (v / PER_COL) * LDE
                                                              + (v % PER_COL) * EVEC);
#if EVEC == 2
            const double2 out = make_double2(epilogue_value(val.x, old[pass].x, alpha, beta),
                                             epilogue_value(val.y, old[pass].y, alpha, beta));
            if (whole[pass]) *reinterpret_cast<double2*>(cp[pass]) = out;
            else if (first[pass]) *cp[pass] = out.x;   // C's last row, odd m
#else
            if (whole[pass]) *cp[pass] = epilogue_value(val, old[pass], alpha, beta);
#endif
        }
        __syncwarp();                           // read before the next columns overwrite it
    }
#endif
}
