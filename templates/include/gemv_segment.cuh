// The dot product of a row segment with x by a group of G consecutive lanes, for the SGEMV
// templates that give a row to a warp (gemv_warp_row, gemv_split_k: G = 32): each lane returns
// its share of sum_{k < n} a[k] * xp[k]; the caller adds the shares with warp_sum.
// SEG_STRIDED_SUM, the strided loop, also serves gemv_general's groups of TPR threads.
// Expects no parameter macros: the load width V (1: scalar loads, 4: float4 loads with
// alignment peeling), the unroll U (independent loads in flight per lane per iteration),
// XSHARED (x in shared memory: plain loads; else global memory: __ldg) and G are template
// arguments.
// Static for the reason given in gemv_common.cuh.
//
// Float4 path (V = 4), correct for any alignment of a (4-byte aligned) and any n >= 0: a head
// of 0..3 scalars up to a's first 16-byte boundary, a body of float4s (a's loads always
// 16-byte aligned; x read as float4 when its matching address is 16-byte aligned, else as four
// scalars) and a tail of 0..3 scalars. Lanes read consecutive float4s, so a warp of one group
// loads 512 contiguous bytes of a per load instruction.
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

// The strided sum both bodies below share, as a macro so that each keeps its own loads: this
// lane's share (lane of G) of the sum over i < n of FMA(A_AT(i), X_AT(i)), i = lane + G * t,
// with U independent loads of each operand (of type T) in flight and U partial sums, added in
// order at the end. Returns the sum.
#define SEG_STRIDED_SUM(T, n, A_AT, X_AT, FMA)                                                   \
    float acc[U];                                                                                \
    _Pragma("unroll") for (int u = 0; u < U; ++u) acc[u] = 0.0f;                                 \
    int j = lane;                                                                                \
    for (; j + (U - 1) * G < n; j += G * U) {                                                    \
        T av[U], xv[U];                                                                          \
        _Pragma("unroll") for (int u = 0; u < U; ++u) av[u] = A_AT(j + G * u);                   \
        _Pragma("unroll") for (int u = 0; u < U; ++u) xv[u] = X_AT(j + G * u);                   \
        _Pragma("unroll") for (int u = 0; u < U; ++u) acc[u] = FMA(av[u], xv[u], acc[u]);        \
    }                                                                                            \
    for (; j < n; j += G) acc[0] = FMA(A_AT(j), X_AT(j), acc[0]);                                \
    float s = 0.0f;                                                                              \
    _Pragma("unroll") for (int u = 0; u < U; ++u) s += acc[u];                                   \
    return s;

// This lane's share of sum_{j < n4} dot(a4[j], x4[j]), with float4 j = lane + G * i.
// `a` must be 16-byte aligned; `xp` must be too when XALIGNED.
template <int G, int U, bool XALIGNED, bool XSHARED>
static __device__ __forceinline__ float body_vec4(const float* __restrict__ a,
                                                  const float* __restrict__ xp, int n4, int lane)
{
    const float4* __restrict__ a4 = reinterpret_cast<const float4*>(a);
#define SEG_A4(i) __ldg(a4 + i)
#define SEG_X4(i) load_x4<XALIGNED, XSHARED>(xp + 4 * (i))
    SEG_STRIDED_SUM(float4, n4, SEG_A4, SEG_X4, dot4)
#undef SEG_A4
#undef SEG_X4
}

// This lane's share of sum_{k < n} a[k] * xp[k], float4 loads of a wherever alignment allows.
template <int G, int U, bool XSHARED>
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
        s += body_vec4<G, U, true, XSHARED>(ab, xb, n4, lane);
    else
        s += body_vec4<G, U, false, XSHARED>(ab, xb, n4, lane);
    const int t = head + (n4 << 2) + lane;
    if (lane < (rest & 3)) s = fmaf(__ldg(a + t), load_x<XSHARED>(xp + t), s);
    return s;
}

// This lane's share of sum_{k < n} a[k] * xp[k], scalar loads, k = lane + G * i.
template <int G, int U, bool XSHARED>
static __device__ __forceinline__ float seg_dot_scalar(const float* __restrict__ a,
                                                       const float* __restrict__ xp, int n,
                                                       int lane)
{
#define SEG_A(i) __ldg(a + i)
#define SEG_X(i) load_x<XSHARED>(xp + i)
    SEG_STRIDED_SUM(float, n, SEG_A, SEG_X, fmaf)
#undef SEG_A
#undef SEG_X
}

// This lane's share (lane of G: G = 32, a warp, unless given) of sum_{k < n} a[k] * xp[k] with
// loads of width V (1 or 4).
template <int V, int U, bool XSHARED, int G = 32>
static __device__ __forceinline__ float seg_dot(const float* __restrict__ a,
                                                const float* __restrict__ xp, int n, int lane)
{
    static_assert(V == 1 || V == 4, "seg_dot: V must be 1 or 4");
    if (V == 4) return seg_dot_vec4<G, U, XSHARED>(a, xp, n, lane);
    return seg_dot_scalar<G, U, XSHARED>(a, xp, n, lane);
}
