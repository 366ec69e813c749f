// gemv_panel: what the GEMV-like panel kernels (gemm_gemv.cu, gemm_gemv_staged.cu) share:
// the operands in a panel's own terms, a block's place in C, and its k-slice of whole chunks.
// Included after common.cuh and the kernel's SIDE, SHORT and LONG.
#pragma once

#ifndef WARPS
#define WARPS 8
#endif
#ifndef THREADS
#define THREADS (WARPS * 32)   // passed by tunedgemm/gemv_like.py
#endif
static_assert(THREADS == WARPS * 32, "THREADS must match WARPS");


#define VEC (16 / (int)sizeof(REAL))   // elements of one 16-byte access: 4 floats, 2 doubles
// S (SHORT x k) the short operand, L (k x long) the long one, out (short x long) C.
#if SIDE == 0
#define S_AT(r, p) A_AT(r, p)
#define L_AT(p, j) B_AT(p, j)
#define OUT_AT(C, r, j) (C)[(size_t)(r) + (size_t)(j) * ldc]
#define L_ALONG_K (!TRANS_B)
#define S_ALONG_K (TRANS_A)
#define L_LD ldb
#else
#define S_AT(r, p) B_AT(p, r)
#define L_AT(p, j) A_AT(j, p)
#define OUT_AT(C, r, j) (C)[(size_t)(j) + (size_t)(r) * ldc]
#define L_ALONG_K (TRANS_A)
#define S_ALONG_K (!TRANS_B)
#define L_LD lda
#endif

struct __align__(16) Vec { REAL v[VEC]; };

// A block's panel: the short side's extent (rows) and first row (r0), the long side's
// extent (lines) and first line (j0), and its k in [k_begin, k_end).
struct Panel { int rows, lines, r0, j0, k_begin, k_end; };

// This block's panel: SIDE 0 puts the short side on grid x and the lines on y, SIDE 1 the
// other way round; k is a contiguous range of whole `chunk`-deep chunks per k-slice (grid z,
// gemv_like.CHUNK). (In 64 bits: k near INT_MAX would overflow the rounding.)
__device__ __forceinline__ Panel panel_of_block(int m, int n, int k, int chunk)
{
    Panel b;
#if SIDE == 0
    b.rows = m, b.lines = n, b.r0 = blockIdx.x * SHORT, b.j0 = blockIdx.y * LONG;
#else
    b.rows = n, b.lines = m, b.r0 = blockIdx.y * SHORT, b.j0 = blockIdx.x * LONG;
#endif
    const long long chunks = ((long long)k + chunk - 1) / chunk;
    const long long per_slice = (chunks + SPLIT_K - 1) / SPLIT_K;
    b.k_begin = (int)min((long long)k, (long long)blockIdx.z * per_slice * chunk);
    b.k_end = (int)min((long long)k, (long long)b.k_begin + per_slice * chunk);
    return b;
}

// Element e of a block's SHORT x LONG tile of C as (row r, line c): consecutive e along C's
// unit stride (rows at SIDE 0, lines at SIDE 1), so that the stores coalesce.
__device__ __forceinline__ void tile_element(int e, int& r, int& c)
{
#if SIDE == 0
    r = e % SHORT, c = e / SHORT;
#else
    c = e % LONG, r = e / LONG;
#endif
}

#if SPLIT_K > 1
// Where this block's k-slice is empty (k shorter than SPLIT_K slices of chunks), it still
// owns its tile of the workspace W, which splitk_reduce reads: zeros there, and true.
__device__ __forceinline__ bool zero_if_empty_slice(REAL* W, int ldw, int m, int n,
                                                    const Panel& b)
{
    if (b.k_begin < b.k_end) return false;
#if SIDE == 0
    zero_slice_tile(W, ldw, m, n, b.r0, b.j0, SHORT, LONG, THREADS);
#else
    zero_slice_tile(W, ldw, m, n, b.j0, b.r0, LONG, SHORT, THREADS);
#endif
    return true;
}
#endif
