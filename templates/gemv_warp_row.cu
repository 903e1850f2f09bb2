// SGEMV y = A x, one warp per row (designs k32 / k128 of seeds/001).
// A is M x K row-major, x has K elements, y has M.
// Parameters: ROWS_PER_BLOCK warps per block (each warp computes one row), VEC (1: scalar
// loads, 4: float4 loads), UNROLL (independent loads in flight per lane per iteration).
//
// VEC = 4 works for every K: row r starts at A + r*K, which is 16-byte aligned only when
// K % 4 == 0, so seg_dot (include/gemv_segment.cuh) peels each row to alignment: a head of
// 0..3 scalars, a body of float4s and a tail of 0..3 scalars; x is read as float4 when its
// matching address is 16-byte aligned (always for K % 4 == 0), else as four scalars.
// Correct for every M, K >= 1: the whole warp of an out-of-range row exits before the
// shuffle reduction (the exit is warp-uniform), so the shuffles always see 32 active lanes.
#if !defined(ROWS_PER_BLOCK) || !defined(VEC) || !defined(UNROLL)
#error "ROWS_PER_BLOCK, VEC and UNROLL must be defined"
#endif
#if VEC != 1 && VEC != 4
#error "VEC must be 1 or 4"
#endif

#define THREADS (32 * ROWS_PER_BLOCK)

#include "gemv_common.cuh"   // warp_sum
#include "gemv_segment.cuh"  // seg_dot

extern "C" __global__ void __launch_bounds__(THREADS)
KERNEL_NAME(int M, int K, const float* __restrict__ A, const float* __restrict__ x,
            float* __restrict__ y)
{
    const int lane = threadIdx.x & 31;
    const int row = blockIdx.x * ROWS_PER_BLOCK + (threadIdx.x >> 5);
    if (row >= M) return;  // warp-uniform: the whole warp leaves
    const float* a = A + (size_t)row * K;
    const float s = warp_sum(seg_dot<VEC, UNROLL, false>(a, x, K, lane));
    if (lane == 0) y[row] = s;
}
