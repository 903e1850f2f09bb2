// SGEMV with the full cuBLAS-like interface (cublasSgemvStridedBatched): transposes, alpha,
// beta, leading dimension and strided batches. A is stored row-major M x K with row stride
// lda >= K (element (m, k) at A[m * lda + k]). For batch b: A_b = A + b * strideA,
// x_b = x + b * strideX, y_b = y + b * strideY (strides in elements, any value >= 0).
//   TRANS_A = 0: y_b[M] = alpha * A_b x_b[K]   + beta * y_b   (rows of A: dot products)
//   TRANS_A = 1: y_b[K] = alpha * A_b^T x_b[M] + beta * y_b   (columns of A: axpy over rows)
// When beta == 0 y is not read (it may hold NaN). Batches: grid z = min(batch, 65535) and each
// block loops b = blockIdx.z, blockIdx.z + gridDim.z, ... < batch.
// Both paths are memory-bound (every element of A is read once); bit-identical on every run
// (fixed-order sums, no atomics into y).
//
// Parameters (all #defined by the tuner; TRANS_A comes from the problem, 0 when not defined):
//   WARPS      warps per block (THREADS = 32 * WARPS), both paths
//   VEC        1: scalar loads of A; 4: float4 loads of A where alignment allows (see below)
//   UNROLL     independent loads of A in flight per thread per iteration
//   TPR        (TRANS_A = 0) threads per row: 4..16 a sub-warp per row (short rows, several
//              rows per warp), 32 a warp per row, 64..256 several warps per row (few long
//              rows: more threads streaming each row), reduced through shared memory
//   RY         (TRANS_A = 1) row groups of the block: BX = THREADS / RY threads along K, each
//              owning VEC columns (COLS = BX * VEC per block); group ty takes rows
//              ty, ty + RY, ... of the block's row chunk
//   ROW_SPLIT  (TRANS_A = 1) row chunks across blocks (grid y): with few column tiles (a short
//              K) the tiles alone are too few blocks to stream A at full bandwidth
// The space pins the parameters of the other path (TPR = 32 when TRANS_A = 1; RY = ROW_SPLIT
// = 1 when TRANS_A = 0).
//
// TRANS_A = 0 (the gemv_warp_row / gemv_multi_row_warp design with a group width TPR): group
// g of TPR consecutive threads computes row blockIdx.x * RPB + g (RPB = THREADS / TPR rows per
// block). VEC = 4 works for every lda and alignment: each row is peeled to 16-byte alignment
// (a head of 0..3 scalars, a body of float4s with consecutive threads reading consecutive
// float4s, a tail of 0..3 scalars), as gemv_segment.cuh's seg_dot does for 32 lanes; x is read
// as float4 where its matching address is 16-byte aligned, else as four scalars. TPR <= 32: a
// sub-warp shuffle sum (lanes of out-of-range rows add 0 and take part; a warp whose first row
// is out of range leaves as a whole, before any shuffle). TPR > 32: warp sums, then the
// TPR / 32 warps of a row are added in order through shared memory (out-of-range rows compute
// 0, every thread reaches every barrier).
//
// TRANS_A = 1: thread (tx, ty) accumulates VEC columns over its rows, UNROLL rows' loads in
// flight (a predicated last step for the fewer than UNROLL rows left), x[m] read by __ldg (a
// broadcast). Columns: when VEC = 4, lda % 4 == 0 and A_b is 16-byte aligned (vecok), thread tx
// owns the 4 consecutive columns n0 + 4 tx + v, read as one float4 (scalars, clamped to K - 1,
// by the one thread whose 4 straddle K); otherwise columns n0 + v * BX + tx (each warp load
// coalesced), clamped to K - 1 (clamped columns are computed for nothing and never stored to
// y). The RY row groups are added in order ty = 0, 1, ... through shared memory.
// ROW_SPLIT > 1: rows are cut in chunks of ceil(M / ROW_SPLIT); `splits` (<= ROW_SPLIT) are
// non-empty, the blocks of an empty chunk leave at once (for every batch: the chunks depend on
// M only). Each chunk's block stores its partial column sums in the workspace, fences, and
// counts in on the tile's counter; the block that counts last reduces the chunks in the order
// 0, 1, ..., splits - 1 (gemm_small_m_splitk's "last block reduces"), writes y and resets the
// counter, so the workspace stays zeroed (workspace_zero = "once").
//
// Workspace (last kernel argument, used only when TRANS_A = 1 and ROW_SPLIT > 1), per grid-z
// slot z and column tile t (tiles = gridDim.x):
//   partials float    [gridDim.z][tiles][ROW_SPLIT][COLS]
//   counters unsigned [gridDim.z][tiles], after the partials
// Batches past the grid (batch > 65535, a grid-z slot loops over several): only a slot's first
// batch is split. Its later batches are computed by the blocks of chunk 0 alone, over all M rows
// (the others skip them), written straight to y. A split there would need the chunks of batch
// j + 1 to wait until batch j's reducer has read the partials, and a wait on blocks that may not
// be resident yet can deadlock; a fixed choice per batch keeps every run bit-identical. The
// constraints never offer ROW_SPLIT > 1 for batch > 65535 anyway (TILES * min(BATCH, 65535) *
// ROW_SPLIT <= 2048), so that path is for correctness only.
//
// Correct for every M, K >= 1, lda >= K, any strides and 4-byte aligned pointers; no read or
// write out of bounds (addresses are clamped inside A's rows and columns, x and y are indexed
// < M or < K).

#ifndef TRANS_A
#define TRANS_A 0
#endif
#if !defined(WARPS) || !defined(VEC) || !defined(UNROLL) || !defined(TPR) || !defined(RY) || \
    !defined(ROW_SPLIT)
#error "WARPS, VEC, UNROLL, TPR, RY and ROW_SPLIT must be defined"
#endif
#if VEC != 1 && VEC != 4
#error "VEC must be 1 or 4"
#endif
#if UNROLL < 1 || ROW_SPLIT < 1 || RY < 1 || WARPS < 1
#error "UNROLL, ROW_SPLIT, RY and WARPS must be at least 1"
#endif

#define THREADS (32 * WARPS)

#include "gemv_common.cuh"   // dot4, warp_sum, aligned16
#include "gemv_segment.cuh"  // SEG_STRIDED_SUM
#include "split_fixup.cuh"   // split_count_in_last_by
#include "vec_cols.cuh"      // VEC_COLS_LOADER

#if TRANS_A == 0
// ---------------------------------------------------------------------------------------
// y = alpha * A x + beta * y: a group of TPR threads per row.
#if TPR < 1 || (TPR <= 32 && (32 % TPR) != 0) || (TPR > 32 && (TPR % 32) != 0)
#error "TPR must divide 32 or be a multiple of 32"
#endif
#if TPR > THREADS
#error "TPR must not exceed THREADS"
#endif
#define RPB (THREADS / TPR)

// This thread's share (l of G) of sum_{j < n4} dot(a4[j], x4[j]); a is 16-byte aligned, and
// xp too when XAL.
template <int G, int U, bool XAL>
static __device__ __forceinline__ float g_body4(const float* __restrict__ a,
                                                const float* __restrict__ xp, int n4, int l)
{
    const float4* __restrict__ a4 = reinterpret_cast<const float4*>(a);
    float acc[U];
#pragma unroll
    for (int u = 0; u < U; ++u) acc[u] = 0.0f;
    int j = l;
    for (; j + (U - 1) * G < n4; j += G * U) {
        float4 av[U], xv[U];
#pragma unroll
        for (int u = 0; u < U; ++u) av[u] = __ldg(a4 + j + G * u);
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const float* p = xp + 4 * (j + G * u);
            xv[u] = XAL ? __ldg(reinterpret_cast<const float4*>(p))
                        : make_float4(__ldg(p), __ldg(p + 1), __ldg(p + 2), __ldg(p + 3));
        }
#pragma unroll
        for (int u = 0; u < U; ++u) acc[u] = dot4(av[u], xv[u], acc[u]);
    }
    for (; j < n4; j += G) {
        const float* p = xp + 4 * j;
        const float4 xv = XAL ? __ldg(reinterpret_cast<const float4*>(p))
                              : make_float4(__ldg(p), __ldg(p + 1), __ldg(p + 2), __ldg(p + 3));
        acc[0] = dot4(__ldg(a4 + j), xv, acc[0]);
    }
    float s = 0.0f;
#pragma unroll
    for (int u = 0; u < U; ++u) s += acc[u];
    return s;
}

// This thread's share (l of G) of sum_{k < n} a[k] * xp[k].
template <int G, int V, int U>
static __device__ __forceinline__ float g_dot(const float* __restrict__ a,
                                              const float* __restrict__ xp, int n, int lane)
{
    const int l = lane;
    if (V == 4) {
        // Scalars before a's first 16-byte boundary, float4s, then a tail of 0..3 scalars.
        int head = (int)(((16u - ((unsigned)(unsigned long long)a & 15u)) & 15u) >> 2);
        head = min(head, n);
        float s = 0.0f;
        if (l < head) s = __ldg(a + l) * __ldg(xp + l);
        const int rest = n - head;
        const int n4 = rest >> 2;
        const float* ab = a + head;
        const float* xb = xp + head;
        if (aligned16(xb))
            s += g_body4<G, U, true>(ab, xb, n4, l);
        else
            s += g_body4<G, U, false>(ab, xb, n4, l);
        const int t = head + (n4 << 2) + l;
        if (l < (rest & 3)) s = fmaf(__ldg(a + t), __ldg(xp + t), s);
        return s;
    }
#define G_A(i) __ldg(a + i)
#define G_X(i) __ldg(xp + i)
    SEG_STRIDED_SUM(float, n, G_A, G_X, fmaf)
#undef G_A
#undef G_X
}

extern "C" __global__ void __launch_bounds__(THREADS)
KERNEL_NAME(int M, int K, const float* __restrict__ A, const float* __restrict__ x,
            float* __restrict__ y, int lda, long long strideA, long long strideX,
            long long strideY, int batch, float alpha, float beta, float* workspace)
{
    (void)workspace;
    const int tid = threadIdx.x;
    const int grp = tid / TPR;
    const int l = tid - grp * TPR;
    const int row = blockIdx.x * RPB + grp;
    const bool live = row < M;
#if TPR <= 32
    // Warp-uniform: no row of this warp exists (no barrier in this path).
    if (blockIdx.x * RPB + (tid >> 5) * (32 / TPR) >= M) return;
#else
    __shared__ float red[WARPS];
#endif
    for (int b = blockIdx.z; b < batch; b += gridDim.z) {
        const float* Ab = A + (long long)b * strideA;
        const float* xb = x + (long long)b * strideX;
        float s = 0.0f;
        if (live) s = g_dot<TPR, VEC, UNROLL>(Ab + (long long)row * lda, xb, K, l);
#if TPR <= 32
        s = warp_sum<TPR>(s);
        if (l == 0 && live) store_scaled(y + (long long)b * strideY + row, s, alpha, beta);
#else
        s = warp_sum<32>(s);
        if ((tid & 31) == 0) red[tid >> 5] = s;
        __syncthreads();
        if (l == 0 && live) {
            const int w0 = grp * (TPR / 32);
            float t = red[w0];
#pragma unroll
            for (int w = 1; w < TPR / 32; ++w) t += red[w0 + w];
            store_scaled(y + (long long)b * strideY + row, t, alpha, beta);
        }
        __syncthreads();  // red is rewritten by the next batch
#endif
    }
}

#else
// ---------------------------------------------------------------------------------------
// y = alpha * A^T x + beta * y: threads along K, rows split over RY groups and ROW_SPLIT blocks.
#if THREADS % RY != 0 || THREADS / RY < 32
#error "RY must divide THREADS with at least 32 threads per row group"
#endif
#define BX (THREADS / RY)
#define COLS (BX * VEC)
// Output slots per thread after the in-block reduction: its own VEC columns when RY = 1, else
// slots tid + i * THREADS of the summed tile (COLS / THREADS = VEC / RY, rounded up).
#define OWN ((VEC + RY - 1) / RY)

// load_cols<VL>(row, col, a): the VEC floats at columns col of one row of A; VL: one float4 at
// col[0] (16-byte aligned). Streaming loads (ld.global.cs): A is read once; measured ~2% faster
// than __ldg on an H100.
VEC_COLS_LOADER(load_cols, __ldcs)

// acc[v] += sum over this thread's rows m in [r, r1) (m = r, r + RY, ...) of x[m] * A[m][col[v]],
// m increasing.
template <bool VL>
static __device__ __forceinline__ void t_accum(const float* __restrict__ Ab,
                                               const float* __restrict__ xb, int lda, int r,
                                               int r1, const int (&col)[VEC], float (&acc)[VEC])
{
    int m = r;
    for (; m + RY * (UNROLL - 1) < r1; m += RY * UNROLL) {
        float a[UNROLL][VEC];
        float xv[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            load_cols<VL>(Ab + (long long)(m + RY * u) * lda, col, a[u]);
            xv[u] = __ldg(xb + m + RY * u);
        }
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
#pragma unroll
            for (int v = 0; v < VEC; ++v) acc[v] = fmaf(xv[u], a[u][v], acc[v]);
        }
    }
#if UNROLL > 1
    // Fewer than UNROLL rows left: one predicated step, their loads in flight together.
    if (m < r1) {
        const int left = (r1 - 1 - m) / RY + 1;  // 1 .. UNROLL - 1
        float a[UNROLL][VEC];
        float xv[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            if (u < left) {
                load_cols<VL>(Ab + (long long)(m + RY * u) * lda, col, a[u]);
                xv[u] = __ldg(xb + m + RY * u);
            } else {
                xv[u] = 0.0f;
#pragma unroll
                for (int v = 0; v < VEC; ++v) a[u][v] = 0.0f;
            }
        }
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            if (u < left) {
#pragma unroll
                for (int v = 0; v < VEC; ++v) acc[v] = fmaf(xv[u], a[u][v], acc[v]);
            }
        }
    }
#endif
}

#if ROW_SPLIT > 1
// After every thread has stored its partials: counts the chunk in and says (to every thread)
// whether it was the last of `splits` to do so (as in gemm_small_m_splitk.cu).
static __device__ __forceinline__ bool count_in_last(unsigned* counter, int splits)
{
    return split_count_in_last_by(counter, splits, threadIdx.x == 0);
}
#endif

extern "C" __global__ void __launch_bounds__(THREADS)
KERNEL_NAME(int M, int K, const float* __restrict__ A, const float* __restrict__ x,
            float* __restrict__ y, int lda, long long strideA, long long strideX,
            long long strideY, int batch, float alpha, float beta, float* workspace)
{
    const int tid = threadIdx.x;
    const int tx = tid % BX;
    const int ty = tid / BX;
    const int tile = blockIdx.x;
    const int n0 = tile * COLS;
#if ROW_SPLIT > 1
    const int chunk = (int)(((long long)M + ROW_SPLIT - 1) / ROW_SPLIT);
    const int splits = (M + chunk - 1) / chunk;
    const int split = blockIdx.y;
    if (split >= splits) return;  // block-uniform, the same for every batch
    const int c0 = split * chunk;
    const int c1 = (int)min((long long)M, (long long)c0 + chunk);
    const long long tslot = (long long)blockIdx.z * gridDim.x + tile;
    float* const part = workspace + tslot * (ROW_SPLIT * COLS);
    unsigned* const counter =
        reinterpret_cast<unsigned*>(workspace +
                                    (long long)gridDim.z * gridDim.x * (ROW_SPLIT * COLS)) +
        tslot;
#else
    (void)workspace;
#endif
#if RY > 1
    __shared__ __align__(16) float red[RY * COLS];
#endif

    for (int b = blockIdx.z; b < batch; b += gridDim.z) {
#if ROW_SPLIT > 1
        // The slot's first batch is split in chunks; later ones (batch > 65535) are done by
        // chunk 0's blocks alone (see the workspace notes). Block-uniform.
        const bool first = b == (int)blockIdx.z;
        const bool reduce = first && splits > 1;
        if (!first && split != 0) continue;
        const int r0 = first ? c0 : 0;
        const int r1 = first ? c1 : M;
#else
        const int r0 = 0;
        const int r1 = M;
#endif
        const float* Ab = A + (long long)b * strideA;
        const float* xb = x + (long long)b * strideX;
        float* yb = y + (long long)b * strideY;
        // Block-uniform (the same for every block of this batch): the layout of the columns.
        const bool vecok = VEC == 4 && (lda & 3) == 0 && aligned16(Ab);
        int out[VEC];  // columns relative to n0, in [0, COLS)
        int col[VEC];  // the columns read, clamped inside the row
#pragma unroll
        for (int v = 0; v < VEC; ++v) {
            out[v] = vecok ? tx * VEC + v : v * BX + tx;
            col[v] = min(n0 + out[v], K - 1);
        }
        float acc[VEC];
#pragma unroll
        for (int v = 0; v < VEC; ++v) acc[v] = 0.0f;
        if (vecok && n0 + tx * VEC + VEC <= K)
            t_accum<true>(Ab, xb, lda, r0 + ty, r1, col, acc);
        else
            t_accum<false>(Ab, xb, lda, r0 + ty, r1, col, acc);

        // The block's column sums: val[i] for slot slot[i] (valid when slot[i] < COLS).
        float val[OWN];
        int slot[OWN];
#if RY > 1
        if (vecok) {
#if VEC == 4
            *reinterpret_cast<float4*>(red + ty * COLS + tx * 4) =
                make_float4(acc[0], acc[1], acc[2], acc[3]);
#endif
        } else {
#pragma unroll
            for (int v = 0; v < VEC; ++v) red[ty * COLS + out[v]] = acc[v];
        }
        __syncthreads();
#pragma unroll
        for (int i = 0; i < OWN; ++i) {
            const int o = tid + i * THREADS;
            slot[i] = o;
            val[i] = 0.0f;
            if (o < COLS) {
                float s = red[o];
#pragma unroll
                for (int t = 1; t < RY; ++t) s += red[t * COLS + o];
                val[i] = s;
            }
        }
#else
#pragma unroll
        for (int i = 0; i < OWN; ++i) {
            slot[i] = out[i];
            val[i] = acc[i];
        }
#endif

#if ROW_SPLIT > 1
        if (reduce) {
            float* const mine = part + split * COLS;
#pragma unroll
            for (int i = 0; i < OWN; ++i) {
                if (slot[i] < COLS) __stcg(mine + slot[i], val[i]);
            }
            if (count_in_last(counter, splits)) {  // block-uniform
                // Chunks in order 0, 1, ..., splits - 1, ZB loads in flight per slot.
#define ZB 8
#pragma unroll
                for (int i = 0; i < OWN; ++i) {
                    if (slot[i] < COLS) {
                        float s = -0.0f;  // -0 + v == v for every v
                        for (int z0 = 0; z0 < splits; z0 += ZB) {
                            float p[ZB];
#pragma unroll
                            for (int dz = 0; dz < ZB; ++dz) {
                                p[dz] = 0.0f;
                                if (z0 + dz < splits) p[dz] = __ldcg(part + (z0 + dz) * COLS + slot[i]);
                            }
#pragma unroll
                            for (int dz = 0; dz < ZB; ++dz) {
                                if (z0 + dz < splits) s += p[dz];
                            }
                        }
                        const int n = n0 + slot[i];
                        if (n < K) store_scaled(yb + n, s, alpha, beta);
                    }
                }
#undef ZB
                // Reset for the next launch: every chunk of this tile has counted in.
                if (tid == 0) atomicExch(counter, 0u);
            }
        } else
#endif
        {
#pragma unroll
            for (int i = 0; i < OWN; ++i) {
                const int n = n0 + slot[i];
                if (slot[i] < COLS && n < K) store_scaled(yb + n, val[i], alpha, beta);
            }
        }
#if RY > 1
        __syncthreads();  // red is rewritten by the next batch
#endif
    }
}
#endif
