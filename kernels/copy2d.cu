// copy2d: dst(i, j) = (DST_T) src(i, j) for a rows x cols matrix, any element strides
// (negative and zero too). Used on the device to give operands without a unit-stride
// dimension a BLAS layout, to cast device inputs to the routine's dtype, and to copy a
// result back into a strided output. One thread per element; a block of 32 x 8 threads
// walks rows fastest, which coalesces whenever either side is column-major.
#include <cuda_fp16.h>

#ifndef SRC_T
#define SRC_T float    // element type read
#endif
#ifndef DST_T
#define DST_T float    // element type written
#endif

// Plain casts, except half precision, which converts through float.
template <typename D, typename S> __device__ __forceinline__ D convert(S x) { return static_cast<D>(x); }
template <typename D> __device__ __forceinline__ D convert(__half x) { return static_cast<D>(__half2float(x)); }

extern "C" __global__ void copy2d(int rows, int cols, const SRC_T* __restrict__ src,
                                  long long src_row, long long src_col,
                                  DST_T* __restrict__ dst, long long dst_row, long long dst_col)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= rows) return;
    // The grid's y extent is capped at 65535 blocks, so columns are walked in a loop.
    for (int j = blockIdx.y * blockDim.y + threadIdx.y; j < cols; j += gridDim.y * blockDim.y)
        dst[(long long)i * dst_row + (long long)j * dst_col] = convert<DST_T>(src[(long long)i * src_row + (long long)j * src_col]);
}
