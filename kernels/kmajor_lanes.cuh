// KMajor with KMAJOR_LANES=1 (sgemm_simt.cu; the struct of the same name there is
// KMAJOR_LANES=0's): the copies of a k-major operand (element (p, x) at G[p + x * ld], unit
// stride along k) into the shared tile As[k][x] / Bs[k][x], with the lanes laid out so that
// the shared stores of a warp fall in distinct banks.
//
// Why: a shared row is BX + PAD floats, 4 mod 32 words, so k-rows 4 apart are 16 banks apart
// and k-rows 8 apart share banks. KMAJOR_LANES=0 walks k first across the lanes: at BK = 16 a
// warp's register-staged stores (k-rows 0, 4, 8, 12 of 8 x-rows) hit each bank twice, and its
// 4-byte cp.async copies (k-rows 0-15 of 2 x-rows) too; at BK = 32 four times.
//
// Here a thread's cell c = tid + u * THREADS (unit u of UNITS) splits into bit fields: the low
// log2(QL) bits pick the k-vector inside a 32-byte run of one x-row, the next log2(NG) the
// group of GR adjacent x-rows, the rest the run. A warp then reads whole 32-byte sectors of
// its rows (as cuBLAS's 4-byte copies do), and its lanes of one store phase cover two k-rows
// 4 apart (16 banks apart) of consecutive x (register-staged) or eight consecutive k-rows of
// four x-rows (4-byte cp.async): 32 distinct banks. A register-staged thread holds GR = 2 or
// 4 adjacent x-rows where it has that many vectors, transposes them in registers and stores
// each k-row's GR floats with one 8- or 16-byte store: a quarter of the store instructions
// at GR = 4. The same values land in the same shared positions: the same bits as
// KMAJOR_LANES=0.
template <int BX, int W>
struct KMajor {
    static constexpr int VK = BK / W;                               // vectors per x-row
    static constexpr int PER = BK * BX / W / THREADS;               // vectors per thread per tile
    static constexpr int GR = W == 4 ? (PER < 4 ? PER : 4) : 1;     // adjacent x-rows of a unit
    static constexpr int UNITS = PER / GR;                          // units per thread per tile
    static constexpr int QL = W == 4 ? 2 : 8;                       // vectors in 32 bytes of a row
    static constexpr int NG = BX / GR;                              // groups of GR x-rows
    static_assert(VK % QL == 0 && PER % GR == 0 && BX % GR == 0, "k-major cells tile the k-tile");

    // Cell c's group of x-rows and k-vector. The thread's part (c = tid) and a unit's part
    // (c = u * THREADS) occupy disjoint bits, so each is the sum of the two: the thread's
    // offsets are computed once, the units' are compile-time constants.
    __host__ __device__ static constexpr int group_of(int c) { return (c / QL) % NG; }
    __host__ __device__ static constexpr int vector_of(int c) { return c % QL + QL * (c / (QL * NG)); }
    __host__ __device__ static constexpr int p0(int tid) { return W * vector_of(tid); }
    __host__ __device__ static constexpr int x0(int tid) { return GR * group_of(tid); }
    __host__ __device__ static constexpr int du_k(int u) { return W * vector_of(u * THREADS); }
    __host__ __device__ static constexpr int du_x(int u) { return GR * group_of(u * THREADS); }
    // Units walk x-rows in steps of USTEP rows, then start over at x-row 0 a run further
    // along k: the cursor's pointer moves by one row step, or resets to its base plus a
    // compile-time offset.
    static constexpr int USTEP = GR * (THREADS / QL);
    __host__ __device__ static constexpr bool walks_rows(int u)
    {
        return u > 0 && du_x(u) != 0 && du_x(u) - du_x(u - 1) == USTEP && du_k(u) == du_k(u - 1);
    }
    __host__ __device__ static constexpr bool units_walk()
    {
        for (int u = 1; u < UNITS; ++u)
            if (du_x(u) != 0 && !walks_rows(u)) return false;
        return true;
    }
    static_assert(units_walk(), "a unit starts a row step on or a new run at x-row 0");
    static constexpr int LAST_K = W * (vector_of((UNITS - 1) * THREADS));   // du_k of the last unit

    // ALIGNED=0 (and the copies ASYNC_CURSOR leaves): 4-byte cp.async straight to the
    // transposed shared position.
    __device__ static void load_async(float* dst, const float* __restrict__ G, int ld, int ext, int xbase,
                                      int k0, int kend, int tid)
    {
        ld = opaque(ld);
        const int gx = xbase + x0(tid), gp = k0 + p0(tid);
        const float* g = G + ((long long)gx * ld + gp);
        float* d = dst + p0(tid) * (BX + PAD) + x0(tid);
#pragma unroll
        for (int u = 0; u < UNITS; ++u) {
            const bool ok = gp + du_k(u) < kend && gx + du_x(u) < ext;
            const float* src = ok ? g + ((long long)du_x(u) * ld + du_k(u)) : G;
            cp_async4(d + du_k(u) * (BX + PAD) + du_x(u), src, ok ? 4 : 0);
        }
    }

    // ALIGNED=1, global half of the register-staged transpose: 16-byte loads along k,
    // zeros outside (element-wise at the k edge). Vector r = u * GR + j is x-row j of unit u.
    __device__ static void load_regs(float4 (&reg)[PER], const float* __restrict__ G, int ld, int ext, int xbase,
                                     int k0, int kend, int tid)
    {
        ld = opaque(ld);
        const int gx = xbase + x0(tid), gp = k0 + p0(tid);
        const float* g = G + ((long long)gx * ld + gp);
#pragma unroll
        for (int u = 0; u < UNITS; ++u) {
            const int krem = kend - gp - du_k(u);   // valid floats of this unit's vectors
#pragma unroll
            for (int j = 0; j < GR; ++j) {
                float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
                if (gx + du_x(u) + j < ext)
                    v = load_partial(g + ((long long)(du_x(u) + j) * ld + du_k(u)), krem);
                reg[u * GR + j] = v;
            }
        }
    }

    // Up to four floats along k from src, krem of them valid (zeros past them).
    __device__ static float4 load_partial(const float* src, int krem)
    {
        float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
        if (krem >= 4) {
            v = __ldg(reinterpret_cast<const float4*>(src));
        } else {
            if (krem > 0) v.x = __ldg(src);
            if (krem > 1) v.y = __ldg(src + 1);
            if (krem > 2) v.z = __ldg(src + 2);
        }
        return v;
    }

    // Shared half: per unit and k-row, the GR x-rows' floats in one store (GR * 4 bytes,
    // aligned: x0 and du_x are multiples of GR, shared rows multiples of 4 floats).
    __device__ static void store_regs(float* dst, const float4 (&reg)[PER], int tid)
    {
        float* d = dst + p0(tid) * (BX + PAD) + x0(tid);
#pragma unroll
        for (int u = 0; u < UNITS; ++u)
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                float* s = d + (du_k(u) + i) * (BX + PAD) + du_x(u);
                const float4* r = reg + u * GR;
                if constexpr (GR == 4) {
                    *reinterpret_cast<float4*>(s) = make_float4(comp(r[0], i), comp(r[1], i), comp(r[2], i),
                                                                comp(r[3], i));
                } else if constexpr (GR == 2) {
                    *reinterpret_cast<float2*>(s) = make_float2(comp(r[0], i), comp(r[1], i));
                } else {
                    *s = comp(r[0], i);
                }
            }
    }

#if ADVANCE
    // ADVANCE=1: the loads from a cursor set up once per block and moved one k-tile on by
    // each load (XMajor::Cursor says why).
    struct Cursor {
        const float* g;        // unit 0's first vector of this thread in the next k-tile
        long long ld, ustep;   // floats from one x-row to the next; from unit to unit (USTEP rows)
        unsigned in;           // bit u * GR + j: x-row j of unit u inside m / n
        int krem;              // valid floats from this thread's k in the next k-tile
    };
    __device__ static Cursor start(const float* __restrict__ G, int ld, int ext, int xbase, int k0,
                                   int kend, int tid)
    {
        static_assert(PER <= 32, "a cursor's `in` holds one bit per vector of the thread");
        Cursor c;
        const int gx = xbase + x0(tid), gp = k0 + p0(tid);
        c.g = G + ((long long)gx * ld + gp);
        c.ld = ld;
        c.ustep = (long long)USTEP * ld;
        c.in = 0;
#pragma unroll
        for (int u = 0; u < UNITS; ++u)
#pragma unroll
            for (int j = 0; j < GR; ++j) c.in |= (gx + du_x(u) + j < ext ? 1u : 0u) << (u * GR + j);
        c.krem = kend - gp;
        return c;
    }
    // Unit u's first vector, walking from unit u - 1's (unit_start's order: u = 0, 1, ...).
    __host__ __device__ static const float* unit_start(const Cursor& c, const float* prev, int u)
    {
        return u == 0 ? c.g : walks_rows(u) ? prev + c.ustep : c.g + du_k(u);
    }
    // A k-tile whose loads lie wholly inside m / n and k: no tests.
    __device__ static void load_regs_whole(float4 (&reg)[PER], Cursor& c)
    {
        const float* su = c.g;
#pragma unroll
        for (int u = 0; u < UNITS; ++u) {
            su = unit_start(c, su, u);
            const float* src = su;
#pragma unroll
            for (int j = 0; j < GR; ++j) {
                if (j > 0) src += c.ld;
                // A plain global load, not __ldg's: KMAJOR_LANES=0's says why.
                asm volatile("ld.global.v4.f32 {%0, %1, %2, %3}, [%4];\n"
                             : "=f"(reg[u * GR + j].x), "=f"(reg[u * GR + j].y), "=f"(reg[u * GR + j].z),
                               "=f"(reg[u * GR + j].w)
                             : "l"(src));
            }
        }
        c.g += BK;
        c.krem -= BK;
    }
    __device__ static void load_regs(float4 (&reg)[PER], Cursor& c)
    {
        if (c.krem >= LAST_K + 4 && c.in == (PER == 32 ? ~0u : (1u << PER) - 1)) {
            load_regs_whole(reg, c);
            return;
        }
        const float* su = c.g;
#pragma unroll
        for (int u = 0; u < UNITS; ++u) {
            su = unit_start(c, su, u);
            const float* src = su;
#pragma unroll
            for (int j = 0; j < GR; ++j) {
                if (j > 0) src += c.ld;
                const int r = u * GR + j;
                reg[r] = c.in >> r & 1u ? load_partial(src, c.krem - du_k(u)) : make_float4(0.f, 0.f, 0.f, 0.f);
            }
        }
        c.g += BK;
        c.krem -= BK;
    }
#endif
#if ADVANCE && ASYNC_CURSOR
    // ASYNC_CURSOR=1: load_async from a cursor set up by start (W = 1: unit u's element lies
    // inside k while krem > du_k(u)).
    // A k-tile whose copies lie wholly inside m / n and k: no tests.
    __device__ static void load_async_whole(float* dst, Cursor& c, int tid)
    {
        float* d = dst + p0(tid) * (BX + PAD) + x0(tid);
        const float* src = c.g;
#pragma unroll
        for (int u = 0; u < UNITS; ++u) {
            src = unit_start(c, src, u);
            cp_async4_line(d + du_k(u) * (BX + PAD) + du_x(u), src, 4);
        }
        c.g += BK;
        c.krem -= BK;
    }
    // A zero src-size reads nothing, so the cursor may point past the operand.
    __device__ static void load_async(float* dst, Cursor& c, int tid)
    {
        float* d = dst + p0(tid) * (BX + PAD) + x0(tid);
        const float* src = c.g;
#pragma unroll
        for (int u = 0; u < UNITS; ++u) {
            src = unit_start(c, src, u);
            const bool ok = c.krem > du_k(u) && (c.in >> u & 1u);
            cp_async4_line(d + du_k(u) * (BX + PAD) + du_x(u), src, ok ? 4 : 0);
        }
        c.g += BK;
        c.krem -= BK;
    }
#endif
};
