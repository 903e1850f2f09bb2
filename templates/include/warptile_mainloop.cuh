// The warp-tile main loop of the gemm_warptile and gemm_general families: the thread's place in
// its warp tile, the accumulators, register fragments double-buffered, and the multi-stage
// shared-memory pipeline over a block's K tiles.
// Expects: BM, BN, BK, WM, WN, WNITER, TM, TN, STAGES (MIN_BLOCKS and GROUP_M default to 1);
// defines the warp tile's geometry from them (WARPS_N, THREADS, WMITER, WSUBM, WSUBN, TCOLS,
// FRAG_M, FRAG_N); the macros also need AS_LD / BS_LD (floats per k row of the shared A / B
// tile), AS_STAGE / BS_STAGE (floats per stage) and CP_ASYNC (cp_async.cuh, included first).
//
// Pipeline: the copies of tile kt+STAGES-1 are issued (one cp.async group) at the first k step
// of tile kt; at its last k step every thread waits for tile kt+1's group, one barrier, and the
// next tile's first fragments are loaded before the last FMAs of this one (step k+1's fragments
// are read from shared memory during step k's FMAs). The k loop of a tile is fully unrolled.
// The last step reads (speculatively) the stage after the last tile.
//
// These are macros over the kernel's locals (textually the code they replace, so the kernels
// compile exactly as before they were shared).

#if !defined(BM) || !defined(BN) || !defined(BK) || !defined(WM) || !defined(WN) ||          \
    !defined(WNITER) || !defined(TM) || !defined(TN) || !defined(STAGES)
#error "BM, BN, BK, WM, WN, WNITER, TM, TN and STAGES must be defined"
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1
#endif
#ifndef GROUP_M
#define GROUP_M 1
#endif

// The warp tile's geometry.
#define WARPS_N (BN / WN)
#define THREADS ((BM / WM) * WARPS_N * 32)
#define WMITER ((WM * WN) / (32 * TM * TN * WNITER))
#define WSUBM (WM / WMITER)
#define WSUBN (WN / WNITER)
#define TCOLS (WSUBN / TN)
#define FRAG_M (WMITER * TM)
#define FRAG_N (WNITER * TN)
#if (BM % WM) != 0 || (BN % WN) != 0 || (TM % 4) != 0 || (TN % 4) != 0 || (BK % 8) != 0
#error "need BM % WM == 0, BN % WN == 0, TM and TN multiples of 4, BK a multiple of 8"
#endif
#if WMITER < 1 || (WM % WMITER) != 0 || (WN % WNITER) != 0 || (WSUBN % TN) != 0 ||           \
    (WSUBM % TM) != 0 || (WSUBM / TM) * (WSUBN / TN) != 32
#error "the warp tile does not split into 32 threads of TM x TN pieces"
#endif

// Which tile of C the block computes: (bm, bn), its first row and column, from blockIdx.x.
// Block rasterization: GROUP_M tile rows are walked column by column, so blocks that run
// together share A rows and B columns in L2 (GROUP_M = 1: plain row-major order). Needs M, N;
// declares tiles_n, pid, tile_m, tile_n, bm, bn (and with GROUP_M > 1 tiles_m).
#if GROUP_M > 1
#define WARPTILE_TILE_OF_BLOCK                                                                   \
    const int tiles_n = (N + BN - 1) / BN;                                                       \
    const int pid = blockIdx.x;                                                                  \
    const int tiles_m = (M + BM - 1) / BM;                                                       \
    const int width = GROUP_M * tiles_n;                                                         \
    const int group = pid / width;                                                               \
    const int first_m = group * GROUP_M;                                                         \
    const int gsize = min(tiles_m - first_m, GROUP_M);                                           \
    const int in_group = pid - group * width;                                                    \
    const int tile_m = first_m + in_group % gsize;                                               \
    const int tile_n = in_group / gsize;                                                         \
    const int bm = tile_m * BM;                                                                  \
    const int bn = tile_n * BN;
#else
#define WARPTILE_TILE_OF_BLOCK                                                                   \
    const int tiles_n = (N + BN - 1) / BN;                                                       \
    const int pid = blockIdx.x;                                                                  \
    const int tile_m = pid / tiles_n;                                                            \
    const int tile_n = pid - tile_m * tiles_n;                                                   \
    const int bm = tile_m * BM;                                                                  \
    const int bn = tile_n * BN;
#endif

// The thread's place in the warp tile: fa_off / fb_off, the first column of As / Bs it reads.
// Needs `tid`.
#define WARPTILE_THREAD_PLACE                                                                    \
    const int warp = tid >> 5;                                                                   \
    const int lane = tid & 31;                                                                   \
    const int warp_m = warp / WARPS_N;                                                           \
    const int warp_n = warp - warp_m * WARPS_N;                                                  \
    const int t_row = lane / TCOLS;                                                              \
    const int t_col = lane - t_row * TCOLS;                                                      \
    const int fa_off = warp_m * WM + t_row * TM; /* column of As a thread reads from */          \
    const int fb_off = warp_n * WN + t_col * TN; /* column of Bs a thread reads from */

// Zeroes the accumulators acc[FRAG_M][FRAG_N].
#define WARPTILE_ZERO_ACC(acc)                                                                   \
    _Pragma("unroll") for (int i = 0; i < FRAG_M; ++i)                                           \
    _Pragma("unroll") for (int j = 0; j < FRAG_N; ++j) acc[i][j] = 0.0f;

// Shared -> registers: one operand's fragment of k row `k` of the stage at s (LD floats per
// row): ITER pieces of T floats at column off + i * SUB, read as float4s, into f[buf].
#define WARPTILE_FRAG(f, s, LD, off, ITER, T, SUB, buf, k)                                       \
    _Pragma("unroll") for (int i = 0; i < ITER; ++i)                                             \
    _Pragma("unroll") for (int q = 0; q < T; q += 4)                                             \
    {                                                                                            \
        const float4 v = *reinterpret_cast<const float4*>((s) + (k) * LD + off + i * SUB + q);   \
        f[buf][i * T + q + 0] = v.x;                                                             \
        f[buf][i * T + q + 1] = v.y;                                                             \
        f[buf][i * T + q + 2] = v.z;                                                             \
        f[buf][i * T + q + 3] = v.w;                                                             \
    }
// The fragments of k row `k` of the stage at as / bs into fa[buf] / fb[buf].
#define WARPTILE_LOAD_FRAG(buf, as, bs, k)                                                       \
    {                                                                                            \
        WARPTILE_FRAG(fa, as, AS_LD, fa_off, WMITER, TM, WSUBM, buf, k)                          \
        WARPTILE_FRAG(fb, bs, BS_LD, fb_off, WNITER, TN, WSUBN, buf, k)                          \
    }

// The pipeline's steps that differ with and without cp.async. With cp.async the template
// defines issue(kt, st) (the copies of K tile kt into stage st); without, fetch(kt) (global ->
// registers) and store(st) (registers -> stage st).
#if CP_ASYNC
#define WARPTILE_PROLOGUE_STEP(s)                                                                \
    if (s < num_tiles) issue(s, s);                                                              \
    cp_async_commit();
#define WARPTILE_PROLOGUE_WAIT cp_async_wait<STAGES - 2>();
#define WARPTILE_NEXT_TILE_WAIT cp_async_wait<STAGES - 2>();
#define WARPTILE_REFILL                                                                          \
    if (kt + STAGES - 1 < num_tiles) issue(kt + STAGES - 1, ws);                                 \
    cp_async_commit();
#define WARPTILE_DRAIN cp_async_wait<0>();
#else
#define WARPTILE_PROLOGUE_STEP(s)                                                                \
    if (s < num_tiles) {                                                                         \
        fetch(s);                                                                                \
        store(s);                                                                                \
    }
#define WARPTILE_PROLOGUE_WAIT
#define WARPTILE_NEXT_TILE_WAIT                                                                  \
    if (kt + STAGES - 1 < num_tiles) store(ws);
#define WARPTILE_REFILL                                                                          \
    if (kt + STAGES - 1 < num_tiles) fetch(kt + STAGES - 1);
#define WARPTILE_DRAIN
#endif

// The main loop over `num_tiles` K tiles, accumulating into acc[FRAG_M][FRAG_N] (zeroed by the
// caller). Needs As, Bs (the stages' bases), num_tiles, fa_off, fb_off and the copies above;
// declares fa, fb, rs, ws, as, bs. Ends with no copies in flight.
#define WARPTILE_MAINLOOP(acc)                                                                   \
    float fa[2][FRAG_M];                                                                         \
    float fb[2][FRAG_N];                                                                         \
    /* ---- prologue: STAGES-1 tiles in flight ---- */                                          \
    _Pragma("unroll") for (int s = 0; s < STAGES - 1; ++s)                                       \
    {                                                                                            \
        WARPTILE_PROLOGUE_STEP(s)                                                                \
    }                                                                                            \
    WARPTILE_PROLOGUE_WAIT                                                                       \
    __syncthreads();                                                                             \
                                                                                                 \
    int rs = 0;          /* stage being read */                                                  \
    int ws = STAGES - 1; /* stage being filled */                                                \
    const float* as = As;                                                                        \
    const float* bs = Bs;                                                                        \
    WARPTILE_LOAD_FRAG(0, as, bs, 0);                                                            \
                                                                                                 \
    for (int kt = 0; kt < num_tiles; ++kt) {                                                     \
        _Pragma("unroll") for (int k = 0; k < BK; ++k)                                           \
        {                                                                                        \
            if (k == BK - 1) {                                                                   \
                /* Tile kt+1 must be resident before its first fragments are read. */            \
                WARPTILE_NEXT_TILE_WAIT                                                          \
                __syncthreads();                                                                 \
                ws = (ws + 1 == STAGES) ? 0 : ws + 1;                                            \
                rs = (rs + 1 == STAGES) ? 0 : rs + 1;                                            \
                as = As + rs * AS_STAGE;                                                         \
                bs = Bs + rs * BS_STAGE;                                                         \
                WARPTILE_LOAD_FRAG((k + 1) & 1, as, bs, 0);                                      \
            } else {                                                                             \
                WARPTILE_LOAD_FRAG((k + 1) & 1, as, bs, k + 1);                                  \
            }                                                                                    \
            if (k == 0) {                                                                        \
                /* The stage written now was last read in tile kt-1, before the barrier */       \
                /* above. */                                                                     \
                WARPTILE_REFILL                                                                  \
            }                                                                                    \
            _Pragma("unroll") for (int i = 0; i < FRAG_M; ++i)                                   \
            _Pragma("unroll") for (int j = 0; j < FRAG_N; ++j)                                   \
                acc[i][j] = fmaf(fa[k & 1][i], fb[k & 1][j], acc[i][j]);                         \
        }                                                                                        \
    }                                                                                            \
    WARPTILE_DRAIN

// Four consecutive columns v of row `crow` at `col` stored plainly: as a float4 when c_vec (C's
// rows 16-byte aligned) and the chunk starts inside N, else element by element inside N.
#define WARPTILE_STORE4(crow, col, v)                                                            \
    if (c_vec && col < N) {                                                                      \
        *reinterpret_cast<float4*>(crow + col) = v;                                              \
    } else {                                                                                     \
        if (col + 0 < N) crow[col + 0] = v.x;                                                    \
        if (col + 1 < N) crow[col + 1] = v.y;                                                    \
        if (col + 2 < N) crow[col + 2] = v.z;                                                    \
        if (col + 3 < N) crow[col + 3] = v.w;                                                    \
    }

// The epilogue of the plain-interface kernels (C is M x N, row-major, ldc = N): the thread's
// accumulators of the tile at (bm, bn), four columns at a time, written by STORE4(crow, col, v)
// (a macro: WARPTILE_STORE4 or the template's own, e.g. atomic adds); c_vec says whether C's
// rows are 16-byte aligned. Needs M, N, C, bm, bn, fa_off, fb_off.
#define WARPTILE_EPILOGUE(acc, STORE4)                                                           \
    const bool c_vec = (N & 3) == 0 && (reinterpret_cast<unsigned long long>(C) & 15) == 0;      \
    _Pragma("unroll") for (int i = 0; i < WMITER; ++i)                                           \
    {                                                                                            \
        _Pragma("unroll") for (int p = 0; p < TM; ++p)                                           \
        {                                                                                        \
            const int row = bm + fa_off + i * WSUBM + p;                                         \
            if (row < M) {                                                                       \
                float* const crow = C + (long long)row * N;                                      \
                _Pragma("unroll") for (int j = 0; j < WNITER; ++j)                               \
                {                                                                                \
                    _Pragma("unroll") for (int q = 0; q < TN; q += 4)                            \
                    {                                                                            \
                        const int col = bn + fb_off + j * WSUBN + q;                             \
                        const float4 v = make_float4(acc[i * TM + p][j * TN + q + 0],            \
                                                     acc[i * TM + p][j * TN + q + 1],            \
                                                     acc[i * TM + p][j * TN + q + 2],            \
                                                     acc[i * TM + p][j * TN + q + 3]);           \
                        STORE4(crow, col, v)                                                     \
                    }                                                                            \
                }                                                                                \
            }                                                                                    \
        }                                                                                        \
    }

// The epilogue of the full-interface kernels (gemm_general*): C_b = alpha * acc + beta * C_b for
// the thread's elements of the tile at (bm, bn) of the batch's Cb (leading dimension ldc);
// C is read only when beta != 0. Four columns at a time, as a float4 when ldc % 4 == 0, Cb is
// 16-byte aligned and all four lie inside N; element by element with bounds checks otherwise.
#define WARPTILE_EPILOGUE_FULL(acc)                                                              \
    const bool c_vec = (ldc & 3) == 0 && (reinterpret_cast<unsigned long long>(Cb) & 15) == 0;   \
    const bool read_c = beta != 0.0f;                                                            \
    _Pragma("unroll") for (int i = 0; i < WMITER; ++i) {                                         \
        _Pragma("unroll") for (int p = 0; p < TM; ++p) {                                         \
            const int row = bm + fa_off + i * WSUBM + p;                                         \
            if (row < M) {                                                                       \
                float* const crow = Cb + (long long)row * ldc;                                   \
                _Pragma("unroll") for (int j = 0; j < WNITER; ++j) {                             \
                    _Pragma("unroll") for (int q = 0; q < TN; q += 4) {                          \
                        const int col = bn + fb_off + j * WSUBN + q;                             \
                        float4 v = make_float4(alpha * acc[i * TM + p][j * TN + q + 0],          \
                                               alpha * acc[i * TM + p][j * TN + q + 1],          \
                                               alpha * acc[i * TM + p][j * TN + q + 2],          \
                                               alpha * acc[i * TM + p][j * TN + q + 3]);         \
                        if (c_vec && col + 4 <= N) {                                             \
                            float4* const c4 = reinterpret_cast<float4*>(crow + col);            \
                            if (read_c) {                                                        \
                                const float4 o = *c4;                                            \
                                v.x = fmaf(beta, o.x, v.x);                                      \
                                v.y = fmaf(beta, o.y, v.y);                                      \
                                v.z = fmaf(beta, o.z, v.z);                                      \
                                v.w = fmaf(beta, o.w, v.w);                                      \
                            }                                                                    \
                            *c4 = v;                                                             \
                        } else {                                                                 \
                            const float w[4] = {v.x, v.y, v.z, v.w};                             \
                            _Pragma("unroll") for (int e = 0; e < 4; ++e) {                      \
                                if (col + e < N) {                                               \
                                    crow[col + e] =                                              \
                                        read_c ? fmaf(beta, crow[col + e], w[e]) : w[e];         \
                                }                                                                \
                            }                                                                    \
                        }                                                                        \
                    }                                                                            \
                }                                                                                \
            }                                                                                    \
        }                                                                                        \
    }

// Partial tiles (split-K and stream-K): a thread's part of a BM x BN partial tile is its
// FRAG_M * FRAG_N / 4 float4s, float4 s at [s * THREADS] from the thread's base (coalesced).
// Stores acc there (st.global.cg: through L2, for another block to read).
#define WARPTILE_STORE_PARTIAL(mine, acc)                                                        \
    _Pragma("unroll") for (int i = 0; i < FRAG_M; ++i)                                           \
    _Pragma("unroll") for (int j = 0; j < FRAG_N; j += 4)                                        \
        __stcg(mine + (i * (FRAG_N / 4) + j / 4) * THREADS,                                      \
               make_float4(acc[i][j + 0], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]));
// acc OP= the partial at src (OP: = or +=), read with ld.global.cg (L2: L1 is not coherent
// across SMs), all of the thread's float4s first so that their loads are in flight together.
// Declares v: give it a block of its own.
#define WARPTILE_LOAD_PARTIAL(src, acc, OP)                                                      \
    float4 v[FRAG_M * FRAG_N / 4];                                                               \
    _Pragma("unroll") for (int s = 0; s < FRAG_M * FRAG_N / 4; ++s)                             \
        v[s] = __ldcg(src + s * THREADS);                                                        \
    _Pragma("unroll") for (int i = 0; i < FRAG_M; ++i)                                           \
    {                                                                                            \
        _Pragma("unroll") for (int j = 0; j < FRAG_N; j += 4)                                    \
        {                                                                                        \
            const float4 w = v[i * (FRAG_N / 4) + j / 4];                                        \
            acc[i][j + 0] OP w.x;                                                                \
            acc[i][j + 1] OP w.y;                                                                \
            acc[i][j + 2] OP w.z;                                                                \
            acc[i][j + 3] OP w.w;                                                                \
        }                                                                                        \
    }
