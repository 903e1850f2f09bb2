// Strided-batched SGEMM with the full cuBLAS-like interface for a short reduction (K of 1 to
// about 16: outer products, rank-k updates). With K that small the work is writing C (and
// reading it when beta != 0): M x N floats against M x K + K x N read, so the kernel is a
// store stream. Each thread owns TM rows x VEC consecutive columns of C; a warp's 32 threads
// own 32 x VEC consecutive columns of a row, so its stores are whole 128-byte lines (float4 or
// float2 where ldc and C's base allow), and the op(B)(k, n) values of its columns are read once
// per k for TM rows. op(A)(m, k) is the same address for every thread of a warp (a broadcast).
//   C_b = alpha * op(A_b) op(B_b) + beta * C_b,  b = 0 .. batch-1,  row-major convention,
//   A_b = A + b * strideA, B_b = B + b * strideB, C_b = C + b * strideC (strides in elements).
// With beta == 0 C is not read (it may hold NaN), as with cuBLAS. Correct for every M, N,
// K >= 1 (a longer K is a plain loop: correct, not fast), every lda / ldb / ldc >= the row
// length, every stride >= 0 and every 4-byte aligned pointer; no access out of bounds.
// Deterministic: each C element is one thread's fixed-order sum over k.
//
// Parameters (#defined by the tuner; TRANS_A / TRANS_B come from the problem):
//   TRANS_A   0: op(A)(m, k) = A[m*lda + k]; 1: A[k*lda + m]
//   TRANS_B   0: op(B)(k, n) = B[k*ldb + n]; 1: B[n*ldb + k]
//   BX        threads along N (a multiple of 32); BY threads along M
//   VEC       consecutive columns per thread (1, 2 or 4): BN = BX * VEC columns per block
//   TM        rows per thread, rows ty, ty + BY, ... of the block's BM = BY * TM rows
// Grid: one linear dimension over the (M tiles) x (N tiles), N tiles fastest (blocks that run
// together write neighbouring lines); z walks the batch (z = min(batch, 65535), each block
// loops b = blockIdx.z, blockIdx.z + gridDim.z, ...).

#include "gemm_layout.cuh" // TRANS_A, TRANS_B
#if !defined(BX) || !defined(BY) || !defined(VEC) || !defined(TM)
#error "BX, BY, VEC and TM must be defined"
#endif
#if VEC != 1 && VEC != 2 && VEC != 4
#error "VEC must be 1, 2 or 4"
#endif
#if BX % 32 != 0 || BY < 1 || TM < 1
#error "BX must be a multiple of 32, BY and TM at least 1"
#endif

#define SK_BM (BY * TM)
#define SK_BN (BX * VEC)

extern "C" __global__ void __launch_bounds__(BX * BY)
KERNEL_NAME(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
            float* __restrict__ C, int lda, int ldb, int ldc, long long strideA,
            long long strideB, long long strideC, int batch, float alpha, float beta)
{
    const int tiles_n = (N + SK_BN - 1) / SK_BN;
    const int tile = blockIdx.x;
    const int m0 = (tile / tiles_n) * SK_BM + (int)threadIdx.y;
    const int n0 = (tile % tiles_n) * SK_BN + (int)threadIdx.x * VEC;
    if (n0 >= N) {
        return; // no barrier below: a thread past the last column has nothing to do
    }
    // Columns n0 .. n0 + VEC - 1 all inside N: the vector paths may apply.
    const bool full = n0 + VEC <= N;
    const bool read_c = beta != 0.0f;

    for (int bz = blockIdx.z; bz < batch; bz += gridDim.z) {
        const float* Ab = A + (long long)bz * strideA;
        const float* Bb = B + (long long)bz * strideB;
        float* Cb = C + (long long)bz * strideC;

        float acc[TM][VEC];
#pragma unroll
        for (int i = 0; i < TM; ++i) {
#pragma unroll
            for (int v = 0; v < VEC; ++v) {
                acc[i][v] = 0.0f;
            }
        }
#if TRANS_B == 0 && VEC > 1
        // B's row k holds the thread's columns contiguously: one 8- or 16-byte load when the
        // address is aligned for it (ldb and the base decide it for every k at once).
        const bool bvec = full && (ldb % VEC == 0) &&
                          ((reinterpret_cast<unsigned long long>(Bb + n0) % (4 * VEC)) == 0);
#endif
#pragma unroll 4
        for (int k = 0; k < K; ++k) {
            float b[VEC];
#if TRANS_B == 0
            const float* brow = Bb + (long long)k * ldb + n0;
#if VEC > 1
            if (bvec) {
#if VEC == 4
                const float4 t = __ldg(reinterpret_cast<const float4*>(brow));
                b[0] = t.x;
                b[1] = t.y;
                b[2] = t.z;
                b[3] = t.w;
#else
                const float2 t = __ldg(reinterpret_cast<const float2*>(brow));
                b[0] = t.x;
                b[1] = t.y;
#endif
            } else
#endif
            {
#pragma unroll
                for (int v = 0; v < VEC; ++v) {
                    b[v] = (n0 + v < N) ? __ldg(brow + v) : 0.0f;
                }
            }
#else
#pragma unroll
            for (int v = 0; v < VEC; ++v) {
                b[v] = (n0 + v < N) ? __ldg(Bb + (long long)(n0 + v) * ldb + k) : 0.0f;
            }
#endif
#pragma unroll
            for (int i = 0; i < TM; ++i) {
                const int m = m0 + i * BY;
                if (m < M) {
#if TRANS_A == 0
                    const float a = __ldg(Ab + (long long)m * lda + k);
#else
                    const float a = __ldg(Ab + (long long)k * lda + m);
#endif
#pragma unroll
                    for (int v = 0; v < VEC; ++v) {
                        acc[i][v] = fmaf(a, b[v], acc[i][v]);
                    }
                }
            }
        }

        // Epilogue: vector stores when ldc and C's base keep every row's columns aligned.
#if VEC > 1
        const bool cvec = full && (ldc % VEC == 0) &&
                          ((reinterpret_cast<unsigned long long>(Cb + n0) % (4 * VEC)) == 0);
#endif
#pragma unroll
        for (int i = 0; i < TM; ++i) {
            const int m = m0 + i * BY;
            if (m >= M) {
                continue;
            }
            float* crow = Cb + (long long)m * ldc + n0;
            float w[VEC];
#pragma unroll
            for (int v = 0; v < VEC; ++v) {
                w[v] = alpha * acc[i][v];
            }
#if VEC == 4
            if (cvec) {
                float4 o = make_float4(w[0], w[1], w[2], w[3]);
                if (read_c) {
                    const float4 c = *reinterpret_cast<const float4*>(crow);
                    o.x = fmaf(beta, c.x, o.x);
                    o.y = fmaf(beta, c.y, o.y);
                    o.z = fmaf(beta, c.z, o.z);
                    o.w = fmaf(beta, c.w, o.w);
                }
                *reinterpret_cast<float4*>(crow) = o;
                continue;
            }
#elif VEC == 2
            if (cvec) {
                float2 o = make_float2(w[0], w[1]);
                if (read_c) {
                    const float2 c = *reinterpret_cast<const float2*>(crow);
                    o.x = fmaf(beta, c.x, o.x);
                    o.y = fmaf(beta, c.y, o.y);
                }
                *reinterpret_cast<float2*>(crow) = o;
                continue;
            }
#endif
#pragma unroll
            for (int v = 0; v < VEC; ++v) {
                if (n0 + v < N) {
                    crow[v] = read_c ? fmaf(beta, crow[v], w[v]) : w[v];
                }
            }
        }
    }
}
