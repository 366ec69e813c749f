// sgemm_tf32: float32 GEMM on the TF32 tensor cores of sm_90 (H100) with warp-level mma.sync,
// in two precision modes selected by PRECISION:
//   0 (tf32):   each operand rounded to TF32 (10 explicit mantissa bits, to nearest: see
//               to_tf32), products accumulated in FP32: relative error up to 2^-10 per
//               product, the accuracy of torch's "high" float32 matmul precision.
//   1 (3xtf32): each operand x split into big = tf32(x) and small = tf32(x - big), so that
//               big + small carries 22 to 24 bits of x; per k-step the mma add small_a*big_b,
//               big_a*small_b, then big_a*big_b (small terms first), dropping only
//               small_a*small_b (~2^-22 relative): FP32-level accuracy at a third of the
//               TF32 mma rate (Ootomo & Yokota 2022; the "fast FP32" mode of CUTLASS's 3xTF32
//               examples). The split happens in registers as fragments are read from shared
//               memory: global memory is read once, as float32. Non-finite inputs: see
//               "IEEE special values" below.
//
// C = alpha * op(A) * op(B) + beta * C, column-major BLAS semantics (ABI in common.cuh):
// any m, n, k >= 1, all four TRANS_A/TRANS_B combinations, any leading dimensions. When
// beta == 0, C is never read. ALIGNED=1: A, B, C 16-byte aligned and lda, ldb, ldc multiples
// of 4 floats (16-byte cp.async along each operand's unit stride, float4 epilogue along m);
// ALIGNED=0 assumes nothing (4-byte cp.async, scalar epilogue).
//
// Technique
//   * One BM x BN tile of C per block; (BM/WM) x (BN/WN) warps, each owning a WM x WN warp tile
//     of (WM/16) x (WN/8) accumulators of mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32.
//   * k walked in BK-deep tiles through a STAGES-deep ring of shared buffers filled by cp.async
//     (16 bytes when ALIGNED, else 4), one commit group and one __syncthreads per k-tile;
//     out-of-range elements are zero-filled by cp.async's src-size, so edge tiles in m, n, k
//     need no special path (a zero splits into two zeros).
//   * Register fragments double-buffered across k-steps and across k-tiles: the barrier sits
//     before the last k-step of a tile, whose mma cover the first fragment reads of the next.
//   * Row and column maps. The mma's logical 16 x 8 tiles are placed so that each lane's data
//     is contiguous in the mn-contiguous layouts: lane (g = lane/4, t = lane%4) of the warp
//     plays logical row g + 8h of m-tile i as physical row 2*MT*g + 2i + h of the warp tile,
//     and logical column c of n-tile j as physical column NT*c + j. A lane's A fragments for
//     one k are then 2*MT consecutive rows (float4 loads), its B fragments NT consecutive
//     columns, and its accumulators 2*MT consecutive rows of C per column (float4 stores
//     along m, C being column-major).
//   * Shared layouts, chosen per operand by its unit-stride dimension so that cp.async always
//     copies along it; all fragment reads and all 16-byte copies are bank-conflict-free:
//       k-contiguous (A with TRANS_A=1, B with TRANS_B=0): [x][k] rows of BK floats, read with
//         ldmatrix.x4 .b16 (an 8x8 matrix of 16-bit pairs is an 8 x 4 block of 32-bit values,
//         and lane t of row g receives the value (g, t): exactly the tf32 A/B fragment
//         element). The 16-byte granules of each 128-byte line are XOR-swizzled by
//         (x / R) & 7, R = the rows per lane group (2*MT for A, NT for B), so the 8 rows of
//         one ldmatrix matrix (x = R*g + c) land in 8 different granules.
//       mn-contiguous (A with TRANS_A=0, B with TRANS_B=1): [k][x] rows of BM (BN) floats,
//         read with LDS.128; granule x/4 of row k is stored at (x/4) ^ f(k%4), f chosen by the
//         granules per lane (so the 8 lanes of each quarter-warp phase hit 8 granules).
//   * Rounding to TF32 (CVT): cvt.rn, one F2FP per value on sm_90, or cvt.rna, three ALU
//     operations; 3xtf32 rounds twice per operand value per k-step, as often as it issues an
//     mma, so which unit does it may matter; the tuner times both.
//   * Group-M rasterisation of the block index (GROUP_M block-rows walked together) for L2.
//   * Optional split-K (SPLIT_K > 1): blockIdx.z takes a contiguous range of k-tiles and writes
//     its raw partial sums to the launcher's workspace; splitk_reduce (common.cuh) adds them in a
//     fixed order, so results are bitwise deterministic as with SPLIT_K=1. Faster for small
//     m*n with long k.
//   * FLUSH=1 (3xtf32 only): accumulation outside the tensor cores, on two levels. The tensor
//     cores add into their FP32 accumulator by truncation, without guard bits (Fasi et al.
//     2021), a bias that grows with k if one mma accumulator ran over all of k. So per k-step
//     the three mma of an accumulator tile run into zero-initialised temporaries (FG n-tiles
//     at a time, 4*FG registers; small terms first, the big product last) that FADD (round to
//     nearest) adds to the register accumulators. Those are a chain of only CHAIN k-steps:
//     every CHAIN k-steps they are added into a per-thread float32 total in shared memory
//     (after the ring, BM x BN floats per block) and restart from zero. A single FADD chain
//     over k/8 steps rounds a running sum k/8 times, and at k >= 4096 its tail error is about
//     twice that of cuBLAS SGEMM, which splits k (tests/unit/test_tf32_split.py models both);
//     two levels cut the rounding of the long sum by about sqrt(CHAIN). Costs per k-step:
//     4 FADD per 3 mma, plus 2 vector shared accesses and 4 FADD per accumulator tile every
//     CHAIN k-steps; no registers beyond the per-step temporaries.
//   * IEEE special values (both modes). The fast path never turns a non-finite result finite:
//     an Inf operand splits into Inf and Inf - Inf = NaN (3xtf32) and every product it enters
//     is NaN, NaN stays NaN, and a finite value that rounds to Inf in TF32 (|x| at or above
//     2^128 (1 - 2^-12), near FLT_MAX) makes Inf or NaN too. So the epilogue recomputes
//     exactly the elements whose sum came out non-finite as one IEEE FMA chain over this
//     block's k range from global memory: they get the Inf, -Inf or NaN (or, for huge finite
//     operands, the finite value) that IEEE float32 arithmetic gives. Finite results cost one
//     test per element; inputs with many non-finite values run slowly but correctly.
#include "common.cuh"

#if DTYPE != 0
#error "sgemm_tf32.cu supports DTYPE=0 (float32) only"
#endif

#ifndef BM
#define BM 128         // rows of C per block
#endif
#ifndef BN
#define BN 128         // columns of C per block
#endif
#ifndef BK
#define BK 16          // depth of one k-tile staged in shared memory (16 or 32)
#endif
#ifndef WM
#define WM 64          // rows of C per warp (32, 64 or 128)
#endif
#ifndef WN
#define WN 32          // columns of C per warp (32, 64 or 128)
#endif
#ifndef STAGES
#define STAGES 4       // depth of the cp.async shared-memory ring (>= 2)
#endif
#ifndef GROUP_M
#define GROUP_M 8      // block-rows rasterised together for L2 reuse (1: plain grid order)
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1   // minimum resident blocks per SM (__launch_bounds__)
#endif
#ifndef PRECISION
#define PRECISION 1    // 0: tf32 (operands rounded to TF32); 1: 3xtf32 (big + small split)
#endif
#ifndef FLUSH
#define FLUSH 1        // 3xtf32: 1 adds each k-step's products to the result with FADD (tf32: unused)
#endif
#ifndef CHAIN
#define CHAIN 32       // FLUSH=1: k-steps summed in registers before the shared-memory total
#endif
#ifndef CVT
#define CVT 0          // rounding to TF32 on sm_90: 0 cvt.rn (one F2FP), 1 cvt.rna (3 ALU ops)
#endif
// Derived (passed by tunedgemm/families/tf32.py; defaults here match the defaults above).
#ifndef THREADS
#define THREADS ((BM / WM) * (BN / WN) * 32)
#endif
#define WARPS_M (BM / WM)          // warps along m
#define MT (WM / 16)               // m16 tiles per warp
#define NT (WN / 8)                // n8 tiles per warp
#define RA (2 * MT)                // consecutive rows of the warp tile per lane group (A, C)
#define RB NT                      // consecutive columns of the warp tile per lane group (B, C)
#define KSTEPS (BK / 8)            // mma k-steps per k-tile
#define FG (NT < 4 ? NT : 4)       // n-tiles per group of FLUSH temporaries
#define VEC (ALIGNED ? 4 : 1)      // floats per cp.async
#define A_KCONTIG (TRANS_A)        // A's unit stride runs along k
#define B_KCONTIG (!TRANS_B)       // B's unit stride runs along k
#define A_STAGE (BM * BK)          // floats per ring slot of A (no padding: swizzled)
#define B_STAGE (BN * BK)          // floats per ring slot of B
#define TOTALS (PRECISION == 1 && FLUSH)   // the two-level accumulation's shared totals
#define CHAIN_TILES (CHAIN / KSTEPS)       // k-tiles per register chain

#if (BM % WM) || (BN % WN) || (BK != 16 && BK != 32)
#error "tile sizes violate the constraints of sgemm_tf32"
#endif
#if (WM != 32 && WM != 64 && WM != 128) || (WN != 32 && WN != 64 && WN != 128)
#error "WM and WN must be 32, 64 or 128 (lane groups of 4, 8 or 16 consecutive rows)"
#endif
#if (BM % 32) || (BN % 32)
#error "BM and BN must be multiples of 32 (whole 128-byte lines per k row)"
#endif
#if STAGES < 2
#error "STAGES must be at least 2"
#endif
#if PRECISION != 0 && PRECISION != 1
#error "PRECISION must be 0 (tf32) or 1 (3xtf32)"
#endif
#if CHAIN % KSTEPS || CHAIN < KSTEPS
#error "CHAIN must be a multiple of the k-steps per tile"
#endif

// ---- shared layouts -----------------------------------------------------------------------

// k-contiguous tile [x][BK]: element (x, k) in 128-byte lines of the row-major order, the
// line's granule XOR (x / R) & 7. R >= 4 and even keeps the two rows of a line (BK = 16)
// under one mask.
template <int R>
__device__ __forceinline__ int kc_pos(int x, int k)
{
    const int idx = x * BK + k;
    return (idx & ~31) | ((((idx >> 2) & 7) ^ ((x / R) & 7)) << 2) | (k & 3);
}

// XOR mask of row k's granules in an mn-contiguous tile whose lanes read G granules each: the
// 8 lanes of a quarter-warp (g in {2Q, 2Q+1}, t in 0..3) then read 8 different granules.
template <int G>
__device__ __forceinline__ constexpr int mn_mask(int t)
{
    return G == 1 ? 2 * t : G == 2 ? ((t & 1) | ((t & 2) << 1)) : t;
}

// mn-contiguous tile [BK][X]: element (k, x); R consecutive x per lane, so G = R / 4 granules.
template <int X, int R>
__device__ __forceinline__ int mn_pos(int k, int x)
{
    return k * X + ((((x >> 2) ^ mn_mask<R / 4>(k & 3))) << 2) + (x & 3);
}

// Stage one BX x BK slice of operand G (extent X along mn, K along k) into ring slot s.
// G(x, p) = KCONTIG ? G[p + x * ld] : G[x + p * ld]; x0 / k0 are the slice's origin; R is the
// operand's lane-group size (selects the swizzle). Copies run along the unit stride, VEC
// floats each; the partial vector at an edge copies its valid floats and zero-fills the rest
// (src-size), and copies wholly outside read nothing.
template <int KCONTIG, int BX, int R>
__device__ __forceinline__ void load_tile(float* __restrict__ s, const float* __restrict__ G,
                                          int ld, int x0, int X, int k0, int K, int tid)
{
    constexpr int CPR = (KCONTIG ? BK : BX) / VEC;   // copies per row along the unit stride
    constexpr int ROWS = KCONTIG ? BX : BK;          // rows: x (k-contiguous) or k
    constexpr int TOTAL = ROWS * CPR;
    constexpr int ITERS = (TOTAL + THREADS - 1) / THREADS;
    // Opaque: the per-copy offsets below are recomputed per k-tile (a few integer operations
    // each) instead of being hoisted out of the k loop into one register per copy.
    ld = opaque(ld);
    tid = opaque(tid);
    // Origin and extents in (row, column-along-the-unit-stride) terms.
    const int r0 = KCONTIG ? x0 : k0, c0 = KCONTIG ? k0 : x0;
    const int rend = KCONTIG ? X : K, cend = KCONTIG ? K : X;
    if (THREADS % CPR == 0) {
        // A pass of the block covers RSTEP whole rows: the column, and its edge test, are
        // fixed per thread, and the source pointer advances by RSTEP rows per copy.
        constexpr int RSTEP = THREADS / CPR;
        const int tr = tid / CPR, tc = (tid % CPR) * VEC;
        const int crem = cend - (c0 + tc);
        const int cbytes = crem > 0 ? 4 * (crem < VEC ? crem : VEC) : 0;
        const int rows_left = rend - (r0 + tr);      // copy it is in range while it*RSTEP < this
        const float* src = G + (size_t)(r0 + tr) * ld + (c0 + tc);
        const size_t step = (size_t)RSTEP * ld;
#pragma unroll
        for (int it = 0; it < ITERS; ++it) {
            const int r = tr + it * RSTEP;
            if (TOTAL % THREADS != 0 && r >= ROWS) break;
            const int bytes = it * RSTEP < rows_left ? cbytes : 0;
            float* dst = s + (KCONTIG ? kc_pos<R>(r, tc) : mn_pos<BX, R>(r, tc));
            cp_async<4 * VEC>(dst, bytes ? src : G, bytes);
            src += step;
        }
    } else {
#pragma unroll
        for (int it = 0; it < ITERS; ++it) {
            const int idx = tid + it * THREADS;
            if (TOTAL % THREADS != 0 && idx >= TOTAL) break;
            const int r = idx / CPR, c = (idx % CPR) * VEC;
            const int crem = cend - (c0 + c);
            const int bytes = (r0 + r < rend && crem > 0) ? 4 * (crem < VEC ? crem : VEC) : 0;
            const float* src = bytes ? G + (size_t)(r0 + r) * ld + (c0 + c) : G;
            float* dst = s + (KCONTIG ? kc_pos<R>(r, c) : mn_pos<BX, R>(r, c));
            cp_async<4 * VEC>(dst, src, bytes);
        }
    }
}

// ---- fragments and mma --------------------------------------------------------------------

__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], const float* p)
{
    const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(p));
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(s));
}

// Round to TF32 (10 explicit mantissa bits), to nearest. sm_90 converts with ties to even in
// one instruction (F2FP.TF32.F32.PACK_B); ties away (cvt.rna, the only mode before sm_90) is
// emulated there in three (FSETP, IADD, LOP3), which the 3xtf32 split would pay six times per
// operand pair. Inf and NaN stay Inf and NaN; finite values above the largest TF32 round to Inf.
// CVT=1 asks for ties away on sm_90 too: the conversion unit's throughput is not published,
// and the emulation runs on the integer and FP32 pipes instead, so the tuner can tell.
__device__ __forceinline__ unsigned to_tf32(float x)
{
    unsigned r;
#if __CUDA_ARCH__ >= 900 && CVT == 0
    asm("cvt.rn.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(x));
#else
    asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(x));
#endif
    return r;
}

// x = big + small (+ a remainder of about 2^-22 |x|), both TF32 values.
__device__ __forceinline__ void split_tf32(unsigned raw, unsigned& big, unsigned& small)
{
    const float x = __uint_as_float(raw);
    big = to_tf32(x);
    small = to_tf32(x - __uint_as_float(big));
}

__device__ __forceinline__ void mma_tf32(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2])
{
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
        "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// d = a * b (no accumulator input: C is zero).
__device__ __forceinline__ void mma_tf32_zero(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2])
{
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
        "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%10,%10,%10};\n"
        : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(0.f));
}

// Fragments of one k-step: af[i] = {A(g, t), A(g+8, t), A(g, t+4), A(g+8, t+4)} of m-tile i,
// bf[j] = {B(t, g), B(t+4, g)} of n-tile j (logical coordinates, see the header), as raw
// float32 bits (PRECISION 1) or already rounded to TF32 (PRECISION 0).
struct Frags {
    unsigned a[MT][4];
    unsigned b[NT][2];
};

// Per-lane ldmatrix row addresses into the k-contiguous tiles, fixed for the whole kernel:
// lane L addresses row L % 8 of matrix L / 8 (the m-tile / n-tile and k-step offsets are added
// at each read, inside the swizzle).
struct Readers {
    int a_x, a_k;   // A: row x = RA * (L % 8) + h (h = matrix & 1), k offset 4 * (matrix >> 1)
    int b_x, b_k;   // B: row x = RB * (L % 8) + (matrix >> 1), k offset 4 * (matrix & 1)
};

__device__ __forceinline__ Readers make_readers(int lane, int wm0, int wn0)
{
    const int mrow = lane & 7, mat = lane >> 3;
    return Readers{wm0 + RA * mrow + (mat & 1), 4 * (mat >> 1),
                   wn0 + RB * mrow + (mat >> 1), 4 * (mat & 1)};
}

// Granule q (4 floats) of a lane's run of R consecutive x at row krow of an mn-contiguous tile.
template <int X, int R>
__device__ __forceinline__ float4 mn_granule(const float* s, int krow, int xbase, int q)
{
    return *reinterpret_cast<const float4*>(s + mn_pos<X, R>(krow, xbase + 4 * q));
}

__device__ __forceinline__ void load_frags(Frags& f, const float* a_s, const float* b_s,
                                           const Readers& rd, int lane, int wm0, int wn0, int ks)
{
    const int kk = ks * 8;
    (void)rd; (void)lane; (void)wm0; (void)wn0;
#if A_KCONTIG
#pragma unroll
    for (int i = 0; i < MT; ++i)
        ldmatrix_x4(f.a[i], a_s + kc_pos<RA>(rd.a_x + 2 * i, kk + rd.a_k));
#else
    {
        const int g = lane >> 2, t = lane & 3;
        float lo[RA], hi[RA];   // rows RA*g + 0..RA-1 of the warp tile at k = kk+t and kk+t+4
#pragma unroll
        for (int q = 0; q < RA / 4; ++q) {
            const float4 v0 = mn_granule<BM, RA>(a_s, kk + t, wm0 + RA * g, q);
            const float4 v1 = mn_granule<BM, RA>(a_s, kk + t + 4, wm0 + RA * g, q);
            lo[4 * q + 0] = v0.x; lo[4 * q + 1] = v0.y; lo[4 * q + 2] = v0.z; lo[4 * q + 3] = v0.w;
            hi[4 * q + 0] = v1.x; hi[4 * q + 1] = v1.y; hi[4 * q + 2] = v1.z; hi[4 * q + 3] = v1.w;
        }
#pragma unroll
        for (int i = 0; i < MT; ++i) {
            f.a[i][0] = __float_as_uint(lo[2 * i]);       // row g   of m-tile i, k = t
            f.a[i][1] = __float_as_uint(lo[2 * i + 1]);   // row g+8 of m-tile i, k = t
            f.a[i][2] = __float_as_uint(hi[2 * i]);       // row g,   k = t + 4
            f.a[i][3] = __float_as_uint(hi[2 * i + 1]);   // row g+8, k = t + 4
        }
    }
#endif
#if B_KCONTIG
#pragma unroll
    for (int j = 0; j < NT; j += 2) {
        unsigned r[4];
        ldmatrix_x4(r, b_s + kc_pos<RB>(rd.b_x + j, kk + rd.b_k));
        f.b[j][0] = r[0];
        f.b[j][1] = r[1];
        f.b[j + 1][0] = r[2];
        f.b[j + 1][1] = r[3];
    }
#else
    {
        const int g = lane >> 2, t = lane & 3;
#pragma unroll
        for (int q = 0; q < RB / 4; ++q) {
            const float4 v0 = mn_granule<BN, RB>(b_s, kk + t, wn0 + RB * g, q);
            const float4 v1 = mn_granule<BN, RB>(b_s, kk + t + 4, wn0 + RB * g, q);
            f.b[4 * q + 0][0] = __float_as_uint(v0.x); f.b[4 * q + 0][1] = __float_as_uint(v1.x);
            f.b[4 * q + 1][0] = __float_as_uint(v0.y); f.b[4 * q + 1][1] = __float_as_uint(v1.y);
            f.b[4 * q + 2][0] = __float_as_uint(v0.z); f.b[4 * q + 2][1] = __float_as_uint(v1.z);
            f.b[4 * q + 3][0] = __float_as_uint(v0.w); f.b[4 * q + 3][1] = __float_as_uint(v1.w);
        }
    }
#endif
#if PRECISION == 0
    // Round once, right after the load, off the mma's critical path.
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int v = 0; v < 4; ++v) f.a[i][v] = to_tf32(__uint_as_float(f.a[i][v]));
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
        for (int v = 0; v < 2; ++v) f.b[j][v] = to_tf32(__uint_as_float(f.b[j][v]));
#endif
}

// The mma of one k-step into acc.
__device__ __forceinline__ void mma_step(float (&acc)[MT][NT][4], const Frags& f)
{
#if PRECISION == 0
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j) mma_tf32(acc[i][j], f.a[i], f.b[j]);
#else
    unsigned b_big[NT][2], b_small[NT][2];
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
        for (int v = 0; v < 2; ++v) split_tf32(f.b[j][v], b_big[j][v], b_small[j][v]);
#if FLUSH
    // Per (m-tile, group of FG n-tiles): the three products of this k-step go into fresh
    // temporaries (the first mma adds to zero), which are then added to the result with FADD
    // (round to nearest): the tensor core's own accumulation rounding acts on 24-product sums
    // only, never on the long running sum.
#pragma unroll
    for (int i = 0; i < MT; ++i) {
        unsigned a_big[4], a_small[4];   // split per m-tile: fewer registers live
#pragma unroll
        for (int v = 0; v < 4; ++v) split_tf32(f.a[i][v], a_big[v], a_small[v]);
#pragma unroll
        for (int j0 = 0; j0 < NT; j0 += FG) {
            float tmp[FG][4];
#pragma unroll
            for (int pass = 0; pass < 3; ++pass)
#pragma unroll
                for (int jj = 0; jj < FG; ++jj) {
                    const int j = j0 + jj;
                    if (pass == 0) mma_tf32_zero(tmp[jj], a_small, b_big[j]);
                    else mma_tf32(tmp[jj], a_big, pass == 1 ? b_small[j] : b_big[j]);
                }
#pragma unroll
            for (int jj = 0; jj < FG; ++jj)
#pragma unroll
                for (int e = 0; e < 4; ++e) acc[i][j0 + jj][e] += tmp[jj][e];
        }
    }
#else
    unsigned a_big[MT][4], a_small[MT][4];
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int v = 0; v < 4; ++v) split_tf32(f.a[i][v], a_big[i][v], a_small[i][v]);
    // Three passes over the warp tile, small terms first and the big product last (its
    // rounding dominates): small*big, big*small, big*big. Pass by pass, consecutive mma write
    // different accumulators: the three mma of one accumulator would otherwise issue back to
    // back, each waiting for the previous one's result.
#pragma unroll
    for (int pass = 0; pass < 3; ++pass)
#pragma unroll
        for (int i = 0; i < MT; ++i)
#pragma unroll
            for (int j = 0; j < NT; ++j)
                mma_tf32(acc[i][j], pass == 0 ? a_small[i] : a_big[i],
                         pass == 1 ? b_small[j] : b_big[j]);
#endif  // FLUSH
#endif  // PRECISION
}

#if TOTALS
// The thread's slot of accumulator tile (i, j) in the shared totals: [tile][thread] float4s,
// so a warp's 16-byte accesses cover 512 consecutive bytes (conflict-free).
__device__ __forceinline__ float4* total_slot(float4* totals, int i, int j, int tid)
{
    return totals + (i * NT + j) * THREADS + tid;
}

// End of a register chain: totals += acc (round to nearest), and acc restarts from zero.
__device__ __forceinline__ void add_to_totals(float4* totals, float (&acc)[MT][NT][4], int tid)
{
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j) {
            float4* slot = total_slot(totals, i, j, tid);
            float4 t = *slot;
            t.x += acc[i][j][0]; t.y += acc[i][j][1]; t.z += acc[i][j][2]; t.w += acc[i][j][3];
            *slot = t;
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.f;
        }
}
#endif

// One element of op(A) * op(B) over k in [p0, p1) as an IEEE float32 FMA chain, read from
// global memory: the epilogue's answer for the rare sums the tensor-core path left non-finite.
__device__ __noinline__ float ieee_dot(const REAL* __restrict__ A, int lda,
                                       const REAL* __restrict__ B, int ldb,
                                       int i, int j, int p0, int p1)
{
    float s = 0.f;
    for (int p = p0; p < p1; ++p) {
        s = fmaf(A_AT(i, p), B_AT(p, j), s);
        if (s != s) break;   // NaN stays NaN whatever follows
    }
    return s;
}

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
gemm(int m, int n, int k, REAL alpha, const REAL* __restrict__ A, int lda,
     const REAL* __restrict__ B, int ldb, REAL beta, REAL* __restrict__ C, int ldc)
{
    extern __shared__ __align__(128) unsigned char smem_raw[];
    float* const sA = reinterpret_cast<float*>(smem_raw);
    float* const sB = sA + STAGES * A_STAGE;
#if TOTALS
    float4* const totals = reinterpret_cast<float4*>(sB + STAGES * B_STAGE);
#endif

    // Group-M rasterisation: consecutive linear block ids walk GROUP_M block-rows per column.
    int bm, bn;
    group_m_block(GROUP_M, bm, bn);
    const int row0 = bm * BM, col0 = bn * BN;

    // Range of k-tiles of this block (a contiguous slice when SPLIT_K > 1).
    int kt0, ntiles;
    block_k_tiles(k, BK, SPLIT_K, kt0, ntiles);
#if SPLIT_K > 1
    C = SPLIT_SLICE(C, ldc, n);
    if (ntiles <= 0) {   // an empty slice: zeros for splitk_reduce to add
        zero_slice_tile(C, ldc, m, n, row0, col0, BM, BN, THREADS);
        return;
    }
#endif

    const int tid = threadIdx.x;
    const int warp = tid >> 5, lane = tid & 31;
    const int wm0 = (warp % WARPS_M) * WM, wn0 = (warp / WARPS_M) * WN;
    const Readers rd = make_readers(lane, wm0, wn0);

    float acc[MT][NT][4];
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.f;
#if TOTALS
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j) *total_slot(totals, i, j, tid) = make_float4(0.f, 0.f, 0.f, 0.f);
    int chain = 0;   // k-tiles in the current register chain
#endif

    // Prologue: fill STAGES-1 slots (empty groups keep the wait counts uniform).
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < ntiles) {
            const int k0 = (kt0 + s) * BK;
            load_tile<A_KCONTIG, BM, RA>(sA + s * A_STAGE, A, lda, row0, m, k0, k, tid);
            load_tile<B_KCONTIG, BN, RB>(sB + s * B_STAGE, B, ldb, col0, n, k0, k, tid);
        }
        cp_async_commit();
    }

    // Main loop, one __syncthreads per k-tile. Slot wstage (read by tile it-1) is refilled
    // only after the barrier of iteration it-1, which every thread passes after its last
    // read of tile it-1; that barrier also publishes tile it+1... see the ring notes above.
    int rstage = 0, wstage = STAGES - 1;
    cp_async_wait<STAGES - 2>();   // k-tile 0 has landed (for this thread) ...
    __syncthreads();               // ... for all threads
    const float* a_s = sA;
    const float* b_s = sB;
    Frags fr[2];
    load_frags(fr[0], a_s, b_s, rd, lane, wm0, wn0, 0);

    for (int it = 0; it < ntiles; ++it) {
        {
            const int nxt = it + STAGES - 1;
            if (nxt < ntiles) {
                const int k0 = (kt0 + nxt) * BK;
                load_tile<A_KCONTIG, BM, RA>(sA + wstage * A_STAGE, A, lda, row0, m, k0, k, tid);
                load_tile<B_KCONTIG, BN, RB>(sB + wstage * B_STAGE, B, ldb, col0, n, k0, k, tid);
            }
            cp_async_commit();
            wstage = (wstage + 1 == STAGES) ? 0 : wstage + 1;
        }
#pragma unroll
        for (int ks = 0; ks < KSTEPS; ++ks) {
            if (ks == KSTEPS - 1) {
                cp_async_wait<STAGES - 2>();   // k-tile it+1 has landed (for this thread) ...
                __syncthreads();               // ... for all; tile it is no longer read
                rstage = (rstage + 1 == STAGES) ? 0 : rstage + 1;
                a_s = sA + rstage * A_STAGE;
                b_s = sB + rstage * B_STAGE;
                // First k-step of tile it+1 (after the last tile: an unused read of a stale slot).
                load_frags(fr[(ks + 1) & 1], a_s, b_s, rd, lane, wm0, wn0, 0);
            } else {
                load_frags(fr[(ks + 1) & 1], a_s, b_s, rd, lane, wm0, wn0, ks + 1);
            }
            mma_step(acc, fr[ks & 1]);
        }
        if (KSTEPS & 1) fr[0] = fr[1];   // odd k-steps: the next tile's first fragments are in 1
#if TOTALS
        if (++chain == CHAIN_TILES) {   // block-uniform
            chain = 0;
            add_to_totals(totals, acc, tid);
        }
#endif
    }
    cp_async_wait<0>();
#if TOTALS
    // The result: the shared total plus the last, partial chain.
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j) {
            const float4 t = *total_slot(totals, i, j, tid);
            acc[i][j][0] += t.x; acc[i][j][1] += t.y; acc[i][j][2] += t.z; acc[i][j][3] += t.w;
        }
#endif

    // Epilogue: acc[i][j][2h + e] is C(row0 + wm0 + RA*g + 2i + h, col0 + wn0 + RB*(2t + e) + j):
    // per column, RA consecutive rows (float4 along m where aligned).
    const int g = lane >> 2, t = lane & 3;
    const int gi0 = row0 + wm0 + RA * g;
    const int p_end = min(k, (kt0 + ntiles) * BK);   // this block's k range, for ieee_dot
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
            const int gj = col0 + wn0 + RB * (2 * t + e) + j;
            if (gj >= n) continue;
            float* ccol = C + (size_t)gj * ldc;
#pragma unroll
            for (int q = 0; q < RA / 4; ++q) {
                float v[4];
#pragma unroll
                for (int r = 0; r < 4; ++r) v[r] = acc[(4 * q + r) >> 1][j][2 * (r & 1) + e];
                const int gi = gi0 + 4 * q;
#pragma unroll
                for (int r = 0; r < 4; ++r)   // Inf or NaN: IEEE's answer instead (see header)
                    if (!(fabsf(v[r]) <= __int_as_float(0x7f7fffff)) && gi + r < m)
                        v[r] = ieee_dot(A, lda, B, ldb, gi + r, gj, kt0 * BK, p_end);
#if ALIGNED   // (the split-K workspace is 16-byte aligned too)
                if (gi + 3 < m) {
                    store4(ccol + gi, make_float4(v[0], v[1], v[2], v[3]), alpha, beta);
                    continue;
                }
#endif
#pragma unroll
                for (int r = 0; r < 4; ++r)
                    if (gi + r < m) store_c(ccol + gi + r, v[r], alpha, beta);
            }
        }
}
