// What the batched INT8 GEMMs of the Ozaki scheme II share: igemm_s8.cu (mma.sync) and
// igemm_s8_wgmma.cu (wgmma, sm_90a) have one ABI, which tunedgemm/ozaki_device.py launches,
// and one epilogue.
//
// The ABI (IGEMM_PARAMS). For z = blockIdx.z (the modulus index), with byte strides a_batch,
// b_batch and element stride c_batch between the matrices of consecutive z:
//     C_z[rows x cols] = A_z[rows x kp] * B_z[cols x kp]^T
// A_z and B_z are int8, row-major with k contiguous (one row of B_z per column of the
// product). OUT_MOD = 0 stores C_z as int32, exactly (row-major, leading dimension ldc);
// OUT_MOD = 1 stores C_z mod p_z in [0, p_z) as uint8, p_z = moduli[z], which is all the CRT
// reconstruction needs and a quarter of the bytes.
//
// Edge handling is left to the producer: rows, cols are multiples of the block tile and kp of
// the k-tile (the conversion kernels of kernels/ozaki.cu pad with zeros, ozaki_device.py sizes
// the buffers), a_batch, b_batch, kp multiples of 16 bytes, ldc a multiple of 4. Exactness:
// each product is at most 128 * 128 = 2^14 in magnitude, so kp <= 2^17 - 1 keeps the int32
// accumulator exact (the driver never calls with longer k).
#pragma once

#ifndef OUT_MOD
#define OUT_MOD 1      // call-time: 0 int32 products, 1 products mod p as uint8
#endif

#if OUT_MOD
typedef unsigned char OUT_T;
#else
typedef int OUT_T;
#endif

// The kernel's parameters, spelled once for both templates (the launcher's "iiiPqPqPqiP").
#define IGEMM_PARAMS                                                                          \
    int rows, int cols, int kp, const signed char* __restrict__ A, long long a_batch,          \
        const signed char* __restrict__ B, long long b_batch, OUT_T* __restrict__ C,           \
        long long c_batch, int ldc, const int* __restrict__ moduli

// A 16-byte copy from global to shared memory, L2 only (.cg: each byte is used once per block).
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem)
{
    const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" :: "r"(s), "l"(gmem) : "memory");
}

// The modulus of this z (unused, and not read, when the products are stored as int32).
__device__ __forceinline__ int modulus_of(const int* __restrict__ moduli, int z)
{
#if OUT_MOD
    return moduli[z];
#else
    (void)moduli; (void)z;
    return 0;
#endif
}

// The epilogue of one m16n8 accumulator fragment, the layout mma.sync m16n8k32 and each
// 8-column group of a wgmma m64nN accumulator share: with g = lane / 4, t = lane % 4, the
// lane holds C(r + g, c + 2t + {0, 1}) in d0, d1 and C(r + g + 8, ...) in d2, d3; `at`
// points at C(r + g, c + 2t). Under OUT_MOD each value is reduced into [0, p): C's
// truncated % and one correction (tests/unit/test_ozaki_kernels.py checks it exactly).
__device__ __forceinline__ int mod_p(int v, int p)
{
    const int r = v % p;
    return r + (r < 0 ? p : 0);
}

__device__ __forceinline__ void store_m16n8(OUT_T* at, int ldc, int d0, int d1, int d2, int d3,
                                            int p)
{
#if OUT_MOD
    *reinterpret_cast<uchar2*>(at) = make_uchar2(mod_p(d0, p), mod_p(d1, p));
    *reinterpret_cast<uchar2*>(at + 8 * (size_t)ldc) = make_uchar2(mod_p(d2, p), mod_p(d3, p));
#else
    (void)p;
    *reinterpret_cast<int2*>(at) = make_int2(d0, d1);
    *reinterpret_cast<int2*>(at + 8 * (size_t)ldc) = make_int2(d2, d3);
#endif
}
