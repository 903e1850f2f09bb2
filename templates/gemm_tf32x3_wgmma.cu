// FP32-accurate SGEMM on Hopper's warpgroup tensor cores (3xTF32 on wgmma.mma_async, sm_90a),
// the full cuBLAS-like interface:
//   C_b = alpha * op(A_b) op(B_b) + beta * C_b,  b = 0 .. batch-1,  row-major convention,
//   A_b = A + b * strideA, B_b = B + b * strideB, C_b = C + b * strideC (strides in elements).
// Correct for every M, N, K >= 1, every lda / ldb / ldc >= the row length, every stride >= 0
// and every 4-byte aligned pointer (16-byte loads only where the base and ld allow them). With
// beta == 0 C is not read.
//
// Parameters (#defined by the tuner; TRANS_A / TRANS_B come from the problem):
//   TRANS_A, TRANS_B  the layouts (include/gemm_layout.cuh)
//   BM x BN     block tile: (BM/64) x (BN/WN) warpgroups, each computing 64 x WN of it with
//               wgmma m64nWNk8 (WN 64, 128 or 256)
//   BK          k of one stage: 32 (128-byte swizzled rows) or 16 (64-byte)
//   RING        how the next tiles are read: 0 into registers, one tile ahead; 2 to 4 by
//               cp.async into a ring of RING raw slots in shared memory, RING-1 tiles ahead
//   GROUP_M     block rasterization (include/tile_order.cuh)
//   PIPE, CHAIN (gemm_tf32x3_wgmma_pipe's space; 0 and 1 otherwise) with PIPE 1: three stages,
//               and a chain spans CHAIN K tiles, the wgmma of tile kt+1 issued while those of
//               kt still run (below)
//   EARLY       (RING 0, gemm_tf32x3_wgmma_pipe's space; 0 otherwise) 1: the next tile's loads
//               issued as soon as the split before has emptied their registers, at the end of
//               an iteration instead of the start of the next (more registers live: ptxas
//               may spill)
//   SPLIT_K     (gemm_tf32x3_wgmma_splitk's space, PIPE 1; 1 otherwise) K cut into SPLIT_K
//               chunks of whole BK tiles along grid y, reduced in a fixed order (below)
//   SMALL_FIRST (the spaces of gemm_tf32x3_wgmma_promote and _promote_splitk; 0 otherwise) 1: a
//               K tile issues the small terms of all its k before its big products (below)
// Grid z walks the batch (z = min(batch, 65535); a block loops over b = blockIdx.z, + gridDim.z).
//
// 3xTF32 (include/tf32x3.cuh): each operand is split once, as its tile is stored to shared
// memory (include/split_tiles.cuh), into a big and a small TF32 tile; per 8 of k each warpgroup
// issues three wgmma, small A x big B, big A x small B, big A x big B. The tensor cores add with
// truncation, so one chain over all of K would drift (max error ~10x SGEMM's at K = 4096,
// measured on an H100): each K tile's chain goes into its own accumulators (the first wgmma
// with scale-d 0), added into the FP32 ones in registers, rounded to nearest, once it completes.
// The pipeline, per K tile kt: the wgmma of tile kt are issued (asynchronous); tile kt+1 (read
// into registers at the start of the iteration, with EARLY at the end of the one before, or by
// cp.async RING-1 iterations before) is
// split and stored into its stage while the tensor cores run; with a ring, tile kt+RING's
// copies are issued into the slot tile kt left; the warpgroup waits for its wgmma, adds the
// tile's sums into the accumulators, and a barrier publishes the new stage.
// With PIPE 1 that wait drains the tensor cores only at the end of a chain of CHAIN tiles: inside
// one, a warpgroup waits for all but its last group (the wgmma of tile kt-1, which read the
// stage tile kt+2 is split into, of three), so the next tile's wgmma queue behind the running
// ones into the same accumulators; the chain's sums are added into the FP32 ones at its end.
// The order within a tile: per 8 of k its three wgmma, small terms first; with SMALL_FIRST 1 the
// small terms of the whole tile (BK / 4 wgmma) and then its big products (BK / 8), Triton's
// order, so the small terms are added while the chain's sums are small (with CHAIN 1, in
// every tile).
//
// A thread notes whether any value it split had no finite TF32 part (inf, NaN, or beyond
// FLT_MAX when rounded); if any thread of the block did, the block computes its tile again in
// plain FP32 from global memory (include/fp32_dot.cuh: IEEE results, slow, only on such inputs).
// With PIPE 1 (TF32_LATE_CHECK) the split tests nothing: such a value leaves inf or NaN in the
// sums of its row or column (inf times 0 is NaN on the tensor cores as in FP32: the special
// value tests plant one), so a thread looks at its accumulators once, after the last tile. A
// finite product that overflows goes to the FP32 recomputation too, which gives its IEEE result.
//
// Split-K (SPLIT_K > 1): gemm_general_splitk.cu's scheme and workspace layout (see its header):
// grid y = SPLIT_K; a shape whose K is too short for SPLIT_K non-empty chunks uses fewer
// (`splits`; the blocks of empty chunks exit at once); only the first batch of a grid-z slot
// is split, later ones (batch > 65535) are computed whole by split 0. Each split stores its
// FP32 sums (float4 s of thread tid at [s * THREADS + tid] of its partial tile, st.global.cg)
// and counts in on the tile's counter (include/split_fixup.cuh); the last to count in sums the
// partials in the order 0, 1, ..., splits - 1 (bit-identical results on every run), resets the
// counter, and runs the epilogue. The late check (TF32_LATE_CHECK, required) looks at the
// reduced sums: inf or NaN in any split's partial is inf or NaN in the sum, and the block
// recomputes its tile in FP32 over all of K as without a split. The workspace is the kernel's
// last argument: partials float4 [gridDim.z][SPLIT_K][tiles][BM*BN/4], then counters unsigned
// [gridDim.z][tiles], zeroed before the first launch and left zeroed.
//
// Shared memory (dynamic, aligned here to 1 KB for the swizzle): STAGES (2, 3 with PIPE) x
// [A big, A small, B big, B small], each a K-major tile of BM or BN rows of BK floats, then RING
// raw slots of BM x BK + BN x BK floats.

#if !defined(BM) || !defined(BN) || !defined(BK) || !defined(WN)
#error "BM, BN, BK and WN must be defined"
#endif
#ifndef PIPE
#define PIPE 0
#endif
#if PIPE
#define STAGES 3
#define TF32_LATE_CHECK 1
#else
#define STAGES 2
#define CHAIN 1
#endif
#ifndef RING
#define RING 0
#endif
#ifndef EARLY
#define EARLY 0
#endif
#ifndef SPLIT_K
#define SPLIT_K 1
#endif
#ifndef SMALL_FIRST
#define SMALL_FIRST 0
#endif
#if SPLIT_K < 1 || SPLIT_K > 16 || (SPLIT_K > 1 && !TF32_LATE_CHECK)
#error "SPLIT_K must be 1 to 16, and above 1 only with PIPE 1 (the late check sees the sum)"
#endif
// The K range of one block: [kb, ke) with a split, [0, K) without.
#if SPLIT_K > 1
#define K_END ke
#define TILE_K(t) (kb + (t) * BK)
#else
#define K_END K
#define TILE_K(t) ((t) * BK)
#endif
#if BM % 64 != 0 || BN % WN != 0 || (WN != 64 && WN != 128 && WN != 256) ||                    \
    (BK != 16 && BK != 32) || RING == 1 || RING < 0
#error "BM must be a multiple of 64, WN 64, 128 or 256 dividing BN, BK 16 or 32, RING 0 or >= 2"
#endif
#if !defined(CHAIN) || CHAIN < 1
#error "CHAIN must be defined, at least 1"
#endif
#define WGS_N (BN / WN)
#define THREADS ((BM / 64) * WGS_N * 128)
#define ROW_BYTES (BK * 4)
#define A_TILE (BM * ROW_BYTES)
#define B_TILE (BN * ROW_BYTES)
#define STAGE_BYTES (2 * (A_TILE + B_TILE))
#define SLOT_BYTES (A_TILE + B_TILE)
#define WGMMA WG_CAT(wgmma_tf32_n, WN)

#include "gemm_layout.cuh" // TRANS_A, TRANS_B
#include "tile_order.cuh"  // TILE_ORDER_OF_BLOCK
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#include "wgmma_block.cuh" // the headers, WGMMA_KERNEL, WGMMA_BLOCK_SETUP, ...
#if SPLIT_K > 1
#include "split_fixup.cuh" // SPLIT_COUNT_IN
#endif

WGMMA_KERNEL
{
    extern __shared__ __align__(16) float wg_smem[];
    WGMMA_BLOCK_SETUP

    // op(A) rows are A's rows (k contiguous) unless A is stored transposed; op(B)^T rows are
    // B's rows (k contiguous) when B is stored transposed.
    SplitTile<BM, BK, TRANS_A == 0> ta;
    SplitTile<BN, BK, TRANS_B == 1> tb;
#if SPLIT_K > 1
    // Chunks of whole BK tiles; `splits` (1..SPLIT_K) of them are non-empty; a block of an
    // empty chunk has nothing to do in any batch (the whole block leaves: uniform).
    SPLIT_K_CHUNKS
    const int ks = blockIdx.y; // this block's chunk
    if (ks >= splits) return;
#endif

    for (int bz = blockIdx.z; bz < batch; bz += gridDim.z) {
#if SPLIT_K > 1
        // Only a slot's first batch is split (include/split_fixup.cuh).
        SPLIT_K_BATCH_RANGE(ks)
        const int num_tiles = (ke - kb + BK - 1) / BK; // this block's, over the setup's
#endif
        WGMMA_BATCH_SETUP(bz)
        bool finite = true;

#if FASTLOAD
        // Every row of the block's tiles inside A and B, and their pieces readable whole: the
        // tiles of K wholly inside are read without checks (SplitTile::load_inside).
        const bool inside = bm + BM <= M && bn + BN <= N &&
                            (!decltype(ta)::INSIDE_NEEDS_VEC || vec_a) &&
                            (!decltype(tb)::INSIDE_NEEDS_VEC || vec_b);
#endif
        // The ring's slots (RING > 0), after the split stages.
        const unsigned ring = smem_at + STAGES * STAGE_BYTES;
        unsigned char* const ring_ptr = smem + STAGES * STAGE_BYTES;
        // Reads tile t: into registers, or by cp.async into its ring slot.
        auto read = [&](int t) {
            if (RING == 0) {
#if FASTLOAD
                // A tile wholly inside both matrices skips every check (block-uniform).
                if (inside && TILE_K(t) + BK <= K_END) {
                    ta.load_inside(Ab, lda, bm, TILE_K(t), tid);
                    tb.load_inside(Bb, ldb, bn, TILE_K(t), tid);
                    return;
                }
#endif
                ta.load(Ab, lda, M, K_END, bm, TILE_K(t), vec_a, tid);
                tb.load(Bb, ldb, N, K_END, bn, TILE_K(t), vec_b, tid);
            } else {
                const int at = (t % (RING > 0 ? RING : 1)) * SLOT_BYTES;
                ta.issue(ring + at, ring_ptr + at, Ab, lda, M, K_END, bm, TILE_K(t), vec_a, tid);
                tb.issue(ring + at + A_TILE, ring_ptr + at + A_TILE, Bb, ldb, N, K_END, bn,
                         TILE_K(t), vec_b, tid);
            }
        };
        // Splits tile t (read before) into its stage.
        auto split = [&](int t) {
            unsigned char* const s = smem + (t % STAGES) * STAGE_BYTES;
            if (RING == 0) {
                ta.store(s, s + A_TILE, finite, tid);
                tb.store(s + 2 * A_TILE, s + 2 * A_TILE + B_TILE, finite, tid);
            } else {
                const unsigned char* const r = ring_ptr + (t % (RING > 0 ? RING : 1)) * SLOT_BYTES;
                ta.split_from(r, s, s + A_TILE, finite, tid);
                tb.split_from(r + A_TILE, s + 2 * A_TILE, s + 2 * A_TILE + B_TILE, finite, tid);
            }
        };

        if (RING == 0) {
            read(0);
        } else {
#pragma unroll
            for (int t = 0; t < RING; ++t) {
                if (t < num_tiles) read(t);
                cp_async_commit();
            }
            cp_async_wait<(RING > 0 ? RING - 1 : 0)>();
        }
        split(0);
#if EARLY
        if (RING == 0 && num_tiles > 1) read(1);
#endif
        fence_proxy_async();
        __syncthreads();

        for (int kt = 0; kt < num_tiles; ++kt) {
            const bool more = kt + 1 < num_tiles;
            if (RING == 0) {
#if !EARLY
                if (more) read(kt + 1);
#endif
            } else {
                // Tile kt+1's copies (this thread's own) are done.
                cp_async_wait<(RING > 1 ? RING - 2 : 0)>();
            }
            const unsigned st = smem_at + (kt % STAGES) * STAGE_BYTES;
            const unsigned a_big = st + wm0 * ROW_BYTES, a_small = a_big + A_TILE;
            const unsigned b_big = st + 2 * A_TILE + wn0 * ROW_BYTES, b_small = b_big + B_TILE;
            wgmma_fence();
#pragma unroll
            for (int kk = 0; kk < BK; kk += 8) {
                // Small terms first (include/tf32x3.cuh); the tile's chain (with PIPE, the
                // chain's first tile) starts from 0. With SMALL_FIRST, the big products follow
                // all of the tile's small terms (below).
                WGMMA(tile_acc, wgmma_desc<ROW_BYTES>(a_small + 4 * kk),
                      wgmma_desc<ROW_BYTES>(b_big + 4 * kk), kk > 0 || kt % CHAIN != 0);
                WGMMA(tile_acc, wgmma_desc<ROW_BYTES>(a_big + 4 * kk),
                      wgmma_desc<ROW_BYTES>(b_small + 4 * kk), 1);
                if (!SMALL_FIRST)
                    WGMMA(tile_acc, wgmma_desc<ROW_BYTES>(a_big + 4 * kk),
                          wgmma_desc<ROW_BYTES>(b_big + 4 * kk), 1);
            }
            if (SMALL_FIRST) {
#pragma unroll
                for (int kk = 0; kk < BK; kk += 8)
                    WGMMA(tile_acc, wgmma_desc<ROW_BYTES>(a_big + 4 * kk),
                          wgmma_desc<ROW_BYTES>(b_big + 4 * kk), 1);
            }
            wgmma_commit();
            // The stage of tile kt+1: its last reader, tile kt-1 (kt-2 with PIPE), is complete
            // (the wait and barrier that ended the previous iteration).
            if (more) split(kt + 1);
#if EARLY
            // Into the registers split(kt + 1) has just emptied: the loads fly during the wait
            // and the barrier below and the next tile's wgmma issue, not only the latter.
            if (RING == 0 && kt + 2 < num_tiles) read(kt + 2);
#endif
            if (RING > 0) {
                // Into the slot tile kt left (split in the previous iteration or the prologue).
                if (kt + RING < num_tiles) read(kt + RING);
                cp_async_commit();
            }
            fence_proxy_async();
#if PIPE
            if (kt % CHAIN != CHAIN - 1 && more) {
                wgmma_wait<1>();
            } else {
                wgmma_wait<0>();
#pragma unroll
                for (int i = 0; i < WN / 2; ++i) acc[i] += tile_acc[i];
            }
#else
            wgmma_wait<0>();
#pragma unroll
            for (int i = 0; i < WN / 2; ++i) acc[i] += tile_acc[i];
#endif
            __syncthreads();
        }
        if (RING > 0) cp_async_wait<0>(); // (empty groups past the last tile)
#if SPLIT_K > 1
        if (split_batch) {
            // Partials float4 [gridDim.z][SPLIT_K][tiles][BM*BN/4], then counters
            // unsigned [gridDim.z][tiles]; this thread's float4 s at [s * THREADS + tid].
            const long long tiles = (long long)tiles_m * tiles_n;
            const long long tsz = BM * BN / 4;
            float4* const part =
                reinterpret_cast<float4*>(workspace) +
                ((long long)blockIdx.z * SPLIT_K * tiles + blockIdx.x) * tsz + tid;
            unsigned* const counter =
                reinterpret_cast<unsigned*>(workspace +
                                            (long long)gridDim.z * SPLIT_K * tiles * (BM * BN)) +
                (long long)blockIdx.z * tiles + blockIdx.x;
            float4* const mine = part + (long long)ks * tiles * tsz;
#pragma unroll
            for (int s = 0; s < WN / 8; ++s)
                __stcg(mine + s * THREADS,
                       make_float4(acc[4 * s], acc[4 * s + 1], acc[4 * s + 2], acc[4 * s + 3]));
            SPLIT_COUNT_IN(last, counter, splits - 1)
            if (!last) continue; // block-uniform: the next batch (split 0) or the end
            __threadfence();
            // The sum in the order 0, 1, ..., splits - 1, whichever block runs it (its own
            // partial read back as stored), each split's float4 s loaded together.
            for (int z = 0; z < splits; ++z) {
                const float4* const src = part + (long long)z * tiles * tsz;
                float4 v[WN / 8];
#pragma unroll
                for (int s = 0; s < WN / 8; ++s) v[s] = __ldcg(src + s * THREADS);
#pragma unroll
                for (int s = 0; s < WN / 8; ++s) {
                    acc[4 * s] = z == 0 ? v[s].x : acc[4 * s] + v[s].x;
                    acc[4 * s + 1] = z == 0 ? v[s].y : acc[4 * s + 1] + v[s].y;
                    acc[4 * s + 2] = z == 0 ? v[s].z : acc[4 * s + 2] + v[s].z;
                    acc[4 * s + 3] = z == 0 ? v[s].w : acc[4 * s + 3] + v[s].w;
                }
            }
            // Every split of the tile has counted in: the next launch finds the counter 0.
            if (tid == 0) atomicExch(counter, 0u);
        }
#endif
#if TF32_LATE_CHECK
        // A value without a finite TF32 part left inf or NaN in its row's or column's sums.
#pragma unroll
        for (int i = 0; i < WN / 2; ++i) finite &= fabsf(acc[i]) <= 3.402823466e38f;
#endif
        // The next batch's first stores must not overwrite stages a warpgroup still reads; the
        // barrier also tells the block whether to recompute.
        const bool recompute = __syncthreads_or(!finite);

        WGMMA_STORE_C
    }
}
#else
// wgmma exists only on sm_90a: the space offers the family on sm_90 alone (`sm == 90`, compiled
// for sm_90a), and elsewhere the kernel compiles (for fingerprints and dry runs of every arch)
// to one that stops the launch.
GEMM_FULL_TRAP_KERNEL
#endif
