// SGEMV y = A x for few long rows: split-K across blocks (designs Large K and Split-K w/ smem
// of seeds/001). A is M x K row-major, x has K elements, y has M; y is zeroed by the runner
// before the launch (zero_output) and every (row, chunk) pair is added into it with one
// atomicAdd.
// Parameters: BM rows per block (one warp per row, 32 * BM threads), SPLIT_K chunks of K,
// X_SMEM (1: the block first stages its chunk of x in dynamic shared memory, shared by its BM
// warps), VEC (1: scalar loads, 4: float4 loads with alignment peeling as in gemv_warp_row).
//
// Chunks are CH = ceil_div(ceil_div(K, SPLIT_K), 4) * 4 long (a multiple of 4, so chunk starts
// keep the row's 16-byte alignment); the last chunks may be short or empty (empty ones add
// nothing). Block b works on chunk b / tiles and row tile b % tiles, so blocks running at the
// same time share a chunk of x and update different rows.
// Correct for every M, K >= 1: every thread reaches the barrier before any warp leaves, and a
// warp leaves as a whole (row out of range or empty chunk), so its shuffles see 32 lanes.
#if !defined(BM) || !defined(SPLIT_K) || !defined(X_SMEM) || !defined(VEC)
#error "BM, SPLIT_K, X_SMEM and VEC must be defined"
#endif
#if VEC != 1 && VEC != 4
#error "VEC must be 1 or 4"
#endif

#define THREADS (32 * BM)
// Independent loads in flight per lane per iteration.
#define UNROLL 4

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

// x is read from shared memory (XSHARED, plain loads) or global memory (__ldg).
template <bool XSHARED>
__device__ __forceinline__ float load_x(const float* __restrict__ p)
{
    if (XSHARED) return *p;
    return __ldg(p);
}

template <bool XALIGNED, bool XSHARED>
__device__ __forceinline__ float4 load_x4(const float* __restrict__ p)
{
    if (XALIGNED) {
        if (XSHARED) return *reinterpret_cast<const float4*>(p);
        return __ldg(reinterpret_cast<const float4*>(p));
    }
    return make_float4(load_x<XSHARED>(p), load_x<XSHARED>(p + 1), load_x<XSHARED>(p + 2),
                       load_x<XSHARED>(p + 3));
}

// This lane's share of sum_{j < n4} dot(a4[j], x4[j]), float4 j = lane + 32 * i.
template <bool XALIGNED, bool XSHARED>
__device__ __forceinline__ float body_vec4(const float* __restrict__ a,
                                           const float* __restrict__ xp, int n4, int lane)
{
    const float4* __restrict__ a4 = reinterpret_cast<const float4*>(a);
    float acc[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) acc[u] = 0.0f;
    int j = lane;
    for (; j + (UNROLL - 1) * 32 < n4; j += 32 * UNROLL) {
        float4 av[UNROLL], xv[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) av[u] = __ldg(a4 + j + 32 * u);
#pragma unroll
        for (int u = 0; u < UNROLL; ++u)
            xv[u] = load_x4<XALIGNED, XSHARED>(xp + 4 * (j + 32 * u));
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) acc[u] = dot4(av[u], xv[u], acc[u]);
    }
    for (; j < n4; j += 32)
        acc[0] = dot4(__ldg(a4 + j), load_x4<XALIGNED, XSHARED>(xp + 4 * j), acc[0]);
    float s = 0.0f;
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) s += acc[u];
    return s;
}

// This lane's share of sum_{k < n} a[k] * x[k], float4 loads of a wherever alignment allows:
// a head of 0..3 scalars up to a's first 16-byte boundary, float4 body, 0..3 scalar tail.
template <bool XSHARED>
__device__ __forceinline__ float seg_dot_vec4(const float* __restrict__ a,
                                              const float* __restrict__ xp, int n, int lane)
{
    int head = (int)(((16u - ((unsigned)(unsigned long long)a & 15u)) & 15u) >> 2);
    head = min(head, n);
    float s = 0.0f;
    if (lane < head) s = __ldg(a + lane) * load_x<XSHARED>(xp + lane);
    const int rest = n - head;
    const int n4 = rest >> 2;
    const float* ab = a + head;
    const float* xb = xp + head;
    if ((((unsigned long long)xb) & 15ull) == 0)
        s += body_vec4<true, XSHARED>(ab, xb, n4, lane);
    else
        s += body_vec4<false, XSHARED>(ab, xb, n4, lane);
    const int t = head + (n4 << 2) + lane;
    if (lane < (rest & 3)) s = fmaf(__ldg(a + t), load_x<XSHARED>(xp + t), s);
    return s;
}

// This lane's share of sum_{k < n} a[k] * x[k], scalar loads, k = lane + 32 * i.
template <bool XSHARED>
__device__ __forceinline__ float seg_dot_scalar(const float* __restrict__ a,
                                                const float* __restrict__ xp, int n, int lane)
{
    float acc[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) acc[u] = 0.0f;
    int k = lane;
    for (; k + (UNROLL - 1) * 32 < n; k += 32 * UNROLL) {
        float av[UNROLL], xv[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) av[u] = __ldg(a + k + 32 * u);
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) xv[u] = load_x<XSHARED>(xp + k + 32 * u);
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) acc[u] = fmaf(av[u], xv[u], acc[u]);
    }
    for (; k < n; k += 32) acc[0] = fmaf(__ldg(a + k), load_x<XSHARED>(xp + k), acc[0]);
    float s = 0.0f;
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) s += acc[u];
    return s;
}

template <bool XSHARED>
__device__ __forceinline__ float seg_dot(const float* __restrict__ a,
                                         const float* __restrict__ xp, int n, int lane)
{
#if VEC == 4
    return seg_dot_vec4<XSHARED>(a, xp, n, lane);
#else
    return seg_dot_scalar<XSHARED>(a, xp, n, lane);
#endif
}

extern "C" __global__ void __launch_bounds__(THREADS)
KERNEL_NAME(int M, int K, const float* __restrict__ A, const float* __restrict__ x,
            float* __restrict__ y)
{
    const int tiles = (M + BM - 1) / BM;
    const int chunk = blockIdx.x / tiles;
    const int tile = blockIdx.x - chunk * tiles;
    const int ch = (((K + SPLIT_K - 1) / SPLIT_K) + 3) & ~3;  // CH of the space file
    const int k0 = chunk * ch;                                 // may be >= K: empty chunk
    const int n = max(0, min(ch, K - k0));
    const int lane = threadIdx.x & 31;
    const int row = tile * BM + (threadIdx.x >> 5);

#if X_SMEM
    extern __shared__ __align__(16) float xs[];
    {
        const float* xg = x + k0;
        if (((((unsigned long long)xg) & 15ull) == 0)) {
            const int n4 = n >> 2;
            for (int i = threadIdx.x; i < n4; i += THREADS)
                reinterpret_cast<float4*>(xs)[i] = __ldg(reinterpret_cast<const float4*>(xg) + i);
            for (int i = (n4 << 2) + threadIdx.x; i < n; i += THREADS) xs[i] = __ldg(xg + i);
        } else {
            for (int i = threadIdx.x; i < n; i += THREADS) xs[i] = __ldg(xg + i);
        }
    }
    __syncthreads();  // every thread gets here before any warp leaves
#endif

    if (row >= M || n == 0) return;  // warp-uniform
    const float* a = A + (size_t)row * K + k0;
#if X_SMEM
    float s = seg_dot<true>(a, xs, n, lane);
#else
    float s = seg_dot<false>(a, x + k0, n, lane);
#endif
    s = warp_sum(s);
    if (lane == 0) atomicAdd(y + row, s);
}
