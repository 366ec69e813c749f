// Block scheduling shared by the tiled templates: which block tile a block computes.
#pragma once

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
