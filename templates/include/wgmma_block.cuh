// What the wgmma templates (gemm_tf32x3_wgmma, gemm_tf32x3_wgmma_rs) share: their headers, the
// kernel's signature, the block and thread setup, the batch matrices and the epilogue. Expects:
// BM, BN, BK, WN, WGS_N, THREADS; a line `extern __shared__ __align__(16) float wg_smem[];`
// first in the kernel (the CPU emulator reads shared declarations one per source line);
// include/gemm_layout.cuh and include/tile_order.cuh before it.

#include "cp_async.cuh"    // cp_async*, copy_piece
#include "tf32x3.cuh"      // split_tf32
#include "wgmma_tf32.cuh"  // wgmma_*, swizzled
#include "split_tiles.cuh" // SplitTile
#include "fp32_dot.cuh"    // store_c

#define WG_CAT2(a, b) a##b
#define WG_CAT(a, b) WG_CAT2(a, b)

// The full interface's kernel, one block of THREADS; with a split of K (SPLIT_K > 1) the
// workspace is its last argument.
#if defined(SPLIT_K) && SPLIT_K > 1
#define WGMMA_WORKSPACE , float* __restrict__ workspace
#else
#define WGMMA_WORKSPACE
#endif
#define WGMMA_KERNEL                                                                           \
    extern "C" __global__ void __launch_bounds__(THREADS, 1) KERNEL_NAME(                      \
        int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,         \
        float* __restrict__ C, int lda, int ldb, int ldc, long long strideA,                   \
        long long strideB, long long strideC, int batch, float alpha, float beta               \
            WGMMA_WORKSPACE)

// The dynamic shared memory aligned to 1 KB for the swizzle (smem, and its shared address
// smem_at); the tile (bm, bn); the K tiles; the thread's warpgroup and its 64 x WN of the tile;
// the thread's first row and column of the accumulator layout (include/wgmma_tf32.cuh).
#define WGMMA_BLOCK_SETUP                                                                      \
    const unsigned raw = (unsigned)__cvta_generic_to_shared(wg_smem);                          \
    const unsigned skip = (1024u - (raw & 1023u)) & 1023u;                                     \
    unsigned char* const smem = reinterpret_cast<unsigned char*>(wg_smem) + skip;              \
    const unsigned smem_at = raw + skip;                                                       \
                                                                                               \
    TILE_ORDER_OF_BLOCK                                                                        \
    const int num_tiles = (K + BK - 1) / BK;                                                   \
    const int tid = threadIdx.x;                                                               \
    const int wg = tid >> 7;                                                                   \
    const int wm0 = (wg / WGS_N) * 64;                                                         \
    const int wn0 = (wg % WGS_N) * WN;                                                         \
    const int lane = tid & 31;                                                                 \
    const int row0 = wm0 + ((tid >> 5) & 3) * 16 + (lane >> 2);                                \
    const int col0 = wn0 + 2 * (lane & 3);

// Batch bz's matrices, whether A's and B's 16-byte pieces may be copied whole, and the zeroed
// FP32 accumulators beside one K tile's chain.
#define WGMMA_BATCH_SETUP(bz)                                                                  \
    GEMM_BATCH_MATRICES(bz)                                                                    \
    const bool vec_a = (reinterpret_cast<unsigned long long>(Ab) & 15) == 0 && lda % 4 == 0;   \
    const bool vec_b = (reinterpret_cast<unsigned long long>(Bb) & 15) == 0 && ldb % 4 == 0;   \
                                                                                               \
    float acc[WN / 2], tile_acc[WN / 2];                                                       \
    _Pragma("unroll") for (int i = 0; i < WN / 2; ++i) acc[i] = 0.0f;

// The epilogue: d[4j + e] is row row0 + 8 (e / 2), column col0 + 8 j + e % 2.
#define WGMMA_STORE_C                                                                          \
    _Pragma("unroll") for (int j = 0; j < WN / 8; ++j)                                         \
        _Pragma("unroll") for (int e = 0; e < 4; ++e)                                          \
        {                                                                                      \
            const int m = bm + row0 + (e >> 1) * 8;                                            \
            const int n = bn + col0 + j * 8 + (e & 1);                                         \
            if (m < M && n < N)                                                                \
                store_c(Cb, ldc, m, n, acc[4 * j + e], recompute, Ab, lda, Bb, ldb, K, alpha, \
                        beta);                                                                 \
        }
