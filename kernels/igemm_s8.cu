// igemm_s8: batched INT8 GEMM on the integer tensor cores of sm_90 (H100) with warp-level
// mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32, for the Ozaki scheme II (one product per
// modulus; tunedgemm/ozaki.py is the NumPy reference, tunedgemm/ozaki_device.py the driver).
// Its ABI (C_z = A_z B_z^T for every modulus z = blockIdx.z, int8 k-contiguous operands padded
// to the tiles, products stored mod p as uint8 under OUT_MOD) and its epilogue are igemm.cuh's,
// shared with igemm_s8_wgmma.cu; here rows, cols are multiples of BM, BN and kp of BK.
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
#include "igemm.cuh"

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

// Byte offset of (row r, byte column c) in a [rows][BK] tile, c a multiple of 16 plus 0..15.
__device__ __forceinline__ int swz(int r, int c)
{
    const int idx = r * BK + c;
    const int line = idx >> 7;
    return (line << 7) | ((((idx >> 4) & 7) ^ (line & 7)) << 4) | (idx & 15);
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
igemm(IGEMM_PARAMS)
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
    // c = 8 j + 2 t within the warp tile: igemm.cuh's m16n8 fragment.
    const int g = lane >> 2, t = lane & 3;
    const int p = modulus_of(moduli, z);
#pragma unroll
    for (int i = 0; i < MT; ++i) {
        OUT_T* crow = C + (size_t)(row0 + wm0 + 16 * i + g) * ldc + col0 + wn0 + 2 * t;
#pragma unroll
        for (int j = 0; j < NT; ++j)
            store_m16n8(crow + 8 * j, ldc, acc[i][j][0], acc[i][j][1], acc[i][j][2], acc[i][j][3], p);
    }
}
