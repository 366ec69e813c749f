// ozaki: the conversion passes of Ozaki scheme II around the batched INT8 GEMM (igemm_s8.cu),
// following the NumPy reference tunedgemm/ozaki.py step for step (tests/unit/test_ozaki_kernels.py
// emulates this arithmetic in NumPy and checks it against Python's big integers).
//
// Operands are "lines": rows of op(A) (m of them) and columns of op(B) (n), each k long, element
// (line l, depth p) at X[l * s_line + p * s_k] (element strides, so every BLAS transpose and
// leading dimension is one of the two cases below). KCONTIG = 1: s_k == 1 (k runs along the
// unit stride); KCONTIG = 0: s_line == 1 (lines run along it).
//
//   line_exponents  per line, e = the largest integer with 2^e ||x||_2 < 2^budget (the
//                   reference's _log2_floor_exponents), from a running scaled sum of squares
//                   (LAPACK's dnrm2 idea, with power-of-two scales so that rescaling is exact):
//                   one read of the operand. Any Inf or NaN sets FLAG_NONFINITE in *flag (the
//                   caller falls back to IEEE arithmetic; the reconstruction then writes
//                   nothing). Also the accuracy guard's data of the line (the reference's
//                   ozaki.gauges): exps[lines + line] = q, the frexp exponent of max|x|, and
//                   gauge[0..2][line] = fl(127 / (max|x| 2^-q)), 2^e max|x|, 2^e ||x||_2.
//   residues        x' = trunc(2^e x) and its centred residue modulo each of the COUNT moduli,
//                   as int8 into out[z][line][depth] (lines padded to lines_pad, depth to kp,
//                   the padding written as zeros): the k-contiguous layout the GEMM reads.
//                   Plane COUNT holds the magnitudes floor(|x| 2^-q * inv) in 0..127 (the
//                   reference's ozaki.magnitudes), which one more INT8 GEMM with int32
//                   output multiplies exactly: a lower bound of |A| |B| for the guard.
//   guard           per element of C, the reference's ozaki.unreliable test on the magnitude
//                   product (int32, Q[j][i]): any element whose estimated truncation error
//                   passes the bound sets FLAG_SPREAD (before the reconstruction, which then
//                   writes nothing: C stays untouched for the IEEE fallback, beta included).
//   reconstruct     per element of C, the COUNT residues of the product (uint8, [0, p), from
//                   igemm_s8 with OUT_MOD = 1, stored as P[z][j][i]: C's column-major order),
//                   CRT in LIMBS limbs of 40 bits exactly in float64, one rounding, then
//                   2^-(e_i + f_j), alpha and beta with BLAS semantics (beta == 0 never reads C).
//
// Defines: DTYPE (0 float32, 1 float64), KCONTIG (line_exponents and residues), COUNT, LIMBS,
// FLAG_NONFINITE and FLAG_SPREAD (tunedgemm/ozaki_device.py's bits of the flag).
#include "common.cuh"

#ifndef KCONTIG
#define KCONTIG 1
#endif
#ifndef COUNT
#define COUNT 16
#endif
#ifndef LIMBS
#define LIMBS 4
#endif
#ifndef FLAG_NONFINITE
#define FLAG_NONFINITE 1   // bit of *flag: Inf or NaN in the operand
#endif
#ifndef FLAG_SPREAD
#define FLAG_SPREAD 2      // bit of *flag: the guard found an element the moduli cannot hold
#endif
#define LIMB_BITS 40
#define TILE 32        // lines and depths per block of residues (blocks of 32 x 8 threads)
#define MAGNITUDE_LEVELS 127.0   // the magnitude plane's largest value (ozaki.MAGNITUDE_LEVELS)

// Relative safety on the norms (the reference's NORM_SAFETY): covers the rounding error of the
// sum of squares for k < 2^23.
#define NORM_SAFETY (1.0 + 0x1p-30)
#define EMPTY_SCALE (-4096)   // scale exponent of an empty sum

// frexp's exponent of |x| for normal x; -1022 for zero and subnormals (an upper bound, which
// is all a scale needs); > 1024 for Inf and NaN.
__device__ __forceinline__ int scale_exponent(double x)
{
    const int biased = (int)((__double_as_longlong(x) >> 52) & 0x7ff);
    return max(biased, 1) - 1022;
}

// ssq * 2^(2 e) is the sum of squares so far.
struct SumSq {
    int e;
    double ssq;
};

__device__ __forceinline__ void add_square(SumSq& s, double x)
{
    if (x == 0.0) return;
    const int ex = scale_exponent(x);
    if (ex > s.e) {
        s.ssq = scalbn(s.ssq, 2 * (s.e - ex));
        s.e = ex;
    }
    const double t = scalbn(x, -s.e);
    s.ssq = fma(t, t, s.ssq);
}

__device__ __forceinline__ SumSq merge(SumSq a, SumSq b)
{
    const int e = max(a.e, b.e);
    return SumSq{e, scalbn(a.ssq, 2 * (a.e - e)) + scalbn(b.ssq, 2 * (b.e - e))};
}

__device__ __forceinline__ SumSq shfl_xor(SumSq s, int mask)
{
    return SumSq{__shfl_xor_sync(0xffffffffu, s.e, mask),
                 __shfl_xor_sync(0xffffffffu, s.ssq, mask)};
}

// Blocks of 32 x 8 threads, 32 lines each (KCONTIG = 0: a lane per line, the 8 warps split k;
// KCONTIG = 1: a warp per line, 4 lines per warp in turn, the lanes split k).
extern "C" __global__ void __launch_bounds__(256)
line_exponents(int lines, int k, const REAL* __restrict__ X, long long s_line, long long s_k,
               int budget, int* __restrict__ exps, double* __restrict__ gauge,
               int* __restrict__ flag)
{
    __shared__ SumSq part[8][33];
    __shared__ double peaks[8][33];
    const int tx = threadIdx.x, ty = threadIdx.y;
    bool bad = false;
#if KCONTIG
    (void)s_k;
    for (int r = ty; r < TILE; r += 8) {
        const int line = blockIdx.x * TILE + r;
        SumSq s{EMPTY_SCALE, 0.0};
        double peak = 0.0;
        if (line < lines) {
            const REAL* row = X + (size_t)line * s_line;
            for (int p = tx; p < k; p += 32) {
                const double x = fabs((double)row[p]);
                bad |= !(x <= 1.7976931348623157e308);   // Inf or NaN
                add_square(s, x);
                peak = fmax(peak, x);
            }
        }
#pragma unroll
        for (int mask = 16; mask >= 1; mask >>= 1) {
            s = merge(s, shfl_xor(s, mask));
            peak = fmax(peak, __shfl_xor_sync(0xffffffffu, peak, mask));
        }
        if (tx == 0) {   // part[0], peaks[0] hold the 32 lines' sums and peaks
            part[0][r] = s;
            peaks[0][r] = peak;
        }
    }
    __syncthreads();
    const SumSq total = part[0][tx];
    const double peak = peaks[0][tx];
#else
    (void)s_line;
    const int line = blockIdx.x * TILE + tx;
    SumSq s{EMPTY_SCALE, 0.0};
    double mine = 0.0;
    if (line < lines) {
        for (int p = ty; p < k; p += 8) {
            const double x = fabs((double)X[(size_t)line + (size_t)p * s_k]);
            bad |= !(x <= 1.7976931348623157e308);
            add_square(s, x);
            mine = fmax(mine, x);
        }
    }
    part[ty][tx] = s;
    peaks[ty][tx] = mine;
    __syncthreads();
    SumSq total = part[0][tx];
    double peak = peaks[0][tx];
#pragma unroll
    for (int w = 1; w < 8; ++w) {
        total = merge(total, part[w][tx]);
        peak = fmax(peak, peaks[w][tx]);
    }
#endif
    if (__syncthreads_or(bad) && tx == 0 && ty == 0) atomicOr(flag, FLAG_NONFINITE);
    const int out_line = blockIdx.x * TILE + tx;
    if (ty == 0 && out_line < lines) {
        int e = 0, q = 0;
        double inv = 0.0, scaled_peak = 0.0, scaled_norm = 0.0;
        if (total.ssq > 0.0) {
            const double norm = sqrt(total.ssq);
            int norm_exp;
            frexp(norm * NORM_SAFETY, &norm_exp);
            e = budget - norm_exp - total.e;
            const double mantissa = frexp(peak, &q);
            inv = MAGNITUDE_LEVELS / mantissa;
            scaled_peak = scalbn(mantissa, q + e);
            scaled_norm = scalbn(norm, total.e + e);
        }
        exps[out_line] = e;
        exps[lines + out_line] = q;
        gauge[out_line] = inv;
        gauge[lines + out_line] = scaled_peak;
        gauge[2 * (size_t)lines + out_line] = scaled_norm;
    }
}

// Centred residue of the integer-valued x modulo p (inv = 1 / p rounded): two steps of
// q = rint(x inv), r = x - q p (exact by fma: the true r is a small integer), then moved
// into [-floor(p / 2), p - floor(p / 2)).
__device__ __forceinline__ int centred_residue(double x, double p, double inv, double half)
{
    double r = fma(-rint(x * inv), p, x);
    r = fma(-rint(r * inv), p, r);
    r += r < -half ? p : 0.0;
    r -= r >= p - half ? p : 0.0;
    return (int)r;
}

// Blocks of 32 x 8 threads, a TILE x TILE tile of (line, depth) each: loaded along the unit
// stride into shared memory, then written along depth (32 bytes per warp and modulus).
extern "C" __global__ void __launch_bounds__(256)
residues(int lines, int k, const REAL* __restrict__ X, long long s_line, long long s_k,
         const int* __restrict__ exps, const double* __restrict__ gauge,
         const int* __restrict__ moduli, signed char* __restrict__ out, int lines_pad, int kp)
{
    __shared__ double tile[TILE][TILE + 1];   // [line][depth], scaled integers
    __shared__ signed char mags[TILE][TILE + 4];   // [line][depth], magnitudes 0..127
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int line0 = blockIdx.y * TILE, p0 = blockIdx.x * TILE;
#pragma unroll
    for (int r = ty; r < TILE; r += 8) {
#if KCONTIG
        const int line = line0 + r, p = p0 + tx;   // lanes along depth
#else
        const int line = line0 + tx, p = p0 + r;   // lanes along lines
#endif
        double v = 0.0, mag = 0.0;
        if (line < lines && p < k) {
            const double x = (double)X[(size_t)line * s_line + (size_t)p * s_k];
            v = trunc(scalbn(x, exps[line]));
            mag = floor(__dmul_rn(scalbn(fabs(x), -exps[lines + line]), gauge[line]));
        }
#if KCONTIG
        tile[r][tx] = v;
        mags[r][tx] = (signed char)mag;
#else
        tile[tx][r] = v;
        mags[tx][r] = (signed char)mag;
#endif
    }
    __syncthreads();
    const size_t plane = (size_t)lines_pad * kp;
#pragma unroll 1
    for (int z = 0; z < COUNT; ++z) {
        const int pz = moduli[z];
        const double p = (double)pz, inv = 1.0 / p, half = (double)(pz / 2);
#pragma unroll
        for (int r = ty; r < TILE; r += 8)
            out[z * plane + (size_t)(line0 + r) * kp + p0 + tx] =
                (signed char)centred_residue(tile[r][tx], p, inv, half);
    }
#pragma unroll
    for (int r = ty; r < TILE; r += 8)
        out[COUNT * plane + (size_t)(line0 + r) * kp + p0 + tx] = mags[r][tx];
}

// The accuracy guard (the reference's ozaki.unreliable, in its order of operations): with
// Q = the magnitude planes' int32 product (Q[j * ldq + i]), element (i, j) fails where
// (norm_a[i] + norm_b[j]) + sqrt_k > (Q * (peak_a[i] * peak_b[j])) * factor, unless row i or
// column j is zero (exact). factor = GUARD_TAU ulp / 127^2 (ozaki.guard_factor). One flag
// bit for the whole call: the host then runs it in IEEE arithmetic. Blocks of 32 x 8 threads,
// lanes along i (Q's unit stride).
extern "C" __global__ void __launch_bounds__(256)
guard(int m, int n, const int* __restrict__ Q, int ldq, const double* __restrict__ gauge_a,
      int lines_a, const double* __restrict__ gauge_b, int lines_b, double sqrt_k,
      double factor, int* __restrict__ flag)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    bool bad = false;
    if (i < m) {
        const double peak_a = gauge_a[lines_a + i], norm_a = gauge_a[2 * (size_t)lines_a + i];
        if (peak_a > 0.0) {
            for (int j = blockIdx.y * blockDim.y + threadIdx.y; j < n;
                 j += gridDim.y * blockDim.y) {
                const double peak_b = gauge_b[lines_b + j];
                const double norm_b = gauge_b[2 * (size_t)lines_b + j];
                const double estimate = __dadd_rn(__dadd_rn(norm_a, norm_b), sqrt_k);
                const double bound = __dmul_rn(__dmul_rn((double)Q[(size_t)j * ldq + i],
                                                         __dmul_rn(peak_a, peak_b)), factor);
                bad |= estimate > bound && peak_b > 0.0;
            }
        }
    }
    if (__syncthreads_or(bad) && threadIdx.x == 0 && threadIdx.y == 0) atomicOr(flag, FLAG_SPREAD);
}

// CRT data: weights[z * LIMBS + s] = limb s of w_z, then LIMBS limbs of M, then 1 / float(M).
// Memory-bound: at most 128 registers, so that 2 blocks (16 warps) share an SM; the residue
// loads of a modulus group are issued together (unroll 4) without spilling.
extern "C" __global__ void __launch_bounds__(256, 2)
reconstruct(int m, int n, const unsigned char* __restrict__ P, long long p_batch, int ldp,
            const int* __restrict__ exps_a, const int* __restrict__ exps_b,
            const double* __restrict__ crt, REAL alpha, REAL beta, REAL* __restrict__ C,
            int ldc, const int* __restrict__ flag)
{
    __shared__ double w[COUNT * LIMBS + LIMBS + 1];
    for (int t = threadIdx.x + blockDim.x * threadIdx.y; t < COUNT * LIMBS + LIMBS + 1;
         t += blockDim.x * blockDim.y)
        w[t] = crt[t];
    __syncthreads();
    if (*flag) return;   // non-finite input or the guard: the caller recomputes in IEEE
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= m) return;
    for (int j = blockIdx.y * blockDim.y + threadIdx.y; j < n; j += gridDim.y * blockDim.y) {
        const unsigned char* pij = P + (size_t)j * ldp + i;
        double s[LIMBS];
#pragma unroll
        for (int l = 0; l < LIMBS; ++l) s[l] = 0.0;
#pragma unroll 4
        for (int z = 0; z < COUNT; ++z) {
            const double c = (double)pij[z * p_batch];
#pragma unroll
            for (int l = 0; l < LIMBS; ++l) s[l] = fma(c, w[z * LIMBS + l], s[l]);   // exact
        }
        // The CRT quotient from a float estimate of S / M (|X| < M / 4 leaves the slack).
        double estimate = 0.0;
#pragma unroll
        for (int l = 0; l < LIMBS; ++l) estimate = __dadd_rn(estimate, scalbn(s[l], LIMB_BITS * l));
        const double q = rint(__dmul_rn(estimate, w[COUNT * LIMBS + LIMBS]));
#pragma unroll
        for (int l = 0; l < LIMBS; ++l) s[l] = fma(-q, w[COUNT * LIMBS + l], s[l]);   // exact
        // The limbs' sum rounded once (error-free sums from the top limb down).
        double total = scalbn(s[LIMBS - 1], LIMB_BITS * (LIMBS - 1)), err = 0.0;
#pragma unroll
        for (int l = LIMBS - 2; l >= 0; --l) {
            const double y = scalbn(s[l], LIMB_BITS * l);
            const double sum = __dadd_rn(total, y);
            const double v = __dsub_rn(sum, total);
            err = __dadd_rn(err, __dadd_rn(__dsub_rn(total, __dsub_rn(sum, v)), __dsub_rn(y, v)));
            total = sum;
        }
        const double x = scalbn(__dadd_rn(total, err), -(exps_a[i] + exps_b[j]));
        REAL* c = C + (size_t)i + (size_t)j * ldc;
        const double ab = (double)alpha * x;
        *c = (REAL)(beta == REAL(0) ? ab : fma((double)beta, (double)*c, ab));
    }
}
