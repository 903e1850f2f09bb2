// FP32-accurate SGEMM on the TF32 tensor cores (3xTF32, include/tf32x3.cuh), the full
// cuBLAS-like interface (sm_80 and newer):
//   C_b = alpha * op(A_b) op(B_b) + beta * C_b,  b = 0 .. batch-1,  row-major convention,
//   A_b = A + b * strideA, B_b = B + b * strideB, C_b = C + b * strideC (strides in elements).
// Correct for every M, N, K >= 1, every lda / ldb / ldc >= the row length, every stride >= 0
// and every 4-byte aligned pointer (gemm_general's copies: 16-byte cp.async only where a
// run-time check shows the tile's addresses aligned). With beta == 0 C is not read.
//
// Parameters (#defined by the tuner; TRANS_A / TRANS_B come from the problem):
//   TRANS_A, TRANS_B  the layouts (include/gemm_layout.cuh)
//   BM x BN     block tile; BK the K depth of one shared-memory stage (a multiple of 8)
//   WM x WN     warp tile: (BM/WM) x (BN/WN) warps; a warp computes MI x NI products of
//               16 x 8 (MI = WM/16, NI = WN/8), three mma.sync each per 8 of k
//   STAGES      shared-memory stages (>= 2): STAGES-1 K tiles are in flight while one is used
//   PAD         floats of padding per shared row; 8 makes the fragment reads conflict-free (a
//               warp reads rows t = 0..3 of columns g = 0..7: banks 8t + g when the row length
//               is 8 mod 32), 4 the transposing copies' stores
//   GROUP_M     block rasterization (include/tile_order.cuh)
//   MIN_BLOCKS  blocks per SM the register allocation must allow (__launch_bounds__)
// Grid z walks the batch (z = min(batch, 65535); a block loops over b = blockIdx.z, + gridDim.z).
//
// Shared memory (dynamic): STAGES x BK x (BM+PAD + BN+PAD) floats, As[k][m] and Bs[k][n],
// filled by gemm_general's copies for each layout (include/gemm_general_copies.cuh). The
// pipeline: STAGES-1 tiles are issued ahead (one cp.async group each, empty groups past the
// last tile); at each tile every thread waits for its oldest group, one barrier (which also
// frees the stage the refill overwrites: every warp is done with the tile before), the refill
// of tile kt + STAGES-1 is issued, and the tile's BK/8 steps of k run on the tensor cores.
//
// The tensor cores add the products into their accumulator with truncation, so a chain over all
// of K drifts (max error ~10x SGEMM's at K = 4096 on an H100): each step of 8 of k goes into a
// zeroed fragment, added into the FP32 accumulators, rounded to nearest.
//
// The split into TF32 parts happens in registers, as each fragment is read from shared memory
// (A's fragments are split once per k step and used for NI products, B's for MI). A thread
// notes whether any value it split had no finite TF32 part (inf, NaN, or beyond FLT_MAX when
// rounded); if any thread of the block did, the block computes its tile again in plain FP32
// from global memory (the IEEE result for inf and NaN; slow, taken only on such inputs).
//
// Epilogue: each thread owns c0..c3 of every 16 x 8 product (two pairs of adjacent columns in
// rows g and g + 8), written (and with beta != 0 read) element by element with bounds checks.

#if !defined(BM) || !defined(BN) || !defined(BK) || !defined(WM) || !defined(WN) ||             \
    !defined(STAGES)
#error "BM, BN, BK, WM, WN and STAGES must be defined"
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1
#endif
#define WARPS_N (BN / WN)
#define THREADS ((BM / WM) * WARPS_N * 32)
#define MI (WM / 16)
#define NI (WN / 8)
#if WM % 16 != 0 || WN % 8 != 0 || BM % WM != 0 || BN % WN != 0 || BK % 8 != 0
#error "WM must be a multiple of 16, WN of 8, BK of 8, and the warp tile must divide the block's"
#endif

#include "cp_async.cuh"
#include "gemm_layout.cuh"         // TRANS_A, TRANS_B
#include "gemm_general_copies.cuh" // the shared tiles (AS_LD, ...) and their copies
#include "tile_order.cuh"          // TILE_ORDER_OF_BLOCK
#if CP_ASYNC
#include "tf32x3.cuh"              // split_tf32, mma_tf32
#include "fp32_dot.cuh"            // store_c

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
KERNEL_NAME(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
            float* __restrict__ C, int lda, int ldb, int ldc, long long strideA,
            long long strideB, long long strideC, int batch, float alpha, float beta)
{
    extern __shared__ __align__(16) float gg_smem[];
    float* const As = gg_smem;                     // [STAGES][BK][AS_LD]
    float* const Bs = gg_smem + STAGES * AS_STAGE; // [STAGES][BK][BS_LD]

    TILE_ORDER_OF_BLOCK
    const int num_tiles = (K + BK - 1) / BK;
    const int tid = threadIdx.x;
    // Block-uniform: the tile lies inside M and N, so interior K tiles need no checks.
    const bool interior = bm + BM <= M && bn + BN <= N;

    GEMM_GENERAL_COPY_GEOMETRY
    GEMM_GENERAL_COPY_SHARED

    // The warp's tile and the thread's place in the fragments.
    const int warp = tid >> 5;
    const int lane = tid & 31;
    const int wm0 = (warp / WARPS_N) * WM;
    const int wn0 = (warp % WARPS_N) * WN;
    const int g = lane >> 2;
    const int t = lane & 3;

    for (int bz = blockIdx.z; bz < batch; bz += gridDim.z) {
        const float* const Ab = A + (long long)bz * strideA;
        const float* const Bb = B + (long long)bz * strideB;
        float* const Cb = C + (long long)bz * strideC;
        const int kb = 0; // the K range [kb, ke)
        const int ke = K;
        GEMM_GENERAL_BATCH_OPERANDS

        GEMM_GENERAL_COPIES

        float acc[MI][NI][4];
#pragma unroll
        for (int i = 0; i < MI; ++i)
#pragma unroll
            for (int j = 0; j < NI; ++j)
#pragma unroll
                for (int r = 0; r < 4; ++r) acc[i][j][r] = 0.0f;
        bool finite = true;

#pragma unroll
        for (int s = 0; s < STAGES - 1; ++s) {
            if (s < num_tiles) issue(s, s);
            cp_async_commit();
        }
        for (int kt = 0; kt < num_tiles; ++kt) {
            cp_async_wait<STAGES - 2>();
            __syncthreads();
            const int next = kt + STAGES - 1;
            if (next < num_tiles) issue(next, next % STAGES);
            cp_async_commit();

            const float* const as = As + (kt % STAGES) * AS_STAGE + wm0 + g;
            const float* const bs = Bs + (kt % STAGES) * BS_STAGE + wn0 + g;
            // Not unrolled: unrolled, ptxas hoisted every step's fragment reads and spilled at
            // 255 registers with 64 x 64 warp tiles.
#pragma unroll 1
            for (int kk = 0; kk < BK; kk += 8) {
                // A's fragments (rows g, g + 8 of each 16; k = t, t + 4), split.
                unsigned a_big[MI][4], a_small[MI][4];
#pragma unroll
                for (int i = 0; i < MI; ++i)
#pragma unroll
                    for (int r = 0; r < 4; ++r) {
                        const float x = as[(kk + t + (r >> 1) * 4) * AS_LD + i * 16 + (r & 1) * 8];
                        finite &= split_tf32(x, a_big[i][r], a_small[i][r]);
                    }
#pragma unroll
                for (int j = 0; j < NI; ++j) {
                    // B's fragment (k = t, t + 4 of column g of each 8), split.
                    unsigned b_big[2], b_small[2];
#pragma unroll
                    for (int r = 0; r < 2; ++r) {
                        const float x = bs[(kk + t + r * 4) * BS_LD + j * 8];
                        finite &= split_tf32(x, b_big[r], b_small[r]);
                    }
#pragma unroll
                    for (int i = 0; i < MI; ++i) {
                        // The tensor cores add with truncation: each step's three products go
                        // into t, added into acc in FP32, rounded to nearest.
                        float t[4] = {0.0f, 0.0f, 0.0f, 0.0f};
                        mma_tf32(t, a_small[i], b_big);
                        mma_tf32(t, a_big[i], b_small);
                        mma_tf32(t, a_big[i], b_big);
#pragma unroll
                        for (int r = 0; r < 4; ++r) acc[i][j][r] += t[r];
                    }
                }
            }
        }
        // The groups left are empty; the next batch's prologue must not overwrite stages before
        // every warp is done with them. The barrier also tells the block whether to recompute.
        cp_async_wait<0>();
        const bool recompute = __syncthreads_or(!finite);

        // ---- epilogue ----
#pragma unroll
        for (int i = 0; i < MI; ++i)
#pragma unroll
            for (int j = 0; j < NI; ++j)
#pragma unroll
                for (int r = 0; r < 4; ++r) {
                    const int m = bm + wm0 + i * 16 + g + (r >> 1) * 8;
                    const int n = bn + wn0 + j * 8 + 2 * t + (r & 1);
                    if (m < M && n < N)
                        store_c(Cb, ldc, m, n, acc[i][j][r], recompute, Ab, lda, Bb, ldb, K,
                                alpha, beta);
                }
    }
}
#else
// Before sm_80 there are no TF32 tensor cores: the space never offers the family there (its
// `sm >= 80` rule), and the kernel compiles (for fingerprints and dry runs of every arch) to
// one that stops the launch.
GEMM_FULL_TRAP_KERNEL
#endif
