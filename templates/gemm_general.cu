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

#if !defined(BM) || !defined(BN) || !defined(BK) || !defined(WM) || !defined(WN) ||          \
    !defined(WNITER) || !defined(TM) || !defined(TN) || !defined(STAGES)
#error "BM, BN, BK, WM, WN, WNITER, TM, TN and STAGES must be defined"
#endif
#ifndef TRANS_A
#define TRANS_A 0
#endif
#ifndef TRANS_B
#define TRANS_B 0
#endif
#ifndef PAD
#define PAD 4
#endif
#ifndef GROUP_M
#define GROUP_M 1
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1
#endif

#define WARPS_N (BN / WN)
#define THREADS ((BM / WM) * WARPS_N * 32)
#define WMITER ((WM * WN) / (32 * TM * TN * WNITER))
#define WSUBM (WM / WMITER)
#define WSUBN (WN / WNITER)
#define TCOLS (WSUBN / TN)
#define FRAG_M (WMITER * TM)
#define FRAG_N (WNITER * TN)

#define AS_LD (BM + PAD)
#define BS_LD (BN + PAD)
#define AS_STAGE (BK * AS_LD)
#define BS_STAGE (BK * BS_LD)

#if (TRANS_A != 0 && TRANS_A != 1) || (TRANS_B != 0 && TRANS_B != 1)
#error "TRANS_A and TRANS_B must be 0 or 1"
#endif
#if (BM % WM) != 0 || (BN % WN) != 0 || (TM % 4) != 0 || (TN % 4) != 0 || (BK % 8) != 0
#error "need BM % WM == 0, BN % WN == 0, TM and TN multiples of 4, BK a multiple of 8"
#endif
#if WMITER < 1 || (WM % WMITER) != 0 || (WN % WNITER) != 0 || (WSUBN % TN) != 0 ||           \
    (WSUBM % TM) != 0 || (WSUBM / TM) * (WSUBN / TN) != 32
#error "the warp tile does not split into 32 threads of TM x TN pieces"
#endif
#if PAD <= 0 || (PAD % 4) != 0 || STAGES < 2
#error "PAD must be a positive multiple of 4 and STAGES >= 2"
#endif
// Transposing copies (8 k of THREADS/8 rows per round) and chunk copies (BM/4 or BN/4 chunks
// per k row) must divide the tile evenly among the threads.
#if TRANS_A == 0 && ((BM * BK) % THREADS != 0 || (THREADS / 8) > BM || BM % (THREADS / 8) != 0)
#error "TRANS_A = 0: the A loader needs THREADS / 8 to divide BM"
#endif
#if TRANS_A == 1 && ((BK * BM / 4) % THREADS != 0 || THREADS % (BM / 4) != 0)
#error "TRANS_A = 1: A's 16-byte chunks do not divide evenly among the threads"
#endif
#if TRANS_B == 0 && ((BK * BN / 4) % THREADS != 0 || THREADS % (BN / 4) != 0)
#error "TRANS_B = 0: B's 16-byte chunks do not divide evenly among the threads"
#endif
#if TRANS_B == 1 && ((BN * BK) % THREADS != 0 || (THREADS / 8) > BN || BN % (THREADS / 8) != 0)
#error "TRANS_B = 1: the B loader needs THREADS / 8 to divide BN"
#endif

// Loader geometry. Transposing loader (X = 0: A with TRANS_A = 0, B with TRANS_B = 1): thread
// t copies k = t % 8 (+ 8g) of row t / 8 (+ r * THREADS/8). Chunk loader (A with TRANS_A = 1,
// B with TRANS_B = 0): thread t copies the 4 floats at (t % (W/4)) * 4 of k row t / (W/4)
// (+ l * THREADS/(W/4)).
#define T_ROWSTEP (THREADS / 8)
#define T_NKG (BK / 8)
#if TRANS_A == 0
#define A_NROWS (BM / T_ROWSTEP)
#else
#define A_PER (BK * BM / 4 / THREADS)
#define A_KSTEP (THREADS / (BM / 4))
#endif
#if TRANS_B == 0
#define B_PER (BK * BN / 4 / THREADS)
#define B_KSTEP (THREADS / (BN / 4))
#else
#define B_NROWS (BN / T_ROWSTEP)
#endif

#include "cp_async.cuh"
#include "warptile_mainloop.cuh"

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
KERNEL_NAME(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
            float* __restrict__ C, int lda, int ldb, int ldc, long long strideA,
            long long strideB, long long strideC, int batch, float alpha, float beta)
{
    extern __shared__ __align__(16) float gg_smem[];
    float* const As = gg_smem;                     // [STAGES][BK][AS_LD]
    float* const Bs = gg_smem + STAGES * AS_STAGE; // [STAGES][BK][BS_LD]

    // ---- which tile of C ----
    const int tiles_n = (N + BN - 1) / BN;
    const int pid = blockIdx.x;
#if GROUP_M > 1
    const int tiles_m = (M + BM - 1) / BM;
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
    const int num_tiles = (K + BK - 1) / BK;
    const int tid = threadIdx.x;
    // Block-uniform: the tile lies inside M and N, so interior K tiles need no checks.
    const bool interior = bm + BM <= M && bn + BN <= N;

    // ---- A loader: element (m, k) of a tile goes to As[k][m] ----
#if TRANS_A == 0
    const int a_kin = tid & 7;
    const int a_m0 = tid >> 3;
    // Offset of this thread's first element; row r adds r * a_rstep. Rows past M are never
    // read (zero-filled), so their offsets may point anywhere.
    const long long a_off0 = (long long)(bm + a_m0) * lda + a_kin;
    const long long a_rstep = (long long)T_ROWSTEP * lda;
    const int a_sh = a_kin * AS_LD + a_m0;
#else
    const int a_c4 = tid % (BM / 4);
    const int a_k0 = tid / (BM / 4);
    const int a_col = bm + a_c4 * 4;
    const long long a_off0 = (long long)a_k0 * lda + a_col;
    const long long a_kstep = (long long)A_KSTEP * lda;
    const int a_sh = a_k0 * AS_LD + a_c4 * 4;
#endif
    // ---- B loader: element (k, n) of a tile goes to Bs[k][n] ----
#if TRANS_B == 0
    const int b_c4 = tid % (BN / 4);
    const int b_k0 = tid / (BN / 4);
    const int b_col = bn + b_c4 * 4;
    const long long b_off0 = (long long)b_k0 * ldb + b_col;
    const long long b_kstep = (long long)B_KSTEP * ldb;
    const int b_sh = b_k0 * BS_LD + b_c4 * 4;
#else
    const int b_kin = tid & 7;
    const int b_n0 = tid >> 3;
    const long long b_off0 = (long long)(bn + b_n0) * ldb + b_kin;
    const long long b_rstep = (long long)T_ROWSTEP * ldb;
    const int b_sh = b_kin * BS_LD + b_n0;
#endif

    // ---- this thread's place in the warp tile ----
    WARPTILE_THREAD_PLACE

#if CP_ASYNC
    const unsigned as_sh = static_cast<unsigned>(__cvta_generic_to_shared(As)) + 4u * a_sh;
    const unsigned bs_sh = static_cast<unsigned>(__cvta_generic_to_shared(Bs)) + 4u * b_sh;
#endif

    for (int bz = blockIdx.z; bz < batch; bz += gridDim.z) {
        const float* const Ab = A + (long long)bz * strideA;
        const float* const Bb = B + (long long)bz * strideB;
        float* const Cb = C + (long long)bz * strideC;
#if TRANS_A == 1
        const bool a_vec = (lda & 3) == 0 && (reinterpret_cast<unsigned long long>(Ab) & 15) == 0;
#endif
#if TRANS_B == 0
        const bool b_vec = (ldb & 3) == 0 && (reinterpret_cast<unsigned long long>(Bb) & 15) == 0;
#endif
        const float* const a_base = Ab + a_off0;
        const float* const b_base = Bb + b_off0;

#if CP_ASYNC
        // Issues the copies of K tile `kt` into stage `st`.
        auto issue = [&](int kt, int st) {
            const int k0 = kt * BK;
            const unsigned as_dst = as_sh + 4u * (unsigned)(st * AS_STAGE);
            const unsigned bs_dst = bs_sh + 4u * (unsigned)(st * BS_STAGE);
            if (interior && k0 + BK <= K) {
#if TRANS_A == 0
                const float* const pa = a_base + k0;
#pragma unroll
                for (int r = 0; r < A_NROWS; ++r)
#pragma unroll
                    for (int g = 0; g < T_NKG; ++g)
                        cp_async4(as_dst + 4u * (g * 8 * AS_LD + r * T_ROWSTEP),
                               pa + r * a_rstep + g * 8, true);
#else
                const float* const pa = a_base + (long long)k0 * lda;
                if (a_vec) {
#pragma unroll
                    for (int l = 0; l < A_PER; ++l)
                        cp_async16(as_dst + 4u * (l * A_KSTEP * AS_LD), pa + l * a_kstep);
                } else {
#pragma unroll
                    for (int l = 0; l < A_PER; ++l)
#pragma unroll
                        for (int q = 0; q < 4; ++q)
                            cp_async4(as_dst + 4u * (l * A_KSTEP * AS_LD + q), pa + l * a_kstep + q,
                                   true);
                }
#endif
#if TRANS_B == 0
                const float* const pb = b_base + (long long)k0 * ldb;
                if (b_vec) {
#pragma unroll
                    for (int l = 0; l < B_PER; ++l)
                        cp_async16(bs_dst + 4u * (l * B_KSTEP * BS_LD), pb + l * b_kstep);
                } else {
#pragma unroll
                    for (int l = 0; l < B_PER; ++l)
#pragma unroll
                        for (int q = 0; q < 4; ++q)
                            cp_async4(bs_dst + 4u * (l * B_KSTEP * BS_LD + q), pb + l * b_kstep + q,
                                   true);
                }
#else
                const float* const pb = b_base + k0;
#pragma unroll
                for (int r = 0; r < B_NROWS; ++r)
#pragma unroll
                    for (int g = 0; g < T_NKG; ++g)
                        cp_async4(bs_dst + 4u * (g * 8 * BS_LD + r * T_ROWSTEP),
                               pb + r * b_rstep + g * 8, true);
#endif
                return;
            }
            // Edge tile: every copy checked; out-of-range elements are zero-filled (their
            // source address is the matrix's first element, never read).
#if TRANS_A == 0
#pragma unroll
            for (int r = 0; r < A_NROWS; ++r) {
                const bool row_ok = bm + a_m0 + r * T_ROWSTEP < M;
#pragma unroll
                for (int g = 0; g < T_NKG; ++g) {
                    const bool ok = row_ok & (k0 + a_kin + g * 8 < K);
                    cp_async4(as_dst + 4u * (g * 8 * AS_LD + r * T_ROWSTEP),
                           ok ? a_base + k0 + r * a_rstep + g * 8 : Ab, ok);
                }
            }
#else
#pragma unroll
            for (int l = 0; l < A_PER; ++l) {
                const bool row_ok = k0 + a_k0 + l * A_KSTEP < K;
                const float* const p = a_base + (long long)k0 * lda + l * a_kstep;
                const unsigned d = as_dst + 4u * (l * A_KSTEP * AS_LD);
                if (a_vec && row_ok && a_col + 4 <= M) {
                    cp_async16(d, p);
                } else {
#pragma unroll
                    for (int q = 0; q < 4; ++q) {
                        const bool ok = row_ok & (a_col + q < M);
                        cp_async4(d + 4u * q, ok ? p + q : Ab, ok);
                    }
                }
            }
#endif
#if TRANS_B == 0
#pragma unroll
            for (int l = 0; l < B_PER; ++l) {
                const bool row_ok = k0 + b_k0 + l * B_KSTEP < K;
                const float* const p = b_base + (long long)k0 * ldb + l * b_kstep;
                const unsigned d = bs_dst + 4u * (l * B_KSTEP * BS_LD);
                if (b_vec && row_ok && b_col + 4 <= N) {
                    cp_async16(d, p);
                } else {
#pragma unroll
                    for (int q = 0; q < 4; ++q) {
                        const bool ok = row_ok & (b_col + q < N);
                        cp_async4(d + 4u * q, ok ? p + q : Bb, ok);
                    }
                }
            }
#else
#pragma unroll
            for (int r = 0; r < B_NROWS; ++r) {
                const bool row_ok = bn + b_n0 + r * T_ROWSTEP < N;
#pragma unroll
                for (int g = 0; g < T_NKG; ++g) {
                    const bool ok = row_ok & (k0 + b_kin + g * 8 < K);
                    cp_async4(bs_dst + 4u * (g * 8 * BS_LD + r * T_ROWSTEP),
                           ok ? b_base + k0 + r * b_rstep + g * 8 : Bb, ok);
                }
            }
#endif
        };
#else
        // Register-staged copies for archs without cp.async (always checked: these archs are
        // not the target of the unchecked fast path).
#if TRANS_A == 0
        float a_reg[A_NROWS * T_NKG];
#else
        float4 a_reg[A_PER];
#endif
#if TRANS_B == 0
        float4 b_reg[B_PER];
#else
        float b_reg[B_NROWS * T_NKG];
#endif
        auto fetch = [&](int kt) {
            const int k0 = kt * BK;
#if TRANS_A == 0
#pragma unroll
            for (int r = 0; r < A_NROWS; ++r) {
                const bool row_ok = bm + a_m0 + r * T_ROWSTEP < M;
#pragma unroll
                for (int g = 0; g < T_NKG; ++g) {
                    const bool ok = row_ok & (k0 + a_kin + g * 8 < K);
                    a_reg[r * T_NKG + g] = ok ? __ldg(a_base + k0 + r * a_rstep + g * 8) : 0.0f;
                }
            }
#else
#pragma unroll
            for (int l = 0; l < A_PER; ++l) {
                const bool row_ok = k0 + a_k0 + l * A_KSTEP < K;
                const float* const p = a_base + (long long)k0 * lda + l * a_kstep;
                if (a_vec && row_ok && a_col + 4 <= M) {
                    a_reg[l] = __ldg(reinterpret_cast<const float4*>(p));
                } else {
                    a_reg[l].x = (row_ok & (a_col + 0 < M)) ? __ldg(p + 0) : 0.0f;
                    a_reg[l].y = (row_ok & (a_col + 1 < M)) ? __ldg(p + 1) : 0.0f;
                    a_reg[l].z = (row_ok & (a_col + 2 < M)) ? __ldg(p + 2) : 0.0f;
                    a_reg[l].w = (row_ok & (a_col + 3 < M)) ? __ldg(p + 3) : 0.0f;
                }
            }
#endif
#if TRANS_B == 0
#pragma unroll
            for (int l = 0; l < B_PER; ++l) {
                const bool row_ok = k0 + b_k0 + l * B_KSTEP < K;
                const float* const p = b_base + (long long)k0 * ldb + l * b_kstep;
                if (b_vec && row_ok && b_col + 4 <= N) {
                    b_reg[l] = __ldg(reinterpret_cast<const float4*>(p));
                } else {
                    b_reg[l].x = (row_ok & (b_col + 0 < N)) ? __ldg(p + 0) : 0.0f;
                    b_reg[l].y = (row_ok & (b_col + 1 < N)) ? __ldg(p + 1) : 0.0f;
                    b_reg[l].z = (row_ok & (b_col + 2 < N)) ? __ldg(p + 2) : 0.0f;
                    b_reg[l].w = (row_ok & (b_col + 3 < N)) ? __ldg(p + 3) : 0.0f;
                }
            }
#else
#pragma unroll
            for (int r = 0; r < B_NROWS; ++r) {
                const bool row_ok = bn + b_n0 + r * T_ROWSTEP < N;
#pragma unroll
                for (int g = 0; g < T_NKG; ++g) {
                    const bool ok = row_ok & (k0 + b_kin + g * 8 < K);
                    b_reg[r * T_NKG + g] = ok ? __ldg(b_base + k0 + r * b_rstep + g * 8) : 0.0f;
                }
            }
#endif
        };
        auto store = [&](int st) {
            float* const as = As + st * AS_STAGE + a_sh;
#if TRANS_A == 0
#pragma unroll
            for (int r = 0; r < A_NROWS; ++r)
#pragma unroll
                for (int g = 0; g < T_NKG; ++g)
                    as[g * 8 * AS_LD + r * T_ROWSTEP] = a_reg[r * T_NKG + g];
#else
#pragma unroll
            for (int l = 0; l < A_PER; ++l)
                *reinterpret_cast<float4*>(as + l * A_KSTEP * AS_LD) = a_reg[l];
#endif
            float* const bs = Bs + st * BS_STAGE + b_sh;
#if TRANS_B == 0
#pragma unroll
            for (int l = 0; l < B_PER; ++l)
                *reinterpret_cast<float4*>(bs + l * B_KSTEP * BS_LD) = b_reg[l];
#else
#pragma unroll
            for (int r = 0; r < B_NROWS; ++r)
#pragma unroll
                for (int g = 0; g < T_NKG; ++g)
                    bs[g * 8 * BS_LD + r * T_ROWSTEP] = b_reg[r * T_NKG + g];
#endif
        };
#endif

        float acc[FRAG_M][FRAG_N];
        WARPTILE_ZERO_ACC(acc)
        WARPTILE_MAINLOOP(acc)
        // The last step read (speculatively) the stage after the last tile; the next batch's
        // prologue must not overwrite stages before every warp is done with them.
        __syncthreads();

        // ---- epilogue ----
        const bool c_vec = (ldc & 3) == 0 && (reinterpret_cast<unsigned long long>(Cb) & 15) == 0;
        const bool read_c = beta != 0.0f;
#pragma unroll
        for (int i = 0; i < WMITER; ++i) {
#pragma unroll
            for (int p = 0; p < TM; ++p) {
                const int row = bm + fa_off + i * WSUBM + p;
                if (row < M) {
                    float* const crow = Cb + (long long)row * ldc;
#pragma unroll
                    for (int j = 0; j < WNITER; ++j) {
#pragma unroll
                        for (int q = 0; q < TN; q += 4) {
                            const int col = bn + fb_off + j * WSUBN + q;
                            float4 v = make_float4(alpha * acc[i * TM + p][j * TN + q + 0],
                                                   alpha * acc[i * TM + p][j * TN + q + 1],
                                                   alpha * acc[i * TM + p][j * TN + q + 2],
                                                   alpha * acc[i * TM + p][j * TN + q + 3]);
                            if (c_vec && col + 4 <= N) {
                                float4* const c4 = reinterpret_cast<float4*>(crow + col);
                                if (read_c) {
                                    const float4 o = *c4;
                                    v.x = fmaf(beta, o.x, v.x);
                                    v.y = fmaf(beta, o.y, v.y);
                                    v.z = fmaf(beta, o.z, v.z);
                                    v.w = fmaf(beta, o.w, v.w);
                                }
                                *c4 = v;
                            } else {
                                const float w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
                                for (int e = 0; e < 4; ++e) {
                                    if (col + e < N) {
                                        crow[col + e] =
                                            read_c ? fmaf(beta, crow[col + e], w[e]) : w[e];
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}
