// One warp's dot product of a row segment with x, for the one-warp-per-row SGEMV templates
// (gemv_warp_row, gemv_split_k): each lane returns its share of sum_{k < n} a[k] * xp[k]; the
// caller adds the shares with warp_sum.
// Expects no parameter macros: the load width V (1: scalar loads, 4: float4 loads with
// alignment peeling), the unroll U (independent loads in flight per lane per iteration) and
// XSHARED (x in shared memory: plain loads; else global memory: __ldg) are template arguments.
// Static for the reason given in gemv_common.cuh.
//
// Float4 path (V = 4), correct for any alignment of a (4-byte aligned) and any n >= 0: a head
// of 0..3 scalars up to a's first 16-byte boundary, a body of float4s (a's loads always
// 16-byte aligned; x read as float4 when its matching address is 16-byte aligned, else as four
// scalars) and a tail of 0..3 scalars. Lanes read consecutive float4s, so a warp loads 512
// contiguous bytes of a per load instruction.
#include "gemv_common.cuh"

// One float of x.
template <bool XSHARED>
static __device__ __forceinline__ float load_x(const float* __restrict__ p)
{
    if (XSHARED) return *p;
    return __ldg(p);
}

// Four consecutive floats of x; p must be 16-byte aligned when XALIGNED.
template <bool XALIGNED, bool XSHARED>
static __device__ __forceinline__ float4 load_x4(const float* __restrict__ p)
{
    if (XALIGNED) {
        if (XSHARED) return *reinterpret_cast<const float4*>(p);
        return __ldg(reinterpret_cast<const float4*>(p));
    }
    return make_float4(load_x<XSHARED>(p), load_x<XSHARED>(p + 1), load_x<XSHARED>(p + 2),
                       load_x<XSHARED>(p + 3));
}

// This lane's share of sum_{j < n4} dot(a4[j], x4[j]), with float4 j = lane + 32 * i.
// `a` must be 16-byte aligned; `xp` must be too when XALIGNED.
template <int U, bool XALIGNED, bool XSHARED>
static __device__ __forceinline__ float body_vec4(const float* __restrict__ a,
                                                  const float* __restrict__ xp, int n4, int lane)
{
    const float4* __restrict__ a4 = reinterpret_cast<const float4*>(a);
    float acc[U];
#pragma unroll
    for (int u = 0; u < U; ++u) acc[u] = 0.0f;
    int j = lane;
    for (; j + (U - 1) * 32 < n4; j += 32 * U) {
        float4 av[U], xv[U];
#pragma unroll
        for (int u = 0; u < U; ++u) av[u] = __ldg(a4 + j + 32 * u);
#pragma unroll
        for (int u = 0; u < U; ++u) xv[u] = load_x4<XALIGNED, XSHARED>(xp + 4 * (j + 32 * u));
#pragma unroll
        for (int u = 0; u < U; ++u) acc[u] = dot4(av[u], xv[u], acc[u]);
    }
    for (; j < n4; j += 32)
        acc[0] = dot4(__ldg(a4 + j), load_x4<XALIGNED, XSHARED>(xp + 4 * j), acc[0]);
    float s = 0.0f;
#pragma unroll
    for (int u = 0; u < U; ++u) s += acc[u];
    return s;
}

// This lane's share of sum_{k < n} a[k] * xp[k], float4 loads of a wherever alignment allows.
template <int U, bool XSHARED>
static __device__ __forceinline__ float seg_dot_vec4(const float* __restrict__ a,
                                                     const float* __restrict__ xp, int n,
                                                     int lane)
{
    // Scalars before the first 16-byte boundary of a (a is 4-byte aligned).
    int head = (int)(((16u - ((unsigned)(unsigned long long)a & 15u)) & 15u) >> 2);
    head = min(head, n);
    float s = 0.0f;
    if (lane < head) s = __ldg(a + lane) * load_x<XSHARED>(xp + lane);
    const int rest = n - head;
    const int n4 = rest >> 2;
    const float* ab = a + head;
    const float* xb = xp + head;
    if (aligned16(xb))
        s += body_vec4<U, true, XSHARED>(ab, xb, n4, lane);
    else
        s += body_vec4<U, false, XSHARED>(ab, xb, n4, lane);
    const int t = head + (n4 << 2) + lane;
    if (lane < (rest & 3)) s = fmaf(__ldg(a + t), load_x<XSHARED>(xp + t), s);
    return s;
}

// This lane's share of sum_{k < n} a[k] * xp[k], scalar loads, k = lane + 32 * i.
template <int U, bool XSHARED>
static __device__ __forceinline__ float seg_dot_scalar(const float* __restrict__ a,
                                                       const float* __restrict__ xp, int n,
                                                       int lane)
{
    float acc[U];
#pragma unroll
    for (int u = 0; u < U; ++u) acc[u] = 0.0f;
    int k = lane;
    for (; k + (U - 1) * 32 < n; k += 32 * U) {
        float av[U], xv[U];
#pragma unroll
        for (int u = 0; u < U; ++u) av[u] = __ldg(a + k + 32 * u);
#pragma unroll
        for (int u = 0; u < U; ++u) xv[u] = load_x<XSHARED>(xp + k + 32 * u);
#pragma unroll
        for (int u = 0; u < U; ++u) acc[u] = fmaf(av[u], xv[u], acc[u]);
    }
    for (; k < n; k += 32) acc[0] = fmaf(__ldg(a + k), load_x<XSHARED>(xp + k), acc[0]);
    float s = 0.0f;
#pragma unroll
    for (int u = 0; u < U; ++u) s += acc[u];
    return s;
}

// This lane's share of sum_{k < n} a[k] * xp[k] with loads of width V (1 or 4).
template <int V, int U, bool XSHARED>
static __device__ __forceinline__ float seg_dot(const float* __restrict__ a,
                                                const float* __restrict__ xp, int n, int lane)
{
    static_assert(V == 1 || V == 4, "seg_dot: V must be 1 or 4");
    if (V == 4) return seg_dot_vec4<U, XSHARED>(a, xp, n, lane);
    return seg_dot_scalar<U, XSHARED>(a, xp, n, lane);
}
