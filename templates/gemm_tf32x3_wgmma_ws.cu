// FP32-accurate SGEMM on Hopper's warpgroup tensor cores (3xTF32 on wgmma.mma_async, sm_90a)
// with warp-specialized roles, the full cuBLAS-like interface:
//   C_b = alpha * op(A_b) op(B_b) + beta * C_b,  b = 0 .. batch-1,  row-major convention,
//   A_b = A + b * strideA, B_b = B + b * strideB, C_b = C + b * strideC (strides in elements).
// Correct for every M, N, K >= 1, every lda / ldb / ldc >= the row length, every stride >= 0
// and every 4-byte aligned pointer (16-byte loads only where the base and ld allow them). With
// beta == 0 C is not read.
//
// Parameters (#defined by the tuner; TRANS_A / TRANS_B come from the problem):
//   TRANS_A, TRANS_B  the layouts (include/gemm_layout.cuh)
//   BM x BN     block tile: (BM/64) x (BN/WN) consumer warpgroups, each computing 64 x WN of it
//               with wgmma m64nWNk8 (WN 64, 128 or 256), and one producer warpgroup
//   BK          k of one stage: 32 (128-byte swizzled rows) or 16 (64-byte)
//   STAGES      split stages in shared memory (2 to 7): the producer runs up to STAGES tiles
//               ahead of the tensor cores
//   RING        how the producer reads tiles: 0 into registers, one tile ahead; 3 or more by
//               cp.async into a ring of RING raw slots in shared memory, RING-1 tiles ahead
//   CHAIN       K tiles of one wgmma chain, rounded into the FP32 sums at its end
//   SMALL_FIRST 1: a K tile issues the small terms of all its k before its big products
//               (Triton's order); 0: per 8 of k, small terms first
//   GROUP_M     block rasterization (include/tile_order.cuh)
// Grid z walks the batch (z = min(batch, 65535); a block loops over b = blockIdx.z, + gridDim.z).
//
// gemm_tf32x3_wgmma's threads each load, split and store their share of the next tile, then
// wait for the tensor cores and meet at a barrier, every K tile: ncu on an H100 found the
// tensor pipe active 44-51% of the time, the warps stalled on the loads and the waits
// (results/tf32x3-pipe2-h100.md). Here the roles are apart. The producer warpgroup reads each
// tile into registers (one tile ahead), splits it into big and small TF32 tiles (include/
// tf32x3.cuh, include/split_tiles.cuh) in the next free stage, and announces it; the consumer
// warpgroups only issue wgmma, three per 8 of k (small A x big B, big A x small B, big A x big
// B), and hand each stage back once the wgmma that read it are complete. Named barriers
// (include/named_barrier.cuh) carry both signals, stage s full at FULL_BAR + s (the producer
// arrives after its stores and fence.proxy.async; the consumers sync) and empty at EMPTY_BAR +
// s (the consumers arrive after wgmma.wait_group; the producer syncs before it overwrites the
// stage), each with every thread of the block counted, so the producer may fill every free
// stage while the tensor cores work.
//
// A producer that reads into registers keeps one tile in flight, and on an H200 it set the pace
// (session 42: every STAGES alike, 0.88-1.26x cuBLAS where gemm_tf32x3_wgmma_promote reaches
// 1.1-1.8x); with a ring each producer thread copies its pieces RING-1 tiles ahead and later
// splits exactly those pieces (include/split_tiles.cuh), so its own cp.async wait is all the
// ordering the ring needs, and it holds no tile in registers. (setmaxnreg, the producer's
// registers given to the consumers, made ptxas 12.9 spill in both roles: the consumers stayed
// at the launch's 168, the producer's 40 were too few.)
//
// The tensor cores add with truncation, so a chain over all of K would drift: a chain of CHAIN
// tiles goes into its own accumulators (its first wgmma with scale-d 0), and is added into the
// FP32 ones, rounded to nearest, when it completes. Inside a chain a consumer waits for all but
// its newest group (the previous tile's, whose stage it then hands back), so the next tile's
// wgmma queue behind the running ones.
//
// Special values (TF32_LATE_CHECK): the split tests nothing; an inf or NaN input, or a finite
// one that rounds past FLT_MAX, leaves inf or NaN in the sums of its row or column, so each
// consumer looks at its accumulators after the last tile, and a block where any did computes
// its tile again in plain FP32 from global memory (include/fp32_dot.cuh: IEEE results, as
// cuBLAS's SGEMM). A finite product that overflows goes there too.
//
// Shared memory (dynamic, aligned here to 1 KB for the swizzle): STAGES x [A big, A small,
// B big, B small], each a K-major tile of BM or BN rows of BK floats, then RING raw slots of
// BM x BK + BN x BK floats.

#if !defined(BM) || !defined(BN) || !defined(BK) || !defined(WN) || !defined(STAGES) ||         \
    !defined(CHAIN)
#error "BM, BN, BK, WN, STAGES and CHAIN must be defined"
#endif
#ifndef SMALL_FIRST
#define SMALL_FIRST 1
#endif
#ifndef RING
#define RING 0
#endif
#if BM % 64 != 0 || BN % WN != 0 || (WN != 64 && WN != 128 && WN != 256) ||                    \
    (BK != 16 && BK != 32) || STAGES < 2 || STAGES > 7 || CHAIN < 1 || (RING != 0 && RING < 3)
#error "BM must be a multiple of 64, WN 64, 128 or 256 dividing BN, BK 16 or 32, STAGES 2 to 7, CHAIN >= 1, RING 0 or >= 3"
#endif
#define TF32_LATE_CHECK 1
#define WGS_N (BN / WN)
// The consumer warpgroups' threads (0 .. CONSUMERS-1), then the producer's 128: THREADS is the
// producer's (the threads that share the copies of include/split_tiles.cuh).
#define CONSUMERS ((BM / 64) * WGS_N * 128)
#define THREADS 128
#define BLOCK_THREADS (CONSUMERS + THREADS)
#define ROW_BYTES (BK * 4)
#define A_TILE (BM * ROW_BYTES)
#define B_TILE (BN * ROW_BYTES)
#define STAGE_BYTES (2 * (A_TILE + B_TILE))
#define SLOT_BYTES (A_TILE + B_TILE)
#define WGMMA WG_CAT(wgmma_tf32_n, WN)
// Stage s is full at barrier FULL_BAR + s and empty at EMPTY_BAR + s (at most 15).
#define FULL_BAR 1
#define EMPTY_BAR (1 + STAGES)

#include "gemm_layout.cuh" // TRANS_A, TRANS_B
#include "tile_order.cuh"  // TILE_ORDER_OF_BLOCK
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#include "wgmma_block.cuh"   // the headers, WGMMA_KERNEL, WGMMA_BLOCK_SETUP, ...
#include "named_barrier.cuh" // named_sync, named_arrive

WGMMA_KERNEL
{
    extern __shared__ __align__(16) float wg_smem[];
    WGMMA_BLOCK_SETUP

    // Each role runs its own loop over the batch; the two meet at the barrier that ends a
    // batch (barrier 0 from two places: each warp's role is uniform).
    if (tid >= CONSUMERS) {
        const int ptid = tid - CONSUMERS;
        // op(A) rows are A's rows (k contiguous) unless A is stored transposed; op(B)^T rows
        // are B's rows (k contiguous) when B is stored transposed.
        SplitTile<BM, BK, TRANS_A == 0> ta;
        SplitTile<BN, BK, TRANS_B == 1> tb;
        for (int bz = blockIdx.z; bz < batch; bz += gridDim.z) {
            GEMM_BATCH_MATRICES(bz)
            const bool vec_a = (reinterpret_cast<unsigned long long>(Ab) & 15) == 0 && lda % 4 == 0;
            const bool vec_b = (reinterpret_cast<unsigned long long>(Bb) & 15) == 0 && ldb % 4 == 0;
            bool finite = true; // (the split leaves it alone: TF32_LATE_CHECK)
#if RING > 0
            const unsigned ring = smem_at + STAGES * STAGE_BYTES;
            unsigned char* const ring_ptr = smem + STAGES * STAGE_BYTES;
            // Tile t's copies (this thread's pieces) into its ring slot.
            auto issue = [&](int t) {
                const int at = (t % RING) * SLOT_BYTES;
                ta.issue(ring + at, ring_ptr + at, Ab, lda, M, K, bm, t * BK, vec_a, ptid);
                tb.issue(ring + at + A_TILE, ring_ptr + at + A_TILE, Bb, ldb, N, K, bn, t * BK,
                         vec_b, ptid);
            };
#pragma unroll
            for (int t = 0; t < RING - 1; ++t) {
                if (t < num_tiles) issue(t);
                cp_async_commit();
            }
            for (int t = 0; t < num_tiles; ++t) {
                // Into the slot of tile t-1, which this thread split in the last iteration.
                if (t + RING - 1 < num_tiles) issue(t + RING - 1);
                cp_async_commit();
                cp_async_wait<(RING > 0 ? RING - 1 : 0)>(); // tile t's pieces have landed
                const int s = t % STAGES;
                if (t >= STAGES) named_sync(EMPTY_BAR + s, BLOCK_THREADS);
                unsigned char* const st = smem + s * STAGE_BYTES;
                const unsigned char* const r = ring_ptr + (t % RING) * SLOT_BYTES;
                ta.split_from(r, st, st + A_TILE, finite, ptid);
                tb.split_from(r + A_TILE, st + 2 * A_TILE, st + 2 * A_TILE + B_TILE, finite, ptid);
                fence_proxy_async();
                named_arrive(FULL_BAR + s, BLOCK_THREADS);
            }
            cp_async_wait<0>(); // (empty groups past the last tile)
#else
            ta.load(Ab, lda, M, K, bm, 0, vec_a, ptid);
            tb.load(Bb, ldb, N, K, bn, 0, vec_b, ptid);
            for (int t = 0; t < num_tiles; ++t) {
                const int s = t % STAGES;
                // The consumers handed back what the stage held (tile t - STAGES); the stages
                // start empty in every batch (the barrier that ended the last one).
                if (t >= STAGES) named_sync(EMPTY_BAR + s, BLOCK_THREADS);
                unsigned char* const st = smem + s * STAGE_BYTES;
                ta.store(st, st + A_TILE, finite, ptid);
                tb.store(st + 2 * A_TILE, st + 2 * A_TILE + B_TILE, finite, ptid);
                // Into the registers the stores have just emptied: the loads fly while the
                // producer waits for the next free stage.
                if (t + 1 < num_tiles) {
                    ta.load(Ab, lda, M, K, bm, (t + 1) * BK, vec_a, ptid);
                    tb.load(Bb, ldb, N, K, bn, (t + 1) * BK, vec_b, ptid);
                }
                fence_proxy_async();
                named_arrive(FULL_BAR + s, BLOCK_THREADS);
            }
#endif
            // Every stage is free again (the consumers waited for all their wgmma) before the
            // next batch's tiles go in.
            __syncthreads_or(0);
        }
    } else {
        for (int bz = blockIdx.z; bz < batch; bz += gridDim.z) {
            WGMMA_BATCH_SETUP(bz)
            bool finite = true;
            int released = 0; // tiles below it were handed back (or need not be)
            for (int kt = 0; kt < num_tiles; ++kt) {
                const int s = kt % STAGES;
                named_sync(FULL_BAR + s, BLOCK_THREADS);
                const unsigned st = smem_at + s * STAGE_BYTES;
                const unsigned a_big = st + wm0 * ROW_BYTES, a_small = a_big + A_TILE;
                const unsigned b_big = st + 2 * A_TILE + wn0 * ROW_BYTES, b_small = b_big + B_TILE;
                wgmma_fence();
#pragma unroll
                for (int kk = 0; kk < BK; kk += 8) {
                    // The chain's first wgmma starts from 0.
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
                int done; // tiles whose wgmma are complete: those below it
                if (kt % CHAIN != CHAIN - 1 && kt + 1 < num_tiles) {
                    wgmma_wait<1>();
                    done = kt;
                } else {
                    wgmma_wait<0>();
#pragma unroll
                    for (int i = 0; i < WN / 2; ++i) acc[i] += tile_acc[i];
                    done = kt + 1;
                }
                // The producer waits only for stages it will fill again in this batch.
                for (; released < done; ++released)
                    if (released + STAGES < num_tiles)
                        named_arrive(EMPTY_BAR + released % STAGES, BLOCK_THREADS);
            }
            // A value without a finite TF32 part left inf or NaN in its row's or column's sums.
#pragma unroll
            for (int i = 0; i < WN / 2; ++i) finite &= fabsf(acc[i]) <= 3.402823466e38f;
            // The barrier that ends the batch (the producer's too) tells the block whether to
            // recompute.
            const bool recompute = __syncthreads_or(!finite);
            WGMMA_STORE_C
        }
    }
}
#else
// wgmma exists only on sm_90a: the space offers the family on sm_90 alone (`sm == 90`, compiled
// for sm_90a), and elsewhere the kernel compiles (for fingerprints and dry runs of every arch)
// to one that stops the launch.
GEMM_FULL_TRAP_KERNEL
#endif
