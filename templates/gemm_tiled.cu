// Shared-memory tiled SGEMM, one thread per element of C (design of seeds/000).
// C[M x N] = A[M x K] * B[K x N], all row-major. Parameter: TILE_SIZE (block is TILE_SIZE^2).
// Correct for every M, N, K >= 1: out-of-range tile elements load as zero, stores are guarded.
// Blocks are numbered linearly (row of tiles by row of tiles) so no grid dimension limit applies.
#ifndef TILE_SIZE
#error "TILE_SIZE must be defined"
#endif

extern "C" __global__ void __launch_bounds__(TILE_SIZE * TILE_SIZE)
KERNEL_NAME(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
            float* __restrict__ C)
{
    __shared__ float As[TILE_SIZE][TILE_SIZE];
    __shared__ float Bs[TILE_SIZE][TILE_SIZE];

    const int tiles_n = (N + TILE_SIZE - 1) / TILE_SIZE;
    const int tile_row = blockIdx.x / tiles_n;
    const int tile_col = blockIdx.x - tile_row * tiles_n;
    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int row = tile_row * TILE_SIZE + ty;
    const int col = tile_col * TILE_SIZE + tx;

    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE_SIZE) {
        const int ak = k0 + tx;
        const int bk = k0 + ty;
        As[ty][tx] = (row < M && ak < K) ? A[(size_t)row * K + ak] : 0.0f;
        Bs[ty][tx] = (bk < K && col < N) ? B[(size_t)bk * N + col] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < TILE_SIZE; ++k) {
            acc = fmaf(As[ty][k], Bs[k][tx], acc);
        }
        __syncthreads();
    }
    if (row < M && col < N) {
        C[(size_t)row * N + col] = acc;
    }
}
