// Shared definitions for every tunedgemm kernel template.
#pragma once
//
// ABI shared by all templates (the launcher in tunedgemm/launch.py relies on it):
//
//   extern "C" __global__ void gemm(int m, int n, int k,
//       REAL alpha, const REAL* A, int lda, const REAL* B, int ldb,
//       REAL beta, REAL* C, int ldc);
//
// computes C = alpha * op(A) * op(B) + beta * C in BLAS column-major terms:
//   op(A)(i, p) = TRANS_A ? A[p + i * lda] : A[i + p * lda]    (m x k)
//   op(B)(p, j) = TRANS_B ? B[j + p * ldb] : B[p + j * ldb]    (k x n)
//   C(i, j)     = C[i + j * ldc]                               (m x n)
// When beta == 0, C is never read, so NaN or Inf in C cannot leak into the result, and a zero
// result is +0 (as BLAS's C = 0 + alpha * sum gives), even where alpha * sum is -0.
//
// Split-K (SPLIT_K > 1), deterministic: the launcher passes a workspace as C, with ldc its
// leading dimension; k-slice z (blockIdx.z) writes its raw m x n partial sum, alpha and beta
// unapplied, at C + z * ldc * n (an empty slice writes zeros). Then splitk_reduce, below, sums
// the slices in the fixed order 0..SPLIT_K-1 and applies the epilogue to the caller's C: the
// same bits on every run, whatever the blocks' schedule. (The alternative, slices adding
// into C in turn behind per-tile flags, as CUTLASS's serial split-K does, saves the
// workspace but makes blocks wait on one another and needs flag buffers per stream; at the
// small m x n where split-K is chosen, the workspace's 2 * SPLIT_K * m * n extra elements
// of traffic are small against the product's.)
//
// Call-time defines (set by the launcher, never tuned):
#ifndef DTYPE
#define DTYPE 0        // 0: float32, 1: float64
#endif
#ifndef TRANS_A
#define TRANS_A 0      // 1: op(A) = A^T, so A's unit stride runs along k
#endif
#ifndef TRANS_B
#define TRANS_B 0      // 1: op(B) = B^T, so B's unit stride runs along n
#endif
#ifndef ALIGNED
#define ALIGNED 0      // 1: A, B, C are 16-byte aligned and lda, ldb, ldc are multiples of 16 bytes
#endif
#ifndef SPLIT_K
#define SPLIT_K 1      // number of k slices; a tunable of some families, 1 elsewhere
#endif

#include "tiling.cuh"

#if DTYPE == 0
typedef float REAL;
#else
typedef double REAL;
#endif

// Elements of op(A) and op(B) addressed as if both were stored column-major.
#if TRANS_A
#define A_AT(i, p) A[(size_t)(p) + (size_t)(i) * lda]
#else
#define A_AT(i, p) A[(size_t)(i) + (size_t)(p) * lda]
#endif
#if TRANS_B
#define B_AT(p, j) B[(size_t)(j) + (size_t)(p) * ldb]
#else
#define B_AT(p, j) B[(size_t)(p) + (size_t)(j) * ldb]
#endif

// The BLAS epilogue of one element: alpha * acc + beta * old, one rounding of the product and
// the sum as fma gives. With beta == 0, old is never read and fma(alpha, acc, +0) rounds as
// alpha * acc does but turns -0 into +0 (round to nearest; fma keeps nvcc from dropping it).
__device__ __forceinline__ REAL blas_epilogue(REAL acc, REAL alpha, REAL beta, const REAL* old)
{
    return beta == REAL(0) ? fma(alpha, acc, REAL(0)) : fma(beta, *old, alpha * acc);
}

#if SPLIT_K > 1
// The workspace slice of this block's k-slice (C and ldc name the workspace under split-K).
#define SPLIT_SLICE(C, ldc, n) ((C) + (size_t)blockIdx.z * (size_t)(ldc) * (size_t)(n))

// An empty k-slice (k shorter than SPLIT_K slices of k-tiles) still owns its block tile of the
// workspace, which splitk_reduce reads: it writes zeros there.
__device__ __forceinline__ void zero_slice_tile(REAL* W, int ldw, int m, int n, int row0,
                                                int col0, int rows, int cols, int threads)
{
    for (int e = threadIdx.x; e < rows * cols; e += threads) {
        const int i = row0 + e % rows, j = col0 + e / rows;
        if (i < m && j < n) W[(size_t)i + (size_t)j * ldw] = REAL(0);
    }
}
#endif

// Epilogue for one element: never reads C when beta == 0. Under split-K, the raw partial sum
// into the workspace (splitk_reduce applies alpha and beta).
__device__ __forceinline__ void store_c(REAL* c, REAL acc, REAL alpha, REAL beta)
{
#if SPLIT_K > 1
    *c = acc;
#else
    *c = blas_epilogue(acc, alpha, beta, c);
#endif
}

#if DTYPE == 0
// Four consecutive elements of a column with 16-byte accesses (c 16-byte aligned), as store_c.
__device__ __forceinline__ void store4(float* c, float4 v, float alpha, float beta)
{
#if SPLIT_K > 1
    *reinterpret_cast<float4*>(c) = v;
#else
    // Spelled out rather than blas_epilogue four times: one 16-byte load of the old values.
    float4 o;
    if (beta == 0.f) {
        o = make_float4(fmaf(alpha, v.x, 0.f), fmaf(alpha, v.y, 0.f), fmaf(alpha, v.z, 0.f),
                        fmaf(alpha, v.w, 0.f));
    } else {
        const float4 old = *reinterpret_cast<const float4*>(c);
        o = make_float4(fmaf(beta, old.x, alpha * v.x), fmaf(beta, old.y, alpha * v.y),
                        fmaf(beta, old.z, alpha * v.z), fmaf(beta, old.w, alpha * v.w));
    }
    *reinterpret_cast<float4*>(c) = o;
#endif
}
#endif

#if SPLIT_K > 1
// Vectors of the split-K reduction: 16 bytes of a column when ALIGNED, one element otherwise.
#define REDUCE_VEC (ALIGNED ? 16 / (int)sizeof(REAL) : 1)
struct __align__(16) ReducePack { REAL v[16 / sizeof(REAL)]; };

// C = alpha * (W_0 + W_1 + ... + W_{SPLIT_K-1}) + beta * C, slices summed in that fixed order;
// W_z = W + z * ldw * n, each m x n with leading dimension ldw (a multiple of 16 bytes). One
// thread per REDUCE_VEC rows of a column, consecutive threads down the column: coalesced
// 16-byte loads when ALIGNED (C's ldc too), scalar ones otherwise and at the column's end.
// A grid of at least a thread per element (the launcher's where the 16-byte grid would leave
// SMs idle: Plan.reduce_grid) takes one element a thread instead, so that four times the
// threads keep loads in flight. Both add each element's slices in the same order with the
// same epilogue: the same bits. Never reads C when beta == 0.
extern "C" __global__ void __launch_bounds__(256)
splitk_reduce(int m, int n, REAL alpha, const REAL* __restrict__ W, int ldw, REAL beta,
              REAL* __restrict__ C, int ldc)
{
    constexpr int VEC = REDUCE_VEC;
    const bool one_each = (long long)gridDim.x * blockDim.x >= (long long)m * n;
    const int vec = one_each ? 1 : VEC;  // rows of a column per thread
    const long long per_column = (m + vec - 1) / vec;
    const long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= per_column * n) return;
    const int j = (int)(idx / per_column);
    const int i = (int)(idx - (long long)j * per_column) * vec;
    const size_t slice = (size_t)ldw * (size_t)n;
    const REAL* w = W + (size_t)i + (size_t)j * ldw;
    REAL* c = C + (size_t)i + (size_t)j * ldc;
    if (VEC > 1 && !one_each && i + VEC <= m) {
        ReducePack sum = *reinterpret_cast<const ReducePack*>(w);
#pragma unroll
        for (int z = 1; z < SPLIT_K; ++z) {
            const ReducePack part = *reinterpret_cast<const ReducePack*>(w + z * slice);
#pragma unroll
            for (int e = 0; e < VEC; ++e) sum.v[e] += part.v[e];
        }
        ReducePack out;
        if (beta == REAL(0)) {
#pragma unroll
            for (int e = 0; e < VEC; ++e) out.v[e] = fma(alpha, sum.v[e], REAL(0));
        } else {
            const ReducePack old = *reinterpret_cast<const ReducePack*>(c);
#pragma unroll
            for (int e = 0; e < VEC; ++e) out.v[e] = fma(beta, old.v[e], alpha * sum.v[e]);
        }
        *reinterpret_cast<ReducePack*>(c) = out;
        return;
    }
    for (int e = 0; e < vec && i + e < m; ++e) {
        REAL sum = w[e];
#pragma unroll
        for (int z = 1; z < SPLIT_K; ++z) sum += w[e + z * slice];
        c[e] = blas_epilogue(sum, alpha, beta, c + e);
    }
}
#endif  // SPLIT_K > 1
