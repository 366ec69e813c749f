// gemm_small: latency-bound products (a few microseconds of work). C = alpha * op(A) * op(B)
// + beta * C, float32 or float64, any m, n, k, all four transposes, any leading dimensions
// (ABI in common.cuh).
//
// Technique: where the whole product takes a few microseconds, what counts is the length of
// the chain each block walks (global load latency, k-steps, barriers), not the issue rate.
// So blocks are small (BM x BN of 16-64, many blocks for few SMs' worth of work), a thread
// holds a TM x TN tile of 1-4 x 1-4, and the block's threads form KSPLIT groups that each
// take their own BK-deep part of every staged k-slab (BK * KSPLIT deep), so a block walks
// k / KSPLIT k-steps. Each slab is loaded into registers before the previous one is computed
// (one global latency in flight behind the k-steps), then stored k-outer in shared memory,
// where a thread's TM rows (TN columns) of a k-step are contiguous: one vector load each.
// At the end every group writes its partial tile to shared memory and all threads sum the
// groups in the fixed order 0..KSPLIT-1 while storing C down its columns (coalesced): the
// same bits on every run. Edge tiles load zeros; element loads (any alignment).
#include "common.cuh"

#ifndef BM
#define BM 32          // rows of C per block
#endif
#ifndef BN
#define BN 32          // columns of C per block
#endif
#ifndef BK
#define BK 8           // k-steps of each group per slab
#endif
#ifndef TM
#define TM 2           // rows of C per thread
#endif
#ifndef TN
#define TN 2           // columns of C per thread
#endif
#ifndef KSPLIT
#define KSPLIT 4       // thread groups, each taking its own BK of every slab
#endif
#define ROW_THREADS (BM / TM)               // a group's threads along m; rows strided by this
#define COL_THREADS (BN / TN)               // a group's threads along n
#define GROUP_THREADS (ROW_THREADS * COL_THREADS)
#ifndef THREADS
#define THREADS (GROUP_THREADS * KSPLIT)    // passed by tunedgemm/families/small.py
#endif
#define DEPTH (BK * KSPLIT)                 // k of one slab
#define A_PER_THREAD (BM * DEPTH / THREADS) // register-staged elements of op(A) per slab
#define B_PER_THREAD (BN * DEPTH / THREADS)
// Rows padded to keep each row 16-byte aligned: a thread's TM (TN) elements of a k-step are
// contiguous, read with one vector load (LDS.128 at 4 floats or 2 doubles).
#define PAD (16 / (int)sizeof(REAL))

static_assert(THREADS == GROUP_THREADS * KSPLIT, "THREADS must match the tiling");
static_assert(A_PER_THREAD * THREADS == BM * DEPTH && B_PER_THREAD * THREADS == BN * DEPTH,
              "every thread stages whole elements of both slabs");

// A thread's TM (or TN) elements of one k-step, read from shared memory in one access.
template <int N> struct __align__(N * sizeof(REAL) <= 16 ? N * sizeof(REAL) : 16) Frag { REAL v[N]; };

// Element e of this thread's share of a slab: its (row or column, k) within the slab, walking
// the operand's unit-stride dimension fastest so that a warp's loads coalesce.
__device__ __forceinline__ REAL load_a(const REAL* __restrict__ A, int lda, int m, int k,
                                       int row0, int k0, int idx)
{
#if TRANS_A
    const int i = idx / DEPTH, p = idx % DEPTH;
#else
    const int i = idx % BM, p = idx / BM;
#endif
    const int gi = row0 + i, gp = k0 + p;
    return (gi < m && gp < k) ? A_AT(gi, gp) : REAL(0);
}

__device__ __forceinline__ REAL load_b(const REAL* __restrict__ B, int ldb, int n, int k,
                                       int col0, int k0, int idx)
{
#if TRANS_B
    const int j = idx % BN, p = idx / BN;
#else
    const int j = idx / DEPTH, p = idx % DEPTH;
#endif
    const int gj = col0 + j, gp = k0 + p;
    return (gj < n && gp < k) ? B_AT(gp, gj) : REAL(0);
}

extern "C" __global__ void __launch_bounds__(THREADS, 1)
gemm(int m, int n, int k, REAL alpha, const REAL* __restrict__ A, int lda,
     const REAL* __restrict__ B, int ldb, REAL beta, REAL* __restrict__ C, int ldc)
{
    extern __shared__ __align__(16) unsigned char smem_raw[];
    REAL (*As)[BM + PAD] = reinterpret_cast<REAL (*)[BM + PAD]>(smem_raw);
    REAL (*Bs)[BN + PAD] = reinterpret_cast<REAL (*)[BN + PAD]>(
        smem_raw + sizeof(REAL) * DEPTH * (BM + PAD));

    const int tid = threadIdx.x;
    const int row0 = blockIdx.x * BM;
    const int col0 = blockIdx.y * BN;
    const int group = tid / GROUP_THREADS;
    const int lane = tid % GROUP_THREADS;
    const int tr = lane % ROW_THREADS;  // rows tr * TM .. tr * TM + TM - 1 of the tile
    const int tc = lane / ROW_THREADS;  // columns tc * TN .. tc * TN + TN - 1

    REAL acc[TM][TN];
#pragma unroll
    for (int r = 0; r < TM; ++r)
#pragma unroll
        for (int c = 0; c < TN; ++c) acc[r][c] = REAL(0);

    REAL a_next[A_PER_THREAD], b_next[B_PER_THREAD];
#pragma unroll
    for (int e = 0; e < A_PER_THREAD; ++e) a_next[e] = load_a(A, lda, m, k, row0, 0, tid + e * THREADS);
#pragma unroll
    for (int e = 0; e < B_PER_THREAD; ++e) b_next[e] = load_b(B, ldb, n, k, col0, 0, tid + e * THREADS);

    for (int k0 = 0; k0 < k; k0 += DEPTH) {
#pragma unroll
        for (int e = 0; e < A_PER_THREAD; ++e) {
            const int idx = tid + e * THREADS;
#if TRANS_A
            As[idx % DEPTH][idx / DEPTH] = a_next[e];
#else
            As[idx / BM][idx % BM] = a_next[e];
#endif
        }
#pragma unroll
        for (int e = 0; e < B_PER_THREAD; ++e) {
            const int idx = tid + e * THREADS;
#if TRANS_B
            Bs[idx / BN][idx % BN] = b_next[e];
#else
            Bs[idx % DEPTH][idx / DEPTH] = b_next[e];
#endif
        }
        __syncthreads();
        if (k0 + DEPTH < k) {  // the next slab's loads fly while this one is computed
#pragma unroll
            for (int e = 0; e < A_PER_THREAD; ++e)
                a_next[e] = load_a(A, lda, m, k, row0, k0 + DEPTH, tid + e * THREADS);
#pragma unroll
            for (int e = 0; e < B_PER_THREAD; ++e)
                b_next[e] = load_b(B, ldb, n, k, col0, k0 + DEPTH, tid + e * THREADS);
        }
#pragma unroll
        for (int q = 0; q < BK; ++q) {
            const int p = group * BK + q;
            Frag<TM> a = *reinterpret_cast<const Frag<TM>*>(&As[p][tr * TM]);
            Frag<TN> b = *reinterpret_cast<const Frag<TN>*>(&Bs[p][tc * TN]);
#pragma unroll
            for (int r = 0; r < TM; ++r)
#pragma unroll
                for (int c = 0; c < TN; ++c) acc[r][c] = fma(a.v[r], b.v[c], acc[r][c]);
        }
        __syncthreads();
    }

#if KSPLIT == 1
#pragma unroll
    for (int c = 0; c < TN; ++c) {
        const int gj = col0 + tc * TN + c;
#pragma unroll
        for (int r = 0; r < TM; ++r) {
            const int gi = row0 + tr * TM + r;
            if (gi < m && gj < n) store_c(C + (size_t)gi + (size_t)gj * ldc, acc[r][c], alpha, beta);
        }
    }
#else
    // Each group's partial tile, column-major in shared memory (the slabs are no longer read:
    // the loop ended on a barrier), then the sum over groups in a fixed order.
    REAL* partial = reinterpret_cast<REAL*>(smem_raw);
#pragma unroll
    for (int c = 0; c < TN; ++c)
#pragma unroll
        for (int r = 0; r < TM; ++r)
            partial[group * BM * BN + (tc * TN + c) * BM + tr * TM + r] = acc[r][c];
    __syncthreads();
    for (int e = tid; e < BM * BN; e += THREADS) {
        const int gi = row0 + e % BM, gj = col0 + e / BM;
        if (gi < m && gj < n) {
            REAL sum = partial[e];
#pragma unroll
            for (int g = 1; g < KSPLIT; ++g) sum += partial[g * BM * BN + e];
            store_c(C + (size_t)gi + (size_t)gj * ldc, sum, alpha, beta);
        }
    }
#endif
}
