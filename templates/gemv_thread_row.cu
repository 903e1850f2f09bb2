// SGEMV y = A x, one thread per row (design of seeds/002, matVecMul).
// A is M x K row-major, x has K elements, y has M.
// Parameters: BLOCK threads per block; X_TILE: 0 reads x straight from global memory
// (__ldg, L1-resident), > 0 stages x through a shared-memory tile of X_TILE floats that the
// block loads cooperatively (every thread then reads the same tile word: a broadcast).
// When every row is 16-byte aligned (K % 4 == 0, A and x aligned) a thread reads its row as
// float4s; otherwise as scalars. Meant for very short rows (e.g. K = 16), where the rows of a
// warp are contiguous and L1 turns the strided per-thread loads into full-line reads.
// Correct for every M, K >= 1: threads of out-of-range rows still take part in the tile
// loads and barriers but read no A and store nothing.
#if !defined(BLOCK) || !defined(X_TILE)
#error "BLOCK and X_TILE must be defined"
#endif
#if X_TILE < 0 || (X_TILE % 4) != 0
#error "X_TILE must be 0 or a positive multiple of 4"
#endif

#include "gemv_common.cuh"  // dot4

extern "C" __global__ void __launch_bounds__(BLOCK)
KERNEL_NAME(int M, int K, const float* __restrict__ A, const float* __restrict__ x,
            float* __restrict__ y)
{
    const int row = blockIdx.x * BLOCK + threadIdx.x;
    const bool live = row < M;
    const bool vec = (K & 3) == 0 &&
                     ((((unsigned long long)A) | ((unsigned long long)x)) & 15ull) == 0;
    const float* a = A + (size_t)(live ? row : 0) * K;
    float s = 0.0f;

#if X_TILE == 0
    if (!live) return;  // no barriers or shuffles follow
    if (vec) {
        const float4* __restrict__ a4 = reinterpret_cast<const float4*>(a);
        const float4* __restrict__ x4 = reinterpret_cast<const float4*>(x);
        const int n4 = K >> 2;
#pragma unroll 4
        for (int j = 0; j < n4; ++j) s = dot4(__ldg(a4 + j), __ldg(x4 + j), s);
    } else {
#pragma unroll 4
        for (int k = 0; k < K; ++k) s = fmaf(__ldg(a + k), __ldg(x + k), s);
    }
#else
    __shared__ __align__(16) float xs[X_TILE];
    for (int k0 = 0; k0 < K; k0 += X_TILE) {
        const int n = min(X_TILE, K - k0);  // a multiple of 4 when vec (X_TILE % 4 == 0)
        for (int i = threadIdx.x; i < n; i += BLOCK) xs[i] = __ldg(x + k0 + i);
        __syncthreads();
        if (live) {
            if (vec) {
                const float4* __restrict__ a4 = reinterpret_cast<const float4*>(a + k0);
                const float4* xs4 = reinterpret_cast<const float4*>(xs);
                const int n4 = n >> 2;
#pragma unroll 4
                for (int j = 0; j < n4; ++j) s = dot4(__ldg(a4 + j), xs4[j], s);
            } else {
#pragma unroll 4
                for (int k = 0; k < n; ++k) s = fmaf(__ldg(a + k0 + k), xs[k], s);
            }
        }
        __syncthreads();  // the tile is overwritten next
    }
    if (!live) return;
#endif
    y[row] = s;
}
