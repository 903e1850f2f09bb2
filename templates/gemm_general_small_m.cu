// Strided-batched SGEMM with the full cuBLAS-like interface for few rows of C (M up to ~16):
// the layer call C = X W^T with few tokens (row-major layout nt: A = X is M x K, B = W is
// stored N x K) is M GEMVs of W by the rows of X, memory-bound on reading W once.
//   C_b = alpha * op(A_b) op(B_b) + beta * C_b,  b = 0 .. batch-1,  row-major convention,
//   A_b = A + b * strideA, B_b = B + b * strideB, C_b = C + b * strideC (strides in elements).
// With beta == 0 C is not read (it may hold NaN). Correct for every M, N, K >= 1, every
// lda / ldb / ldc >= the row length, every stride >= 0 and every 4-byte aligned pointer; no
// read or write out of bounds. Bit-identical on every run: fixed-order sums, no atomics.
//
// Parameters (#defined by the tuner; TRANS_A / TRANS_B come from the problem, 0 when not
// defined, the rest from the space):
//   MT      rows of C (rows of op(A)) per block; ceil(M / MT) row tiles
//   RPW     (TRANS_B = 1) rows of W per warp; the block covers (WARPS / KS) * RPW rows of W
//           (columns of C). The space pins RPW = 1 for TRANS_B = 0.
//   KS      (TRANS_B = 1) warps sharing the same rows, splitting each chunk's k (more warps
//           when N gives few tiles), summed in fixed order through shared memory; 1 for
//           TRANS_B = 0
//   WARPS   warps per block (THREADS = 32 * WARPS)
//   VEC     4: 16-byte loads of B where ldb and the batch's B allow (a run-time, block-uniform
//           check), scalars otherwise; 1: scalars always
//   UNROLL  independent loads of B in flight per lane per step (memory-level parallelism)
//   KC      the K chunk of op(A) staged in shared memory (a multiple of 4)
//
// Per batch, the block walks K in chunks of KC: it stages op(A)'s MT x KC chunk in shared
// memory (xs[r][kk], rows past M zero; TRANS_A = 0 reads A's rows along k, as float4 where
// lda and the batch's A are 16-byte aligned; TRANS_A = 1 reads A's rows along m, consecutive
// threads consecutive m), one barrier, then every warp streams B against it; a barrier before
// the next chunk overwrites xs.
//
// TRANS_B = 1 (B stored N x K, W's rows contiguous along k: the fast path the family is for):
// warp w = g * KS + s owns rows n0 + g * RPW + j (j < RPW) of B, clamped to N - 1 (rows past N
// are read for nothing and never stored), and slice s of their k. Lanes walk the chunk along
// k: with 16-byte loads lane l of slice s reads float4 q = 32 s + l, 32 s + l + 32 KS, ... of
// each row (a warp reads 512 consecutive bytes per row and load),
// UNROLL of them per row in flight, and the matching float4 of each of the MT rows of xs (no
// bank conflicts); a last predicated step takes the fewer than 32 * UNROLL float4s left, and
// 0..3 scalars the chunk's tail. Scalars: lane l reads k = 32 s + l, + 32 KS, ... Each lane
// holds MT x RPW partial sums; at the end a butterfly warp sum (every lane ends with the same
// bits); KS = 1: one lane per output stores it; KS > 1: the warps' sums go to shared memory
// (the xs buffer, after a barrier) and are added in the order s = 0, 1, ..., KS - 1.
//
// TRANS_B = 0 (B stored K x N, rows along n): the block owns 32 * VEC columns of C (one warp
// wide: lane l owns columns n0 + 4 l .. + 3 read as one float4 when VEC = 4 and aligned, else
// columns n0 + v * 32 + l) and its warps split each chunk's k: warp w takes kk = w, w + WARPS,
// ..., UNROLL rows of B in flight, x read from xs as a broadcast. The warps' partial tiles are
// added in the order w = 0, 1, ... through shared memory (the xs buffer, after a barrier).
//
// Grid: x = ceil(M / MT) * (column tiles), row tiles fastest, so the blocks that read the
// same rows of B run together (L2 hits when M > MT); z = min(batch, 65535) and each block
// loops b = blockIdx.z, blockIdx.z + gridDim.z, ... < batch.

#include "gemm_layout.cuh" // TRANS_A, TRANS_B
#if !defined(MT) || !defined(RPW) || !defined(WARPS) || !defined(VEC) || !defined(UNROLL) || \
    !defined(KC)
#error "MT, RPW, WARPS, VEC, UNROLL and KC must be defined"
#endif
#if VEC != 1 && VEC != 4
#error "VEC must be 1 or 4"
#endif
#ifndef KS
#define KS 1
#endif
#if MT < 1 || RPW < 1 || WARPS < 1 || UNROLL < 1 || KC < 4 || KC % 4 != 0
#error "MT, RPW, WARPS, UNROLL must be at least 1 and KC a positive multiple of 4"
#endif
#if KS < 1 || WARPS % KS != 0 || (TRANS_B == 0 && KS != 1)
#error "KS must divide WARPS (and be 1 for TRANS_B = 0)"
#endif

#define THREADS (32 * WARPS)
// A thread's partial sums per row of C: one per row of W it owns (TRANS_B = 1), one per column.
#define ACC_N (TRANS_B == 1 ? RPW : VEC)
#if TRANS_B == 1
// xs, reused for the KS slices' sums at the end (KS > 1).
#define XS_FLOATS (MT * KC > WARPS * MT * RPW ? MT * KC : WARPS * MT * RPW)
#else
#define COLS (32 * VEC)
// xs, reused for the warps' partial tiles at the end.
#define XS_FLOATS (MT * KC > WARPS * MT * COLS ? MT * KC : WARPS * MT * COLS)
#endif

#include "gemv_common.cuh"  // dot4, warp_sum, aligned16

// The staging of op(A) and, for TRANS_B = 1, the walk of W's rows (small_m_xs.cuh): the lanes
// of slice sl start at float4 (or k) 32 sl + lane and step 32 KS.
#define XS_LD KC
#define XS_STAGE_UNROLL _Pragma("unroll")
#define XS_LANE0 32 * sl + lane
#define XS_LANE_STEP (32 * KS)
#define XS_W(j, kk) wr[j] + k0 + kk
#include "small_m_xs.cuh"  // xs_stage, xs_rows
#include "vec_cols.cuh"    // VEC_COLS_LOADER
#include "small_m_tile.cuh" // SMALL_M_PARTS_STORE, SMALL_M_PARTS_SUM

#if TRANS_B == 0
// gsm_cols<V4>(brow, col, b): the VEC floats of B's row brow at this lane's columns: one
// float4 at col[0] when V4 (16-byte aligned, all four inside N), else VEC scalars at the clamped
// columns col[v].
VEC_COLS_LOADER(gsm_cols, __ldg)

// acc[r][v] += sum over this warp's k of the chunk (kk = w, w + WARPS, ...) of
// xs[r][kk] * B_b[k0 + kk][col[v]].
template <bool V4>
static __device__ __forceinline__ void gsm_k(const float* __restrict__ xs,
                                             const float* __restrict__ Bb, int ldb, int k0,
                                             int klen, int w, const int (&col)[VEC],
                                             float (&acc)[MT][VEC])
{
    int kk = w;
    for (; kk + WARPS * (UNROLL - 1) < klen; kk += WARPS * UNROLL) {
        float b[UNROLL][VEC];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u)
            gsm_cols<V4>(Bb + (long long)(k0 + kk + WARPS * u) * ldb, col, b[u]);
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
#pragma unroll
            for (int r = 0; r < MT; ++r) {
                const float x = xs[r * KC + kk + WARPS * u];
#pragma unroll
                for (int v = 0; v < VEC; ++v) acc[r][v] = fmaf(x, b[u][v], acc[r][v]);
            }
        }
    }
    for (; kk < klen; kk += WARPS) {
        float b[VEC];
        gsm_cols<V4>(Bb + (long long)(k0 + kk) * ldb, col, b);
#pragma unroll
        for (int r = 0; r < MT; ++r) {
            const float x = xs[r * KC + kk];
#pragma unroll
            for (int v = 0; v < VEC; ++v) acc[r][v] = fmaf(x, b[v], acc[r][v]);
        }
    }
}
#endif

extern "C" __global__ void __launch_bounds__(THREADS)
KERNEL_NAME(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
            float* __restrict__ C, int lda, int ldb, int ldc, long long strideA,
            long long strideB, long long strideC, int batch, float alpha, float beta)
{
    __shared__ __align__(16) float xs[XS_FLOATS];
    const int tid = threadIdx.x;
    const int lane = tid & 31;
    const int w = tid >> 5;
    const int mtiles = (M + MT - 1) / MT;
    const int nb = blockIdx.x / mtiles;
    const int m0 = (blockIdx.x - nb * mtiles) * MT;

    for (int b = blockIdx.z; b < batch; b += gridDim.z) {
        const float* Ab = A + (long long)b * strideA;
        const float* Bb = B + (long long)b * strideB;
        float* Cb = C + (long long)b * strideC;
#if TRANS_B == 1
        const int sl = w % KS;
        const int n0 = nb * ((WARPS / KS) * RPW) + (w / KS) * RPW;
        const float* wr[RPW];
#pragma unroll
        for (int j = 0; j < RPW; ++j) wr[j] = Bb + (long long)min(n0 + j, N - 1) * ldb;
        // Block-uniform: every row's k0 (a multiple of 4) is 16-byte aligned.
        const bool v4 = VEC == 4 && (ldb & 3) == 0 && aligned16(Bb);
#else
        const int n0 = nb * COLS;
        // Block-uniform: B's rows are 16-byte aligned.
        const bool v4 = VEC == 4 && (ldb & 3) == 0 && aligned16(Bb);
        // Warp-uniform but for the lane whose four columns straddle N.
        const bool lv4 = v4 && n0 + 4 * lane + 3 < N;
        int col[VEC];
#pragma unroll
        for (int v = 0; v < VEC; ++v)
            col[v] = min(v4 ? n0 + 4 * lane + v : n0 + v * 32 + lane, N - 1);
#endif
        float acc[MT][ACC_N];
#pragma unroll
        for (int r = 0; r < MT; ++r) {
#pragma unroll
            for (int j = 0; j < ACC_N; ++j) acc[r][j] = 0.0f;
        }
        for (int k0 = 0; k0 < K; k0 += KC) {
            const int klen = min(KC, K - k0);
            __syncthreads();  // every warp is done with the last chunk (or batch's sums)
            xs_stage(xs, Ab, M, lda, m0, k0, klen, tid);
            __syncthreads();
#if TRANS_B == 1
            if (v4)
                xs_rows<true>(xs, wr, ldb, k0, klen, lane, sl, acc);
            else
                xs_rows<false>(xs, wr, ldb, k0, klen, lane, sl, acc);
#else
            if (lv4)
                gsm_k<true>(xs, Bb, ldb, k0, klen, w, col, acc);
            else
                gsm_k<false>(xs, Bb, ldb, k0, klen, w, col, acc);
#endif
        }
#if TRANS_B == 0 || KS > 1
        // The sums to add in a fixed order go through shared memory (the xs buffer).
        float* red = xs;
        __syncthreads();  // every warp is done reading xs
#endif
#if TRANS_B == 1
#if KS == 1
#pragma unroll
        for (int r = 0; r < MT; ++r) {
#pragma unroll
            for (int j = 0; j < RPW; ++j) {
                const float s = warp_sum<32>(acc[r][j]);
                const int m = m0 + r;
                const int n = n0 + j;
                if (lane == ((r * RPW + j) & 31) && m < M && n < N)
                    store_scaled(Cb + (long long)m * ldc + n, s, alpha, beta);
            }
        }
#else
        // red[w][r][j]: warp w's sum of output (m0 + r, its row j); warp w = g * KS + s.
#pragma unroll
        for (int r = 0; r < MT; ++r) {
#pragma unroll
            for (int j = 0; j < RPW; ++j) {
                const float s = warp_sum<32>(acc[r][j]);
                if (lane == ((r * RPW + j) & 31)) red[(w * MT + r) * RPW + j] = s;
            }
        }
        __syncthreads();
        for (int o = tid; o < (WARPS / KS) * MT * RPW; o += THREADS) {
            const int g = o / (MT * RPW);
            const int e = o - g * (MT * RPW);
            const int r = e / RPW;
            const int j = e - r * RPW;
            float s = red[g * KS * MT * RPW + e];
#pragma unroll
            for (int t = 1; t < KS; ++t) s += red[(g * KS + t) * MT * RPW + e];
            const int m = m0 + r;
            const int n = nb * ((WARPS / KS) * RPW) + g * RPW + j;
            if (m < M && n < N) store_scaled(Cb + (long long)m * ldc + n, s, alpha, beta);
        }
#endif
#else
        // The warps' partial tiles, red[w][r][c] (c relative to n0), summed in warp order.
        SMALL_M_PARTS_STORE(w, (v4 ? 4 * lane + v : v * 32 + lane))
        SMALL_M_PARTS_SUM(tid, WARPS, store_scaled(Cb + (long long)m * ldc + n, s, alpha, beta))
#endif
    }
}
