// igemm_s8_wgmma: the batched INT8 GEMM of igemm_s8.cu on Hopper's warpgroup MMA,
// wgmma.mma_async m64nBNk32 .s32.s8.s8 (sm_90a only), for the Ozaki scheme II. Same ABI and
// epilogue (igemm.cuh: C_z = A_z B_z^T for every modulus z = blockIdx.z, int8 k-contiguous
// operands padded to the tiles, products stored mod p_z as uint8 under OUT_MOD); rows, cols
// are multiples of BM, BN and kp of BK = 128.
//
// Technique
//   * One BM x BN tile per block, two warpgroups (256 threads), each owning BM / 2 rows as
//     MW = BM / 128 row blocks of 64; per k-step of 32, one m64nBNk32 wgmma per row block,
//     both operands from shared memory by descriptor. Accumulators: BN / 2 int32 per row
//     block and thread (the PTX ISA's D fragment: warp q of the warpgroup holds rows 16q + g
//     and 16q + g + 8, g = lane / 4, columns 8j + 2t + {0, 1}, t = lane % 4, as d[4j + {0, 1}]
//     and d[4j + {2, 3}]: the m16n8 fragment of igemm.cuh's epilogue, once per j).
//   * Integer wgmma takes both operands K-major only, which the layout already is: a k-tile of
//     BK = 128 bytes is one 128-byte row per line (row of A_z or B_z), stored in the 128-byte
//     swizzle: row x at byte 128 x, its 16-byte chunk c at chunk c ^ (x % 8); 8-row groups
//     1024 bytes apart (the descriptor's stride byte offset); tiles on 1024-byte boundaries.
//     The four k-steps of 32 advance the descriptor's start address by 32 bytes (the hardware
//     applies the XOR to address bits 4-6 from bits 7-9). This is sgemm_tf32_wgmma.cu's
//     layout and descriptor (a row there is 32 floats), checked against the ISA's definitions
//     in tests/unit/test_wgmma_layout.py; tests/unit/test_int8_wgmma.py takes a k-tile of
//     this kernel's copies through the emulated wgmma reads.
//   * A STAGES-slot ring filled by 16-byte cp.async.cg: thread `tid` copies chunk tid % 8 of
//     rows tid / 8 + 32 i, so its swizzled destination is one offset plus 4096 i, and eight
//     consecutive threads read one whole 128-byte line of global memory.
//   * Per k-tile `it`: cp.async.wait_group (tile it has landed), fence.proxy.async (cp.async
//     writes through the generic proxy, wgmma reads through the async proxy; ptxas makes it
//     MEMBAR.ALL.CTA + FENCE.VIEW.ASYNC.S. PROXY_FENCE = 0 leaves it out, as CUTLASS's cp.async
//     wgmma mainloops do, to measure its cost; the declared space keeps it), __syncthreads;
//     wgmma.fence, the k-steps' wgmma, commit_group; cp.async of tile it + STAGES - 2 into the
//     slot of tile it - 2; wgmma.wait_group 1. So tile it's wgmma run while this thread waits
//     for tile it + 1 and meets the barrier, and the barrier is where every warpgroup has
//     finished tile it - 2 (its wait_group 1 in iteration it - 1), whose slot the copies refill:
//     STAGES - 2 tiles in flight.
//   * Group-M rasterisation of the block index (GROUP_M block-rows together) for L2 reuse.
#include "tiling.cuh"
#include "igemm.cuh"

#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#error "igemm_s8_wgmma.cu needs sm_90a (wgmma): compile with -arch=sm_90a"
#endif

#ifndef BM
#define BM 128         // rows of C per block: 128 or 256 (each warpgroup BM / 2)
#endif
#ifndef BN
#define BN 256         // columns of C per block: the wgmma's n, 128 or 256
#endif
#ifndef STAGES
#define STAGES 4       // ring slots (>= 3: STAGES - 2 k-tiles in flight beside the two read)
#endif
#ifndef GROUP_M
#define GROUP_M 8      // block-rows rasterised together (1: plain grid order)
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1   // minimum resident blocks per SM (__launch_bounds__)
#endif
#ifndef PROXY_FENCE
#define PROXY_FENCE 1  // 1: fence.proxy.async before each k-tile's wgmma; 0: none (a probe)
#endif
#define BK 128                     // bytes (int8 k values) per k-tile: one 128-byte swizzle row
#define WG_THREADS 128
#ifndef THREADS
#define THREADS (2 * WG_THREADS)
#endif
#define MW (BM / 128)              // m64 row blocks per warpgroup
#define ACC (BN / 2)               // accumulator registers per row block and thread
#define KSTEPS (BK / 32)           // wgmma k-steps per k-tile
#define A_STAGE (BM * BK)          // bytes per ring slot of A
#define B_STAGE (BN * BK)
#define COPY_ROWS (THREADS / 8)    // rows one pass of the block's 16-byte copies covers

#if (BM != 128 && BM != 256) || (BN != 128 && BN != 256)
#error "BM and BN must be 128 or 256"
#endif
#if STAGES < 3
#error "STAGES must be at least 3"
#endif
#if THREADS != 2 * WG_THREADS
#error "the kernel runs two warpgroups"
#endif

// The wgmma matrix descriptor of a K-major, 128-byte-swizzled tile at shared address addr
// (1024-byte aligned): start address >> 4 in bits 0-13, leading byte offset (unused by a
// swizzled K-major layout; 1 as is customary) in bits 16-29, stride byte offset 1024 >> 4 (8
// rows of 128 bytes) in bits 32-45, base offset 0 (bits 49-51), swizzle mode 1 = 128-byte in
// bits 62-63. Adding n to it moves the start address by 16 n bytes.
__device__ __forceinline__ unsigned long long sw128_desc(unsigned addr)
{
    return (unsigned long long)((addr & 0x3FFFF) >> 4) | (1ull << 16) | ((1024ull >> 4) << 32)
           | (1ull << 62);
}
#define DESC_KSTEP 2   // +32 bytes of start address (32 int8 of k), in the >> 4 units

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;\n" :: "n"(N) : "memory"); }
// This thread's generic-proxy shared-memory writes (its cp.async copies) made visible to
// wgmma's async-proxy reads; the __syncthreads after it extends that to the other threads.
__device__ __forceinline__ void fence_async_shared() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

// Pins the accumulator registers at this point: the compiler may not move them across the
// asynchronous wgmma's issue and wait (CUTLASS's warpgroup_fence_operand).
__device__ __forceinline__ void pin(int (&d)[MW][ACC])
{
#pragma unroll
    for (int i = 0; i < MW; ++i)
#pragma unroll
        for (int j = 0; j < ACC; ++j) asm volatile("" : "+r"(d[i][j]) :: "memory");
}

// m64nNk32 s8 x s8 wgmma, d += A * B (scale-d = 1: the accumulators start at zero), both
// operands by descriptor. (Generated text: one wrapper per n, its N/2 accumulators spelled.)
__device__ __forceinline__ void wgmma_s8(int (&d)[64], unsigned long long a,
                                         unsigned long long b)
{
    asm volatile(
        "wgmma.mma_async.sync.aligned.m64n128k32.s32.s8.s8 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, "
        "%19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, "
        "%36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, "
        "%53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, 1;\n"
        : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]),
          "+r"(d[7]), "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]),
          "+r"(d[14]), "+r"(d[15]), "+r"(d[16]), "+r"(d[17]), "+r"(d[18]), "+r"(d[19]),
          "+r"(d[20]), "+r"(d[21]), "+r"(d[22]), "+r"(d[23]), "+r"(d[24]), "+r"(d[25]),
          "+r"(d[26]), "+r"(d[27]), "+r"(d[28]), "+r"(d[29]), "+r"(d[30]), "+r"(d[31]),
          "+r"(d[32]), "+r"(d[33]), "+r"(d[34]), "+r"(d[35]), "+r"(d[36]), "+r"(d[37]),
          "+r"(d[38]), "+r"(d[39]), "+r"(d[40]), "+r"(d[41]), "+r"(d[42]), "+r"(d[43]),
          "+r"(d[44]), "+r"(d[45]), "+r"(d[46]), "+r"(d[47]), "+r"(d[48]), "+r"(d[49]),
          "+r"(d[50]), "+r"(d[51]), "+r"(d[52]), "+r"(d[53]), "+r"(d[54]), "+r"(d[55]),
          "+r"(d[56]), "+r"(d[57]), "+r"(d[58]), "+r"(d[59]), "+r"(d[60]), "+r"(d[61]),
          "+r"(d[62]), "+r"(d[63])
        : "l"(a), "l"(b));
}

__device__ __forceinline__ void wgmma_s8(int (&d)[128], unsigned long long a,
                                         unsigned long long b)
{
    asm volatile(
        "wgmma.mma_async.sync.aligned.m64n256k32.s32.s8.s8 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, "
        "%19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, "
        "%36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, "
        "%53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, "
        "%70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, "
        "%87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, "
        "%103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, "
        "%117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, %128, %129, 1;\n"
        : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]),
          "+r"(d[7]), "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]),
          "+r"(d[14]), "+r"(d[15]), "+r"(d[16]), "+r"(d[17]), "+r"(d[18]), "+r"(d[19]),
          "+r"(d[20]), "+r"(d[21]), "+r"(d[22]), "+r"(d[23]), "+r"(d[24]), "+r"(d[25]),
          "+r"(d[26]), "+r"(d[27]), "+r"(d[28]), "+r"(d[29]), "+r"(d[30]), "+r"(d[31]),
          "+r"(d[32]), "+r"(d[33]), "+r"(d[34]), "+r"(d[35]), "+r"(d[36]), "+r"(d[37]),
          "+r"(d[38]), "+r"(d[39]), "+r"(d[40]), "+r"(d[41]), "+r"(d[42]), "+r"(d[43]),
          "+r"(d[44]), "+r"(d[45]), "+r"(d[46]), "+r"(d[47]), "+r"(d[48]), "+r"(d[49]),
          "+r"(d[50]), "+r"(d[51]), "+r"(d[52]), "+r"(d[53]), "+r"(d[54]), "+r"(d[55]),
          "+r"(d[56]), "+r"(d[57]), "+r"(d[58]), "+r"(d[59]), "+r"(d[60]), "+r"(d[61]),
          "+r"(d[62]), "+r"(d[63]), "+r"(d[64]), "+r"(d[65]), "+r"(d[66]), "+r"(d[67]),
          "+r"(d[68]), "+r"(d[69]), "+r"(d[70]), "+r"(d[71]), "+r"(d[72]), "+r"(d[73]),
          "+r"(d[74]), "+r"(d[75]), "+r"(d[76]), "+r"(d[77]), "+r"(d[78]), "+r"(d[79]),
          "+r"(d[80]), "+r"(d[81]), "+r"(d[82]), "+r"(d[83]), "+r"(d[84]), "+r"(d[85]),
          "+r"(d[86]), "+r"(d[87]), "+r"(d[88]), "+r"(d[89]), "+r"(d[90]), "+r"(d[91]),
          "+r"(d[92]), "+r"(d[93]), "+r"(d[94]), "+r"(d[95]), "+r"(d[96]), "+r"(d[97]),
          "+r"(d[98]), "+r"(d[99]), "+r"(d[100]), "+r"(d[101]), "+r"(d[102]), "+r"(d[103]),
          "+r"(d[104]), "+r"(d[105]), "+r"(d[106]), "+r"(d[107]), "+r"(d[108]), "+r"(d[109]),
          "+r"(d[110]), "+r"(d[111]), "+r"(d[112]), "+r"(d[113]), "+r"(d[114]), "+r"(d[115]),
          "+r"(d[116]), "+r"(d[117]), "+r"(d[118]), "+r"(d[119]), "+r"(d[120]), "+r"(d[121]),
          "+r"(d[122]), "+r"(d[123]), "+r"(d[124]), "+r"(d[125]), "+r"(d[126]), "+r"(d[127])
        : "l"(a), "l"(b));
}

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
igemm(IGEMM_PARAMS)
{
    // The swizzled tiles need 1024-byte alignment; the launcher adds 1 KB for this round-up.
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    const unsigned raw_addr = static_cast<unsigned>(__cvta_generic_to_shared(smem_raw));
    const unsigned skip = (1024 - (raw_addr & 1023)) & 1023;
    unsigned char* const sA = smem_raw + skip;             // STAGES slots of A, then of B
    unsigned char* const sB = sA + STAGES * A_STAGE;
    const unsigned sA_addr = raw_addr + skip, sB_addr = sA_addr + STAGES * A_STAGE;
    (void)rows; (void)cols;

    int bm, bn;
    group_m_block(GROUP_M, bm, bn);
    const int z = blockIdx.z;
    A += (size_t)z * a_batch;
    B += (size_t)z * b_batch;
    C += (size_t)z * c_batch;
    const int row0 = bm * BM, col0 = bn * BN;
    const int tid = threadIdx.x, wg = tid / WG_THREADS;

    // This thread's copies: chunk cc of rows cr + COPY_ROWS i (i < X / COPY_ROWS) of each tile.
    const int cr = tid >> 3, cc = tid & 7;
    const int soff = cr * BK + ((cc ^ (cr & 7)) << 4);
    const signed char* const gA = A + (size_t)(row0 + cr) * kp + 16 * cc;
    const signed char* const gB = B + (size_t)(col0 + cr) * kp + 16 * cc;
    const int kp_opaque = opaque(kp);   // keeps the per-pass offsets out of 64-bit registers
    auto stage = [&](int t) {
        const int s = t % STAGES;
        const size_t k0 = (size_t)t * BK;
#pragma unroll
        for (int i = 0; i < BM / COPY_ROWS; ++i)
            cp_async16(sA + s * A_STAGE + soff + i * COPY_ROWS * BK,
                       gA + k0 + (size_t)(i * COPY_ROWS) * kp_opaque);
#pragma unroll
        for (int i = 0; i < BN / COPY_ROWS; ++i)
            cp_async16(sB + s * B_STAGE + soff + i * COPY_ROWS * BK,
                       gB + k0 + (size_t)(i * COPY_ROWS) * kp_opaque);
    };
    // Descriptors of slot 0: this warpgroup's first row block of A, and B.
    const unsigned long long da0 = sw128_desc(sA_addr + wg * (BM / 2) * BK);
    const unsigned long long db0 = sw128_desc(sB_addr);

    int acc[MW][ACC];
#pragma unroll
    for (int i = 0; i < MW; ++i)
#pragma unroll
        for (int j = 0; j < ACC; ++j) acc[i][j] = 0;

    const int ntiles = kp / BK;
    // Prologue: tiles 0..STAGES-3 in flight (empty groups keep the wait counts uniform).
#pragma unroll
    for (int t = 0; t < STAGES - 2; ++t) {
        if (t < ntiles) stage(t);
        cp_async_commit();
    }

    for (int it = 0; it < ntiles; ++it) {
        cp_async_wait<STAGES - 3>();   // tile it has landed (this thread's copies) ...
        if (PROXY_FENCE) fence_async_shared();   // ... for the async proxy ...
        __syncthreads();               // ... of every thread; tile it - 2's wgmma are done
        const int s = it % STAGES;
        const unsigned long long da = da0 + (s * A_STAGE >> 4), db = db0 + (s * B_STAGE >> 4);
        pin(acc);
        wgmma_fence();
#pragma unroll
        for (int ks = 0; ks < KSTEPS; ++ks)
#pragma unroll
            for (int i = 0; i < MW; ++i)
                wgmma_s8(acc[i], da + ((64 * BK * i) >> 4) + DESC_KSTEP * ks,
                         db + DESC_KSTEP * ks);
        wgmma_commit();
        // While the tensor cores work: tile it + STAGES - 2 into the slot tile it - 2 left.
        if (it + STAGES - 2 < ntiles) stage(it + STAGES - 2);
        cp_async_commit();
        wgmma_wait<1>();               // tile it - 1's wgmma are done; tile it's may run on
        pin(acc);
    }
    wgmma_wait<0>();
    pin(acc);
    cp_async_wait<0>();

    // acc[i][4j + e]: row 64 i + 16 q + g + 8 (e >> 1) of this warpgroup's rows, column
    // 8j + 2t + (e & 1): igemm.cuh's m16n8 fragment for each j.
    const int lane = tid & 31, q = (tid / 32) % 4;
    const int g = lane >> 2, t = lane & 3;
    const int p = modulus_of(moduli, z);
#pragma unroll
    for (int i = 0; i < MW; ++i) {
        OUT_T* crow = C + (size_t)(row0 + wg * (BM / 2) + 64 * i + 16 * q + g) * ldc + col0 + 2 * t;
#pragma unroll
        for (int j = 0; j < BN / 8; ++j)
            store_m16n8(crow + 8 * j, ldc, acc[i][4 * j], acc[i][4 * j + 1], acc[i][4 * j + 2],
                        acc[i][4 * j + 3], p);
    }
}
