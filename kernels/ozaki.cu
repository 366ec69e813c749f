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
// DIGITS, FLAG_NONFINITE and FLAG_SPREAD, EXP_LINES, RES_DEPTH, REC_ROWS (all set by
// tunedgemm/ozaki_device.py's conversion_defines).
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
#ifndef EXP_LINES
#define EXP_LINES 32   // lines per block of line_exponents (KCONTIG = 1: 8, a warp each)
#endif
#ifndef RES_DEPTH
#define RES_DEPTH 128  // depths per block of residues (16 per thread, one 16-byte store)
#endif
#ifndef DIGITS
#define DIGITS 2       // base-2^32 digits of the scaled integers (ozaki_device.digits)
#endif
#ifndef REC_ROWS
#define REC_ROWS 4     // consecutive rows of C per thread of reconstruct (uchar4 loads)
#endif
#define LIMB_BITS 40
#define TILE 32        // lines per block of residues (blocks of 32 x 8 threads)
#define UNROLL 8       // loads in flight per thread in line_exponents
// 1.5 * 2^52: y + MAGIC - MAGIC is rint(y) for |y| < 2^51, and the low 32 bits of r + MAGIC
// are the integer r (two's complement) for |r| < 2^31: rounding and conversion on the FP64
// adder instead of the slower FRND and F2I instructions.
#define MAGIC 6755399441055744.0
#if RES_DEPTH != 128 || REC_ROWS != 4
#error "residues is written for 128 depths a block, reconstruct for 4 rows a thread"
#endif
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

// The guard's data and the exponent of one line from its sum of squares and largest |x|.
__device__ __forceinline__ void finish_line(int line, int lines, SumSq total, double peak,
                                            int budget, int* __restrict__ exps,
                                            double* __restrict__ gauge)
{
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
    exps[line] = e;
    exps[lines + line] = q;
    gauge[line] = inv;
    gauge[lines + line] = scaled_peak;
    gauge[2 * (size_t)lines + line] = scaled_norm;
}

// Blocks of 32 x 8 threads. KCONTIG = 1: EXP_LINES = 8 lines a block, a warp per line, lane t
// taking depths t, t + 32, ... (each load instruction 32 consecutive elements), then a xor
// butterfly. KCONTIG = 0: EXP_LINES = 32 lines a block, a lane per line (loads along the unit
// stride), warp w taking depths w, w + 8, ..., then warps 0..7 merged in turn. Each thread
// issues UNROLL loads before it adds them in order (the same sums as one at a time).
extern "C" __global__ void __launch_bounds__(256)
line_exponents(int lines, int k, const REAL* __restrict__ X, long long s_line, long long s_k,
               int budget, int* __restrict__ exps, double* __restrict__ gauge,
               int* __restrict__ flag)
{
    const int tx = threadIdx.x, ty = threadIdx.y;
    bool bad = false;
#if KCONTIG
#if EXP_LINES != 8
#error "KCONTIG = 1 takes a warp per line: EXP_LINES = 8"
#endif
    (void)s_k;
    const int line = blockIdx.x * EXP_LINES + ty;
    SumSq s{EMPTY_SCALE, 0.0};
    double peak = 0.0;
    if (line < lines) {
        const REAL* row = X + (size_t)line * s_line;
        for (int p0 = tx; p0 < k; p0 += 32 * UNROLL) {
            double v[UNROLL];
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) {
                const int p = p0 + 32 * u;
                v[u] = p < k ? fabs((double)row[p]) : 0.0;
            }
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) {
                bad |= !(v[u] <= 1.7976931348623157e308);   // Inf or NaN
                add_square(s, v[u]);
                peak = fmax(peak, v[u]);
            }
        }
    }
#pragma unroll
    for (int mask = 16; mask >= 1; mask >>= 1) {
        s = merge(s, shfl_xor(s, mask));
        peak = fmax(peak, __shfl_xor_sync(0xffffffffu, peak, mask));
    }
    if (__syncthreads_or(bad) && tx == 0 && ty == 0) atomicOr(flag, FLAG_NONFINITE);
    if (tx == 0 && line < lines) finish_line(line, lines, s, peak, budget, exps, gauge);
#else
#if EXP_LINES != 32
#error "KCONTIG = 0 takes a lane per line: EXP_LINES = 32"
#endif
    __shared__ SumSq part[8][33];
    __shared__ double peaks[8][33];
    (void)s_line;
    const int line = blockIdx.x * EXP_LINES + tx;
    SumSq s{EMPTY_SCALE, 0.0};
    double mine = 0.0;
    if (line < lines) {
        for (int p0 = ty; p0 < k; p0 += 8 * UNROLL) {
            double v[UNROLL];
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) {
                const int p = p0 + 8 * u;
                v[u] = p < k ? fabs((double)X[(size_t)line + (size_t)p * s_k]) : 0.0;
            }
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) {
                bad |= !(v[u] <= 1.7976931348623157e308);
                add_square(s, v[u]);
                mine = fmax(mine, v[u]);
            }
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
    if (__syncthreads_or(bad) && tx == 0 && ty == 0) atomicOr(flag, FLAG_NONFINITE);
    if (ty == 0 && line < lines) finish_line(line, lines, total, peak, budget, exps, gauge);
#endif
}

// x' (integer-valued, |x'| < 2^(32 DIGITS)) as DIGITS base-2^32 digits, least significant
// first, all of x's sign: each an exact double (trunc, and a difference of x's own bits).
// Computed once per element; the moduli then see only |y| < DIGITS 2^40 (below).
__device__ __forceinline__ void split_digits(double x, double (&d)[DIGITS])
{
#pragma unroll
    for (int i = DIGITS - 1; i >= 1; --i) {
        const double hi = trunc(scalbn(x, -32 * i));
        d[i] = hi;
        x = __dsub_rn(x, scalbn(hi, 32 * i));   // exact: the low bits of x
    }
    d[0] = x;
}

// Centred residue modulo p of x' = sum_i d_i 2^(32 i), as the low byte of an int (inv = 1 / p
// rounded, c[i] = 2^(32 i) mod p): y = sum_i d_i c[i] = x' (mod p) is exact (|y| < DIGITS
// 2^40 < 2^53), q = rint(y inv) by adding and subtracting MAGIC (|y inv| < 2^51) is off only
// where y / p lies within 2^-10 of a half-integer, so r = y - q p (exact by fma) has |r| <=
// p / 2; then moved into [-floor(p / 2), p - floor(p / 2)) and read off the bits of r + MAGIC.
// No FRND or F2I per modulus: the FP64 adder does the rounding and the conversion.
__device__ __forceinline__ unsigned centred_residue(const double (&d)[DIGITS],
                                                    const double (&c)[DIGITS], double p,
                                                    double inv, double half)
{
    double y = d[0];
#pragma unroll
    for (int i = 1; i < DIGITS; ++i) y = fma(d[i], c[i], y);   // exact
    double r = fma(-__dsub_rn(__dadd_rn(y * inv, MAGIC), MAGIC), p, y);
    r += r < -half ? p : 0.0;
    r -= r >= p - half ? p : 0.0;
    return (unsigned)__double2loint(__dadd_rn(r, MAGIC)) & 0xffu;
}

// Blocks of 32 x 8 threads, a TILE x RES_DEPTH tile of (line, depth) each: x' = trunc(2^e x)
// and the magnitude loaded along the unit stride (KCONTIG = 1: a warp reads 32 depths of a
// line; 0: 32 lines of a depth) into shared memory; then thread t owns line t / 8, depths
// 16 (t % 8) .. + 15, and writes them as one 16-byte store per plane (a warp: 4 lines x 128
// bytes). Shared rows are padded: chunks of 17 doubles, so that the 8 threads of a line read
// different banks, rows of an odd count of doubles and of 144 bytes, so that lanes writing
// one depth of 32 lines (KCONTIG = 0) do not all meet in one bank.
#define RES_ROW (8 * 17 + 1)   // doubles per shared row of the tile
#define MAG_ROW (RES_DEPTH + 16)   // bytes per shared row of the magnitudes (16-byte aligned)
extern "C" __global__ void __launch_bounds__(256)
residues(int lines, int k, const REAL* __restrict__ X, long long s_line, long long s_k,
         const int* __restrict__ exps, const double* __restrict__ gauge,
         const int* __restrict__ moduli, const double* __restrict__ powers,
         signed char* __restrict__ out, int lines_pad, int kp)
{
    __shared__ double tile[TILE * RES_ROW];               // [line][chunk * 17 + i]
    __shared__ __align__(16) unsigned char mags[TILE][MAG_ROW];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int line0 = blockIdx.y * TILE, p0 = blockIdx.x * RES_DEPTH;
#if KCONTIG
    // warp ty: lines ty, ty + 8, ...; lane tx: depths tx, tx + 32, ...
#pragma unroll
    for (int r = ty; r < TILE; r += 8) {
        const int line = line0 + r;
        const bool live = line < lines;
        const int e = live ? exps[line] : 0, q = live ? exps[lines + line] : 0;
        const double inv = live ? gauge[line] : 0.0;
#pragma unroll
        for (int c = 0; c < RES_DEPTH / 32; ++c) {
            const int d = 32 * c + tx, p = p0 + d;
            double v = 0.0, mag = 0.0;
            if (live && p < k) {
                const double x = (double)X[(size_t)line * s_line + p];
                v = trunc(scalbn(x, e));
                mag = floor(__dmul_rn(scalbn(fabs(x), -q), inv));
            }
            tile[r * RES_ROW + (d >> 4) * 17 + (d & 15)] = v;
            mags[r][d] = (unsigned char)mag;
        }
    }
#else
    // lane tx: line tx; warp ty: depths ty, ty + 8, ...
    {
        const int line = line0 + tx;
        const bool live = line < lines;
        const int e = live ? exps[line] : 0, q = live ? exps[lines + line] : 0;
        const double inv = live ? gauge[line] : 0.0;
#pragma unroll 8
        for (int d = ty; d < RES_DEPTH; d += 8) {
            const int p = p0 + d;
            double v = 0.0, mag = 0.0;
            if (live && p < k) {
                const double x = (double)X[(size_t)line + (size_t)p * s_k];
                v = trunc(scalbn(x, e));
                mag = floor(__dmul_rn(scalbn(fabs(x), -q), inv));
            }
            tile[tx * RES_ROW + (d >> 4) * 17 + (d & 15)] = v;
            mags[tx][d] = (unsigned char)mag;
        }
    }
#endif
    __syncthreads();
    const int t = ty * 32 + tx, my_line = t >> 3, chunk = t & 7;
    double x[16][DIGITS];
#pragma unroll
    for (int i = 0; i < 16; ++i) split_digits(tile[my_line * RES_ROW + chunk * 17 + i], x[i]);
    const size_t plane = (size_t)lines_pad * kp;
    signed char* dst = out + (size_t)(line0 + my_line) * kp + p0 + 16 * chunk;
#pragma unroll 1
    for (int z = 0; z < COUNT; ++z) {
        const int pz = moduli[z];
        const double p = (double)pz, inv = 1.0 / p, half = (double)(pz / 2);
        double c[DIGITS];
#pragma unroll
        for (int i = 0; i < DIGITS; ++i) c[i] = powers[z * DIGITS + i];
        unsigned w[4];
#pragma unroll
        for (int g = 0; g < 4; ++g) {
            w[g] = centred_residue(x[4 * g], c, p, inv, half)
                 | centred_residue(x[4 * g + 1], c, p, inv, half) << 8
                 | centred_residue(x[4 * g + 2], c, p, inv, half) << 16
                 | centred_residue(x[4 * g + 3], c, p, inv, half) << 24;
        }
        *reinterpret_cast<uint4*>(dst + z * plane) = make_uint4(w[0], w[1], w[2], w[3]);
    }
    *reinterpret_cast<uint4*>(dst + COUNT * plane) =
        *reinterpret_cast<const uint4*>(&mags[my_line][16 * chunk]);
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
// Blocks of 32 x 8 threads; thread (x, y) takes rows 4 x .. 4 x + 3 of C (one uchar4 load per
// modulus: a warp reads 128 consecutive bytes of a plane) in columns y, y + 8 gridDim.y, ...
// (C column-major: a warp's stores cover 128 consecutive elements of a column). At most 128
// registers, so that 2 blocks (16 warps) share an SM.
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
    const int i0 = (blockIdx.x * blockDim.x + threadIdx.x) * REC_ROWS;
    if (i0 >= m) return;
    int ea[REC_ROWS];
#pragma unroll
    for (int u = 0; u < REC_ROWS; ++u) ea[u] = i0 + u < m ? exps_a[i0 + u] : 0;
    for (int j = blockIdx.y * blockDim.y + threadIdx.y; j < n; j += gridDim.y * blockDim.y) {
        const unsigned char* pij = P + (size_t)j * ldp + i0;   // 4-byte aligned: ldp, i0 % 4
        double s[REC_ROWS][LIMBS];
#pragma unroll
        for (int u = 0; u < REC_ROWS; ++u)
#pragma unroll
            for (int l = 0; l < LIMBS; ++l) s[u][l] = 0.0;
#pragma unroll 2
        for (int z = 0; z < COUNT; ++z) {
            const uchar4 c4 = *reinterpret_cast<const uchar4*>(pij + z * p_batch);
            const double c[REC_ROWS] = {(double)c4.x, (double)c4.y, (double)c4.z, (double)c4.w};
#pragma unroll
            for (int l = 0; l < LIMBS; ++l) {
                const double wl = w[z * LIMBS + l];
#pragma unroll
                for (int u = 0; u < REC_ROWS; ++u) s[u][l] = fma(c[u], wl, s[u][l]);   // exact
            }
        }
        const int eb = exps_b[j];
#pragma unroll
        for (int u = 0; u < REC_ROWS; ++u) {
            // The CRT quotient from a float estimate of S / M (|X| < M / 4 leaves the slack).
            double estimate = 0.0;
#pragma unroll
            for (int l = 0; l < LIMBS; ++l)
                estimate = __dadd_rn(estimate, scalbn(s[u][l], LIMB_BITS * l));
            const double q = rint(__dmul_rn(estimate, w[COUNT * LIMBS + LIMBS]));
#pragma unroll
            for (int l = 0; l < LIMBS; ++l) s[u][l] = fma(-q, w[COUNT * LIMBS + l], s[u][l]);
            // The limbs' sum rounded once (error-free sums from the top limb down).
            double total = scalbn(s[u][LIMBS - 1], LIMB_BITS * (LIMBS - 1)), err = 0.0;
#pragma unroll
            for (int l = LIMBS - 2; l >= 0; --l) {
                const double y = scalbn(s[u][l], LIMB_BITS * l);
                const double sum = __dadd_rn(total, y);
                const double v = __dsub_rn(sum, total);
                err = __dadd_rn(err, __dadd_rn(__dsub_rn(total, __dsub_rn(sum, v)),
                                               __dsub_rn(y, v)));
                total = sum;
            }
            if (i0 + u < m) {
                const double x = scalbn(__dadd_rn(total, err), -(ea[u] + eb));
                REAL* c = C + (size_t)(i0 + u) + (size_t)j * ldc;
                const double ab = (double)alpha * x;
                *c = (REAL)(beta == REAL(0) ? ab : fma((double)beta, (double)*c, ab));
            }
        }
    }
}
