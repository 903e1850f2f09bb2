// General strided-batched SGEMM, the full cuBLAS-like interface, on gemm_warptile's design:
// warp tiles, a multi-stage shared-memory pipeline (cp.async on sm_80+), register fragment
// double buffering and block rasterization for L2 reuse.
//   C_b = alpha * op(A_b) op(B_b) + beta * C_b,  b = 0 .. batch-1,  row-major convention,
//   A_b = A + b * strideA, B_b = B + b * strideB, C_b = C + b * strideC (strides in elements).
// Correct for every M, N, K >= 1, every lda / ldb / ldc >= the row length (any value, not
// only multiples of 4), every stride >= 0 and every 4-byte aligned pointer: 16-byte copies and
// stores are used only where a run-time check shows the addresses of the tile are 16-byte
// aligned. With beta == 0 C is not read (it may hold NaN), as with cuBLAS.
//
// Parameters (#defined by the tuner; TRANS_A / TRANS_B come from the problem, the rest from
// the space):
//   TRANS_A     0: op(A)(m, k) = A[m*lda + k] (A stored M x K); 1: A[k*lda + m] (stored K x M)
//   TRANS_B     0: op(B)(k, n) = B[k*ldb + n] (B stored K x N); 1: B[n*ldb + k] (stored N x K)
//   BM x BN     block tile; BK the K depth of one shared-memory stage
//   WM x WN     warp tile; the block has (BM/WM) x (BN/WN) warps, THREADS = 32 x that
//   WNITER      the warp tile is covered in WMITER x WNITER steps of a WSUBM x WSUBN sub-tile,
//               WMITER = WM*WN / (32*TM*TN*WNITER); each thread owns a TM x TN piece of every
//               sub-tile (so WMITER*TM x WNITER*TN accumulators)
//   TM, TN      the thread's piece of one sub-tile (multiples of 4: read as float4)
//   STAGES      shared-memory stages (>= 2): STAGES-1 K tiles are in flight while one is used
//   PAD         floats of padding per row of both shared tiles (a multiple of 4, > 0): it is
//               what makes the transposing copies' shared stores conflict-free (see below)
//   GROUP_M     block rasterization: GROUP_M tile rows are walked column by column, so blocks
//               that run together share A rows and B columns in L2 (1 = plain row-major order)
//   MIN_BLOCKS  blocks per SM the register allocation must allow (__launch_bounds__)
// There is no split-K: grid z walks the batch (z = min(batch, 65535); a block loops over
// b = blockIdx.z, blockIdx.z + gridDim.z, ... so any batch count works).
//
// Pipeline (as gemm_warptile): the copies of tile kt+STAGES-1 are issued (one cp.async group)
// at the first k step of tile kt; at its last k step every thread waits for tile kt+1's group,
// one barrier, and the next tile's first fragments are loaded before the last FMAs of this one.
// A barrier ends each batch so the next batch's prologue cannot overwrite a stage still read.
//
// Shared memory (dynamic, STAGES x BK x (BM+PAD + BN+PAD) floats): As[k][m] and Bs[k][n], so
// for one k a thread reads TM consecutive m and TN consecutive n with float4 loads. The four
// layouts fill them differently, always so that a warp's global reads are whole 32-byte
// sectors:
// - TRANS_A = 0 (A rows along k): element (m, k) is transposed into As[k][m] with 4-byte
//   copies; a warp copies 8 consecutive k of 4 rows (one sector per row), and with PAD = 4 the
//   8 k rows of a warp's stores fall in distinct banks. 4-byte copies make this path
//   independent of lda's and K's alignment.
// - TRANS_A = 1 (A rows along m): a row of the stored K x M matrix is a row of As, so it is
//   copied in 16-byte chunks along m when lda % 4 == 0 and the batch's A is 16-byte aligned
//   (then every chunk of the tile is, as bm is a multiple of 4), else in 4-byte copies with
//   the same mapping (consecutive lanes, consecutive m: still coalesced).
// - TRANS_B = 0 (B rows along n): as gemm_warptile, 16-byte chunks along n when ldb % 4 == 0
//   and the batch's B is aligned, else 4-byte copies.
// - TRANS_B = 1 (B rows along k): the mirror of TRANS_A = 0: 4-byte copies, 8 consecutive k
//   of 4 columns per warp, into the padded Bs[k][n].
// On sm_80 and newer the copies are cp.async (cg 16 bytes, ca 4 bytes). A block whose tile lies
// inside M and N copies interior K tiles without checks; edge tiles check every element and
// zero-fill (src-size 0) what lies outside the matrix, reading from the matrix's first element
// instead; a 16-byte chunk that is only partly inside is copied as four checked 4-byte copies.
// Older archs load into registers at a tile's first step and store them into the free stage
// before its last.
//
// Epilogue: C is written (and with beta != 0 read) with float4 accesses when ldc % 4 == 0, the
// batch's C is 16-byte aligned and all 4 columns lie inside N; element by element with bounds
// checks otherwise.

#include "cp_async.cuh"
#include "warptile_mainloop.cuh" // the warp tile's geometry (THREADS, FRAG_M, ...)
#include "gemm_layout.cuh" // TRANS_A, TRANS_B
#include "gemm_general_copies.cuh" // the shared tiles (AS_LD, ...) and their copies

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
KERNEL_NAME(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
            float* __restrict__ C, int lda, int ldb, int ldc, long long strideA,
            long long strideB, long long strideC, int batch, float alpha, float beta)
{
    // ---- which tile of C ----
    WARPTILE_TILE_OF_BLOCK
    const int num_tiles = (K + BK - 1) / BK;
    const int tid = threadIdx.x;
    // Block-uniform: the tile lies inside M and N, so interior K tiles need no checks.
    const bool interior = bm + BM <= M && bn + BN <= N;

    extern __shared__ __align__(16) float gg_smem[];
    float* const As = gg_smem;                     // [STAGES][BK][AS_LD]
    float* const Bs = gg_smem + STAGES * AS_STAGE; // [STAGES][BK][BS_LD]
    GEMM_GENERAL_COPY_GEOMETRY

    // ---- this thread's place in the warp tile ----
    WARPTILE_THREAD_PLACE

    GEMM_GENERAL_COPY_SHARED

    for (int bz = blockIdx.z; bz < batch; bz += gridDim.z) {
        GEMM_BATCH_MATRICES(bz)
        const int kb = 0; // the K range [kb, ke)
        const int ke = K;
        GEMM_GENERAL_BATCH_PRODUCT(acc)

        // ---- epilogue ----
        WARPTILE_EPILOGUE_FULL(acc)
    }
}
