// gemm_gemv: memory-bound panels, where one of m and n is a few rows or columns (GEMV-like).
// C = alpha * op(A) * op(B) + beta * C, float32 or float64, any m, n, k, all four transposes,
// any leading dimensions (ABI in common.cuh), split-K through splitk_reduce.
//
// Technique: where C has SHORT (1-16) rows or columns, the product is bound by reading the
// other operand, the long one (k x the long side of C), once: 2 * SHORT flops per element
// read, under the 19-20 flops a byte that the H100's FFMA and DMMA ceilings take over
// HBM's bandwidth. A block tile of 64 or 128 rows (the other families') wastes most of its
// fmas there, and its k-loop stages both operands. Here a block owns SHORT x LONG of C (SIDE
// 0: SHORT rows by LONG columns, the long operand op(B); SIDE 1: LONG rows by SHORT columns,
// the long operand op(A)), stages the short operand's rows for a k-chunk (KC) in shared
// memory, and streams the long operand from global memory with 16-byte loads where aligned,
// each element once, in one of two ways by its layout:
//  - along k (L_ALONG_K: op(B) untransposed, or op(A) transposed): each warp takes LONG /
//    WARPS of the long side's lines, its lanes consecutive 16-byte vectors of k, and at the
//    end sums each line's lane partials with a fixed butterfly of shuffles;
//  - along the long side (otherwise): each lane takes LONG / 32 consecutive lines, the warps
//    consecutive parts of each k-chunk, and at the end the warps' partials are summed in
//    shared memory in the fixed order 0..WARPS-1.
// Every element's sum runs in the same order on every run: the same bits. Edge rows, lines
// and k read zeros (element loads where a vector would cross an edge or is not aligned).
#include "common.cuh"

#ifndef SIDE
#define SIDE 0         // 0: m is C's short side (the block's BM = SHORT); 1: n is (BN = SHORT)
#endif
#ifndef SHORT
#define SHORT 4        // C's rows (SIDE 0) or columns (SIDE 1) per block
#endif
#ifndef LONG
#define LONG 32        // C's columns (SIDE 0) or rows (SIDE 1) per block
#endif

#define KC 256                         // k of one staged chunk (gemv_like.CHUNK)
#include "gemv_panel.cuh"

// The staged rows' stride: along k, KC and a 16-byte pad ([row][k], read a vector of k at a
// time: the pad keeps the stores of a short operand that runs along its rows off one bank);
// otherwise SHORT and one ([k][row], read one broadcast element at a time: an odd stride
// keeps the stores of a short operand that runs along k off one bank).
#if L_ALONG_K
#define S_STRIDE (KC + VEC)
#define S_ELEMS (SHORT * S_STRIDE)
#else
#define S_STRIDE (SHORT + 1)
#define S_ELEMS (KC * S_STRIDE)
#endif

#if L_ALONG_K
#define LINES (LONG / WARPS)           // long-side lines per warp
// Lines a warp takes at once: at most 32 accumulators and 4 lines of loads a lane.
#define GROUP_CAP (32 / SHORT < 4 ? (32 / SHORT > 0 ? 32 / SHORT : 1) : 4)
#define GROUP (LINES < GROUP_CAP ? LINES : GROUP_CAP)
static_assert(LONG % WARPS == 0 && LINES % GROUP == 0, "whole lines per warp and group");
#else
#define LINES (LONG / 32)              // long-side lines per lane
static_assert(LONG % 32 == 0, "whole lines per lane");
#endif

// The short operand's rows r0.. (SHORT of them) over k in [kc, kc + KC), zeros past the
// edges, into shared memory as [row][k] (L_ALONG_K: a lane reads a vector of k of one row)
// or [k][row] (otherwise: a warp reads every row of one k at once), rows S_STRIDE apart.
// Consecutive threads walk the operand's unit-stride dimension, so that the loads coalesce.
__device__ __forceinline__ void stage_short(REAL* __restrict__ s, const REAL* __restrict__ A,
                                            int lda, const REAL* __restrict__ B, int ldb,
                                            int rows, int r0, int kc, int k_end)
{
    for (int e = threadIdx.x; e < SHORT * KC; e += THREADS) {   // (the elements, not the pads)
#if S_ALONG_K
        const int r = e / KC, p = e % KC;
#else
        const int r = e % SHORT, p = e / SHORT;
#endif
        const int gr = r0 + r, gp = kc + p;
        const REAL value = (gr < rows && gp < k_end) ? S_AT(gr, gp) : REAL(0);
#if L_ALONG_K
        s[r * S_STRIDE + p] = value;
#else
        s[p * S_STRIDE + r] = value;
#endif
    }
}

// VEC elements of the long operand's line j from k = p (along k) or of lines j.. at k = p
// (along the long side), zeros past the edges; one 16-byte load where it is whole and aligned.
__device__ __forceinline__ Vec load_long(const REAL* __restrict__ A, int lda,
                                         const REAL* __restrict__ B, int ldb, int lines, int j,
                                         int p, int k_end)
{
    Vec out;
#if L_ALONG_K
    const bool whole = j < lines && p + VEC <= k_end;
#else
    const bool whole = j + VEC <= lines && p < k_end;
#endif
    if (ALIGNED && whole) {
        out = *reinterpret_cast<const Vec*>(&L_AT(p, j));
        return out;
    }
#pragma unroll
    for (int e = 0; e < VEC; ++e) {
#if L_ALONG_K
        const bool in = j < lines && p + e < k_end;
        out.v[e] = in ? L_AT(p + e, j) : REAL(0);
#else
        const bool in = j + e < lines && p < k_end;
        out.v[e] = in ? L_AT(p, j + e) : REAL(0);
#endif
    }
    return out;
}

extern "C" __global__ void __launch_bounds__(THREADS)
gemm(int m, int n, int k, REAL alpha, const REAL* __restrict__ A, int lda,
     const REAL* __restrict__ B, int ldb, REAL beta, REAL* __restrict__ C, int ldc)
{
    const Panel b = panel_of_block(m, n, k, KC);
    const int rows = b.rows, lines = b.lines, r0 = b.r0, j0 = b.j0;
    const int k_begin = b.k_begin, k_end = b.k_end;
#if SPLIT_K > 1
    C = SPLIT_SLICE(C, ldc, n);
    if (zero_if_empty_slice(C, ldc, m, n, b)) return;   // zeros for splitk_reduce to add
#endif
    __shared__ __align__(16) REAL s[S_ELEMS];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
#if L_ALONG_K
    // Each warp's LINES lines, GROUP of them at a time over all of k (the short operand
    // staged again for each group: it is small and in L2); its lanes take vectors of k,
    // VEC * 32 apart.
    const int line_first = j0 + warp * LINES;
#pragma unroll 1
    for (int group = 0; group < LINES; group += GROUP) {
        const int line0 = line_first + group;
        REAL acc[SHORT][GROUP];
#pragma unroll
        for (int r = 0; r < SHORT; ++r)
#pragma unroll
            for (int c = 0; c < GROUP; ++c) acc[r][c] = REAL(0);
        for (int kc = k_begin; kc < k_end; kc += KC) {
            Vec l[KC / (32 * VEC)][GROUP];   // the chunk's loads, issued before the staging
#pragma unroll
            for (int step = 0; step < KC / (32 * VEC); ++step)
#pragma unroll
                for (int c = 0; c < GROUP; ++c)
                    l[step][c] = load_long(A, lda, B, ldb, lines, line0 + c,
                                           kc + (step * 32 + lane) * VEC, k_end);
            __syncthreads();   // the chunk before is read
            stage_short(s, A, lda, B, ldb, rows, r0, kc, k_end);
            __syncthreads();
#pragma unroll
            for (int step = 0; step < KC / (32 * VEC); ++step)
#pragma unroll
                for (int r = 0; r < SHORT; ++r) {
                    const Vec sv = *reinterpret_cast<const Vec*>(
                        &s[r * S_STRIDE + (step * 32 + lane) * VEC]);
#pragma unroll
                    for (int c = 0; c < GROUP; ++c)
#pragma unroll
                        for (int e = 0; e < VEC; ++e)
                            acc[r][c] = fma(sv.v[e], l[step][c].v[e], acc[r][c]);
                }
        }
        // Each line's 32 lane partials summed by the same butterfly on every run; then lane
        // (r * GROUP + c) % 32 stores element (r, c).
#pragma unroll
        for (int r = 0; r < SHORT; ++r)
#pragma unroll
            for (int c = 0; c < GROUP; ++c) {
#pragma unroll
                for (int d = 16; d > 0; d /= 2)
                    acc[r][c] += __shfl_xor_sync(0xffffffffu, acc[r][c], d);
                const int gr = r0 + r, gj = line0 + c;
                if (lane == (r * GROUP + c) % 32 && gr < rows && gj < lines)
                    store_c(&OUT_AT(C, gr, gj), acc[r][c], alpha, beta);
            }
    }
#else
    // Each lane's LINES consecutive lines; the warps take consecutive parts of each chunk.
    REAL acc[SHORT][LINES];
#pragma unroll
    for (int r = 0; r < SHORT; ++r)
#pragma unroll
        for (int c = 0; c < LINES; ++c) acc[r][c] = REAL(0);
    const int line0 = j0 + lane * LINES;
    constexpr int PART = KC / WARPS;   // k of a warp's part of a chunk
    static_assert(LINES % VEC == 0 || VEC % LINES == 0, "lines per lane and vectors agree");
    constexpr int GROUPS = LINES >= VEC ? LINES / VEC : 1;   // vectors per lane per k
    constexpr int UNROLL = LINES >= 4 ? 4 : 16 / LINES;   // k of a lane's loads in flight at once
    static_assert(PART % UNROLL == 0, "whole unrolled steps per part");
    for (int kc = k_begin; kc < k_end; kc += KC) {
        __syncthreads();
        stage_short(s, A, lda, B, ldb, rows, r0, kc, k_end);
        __syncthreads();
        // UNROLL k at a time: their loads issued together, then their fmas.
#pragma unroll 1
        for (int u0 = 0; u0 < PART; u0 += UNROLL) {
            REAL lv[UNROLL][LINES];
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) {
                const int p = kc + warp * PART + u0 + u;
                if (LINES >= VEC) {
#pragma unroll
                    for (int g = 0; g < GROUPS; ++g) {
                        const Vec v = load_long(A, lda, B, ldb, lines, line0 + g * VEC, p, k_end);
#pragma unroll
                        for (int e = 0; e < VEC && g * VEC + e < LINES; ++e)
                            lv[u][g * VEC + e] = v.v[e];
                    }
                } else {
#pragma unroll
                    for (int e = 0; e < LINES; ++e)
                        lv[u][e] = (line0 + e < lines && p < k_end) ? L_AT(p, line0 + e) : REAL(0);
                }
            }
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) {
                const REAL* sp = &s[(warp * PART + u0 + u) * S_STRIDE];
#pragma unroll
                for (int r = 0; r < SHORT; ++r) {
                    const REAL sv = sp[r];
#pragma unroll
                    for (int c = 0; c < LINES; ++c) acc[r][c] = fma(sv, lv[u][c], acc[r][c]);
                }
            }
        }
    }
    // The warps' partials summed in shared memory in the order 0..WARPS-1, then stored by
    // all threads (consecutive threads along C's columns).
    static_assert(SHORT * LONG <= S_ELEMS, "the partials fit the staging buffer");
    __syncthreads();
    for (int w = 0; w < WARPS; ++w) {
        if (warp == w) {
#pragma unroll
            for (int r = 0; r < SHORT; ++r)
#pragma unroll
                for (int c = 0; c < LINES; ++c) {
                    REAL* slot = &s[r * LONG + lane * LINES + c];
                    *slot = w == 0 ? acc[r][c] : *slot + acc[r][c];
                }
        }
        __syncthreads();
    }
    for (int e = threadIdx.x; e < SHORT * LONG; e += THREADS) {
        int r, c;
        tile_element(e, r, c);
        const int gr = r0 + r, gj = j0 + c;
        if (gr < rows && gj < lines) store_c(&OUT_AT(C, gr, gj), s[r * LONG + c], alpha, beta);
    }
#endif
}
