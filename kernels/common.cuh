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
// When beta == 0, C is never read, so NaN or Inf in C cannot leak into the result.
// When SPLIT_K > 1 the launcher first runs scale_c (C *= beta) and the kernel adds
// its partial sums with atomics.
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

// C = beta * C (beta == 0 writes zeros), run before split-K kernels that accumulate with atomics.
extern "C" __global__ void scale_c(int m, int n, REAL beta, REAL* __restrict__ C, int ldc)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= m) return;
    // The grid's y extent is capped at 65535 blocks, so columns are walked in a loop.
    for (int j = blockIdx.y; j < n; j += gridDim.y) {
        REAL* c = C + (size_t)i + (size_t)j * ldc;
        *c = beta == REAL(0) ? REAL(0) : beta * *c;
    }
}

// Epilogue for one element: never reads C when beta == 0.
__device__ __forceinline__ void store_c(REAL* c, REAL acc, REAL alpha, REAL beta)
{
#if SPLIT_K > 1
    atomicAdd(c, alpha * acc);
#else
    *c = beta == REAL(0) ? alpha * acc : alpha * acc + beta * *c;
#endif
}
