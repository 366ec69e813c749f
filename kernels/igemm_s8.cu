// igemm_s8: batched INT8 GEMM on the integer tensor cores of sm_90 (H100) with warp-level
// mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32, for the Ozaki scheme II (one product per
// modulus; tunedgemm/ozaki.py is the NumPy reference, tunedgemm/ozaki_device.py the driver).
//
// For z = blockIdx.z (the modulus index), with byte strides a_batch, b_batch and element stride
// c_batch between the matrices of consecutive z:
//     C_z[rows x cols] = A_z[rows x kp] * B_z[cols x kp]^T
// A_z and B_z are int8, row-major with k contiguous (B_z is "col" in mma terms: one row of
// B_z per column of the product). OUT_MOD = 0 stores C_z as int32, exactly (row-major, leading
// dimension ldc); OUT_MOD = 1 stores C_z mod p_z in [0, p_z) as uint8, p_z = moduli[z], which
// is all the CRT reconstruction needs and a quarter of the bytes.
//
// Edge handling is left to the producer: rows, cols are multiples of BM, BN and kp of BK (the
// conversion kernels of kernels/ozaki.cu pad with zeros, tunedgemm/ozaki_device.py sizes the
// buffers), a_batch, b_batch, kp multiples of 16 bytes, ldc a multiple of 4. Exactness: each
// product is at most 128 * 128 = 2^14 in magnitude, so kp <= 2^17 - 1 keeps the int32
// accumulator exact (the driver never calls with longer k).
//
// Technique
//   * One BM x BN tile per block, (BM/WM) x (BN/WN) warps of WM x WN, each (WM/16) x (WN/8)
//     accumulators of m16n8k32 (4 int32 a lane).
//   * k walked in BK-byte tiles through a STAGES-deep ring of shared buffers filled by 16-byte
//     cp.async.cg (L2 only: each byte is used once per block), one __syncthreads per k-tile.
//   * Shared layout: rows of BK bytes in 128-byte lines; the 16-byte granule of each line is
//     XOR-swizzled with (line & 7), so the 8 rows one ldmatrix matrix reads (8 consecutive
//     rows, one granule column) fall into 8 different granules for BK = 128 (one row a line)
//     and BK = 64 (two rows a line: granules c and c + 4 of four lines): no bank conflicts,
//     for the cp.async stores (whole lines) either.
//   * Fragments by ldmatrix.x4 .b16: an 8 x 8 matrix of 16-bit pairs is 8 rows of 16 int8,
//     and lane (g = lane / 4, t = lane % 4) receives bytes 4t..4t+3 of row g: exactly the
//     m16n8k32 A element group (row g, k 4t..4t+3) and B group (column g, k 4t..4t+3). One x4
//     gives an m-tile's a0..a3 (rows 0-7 / 8-15 x k 0-15 / 16-31) or two n-tiles' b0, b1.
//     Fragments are double-buffered across the k-steps of a tile.
//   * Group-M rasterisation of the block index (GROUP_M block-rows together) for L2 reuse.
#include "tiling.cuh"

#ifndef BM
#define BM 128         // rows of C per block
#endif
#ifndef BN
#define BN 256         // columns of C per block
#endif
#ifndef BK
#define BK 128         // bytes (int8 k values) per k-tile: 64 or 128
#endif
#ifndef WM
#define WM 64          // rows of C per warp (multiple of 16)
#endif
#ifndef WN
#define WN 64          // columns of C per warp (multiple of 16)
#endif
#ifndef STAGES
#define STAGES 3       // depth of the cp.async ring (>= 2)
#endif
#ifndef GROUP_M
#define GROUP_M 8      // block-rows rasterised together (1: plain grid order)
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1   // minimum resident blocks per SM (__launch_bounds__)
#endif
#ifndef OUT_MOD
#define OUT_MOD 1      // call-time: 0 int32 products, 1 products mod p as uint8
#endif
#ifndef THREADS
#define THREADS ((BM / WM) * (BN / WN) * 32)
#endif
#define WARPS_M (BM / WM)
#define MT (WM / 16)               // m16 tiles per warp
#define NT (WN / 8)                // n8 tiles per warp (even: one ldmatrix.x4 covers two)
#define KSTEPS (BK / 32)           // mma k-steps per k-tile
#define A_STAGE (BM * BK)          // bytes per ring slot of A
#define B_STAGE (BN * BK)

#if (BK != 64 && BK != 128) || (BM % WM) || (BN % WN) || (WM % 16) || (WN % 16)
#error "tile sizes violate the constraints of igemm_s8"
#endif
#if STAGES < 2
#error "STAGES must be at least 2"
#endif

#if OUT_MOD
typedef unsigned char OUT_T;
#else
typedef int OUT_T;
#endif

// Byte offset of (row r, byte column c) in a [rows][BK] tile, c a multiple of 16 plus 0..15.
__device__ __forceinline__ int swz(int r, int c)
{
    const int idx = r * BK + c;
    const int line = idx >> 7;
    return (line << 7) | ((((idx >> 4) & 7) ^ (line & 7)) << 4) | (idx & 15);
}

__device__ __forceinline__ void cp_async16(void* smem, const void* gmem)
{
    const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" :: "r"(s), "l"(gmem) : "memory");
}

// Rows [x0, x0 + X) x bytes [k0, k0 + BK) of a k-contiguous int8 matrix into a ring slot.
template <int X>
__device__ __forceinline__ void load_tile(unsigned char* s, const signed char* __restrict__ G,
                                          int kp, int x0, int k0, int tid)
{
    constexpr int CPR = BK / 16;               // 16-byte copies per row
    constexpr int TOTAL = X * CPR;
    static_assert(TOTAL % THREADS == 0, "every thread copies the same number of granules");
#pragma unroll
    for (int it = 0; it < TOTAL / THREADS; ++it) {
        const int idx = tid + it * THREADS;
        const int r = idx / CPR, c = (idx % CPR) * 16;
        cp_async16(s + swz(r, c), G + (size_t)(x0 + r) * kp + k0 + c);
    }
}

__device__ __forceinline__ void ldmatrix_x4(unsigned (&d)[4], const unsigned char* p)
{
    const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(p));
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3]) : "r"(s));
}

__device__ __forceinline__ void mma_s8(int (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1)
{
    asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

struct Frags {
    unsigned a[MT][4];       // a0..a3 of each m-tile
    unsigned b[NT / 2][4];   // b0, b1 of n-tile 2j, then b0, b1 of n-tile 2j + 1
};

// Lane L addresses row L % 8 of ldmatrix matrix L / 8. A: matrix q is rows 8 (q & 1) + 0..7,
// bytes 16 (q >> 1) + 0..15 of the m-tile; B: rows 8 (q >> 1) + 0..7, bytes 16 (q & 1) + 0..15
// of the n-tile pair.
__device__ __forceinline__ void load_frags(Frags& f, const unsigned char* a_s,
                                           const unsigned char* b_s, int a_row, int a_col,
                                           int b_row, int b_col, int ks)
{
    const int kb = ks * 32;
#pragma unroll
    for (int i = 0; i < MT; ++i) ldmatrix_x4(f.a[i], a_s + swz(a_row + 16 * i, kb + a_col));
#pragma unroll
    for (int j = 0; j < NT / 2; ++j) ldmatrix_x4(f.b[j], b_s + swz(b_row + 16 * j, kb + b_col));
}

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
igemm(int rows, int cols, int kp, const signed char* __restrict__ A, long long a_batch,
      const signed char* __restrict__ B, long long b_batch, OUT_T* __restrict__ C,
      long long c_batch, int ldc, const int* __restrict__ moduli)
{
    extern __shared__ __align__(128) unsigned char smem_raw[];
    unsigned char* const sA = smem_raw;
    unsigned char* const sB = smem_raw + STAGES * A_STAGE;
    (void)rows; (void)cols;

    int bm, bn;
    group_m_block(GROUP_M, bm, bn);
    const int z = blockIdx.z;
    A += (size_t)z * a_batch;
    B += (size_t)z * b_batch;
    C += (size_t)z * c_batch;
    const int row0 = bm * BM, col0 = bn * BN;
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int wm0 = (warp % WARPS_M) * WM, wn0 = (warp / WARPS_M) * WN;
    const int mrow = lane & 7, mat = lane >> 3;
    const int a_row = wm0 + mrow + 8 * (mat & 1), a_col = 16 * (mat >> 1);
    const int b_row = wn0 + mrow + 8 * (mat >> 1), b_col = 16 * (mat & 1);

    int acc[MT][NT][4];
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[i][j][e] = 0;

    const int ntiles = kp / BK;
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < ntiles) {
            load_tile<BM>(sA + s * A_STAGE, A, kp, row0, s * BK, tid);
            load_tile<BN>(sB + s * B_STAGE, B, kp, col0, s * BK, tid);
        }
        cp_async_commit();
    }

    for (int it = 0; it < ntiles; ++it) {
        cp_async_wait<STAGES - 2>();   // k-tile `it` has landed (for this thread) ...
        __syncthreads();               // ... for all; slot of tile it - 1 is no longer read
        {
            const int nxt = it + STAGES - 1;
            if (nxt < ntiles) {
                const int slot = nxt % STAGES;
                load_tile<BM>(sA + slot * A_STAGE, A, kp, row0, nxt * BK, tid);
                load_tile<BN>(sB + slot * B_STAGE, B, kp, col0, nxt * BK, tid);
            }
            cp_async_commit();
        }
        const unsigned char* a_s = sA + (it % STAGES) * A_STAGE;
        const unsigned char* b_s = sB + (it % STAGES) * B_STAGE;
        Frags fr[2];
        load_frags(fr[0], a_s, b_s, a_row, a_col, b_row, b_col, 0);
#pragma unroll
        for (int ks = 0; ks < KSTEPS; ++ks) {
            if (ks + 1 < KSTEPS)
                load_frags(fr[(ks + 1) & 1], a_s, b_s, a_row, a_col, b_row, b_col, ks + 1);
            const Frags& f = fr[ks & 1];
#pragma unroll
            for (int i = 0; i < MT; ++i)
#pragma unroll
                for (int j = 0; j < NT; ++j)
                    mma_s8(acc[i][j], f.a[i], f.b[j >> 1][2 * (j & 1)], f.b[j >> 1][2 * (j & 1) + 1]);
        }
    }
    cp_async_wait<0>();

    // acc[i][j] = {C(r, c), C(r, c + 1), C(r + 8, c), C(r + 8, c + 1)}, r = 16 i + g,
    // c = 8 j + 2 t within the warp tile.
    const int g = lane >> 2, t = lane & 3;
#if OUT_MOD
    const int p = moduli[z];
#else
    (void)moduli;
#endif
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            OUT_T* crow = C + (size_t)(row0 + wm0 + 16 * i + 8 * h + g) * ldc + col0 + wn0 + 2 * t;
#pragma unroll
            for (int j = 0; j < NT; ++j) {
                const int v0 = acc[i][j][2 * h], v1 = acc[i][j][2 * h + 1];
#if OUT_MOD
                int r0 = v0 % p, r1 = v1 % p;
                r0 += r0 < 0 ? p : 0;
                r1 += r1 < 0 ? p : 0;
                *reinterpret_cast<uchar2*>(crow + 8 * j) = make_uchar2(r0, r1);
#else
                *reinterpret_cast<int2*>(crow + 8 * j) = make_int2(v0, v1);
#endif
            }
        }
}
