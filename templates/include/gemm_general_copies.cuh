// The global -> shared copies of gemm_general and gemm_general_splitk: one K tile of op(A)
// into As[k][m] and of op(B) into Bs[k][n], for each layout (see gemm_general.cu's header for
// why each is copied the way it is).
// Expects: BM, BN, BK, STAGES, PAD (default 4: floats of padding per row of both shared tiles,
// a positive multiple of 4: it makes the transposing copies' shared stores conflict-free),
// TRANS_A, TRANS_B, THREADS, CP_ASYNC (cp_async.cuh). Defines the shared tiles' layout (AS_LD,
// BS_LD, AS_STAGE, BS_STAGE: As[STAGES][BK][AS_LD], Bs[STAGES][BK][BS_LD]), the loader
// geometry (T_ROWSTEP, T_NKG, A_NROWS / A_PER / A_KSTEP, B_PER / B_KSTEP / B_NROWS) and checks
// that the copies divide evenly among the threads.
//
// Two kinds of copy, each written once for an operand o (o = a or b, X = A or B; the macros
// paste the operand's names: o_kin, X_NROWS, XS_LD, ldo, Xb, ...):
// - transposing ("T": A with TRANS_A = 0, B with TRANS_B = 1; the stored matrix's rows run
//   along k): 4-byte copies, thread t copies k = t % 8 (+ 8g) of row o_r0 = t / 8 (+ r *
//   THREADS/8), so a warp reads 8 consecutive k of 4 rows (whole 32-byte sectors);
// - chunk ("C": A with TRANS_A = 1, B with TRANS_B = 0; the stored rows run along m or n):
//   thread t copies the 4 floats at o_col = (t % (W/4)) * 4 of k row o_k0 = t / (W/4) (+ l *
//   THREADS/(W/4)), 16 bytes at once when o_vec (ldo % 4 == 0 and the batch's matrix 16-byte
//   aligned) and the chunk lies inside the matrix, else as 4 checked 4-byte copies.
// Interior tiles (the block's tile inside M and N, the K tile inside [kb, ke)) are copied
// without checks; edge tiles check every element and zero-fill the rest (cp.async src-size 0,
// reading from the matrix's first element instead; 0.0f in registers).
//
// These are macros over the kernel's locals, textually the code they replaced (the kernels
// compile exactly as before they were shared). GEMM_GENERAL_COPIES defines the copies of one
// batch: issue(kt, st) with cp.async, or fetch(kt) and store(st) through registers; the K tile
// kt starts at kb + kt * BK and the K range ends at ke.

#ifndef PAD
#define PAD 4
#endif

#define AS_LD (BM + PAD)
#define BS_LD (BN + PAD)
#define AS_STAGE (BK * AS_LD)
#define BS_STAGE (BK * BS_LD)

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

// ---- transposing copies ("T"); b0 is the tile's first row (bm or bn), EXT its extent ----

// The thread's place: o_off0 (its first element's offset), o_rstep (one round of rows), o_sh
// (its first element in a stage). Rows past EXT are never read, so their offsets may point
// anywhere.
#define GG_T_GEOMETRY(o, XS_LD, b0)                                                              \
    const int o##_kin = tid & 7;                                                                 \
    const int o##_r0 = tid >> 3;                                                                 \
    const long long o##_off0 = (long long)(b0 + o##_r0) * ld##o + o##_kin;                       \
    const long long o##_rstep = (long long)T_ROWSTEP * ld##o;                                    \
    const int o##_sh = o##_kin * XS_LD + o##_r0;
#define GG_T_ISSUE_FAST(o, X)                                                                    \
    {                                                                                            \
        const float* const p##o = o##_base + k0;                                                 \
        _Pragma("unroll") for (int r = 0; r < X##_NROWS; ++r)                                    \
        _Pragma("unroll") for (int g = 0; g < T_NKG; ++g)                                        \
            cp_async4(o##s_dst + 4u * (g * 8 * X##S_LD + r * T_ROWSTEP),                         \
                      p##o + r * o##_rstep + g * 8, true);                                       \
    }
// The checked copies of a K tile: STEP(o, X) for each row r and k group g of the thread, with
// ok saying whether the element lies inside the matrix and the K range.
#define GG_T_EACH_CHECKED(o, X, b0, EXT, STEP)                                                   \
    _Pragma("unroll") for (int r = 0; r < X##_NROWS; ++r)                                        \
    {                                                                                            \
        const bool row_ok = b0 + o##_r0 + r * T_ROWSTEP < EXT;                                   \
        _Pragma("unroll") for (int g = 0; g < T_NKG; ++g)                                        \
        {                                                                                        \
            const bool ok = row_ok & (k0 + o##_kin + g * 8 < ke);                                \
            STEP(o, X)                                                                           \
        }                                                                                        \
    }
#define GG_T_ISSUE_ONE(o, X)                                                                     \
    cp_async4(o##s_dst + 4u * (g * 8 * X##S_LD + r * T_ROWSTEP),                                 \
              ok ? o##_base + k0 + r * o##_rstep + g * 8 : X##b, ok);
#define GG_T_FETCH_ONE(o, X)                                                                     \
    o##_reg[r * T_NKG + g] = ok ? __ldg(o##_base + k0 + r * o##_rstep + g * 8) : 0.0f;
#define GG_T_ISSUE_EDGE(o, X, b0, EXT) GG_T_EACH_CHECKED(o, X, b0, EXT, GG_T_ISSUE_ONE)
#define GG_T_REGS(o, X) float o##_reg[X##_NROWS * T_NKG];
#define GG_T_FETCH(o, X, b0, EXT) GG_T_EACH_CHECKED(o, X, b0, EXT, GG_T_FETCH_ONE)
#define GG_T_STORE(o, X)                                                                         \
    _Pragma("unroll") for (int r = 0; r < X##_NROWS; ++r)                                        \
    _Pragma("unroll") for (int g = 0; g < T_NKG; ++g)                                            \
        o##s[g * 8 * X##S_LD + r * T_ROWSTEP] = o##_reg[r * T_NKG + g];

// ---- chunk copies ("C"); b0 is the tile's first column (bm or bn), EXT its extent ----

// The thread's place: o_col (its chunk's first column), o_off0, o_kstep (one round of k rows),
// o_sh.
#define GG_C_GEOMETRY(o, W, X, XS_LD, b0)                                                        \
    const int o##_c4 = tid % (W / 4);                                                            \
    const int o##_k0 = tid / (W / 4);                                                            \
    const int o##_col = b0 + o##_c4 * 4;                                                         \
    const long long o##_off0 = (long long)o##_k0 * ld##o + o##_col;                              \
    const long long o##_kstep = (long long)X##_KSTEP * ld##o;                                    \
    const int o##_sh = o##_k0 * XS_LD + o##_c4 * 4;
// Whether this batch's chunks may be copied 16 bytes at once.
#define GG_C_VEC(o, X)                                                                           \
    const bool o##_vec = (ld##o & 3) == 0 && (reinterpret_cast<unsigned long long>(X##b) & 15) == 0;
#define GG_C_ISSUE_FAST(o, X)                                                                    \
    {                                                                                            \
        const float* const p##o = o##_base + (long long)k0 * ld##o;                              \
        if (o##_vec) {                                                                           \
            _Pragma("unroll") for (int l = 0; l < X##_PER; ++l)                                  \
                cp_async16(o##s_dst + 4u * (l * X##_KSTEP * X##S_LD), p##o + l * o##_kstep);     \
        } else {                                                                                 \
            _Pragma("unroll") for (int l = 0; l < X##_PER; ++l)                                  \
            _Pragma("unroll") for (int q = 0; q < 4; ++q)                                        \
                cp_async4(o##s_dst + 4u * (l * X##_KSTEP * X##S_LD + q), p##o + l * o##_kstep + q, \
                          true);                                                                 \
        }                                                                                        \
    }
#define GG_C_ISSUE_EDGE(o, X, EXT)                                                               \
    _Pragma("unroll") for (int l = 0; l < X##_PER; ++l)                                          \
    {                                                                                            \
        const bool row_ok = k0 + o##_k0 + l * X##_KSTEP < ke;                                    \
        const float* const p = o##_base + (long long)k0 * ld##o + l * o##_kstep;                 \
        const unsigned d = o##s_dst + 4u * (l * X##_KSTEP * X##S_LD);                            \
        if (o##_vec && row_ok && o##_col + 4 <= EXT) {                                           \
            cp_async16(d, p);                                                                    \
        } else {                                                                                 \
            _Pragma("unroll") for (int q = 0; q < 4; ++q)                                        \
            {                                                                                    \
                const bool ok = row_ok & (o##_col + q < EXT);                                    \
                cp_async4(d + 4u * q, ok ? p + q : X##b, ok);                                    \
            }                                                                                    \
        }                                                                                        \
    }
#define GG_C_REGS(o, X) float4 o##_reg[X##_PER];
#define GG_C_FETCH(o, X, EXT)                                                                    \
    _Pragma("unroll") for (int l = 0; l < X##_PER; ++l)                                          \
    {                                                                                            \
        const bool row_ok = k0 + o##_k0 + l * X##_KSTEP < ke;                                    \
        const float* const p = o##_base + (long long)k0 * ld##o + l * o##_kstep;                 \
        if (o##_vec && row_ok && o##_col + 4 <= EXT) {                                           \
            o##_reg[l] = __ldg(reinterpret_cast<const float4*>(p));                              \
        } else {                                                                                 \
            o##_reg[l].x = (row_ok & (o##_col + 0 < EXT)) ? __ldg(p + 0) : 0.0f;                 \
            o##_reg[l].y = (row_ok & (o##_col + 1 < EXT)) ? __ldg(p + 1) : 0.0f;                 \
            o##_reg[l].z = (row_ok & (o##_col + 2 < EXT)) ? __ldg(p + 2) : 0.0f;                 \
            o##_reg[l].w = (row_ok & (o##_col + 3 < EXT)) ? __ldg(p + 3) : 0.0f;                 \
        }                                                                                        \
    }
#define GG_C_STORE(o, X)                                                                         \
    _Pragma("unroll") for (int l = 0; l < X##_PER; ++l)                                          \
        *reinterpret_cast<float4*>(o##s + l * X##_KSTEP * X##S_LD) = o##_reg[l];

// ---- each operand's kind, by layout ----
#if TRANS_A == 0
#define GG_A_GEOMETRY GG_T_GEOMETRY(a, AS_LD, bm)
#define GG_A_VEC
#define GG_A_ISSUE_FAST GG_T_ISSUE_FAST(a, A)
#define GG_A_ISSUE_EDGE GG_T_ISSUE_EDGE(a, A, bm, M)
#define GG_A_REGS GG_T_REGS(a, A)
#define GG_A_FETCH GG_T_FETCH(a, A, bm, M)
#define GG_A_STORE GG_T_STORE(a, A)
#else
#define GG_A_GEOMETRY GG_C_GEOMETRY(a, BM, A, AS_LD, bm)
#define GG_A_VEC GG_C_VEC(a, A)
#define GG_A_ISSUE_FAST GG_C_ISSUE_FAST(a, A)
#define GG_A_ISSUE_EDGE GG_C_ISSUE_EDGE(a, A, M)
#define GG_A_REGS GG_C_REGS(a, A)
#define GG_A_FETCH GG_C_FETCH(a, A, M)
#define GG_A_STORE GG_C_STORE(a, A)
#endif
#if TRANS_B == 0
#define GG_B_GEOMETRY GG_C_GEOMETRY(b, BN, B, BS_LD, bn)
#define GG_B_VEC GG_C_VEC(b, B)
#define GG_B_ISSUE_FAST GG_C_ISSUE_FAST(b, B)
#define GG_B_ISSUE_EDGE GG_C_ISSUE_EDGE(b, B, N)
#define GG_B_REGS GG_C_REGS(b, B)
#define GG_B_FETCH GG_C_FETCH(b, B, N)
#define GG_B_STORE GG_C_STORE(b, B)
#else
#define GG_B_GEOMETRY GG_T_GEOMETRY(b, BS_LD, bn)
#define GG_B_VEC
#define GG_B_ISSUE_FAST GG_T_ISSUE_FAST(b, B)
#define GG_B_ISSUE_EDGE GG_T_ISSUE_EDGE(b, B, bn, N)
#define GG_B_REGS GG_T_REGS(b, B)
#define GG_B_FETCH GG_T_FETCH(b, B, bn, N)
#define GG_B_STORE GG_T_STORE(b, B)
#endif

// The thread's loader geometry, once per kernel (needs tid, bm, bn, lda, ldb).
#define GEMM_GENERAL_COPY_GEOMETRY                                                               \
    /* ---- A loader: element (m, k) of a tile goes to As[k][m] ---- */                         \
    GG_A_GEOMETRY                                                                                \
    /* ---- B loader: element (k, n) of a tile goes to Bs[k][n] ---- */                         \
    GG_B_GEOMETRY
// The shared-memory addresses of the thread's first elements (needs As, Bs; cp.async only).
#if CP_ASYNC
#define GEMM_GENERAL_COPY_SHARED                                                                 \
    const unsigned as_sh = static_cast<unsigned>(__cvta_generic_to_shared(As)) + 4u * a_sh;      \
    const unsigned bs_sh = static_cast<unsigned>(__cvta_generic_to_shared(Bs)) + 4u * b_sh;
#else
#define GEMM_GENERAL_COPY_SHARED
#endif

// A batch's operands: a_base / b_base (the thread's first elements), a_vec / b_vec for chunk
// copies. Needs Ab, Bb (the batch's matrices).
#define GEMM_GENERAL_BATCH_OPERANDS                                                              \
    GG_A_VEC                                                                                     \
    GG_B_VEC                                                                                     \
    const float* const a_base = Ab + a_off0;                                                     \
    const float* const b_base = Bb + b_off0;

// The copies of one batch (needs kb, ke, interior: the block's tile lies inside M and N).
#if CP_ASYNC
#define GEMM_GENERAL_COPIES                                                                      \
    /* Issues the copies of K tile `kt` into stage `st`. */                                      \
    auto issue = [&](int kt, int st) {                                                           \
        const int k0 = kb + kt * BK;                                                             \
        const unsigned as_dst = as_sh + 4u * (unsigned)(st * AS_STAGE);                          \
        const unsigned bs_dst = bs_sh + 4u * (unsigned)(st * BS_STAGE);                          \
        if (interior && k0 + BK <= ke) {                                                         \
            GG_A_ISSUE_FAST                                                                      \
            GG_B_ISSUE_FAST                                                                      \
            return;                                                                              \
        }                                                                                        \
        GG_A_ISSUE_EDGE                                                                          \
        GG_B_ISSUE_EDGE                                                                          \
    };
#else
// Register-staged copies for archs without cp.async (always checked: these archs are not the
// target of the unchecked fast path).
#define GEMM_GENERAL_COPIES                                                                      \
    GG_A_REGS                                                                                    \
    GG_B_REGS                                                                                    \
    auto fetch = [&](int kt) {                                                                   \
        const int k0 = kb + kt * BK;                                                             \
        GG_A_FETCH                                                                               \
        GG_B_FETCH                                                                               \
    };                                                                                           \
    auto store = [&](int st) {                                                                   \
        float* const as = As + st * AS_STAGE + a_sh;                                             \
        GG_A_STORE                                                                               \
        float* const bs = Bs + st * BS_STAGE + b_sh;                                             \
        GG_B_STORE                                                                               \
    };
#endif

// One batch's product of the block's tile into acc (declared here): the copies, the main loop
// (warptile_mainloop.cuh), then a barrier: the last step read (speculatively) the stage after
// the last tile, and the next batch's prologue must not overwrite stages before every warp is
// done with them. Needs Ab, Bb, kb, ke, num_tiles, interior.
#define GEMM_GENERAL_BATCH_PRODUCT(acc)                                                          \
    GEMM_GENERAL_BATCH_OPERANDS                                                                  \
    GEMM_GENERAL_COPIES                                                                          \
    float acc[FRAG_M][FRAG_N];                                                                   \
    WARPTILE_ZERO_ACC(acc)                                                                       \
    WARPTILE_MAINLOOP(acc)                                                                       \
    __syncthreads();
