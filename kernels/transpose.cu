// transpose: D = X^T for a column-major rows x cols matrix X (leading dimension ldx) into a
// column-major cols x rows D (leading dimension ldd). tunedgemm/pretranspose.py runs it on
// A before an NN kernel, so that a TN product runs NN's main loop, which stages one operand
// through registers where TN's stages both.
//
// A 32 x 32 tile goes through shared memory (one column of padding against bank conflicts),
// so that the reads (lanes along X's rows) and the writes (lanes along D's rows) are both
// coalesced. The grid's y extent is capped at 65535 blocks, so tiles of columns are walked
// in a loop.

#ifndef ELEM_T
#define ELEM_T float    // the element type (not T: the CUDA headers name template parameters so)
#endif

#define TILE 32
#define ROWS 8    // threadIdx.y extent: each thread moves TILE / ROWS elements a tile

extern "C" __global__ void __launch_bounds__(TILE * ROWS)
transpose(int rows, int cols, const ELEM_T* __restrict__ X, int ldx, ELEM_T* __restrict__ D, int ldd)
{
    __shared__ ELEM_T tile[TILE][TILE + 1];   // [column of X][row of X]
    const int r0 = blockIdx.x * TILE, tx = threadIdx.x, ty = threadIdx.y;
    for (int c0 = blockIdx.y * TILE; c0 < cols; c0 += gridDim.y * TILE) {
        for (int j = ty; j < TILE; j += ROWS) {    // X(r0 + tx, c0 + j)
            const int r = r0 + tx, c = c0 + j;
            if (r < rows && c < cols) tile[j][tx] = X[(long long)r + (long long)c * ldx];
        }
        __syncthreads();
        for (int j = ty; j < TILE; j += ROWS) {    // D(c0 + tx, r0 + j) = X(r0 + j, c0 + tx)
            const int c = c0 + tx, r = r0 + j;
            if (r < rows && c < cols) D[(long long)c + (long long)r * ldd] = tile[tx][j];
        }
        __syncthreads();   // the tile is read before the next columns' loads overwrite it
    }
}
