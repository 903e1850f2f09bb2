// SGEMV y = A x, one warp per row (designs k32 / k128 of seeds/001).
// A is M x K row-major, x has K elements, y has M.
// Parameters: ROWS_PER_BLOCK warps per block (each warp computes one row), VEC (1: scalar
// loads, 4: float4 loads), UNROLL (independent loads in flight per lane per iteration).
//
// VEC = 4 works for every K: row r starts at A + r*K, which is 16-byte aligned only when
// K % 4 == 0. Each row is split into a head of 0..3 scalars (up to the first 16-byte boundary
// of the row), a body of float4s (A loads always 16-byte aligned) and a tail of 0..3 scalars.
// x is read as float4 when its matching address is 16-byte aligned (always for K % 4 == 0),
// else as four scalars. Lanes read consecutive float4s, so a warp loads 512 contiguous bytes
// per load instruction.
// Correct for every M, K >= 1: the whole warp of an out-of-range row exits before the
// shuffle reduction (the exit is warp-uniform), so the shuffles always see 32 active lanes.
#if !defined(ROWS_PER_BLOCK) || !defined(VEC) || !defined(UNROLL)
#error "ROWS_PER_BLOCK, VEC and UNROLL must be defined"
#endif
#if VEC != 1 && VEC != 4
#error "VEC must be 1 or 4"
#endif

#define THREADS (32 * ROWS_PER_BLOCK)

__device__ __forceinline__ float warp_sum(float v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ float dot4(float4 a, float4 b, float acc)
{
    acc = fmaf(a.x, b.x, acc);
    acc = fmaf(a.y, b.y, acc);
    acc = fmaf(a.z, b.z, acc);
    acc = fmaf(a.w, b.w, acc);
    return acc;
}

template <bool XALIGNED>
__device__ __forceinline__ float4 load_x4(const float* __restrict__ p)
{
    if (XALIGNED) return __ldg(reinterpret_cast<const float4*>(p));
    return make_float4(__ldg(p), __ldg(p + 1), __ldg(p + 2), __ldg(p + 3));
}

// This lane's share of sum_{j < n4} dot(a4[j], x4[j]), with float4 j = lane + 32 * i.
// `a` must be 16-byte aligned; `xp` must be too when XALIGNED.
template <int U, bool XALIGNED>
__device__ __forceinline__ float body_vec4(const float* __restrict__ a,
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
        for (int u = 0; u < U; ++u) xv[u] = load_x4<XALIGNED>(xp + 4 * (j + 32 * u));
#pragma unroll
        for (int u = 0; u < U; ++u) acc[u] = dot4(av[u], xv[u], acc[u]);
    }
    for (; j < n4; j += 32) acc[0] = dot4(__ldg(a4 + j), load_x4<XALIGNED>(xp + 4 * j), acc[0]);
    float s = 0.0f;
#pragma unroll
    for (int u = 0; u < U; ++u) s += acc[u];
    return s;
}

// This lane's share of sum_{k < n} a[k] * x[k], float4 loads wherever alignment allows.
template <int U>
__device__ __forceinline__ float seg_dot_vec4(const float* __restrict__ a,
                                              const float* __restrict__ xp, int n, int lane)
{
    // Scalars before the first 16-byte boundary of a (a is 4-byte aligned).
    int head = (int)(((16u - ((unsigned)(unsigned long long)a & 15u)) & 15u) >> 2);
    head = min(head, n);
    float s = 0.0f;
    if (lane < head) s = __ldg(a + lane) * __ldg(xp + lane);
    const int rest = n - head;
    const int n4 = rest >> 2;
    const float* ab = a + head;
    const float* xb = xp + head;
    if ((((unsigned long long)xb) & 15ull) == 0)
        s += body_vec4<U, true>(ab, xb, n4, lane);
    else
        s += body_vec4<U, false>(ab, xb, n4, lane);
    const int t = head + (n4 << 2) + lane;
    if (lane < (rest & 3)) s = fmaf(__ldg(a + t), __ldg(xp + t), s);
    return s;
}

// This lane's share of sum_{k < n} a[k] * x[k], scalar loads, k = lane + 32 * i.
template <int U>
__device__ __forceinline__ float seg_dot_scalar(const float* __restrict__ a,
                                                const float* __restrict__ xp, int n, int lane)
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
        for (int u = 0; u < U; ++u) xv[u] = __ldg(xp + k + 32 * u);
#pragma unroll
        for (int u = 0; u < U; ++u) acc[u] = fmaf(av[u], xv[u], acc[u]);
    }
    for (; k < n; k += 32) acc[0] = fmaf(__ldg(a + k), __ldg(xp + k), acc[0]);
    float s = 0.0f;
#pragma unroll
    for (int u = 0; u < U; ++u) s += acc[u];
    return s;
}

extern "C" __global__ void __launch_bounds__(THREADS)
KERNEL_NAME(int M, int K, const float* __restrict__ A, const float* __restrict__ x,
            float* __restrict__ y)
{
    const int lane = threadIdx.x & 31;
    const int row = blockIdx.x * ROWS_PER_BLOCK + (threadIdx.x >> 5);
    if (row >= M) return;  // warp-uniform: the whole warp leaves
    const float* a = A + (size_t)row * K;
#if VEC == 4
    float s = seg_dot_vec4<UNROLL>(a, x, K, lane);
#else
    float s = seg_dot_scalar<UNROLL>(a, x, K, lane);
#endif
    s = warp_sum(s);
    if (lane == 0) y[row] = s;
}
