// The layout parameters of the full-interface GEMM templates: the tuner #defines TRANS_A and
// TRANS_B (0 or 1) from the problem's layout; without them a template compiles the NN form.
//   TRANS_A  0: op(A)(m, k) = A[m*lda + k] (A stored M x K); 1: A[k*lda + m] (stored K x M)
//   TRANS_B  0: op(B)(k, n) = B[k*ldb + n] (B stored K x N); 1: B[n*ldb + k] (stored N x K)

#ifndef TRANS_A
#define TRANS_A 0
#endif
#ifndef TRANS_B
#define TRANS_B 0
#endif
#if (TRANS_A != 0 && TRANS_A != 1) || (TRANS_B != 0 && TRANS_B != 1)
#error "TRANS_A and TRANS_B must be 0 or 1"
#endif

// Batch bz's matrices Ab, Bb, Cb (the strides are in elements).
#define GEMM_BATCH_MATRICES(bz)                                                              \
    const float* const Ab = A + (long long)bz * strideA;                                       \
    const float* const Bb = B + (long long)bz * strideB;                                       \
    float* const Cb = C + (long long)bz * strideC;

// A kernel of the full interface's signature that stops the launch: what a template compiles to
// on archs that lack what it needs (the space never offers it there; fingerprints and dry runs
// of every arch still compile it).
#define GEMM_FULL_TRAP_KERNEL                                                                \
    extern "C" __global__ void KERNEL_NAME(int, int, int, const float*, const float*, float*,  \
                                           int, int, int, long long, long long, long long,     \
                                           int, float, float)                                  \
    {                                                                                          \
        __trap();                                                                              \
    }
