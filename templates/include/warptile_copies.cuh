// The global -> shared copies of the plain-interface warp-tile kernels (gemm_warptile,
// gemm_warptile_splitk_det, gemm_warptile_streamk): A's tile transposed into As[k][m] with
// 4-byte copies, B's tile as is into Bs[k][n] in 16-byte chunks (4-byte copies where B's rows
// are not 16-byte aligned), over the K range [k_begin, k_end) of a block.
// Expects: BM, BN, BK, STAGES, PAD (default 4: floats of padding per row of the transposed A
// tile, 0 or a multiple of 4), THREADS (warptile_mainloop.cuh), CP_ASYNC (cp_async.cuh).
// Defines the shared tiles' layout (AS_LD, AS_STAGE, BS_LD, BS_STAGE), B's chunks per thread
// (B_PER, B_KSTEP) and A's copy geometry (A_KIN, A_M0, A_ROWSTEP, A_NROWS, A_NKG, A_KSTEP).
//
// A: with PAD != 0 a warp copies 8 consecutive k of 4 rows (whole 32-byte sectors of A); with
// PAD = 0 m runs fastest (a warp covers 32 rows of one k). Row pointers are clamped into the
// matrix (rows past M are zero-filled, never read). B: thread t copies the 4 floats at
// (t % (BN/4)) * 4 of k row t / (BN/4) (+ l * B_KSTEP); b_vec (N % 4 == 0 and B 16-byte
// aligned) allows 16-byte copies. On sm_80+ the copies are cp.async: a block whose tile lies
// inside M and N (`interior`, which the template defines) copies interior K tiles unchecked;
// edge tiles check every element and zero-fill (src-size 0) what lies outside the matrix or
// the K range, reading from the matrix's first element instead. Older archs stage the copies
// through registers (fetch(kt), then store(st)).
//
// These are macros over the kernel's locals, textually the code they replaced (the kernels
// compile exactly as before they were shared).

#ifndef PAD
#define PAD 4
#endif

// Shared memory: As[STAGES][BK][AS_LD] (A transposed, padded), Bs[STAGES][BK][BN].
#define AS_LD (BM + PAD)
#define AS_STAGE (BK * AS_LD)
#define BS_LD BN
#define BS_STAGE (BK * BN)
// B: 16-byte chunks per thread and tile, and the K rows one round of chunks covers.
#define B_PER (BK * BN / 4 / THREADS)
#define B_KSTEP (THREADS / (BN / 4))

#if (BM * BK) % THREADS != 0 || (BK * BN / 4) % THREADS != 0 || THREADS % (BN / 4) != 0 ||    \
    (PAD % 4) != 0 || STAGES < 2
#error "tile loads do not divide evenly among the threads, or PAD / STAGES is invalid"
#endif
#if PAD != 0 && ((THREADS / 8) > BM || BM % (THREADS / 8) != 0)
#error "with PAD != 0 the A loader needs THREADS / 8 to divide BM"
#endif
#if PAD == 0 && (THREADS > BM * BK || (THREADS >= BM && THREADS % BM != 0) ||                \
                 (THREADS < BM && BM % THREADS != 0))
#error "with PAD == 0 the A loader needs THREADS and BM to divide one another"
#endif

// ---- A loader geometry: element (m, k) of a tile goes to As[k][m] ----
#if PAD != 0
// A warp covers 8 consecutive k of 4 rows; round r adds r * THREADS/8 rows.
#define A_KIN (tid & 7)
#define A_M0 (tid >> 3)
#define A_ROWSTEP (THREADS / 8)
#define A_NROWS (BM / A_ROWSTEP)
#define A_NKG (BK / 8)
#define A_KSTEP 8
#else
// m fastest: a warp covers 32 rows of one k.
#if THREADS >= BM
#define A_KIN (tid / BM)
#define A_M0 (tid % BM)
#define A_ROWSTEP BM
#define A_NROWS 1
#define A_NKG (BK * BM / THREADS)
#define A_KSTEP (THREADS / BM)
#else
#define A_KIN 0
#define A_M0 tid
#define A_ROWSTEP THREADS
#define A_NROWS (BM / THREADS)
#define A_NKG BK
#define A_KSTEP 1
#endif
#endif

// The thread's A rows and B chunk (needs tid, bm, bn, A, B, M, N, K, k_begin).
#define WARPTILE_COPY_GEOMETRY                                                                   \
    const int a_kin = A_KIN;                                                                     \
    const int a_m0 = A_M0;                                                                       \
    /* Row pointers are clamped into the matrix; rows past M are zero-filled, never read. */     \
    const float* a_row[A_NROWS];                                                                 \
    _Pragma("unroll") for (int r = 0; r < A_NROWS; ++r)                                          \
        a_row[r] = A + (long long)min(bm + a_m0 + r * A_ROWSTEP, M - 1) * K + k_begin + a_kin;   \
                                                                                                 \
    /* ---- B loader: chunk (k, 4 columns) of a tile goes to Bs[k][n..n+3] ---- */               \
    const int b_c4 = tid % (BN / 4);                                                             \
    const int b_k0 = tid / (BN / 4);                                                             \
    const int b_col = bn + b_c4 * 4;                                                             \
    const float* const b_base = B + (long long)(k_begin + b_k0) * N + min(b_col, N - 1);

#if CP_ASYNC
// The unchecked copies of B's chunks of K tile kt where B's rows are 16-byte aligned (the
// template's `interior` includes b_vec), or wherever they are (4-byte copies, unchecked too,
// where they are not).
#define WARPTILE_B_ISSUE_ALIGNED                                                                 \
    _Pragma("unroll") for (int l = 0; l < B_PER; ++l)                                            \
        cp_async16_zfill(bs_dst + 4u * (l * B_KSTEP * BN),                                       \
                b_base + b_off + (long long)(l * B_KSTEP) * N, true);
#define WARPTILE_B_ISSUE_ANY                                                                     \
    if (b_vec) {                                                                                 \
        WARPTILE_B_ISSUE_ALIGNED                                                                 \
    } else {                                                                                     \
        _Pragma("unroll") for (int l = 0; l < B_PER; ++l)                                        \
            _Pragma("unroll") for (int q = 0; q < 4; ++q)                                        \
                cp_async4(bs_dst + 4u * (l * B_KSTEP * BN + q),                                  \
                       b_base + b_off + (long long)(l * B_KSTEP) * N + q, true);                 \
    }

// The copies: issue(kt, st) issues those of K tile kt into stage st, B's unchecked ones by
// B_ISSUE (WARPTILE_B_ISSUE_ALIGNED or WARPTILE_B_ISSUE_ANY). Needs interior, As, Bs, k_end.
#define WARPTILE_COPIES(B_ISSUE)                                                                 \
    const unsigned as_sh = static_cast<unsigned>(__cvta_generic_to_shared(As)) +                 \
                           4u * (unsigned)(a_kin * AS_LD + a_m0);                                \
    const unsigned bs_sh = static_cast<unsigned>(__cvta_generic_to_shared(Bs)) +                 \
                           4u * (unsigned)(b_k0 * BN + b_c4 * 4);                                \
    /* Issues the copies of K tile `kt` into stage `st`. */                                      \
    auto issue = [&](int kt, int st) {                                                           \
        const int k0 = k_begin + kt * BK;                                                        \
        const unsigned as_dst = as_sh + 4u * (unsigned)(st * AS_STAGE);                          \
        const unsigned bs_dst = bs_sh + 4u * (unsigned)(st * BS_STAGE);                          \
        const long long b_off = (long long)kt * BK * N;                                          \
        if (interior && k0 + BK <= k_end) {                                                      \
            _Pragma("unroll") for (int r = 0; r < A_NROWS; ++r)                                  \
                _Pragma("unroll") for (int g = 0; g < A_NKG; ++g)                                \
                    cp_async4(as_dst + 4u * (g * A_KSTEP * AS_LD + r * A_ROWSTEP),               \
                           a_row[r] + kt * BK + g * A_KSTEP, true);                              \
            B_ISSUE                                                                              \
            return;                                                                              \
        }                                                                                        \
        /* Edge tile: every copy checked; out-of-range elements are zero-filled (their source */ \
        /* address is the matrix's first element, never read). */                                \
        _Pragma("unroll") for (int r = 0; r < A_NROWS; ++r) {                                    \
            const bool row_ok = bm + a_m0 + r * A_ROWSTEP < M;                                   \
            _Pragma("unroll") for (int g = 0; g < A_NKG; ++g) {                                  \
                const int kk = k0 + a_kin + g * A_KSTEP;                                         \
                const bool ok = row_ok & (kk < k_end);                                           \
                cp_async4(as_dst + 4u * (g * A_KSTEP * AS_LD + r * A_ROWSTEP),                   \
                       ok ? a_row[r] + kt * BK + g * A_KSTEP : A, ok);                           \
            }                                                                                    \
        }                                                                                        \
        _Pragma("unroll") for (int l = 0; l < B_PER; ++l) {                                      \
            const int kk = b_k0 + l * B_KSTEP;                                                   \
            const bool row_ok = k0 + kk < k_end;                                                 \
            const float* const p = b_base + b_off + (long long)(l * B_KSTEP) * N;                \
            if (b_vec) {                                                                         \
                const bool ok = row_ok & (b_col < N);                                            \
                cp_async16_zfill(bs_dst + 4u * (l * B_KSTEP * BN), ok ? p : B, ok);              \
            } else {                                                                             \
                _Pragma("unroll") for (int q = 0; q < 4; ++q) {                                  \
                    const bool ok = row_ok & (b_col + q < N);                                    \
                    cp_async4(bs_dst + 4u * (l * B_KSTEP * BN + q), ok ? p + q : B, ok);         \
                }                                                                                \
            }                                                                                    \
        }                                                                                        \
    };
#else
// Register-staged copies for archs without cp.async: fetch(kt), store(st).
#define WARPTILE_COPIES(B_ISSUE)                                                                 \
    /* Register-staged copies for archs without cp.async. */                                     \
    float a_reg[A_NROWS * A_NKG];                                                                \
    float4 b_reg[B_PER];                                                                         \
    auto fetch = [&](int kt) {                                                                   \
        const int k0 = k_begin + kt * BK;                                                        \
        const long long b_off = (long long)kt * BK * N;                                          \
        _Pragma("unroll") for (int r = 0; r < A_NROWS; ++r) {                                    \
            const bool row_ok = bm + a_m0 + r * A_ROWSTEP < M;                                   \
            _Pragma("unroll") for (int g = 0; g < A_NKG; ++g) {                                  \
                const bool ok = row_ok & (k0 + a_kin + g * A_KSTEP < k_end);                     \
                a_reg[r * A_NKG + g] = ok ? __ldg(a_row[r] + kt * BK + g * A_KSTEP) : 0.0f;      \
            }                                                                                    \
        }                                                                                        \
        _Pragma("unroll") for (int l = 0; l < B_PER; ++l) {                                      \
            const bool row_ok = k0 + b_k0 + l * B_KSTEP < k_end;                                 \
            const float* p = b_base + b_off + (long long)(l * B_KSTEP) * N;                      \
            if (b_vec) {                                                                         \
                b_reg[l] = (row_ok & (b_col < N)) ? __ldg(reinterpret_cast<const float4*>(p))    \
                                                  : make_float4(0.0f, 0.0f, 0.0f, 0.0f);         \
            } else {                                                                             \
                b_reg[l].x = (row_ok & (b_col + 0 < N)) ? __ldg(p + 0) : 0.0f;                   \
                b_reg[l].y = (row_ok & (b_col + 1 < N)) ? __ldg(p + 1) : 0.0f;                   \
                b_reg[l].z = (row_ok & (b_col + 2 < N)) ? __ldg(p + 2) : 0.0f;                   \
                b_reg[l].w = (row_ok & (b_col + 3 < N)) ? __ldg(p + 3) : 0.0f;                   \
            }                                                                                    \
        }                                                                                        \
    };                                                                                           \
    auto store = [&](int st) {                                                                   \
        float* const as = As + st * AS_STAGE + a_kin * AS_LD + a_m0;                             \
        _Pragma("unroll") for (int r = 0; r < A_NROWS; ++r)                                      \
            _Pragma("unroll") for (int g = 0; g < A_NKG; ++g)                                    \
                as[g * A_KSTEP * AS_LD + r * A_ROWSTEP] = a_reg[r * A_NKG + g];                  \
        float* const bs = Bs + st * BS_STAGE + b_k0 * BN + b_c4 * 4;                             \
        _Pragma("unroll") for (int l = 0; l < B_PER; ++l)                                        \
            *reinterpret_cast<float4*>(bs + l * B_KSTEP * BN) = b_reg[l];                        \
    };
#endif

// The copies of the deterministic split-K and stream-K kernels: b_vec, the geometry and the
// copies, unchecked on interior tiles whatever B's alignment. Block-uniform `interior`: every
// copy of a tile lies inside the matrix, so the copies need no checks (for K tiles that also
// lie inside the K range). Unlike gemm_warptile.cu, B's rows need not be 16-byte aligned: an
// odd N copies B 4 bytes at a time but unchecked too (the checked path's predicates cost issue
// slots on every tile of an odd-N shape).
#if CP_ASYNC
#define WARPTILE_INTERIOR_ANY_B const bool interior = bm + BM <= M && bn + BN <= N;
#else
#define WARPTILE_INTERIOR_ANY_B
#endif
#define WARPTILE_COPIES_ANY_B                                                                    \
    const bool b_vec = (N & 3) == 0 && (reinterpret_cast<unsigned long long>(B) & 15) == 0;      \
                                                                                                 \
    WARPTILE_COPY_GEOMETRY                                                                       \
    WARPTILE_INTERIOR_ANY_B                                                                      \
    WARPTILE_COPIES(WARPTILE_B_ISSUE_ANY)
