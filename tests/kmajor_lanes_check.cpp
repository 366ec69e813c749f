// Host check of kernels/kmajor_lanes.cuh's geometry (KMAJOR_LANES=1), built with g++ and run
// on the CPU by tests/unit/test_kmajor_lanes.py and benchmarks/kmajor_banks.py: the CUDA
// header is included as is, with its device calls declared and never called.
//
// For every BX in 32..256 and W in {1, 4} whose tile the block's threads split evenly, at the
// BK and THREADS given with -D, it prints one line:
//   BX W PER GR covered walked old_wavefronts new_wavefronts ideal_wavefronts
// covered: every (x, k) of the BX x BK tile is copied exactly once; walked: the cursor's
// pointer walk (unit_start, then one row a vector) reaches every vector's element; the
// wavefronts are a block's shared-store wavefronts per k-tile (W = 4: the register-staged
// stores; W = 1: the 4-byte cp.async copies), by KMAJOR_LANES=0's lane layout, by this one,
// and the least the bytes need (128 bytes a wavefront).
//
// Bank model: a store of w bytes a lane is served 128 / w lanes at a time (a whole warp for
// 4 bytes, half a warp for 8, a quarter for 16); a phase takes as many wavefronts as the most
// distinct 4-byte words it puts in one of the 32 banks.
#include <cstdio>
#include <map>
#include <set>
#include <vector>

#define __host__
#define __device__
#define __forceinline__ inline
#define __restrict__
#define ALIGNED 1
#define ADVANCE 1
#define ASYNC_CURSOR 1
#define PAD 4

struct float2 { float x, y; };
struct float4 { float x, y, z, w; };
inline float2 make_float2(float x, float y) { return {x, y}; }
inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
float comp(const float4&, int);
int opaque(int);
float __ldg(const float*);
float4 __ldg(const float4*);
void cp_async4(float*, const float*, int);
void cp_async4_line(float*, const float*, int);

#include "kmajor_lanes.cuh"

struct Access { int tid; int word; };   // a lane's first shared word (4-byte index)

// Wavefronts of one warp-wide store instruction whose lanes each write `width` bytes.
static int wavefronts(const std::vector<Access>& lanes, int width)
{
    const int per_phase = 128 / width, words = width / 4;
    int total = 0;
    for (size_t p0 = 0; p0 < lanes.size(); p0 += per_phase) {
        std::map<int, std::set<int>> bank;
        for (size_t i = p0; i < p0 + per_phase && i < lanes.size(); ++i)
            for (int w = 0; w < words; ++w) bank[(lanes[i].word + w) % 32].insert(lanes[i].word + w);
        int most = 0;
        for (auto& b : bank) most = b.second.size() > (size_t)most ? (int)b.second.size() : most;
        total += most;
    }
    return total;
}

template <int BX, int W>
static void check()
{
    using K = KMajor<BX, W>;
    constexpr int LDS = BX + PAD;
    // Coverage and the cursor walk, on a fake operand of leading dimension ld.
    const long long ld = 1000003;
    static float base_storage[1];
    const float* base = base_storage;
    std::vector<int> seen(BX * BK, 0);
    bool walked = true;
    for (int tid = 0; tid < THREADS; ++tid) {
        typename K::Cursor c{};
        c.g = base + (K::x0(tid) * ld + K::p0(tid));
        c.ld = ld;
        c.ustep = K::USTEP * ld;
        const float* su = c.g;
        for (int u = 0; u < K::UNITS; ++u) {
            su = K::unit_start(c, su, u);
            const float* src = su;
            for (int j = 0; j < K::GR; ++j) {
                if (j > 0) src += c.ld;
                const int x = K::x0(tid) + K::du_x(u) + j, k = K::p0(tid) + K::du_k(u);
                walked = walked && src == base + (x * ld + k);
                for (int e = 0; e < W; ++e)
                    if (x < BX && k + e < BK) ++seen[(k + e) * BX + x];
            }
        }
    }
    bool covered = true;
    for (int v : seen) covered = covered && v == 1;

    // Shared-store wavefronts of the whole block per k-tile, old and new lane layouts.
    int old_w = 0, new_w = 0;
    const int width_new = W == 4 ? 4 * K::GR : 4;   // bytes a lane stores at once
    for (int warp = 0; warp < THREADS / 32; ++warp) {
        // KMAJOR_LANES=0: vector r of thread t at k-row (t % VK) * W, x-row t / VK + r * XSTEP;
        // W = 4 stores it as four scalar stores down the k-rows.
        constexpr int VK = BK / W, XSTEP = THREADS / VK;
        for (int r = 0; r < K::PER; ++r)
            for (int i = 0; i < W; ++i) {
                std::vector<Access> lanes;
                for (int l = 0; l < 32; ++l) {
                    const int t = warp * 32 + l;
                    lanes.push_back({t, ((t % VK) * W + i) * LDS + t / VK + r * XSTEP});
                }
                old_w += wavefronts(lanes, 4);
            }
        for (int u = 0; u < K::UNITS; ++u)
            for (int i = 0; i < W; ++i) {
                std::vector<Access> lanes;
                for (int l = 0; l < 32; ++l) {
                    const int t = warp * 32 + l;
                    lanes.push_back({t, (K::p0(t) + K::du_k(u) + i) * LDS + K::x0(t) + K::du_x(u)});
                }
                new_w += wavefronts(lanes, width_new);
            }
    }
    const int ideal = BX * BK * 4 / 128;
    std::printf("%d %d %d %d %d %d %d %d %d\n", BX, W, K::PER, K::GR, covered, walked, old_w, new_w, ideal);
}

template <int BX, int W>
static void check_if_even()
{
    if constexpr (BK * BX % (W * THREADS) == 0 && BK * BX / W / THREADS >= 1) check<BX, W>();
}

int main()
{
    check_if_even<32, 1>();
    check_if_even<64, 1>();
    check_if_even<128, 1>();
    check_if_even<256, 1>();
    check_if_even<32, 4>();
    check_if_even<64, 4>();
    check_if_even<128, 4>();
    check_if_even<256, 4>();
    return 0;
}
