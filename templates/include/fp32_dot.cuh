// The FP32 recomputation of the 3xTF32 templates (include/tf32x3.cuh): op(A)(m, :) . op(B)(:, n)
// of one batch in plain FP32, k in order, for tiles whose inputs hold inf, NaN or values TF32
// rounds past FLT_MAX (IEEE results, as cuBLAS's SGEMM gives them).
// Also the epilogue's store of one element. Expects: TRANS_A, TRANS_B (include/gemm_layout.cuh).

// op(A)(m, :) . op(B)(:, n) of one batch in plain FP32, k in order (out of line: it runs only on
// inputs with inf or NaN, and must not cost the main loop registers).
static __device__ __noinline__ float fp32_dot(const float* Ab, int lda, const float* Bb, int ldb,
                                              int K, int m, int n);
// op(A)(m, k) and op(B)(k, n) of one batch, for the FP32 recomputation.
static __device__ __forceinline__ float op_a(const float* Ab, int lda, int m, int k)
{
    return TRANS_A ? Ab[(long long)k * lda + m] : Ab[(long long)m * lda + k];
}
static __device__ __forceinline__ float op_b(const float* Bb, int ldb, int k, int n)
{
    return TRANS_B ? Bb[(long long)n * ldb + k] : Bb[(long long)k * ldb + n];
}

static __device__ __noinline__ float fp32_dot(const float* Ab, int lda, const float* Bb, int ldb,
                                              int K, int m, int n)
{
    float v = 0.0f;
    for (int k = 0; k < K; ++k) v = fmaf(op_a(Ab, lda, m, k), op_b(Bb, ldb, k, n), v);
    return v;
}

// C(m, n) = alpha v + beta C(m, n) (C not read when beta == 0), v computed again in FP32 when
// the block must recompute.
static __device__ __forceinline__ void store_c(float* Cb, int ldc, int m, int n, float v,
                                               bool recompute, const float* Ab, int lda,
                                               const float* Bb, int ldb, int K, float alpha,
                                               float beta)
{
    if (recompute) v = fp32_dot(Ab, lda, Bb, ldb, K, m, n);
    float* const c = Cb + (long long)m * ldc + n;
    *c = beta == 0.0f ? alpha * v : fmaf(alpha, v, beta * *c);
}
