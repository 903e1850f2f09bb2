// FP32-accurate SGEMM on Hopper's warpgroup tensor cores (3xTF32 on wgmma.mma_async, sm_90a) with
// A from registers, the full cuBLAS-like interface:
//   C_b = alpha * op(A_b) op(B_b) + beta * C_b,  b = 0 .. batch-1,  row-major convention,
//   A_b = A + b * strideA, B_b = B + b * strideB, C_b = C + b * strideC (strides in elements).
// Correct for every M, N, K >= 1, every lda / ldb / ldc >= the row length, every stride >= 0
// and every 4-byte aligned pointer (16-byte copies only where the base and ld allow them). With
// beta == 0 C is not read.
//
// Parameters (#defined by the tuner; TRANS_A / TRANS_B come from the problem):
//   TRANS_A, TRANS_B  the layouts (include/gemm_layout.cuh)
//   BM x BN     block tile: (BM/64) x (BN/WN) warpgroups, each computing 64 x WN of it with
//               wgmma m64nWNk8 (WN 64 or 128)
//   BK          k of one tile: 32 (128-byte swizzled rows of B) or 16 (64-byte)
//   RING        cp.async ring slots (3 or more): tiles are copied RING-1 ahead
//   GROUP_M     block rasterization (include/tile_order.cuh)
// Grid z walks the batch (z = min(batch, 65535); a block loops over b = blockIdx.z, + gridDim.z).
//
// Where gemm_tf32x3_wgmma splits both operands into shared memory and reads them through
// descriptors, this one keeps A raw in the ring (include/raw_frag.cuh) and each thread reads its
// own A fragments into registers and splits them there (include/tf32x3.cuh): A costs shared
// memory one write and one read, not two split stores and three wgmma reads per 8 of k. B is
// split once into big and small K-major swizzled tiles (include/split_tiles.cuh), read through
// descriptors. Per 8 of k three wgmma: small A x big B, big A x small B, big A x big B. The
// tensor cores add with truncation: each K tile's chain goes into its own accumulators (first
// wgmma with scale-d 0), added into the FP32 ones, rounded to nearest, once it completes.
//
// The pipeline, per K tile kt (at its start: B of kt split in its stage, A of kt in registers,
// the raw copies of kt+1 visible to the block): the wgmma of kt are issued; the thread reads
// its raw A fragments of kt+1, issues the copies of kt+RING-1 into the slot kt-1 left, waits for
// its copies of kt+2 and splits its pieces of B of kt+1 into the other stage (whose last
// readers, the wgmma of kt-1, every warpgroup waited for before the last barrier); then it
// waits for its wgmma, adds the tile's sums, splits the A fragments of kt+1, and a barrier ends
// the tile.
//
// A thread notes whether any value it split had no finite TF32 part (inf, NaN, or beyond
// FLT_MAX when rounded); if any thread of the block did, the block computes its tile again in
// plain FP32 from global memory (include/fp32_dot.cuh: IEEE results, slow, only on such inputs).
//
// Shared memory (dynamic, aligned here to 1 KB for the swizzle): 2 stages of [B big, B small]
// (K-major tiles of BN rows, 128- or 64-byte swizzle), then RING slots of [A raw (BM x BK),
// B raw (BN x BK)].

#if !defined(BM) || !defined(BN) || !defined(BK) || !defined(WN) || !defined(RING)
#error "BM, BN, BK, WN and RING must be defined"
#endif
#if BM % 64 != 0 || BN % WN != 0 || (WN != 64 && WN != 128) ||                                  \
    (BK != 16 && BK != 32) || RING < 3
#error "BM must be a multiple of 64, WN 64 or 128 dividing BN, BK 16 or 32, RING >= 3"
#endif
#define WGS_N (BN / WN)
#define THREADS ((BM / 64) * WGS_N * 128)
#define ROW_BYTES (BK * 4)
#define B_TILE (BN * BK * 4)
#define STAGE_BYTES (2 * B_TILE)
#define A_RAW (BM * BK * 4)
#define SLOT_BYTES (A_RAW + B_TILE)
#define KSTEPS (BK / 8)
#define WGMMA_RS WG_CAT(wgmma_tf32_rs_n, WN)

#include "gemm_layout.cuh" // TRANS_A, TRANS_B
#include "tile_order.cuh"  // TILE_ORDER_OF_BLOCK
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#include "wgmma_block.cuh" // the headers, WGMMA_KERNEL, WGMMA_BLOCK_SETUP, ...
#include "raw_frag.cuh"    // RawFragTile

WGMMA_KERNEL
{
    extern __shared__ __align__(16) float wg_smem[];
    WGMMA_BLOCK_SETUP
    const int kt0 = lane & 3;                                   // its k in each 8

    // op(A) rows are A's rows (k contiguous) unless A is stored transposed; op(B)^T rows are
    // B's rows (k contiguous) when B is stored transposed.
    RawFragTile<BM, BK, TRANS_A == 0> ta;
    SplitTile<BN, BK, TRANS_B == 1> tb;
    const unsigned ring = smem_at + 2 * STAGE_BYTES;
    unsigned char* const ring_ptr = smem + 2 * STAGE_BYTES;

    for (int bz = blockIdx.z; bz < batch; bz += gridDim.z) {
        WGMMA_BATCH_SETUP(bz)
        bool finite = true;
        // This thread's A fragments: raw (read ahead), and split (the wgmma's operands).
        float a_next[KSTEPS][4];
        unsigned a_big[KSTEPS][4], a_small[KSTEPS][4];

        // Issues the copies of tile t into its slot.
        auto read = [&](int t) {
            const int at = (t % RING) * SLOT_BYTES;
            ta.issue(ring + at, ring_ptr + at, Ab, lda, M, K, bm, t * BK, vec_a, tid);
            tb.issue(ring + at + A_RAW, ring_ptr + at + A_RAW, Bb, ldb, N, K, bn, t * BK, vec_b,
                     tid);
        };
        // Reads this thread's raw A fragments of tile t (its copies visible to the block).
        auto read_a = [&](int t) {
            const unsigned char* const s = ring_ptr + (t % RING) * SLOT_BYTES;
#pragma unroll
            for (int j = 0; j < KSTEPS; ++j) {
                a_next[j][0] = ta.at(s, row0, 8 * j + kt0);
                a_next[j][1] = ta.at(s, row0 + 8, 8 * j + kt0);
                a_next[j][2] = ta.at(s, row0, 8 * j + kt0 + 4);
                a_next[j][3] = ta.at(s, row0 + 8, 8 * j + kt0 + 4);
            }
        };
        // Splits the fragments read ahead into the wgmma's operands (their wgmma complete).
        auto split_a = [&]() {
#pragma unroll
            for (int j = 0; j < KSTEPS; ++j)
#pragma unroll
                for (int e = 0; e < 4; ++e)
                    finite &= split_tf32(a_next[j][e], a_big[j][e], a_small[j][e]);
        };
        // Splits this thread's pieces of B of tile t (its copies waited for) into its stage.
        auto split_b = [&](int t) {
            unsigned char* const s = smem + (t & 1) * STAGE_BYTES;
            tb.split_from(ring_ptr + (t % RING) * SLOT_BYTES + A_RAW, s, s + B_TILE, finite,
                          tid);
        };

#pragma unroll
        for (int t = 0; t < RING - 1; ++t) {
            if (t < num_tiles) read(t);
            cp_async_commit();
        }
        cp_async_wait<RING - 3>(); // tiles 0 and 1
        split_b(0);
        fence_proxy_async();
        __syncthreads();
        read_a(0);
        split_a();

        for (int kt = 0; kt < num_tiles; ++kt) {
            const bool more = kt + 1 < num_tiles;
            const unsigned b_big = smem_at + (kt & 1) * STAGE_BYTES + wn0 * ROW_BYTES;
            const unsigned b_small = b_big + B_TILE;
            wgmma_fence();
#pragma unroll
            for (int j = 0; j < KSTEPS; ++j) {
                // Small terms first (include/tf32x3.cuh); the tile's chain starts from 0.
                WGMMA_RS(tile_acc, a_small[j], wgmma_desc<ROW_BYTES>(b_big + 32 * j), j > 0);
                WGMMA_RS(tile_acc, a_big[j], wgmma_desc<ROW_BYTES>(b_small + 32 * j), 1);
                WGMMA_RS(tile_acc, a_big[j], wgmma_desc<ROW_BYTES>(b_big + 32 * j), 1);
            }
            wgmma_commit();
            if (more) read_a(kt + 1);
            // Into the slot tile kt-1 left (its A read and its B split before the last barrier).
            if (kt + RING - 1 < num_tiles) read(kt + RING - 1);
            cp_async_commit();
            cp_async_wait<RING - 3>(); // this thread's copies of tiles up to kt+2
            // The stage of tile kt+1: its last readers, the wgmma of kt-1, are complete.
            if (more) split_b(kt + 1);
            fence_proxy_async();
            wgmma_wait<0>();
#pragma unroll
            for (int i = 0; i < WN / 2; ++i) acc[i] += tile_acc[i];
            if (more) split_a();
            __syncthreads();
        }
        cp_async_wait<0>(); // (empty groups past the last tile)
        // The next batch's first copies must not overwrite slots a thread still reads; the
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
