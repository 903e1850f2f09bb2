// 2D block tile + 2D thread tile SGEMM with float4 global loads and stores (design of seeds/003).
// C[M x N] = A[M x K] * B[K x N], all row-major.
// Parameters: BM x BN block tile, BK depth per shared-memory stage, TM x TN outputs per thread,
// PREFETCH (0/1): load the next K tile into registers while computing the current one.
//
// Layout choices (ours, beyond the seed):
// - A's tile is stored transposed (As[k][m]) so a thread reads its TM rows with 16-byte loads;
//   rows are padded by 4 floats to spread the transposing stores over more banks.
// - A thread's TN columns are TN/4 float4 chunks strided by (BN/TN)*4, so the float4 reads of
//   Bs by a warp are contiguous (conflict-free) and C stores are coalesced.
// Edges: a float4 is used only when it lies wholly inside the matrix and the row stride is a
// multiple of 4 (16-byte aligned); otherwise elements are loaded one by one with zero fill, and
// C is stored element by element with bounds checks. Correct for every M, N, K >= 1.
#if !defined(BM) || !defined(BN) || !defined(BK) || !defined(TM) || !defined(TN)
#error "BM, BN, BK, TM and TN must be defined"
#endif
#ifndef PREFETCH
#define PREFETCH 0
#endif
#if (TM % 4) != 0 || (TN % 4) != 0 || (BK % 4) != 0
#error "TM, TN and BK must be multiples of 4"
#endif

#define THREADS ((BM / TM) * (BN / TN))
#define A_LOADS (BM * BK / 4 / THREADS)
#define B_LOADS (BK * BN / 4 / THREADS)
#define AS_STRIDE (BM + 4)
#define TCOLS (BN / TN)

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
    __shared__ __align__(16) float As[BK * AS_STRIDE];
    __shared__ __align__(16) float Bs[BK * BN];

    const int tiles_n = (N + BN - 1) / BN;
    const int tile_row = blockIdx.x / tiles_n;
    const int tile_col = blockIdx.x - tile_row * tiles_n;
    const int bm = tile_row * BM;
    const int bn = tile_col * BN;
    const int tid = threadIdx.x;
    const int tx = tid % TCOLS;
    const int ty = tid / TCOLS;
    const bool a_aligned = (K & 3) == 0;
    const bool b_aligned = (N & 3) == 0;

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;

    float4 ra_next[A_LOADS];
    float4 rb_next[B_LOADS];

    // Global -> registers for the tile starting at k0.
#define LOAD_TILE(k0)                                                                          \
    _Pragma("unroll") for (int l = 0; l < A_LOADS; ++l) {                                       \
        const int i = tid + l * THREADS;                                                        \
        ra_next[l] = load4_guarded(A, bm + i / (BK / 4), (k0) + (i % (BK / 4)) * 4, M, K,      \
                                   a_aligned);                                                  \
    }                                                                                           \
    _Pragma("unroll") for (int l = 0; l < B_LOADS; ++l) {                                       \
        const int i = tid + l * THREADS;                                                        \
        rb_next[l] = load4_guarded(B, (k0) + i / (BN / 4), bn + (i % (BN / 4)) * 4, K, N,      \
                                   b_aligned);                                                  \
    }

    // Registers -> shared memory (A transposed).
#define STORE_TILE()                                                                            \
    _Pragma("unroll") for (int l = 0; l < A_LOADS; ++l) {                                       \
        const int i = tid + l * THREADS;                                                        \
        const int r = i / (BK / 4);                                                             \
        const int c = (i % (BK / 4)) * 4;                                                       \
        As[(c + 0) * AS_STRIDE + r] = ra_next[l].x;                                             \
        As[(c + 1) * AS_STRIDE + r] = ra_next[l].y;                                             \
        As[(c + 2) * AS_STRIDE + r] = ra_next[l].z;                                             \
        As[(c + 3) * AS_STRIDE + r] = ra_next[l].w;                                             \
    }                                                                                           \
    _Pragma("unroll") for (int l = 0; l < B_LOADS; ++l) {                                       \
        const int i = tid + l * THREADS;                                                        \
        *reinterpret_cast<float4*>(&Bs[(i / (BN / 4)) * BN + (i % (BN / 4)) * 4]) = rb_next[l]; \
    }

    LOAD_TILE(0);
    for (int k0 = 0; k0 < K; k0 += BK) {
        STORE_TILE();
        __syncthreads();
#if PREFETCH
        // Issue the next tile's global loads now; they complete while this tile is computed.
        if (k0 + BK < K) {
            LOAD_TILE(k0 + BK);
        }
#endif

#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float ra[TM];
            float rb[TN];
#pragma unroll
            for (int i = 0; i < TM; i += 4) {
                const float4 v =
                    *reinterpret_cast<const float4*>(&As[k * AS_STRIDE + ty * TM + i]);
                ra[i + 0] = v.x; ra[i + 1] = v.y; ra[i + 2] = v.z; ra[i + 3] = v.w;
            }
#pragma unroll
            for (int j = 0; j < TN / 4; ++j) {
                const float4 v =
                    *reinterpret_cast<const float4*>(&Bs[k * BN + j * TCOLS * 4 + tx * 4]);
                rb[4 * j + 0] = v.x; rb[4 * j + 1] = v.y; rb[4 * j + 2] = v.z; rb[4 * j + 3] = v.w;
            }
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(ra[i], rb[j], acc[i][j]);
        }
        __syncthreads();
#if !PREFETCH
        if (k0 + BK < K) {
            LOAD_TILE(k0 + BK);
        }
#endif
    }

#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int row = bm + ty * TM + i;
        if (row >= M) break;
        float* crow = C + (size_t)row * N;
#pragma unroll
        for (int j = 0; j < TN / 4; ++j) {
            const int col = bn + j * TCOLS * 4 + tx * 4;
            if (b_aligned && col + 3 < N) {
                *reinterpret_cast<float4*>(crow + col) = make_float4(
                    acc[i][4 * j], acc[i][4 * j + 1], acc[i][4 * j + 2], acc[i][4 * j + 3]);
            } else {
#pragma unroll
                for (int q = 0; q < 4; ++q)
                    if (col + q < N) crow[col + q] = acc[i][4 * j + q];
            }
        }
    }
}
