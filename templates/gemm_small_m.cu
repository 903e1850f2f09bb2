// GEMV-shaped SGEMM for few rows of C (M up to ~16; M = 1 is y = x^T B): the work is reading B
// once, so threads map along N (coalesced reads of B's rows) and K is split across the block's
// threadIdx.y, with a deterministic shared-memory reduction (no atomics).
// C[M x N] = A[M x K] * B[K x N], all row-major. Correct for every M, N, K >= 1.
//
// Parameters (all #defined by the tuner):
//   MT      rows of C per block; a larger M takes ceil(M / MT) row tiles (more blocks)
//   VEC     columns per thread (1, 2 or 4): read as one float2/float4 when N % VEC == 0 and B is
//           4 * VEC-byte aligned (the whole block then reads VEC consecutive columns per
//           thread), else as VEC scalars of columns BX apart (each warp load stays coalesced)
//   BX      threads along N (a multiple of 32: a warp reads 32 * VEC consecutive floats of a row)
//   KS      threads along K (threadIdx.y): thread ty takes k = ty, ty + KS, ...
//   UNROLL  B rows each thread has in flight per iteration (memory-level parallelism)
//
// Block (BX, KS) computes a tile of MT rows x COLS = BX * VEC columns of C. Blocks are numbered
// row tile fastest, so the blocks that read the same columns of B run together (L2 hits when
// M > MT). A's few values are read with __ldg: every lane of a warp reads the same address (a
// broadcast served by L1), so A needs no shared-memory staging and the main loop no barrier.
//
// Edges: rows past M read row M - 1 and columns past N read a column inside N (clamped
// addresses, no branch in the loop); their sums are never stored. Every thread runs to the
// one barrier of the reduction: no thread leaves early.
// Determinism: each thread adds its k in increasing order, and the KS partial sums of an
// output are added in the order ty = 0, 1, ..., KS - 1: bit-identical run to run.

#define THREADS (BX * KS)
#define COLS (BX * VEC)

#include "small_m_rows.cuh" // load_b, SMALL_M_COLUMNS_AND_ROWS, SMALL_M_UNROLLED_STEP
#include "small_m_tile.cuh" // SMALL_M_TILE_OF_BLOCK, SMALL_M_ACCUMULATE, ...

// This thread's partial sums acc[r][v] = sum over its k of A[m0 + r][k] * B[k][column v].
template <bool VECOK>
static __device__ __forceinline__ void accumulate(int M, int N, int K, const float* __restrict__ A,
                                                  const float* __restrict__ B, int m0, int n0,
                                                  int tx, int ty, float (&acc)[MT][VEC])
{
    SMALL_M_COLUMNS_AND_ROWS

    int k = ty;
    for (; k + KS * (UNROLL - 1) < K; k += KS * UNROLL) {
        SMALL_M_UNROLLED_STEP
    }
    for (; k < K; k += KS) {
        float b[VEC];
        load_b<VECOK>(B + (size_t)k * N, col, b);
#pragma unroll
        for (int r = 0; r < MT; ++r) {
            const float a = __ldg(arow[r] + k);
#pragma unroll
            for (int v = 0; v < VEC; ++v) acc[r][v] = fmaf(a, b[v], acc[r][v]);
        }
    }
}

extern "C" __global__ void __launch_bounds__(THREADS)
KERNEL_NAME(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
            float* __restrict__ C)
{
    const int mtiles = (M + MT - 1) / MT;
    SMALL_M_TILE_OF_BLOCK(blockIdx.x)
    SMALL_M_ACCUMULATE(M, N, K, A, B, m0, n0, tx, ty)

#if KS == 1
    SMALL_M_STORE_ACC
#else
    // red[s][r][c]: thread row s's partial sum of output (m0 + r, n0 + c).
    __shared__ float red[KS * MT * COLS];
    SMALL_M_PARTS_STORE(ty, out[v])
    SMALL_M_PARTS_SUM(ty * BX + tx, KS, C[(size_t)m * N + n] = s)
#endif
}
