// Warp-tiled SGEMM with a multi-stage shared-memory pipeline (cp.async on sm_80+), register
// fragment double buffering, optional split-K and block rasterization for L2 reuse.
// C[M x N] = A[M x K] * B[K x N], all row-major. Correct for every M, N, K >= 1.
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
//   GROUP_M     block rasterization: GROUP_M tile rows are walked column by column, so blocks
//               that run together share A rows and B columns in L2 (1 = plain row-major order)
//   SPLIT_K     K is cut into SPLIT_K chunks (grid z); chunks add into C with atomics, so C
//               must be zeroed before the launch (the split-K space says zero_output = true)
//   MIN_BLOCKS  blocks per SM the register allocation must allow (__launch_bounds__): 2 caps
//               a 256-thread block at 128 registers per thread, so two blocks share an SM and
//               one's barrier waits and epilogue overlap the other's FMAs
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
// block whose tile lies inside M and N (and B aligned) copies interior K tiles unchecked; edge
// tiles check every element and zero-fill (src-size 0) what lies outside the matrix or the K
// chunk, reading from the matrix's first element instead. Older archs load into registers at
// a tile's first step and store them into the free stage before its last.
//
// Warp layout: the 32 lanes of a warp form (WSUBM/TM) x (WSUBN/TN) threads; for one k a warp
// reads WM + WN distinct floats of shared memory (broadcast among the lanes that share them).
// C is written with float4 stores when N % 4 == 0 and C is 16-byte aligned, element by element
// with bounds checks otherwise; split-K adds with atomics (16-byte red on sm_90 when aligned).

#include "cp_async.cuh"
#include "warptile_mainloop.cuh" // the warp tile's geometry (THREADS, FRAG_M, ...)
#include "warptile_copies.cuh"   // the shared tiles (AS_LD, ...) and their copies
#ifndef SPLIT_K
#define SPLIT_K 1
#endif

// Adds v into C[row][col..col+3] (split-K), 16 bytes at once on sm_90 when allowed.
__device__ __forceinline__ void wt_add4(float* p, float4 v, bool vec, int valid)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if (vec) {
        asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"l"(p), "f"(v.x),
                     "f"(v.y), "f"(v.z), "f"(v.w)
                     : "memory");
        return;
    }
#endif
    if (valid > 0) atomicAdd(p + 0, v.x);
    if (valid > 1) atomicAdd(p + 1, v.y);
    if (valid > 2) atomicAdd(p + 2, v.z);
    if (valid > 3) atomicAdd(p + 3, v.w);
}

// How the epilogue writes four columns: added with atomics (split-K: C was zeroed), or stored.
#if SPLIT_K > 1
#define WT_STORE4(crow, col, v)                                                                  \
    if (col < N) wt_add4(crow + col, v, c_vec, N - col);
#else
#define WT_STORE4 WARPTILE_STORE4
#endif

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
KERNEL_NAME(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
            float* __restrict__ C)
{
    extern __shared__ __align__(16) float wt_smem[];
    float* const As = wt_smem;                     // [STAGES][BK][AS_LD]
    float* const Bs = wt_smem + STAGES * AS_STAGE; // [STAGES][BK][BN]

    // ---- which tile of C, which chunk of K ----
    WARPTILE_TILE_OF_BLOCK
#if SPLIT_K > 1
    const int chunk = ((K + SPLIT_K - 1) / SPLIT_K + BK - 1) / BK * BK;
    const int k_begin = blockIdx.z * chunk;
    if (k_begin >= K) return; // nothing to add (C was zeroed)
    const int k_end = min(K, k_begin + chunk);
#else
    const int k_begin = 0;
    const int k_end = K;
#endif
    const int num_tiles = (k_end - k_begin + BK - 1) / BK;

    const int tid = threadIdx.x;
    const bool b_vec = (N & 3) == 0 && (reinterpret_cast<unsigned long long>(B) & 15) == 0;

    WARPTILE_COPY_GEOMETRY
#if CP_ASYNC
    // Block-uniform: every copy of a tile lies inside the matrix and B's rows are 16-byte
    // aligned, so the copies need no checks (for K tiles that also lie inside the K chunk).
    const bool interior = bm + BM <= M && bn + BN <= N && b_vec;
#endif
    WARPTILE_COPIES(WARPTILE_B_ISSUE_ALIGNED)

    // ---- this thread's place in the warp tile ----
    WARPTILE_THREAD_PLACE

    float acc[FRAG_M][FRAG_N];
    WARPTILE_ZERO_ACC(acc)
    WARPTILE_MAINLOOP(acc)

    // ---- epilogue ----
    WARPTILE_EPILOGUE(acc, WT_STORE4)
}
