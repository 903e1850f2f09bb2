// General strided-batched SGEMM with deterministic split-K: gemm_general.cu's kernel (the full
// cuBLAS-like interface, same main loop, loaders and epilogue) with K cut into SPLIT_K chunks
// along grid y, whose partial tiles are reduced in a fixed order through a workspace, as in
// gemm_warptile_splitk_det.cu. The result is bit-for-bit the same on every run.
//   C_b = alpha * op(A_b) op(B_b) + beta * C_b,  b = 0 .. batch-1,  row-major convention,
//   A_b = A + b * strideA, B_b = B + b * strideB, C_b = C + b * strideC (strides in elements).
// Correct for every M, N, K >= 1, every lda / ldb / ldc >= the row length, every stride >= 0
// and every 4-byte aligned pointer; with beta == 0 C is not read (it may hold NaN).
//
// Why: gemm_general's 64x64 tiles give 1000x1200x800 only 304 blocks (about 9 warps per SM of
// an H100), too few to hide latency (0.76-0.84x cuBLAS). Splitting K multiplies the blocks
// without shrinking the tiles; the extra traffic is SPLIT_K partial tiles per output tile,
// small next to the operands when K is deep enough for at least two BK tiles per chunk.
//
// The main loop is gemm_general.cu's (include/warptile_mainloop.cuh); the only changes are
// the K range [kb, ke) of a block, the reduction below, and the workspace argument.
//
// Parameters (#defined by the tuner; TRANS_A / TRANS_B come from the problem, the rest from
// the space): those of gemm_general.cu (TRANS_A, TRANS_B, BM, BN, BK, WM, WN, WNITER, TM, TN,
// STAGES, PAD, GROUP_M, MIN_BLOCKS; see there), and
//   SPLIT_K     K is cut into SPLIT_K chunks of whole BK tiles (grid y); a shape whose K is
//               too short for SPLIT_K non-empty chunks uses fewer, `splits` (the blocks of
//               empty chunks exit at once); with one chunk (SPLIT_K == 1, or splits == 1) C is
//               written directly and the workspace is not touched: SPLIT_K == 1 is exactly
//               gemm_general. Up to 16 splits the last block of a tile sums them all;
//               past 16 (shapes of few tiles and long K: 27x42x40198 has one 64x64 tile)
//               the splits are reduced in two levels, see "Two levels" below.
//
// Grid: x = tiles (ceil(M/BM) * ceil(N/BN), in gemm_general's order), y = SPLIT_K,
// z = min(batch, 65535) grid-z "slots". A block loops over b = blockIdx.z, blockIdx.z +
// gridDim.z, ... as gemm_general does, but only the FIRST batch of a slot (b = blockIdx.z) is
// split. With batch > 65535 the later batches of a slot (b >= gridDim.z) are computed whole
// (K from 0 to K, C written directly: SPLIT_K = 1 semantics) by the slot's split-0 blocks
// alone; the other splits leave after the first batch. Reason: a slot's workspace would be
// reused batch after batch, and a split that raced ahead to the next batch could overwrite its
// partial before the previous batch's reducer read it; preventing that would need a block to
// wait for another, which can deadlock when not all blocks are resident. Correct for any batch,
// only slower past 65535 batches (rare).
//
// Workspace (the kernel's last argument; the space's workspace_bytes, 16-byte aligned; unused
// when SPLIT_K == 1):
//   partials  float4 [gridDim.z][SPLIT_K][tiles][BM*BN/4]: split y of tile t in slot z stores
//             its accumulators there, float4 s of thread tid at [s * THREADS + tid]
//   counters  unsigned [gridDim.z][tiles], after the partials: how many splits of a tile (of
//             the slot's first batch) have stored
//   group counters  unsigned [gridDim.z][tiles][SPLIT_K], after the counters, only when
//             SPLIT_K > 16: how many splits of a group (below) have stored
// It must be zeroed before the first launch (workspace_zero = "once"); the kernel leaves it
// zeroed: the last split of a tile resets the tile's counter, and the partials need no
// initialisation. Launches that share a workspace must not overlap (one stream), and the
// launch's gridDim.x and gridDim.z must be those the workspace was sized for.
//
// Reduction ("last block reduces", as in CUDA's threadFenceReduction sample and
// gemm_warptile_splitk_det.cu): every split stores its partial tile (st.global.cg), each
// thread fences (__threadfence), the block synchronises, and thread 0 counts the split in with
// an atomicAdd on the (slot, tile) counter. The split that counts last (it sees splits - 1)
// reduces: it fences again, then each thread sums its elements over y = 0, 1, ..., splits - 1
// in that order (starting from split 0's value), reading every partial, its own included, from
// the workspace with ld.global.cg (L2: L1 is not coherent across SMs); thread 0 resets the
// counter to 0; then the block runs gemm_general's epilogue (alpha, and beta * C read only
// when beta != 0). Which block is last varies from run to run; the sum and its order do not.
// The other splits skip the epilogue. No block ever waits for another. All barriers are
// reached by every thread of the block (every condition around them is block-uniform), and
// the barrier after the main loop keeps the next batch's prologue off the shared stages.
//
// Two levels (SPLIT_K > 16): one block reading every partial serialises the reduction (128
// partial tiles of 64x64 are 2 MiB through one SM). The splits form groups of SPLIT_GROUP
// consecutive ones (the smallest g with g * g >= SPLIT_K: about sqrt(SPLIT_K) groups of about
// sqrt(SPLIT_K)). The last split of a group to count in (on the group's counter) sums the
// group's partials in order and stores the sum over the group's first partial; the last group
// to count in (on the tile's counter) sums the groups' sums in order 0, 1, ... and runs the
// epilogue. Each level is the protocol above, so the result is still the same on every run
// (another rounding than one level's), and the group sums run on several SMs at once.
//
// Everything else (pipeline, shared-memory layout, the four layouts' loaders, 16-byte paths
// under run-time alignment checks, zero-filled edge copies, the epilogue) is gemm_general.cu's;
// see its header.

#include "cp_async.cuh"
#include "warptile_mainloop.cuh" // the warp tile's geometry (THREADS, FRAG_M, ...)
#include "gemm_layout.cuh" // TRANS_A, TRANS_B
#ifndef SPLIT_K
#define SPLIT_K 1
#endif
#if SPLIT_K < 1
#error "SPLIT_K must be >= 1"
#endif

#include "gemm_general_copies.cuh"
#include "split_fixup.cuh" // SPLIT_COUNT_IN, split_count_in_last
#if SPLIT_K > 16
// Splits per group of the two-level reduction: the smallest g with g * g >= SPLIT_K.
static __device__ constexpr int split_group_size(int s)
{
    int g = 1;
    while (g * g < s) ++g;
    return g;
}
#define SPLIT_GROUP split_group_size(SPLIT_K)
#endif

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
KERNEL_NAME(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
            float* __restrict__ C, int lda, int ldb, int ldc, long long strideA,
            long long strideB, long long strideC, int batch, float alpha, float beta,
            float* __restrict__ workspace)
{
    extern __shared__ __align__(16) float gk_smem[];
    float* const As = gk_smem;                     // [STAGES][BK][AS_LD]
    float* const Bs = gk_smem + STAGES * AS_STAGE; // [STAGES][BK][BS_LD]

    // ---- which tile of C ----
    WARPTILE_TILE_OF_BLOCK
    const int tid = threadIdx.x;
    // Block-uniform: the tile lies inside M and N, so interior K tiles need no checks.
    const bool interior = bm + BM <= M && bn + BN <= N;

    GEMM_GENERAL_COPY_GEOMETRY

    // ---- this thread's place in the warp tile ----
    WARPTILE_THREAD_PLACE

    GEMM_GENERAL_COPY_SHARED

#if SPLIT_K > 1
    // ---- which chunk of K (grid y) ----
    // Chunks of whole BK tiles; `splits` (1..SPLIT_K) of them are non-empty. A block of an
    // empty chunk has nothing to do in any batch (batches past the first of a grid-z slot are
    // done by split 0 alone): it exits before any barrier (the whole block: uniform).
    SPLIT_K_CHUNKS
    const int split = blockIdx.y;
    if (split >= splits) return;
#endif

    for (int bz = blockIdx.z; bz < batch; bz += gridDim.z) {
#if SPLIT_K > 1
        // Only a slot's first batch is split (include/split_fixup.cuh); this block's K range
        // is [kb, ke).
        SPLIT_K_BATCH_RANGE(split)
#else
        const int kb = 0;
        const int ke = K;
#endif
        const int num_tiles = (ke - kb + BK - 1) / BK;
        GEMM_BATCH_MATRICES(bz)
        GEMM_GENERAL_BATCH_PRODUCT(acc)

#if SPLIT_K > 1
        // ---- reduction of the splits, in the fixed order 0, 1, ..., splits - 1 ----
        if (split_batch) {
            const long long tiles = (long long)((M + BM - 1) / BM) * tiles_n;
            const long long tsz = BM * BN / 4; // float4s of one partial tile
            // Partials float4 [gridDim.z][SPLIT_K][tiles][tsz], then counters
            // unsigned [gridDim.z][tiles]. Float4 s of this thread's part of a partial tile
            // is at [s * THREADS + tid] (coalesced).
            float4* const part = reinterpret_cast<float4*>(workspace) +
                                 ((long long)blockIdx.z * SPLIT_K * tiles + pid) * tsz + tid;
            unsigned* const counter =
                reinterpret_cast<unsigned*>(workspace +
                                            (long long)gridDim.z * SPLIT_K * tiles * (BM * BN)) +
                (long long)blockIdx.z * tiles + pid;
            float4* const mine = part + (long long)split * tiles * tsz;
            WARPTILE_STORE_PARTIAL(mine, acc)
#if SPLIT_K > 16
            // ---- two levels: this split's group, then the groups ----
            const int sgroup = split / SPLIT_GROUP;
            const int groups = (splits + SPLIT_GROUP - 1) / SPLIT_GROUP;
            const int g0 = sgroup * SPLIT_GROUP; // the group's first split
            const int gn = min(SPLIT_GROUP, splits - g0);
            unsigned* const gcounter =
                reinterpret_cast<unsigned*>(workspace +
                                            (long long)gridDim.z * SPLIT_K * tiles * (BM * BN)) +
                (long long)gridDim.z * tiles + ((long long)blockIdx.z * tiles + pid) * SPLIT_K +
                sgroup;
            if (!split_count_in_last(gcounter, gn)) continue; // block-uniform
            float4* const gsum = part + (long long)g0 * tiles * tsz;
            {
                WARPTILE_LOAD_PARTIAL(gsum, acc, =)
            }
            for (int z = g0 + 1; z < g0 + gn; ++z) {
                const float4* const src = part + (long long)z * tiles * tsz;
                WARPTILE_LOAD_PARTIAL(src, acc, +=)
            }
            if (tid == 0) atomicExch(gcounter, 0u);
            if (groups > 1) {
                // The group's sum replaces its first partial, which no block reads again
                // but the last group's below.
                WARPTILE_STORE_PARTIAL(gsum, acc)
                if (!split_count_in_last(counter, groups)) continue; // block-uniform
                {
                    WARPTILE_LOAD_PARTIAL(part, acc, =)
                }
                for (int g = 1; g < groups; ++g) {
                    const float4* const src = part + (long long)g * SPLIT_GROUP * tiles * tsz;
                    WARPTILE_LOAD_PARTIAL(src, acc, +=)
                }
                if (tid == 0) atomicExch(counter, 0u);
            }
#else
            SPLIT_COUNT_IN(last, counter, splits - 1)
            if (!last) continue; // block-uniform: the next batch (split 0) or the end
            __threadfence();
            // Split by split, all of this thread's float4s at once (their loads in flight
            // together), through L2 (ld.global.cg: L1 is not coherent across SMs). The sum is
            // split 0's partial, + split 1's, ..., + split splits-1's, in that order, whatever
            // block runs it; this block's own partial is read back (what it stored, bit for
            // bit).
            {
                WARPTILE_LOAD_PARTIAL(part, acc, =)
            }
            for (int z = 1; z < splits; ++z) {
                const float4* const src = part + (long long)z * tiles * tsz;
                WARPTILE_LOAD_PARTIAL(src, acc, +=)
            }
            // Every split of this tile has counted in: no other block touches the counter in
            // this launch, and the next launch (stream-ordered) finds it zero.
            if (tid == 0) atomicExch(counter, 0u);
#endif
        }
#endif

        // ---- epilogue ----
        WARPTILE_EPILOGUE_FULL(acc)
    }
}
