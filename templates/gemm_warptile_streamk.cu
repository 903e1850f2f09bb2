// Stream-K SGEMM, deterministic (issue 17): the warp-tiled kernel of gemm_warptile.cu with the
// MAC iterations of the output tiles spread evenly over a fixed number of blocks, for shapes
// whose tile count makes a partial last wave. C[M x N] = A[M x K] * B[K x N], all row-major.
// Correct for every M, N, K >= 1; bit-for-bit the same result on every run.
//
// The main loop (wt_tile_range) is gemm_warptile_splitk_det.cu's: the warp-tile pipeline of
// include/warptile_mainloop.cuh with the same copies. Here it runs over a range [kt0, kt1) of
// a tile's BK iterations.
//
// Parameters (all #defined by the tuner):
//   BM, BN, BK, WM, WN, WNITER, TM, TN, STAGES, PAD, MIN_BLOCKS
//               as in gemm_warptile_splitk_det.cu (no GROUP_M: tiles in row-major order)
//   SK_BLOCKS   the stream-K blocks, about the blocks the device runs at once (e.g. 132 SMs x
//               1 or 2 blocks per SM); the kernel reads no device property
//
// Work partition ("data-parallel + two-tile stream-K", as CUTLASS's stream-K does it), from
// T tiles of I = ceil(K / BK) iterations each (the space's [launch] grid computes the same):
//   DP  = max(T / SK_BLOCKS - 1, 0) * SK_BLOCKS  whole tiles, data-parallel: one block each
//   S   = T - DP                                 stream-K tiles (the first S of row-major
//                                                order), S * I iterations in all: W = S * I
//   G   = min(SK_BLOCKS, W)                      stream-K blocks (no block without work)
//   grid = G + DP blocks; blocks 0..G-1 are the stream-K ones (dispatched first: their fix-up
//   tails overlap the data-parallel blocks), block G + d computes tile S + d over all of K.
// Stream-K block b takes the iterations [b*W/G, (b+1)*W/G) of the linearized (tile, k-iteration)
// space, tile-major, in order: the end of one tile, whole tiles, the start of another. With
// S >= G every block gets between I and 2I iterations, so a tile has at most 2 contributors;
// with S < G (few tiles) at most ceil(I / floor(W/G)) + 1, like a split-K. A segment that
// covers a whole tile writes C directly.
//
// Fix-up ("last block reduces", as gemm_warptile_splitk_det.cu; no block waits for another, so
// nothing depends on which blocks are resident together): a block that covers only part of a
// tile stores its partial accumulators in its own workspace slot (st.global.cg), fences
// (__threadfence), synchronises, and thread 0 counts it in with an atomicAdd on the tile's
// counter. The block that counts last (it sees contributors - 1) fences again and sums the
// tile's partials from 0.0f in the fixed order of their k ranges (contributor blocks in
// ascending order), all read back with ld.global.cg, writes C with plain stores and resets
// the counter. The partition depends only on (M, N, K, SK_BLOCKS), so which block reduces
// varies from run to run, but the partials, the sum and its order do not.
// Only the first and the last segment of a block's range can be partial (those between are
// whole tiles), so a block needs two slots: slot 0 for the tile its range starts in, slot 1
// for the tile it ends in. A tile's contributors are the blocks from blk(t*I) to
// blk((t+1)*I - 1), where blk(x) = ((x + 1) * G - 1) / W is the block whose range holds x.
//
// Workspace (the kernel's last argument; the space's workspace_bytes, 16-byte aligned):
//   partials  float4 [G][2][BM*BN/4]: slot s of block b, float4 j of thread tid at
//             [b][s][j * THREADS + tid] (coalesced)
//   counters  unsigned [S], after the partials: how many contributors of a tile have stored
// It must be zeroed before the first launch (workspace_zero = "once"); the kernel leaves it
// zeroed (the reducing block resets the tile's counter; partials need no initialisation).
// Launches that share a workspace must not overlap (one stream).
//
// Main loop, shared memory, loaders, edge handling and the C epilogue: as described in
// gemm_warptile_splitk_det.cu (cp.async multi-stage pipeline on sm_80+, register-staged
// copies on older archs; interior tiles copied unchecked, edge tiles zero-filled; the K range
// of a segment is whole BK iterations, the last one clipped at K).

#include "cp_async.cuh"
#include "warptile_mainloop.cuh" // the warp tile's geometry (THREADS, FRAG_M, ...)
#include "warptile_copies.cuh"   // the shared tiles (AS_LD, ...) and their copies
#include "split_fixup.cuh"       // SPLIT_COUNT_IN
#ifndef SK_BLOCKS
#error "SK_BLOCKS must be defined"
#endif
#if SK_BLOCKS < 1
#error "SK_BLOCKS must be at least 1"
#endif

// The MAC iterations [k_begin, k_end) of the tile at (bm, bn) into acc (zeroed first):
// k_begin is a multiple of BK, k_end one too or K. Copied from gemm_warptile_splitk_det.cu's
// kernel body (from `tid` to the end of its main loop), with the tile and the K range as
// arguments; no barrier on entry: the caller makes the shared stages free before calling.
__device__ __forceinline__ void wt_tile_range(int M, int N, int K, const float* __restrict__ A,
                                              const float* __restrict__ B, float* const As,
                                              float* const Bs, const int bm, const int bn,
                                              const int k_begin, const int k_end,
                                              float (&acc)[FRAG_M][FRAG_N])
{
    const int num_tiles = (k_end - k_begin + BK - 1) / BK;

    const int tid = threadIdx.x;
    // ---- the copies (B unchecked on interior tiles, aligned or not) ----
    WARPTILE_COPIES_ANY_B

    // ---- this thread's place in the warp tile ----
    WARPTILE_THREAD_PLACE

    WARPTILE_ZERO_ACC(acc)
    WARPTILE_MAINLOOP(acc)
}

// Plain stores of the tile at (bm, bn) from acc (gemm_warptile_splitk_det.cu's epilogue).
__device__ __forceinline__ void wt_store_tile(int M, int N, float* __restrict__ C, const int bm,
                                              const int bn, const float (&acc)[FRAG_M][FRAG_N])
{
    const int tid = threadIdx.x;
    WARPTILE_THREAD_PLACE
    WARPTILE_EPILOGUE(acc, WARPTILE_STORE4)
}

// The stream-K block whose iteration range holds iteration x of W (ranges [b*W/G, (b+1)*W/G)).
__device__ __forceinline__ int sk_block_of(long long x, long long work, int g)
{
    return (int)(((x + 1) * g - 1) / work);
}

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
KERNEL_NAME(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
            float* __restrict__ C, float* workspace)
{
    // ---- the partition (the space's derived DP_TILES, SK_TILES, SK_G compute the same) ----
    const int tiles_n = (N + BN - 1) / BN;
    const int tiles_m = (M + BM - 1) / BM;
    const int tiles = tiles_m * tiles_n;
    const int iters = (K + BK - 1) / BK;
    const int dp_tiles = max(tiles / SK_BLOCKS - 1, 0) * SK_BLOCKS;
    const int sk_tiles = tiles - dp_tiles;
    const long long work = (long long)sk_tiles * iters;
    const int g = (int)min((long long)SK_BLOCKS, work);
    const int bid = blockIdx.x;
    if (bid >= g + dp_tiles) return; // a larger grid than the space's: nothing to do

    // This block's range of the linearized (tile, iteration) space: a data-parallel block's
    // is one whole tile.
    long long x, x_end;
    if (bid < g) {
        x = (long long)bid * work / g;
        x_end = (long long)(bid + 1) * work / g;
    } else {
        x = (long long)(sk_tiles + (bid - g)) * iters;
        x_end = x + iters;
    }
    const int tid = threadIdx.x;
    float4* const part = reinterpret_cast<float4*>(workspace);
    unsigned* const counters =
        reinterpret_cast<unsigned*>(workspace + (long long)g * 2 * (BM * BN));

    extern __shared__ __align__(16) float wt_smem[];
    float* const As = wt_smem;                     // [STAGES][BK][AS_LD]
    float* const Bs = wt_smem + STAGES * AS_STAGE; // [STAGES][BK][BN]
    float acc[FRAG_M][FRAG_N];
    // Segments: the part of one tile in this block's range, in order. All conditions below
    // are block-uniform, so every barrier is reached by the whole block.
    for (int seg = 0; x < x_end; ++seg) {
        const int tile = (int)(x / iters);
        const int kt0 = (int)(x - (long long)tile * iters);
        const int kt1 = (int)min((long long)iters, kt0 + (x_end - x));
        x += kt1 - kt0;
        const int tile_m = tile / tiles_n;
        const int tile_n = tile - tile_m * tiles_n;
        const int bm = tile_m * BM;
        const int bn = tile_n * BN;
        // The previous segment's last fragment reads (of a stage past its end) and its
        // reduction are done before this one's copies overwrite the stages.
        if (seg > 0) __syncthreads();
        wt_tile_range(M, N, K, A, B, As, Bs, bm, bn, kt0 * BK, min(K, kt1 * BK), acc);

        if (kt0 > 0 || kt1 < iters) {
            // ---- a partial tile: store, count in, and the last contributor reduces ----
            const long long t0 = (long long)tile * iters;
            const int first = sk_block_of(t0, work, g);
            const int last_b = sk_block_of(t0 + iters - 1, work, g);
            // This block's slot: 0 for the tile its range starts in, 1 for the one it ends in.
            float4* const mine =
                part + ((long long)bid * 2 + (seg > 0 ? 1 : 0)) * (BM * BN / 4) + tid;
            WARPTILE_STORE_PARTIAL(mine, acc)
            SPLIT_COUNT_IN(last, counters + tile, last_b - first)
            if (!last) continue; // block-uniform
            __threadfence();
            // Contributor by contributor in k order, all of this thread's float4s at once (so
            // their loads are in flight together); this block's own partial is read back too
            // (bit for bit what it stored). The sum starts from 0.0f, whatever block runs it.
#pragma unroll
            for (int i = 0; i < FRAG_M; ++i)
#pragma unroll
                for (int j = 0; j < FRAG_N; ++j) acc[i][j] = 0.0f;
            for (int c = first; c <= last_b; ++c) {
                // Block c's slot for this tile: 0 if its range starts in it, else 1.
                const int slot = ((long long)c * work / g) / iters == tile ? 0 : 1;
                const float4* const src = part + ((long long)c * 2 + slot) * (BM * BN / 4) + tid;
                WARPTILE_LOAD_PARTIAL(src, acc, +=)
            }
            // Every contributor of this tile has counted in: no one else touches the counter
            // in this launch, and the next launch (stream-ordered) finds it zero.
            if (tid == 0) atomicExch(counters + tile, 0u);
        }
        wt_store_tile(M, N, C, bm, bn, acc);
    }
}
