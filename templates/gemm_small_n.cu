// GEMV-shaped SGEMM for few columns of C (N up to ~16; N = 1 is a GEMV, more columns a GEMV
// with several right-hand sides): the work is reading A once, so each warp streams RW rows of
// A (float4 loads when every row is 16-byte aligned, coalesced scalars otherwise) and the
// block shares B's K x N values through a transposed shared-memory tile; each output is a
// warp-shuffle sum (no atomics).
// C[M x N] = A[M x K] * B[K x N], all row-major. Correct for every M, N, K >= 1.
//
// Parameters (all #defined by the tuner):
//   NT     columns of C per block; a larger N takes ceil(N / NT) column tiles (more blocks)
//   RW     rows of A (and C) per warp: each B value read from shared memory serves RW rows
//   WARPS  warps per block (ROWS = WARPS x RW rows per block)
//   KT     K tile: the block stages B[k0 .. k0+KT) x [c0 .. c0+NT) in shared memory, transposed
//          (Bt[n][k], rows padded by 4 floats), so lanes that read consecutive k of A read
//          consecutive floats of Bt (conflict-free, float4 when A is read as float4)
//   VEC    1: scalar loads of A (lane l reads k = l, l + 32, ...); 4: float4 loads (lane l reads
//          k = 4l .. 4l+3, then 4(l+32) ...) when K % 4 == 0 and A is 16-byte aligned, else the
//          scalar path
//
// Per K tile every warp first issues its loads of A for the tile (registers), then the block
// waits for the previous tile's readers, stages B's tile and waits again: A's loads are in
// flight across both barriers and the staging.
//
// Edges: A's values past K and Bt's past K or N are zeros (0 * 0 adds nothing); rows past M
// read row M - 1 and columns past N are zeros, and neither is stored. No thread leaves early:
// every thread reaches every barrier, and the shuffles see 32 lanes.
// Determinism: each lane adds its k in a fixed order, and the warp sum is a fixed butterfly:
// bit-identical run to run.

#if !defined(NT) || !defined(RW) || !defined(WARPS) || !defined(KT) || !defined(VEC)
#error "NT, RW, WARPS, KT and VEC must be defined"
#endif
#if VEC != 1 && VEC != 4
#error "VEC must be 1 or 4"
#endif
#if KT % 128 != 0
#error "KT must be a multiple of 128 (32 lanes x float4)"
#endif

#define THREADS (32 * WARPS)
#define ROWS (WARPS * RW)
// Padded row of the transposed B tile: a multiple of 4 floats, so rows stay 16-byte aligned.
#define KTP (KT + 4)
// A floats per lane, per row and K tile.
#define TS (KT / 32)

#include "gemv_common.cuh"  // dot4, warp_sum, aligned16

template <bool AVEC>
static __device__ __forceinline__ void small_n(int M, int N, int K, const float* __restrict__ A,
                                               const float* __restrict__ B, float* __restrict__ C,
                                               float* __restrict__ Bt)
{
    // Column tiles fastest: blocks that read the same rows of A run together.
    const int ntiles = (N + NT - 1) / NT;
    const int rb = blockIdx.x / ntiles;
    const int cb = blockIdx.x - rb * ntiles;
    const int c0 = cb * NT;
    const int lane = threadIdx.x & 31;
    const int mw = rb * ROWS + (threadIdx.x >> 5) * RW;  // this warp's first row

    const float* arow[RW];
#pragma unroll
    for (int i = 0; i < RW; ++i) arow[i] = A + (size_t)min(mw + i, M - 1) * K;

    float acc[RW][NT];
#pragma unroll
    for (int i = 0; i < RW; ++i) {
#pragma unroll
        for (int n = 0; n < NT; ++n) acc[i][n] = 0.0f;
    }

    for (int k0 = 0; k0 < K; k0 += KT) {
        // This lane's values of A for the tile. AVEC: a[i][4t .. 4t+3] = A[row][k .. k+3] with
        // k = k0 + 4 (lane + 32 t); K % 4 == 0 and k % 4 == 0, so k < K means all four are in.
        float a[RW][TS];
#pragma unroll
        for (int i = 0; i < RW; ++i) {
            if (AVEC) {
#pragma unroll
                for (int t = 0; t < TS / 4; ++t) {
                    const int k = k0 + 4 * (lane + 32 * t);
                    const float4 v = k < K ? __ldg(reinterpret_cast<const float4*>(arow[i] + k))
                                           : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
                    a[i][4 * t] = v.x;
                    a[i][4 * t + 1] = v.y;
                    a[i][4 * t + 2] = v.z;
                    a[i][4 * t + 3] = v.w;
                }
            } else {
#pragma unroll
                for (int t = 0; t < TS; ++t) {
                    const int k = k0 + lane + 32 * t;
                    a[i][t] = k < K ? __ldg(arow[i] + k) : 0.0f;
                }
            }
        }
        __syncthreads();  // every warp is done with the previous tile's Bt
        // Bt[n][kk] = B[k0 + kk][c0 + n]: consecutive threads read consecutive columns, then
        // the next row (one contiguous run of B when N == NT).
        for (int e = threadIdx.x; e < NT * KT; e += THREADS) {
            const int kk = e / NT;
            const int n = e - kk * NT;
            const int k = k0 + kk;
            const int c = c0 + n;
            Bt[n * KTP + kk] = (k < K && c < N) ? __ldg(B + (size_t)k * N + c) : 0.0f;
        }
        __syncthreads();
        if (AVEC) {
#pragma unroll
            for (int t = 0; t < TS / 4; ++t) {
#pragma unroll
                for (int n = 0; n < NT; ++n) {
                    const float4 b = reinterpret_cast<const float4*>(Bt + n * KTP)[lane + 32 * t];
#pragma unroll
                    for (int i = 0; i < RW; ++i) {
                        const float4 av = make_float4(a[i][4 * t], a[i][4 * t + 1],
                                                      a[i][4 * t + 2], a[i][4 * t + 3]);
                        acc[i][n] = dot4(av, b, acc[i][n]);
                    }
                }
            }
        } else {
#pragma unroll
            for (int t = 0; t < TS; ++t) {
#pragma unroll
                for (int n = 0; n < NT; ++n) {
                    const float b = Bt[n * KTP + lane + 32 * t];
#pragma unroll
                    for (int i = 0; i < RW; ++i) acc[i][n] = fmaf(a[i][t], b, acc[i][n]);
                }
            }
        }
    }

#pragma unroll
    for (int i = 0; i < RW; ++i) {
#pragma unroll
        for (int n = 0; n < NT; ++n) acc[i][n] = warp_sum(acc[i][n]);
    }
    if (lane == 0) {
#pragma unroll
        for (int i = 0; i < RW; ++i) {
            const int m = mw + i;
            if (m < M) {
#pragma unroll
                for (int n = 0; n < NT; ++n) {
                    if (c0 + n < N) C[(size_t)m * N + c0 + n] = acc[i][n];
                }
            }
        }
    }
}

extern "C" __global__ void __launch_bounds__(THREADS)
KERNEL_NAME(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
            float* __restrict__ C)
{
    __shared__ __align__(16) float Bt[NT * KTP];
    // Block-uniform, so both paths' barriers are reached by every thread: each row of A starts
    // 16-byte aligned when A does and K % 4 == 0.
    if (VEC == 4 && (K & 3) == 0 && aligned16(A))
        small_n<true>(M, N, K, A, B, C, Bt);
    else
        small_n<false>(M, N, K, A, B, C, Bt);
}
