// A thread's VEC floats of one row, for templates whose threads own VEC columns of a row-major
// operand (gemm_general_small_m's B for TRANS_B = 0, gemv_general's A for TRANS_A = 1).
// Expects: VEC (1 or 4).
//
// VEC_COLS_LOADER(NAME, LOAD) defines NAME<V4>(row, col, b): b[v] = row[col[v]], one float4 at
// col[0] when V4 (16-byte aligned, the four columns consecutive and inside the row), else VEC
// scalars. LOAD is the load: __ldg (read-only cache) or __ldcs (streaming). A macro, so that
// each template's function is the text it was.
#if VEC == 4
#define VEC_COLS_LOADER(NAME, LOAD)                                                              \
    template <bool V4>                                                                           \
    static __device__ __forceinline__ void NAME(const float* __restrict__ row,                   \
                                                const int (&col)[VEC], float (&b)[VEC])          \
    {                                                                                            \
        if (V4) {                                                                                \
            const float4 t = LOAD(reinterpret_cast<const float4*>(row + col[0]));                \
            b[0] = t.x;                                                                          \
            b[1] = t.y;                                                                          \
            b[2] = t.z;                                                                          \
            b[3] = t.w;                                                                          \
            return;                                                                              \
        }                                                                                        \
        VEC_COLS_SCALARS(LOAD)                                                                   \
    }
#else
#define VEC_COLS_LOADER(NAME, LOAD)                                                              \
    template <bool V4>                                                                           \
    static __device__ __forceinline__ void NAME(const float* __restrict__ row,                   \
                                                const int (&col)[VEC], float (&b)[VEC])          \
    {                                                                                            \
        VEC_COLS_SCALARS(LOAD)                                                                   \
    }
#endif
#define VEC_COLS_SCALARS(LOAD) _Pragma("unroll") for (int v = 0; v < VEC; ++v) b[v] = LOAD(row + col[v]);
