// tf32_split: the two passes around cuBLAS's TF32 GEMM that make a float32-accurate "3xtf32"
// product of it (tunedgemm/tf32_cublas.py drives them; docs/precision.md has the measurements).
//
//   split_planes: op(X) (rows x cols, any transpose and leading dimension) into two TF32
//     planes of a column-major destination, big = tf32(x) and small = tf32(x - big), both
//     rounded to nearest, so the tensor cores, which drop the low 13 bits of a float32
//     operand, lose nothing of either. A finite x whose rounding would overflow keeps its
//     truncated big part; a non-finite x is its own big part, with small 0. The transpose
//     goes through a 32 x 32 shared tile, so that reads and writes are both coalesced.
//   finish: where the product W (alpha op(A) op(B), from the GEMMs) is finite, C = W +
//     beta C (nothing to do where W is C itself and beta is 0); where it is Inf or NaN, C is
//     what IEEE float32 gives, alpha times an FMA chain over op(A) and op(B) plus beta C, as
//     the tensor-core families' epilogues recompute such sums (kernels/sgemm_tf32.cu).

#define TILE 32
#define ROWS 8    // threadIdx.y extent: each thread moves TILE / ROWS elements

__device__ __forceinline__ float tf32_rn(float x)
{
    unsigned r;
    asm("cvt.rn.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(x));
    return __uint_as_float(r);
}

// op(X)(r, c) for column-major X: X[r + c ld], or X[c + r ld] when transposed.
__device__ __forceinline__ long long at(int r, int c, int ld, int trans)
{
    return trans ? (long long)c + (long long)r * ld : (long long)r + (long long)c * ld;
}

extern "C" __global__ void __launch_bounds__(TILE * ROWS)
split_planes(int rows, int cols, const float* __restrict__ X, int ld, int trans,
             float* __restrict__ D, int ldd, long long big_offset, long long small_offset)
{
    __shared__ float tile[TILE][TILE + 1];   // [r][c], padded against bank conflicts
    const int r0 = blockIdx.x * TILE, c0 = blockIdx.y * TILE;
    const int tx = threadIdx.x, ty = threadIdx.y;
    // Load with the lanes along X's unit stride: c when transposed, else r.
    for (int j = ty; j < TILE; j += ROWS) {
        const int r = trans ? r0 + j : r0 + tx, c = trans ? c0 + tx : c0 + j;
        if (r < rows && c < cols) {
            const float v = X[at(r, c, ld, trans)];
            if (trans) tile[j][tx] = v; else tile[tx][j] = v;
        }
    }
    __syncthreads();
    // Store with the lanes along r, the destination's unit stride.
    for (int j = ty; j < TILE; j += ROWS) {
        const int r = r0 + tx, c = c0 + j;
        if (r >= rows || c >= cols) continue;
        const float x = tile[tx][j];
        float big = x, small = 0.f;
        if (isfinite(x)) {
            big = tf32_rn(x);
            if (!isfinite(big)) big = __uint_as_float(__float_as_uint(x) & 0xFFFFE000u);
            small = tf32_rn(x - big);
        }
        const long long d = (long long)r + (long long)c * ldd;
        D[d + big_offset] = big;
        D[d + small_offset] = small;
    }
}

// IEEE float32 op(A)(i, :) . op(B)(:, j) as an FMA chain (NaN stays NaN whatever follows).
__device__ __noinline__ float ieee_dot(const float* __restrict__ A, int lda, int trans_a,
                                       const float* __restrict__ B, int ldb, int trans_b,
                                       int i, int j, int k)
{
    float s = 0.f;
    for (int p = 0; p < k; ++p) {
        s = fmaf(A[at(i, p, lda, trans_a)], B[at(p, j, ldb, trans_b)], s);
        if (s != s) break;
    }
    return s;
}

extern "C" __global__ void __launch_bounds__(TILE * ROWS)
finish(int m, int n, int k, float alpha, const float* __restrict__ W, int ldw, float beta,
       float* __restrict__ C, int ldc, const float* __restrict__ A, int lda, int trans_a,
       const float* __restrict__ B, int ldb, int trans_b)
{
    const int i = blockIdx.x * TILE + threadIdx.x;
    if (i >= m) return;
    const bool in_place = (W == C);
    for (int j = blockIdx.y * ROWS + threadIdx.y; j < n; j += gridDim.y * ROWS) {
        const float w = W[(long long)i + (long long)j * ldw];
        float* const out = C + (long long)i + (long long)j * ldc;
        if (isfinite(w)) {
            if (!in_place) *out = (beta == 0.f) ? w : w + beta * *out;
            continue;
        }
        const float v = alpha * ieee_dot(A, lda, trans_a, B, ldb, trans_b, i, j, k);
        *out = (beta == 0.f) ? v : v + beta * *out;   // (W is C only where beta is 0)
    }
}
