// gemm_gemv_staged: GEMV-like panels whose long operand runs along k, staged through shared
// memory by a cp.async pipeline. C = alpha * op(A) * op(B) + beta * C, float32 or float64,
// any m, n, k, all four transposes, any leading dimensions (ABI in common.cuh), split-K
// through splitk_reduce.
//
// Why a second panel kernel: gemm_gemv.cu's along-k path gives each lane its own vectors of
// k, so every fma's short-operand value is a distinct shared-memory read (a 16-byte read
// feeds 4 x GROUP fmas); at SHORT 16 that bounds it, with the loads of a chunk in flight only
// until its fmas begin (Nsight Compute, docs/tuning.md: 24% occupancy, DRAM at a third of
// its peak). Here the lanes own lines of the long side instead, so all 32 lanes read the same
// short-operand vector (a broadcast: one shared-memory wavefront a warp) and each lane's own
// line comes from the staged tile; the long operand arrives by 16-byte cp.async, STAGES - 1
// stages ahead of the fmas, with one barrier a stage.
//
// A block owns SHORT x LONG of C (SIDE 0: SHORT rows by LONG columns, the long operand op(B)
// untransposed; SIDE 1: LONG rows by SHORT columns, op(A) = A^T). LONG = 32 * LANE_LINES: lane
// l owns lines l, l + 32, ... (so that 8 lanes' 16-byte reads of consecutive lines, rows
// STRIDE apart, land on 8 distinct bank quads). The warps take consecutive parts of each
// BK-deep stage (and at SHORT 16, halves of the rows: WARP_ROWS); at the end the parts'
// partials are summed in shared memory in a fixed order: the same bits on every run. Edge rows, lines and k read zeros (cp.async's
// zero fill).
#include "common.cuh"

#ifndef SIDE
#define SIDE 0          // 0: m is C's short side (BM = SHORT); 1: n is (BN = SHORT)
#endif
#ifndef SHORT
#define SHORT 16        // C's rows (SIDE 0) or columns (SIDE 1) per block
#endif
#ifndef LANE_LINES
#define LANE_LINES 2    // long-side lines per lane: LONG = 32 * LANE_LINES
#endif
#ifndef BK
#define BK 64           // k of one stage (gemv_like.GemvConfig.stage_k)
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 3
#endif
#ifndef STAGES
#define STAGES 3
#endif
#ifndef SMEM_BYTES
#define SMEM_BYTES 0    // the dynamic shared memory the launcher gives (gemv_like.GemvConfig.smem_bytes)
#endif

#define LONG (32 * LANE_LINES)
#include "gemv_panel.cuh"
// A warp's rows of the short operand: at most 8, since ptxas keeps every row's 16-byte read of
// a step live at once (SHORT 16 took 122 registers with one line a lane); at SHORT 16 two
// warps take the same k and lines, each 8 of the rows, and read the lines from shared memory
// twice (a wavefront per 8 lanes, against a broadcast per row).
#define WARP_ROWS (SHORT < 8 ? SHORT : 8)
#define ROW_GROUPS (SHORT / WARP_ROWS)
#define WARPS_K (WARPS / ROW_GROUPS)   // warps over k
#define KW (BK / WARPS_K)              // k of a warp's part of a stage
static_assert(WARPS % ROW_GROUPS == 0 && SHORT % WARP_ROWS == 0, "whole row groups");
static_assert(KW % VEC == 0 && 256 % BK == 0, "whole vectors a warp; whole stages a chunk");
// The staged rows: [line][k] and [row][k], a 16-byte pad a row (stride = 4 banks mod 32).
#define STRIDE (BK + VEC)
#define STAGE_ELEMS ((LONG + SHORT) * STRIDE)
#define PART_STRIDE (LONG + 1)         // the partials' rows: odd, so that a column's reads spread
static_assert(SMEM_BYTES >= STAGES * STAGE_ELEMS * (int)sizeof(REAL) &&
              SMEM_BYTES >= WARPS_K * SHORT * PART_STRIDE * (int)sizeof(REAL),
              "the launcher's shared memory holds the stages and the partials");

static_assert(L_ALONG_K, "this kernel streams a long operand that runs along k");

// One stage's rows of an operand into dst as [row][k], rows STRIDE apart: the long one's
// LONG lines from line row0 (LONG_OPERAND) or the short one's SHORT rows from row row0, over
// k in [kc, kc + BK). 16-byte copies along k where ALIGNED and the rows run along k (a vector
// that crosses k_end reads only its part), element copies otherwise; zeros past every edge.
// Consecutive threads walk the operand's unit stride, so that the loads coalesce.
template <bool LONG_OPERAND>
__device__ __forceinline__ void stage_rows(REAL* dst, const REAL* __restrict__ A, int lda,
                                           const REAL* __restrict__ B, int ldb, int rows,
                                           int row0, int kc, int k_end)
{
    constexpr int COUNT = LONG_OPERAND ? LONG : SHORT;
    constexpr bool ALONG_K = LONG_OPERAND || S_ALONG_K;
#define ROW_AT(row, p) (LONG_OPERAND ? &L_AT(p, row) : &S_AT(row, p))
    if constexpr (ALIGNED && ALONG_K) {
        for (int v = threadIdx.x; v < COUNT * (BK / VEC); v += THREADS) {
            const int row = v / (BK / VEC), p = (v % (BK / VEC)) * VEC;
            const int gr = row0 + row, gp = kc + p;
            const int left = gr < rows ? max(0, min(VEC, k_end - gp)) : 0;
            cp_async<16>(&dst[row * STRIDE + p], left ? ROW_AT(gr, gp) : A,
                         left * (int)sizeof(REAL));
        }
    } else {
        for (int e = threadIdx.x; e < COUNT * BK; e += THREADS) {
            const int row = ALONG_K ? e / BK : e % COUNT, p = ALONG_K ? e % BK : e / COUNT;
            const int gr = row0 + row, gp = kc + p;
            const bool in = gr < rows && gp < k_end;
            cp_async<sizeof(REAL)>(&dst[row * STRIDE + p], in ? ROW_AT(gr, gp) : A,
                                   in ? (int)sizeof(REAL) : 0);
        }
    }
#undef ROW_AT
}

// 3 blocks an SM, as their shared memory allows (gemv_like.STAGED_SMEM_AIM): at the 128
// registers ptxas otherwise takes, 2 fit, and at SHORT 16 their 16 warps leave the pipeline
// too few loads in flight.
extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
gemm(int m, int n, int k, REAL alpha, const REAL* __restrict__ A, int lda,
     const REAL* __restrict__ B, int ldb, REAL beta, REAL* __restrict__ C, int ldc)
{
    const Panel b = panel_of_block(m, n, k, 256);   // (gemm_gemv.cu's chunks: gemv_like.CHUNK)
    const int rows = b.rows, lines = b.lines, r0 = b.r0, j0 = b.j0;
    const int k_begin = b.k_begin, k_end = b.k_end;
#if SPLIT_K > 1
    C = SPLIT_SLICE(C, ldc, n);
    if (zero_if_empty_slice(C, ldc, m, n, b)) return;   // zeros for splitk_reduce to add
#endif
    extern __shared__ __align__(16) unsigned char smem_raw[];
    REAL* smem = reinterpret_cast<REAL*>(smem_raw);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int row_first = warp % ROW_GROUPS * WARP_ROWS, k_part = warp / ROW_GROUPS;
    const int stages = (k_end - k_begin + BK - 1) / BK;

    // Stage t's lines, then its short rows, into buffer t % STAGES.
    auto issue = [&](int t) {
        REAL* buffer = smem + (t % STAGES) * STAGE_ELEMS;
        const int kc = k_begin + t * BK;
        // (opaque: the copies' address products stay per-stage multiplies rather than 64-bit
        // pointers held across the k loop, one a copy, which spill.)
        const int lda_ = opaque(lda), ldb_ = opaque(ldb);
        stage_rows<true>(buffer, A, lda_, B, ldb_, lines, j0, kc, k_end);
        stage_rows<false>(buffer + LONG * STRIDE, A, lda_, B, ldb_, rows, r0, kc, k_end);
    };

    REAL acc[WARP_ROWS][LANE_LINES];
#pragma unroll
    for (int r = 0; r < WARP_ROWS; ++r)
#pragma unroll
        for (int c = 0; c < LANE_LINES; ++c) acc[r][c] = REAL(0);

#pragma unroll
    for (int t = 0; t < STAGES - 1; ++t) {
        if (t < stages) issue(t);
        cp_async_commit();   // (an empty group past the end keeps the count of the wait)
    }
#pragma unroll 1
    for (int t = 0; t < stages; ++t) {
        cp_async_wait<STAGES - 2>();
        __syncthreads();   // stage t landed for every thread; stage t - 1 is read by all
        if (t + STAGES - 1 < stages) issue(t + STAGES - 1);
        cp_async_commit();
        const REAL* lines_s = smem + (t % STAGES) * STAGE_ELEMS;
        const REAL* short_s = lines_s + (LONG + row_first) * STRIDE;
        // (One step at a time: unrolled, ptxas holds more steps' reads at once and spills
        // under the 3-block bound; 3 blocks' 24 warps hide the reads' latency instead.)
#pragma unroll 1
        for (int step = 0; step < KW / VEC; ++step) {
            const int p = k_part * KW + step * VEC;
            Vec l[LANE_LINES];
#pragma unroll
            for (int c = 0; c < LANE_LINES; ++c)
                l[c] = *reinterpret_cast<const Vec*>(&lines_s[(c * 32 + lane) * STRIDE + p]);
#pragma unroll
            for (int r = 0; r < WARP_ROWS; ++r) {
                const Vec sv = *reinterpret_cast<const Vec*>(&short_s[r * STRIDE + p]);
#pragma unroll
                for (int c = 0; c < LANE_LINES; ++c)
#pragma unroll
                    for (int e = 0; e < VEC; ++e) acc[r][c] = fma(sv.v[e], l[c].v[e], acc[r][c]);
            }
        }
    }
    cp_async_wait<0>();
    __syncthreads();   // every stage read: the buffer now holds the warps' partials

    // The k-parts' partials at [part][row][line]; each element summed over the parts
    // 0..WARPS_K-1 in order.
    REAL* parts = smem;
#pragma unroll
    for (int r = 0; r < WARP_ROWS; ++r)
#pragma unroll
        for (int c = 0; c < LANE_LINES; ++c)
            parts[(k_part * SHORT + row_first + r) * PART_STRIDE + c * 32 + lane] = acc[r][c];
    __syncthreads();
    for (int e = threadIdx.x; e < SHORT * LONG; e += THREADS) {
        int r, c;
        tile_element(e, r, c);
        const int gr = r0 + r, gj = j0 + c;
        if (gr >= rows || gj >= lines) continue;
        REAL sum = parts[r * PART_STRIDE + c];
#pragma unroll
        for (int part = 1; part < WARPS_K; ++part) sum += parts[(part * SHORT + r) * PART_STRIDE + c];
        store_c(&OUT_AT(C, gr, gj), sum, alpha, beta);
    }
}
