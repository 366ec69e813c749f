// streamk.cuh: the stream-K schedule that the families with a STREAM_K tunable share
// (sgemm_simt.cu, dgemm_mma.cu; tunedgemm/streamk.py mirrors it on the host and tests it).
// Included after common.cuh and the template's BM, BN, BK and GROUP_M, and only where
// STREAM_K > 0, so that data-parallel kernels compile to the very same text as before. The
// template's streamk_gemm walks the schedule; streamk_fixup, below, is the same for all.
//
// Stream-K (after Osama et al., PPoPP 2023) in its "data-parallel + stream-K" hybrid form,
// deterministic: two kernels, no atomics, no block waiting on another. The work is T tiles x
// IPT "iterations" (k-tiles) each, tile-major, with IPT = max(1, ceil(k / BK)) (an empty k
// still visits every tile once, applying beta). The launcher starts G = min(SMs * STREAM_K,
// T * IPT) blocks. The first DP tiles are data-parallel: T when G divides T, else
// (floor(T / G) - 1) * G (0 when T < 2G); block b does tiles b, b + G, ... < DP whole. The
// S = (T - DP) * IPT iterations left (of G + T mod G tiles, or all T when T < G) are
// stream-K: block b then walks [begin(b), begin(b + 1)), begin(b) = DP * IPT + floor(b S / G),
// a tile at a time, so each block has one to two tiles' worth (S >= G: never empty). A tile
// wholly in one block's walk is finished there by the usual epilogue (the same products in
// the same k order as the data-parallel kernel: the same bits). The blocks sharing a split
// tile each store their raw partial sum in a workspace slot, and streamk_fixup adds a tile's
// slots in k order and applies the epilogue. Block b owns slots 2b (the tile its range
// starts in) and 2b + 1 (its last tile, where that is another): 2G slots of BM x BN
// elements, column-major with leading dimension BM.
#pragma once

#define FIXUP_THREADS 256   // per block of streamk_fixup (tunedgemm/streamk.py says the same)

// The schedule's arithmetic, in int (the launcher keeps T * IPT and G * G below 2^31). The
// launcher passes DP and S / G, S % G (streamk.Schedule.args; S = (T - DP) * IPT the
// stream-K iterations), so that begin(b) = DP * IPT + b * (S / G) + b * (S % G) / G, which
// is DP * IPT + floor(b S / G), needs no 64-bit division (a called subroutine, whose saved
// registers spill) and a step only one int division by G.
struct SkSchedule {
    int ipt;      // iterations (k-tiles) per tile
    int ctas;     // G
    int dp;       // data-parallel tiles (streamk.dp_tiles)
    int q, r;     // S / G and S % G
    __device__ SkSchedule(int k, int bk, int ctas_, int dp_, int q_, int r_)
        : ipt(max(1, (k + bk - 1) / bk)), ctas(ctas_), dp(dp_), q(q_), r(r_) {}
    // First iteration of block b's stream-K range (b = G: the end of the last range).
    __device__ int begin(int b) const { return dp * ipt + b * q + b * r / ctas; }
    // First iteration of block b's walk: its first data-parallel tile's, if any.
    __device__ int start(int b) const { return dp ? b * ipt : begin(b); }
    // Workspace slot of block b's partial sum of tile t: 2b for b's first tile, 2b + 1 after.
    __device__ int slot(int b, int t) const { return 2 * b + (begin(b) < t * ipt ? 1 : 0); }
};

// Block b's step from iteration `it` (a tile boundary or b's first stream-K iteration): tile
// t, its k-tiles [kt_begin, kt_begin + nkt), where the next step starts and the walk ends,
// whether the step is the whole tile, and b's slot for it otherwise (streamk.Schedule.step).
struct SkStep {
    int t, kt_begin, nkt, next, end, slot;
    bool whole;
    __device__ SkStep(const SkSchedule& sk, int b, int it)
    {
        // begin(b) and begin(b + 1) from one division: the remainder of b * r / G says
        // whether (b + 1) * r / G is one more.
        const int x = b * sk.r, xq = x / sk.ctas;
        const int begin = sk.dp * sk.ipt + b * sk.q + xq;
        end = begin + sk.q + (x - xq * sk.ctas + sk.r >= sk.ctas ? 1 : 0);
        t = it / sk.ipt;
        if (t < sk.dp) {   // data-parallel: the whole tile, then b's next one or its range
            kt_begin = 0;
            nkt = sk.ipt;
            next = t + sk.ctas < sk.dp ? (t + sk.ctas) * sk.ipt : begin;
        } else {
            kt_begin = it - t * sk.ipt;
            next = min(end, (t + 1) * sk.ipt);
            nkt = next - it;
        }
        whole = kt_begin == 0 && nkt == sk.ipt;
        slot = 2 * b + (begin < t * sk.ipt ? 1 : 0);   // SkSchedule::slot
    }
};

// The split tile that streamk_fixup's block for boundary j = blockIdx.x + 1 (between the
// stream-K ranges of blocks j - 1 and j) sums, if it is that tile's first boundary strictly
// inside (streamk.Schedule.fixed_tile): its index t, the blocks first .. last that share it
// (in k order) and block first's slot; false for the other boundaries, whose blocks return.
// Every later block's range starts inside tile t, so its slot is 2b.
struct SkFixup {
    int t, first, last, first_slot;
    __device__ bool find(const SkSchedule& sk, int j)
    {
        const int s = sk.begin(j);
        t = s / sk.ipt;
        if (s == t * sk.ipt || sk.begin(j - 1) > t * sk.ipt) return false;
        first = j - 1;
        last = j;   // the ranges that start before the tile's end
        while (last + 1 < sk.ctas && sk.begin(last + 1) < (t + 1) * sk.ipt) ++last;
        first_slot = sk.slot(first, t);
        return true;
    }
};

// Tile `pid` of a grid_m x grid_n grid of tiles in group-M order (GROUP_M block rows walked
// down one block column before moving right, so A and B panels are reused in L2).
__device__ __forceinline__ void group_m_tile(int pid, int grid_m, int grid_n, int group_m,
                                             int& bm, int& bn)
{
    const int per_group = group_m * grid_n;
    const int first_m = (pid / per_group) * group_m;
    const int group_rows = min(grid_m - first_m, group_m);
    bm = first_m + (pid % per_group) % group_rows;
    bn = (pid % per_group) / group_rows;
}

// Fixes up the split tiles of streamk_gemm's G = ctas blocks: a block per interior boundary
// j = blockIdx.x + 1 between their stream-K ranges (the launcher starts none where all tiles
// are data-parallel). The first boundary inside a split tile (SkFixup) sums the tile's
// slots in k order (block f.first's, then 2b for b = f.first + 1 .. f.last) and applies the
// epilogue, a thread per element down the tile's columns, CHUNK elements a thread in flight:
// one element at a time, each a chain of dependent loads from L2, left the fixup bound by
// L2's latency (the H100, 2026-11-27: dmma's stream-K ran 15-35% behind its own k-splits).
// The others return at once. Never reads C when beta == 0.
extern "C" __global__ void __launch_bounds__(FIXUP_THREADS)
streamk_fixup(int m, int n, int k, REAL alpha, const REAL* __restrict__ W, REAL beta,
              REAL* __restrict__ C, int ldc, int ctas, int sk_dp, int sk_q, int sk_r)
{
    constexpr int ELEMS = BM * BN, CHUNK = 8;
    static_assert(ELEMS % (FIXUP_THREADS * CHUNK) == 0, "whole chunks of the tile per thread");
    const SkSchedule sk(k, BK, ctas, sk_dp, sk_q, sk_r);
    SkFixup f;
    if (!f.find(sk, blockIdx.x + 1)) return;
    int bm, bn;   // the tile's origin, group-M rasterised as in streamk_gemm
    group_m_tile(f.t, (m + BM - 1) / BM, (n + BN - 1) / BN, GROUP_M, bm, bn);
    for (int base = threadIdx.x; base < ELEMS; base += FIXUP_THREADS * CHUNK) {
        const REAL* const w = W + base;
        REAL sum[CHUNK];
#pragma unroll
        for (int u = 0; u < CHUNK; ++u) sum[u] = w[(size_t)f.first_slot * ELEMS + u * FIXUP_THREADS];
        for (int b = f.first + 1; b <= f.last; ++b) {
            REAL part[CHUNK];   // all loaded before the first add
#pragma unroll
            for (int u = 0; u < CHUNK; ++u) part[u] = w[(size_t)(2 * b) * ELEMS + u * FIXUP_THREADS];
#pragma unroll
            for (int u = 0; u < CHUNK; ++u) sum[u] += part[u];
        }
#pragma unroll
        for (int u = 0; u < CHUNK; ++u) {
            const int e = base + u * FIXUP_THREADS;
            const int i = bm * BM + e % BM, j = bn * BN + e / BM;
            if (i >= m || j >= n) continue;
            REAL* const c = C + (size_t)i + (size_t)j * ldc;
            *c = blas_epilogue(sum[u], alpha, beta, c);
        }
    }
}
