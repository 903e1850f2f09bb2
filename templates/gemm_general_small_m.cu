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
#if TRANS_B == 1
// xs, reused for the KS slices' sums at the end (KS > 1).
#define XS_FLOATS (MT * KC > WARPS * MT * RPW ? MT * KC : WARPS * MT * RPW)
#else
#define COLS (32 * VEC)
// xs, reused for the warps' partial tiles at the end.
#define XS_FLOATS (MT * KC > WARPS * MT * COLS ? MT * KC : WARPS * MT * COLS)
#endif

#include "gemv_common.cuh"  // dot4, warp_sum, aligned16

// xs[r][kk] = op(A_b)(m0 + r, k0 + kk) for kk < klen (0 for rows past M).
static __device__ __forceinline__ void gsm_stage(float* __restrict__ xs,
                                                 const float* __restrict__ Ab, int M, int lda,
                                                 int m0, int k0, int klen, int tid)
{
#if TRANS_A == 0
    // Rows of A along k: consecutive threads, consecutive k of one row.
    const bool al = (lda & 3) == 0 && aligned16(Ab);  // every row's k0 is then 16-byte aligned
#pragma unroll
    for (int r = 0; r < MT; ++r) {
        float* dst = xs + r * KC;
        const int m = m0 + r;
        if (m >= M) {
            for (int kk = tid; kk < klen; kk += THREADS) dst[kk] = 0.0f;
            continue;
        }
        const float* src = Ab + (long long)m * lda + k0;
        int done = 0;
        if (al) {
            const int n4 = klen >> 2;
            for (int j = tid; j < n4; j += THREADS)
                reinterpret_cast<float4*>(dst)[j] = __ldg(reinterpret_cast<const float4*>(src) + j);
            done = n4 << 2;
        }
        for (int kk = done + tid; kk < klen; kk += THREADS) dst[kk] = __ldg(src + kk);
    }
#else
    // A stored K x M: row k of the stored matrix holds op(A)(., k); consecutive threads take
    // consecutive m (MT of a row), then the next k.
    for (int i = tid; i < MT * klen; i += THREADS) {
        const int kk = i / MT;
        const int r = i - kk * MT;
        const int m = m0 + r;
        xs[r * KC + kk] = m < M ? __ldg(Ab + (long long)(k0 + kk) * lda + m) : 0.0f;
    }
#endif
}

#if TRANS_B == 1
// acc[r][j] += sum over this lane's k of the chunk of xs[r][k] * W_j[k0 + k], W_j = wr[j].
// V4: 16-byte loads (each wr[j] + k0 16-byte aligned).
template <bool V4>
static __device__ __forceinline__ void gsm_rows(const float* __restrict__ xs,
                                                const float* const (&wr)[RPW], int k0, int klen,
                                                int lane, int sl, float (&acc)[MT][RPW])
{
    int done = 0;
    if (V4) {
        const int n4 = klen >> 2;
        const float4* w4[RPW];
#pragma unroll
        for (int j = 0; j < RPW; ++j) w4[j] = reinterpret_cast<const float4*>(wr[j] + k0);
        const float4* x4 = reinterpret_cast<const float4*>(xs);
        int q = 32 * sl + lane;
        for (; q + 32 * KS * (UNROLL - 1) < n4; q += 32 * KS * UNROLL) {
            float4 w[UNROLL][RPW];
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) {
#pragma unroll
                for (int j = 0; j < RPW; ++j) w[u][j] = __ldg(w4[j] + q + 32 * KS * u);
            }
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) {
#pragma unroll
                for (int r = 0; r < MT; ++r) {
                    const float4 x = x4[r * (KC / 4) + q + 32 * KS * u];
#pragma unroll
                    for (int j = 0; j < RPW; ++j) acc[r][j] = dot4(x, w[u][j], acc[r][j]);
                }
            }
        }
#if UNROLL > 1
        // Fewer than 32 * KS * UNROLL float4s left: one predicated step, loads in flight together.
        if (q < n4) {
            float4 w[UNROLL][RPW];
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) {
#pragma unroll
                for (int j = 0; j < RPW; ++j)
                    w[u][j] = q + 32 * KS * u < n4 ? __ldg(w4[j] + q + 32 * KS * u)
                                              : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            }
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) {
                if (q + 32 * KS * u < n4) {
#pragma unroll
                    for (int r = 0; r < MT; ++r) {
                        const float4 x = x4[r * (KC / 4) + q + 32 * KS * u];
#pragma unroll
                        for (int j = 0; j < RPW; ++j) acc[r][j] = dot4(x, w[u][j], acc[r][j]);
                    }
                }
            }
        }
#endif
        done = n4 << 2;
    }
    // Scalars: the whole chunk (V4 false) or its 0..3 last k.
    int k = done + 32 * sl + lane;
    for (; k + 32 * KS * (UNROLL - 1) < klen; k += 32 * KS * UNROLL) {
        float w[UNROLL][RPW];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
#pragma unroll
            for (int j = 0; j < RPW; ++j) w[u][j] = __ldg(wr[j] + k0 + k + 32 * KS * u);
        }
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
#pragma unroll
            for (int r = 0; r < MT; ++r) {
                const float x = xs[r * KC + k + 32 * KS * u];
#pragma unroll
                for (int j = 0; j < RPW; ++j) acc[r][j] = fmaf(x, w[u][j], acc[r][j]);
            }
        }
    }
    for (; k < klen; k += 32 * KS) {
        float w[RPW];
#pragma unroll
        for (int j = 0; j < RPW; ++j) w[j] = __ldg(wr[j] + k0 + k);
#pragma unroll
        for (int r = 0; r < MT; ++r) {
            const float x = xs[r * KC + k];
#pragma unroll
            for (int j = 0; j < RPW; ++j) acc[r][j] = fmaf(x, w[j], acc[r][j]);
        }
    }
}
#else
// The VEC floats of B's row brow at this lane's columns: one float4 at col[0] when V4 (16-byte
// aligned, all four inside N), else VEC scalars at the clamped columns col[v].
template <bool V4>
static __device__ __forceinline__ void gsm_cols(const float* __restrict__ brow,
                                                const int (&col)[VEC], float (&b)[VEC])
{
#if VEC == 4
    if (V4) {
        const float4 t = __ldg(reinterpret_cast<const float4*>(brow + col[0]));
        b[0] = t.x;
        b[1] = t.y;
        b[2] = t.z;
        b[3] = t.w;
        return;
    }
#endif
#pragma unroll
    for (int v = 0; v < VEC; ++v) b[v] = __ldg(brow + col[v]);
}

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
        float acc[MT][RPW];
#pragma unroll
        for (int r = 0; r < MT; ++r) {
#pragma unroll
            for (int j = 0; j < RPW; ++j) acc[r][j] = 0.0f;
        }
        for (int k0 = 0; k0 < K; k0 += KC) {
            const int klen = min(KC, K - k0);
            __syncthreads();  // every warp is done with the last chunk (or batch)
            gsm_stage(xs, Ab, M, lda, m0, k0, klen, tid);
            __syncthreads();
            if (v4)
                gsm_rows<true>(xs, wr, k0, klen, lane, sl, acc);
            else
                gsm_rows<false>(xs, wr, k0, klen, lane, sl, acc);
        }
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
        float* red = xs;
        __syncthreads();  // every warp is done reading xs
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
        const int n0 = nb * COLS;
        // Block-uniform: B's rows are 16-byte aligned.
        const bool v4 = VEC == 4 && (ldb & 3) == 0 && aligned16(Bb);
        // Warp-uniform but for the lane whose four columns straddle N.
        const bool lv4 = v4 && n0 + 4 * lane + 3 < N;
        int col[VEC];
#pragma unroll
        for (int v = 0; v < VEC; ++v)
            col[v] = min(v4 ? n0 + 4 * lane + v : n0 + v * 32 + lane, N - 1);
        float acc[MT][VEC];
#pragma unroll
        for (int r = 0; r < MT; ++r) {
#pragma unroll
            for (int v = 0; v < VEC; ++v) acc[r][v] = 0.0f;
        }
        for (int k0 = 0; k0 < K; k0 += KC) {
            const int klen = min(KC, K - k0);
            __syncthreads();  // every warp is done with the last chunk (or batch's sums)
            gsm_stage(xs, Ab, M, lda, m0, k0, klen, tid);
            __syncthreads();
            if (lv4)
                gsm_k<true>(xs, Bb, ldb, k0, klen, w, col, acc);
            else
                gsm_k<false>(xs, Bb, ldb, k0, klen, w, col, acc);
        }
        // The warps' partial tiles, red[w][r][c] (c relative to n0), summed in warp order.
        float* red = xs;
        __syncthreads();  // every warp is done reading xs
#pragma unroll
        for (int r = 0; r < MT; ++r) {
#pragma unroll
            for (int v = 0; v < VEC; ++v)
                red[(w * MT + r) * COLS + (v4 ? 4 * lane + v : v * 32 + lane)] = acc[r][v];
        }
        __syncthreads();
        for (int o = tid; o < MT * COLS; o += THREADS) {
            const int r = o / COLS;
            const int c = o - r * COLS;
            float s = red[o];
#pragma unroll
            for (int t = 1; t < WARPS; ++t) s += red[t * MT * COLS + o];
            const int m = m0 + r;
            const int n = n0 + c;
            if (m < M && n < N) store_scaled(Cb + (long long)m * ldc + n, s, alpha, beta);
        }
#endif
    }
}
