// SGEMV y = A x for short rows: several rows per warp (design k16 of seeds/001).
// A is M x K row-major, x has K elements, y has M.
// Parameters: ROW_PER_WARP rows per warp, each computed by a sub-warp of LANES = 32 /
// ROW_PER_WARP consecutive lanes; WARPS warps per block; VEC (1: scalar loads, 4: float4
// loads, used when every row is 16-byte aligned, i.e. K % 4 == 0 and A, x are aligned;
// otherwise the scalar path runs). Consecutive rows are contiguous in memory, so for
// LANES * VEC ~ K a warp's load instruction covers ROW_PER_WARP whole rows.
// Correct for every M, K >= 1: a warp whose first row is out of range exits as a whole;
// inside a live warp, lanes of out-of-range rows compute 0 and take part in the shuffles
// (all 32 lanes active) but do not store.
#if !defined(ROW_PER_WARP) || !defined(WARPS) || !defined(VEC)
#error "ROW_PER_WARP, WARPS and VEC must be defined"
#endif
#if VEC != 1 && VEC != 4
#error "VEC must be 1 or 4"
#endif
#if ROW_PER_WARP < 1 || ROW_PER_WARP > 32 || (32 % ROW_PER_WARP) != 0
#error "ROW_PER_WARP must divide 32"
#endif

#define LANES (32 / ROW_PER_WARP)
#define THREADS (32 * WARPS)
#define ROWS_PER_BLOCK (WARPS * ROW_PER_WARP)

#include "gemv_common.cuh"  // dot4, warp_sum

extern "C" __global__ void __launch_bounds__(THREADS)
KERNEL_NAME(int M, int K, const float* __restrict__ A, const float* __restrict__ x,
            float* __restrict__ y)
{
    const int lane = threadIdx.x & 31;
    const int first = blockIdx.x * ROWS_PER_BLOCK + (threadIdx.x >> 5) * ROW_PER_WARP;
    if (first >= M) return;  // warp-uniform: no row of this warp exists
    const int sub = lane / LANES;  // which of the warp's rows
    const int sl = lane % LANES;   // lane within the sub-warp
    const int row = first + sub;
    const bool live = row < M;
    const int n = live ? K : 0;  // dead rows read nothing and sum to 0
    const float* a = A + (size_t)(live ? row : 0) * K;

    float s = 0.0f;
#if VEC == 4
    const bool vec = (K & 3) == 0 &&
                     ((((unsigned long long)A) | ((unsigned long long)x)) & 15ull) == 0;
    if (vec) {
        const float4* __restrict__ a4 = reinterpret_cast<const float4*>(a);
        const float4* __restrict__ x4 = reinterpret_cast<const float4*>(x);
        const int n4 = n >> 2;
#pragma unroll 4
        for (int j = sl; j < n4; j += LANES) s = dot4(__ldg(a4 + j), __ldg(x4 + j), s);
    } else
#endif
    {
#pragma unroll 4
        for (int k = sl; k < n; k += LANES) s = fmaf(__ldg(a + k), __ldg(x + k), s);
    }

    // Reduce within each sub-warp of LANES lanes (xor offsets < LANES stay in the segment).
    s = warp_sum<LANES>(s);
    if (sl == 0 && live) y[row] = s;
}
