// sgemm_tf32_wgmma: float32 GEMM on Hopper's warpgroup MMA (wgmma.mma_async, sm_90a only),
// in the precision modes of sgemm_tf32.cu (PRECISION 0: tf32, operands rounded to TF32 by
// cvt.rn; 1: 3xtf32, x = big + small, products small*big + big*small + big*big), with the
// same ABI, BLAS semantics, transposes, edges, split-K and IEEE handling of non-finite sums.
//
// Technique
//   * One BM x BN tile of C per block, BM = 128: two consumer warpgroups (256 threads), each
//     owning 64 rows, issue m64nBNk8 wgmma with both operands in shared memory. Its FP32
//     accumulator is BN/2 registers per thread (the PTX ISA's D fragment: warp q of the
//     warpgroup holds rows 16q + g and 16q + g + 8, g = lane/4, columns 8j + 2t + {0, 1},
//     t = lane%4, as d[4j + {0, 1}] and d[4j + {2, 3}]).
//   * wgmma takes TF32 operands only K-major (k contiguous; no transpose bit for .tf32), each
//     described by a 64-bit matrix descriptor: here the 128-byte swizzle, one 128-byte row
//     of BK = 32 floats per m (or n) index, rows 128 bytes apart, 8-row groups 1024 bytes
//     apart (stride byte offset), chunk c (16 bytes) of row x stored at chunk c ^ (x % 8).
//     The k-steps of 8 within the row advance the descriptor's start address by 32 bytes (the
//     hardware applies the XOR to address bits 4-6 from bits 7-9, so tiles sit on 1024-byte
//     boundaries). tests/unit/test_wgmma_layout.py checks this arithmetic against the ISA's
//     definitions in NumPy.
//   * Two shared-memory stages per k-tile. A ring of STAGES raw slots filled by cp.async in
//     each operand's own layout (16-byte copies where ALIGNED, else 4-byte; out-of-range
//     elements zero-filled by src-size): a K-major operand lands already in the swizzled
//     layout, an M-major one (A with TRANS_A = 0, B with TRANS_B = 1) as [k][x] rows. Then a
//     conversion pass, which all threads run while the tensor cores work on the previous
//     k-tile, reads a raw slot, rounds to TF32 (or splits into big and small) and writes the
//     K-major swizzled operand tiles (double-buffered; 3xtf32 keeps big and small copies):
//     the transpose of an M-major operand, the rounding and the split cost one read and one
//     write of shared memory per element, and global memory is read once, as float32.
//   * Per k-tile: wgmma.fence, the k-steps' wgmma, commit_group; cp.async of the tile
//     STAGES-1 ahead; conversion of the next tile; fence.proxy.async (the generic-proxy
//     writes become visible to wgmma's async proxy); wgmma.wait_group 0; cp.async.wait_group
//     for the tile after next; one __syncthreads.
//   * 3xtf32 accumulates outside the tensor cores, as sgemm_tf32.cu's FLUSH does: the tensor
//     cores add without rounding to nearest, so each k-tile's 3 * BK / 8 wgmma start from
//     scale-d = 0 in temporaries (small terms first, big*big last) that FADD adds to a chain
//     accumulator; every CHAIN k-tiles the chain is added to a running total (registers too:
//     3 * BN / 2 registers per thread in all) and restarts from zero.
//   * Group-M rasterisation, split-K through the launcher's workspace and splitk_reduce
//     (common.cuh), the BLAS epilogue (beta == 0 never reads C) and the IEEE recompute of
//     non-finite sums are those of sgemm_tf32.cu.
#include "common.cuh"

#if DTYPE != 0
#error "sgemm_tf32_wgmma.cu supports DTYPE=0 (float32) only"
#endif
#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#error "sgemm_tf32_wgmma.cu needs sm_90a (wgmma): compile with -arch=sm_90a"
#endif

#ifndef BN
#define BN 128         // columns of C per block: the wgmma's n (64, 128 or 256)
#endif
#ifndef STAGES
#define STAGES 4       // raw cp.async slots (>= 3: the tile after next is in flight)
#endif
#ifndef GROUP_M
#define GROUP_M 8      // block-rows rasterised together for L2 reuse (1: plain grid order)
#endif
#ifndef PRECISION
#define PRECISION 0    // 0: tf32 (operands rounded); 1: 3xtf32 (big + small split)
#endif
#ifndef CHAIN
#define CHAIN 4        // 3xtf32: k-tiles summed in the chain accumulator before the total
#endif
#define BM 128                     // rows of C per block: two warpgroups of m64
#define BK 32                      // k per tile: one 128-byte swizzle row of floats
#define WG_THREADS 128
#ifndef THREADS
#define THREADS (2 * WG_THREADS)
#endif
#define KSTEPS (BK / 8)            // wgmma k-steps per k-tile
#define ACC (BN / 2)               // accumulator registers per thread
#define PARTS (PRECISION + 1)      // operand copies in shared memory: big (and small)
#define VEC (ALIGNED ? 4 : 1)      // floats per cp.async
#define A_KMAJOR (TRANS_A)         // A's unit stride runs along k
#define B_KMAJOR (!TRANS_B)        // B's unit stride runs along k
#define A_TILE (BM * BK)           // floats of one A tile (raw slot or operand copy)
#define B_TILE (BN * BK)
#define RAW_FLOATS (STAGES * (A_TILE + B_TILE))
#define OP_FLOATS (2 * PARTS * (A_TILE + B_TILE))

#if BN != 64 && BN != 128 && BN != 256
#error "BN must be 64, 128 or 256"
#endif
#if STAGES < 3
#error "STAGES must be at least 3"
#endif
#if PRECISION != 0 && PRECISION != 1
#error "PRECISION must be 0 (tf32) or 1 (3xtf32)"
#endif
#if THREADS != 2 * WG_THREADS
#error "the kernel runs two warpgroups"
#endif

// ---- layouts --------------------------------------------------------------------------------

// Float offset of element (x, k) of a K-major tile in the 128-byte swizzle: row x is 32
// floats (128 bytes), its 16-byte chunk k / 4 stored at chunk (k / 4) ^ (x % 8).
__device__ __forceinline__ int sw128(int x, int k)
{
    return x * BK + ((((k >> 2) ^ x) & 7) << 2) + (k & 3);
}

// The wgmma matrix descriptor of a K-major, 128-byte-swizzled tile at shared address addr
// (1024-byte aligned): start address >> 4 in bits 0-13, leading byte offset (unused by a
// swizzled K-major layout; 1 as is customary) in bits 16-29, stride byte offset 1024 >> 4 (8
// rows of 128 bytes) in bits 32-45, base offset 0 (bits 49-51), swizzle mode 1 = 128-byte in
// bits 62-63.
__device__ __forceinline__ unsigned long long sw128_desc(unsigned addr)
{
    return (unsigned long long)((addr & 0x3FFFF) >> 4) | (1ull << 16) | ((1024ull >> 4) << 32)
           | (1ull << 62);
}
#define DESC_KSTEP 2   // +32 bytes of start address (8 floats of k), in the >> 4 units

// cp_async, cp_async_commit, cp_async_wait and opaque come from tiling.cuh (via common.cuh).

// Copy one BX x BK slice of an operand into a raw slot. G(x, p) = KMAJOR ? G[p + x * ld] :
// G[x + p * ld] (extents X along x, K along k; origin x0, k0). K-major slices land in the
// swizzled layout (sw128), M-major ones as [k][BX] rows. Copies run along the unit stride,
// VEC floats each; a partial vector copies its valid floats and zero-fills the rest.
template <int KMAJOR, int BX>
__device__ __forceinline__ void load_raw(float* __restrict__ s, const float* __restrict__ G,
                                         int ld, int x0, int X, int k0, int K, int tid)
{
    constexpr int CPR = (KMAJOR ? BK : BX) / VEC;   // copies per row along the unit stride
    constexpr int TOTAL = BX * BK / VEC;
    static_assert(TOTAL % THREADS == 0, "whole passes of the block");
    ld = opaque(ld);
    tid = opaque(tid);
    const int r0 = KMAJOR ? x0 : k0, c0 = KMAJOR ? k0 : x0;
    const int rend = KMAJOR ? X : K, cend = KMAJOR ? K : X;
#pragma unroll
    for (int it = 0; it < TOTAL / THREADS; ++it) {
        const int idx = tid + it * THREADS;
        const int r = idx / CPR, c = (idx % CPR) * VEC;
        const int crem = cend - (c0 + c);
        const int bytes = (r0 + r < rend && crem > 0) ? 4 * (crem < VEC ? crem : VEC) : 0;
        const float* src = bytes ? G + (size_t)(r0 + r) * ld + (c0 + c) : G;
        float* dst = s + (KMAJOR ? sw128(r, c) : r * BX + c);
        cp_async<4 * VEC>(dst, src, bytes);
    }
}

// ---- TF32 rounding and the 3xtf32 split (as sgemm_tf32.cu with CVT = 0) --------------------

// Round to TF32 (10 explicit mantissa bits), to nearest even: one F2FP on sm_90. Inf and NaN
// stay Inf and NaN; finite values above the largest TF32 round to Inf.
__device__ __forceinline__ float to_tf32(float x)
{
    unsigned r;
    asm("cvt.rn.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(x));
    return __uint_as_float(r);
}

// Converted values of one raw value: big = tf32(x) and, in 3xtf32, small = tf32(x - big).
struct Parts {
    float big, small;
};

__device__ __forceinline__ Parts split(float x)
{
    const float big = to_tf32(x);
#if PRECISION == 1
    return Parts{big, to_tf32(x - big)};
#else
    return Parts{big, 0.f};
#endif
}

// Raw slot -> operand copies (big at op, small at op + copy stride), K-major and swizzled.
// A K-major raw slot is swizzled already: converted in place order, 16 bytes at a time. An
// M-major one ([k][BX]) is transposed: a thread reads 4 k of one x (lanes on consecutive x:
// conflict-free) and writes their 16-byte chunk (8 consecutive x per quarter-warp: 8
// different chunks under the swizzle).
template <int KMAJOR, int BX>
__device__ __forceinline__ void convert(float* __restrict__ op, int small_stride,
                                        const float* __restrict__ raw, int tid)
{
    constexpr int CHUNKS = BX * BK / 4;
    static_assert(CHUNKS % THREADS == 0, "whole passes of the block");
#pragma unroll
    for (int it = 0; it < CHUNKS / THREADS; ++it) {
        const int idx = tid + it * THREADS;
        float4 v;
        int pos;
        if (KMAJOR) {
            pos = 4 * idx;
            v = *reinterpret_cast<const float4*>(raw + pos);
        } else {
            const int x = idx % BX, k = 4 * (idx / BX);
            v = make_float4(raw[k * BX + x], raw[(k + 1) * BX + x], raw[(k + 2) * BX + x],
                            raw[(k + 3) * BX + x]);
            pos = sw128(x, k);
        }
        const Parts p0 = split(v.x), p1 = split(v.y), p2 = split(v.z), p3 = split(v.w);
        *reinterpret_cast<float4*>(op + pos) = make_float4(p0.big, p1.big, p2.big, p3.big);
#if PRECISION == 1
        *reinterpret_cast<float4*>(op + small_stride + pos) =
            make_float4(p0.small, p1.small, p2.small, p3.small);
#else
        (void)small_stride;
#endif
    }
}

// ---- wgmma ----------------------------------------------------------------------------------

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_wait_all() { asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory"); }
// Shared-memory writes of this thread (generic proxy) made visible to wgmma's reads (async
// proxy); the __syncthreads after it publishes them to the other threads.
__device__ __forceinline__ void fence_async_shared() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

// Pins the accumulator registers at this point: the compiler may not move them across the
// asynchronous wgmma's issue and wait (CUTLASS's warpgroup_fence_operand).
__device__ __forceinline__ void pin(float (&d)[ACC])
{
#pragma unroll
    for (int i = 0; i < ACC; ++i) asm volatile("" : "+f"(d[i]) :: "memory");
}

// m64nNk8 TF32 wgmma, d (+)= A * B, both operands by descriptor; scale_d = 0: d = A * B.
// (Generated text: one wrapper per n, its N/2 accumulator operands spelled out.)
__device__ __forceinline__ void wgmma_tf32(float (&d)[32], unsigned long long a,
                                           unsigned long long b, int scale_d)
{
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, "
        "%18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, "
        "1, 1; "
        "\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
          "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
          "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
          "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
          "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
        : "l"(a), "l"(b), "r"(scale_d));
}

__device__ __forceinline__ void wgmma_tf32(float (&d)[64], unsigned long long a,
                                           unsigned long long b, int scale_d)
{
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, "
        "%18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, "
        "%35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, "
        "%52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1; "
        "\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
          "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
          "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
          "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
          "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]),
          "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
          "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),
          "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]),
          "+f"(d[63])
        : "l"(a), "l"(b), "r"(scale_d));
}

__device__ __forceinline__ void wgmma_tf32(float (&d)[128], unsigned long long a,
                                           unsigned long long b, int scale_d)
{
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, "
        "%18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, "
        "%35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, "
        "%52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, "
        "%69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, "
        "%86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, "
        "%102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, "
        "%116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, %128, %129, "
        "p, 1, 1; "
        "\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
          "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
          "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
          "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
          "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]),
          "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
          "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),
          "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]),
          "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]),
          "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]),
          "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]),
          "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]),
          "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]),
          "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
          "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]),
          "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]),
          "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]),
          "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
        : "l"(a), "l"(b), "r"(scale_d));
}


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

// The k-steps of one k-tile from operand copies a_op (this warpgroup's 64 rows) and b_op
// into d: scale_first = 0 starts d from zero.
__device__ __forceinline__ void wgmma_tile(float (&d)[ACC], unsigned a_op, unsigned b_op,
                                           int scale_first)
{
    const unsigned long long da = sw128_desc(a_op), db = sw128_desc(b_op);
#pragma unroll
    for (int ks = 0; ks < KSTEPS; ++ks)
        wgmma_tf32(d, da + DESC_KSTEP * ks, db + DESC_KSTEP * ks, ks == 0 ? scale_first : 1);
}

extern "C" __global__ void __launch_bounds__(THREADS, 1)
gemm(int m, int n, int k, REAL alpha, const REAL* __restrict__ A, int lda,
     const REAL* __restrict__ B, int ldb, REAL beta, REAL* __restrict__ C, int ldc)
{
    // The swizzled tiles need 1024-byte alignment; the launcher adds 1 KB for this round-up.
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    const unsigned raw_addr = static_cast<unsigned>(__cvta_generic_to_shared(smem_raw));
    float* const base = reinterpret_cast<float*>(smem_raw + ((1024 - (raw_addr & 1023)) & 1023));
    float* const rawA = base;                         // STAGES raw slots of A, then of B
    float* const rawB = rawA + STAGES * A_TILE;
    float* const opA = base + RAW_FLOATS;             // [buffer][part] operand copies of A
    float* const opB = opA + 2 * PARTS * A_TILE;      // ... and of B

    int bm, bn;
    group_m_block(GROUP_M, bm, bn);
    const int row0 = bm * BM, col0 = bn * BN;

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
    const int wg = tid / WG_THREADS;

    // Stage k-tile t (relative to kt0) into its raw slot; convert it into operand buffer t % 2.
    auto stage = [&](int t) {
        const int s = t % STAGES, k0 = (kt0 + t) * BK;
        load_raw<A_KMAJOR, BM>(rawA + s * A_TILE, A, lda, row0, m, k0, k, tid);
        load_raw<B_KMAJOR, BN>(rawB + s * B_TILE, B, ldb, col0, n, k0, k, tid);
    };
    auto convert_tile = [&](int t) {
        const int s = t % STAGES, b = t & 1;
        convert<A_KMAJOR, BM>(opA + b * PARTS * A_TILE, A_TILE, rawA + s * A_TILE, tid);
        convert<B_KMAJOR, BN>(opB + b * PARTS * B_TILE, B_TILE, rawB + s * B_TILE, tid);
    };
    const unsigned opA_addr = static_cast<unsigned>(__cvta_generic_to_shared(opA))
                              + 4u * (wg * 64 * BK);   // this warpgroup's 64 rows
    const unsigned opB_addr = static_cast<unsigned>(__cvta_generic_to_shared(opB));

    float acc[ACC];
#pragma unroll
    for (int i = 0; i < ACC; ++i) acc[i] = 0.f;
#if PRECISION == 1
    float total[ACC];   // the outer level of the two-level accumulation
#pragma unroll
    for (int i = 0; i < ACC; ++i) total[i] = 0.f;
    int chain = 0;      // k-tiles in the current chain
#endif

    // Prologue: tiles 0..STAGES-2 in flight (empty groups keep the wait counts uniform);
    // tiles 0 and 1 landed; tile 0 converted into buffer 0.
#pragma unroll
    for (int t = 0; t < STAGES - 1; ++t) {
        if (t < ntiles) stage(t);
        cp_async_commit();
    }
    cp_async_wait<STAGES - 3>();
    __syncthreads();
    convert_tile(0);
    fence_async_shared();
    __syncthreads();

    for (int it = 0; it < ntiles; ++it) {
        const int b = it & 1;
        const unsigned a_big = opA_addr + 4u * (b * PARTS * A_TILE);
        const unsigned b_big = opB_addr + 4u * (b * PARTS * B_TILE);
#if PRECISION == 0
        pin(acc);
        wgmma_fence();
        wgmma_tile(acc, a_big, b_big, 1);
        wgmma_commit();
#else
        float tmp[ACC];
        pin(tmp);
        wgmma_fence();
        // Small terms first, into fresh temporaries; the big product, whose rounding
        // dominates, last.
        wgmma_tile(tmp, a_big + 4u * A_TILE, b_big, 0);
        wgmma_tile(tmp, a_big, b_big + 4u * B_TILE, 1);
        wgmma_tile(tmp, a_big, b_big, 1);
        wgmma_commit();
#endif
        // While the tensor cores work: the tile STAGES-1 ahead into the raw slot that tile
        // it-1 left (converted an iteration ago), and the conversion of tile it+1 into the
        // other operand buffer (its last reader, tile it-1's wgmma, waited for).
        if (it + STAGES - 1 < ntiles) stage(it + STAGES - 1);
        cp_async_commit();
        if (it + 1 < ntiles) convert_tile(it + 1);
        fence_async_shared();
        wgmma_wait_all();
#if PRECISION == 0
        pin(acc);
#else
        pin(tmp);
#pragma unroll
        for (int i = 0; i < ACC; ++i) acc[i] += tmp[i];
        if (++chain == CHAIN) {   // block-uniform
            chain = 0;
#pragma unroll
            for (int i = 0; i < ACC; ++i) {
                total[i] += acc[i];
                acc[i] = 0.f;
            }
        }
#endif
        cp_async_wait<STAGES - 3>();   // tile it+2 has landed (for this thread) ...
        __syncthreads();               // ... for all; buffer b is free, buffer b^1 is written
    }
    cp_async_wait<0>();
#if PRECISION == 1
#pragma unroll
    for (int i = 0; i < ACC; ++i) acc[i] += total[i];
#endif

    // Epilogue: acc[4j + e] is C(row0 + 64 wg + 16 q + g + 8 (e >> 1), col0 + 8j + 2t + (e & 1)).
    const int lane = tid & 31, q = (tid / 32) % 4;
    const int g = lane >> 2, t = lane & 3;
    const int p_end = min(k, (kt0 + ntiles) * BK);   // this block's k range, for ieee_dot
#pragma unroll
    for (int j = 0; j < BN / 8; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            const int gi = row0 + 64 * wg + 16 * q + g + 8 * (e >> 1);
            const int gj = col0 + 8 * j + 2 * t + (e & 1);
            if (gi >= m || gj >= n) continue;
            float v = acc[4 * j + e];
            if (!(fabsf(v) <= __int_as_float(0x7f7fffff)))   // Inf or NaN: IEEE's answer
                v = ieee_dot(A, lda, B, ldb, gi, gj, kt0 * BK, p_end);
            store_c(C + (size_t)gj * ldc + gi, v, alpha, beta);
        }
}
