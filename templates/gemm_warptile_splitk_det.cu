// Deterministic split-K SGEMM: the warp-tiled kernel of gemm_warptile.cu (same main loop, same
// parameters) with K cut into SPLIT_K chunks along grid z, whose partial tiles are reduced in a
// fixed order through a workspace instead of added into C with atomics. The result is
// bit-for-bit the same on every run, whatever order the blocks run in.
// C[M x N] = A[M x K] * B[K x N], all row-major. Correct for every M, N, K >= 1.
//
// The main loop is gemm_warptile.cu's, include/warptile_mainloop.cuh (its epilogue too).
//
// Parameters (all #defined by the tuner):
//   BM x BN     block tile; BK the K depth of one shared-memory stage
//   WM x WN     warp tile; the block has (BM/WM) x (BN/WN) warps, THREADS = 32 x that
//   WNITER      the warp tile is covered in WMITER x WNITER steps of a WSUBM x WSUBN sub-tile,
//               WMITER = WM*WN / (32*TM*TN*WNITER); each thread owns a TM x TN piece of every
//               sub-tile (so WMITER*TM x WNITER*TN accumulators)
//   TM, TN      the thread's piece of one sub-tile (multiples of 4: read as float4)
//   STAGES      shared-memory stages (>= 2): STAGES-1 K tiles are in flight while one is used
//   PAD         floats of padding per row of the transposed A tile (0 or a multiple of 4)
//   GROUP_M     block rasterization (1 = plain row-major order of tiles)
//   SPLIT_K     K is cut into SPLIT_K chunks of whole BK tiles (grid z); a shape whose K is
//               too short for SPLIT_K non-empty chunks uses fewer (the blocks of empty chunks
//               exit at once), and with one chunk C is written directly
//   MIN_BLOCKS  blocks per SM the register allocation must allow (__launch_bounds__)
//
// Workspace (the kernel's last argument; the space's workspace_bytes, 16-byte aligned):
//   partials  float4 [SPLIT_K][tiles][BM*BN/4]: split z of tile t stores its accumulators
//             there, float4 j of thread tid at [z][t][j * THREADS + tid] (coalesced)
//   counters  unsigned [tiles], after the partials: how many splits of a tile have stored
// It must be zeroed before the first launch (workspace_zero = "once"); the kernel leaves it
// zeroed: the last split of a tile resets the tile's counter, and the partials need no
// initialisation. Launches that share a workspace must not overlap (one stream).
//
// Reduction ("last block reduces", as in CUDA's threadFenceReduction sample): every split
// stores its partial tile (st.global.cg), each thread fences (__threadfence), the block
// synchronises, and thread 0 counts the split in with an atomicAdd on the tile's counter. The
// split that counts last (it sees splits - 1) reduces: it fences again, then each thread sums
// its elements over z = 0, 1, ..., splits - 1 in that order, starting from 0.0f, taking its own
// split's values from registers (bit-identical to what it stored) and the others' from the
// workspace with ld.global.cg (L2: L1 is not coherent across SMs), and writes C with plain
// stores. Which block is last varies from run to run; the sum and its order do not. All
// barriers are reached by every thread of the block (the conditions are block-uniform).
//
// Pipeline: the copies of tile kt+STAGES-1 are issued (one cp.async group) at the first k step
// of tile kt; at its last k step every thread waits for tile kt+1's group, one barrier, and the
// next tile's first fragments are loaded before the last FMAs of this one (fragments are
// double-buffered in registers: step k+1's are read from shared memory during step k's FMAs).
// The k loop of a tile is fully unrolled. Measured on an H100 and dropped: spreading a tile's
// copies over its k steps, and a compact loop of 4-step bodies for BK = 32, were both 2-8%
// slower.
//
// Shared memory (dynamic, STAGES x (BK x (BM+PAD) + BK x BN) floats):
// - A's tile is stored transposed, As[k][m], so a thread reads TM consecutive rows with float4
//   loads. It is filled with 4-byte copies: a warp copies 8 consecutive k of 4 rows (whole
//   32-byte sectors of A), and with PAD = 4 the 8 k rows of a warp's stores fall in distinct
//   banks. With PAD = 0 the copy is mapped m-fastest instead (conflict-free stores but 32 rows
//   per warp request: measured slower on an H100, so the spaces list PAD = 4 only). 4-byte
//   copies also make A's path independent of K's alignment.
// - B's tile is stored as is, Bs[k][n], filled with 16-byte copies when N % 4 == 0 and B is
//   16-byte aligned, else with 4-byte copies.
// On sm_80 and newer the copies are cp.async (cp.async.cg 16 bytes, cp.async.ca 4 bytes). A
// block whose tile lies inside M and N copies interior K tiles unchecked (B 4 bytes at a time
// where its rows are not 16-byte aligned); edge tiles check every element and zero-fill
// (src-size 0) what lies outside the matrix or the K chunk, reading from the matrix's first
// element instead. Older archs load into registers at
// a tile's first step and store them into the free stage before its last.
//
// Warp layout: the 32 lanes of a warp form (WSUBM/TM) x (WSUBN/TN) threads; for one k a warp
// reads WM + WN distinct floats of shared memory (broadcast among the lanes that share them).
// C is written with float4 stores when N % 4 == 0 and C is 16-byte aligned, element by element
// with bounds checks otherwise (by the last split of the tile, after the reduction).

#include "cp_async.cuh"
#include "warptile_mainloop.cuh" // the warp tile's geometry (THREADS, FRAG_M, ...)
#include "warptile_copies.cuh"   // the shared tiles (AS_LD, ...) and their copies
#include "split_fixup.cuh"       // SPLIT_COUNT_IN
#ifndef SPLIT_K
#define SPLIT_K 2
#endif

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
KERNEL_NAME(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
            float* __restrict__ C, float* workspace)
{
    // ---- which tile of C, which chunk of K ----
    const int tiles_n = (N + BN - 1) / BN;
    const int tiles_m = (M + BM - 1) / BM;
    const int pid = blockIdx.x;
#if GROUP_M > 1
    const int width = GROUP_M * tiles_n;
    const int group = pid / width;
    const int first_m = group * GROUP_M;
    const int gsize = min(tiles_m - first_m, GROUP_M);
    const int in_group = pid - group * width;
    const int tile_m = first_m + in_group % gsize;
    const int tile_n = in_group / gsize;
#else
    const int tile_m = pid / tiles_n;
    const int tile_n = pid - tile_m * tiles_n;
#endif
    const int bm = tile_m * BM;
    const int bn = tile_n * BN;
    // Chunks of whole BK tiles; `splits` (1..SPLIT_K) of them are non-empty. A block of an
    // empty chunk exits before any barrier (the whole block: the condition is uniform).
    SPLIT_K_CHUNKS
    const int split = blockIdx.z;
    if (split >= splits) return;
    const int k_begin = split * chunk;
    const int k_end = min(K, k_begin + chunk);
    const int num_tiles = (k_end - k_begin + BK - 1) / BK;

    const int tid = threadIdx.x;
    // ---- the copies (B unchecked on interior tiles, aligned or not) ----
    extern __shared__ __align__(16) float wt_smem[];
    float* const As = wt_smem;                     // [STAGES][BK][AS_LD]
    float* const Bs = wt_smem + STAGES * AS_STAGE; // [STAGES][BK][BN]
    WARPTILE_COPIES_ANY_B

    // ---- this thread's place in the warp tile ----
    WARPTILE_THREAD_PLACE

    float acc[FRAG_M][FRAG_N];
    WARPTILE_ZERO_ACC(acc)
    WARPTILE_MAINLOOP(acc)

    // ---- reduction of the splits, in the fixed order 0, 1, ..., splits - 1 ----
    if (splits > 1) {
        const long long tiles = (long long)tiles_m * tiles_n;
        const int tile = pid;
        float4* const part = reinterpret_cast<float4*>(workspace);
        unsigned* const counters =
            reinterpret_cast<unsigned*>(workspace + (long long)SPLIT_K * tiles * (BM * BN));
        // This split's partial tile: float4 j of this thread at mine[j * THREADS].
        float4* const mine = part + ((long long)split * tiles + tile) * (BM * BN / 4) + tid;
        WARPTILE_STORE_PARTIAL(mine, acc)
        SPLIT_COUNT_IN(last, counters + tile, splits - 1)
        if (!last) return; // block-uniform; no barrier follows
        __threadfence();
        const float4* const tile_part = part + (long long)tile * (BM * BN / 4) + tid;
        // Split by split, all of this thread's float4s at once, so their loads are in flight
        // together (a loop over splits per element waited on one load at a time: the reduction
        // took a third of the kernel at 128x128x8192 on an H100). This split's own partial is
        // read back too: it is what it stored, bit for bit. The sum starts from 0.0f and adds
        // z = 0, 1, ..., splits - 1 in order, whatever block runs it.
#pragma unroll
        for (int i = 0; i < FRAG_M; ++i)
#pragma unroll
            for (int j = 0; j < FRAG_N; ++j) acc[i][j] = 0.0f;
        for (int z = 0; z < splits; ++z) {
            const float4* const src = tile_part + (long long)z * tiles * (BM * BN / 4);
            WARPTILE_LOAD_PARTIAL(src, acc, +=)
        }
        // Every split of this tile has counted in: no one else touches the counter in this
        // launch, and the next launch (stream-ordered) finds it zero.
        if (tid == 0) atomicExch(counters + tile, 0u);
    }

    // ---- epilogue: plain stores of the (reduced) tile ----
    WARPTILE_EPILOGUE(acc, WARPTILE_STORE4)
}
