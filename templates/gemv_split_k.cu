// SGEMV y = A x for few long rows: split-K across blocks (designs Large K and Split-K w/ smem
// of seeds/001). A is M x K row-major, x has K elements, y has M; y is zeroed by the runner
// before the launch (zero_output) and every (row, chunk) pair is added into it with one
// atomicAdd.
// Parameters: BM rows per block (one warp per row, 32 * BM threads), SPLIT_K chunks of K,
// X_SMEM (1: the block first stages its chunk of x in dynamic shared memory, shared by its BM
// warps), VEC (1: scalar loads, 4: float4 loads with alignment peeling: seg_dot of
// include/gemv_segment.cuh, shared with gemv_warp_row).
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

#include "gemv_common.cuh"   // warp_sum, aligned16
#include "gemv_segment.cuh"  // seg_dot

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
        if (aligned16(xg)) {
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
    const float s = warp_sum(seg_dot<VEC, UNROLL, true>(a, xs, n, lane));
#else
    const float s = warp_sum(seg_dot<VEC, UNROLL, false>(a, x + k0, n, lane));
#endif
    if (lane == 0) atomicAdd(y + row, s);
}
