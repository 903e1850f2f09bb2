// The B-row reads and the K loop's unrolled step of gemm_small_m, gemm_small_m_splitk and
// gemm_small_m_stream (see gemm_small_m.cu's header): threads along N read VEC columns of a row
// of B, a vector load where the columns allow it; A's MT values of a k are read with __ldg (a
// broadcast).
// Expects: MT, VEC, BX, KS, UNROLL.
//
// SMALL_M_COLUMNS_AND_ROWS and SMALL_M_UNROLLED_STEP are macros over accumulate()'s locals,
// textually the code they replaced (the kernels compile exactly as before they were shared).
//
// SMALL_M_B_HINT (0 when not defined) = 1 reads B with ld.global.nc.L1::no_allocate.L2::256B on
// sm_80 and later: each miss also fetches the rest of its 256-byte block into L2, and B, read
// once, does not take L1. Every warp of the design reads 32 * VEC consecutive floats of a row,
// so DRAM sees fewer, longer bursts: on an H100, 1x4096x4096 went from 35.7 to 31.7 us with
// the same configuration (results/runs/session30/exp). 0 leaves the loads as they were.
#ifndef SMALL_M_B_HINT
#define SMALL_M_B_HINT 0
#endif
#if !defined(MT) || !defined(VEC) || !defined(BX) || !defined(KS) || !defined(UNROLL)
#error "MT, VEC, BX, KS and UNROLL must be defined"
#endif
#if VEC != 1 && VEC != 2 && VEC != 4
#error "VEC must be 1, 2 or 4"
#endif
#if BX % 32 != 0
#error "BX must be a multiple of 32"
#endif
// One float, two or four of a row of B (p aligned to the vector): the hinted loads, else __ldg.
#if SMALL_M_B_HINT && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
static __device__ __forceinline__ float ld_b1(const float* p)
{
    float v;
    asm volatile("ld.global.nc.L1::no_allocate.L2::256B.f32 %0, [%1];" : "=f"(v) : "l"(p));
    return v;
}
static __device__ __forceinline__ float2 ld_b2(const float* p)
{
    float2 v;
    asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v2.f32 {%0, %1}, [%2];"
                 : "=f"(v.x), "=f"(v.y)
                 : "l"(p));
    return v;
}
static __device__ __forceinline__ float4 ld_b4(const float* p)
{
    float4 v;
    asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.f32 {%0, %1, %2, %3}, [%4];"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
                 : "l"(p));
    return v;
}
#else
static __device__ __forceinline__ float ld_b1(const float* p) { return __ldg(p); }
static __device__ __forceinline__ float2 ld_b2(const float* p)
{
    return __ldg(reinterpret_cast<const float2*>(p));
}
static __device__ __forceinline__ float4 ld_b4(const float* p)
{
    return __ldg(reinterpret_cast<const float4*>(p));
}
#endif

// The VEC floats of one B row this thread reads, at the (clamped, in-range) columns col.
// VECOK: col holds VEC consecutive columns whose first is a multiple of VEC, and the row is
// 4 * VEC-byte aligned, so one vector load reads them.
template <bool VECOK>
static __device__ __forceinline__ void load_b(const float* __restrict__ row, const int (&col)[VEC],
                                              float (&b)[VEC])
{
    if (VECOK) {
#if VEC == 4
        const float4 t = ld_b4(row + col[0]);
        b[0] = t.x;
        b[1] = t.y;
        b[2] = t.z;
        b[3] = t.w;
#elif VEC == 2
        const float2 t = ld_b2(row + col[0]);
        b[0] = t.x;
        b[1] = t.y;
#else
        b[0] = ld_b1(row + col[0]);
#endif
    } else {
#pragma unroll
        for (int v = 0; v < VEC; ++v) b[v] = ld_b1(row + col[v]);
    }
}

// This thread's columns col[VEC] of B (clamped inside N) and its MT rows arow[MT] of A (clamped
// inside M). Needs M, N, K, A, m0, n0, tx and the template parameter VECOK.
#define SMALL_M_COLUMNS_AND_ROWS                                                                 \
    int col[VEC];                                                                                \
    _Pragma("unroll") for (int v = 0; v < VEC; ++v) {                                            \
        /* VECOK: n0 + tx * VEC is a multiple of VEC, and so is N, so a vector that starts */    \
        /* inside N ends inside it; one that starts past N is moved to the last vector of the */ \
        /* row (N >= VEC), read for nothing. */                                                  \
        col[v] = VECOK ? min(n0 + tx * VEC, N - VEC) + v : min(n0 + v * BX + tx, N - 1);         \
    }                                                                                            \
    const float* arow[MT];                                                                       \
    _Pragma("unroll") for (int r = 0; r < MT; ++r) arow[r] = A + (size_t)min(m0 + r, M - 1) * K;

// One step of UNROLL rows of B, k, k + KS, ..., all inside the K range: their loads first (in
// flight together), then acc[r][v] += A[m0 + r][row] * B[row][column v], row by row.
#define SMALL_M_UNROLLED_STEP                                                                    \
    float b[UNROLL][VEC];                                                                        \
    _Pragma("unroll") for (int u = 0; u < UNROLL; ++u)                                          \
        load_b<VECOK>(B + (size_t)(k + KS * u) * N, col, b[u]);                                  \
    _Pragma("unroll") for (int u = 0; u < UNROLL; ++u) {                                         \
        _Pragma("unroll") for (int r = 0; r < MT; ++r) {                                         \
            const float a = __ldg(arow[r] + k + KS * u);                                         \
            _Pragma("unroll") for (int v = 0; v < VEC; ++v)                                      \
                acc[r][v] = fmaf(a, b[u][v], acc[r][v]);                                         \
        }                                                                                        \
    }
