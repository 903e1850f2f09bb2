// Strided-batched SGEMM with the full cuBLAS-like interface for few rows of C (M up to ~64)
// and K split across blocks: the layer call C = X W^T of a few to a few dozen tokens
// (row-major layout nt: A = X is M x K, B = W is stored N x K), memory-bound on reading W once.
//   C_b = alpha * op(A_b) op(B_b) + beta * C_b,  b = 0 .. batch-1,  row-major convention,
//   A_b = A + b * strideA, B_b = B + b * strideB, C_b = C + b * strideC (strides in elements).
// With beta == 0 C is not read (it may hold NaN). Correct for every M, N, K >= 1, every
// lda / ldb / ldc >= the row length, every stride >= 0 and every 4-byte aligned pointer; no
// read or write out of bounds. Bit-identical on every run: fixed-order sums, no atomic sums.
//
// Why a family of its own: gemm_general_small_m stages op(A) in chunks and streams a block's
// few rows of W against each chunk, so with 8 or more rows of C the staged chunk costs as much
// traffic as the W it is used against, and every chunk costs two barriers. Here a block keeps
// one slice of K of op(A) (MT x KSL floats, dynamic shared memory) for its whole life and
// streams NB groups of WARPS x RPW rows of W against it: op(A) is read once per NB groups.
// K is split across grid y (ceil(K / KSL) slices), so the blocks are many even for a short N.
//
// Parameters (#defined by the tuner; TRANS_A / TRANS_B come from the problem, 0 when not
// defined, the rest from the space):
//   MT      rows of C (rows of op(A)) per block; ceil(M / MT) row tiles
//   RPW     rows of W (columns of C) per warp and group
//   WARPS   warps per block (THREADS = 32 * WARPS); a group is WARPS * RPW rows of W
//   NB      groups per block: the block's tile is MT x COLS, COLS = NB * WARPS * RPW
//   UNROLL  independent loads of W in flight per lane per step (memory-level parallelism)
//   KSL     the slice of K per block (a multiple of 4)
//
// A block stages op(A)'s MT x KSL slice (rows past M zero; TRANS_A = 0 reads A's rows along k,
// as float4 where lda and the batch's A are 16-byte aligned; TRANS_A = 1 consecutive threads
// consecutive m), one barrier, then for each group g warp w owns rows n0 + j (j < RPW) of W,
// n0 = tile columns + g * WARPS * RPW + w * RPW, clamped to N - 1 (rows past N are read for
// nothing and never stored). TRANS_B = 1 (W's rows contiguous along k, the case the family is
// for): lanes walk the slice along k, lane l reading float4 q = l, l + 32, ... of each row (a
// warp reads 512 consecutive bytes per row and load) where ldb and the batch's B are 16-byte
// aligned, UNROLL of them per row in flight, against the matching float4 of each of the MT rows
// of the slice (no bank conflicts); scalars otherwise and for the slice's last 0..3 k.
// TRANS_B = 0 (W's rows are B's columns, ldb apart) takes the scalar path: correct, not fast
// (the space offers the family for TRANS_B = 1 only). Each lane holds MT x RPW partial sums; a
// butterfly warp sum leaves output (m0 + r, n0 + j) on lane (r * RPW + j) % 32.
//
// One slice (K <= KSL): that lane writes C. Several: it stores the partial to the workspace and
// the tile's last block to finish reduces (split_fixup.cuh), summing the slices in the order
// 0, 1, ..., splits - 1 and applying alpha and beta.
//
// Workspace (the kernel's last argument; the space's workspace_bytes; unused with one slice):
//   partials  float [gridDim.z][splits][tiles][MT * COLS]: slot r * COLS + c holds output
//             (m0 + r, tile columns + c) of one slice
//   counters  unsigned [gridDim.z][tiles], after the partials
// Zeroed before the first launch (workspace_zero = "once"); the kernel leaves it zeroed.
//
// Grid: x = tiles (row tiles fastest, so the blocks that read the same rows of W run together:
// L2 hits when M > MT), y = splits, z = min(batch, 65535). Block z loops b = blockIdx.z,
// blockIdx.z + gridDim.z, ...; only its first batch is split across the blocks of grid y
// (the workspace of a grid-z slot serves one batch at a time): for later ones (batches past
// 65535) the blocks of slice 0 take all of K, slice by slice, and the others skip them.

#include "gemm_layout.cuh" // TRANS_A, TRANS_B
#if !defined(MT) || !defined(RPW) || !defined(WARPS) || !defined(NB) || !defined(UNROLL) || \
    !defined(KSL)
#error "MT, RPW, WARPS, NB, UNROLL and KSL must be defined"
#endif
#if MT < 1 || RPW < 1 || WARPS < 1 || NB < 1 || UNROLL < 1 || KSL < 4 || KSL % 4 != 0
#error "MT, RPW, WARPS, NB, UNROLL must be at least 1 and KSL a positive multiple of 4"
#endif

#define THREADS (32 * WARPS)
#define GROUP (WARPS * RPW)
#define COLS (NB * GROUP)
#define TILE (MT * COLS)

#include "gemv_common.cuh"   // dot4, warp_sum, aligned16
#include "split_fixup.cuh"   // split_count_in_last

// The staging of op(A) and the walk of W's rows (small_m_xs.cuh): a warp's lanes start at float4
// (or k) lane and step 32.
#define XS_LD KSL
#define XS_STAGE_UNROLL
#define XS_LANE0 lane
#define XS_LANE_STEP 32
#define XS_W(j, kk) wr[j] + (k0 + kk) * step
#include "small_m_xs.cuh"    // xs_stage, xs_rows

extern "C" __global__ void __launch_bounds__(THREADS)
KERNEL_NAME(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
            float* __restrict__ C, int lda, int ldb, int ldc, long long strideA,
            long long strideB, long long strideC, int batch, float alpha, float beta,
            float* __restrict__ workspace)
{
    extern __shared__ __align__(16) float sms_xs[];
    const int tid = threadIdx.x;
    const int lane = tid & 31;
    const int w = tid >> 5;
    const int mtiles = (M + MT - 1) / MT;
    const int tiles = mtiles * ((N + COLS - 1) / COLS);
    const int tile = blockIdx.x;
    const int nt = tile / mtiles;
    const int m0 = (tile - nt * mtiles) * MT;
    const int splits = (K + KSL - 1) / KSL;
    const int split = blockIdx.y;
    if (split >= splits) return;  // the whole block, before any barrier
    const int k0 = split * KSL;
    const int klen = min(KSL, K - k0);

    for (int b = blockIdx.z; b < batch; b += gridDim.z) {
        // Block-uniform: later batches of the slot run unsplit on the blocks of slice 0.
        const bool whole = splits > 1 && b != (int)blockIdx.z;
        if (whole && split != 0) continue;
        const float* Ab = A + (long long)b * strideA;
        const float* Bb = B + (long long)b * strideB;
        float* Cb = C + (long long)b * strideC;
        // Block-uniform: every row's k0 (a multiple of 4) is 16-byte aligned.
        const bool v4 = TRANS_B == 1 && (ldb & 3) == 0 && aligned16(Bb);
        if (!whole) {
            __syncthreads();  // every warp is done with the last batch's slice
            xs_stage(sms_xs, Ab, M, lda, m0, k0, klen, tid);
            __syncthreads();
        }
        float* part = splits > 1 && !whole
                          ? workspace + (((long long)blockIdx.z * splits + split) * tiles + tile) * TILE
                          : nullptr;
        for (int g = 0; g < NB; ++g) {
            const int c0 = g * GROUP + w * RPW;  // this warp's first column of the tile
            const int n0 = nt * COLS + c0;
            const float* wr[RPW];
#pragma unroll
            for (int j = 0; j < RPW; ++j) {
                const long long n = min(n0 + j, N - 1);
                wr[j] = Bb + (TRANS_B == 1 ? n * ldb : n);
            }
            float acc[MT][RPW];
#pragma unroll
            for (int r = 0; r < MT; ++r) {
#pragma unroll
                for (int j = 0; j < RPW; ++j) acc[r][j] = 0.0f;
            }
            if (!whole) {
                if (v4)
                    xs_rows<true>(sms_xs, wr, ldb, k0, klen, lane, 0, acc);
                else
                    xs_rows<false>(sms_xs, wr, ldb, k0, klen, lane, 0, acc);
            } else {
                for (int s0 = 0; s0 < K; s0 += KSL) {
                    const int sl = min(KSL, K - s0);
                    __syncthreads();  // every warp is done with the last slice
                    xs_stage(sms_xs, Ab, M, lda, m0, s0, sl, tid);
                    __syncthreads();
                    if (v4)
                        xs_rows<true>(sms_xs, wr, ldb, s0, sl, lane, 0, acc);
                    else
                        xs_rows<false>(sms_xs, wr, ldb, s0, sl, lane, 0, acc);
                }
            }
#pragma unroll
            for (int r = 0; r < MT; ++r) {
#pragma unroll
                for (int j = 0; j < RPW; ++j) {
                    const float s = warp_sum<32>(acc[r][j]);
                    if (lane != ((r * RPW + j) & 31)) continue;
                    if (part != nullptr) {
                        __stcg(part + r * COLS + c0 + j, s);
                    } else if (m0 + r < M && n0 + j < N) {
                        store_scaled(Cb + (long long)(m0 + r) * ldc + n0 + j, s, alpha, beta);
                    }
                }
            }
        }
        if (part == nullptr) continue;  // block-uniform
        unsigned* counter =
            reinterpret_cast<unsigned*>(workspace + (long long)gridDim.z * splits * tiles * TILE) +
            (long long)blockIdx.z * tiles + tile;
        if (!split_count_in_last(counter, splits)) continue;  // block-uniform
        const float* base = workspace + (long long)blockIdx.z * splits * tiles * TILE +
                            (long long)tile * TILE;
        for (int o = tid; o < TILE; o += THREADS) {
            const int r = o / COLS;
            const int c = o - r * COLS;
            float s = __ldcg(base + o);
            for (int z = 1; z < splits; ++z) s += __ldcg(base + (long long)z * tiles * TILE + o);
            const int m = m0 + r;
            const int n = nt * COLS + c;
            if (m < M && n < N) store_scaled(Cb + (long long)m * ldc + n, s, alpha, beta);
        }
        // Every slice of this tile has counted in: the next launch finds the counter zero.
        if (tid == 0) atomicExch(counter, 0u);
    }
}
