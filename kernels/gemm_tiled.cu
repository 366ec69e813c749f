// gemm_tiled: the portable baseline. C = alpha * op(A) * op(B) + beta * C, float32 or float64,
// any m, n, k, all four transposes, any leading dimensions (ABI in common.cuh).
//
// Technique: one BM x BN tile of C per block; each k-step stages a BM x BK slice of op(A)
// and a BK x BN slice of op(B) in shared memory (both stored k-outer, so the inner loop
// reads contiguous rows) and each thread accumulates a TM x TN register tile. Thread rows
// are strided by BM/TM (and columns by BN/TN) so that a warp's shared-memory reads hit
// distinct banks and its C stores coalesce. Global loads walk the unit-stride dimension
// of each operand (chosen by TRANS_A / TRANS_B at compile time); edge tiles load zeros.
#include "common.cuh"

#ifndef BM
#define BM 64          // rows of C per block
#endif
#ifndef BN
#define BN 64          // columns of C per block
#endif
#ifndef BK
#define BK 8           // depth of the k-slice staged in shared memory
#endif
#ifndef TM
#define TM 4           // rows of C per thread
#endif
#ifndef TN
#define TN 4           // columns of C per thread
#endif
// Derived (passed by tunedgemm/families/tiled.py; defaults here match the defaults above).
#ifndef THREADS
#define THREADS ((BM / TM) * (BN / TN))
#endif
#define ROW_THREADS (BM / TM)   // threads along m; thread rows are strided by this
#define COL_THREADS (BN / TN)   // threads along n
#define PAD 1                   // one extra element per shared row against bank conflicts

extern "C" __global__ void __launch_bounds__(THREADS)
gemm(int m, int n, int k, REAL alpha, const REAL* __restrict__ A, int lda,
     const REAL* __restrict__ B, int ldb, REAL beta, REAL* __restrict__ C, int ldc)
{
    extern __shared__ __align__(16) unsigned char smem_raw[];
    REAL (*As)[BM + PAD] = reinterpret_cast<REAL (*)[BM + PAD]>(smem_raw);
    REAL (*Bs)[BN + PAD] = reinterpret_cast<REAL (*)[BN + PAD]>(smem_raw + sizeof(REAL) * BK * (BM + PAD));

    const int tid = threadIdx.x;
    const int row0 = blockIdx.x * BM;
    const int col0 = blockIdx.y * BN;
    const int tr = tid % ROW_THREADS;
    const int tc = tid / ROW_THREADS;

    REAL acc[TM][TN];
#pragma unroll
    for (int r = 0; r < TM; ++r)
#pragma unroll
        for (int c = 0; c < TN; ++c) acc[r][c] = REAL(0);

    for (int k0 = 0; k0 < k; k0 += BK) {
        // Stage op(A)[row0:row0+BM, k0:k0+BK], walking A's unit-stride dimension fastest.
#pragma unroll
        for (int idx = tid; idx < BM * BK; idx += THREADS) {
#if TRANS_A
            const int i = idx / BK, p = idx % BK;
#else
            const int i = idx % BM, p = idx / BM;
#endif
            const int gi = row0 + i, gp = k0 + p;
            As[p][i] = (gi < m && gp < k) ? A_AT(gi, gp) : REAL(0);
        }
        // Stage op(B)[k0:k0+BK, col0:col0+BN] the same way.
#pragma unroll
        for (int idx = tid; idx < BN * BK; idx += THREADS) {
#if TRANS_B
            const int j = idx % BN, p = idx / BN;
#else
            const int j = idx / BK, p = idx % BK;
#endif
            const int gj = col0 + j, gp = k0 + p;
            Bs[p][j] = (gj < n && gp < k) ? B_AT(gp, gj) : REAL(0);
        }
        __syncthreads();

#pragma unroll
        for (int p = 0; p < BK; ++p) {
            REAL a[TM], b[TN];
#pragma unroll
            for (int r = 0; r < TM; ++r) a[r] = As[p][tr + r * ROW_THREADS];
#pragma unroll
            for (int c = 0; c < TN; ++c) b[c] = Bs[p][tc + c * COL_THREADS];
#pragma unroll
            for (int r = 0; r < TM; ++r)
#pragma unroll
                for (int c = 0; c < TN; ++c) acc[r][c] = fma(a[r], b[c], acc[r][c]);
        }
        __syncthreads();
    }

#pragma unroll
    for (int c = 0; c < TN; ++c) {
        const int gj = col0 + tc + c * COL_THREADS;
#pragma unroll
        for (int r = 0; r < TM; ++r) {
            const int gi = row0 + tr + r * ROW_THREADS;
            if (gi < m && gj < n) store_c(C + (size_t)gi + (size_t)gj * ldc, acc[r][c], alpha, beta);
        }
    }
}
