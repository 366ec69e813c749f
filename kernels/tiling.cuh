// What the tiled templates share beyond the ABI (common.cuh): cp.async copies and groups, an
// opaque integer move, the order of block tiles and the split-K k-tile ranges.
#pragma once

// An asynchronous copy of BYTES (16, or one element of T) from global to shared memory, of
// which only src_bytes are read (the rest zero-filled: src_bytes 0 reads nothing). 16-byte
// copies bypass L1 (.cg); element copies may only use .ca.
template <int BYTES, typename T>
__device__ __forceinline__ void cp_async(T* smem, const T* gmem, int src_bytes)
{
    const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
    if (BYTES == 16)
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n"
                     :: "r"(s), "l"(gmem), "r"(src_bytes) : "memory");
    else if (sizeof(T) == 8)
        asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n"
                     :: "r"(s), "l"(gmem), "r"(src_bytes) : "memory");
    else
        asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n"
                     :: "r"(s), "l"(gmem), "r"(src_bytes) : "memory");
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }

// Wait until at most N cp.async groups of this thread are still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" :: "n"(N) : "memory"); }

// Returns its argument through an opaque move: products of a leading dimension with
// compile-time offsets then stay per-use integer multiplies instead of being hoisted out of
// the k loop as one 64-bit register pair per copy (which spills).
__device__ __forceinline__ int opaque(int v)
{
    int r;
    asm volatile("mov.b32 %0, %1;\n" : "=r"(r) : "r"(v));
    return r;
}

// Group-M rasterisation of the block index: consecutive linear block ids walk `group_m`
// block-rows down one block-column before the next column, so that the blocks resident at
// once share panels of A and B in L2. bm, bn: the block tile's row and column (group_m <= 1:
// the grid's own order). group_m is a compile-time constant at every call.
__device__ __forceinline__ void group_m_block(int group_m, int& bm, int& bn)
{
    bm = blockIdx.x, bn = blockIdx.y;
    if (group_m > 1) {
        const int grid_m = gridDim.x, grid_n = gridDim.y;
        const int pid = blockIdx.x + blockIdx.y * grid_m;
        const int width = group_m * grid_n;
        const int group = pid / width;
        const int first_m = group * group_m;
        const int gsize = min(grid_m - first_m, group_m);
        const int r = pid - group * width;
        bm = first_m + r % gsize;
        bn = r / gsize;
    }
}

// The k-tiles [kt0, kt0 + ntiles) of this block, of k / bk rounded up: all of them, or under
// split-K (split > 1) the contiguous slice blockIdx.z of `split` (ntiles <= 0: an empty slice).
__device__ __forceinline__ void block_k_tiles(int k, int bk, int split, int& kt0, int& ntiles)
{
    const int kt = (k + bk - 1) / bk;
    if (split > 1) {
        const int per = (kt + split - 1) / split;
        kt0 = blockIdx.z * per;
        ntiles = min(kt, kt0 + per) - kt0;
    } else {
        kt0 = 0;
        ntiles = kt;
    }
}
