// 2D block tile + 2D thread tile SGEMM with float4 global loads and stores (design of seeds/003).
// C[M x N] = A[M x K] * B[K x N], all row-major.
// Parameters: BM x BN block tile, BK depth per shared-memory stage, TM x TN outputs per thread.
// A's tile is stored transposed in shared memory (As[k][m]) so each thread reads its TM values
// of a column with 16-byte loads. Edges: a float4 is used only when it lies wholly inside the
// matrix and the row stride is a multiple of 4 (16-byte aligned); otherwise elements are loaded
// one by one with zero fill, and C is stored element by element with bounds checks.
#if !defined(BM) || !defined(BN) || !defined(BK) || !defined(TM) || !defined(TN)
#error "BM, BN, BK, TM and TN must be defined"
#endif
#if (TM % 4) != 0 || (TN % 4) != 0 || (BK % 4) != 0
#error "TM, TN and BK must be multiples of 4"
#endif

#define THREADS ((BM / TM) * (BN / TN))
#define A_LOADS (BM * BK / 4 / THREADS)
#define B_LOADS (BK * BN / 4 / THREADS)

__device__ __forceinline__ float4 load4_guarded(const float* __restrict__ p, int row, int col,
                                                int rows, int cols, bool aligned)
{
    if (aligned && row < rows && col + 3 < cols) {
        return __ldg(reinterpret_cast<const float4*>(p + (size_t)row * cols + col));
    }
    float4 v;
    const bool r = row < rows;
    const float* q = p + (size_t)row * cols;
    v.x = (r && col + 0 < cols) ? q[col + 0] : 0.0f;
    v.y = (r && col + 1 < cols) ? q[col + 1] : 0.0f;
    v.z = (r && col + 2 < cols) ? q[col + 2] : 0.0f;
    v.w = (r && col + 3 < cols) ? q[col + 3] : 0.0f;
    return v;
}

extern "C" __global__ void __launch_bounds__(THREADS)
KERNEL_NAME(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
            float* __restrict__ C)
{
    __shared__ __align__(16) float As[BK * BM];
    __shared__ __align__(16) float Bs[BK * BN];

    const int tiles_n = (N + BN - 1) / BN;
    const int tile_row = blockIdx.x / tiles_n;
    const int tile_col = blockIdx.x - tile_row * tiles_n;
    const int bm = tile_row * BM;
    const int bn = tile_col * BN;
    const int tid = threadIdx.x;
    const int tx = tid % (BN / TN);
    const int ty = tid / (BN / TN);
    const bool a_aligned = (K & 3) == 0;
    const bool b_aligned = (N & 3) == 0;

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;

    for (int k0 = 0; k0 < K; k0 += BK) {
#pragma unroll
        for (int l = 0; l < A_LOADS; ++l) {
            const int i = tid + l * THREADS;
            const int r = i / (BK / 4);
            const int c = (i % (BK / 4)) * 4;
            const float4 v = load4_guarded(A, bm + r, k0 + c, M, K, a_aligned);
            As[(c + 0) * BM + r] = v.x;
            As[(c + 1) * BM + r] = v.y;
            As[(c + 2) * BM + r] = v.z;
            As[(c + 3) * BM + r] = v.w;
        }
#pragma unroll
        for (int l = 0; l < B_LOADS; ++l) {
            const int i = tid + l * THREADS;
            const int r = i / (BN / 4);
            const int c = (i % (BN / 4)) * 4;
            *reinterpret_cast<float4*>(&Bs[r * BN + c]) =
                load4_guarded(B, k0 + r, bn + c, K, N, b_aligned);
        }
        __syncthreads();

#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float ra[TM];
            float rb[TN];
#pragma unroll
            for (int i = 0; i < TM; i += 4) {
                const float4 v = *reinterpret_cast<const float4*>(&As[k * BM + ty * TM + i]);
                ra[i + 0] = v.x; ra[i + 1] = v.y; ra[i + 2] = v.z; ra[i + 3] = v.w;
            }
#pragma unroll
            for (int j = 0; j < TN; j += 4) {
                const float4 v = *reinterpret_cast<const float4*>(&Bs[k * BN + tx * TN + j]);
                rb[j + 0] = v.x; rb[j + 1] = v.y; rb[j + 2] = v.z; rb[j + 3] = v.w;
            }
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(ra[i], rb[j], acc[i][j]);
        }
        __syncthreads();
    }

#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int row = bm + ty * TM + i;
        if (row >= M) break;
        float* crow = C + (size_t)row * N;
#pragma unroll
        for (int j = 0; j < TN; j += 4) {
            const int col = bn + tx * TN + j;
            if (b_aligned && col + 3 < N) {
                *reinterpret_cast<float4*>(crow + col) =
                    make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]);
            } else {
#pragma unroll
                for (int q = 0; q < 4; ++q)
                    if (col + q < N) crow[col + q] = acc[i][j + q];
            }
        }
    }
}
