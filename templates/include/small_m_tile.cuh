// The block's tile of C in the small-M kernels: MT rows x COLS columns at (m0, n0), the thread's
// accumulators acc[MT][VEC] and their fixed-order sums through shared memory.
// Expects: MT, VEC, COLS, THREADS; SMALL_M_TILE_OF_BLOCK and SMALL_M_ACCUMULATE also BX
// (gemm_small_m and small_m_splitk.cuh; SMALL_M_PARTS_* serve gemm_general_small_m too).
//
// These are macros over the kernels' locals, textually the code they replaced (the kernels
// compile exactly as before they were shared).

// Which tile block `blk` computes, row tiles fastest: m0, n0; and the thread's tx, ty. Needs
// mtiles (the row tiles).
#define SMALL_M_TILE_OF_BLOCK(blk)                                                               \
    const int nb = blk / mtiles;                                                                 \
    const int mb = blk - nb * mtiles;                                                            \
    const int m0 = mb * MT;                                                                      \
    const int n0 = nb * COLS;                                                                    \
    const int tx = threadIdx.x;                                                                  \
    const int ty = threadIdx.y;

// The thread's partial sums acc[MT][VEC] from accumulate<VECOK>(ARGS..., acc) (the template's
// own: K ranges differ), and out[v], the column (relative to n0) of acc[.][v], in [0, COLS).
#define SMALL_M_ACCUMULATE(...)                                                                  \
    /* Block-uniform: every row of B starts 4 * VEC-byte aligned when B does and N % VEC == 0. */ \
    const bool vecok = VEC > 1 && N % VEC == 0 &&                                                \
                       (((unsigned long long)B) & (unsigned long long)(4 * VEC - 1)) == 0;       \
                                                                                                 \
    float acc[MT][VEC];                                                                          \
    _Pragma("unroll") for (int r = 0; r < MT; ++r) {                                             \
        _Pragma("unroll") for (int v = 0; v < VEC; ++v) acc[r][v] = 0.0f;                        \
    }                                                                                            \
    if (vecok)                                                                                   \
        accumulate<true>(__VA_ARGS__, acc);                                                      \
    else                                                                                         \
        accumulate<false>(__VA_ARGS__, acc);                                                     \
                                                                                                 \
    int out[VEC];                                                                                \
    _Pragma("unroll") for (int v = 0; v < VEC; ++v) out[v] = vecok ? tx * VEC + v : v * BX + tx;

// acc stored to C (M x N, row-major) inside M and N.
#define SMALL_M_STORE_ACC                                                                        \
    _Pragma("unroll") for (int r = 0; r < MT; ++r) {                                             \
        const int m = m0 + r;                                                                    \
        _Pragma("unroll") for (int v = 0; v < VEC; ++v) {                                        \
            const int n = n0 + out[v];                                                           \
            if (m < M && n < N) C[(size_t)m * N + n] = acc[r][v];                                \
        }                                                                                        \
    }

// Partial tiles in shared memory: red[p][r][c] is part p's sum of output (m0 + r, n0 + c).
// Stores acc[r][v] as part `p`, column COL (an expression of v), then a barrier.
#define SMALL_M_PARTS_STORE(p, COL)                                                              \
    _Pragma("unroll") for (int r = 0; r < MT; ++r) {                                             \
        _Pragma("unroll") for (int v = 0; v < VEC; ++v)                                          \
            red[(p * MT + r) * COLS + COL] = acc[r][v];                                          \
    }                                                                                            \
    __syncthreads();
// Each output summed by one thread (from `first`, THREADS apart) over parts 0, 1, ...,
// PARTS - 1 in that order, then STORE (a statement on m, n and the sum s) inside M and N.
// Consecutive threads take consecutive columns (conflict-free reads, coalesced stores).
#define SMALL_M_PARTS_SUM(first, PARTS, STORE)                                                   \
    for (int o = first; o < MT * COLS; o += THREADS) {                                           \
        const int r = o / COLS;                                                                  \
        const int c = o - r * COLS;                                                              \
        float s = red[o];                                                                        \
        _Pragma("unroll") for (int t = 1; t < PARTS; ++t) s += red[t * MT * COLS + o];           \
        const int m = m0 + r;                                                                    \
        const int n = n0 + c;                                                                    \
        if (m < M && n < N) STORE;                                                               \
    }
