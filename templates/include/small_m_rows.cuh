// The B-row reads and the K loop's unrolled step of gemm_small_m and gemm_small_m_splitk
// (see gemm_small_m.cu's header): threads along N read VEC columns of a row of B, a vector load
// where the columns allow it; A's MT values of a k are read with __ldg (a broadcast).
// Expects: MT, VEC, BX, KS, UNROLL.
//
// SMALL_M_COLUMNS_AND_ROWS and SMALL_M_UNROLLED_STEP are macros over accumulate()'s locals,
// textually the code they replaced (the kernels compile exactly as before they were shared).

// The VEC floats of one B row this thread reads, at the (clamped, in-range) columns col.
// VECOK: col holds VEC consecutive columns whose first is a multiple of VEC, and the row is
// 4 * VEC-byte aligned, so one vector load reads them.
template <bool VECOK>
static __device__ __forceinline__ void load_b(const float* __restrict__ row, const int (&col)[VEC],
                                              float (&b)[VEC])
{
    if (VECOK) {
#if VEC == 4
        const float4 t = __ldg(reinterpret_cast<const float4*>(row + col[0]));
        b[0] = t.x;
        b[1] = t.y;
        b[2] = t.z;
        b[3] = t.w;
#elif VEC == 2
        const float2 t = __ldg(reinterpret_cast<const float2*>(row + col[0]));
        b[0] = t.x;
        b[1] = t.y;
#else
        b[0] = __ldg(row + col[0]);
#endif
    } else {
#pragma unroll
        for (int v = 0; v < VEC; ++v) b[v] = __ldg(row + col[v]);
    }
}

// This thread's columns col[VEC] of B (clamped inside N) and its MT rows arow[MT] of A (clamped
// inside M). Needs M, N, K, A, m0, n0, tx and the template parameter VECOK.
#define SMALL_M_COLUMNS_AND_ROWS                                                                 \
    int col[VEC];                                                                                \
    _Pragma("unroll") for (int v = 0; v < VEC; ++v) {                                            \
        /* VECOK: n0 + tx * VEC is a multiple of VEC, and so is N, so a vector that starts */    \
        /* inside N ends inside it; one that starts past N is moved to the last vector of the */ \
        /* row (N >= VEC), read for nothing. */                                                  \
        col[v] = VECOK ? min(n0 + tx * VEC, N - VEC) + v : min(n0 + v * BX + tx, N - 1);         \
    }                                                                                            \
    const float* arow[MT];                                                                       \
    _Pragma("unroll") for (int r = 0; r < MT; ++r) arow[r] = A + (size_t)min(m0 + r, M - 1) * K;

// One step of UNROLL rows of B, k, k + KS, ..., all inside the K range: their loads first (in
// flight together), then acc[r][v] += A[m0 + r][row] * B[row][column v], row by row.
#define SMALL_M_UNROLLED_STEP                                                                    \
    float b[UNROLL][VEC];                                                                        \
    _Pragma("unroll") for (int u = 0; u < UNROLL; ++u)                                          \
        load_b<VECOK>(B + (size_t)(k + KS * u) * N, col, b[u]);                                  \
    _Pragma("unroll") for (int u = 0; u < UNROLL; ++u) {                                         \
        _Pragma("unroll") for (int r = 0; r < MT; ++r) {                                         \
            const float a = __ldg(arow[r] + k + KS * u);                                         \
            _Pragma("unroll") for (int v = 0; v < VEC; ++v)                                      \
                acc[r][v] = fmaf(a, b[u][v], acc[r][v]);                                         \
        }                                                                                        \
    }
