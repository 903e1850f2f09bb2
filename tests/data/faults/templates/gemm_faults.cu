// Test-only family for the fault suite (never built into the binary): a correct tiled SGEMM
// (FAULT = 0) and six ways a generated kernel goes wrong, selected by FAULT:
//   1 writes past the end of C (only the guard canaries notice)   2 reads an illegal address
//   3 never finishes                                              4 returns wrong values
//   5 does not compile                                            6 asks for too much shared memory
//   7 writes NaN
#ifndef FAULT
#error "FAULT must be defined"
#endif

#if FAULT == 5
this is not CUDA and NVRTC must reject it;
#endif

extern "C" __global__ void __launch_bounds__(TILE * TILE)
KERNEL_NAME(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
            float* __restrict__ C)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
#if FAULT == 6
    // With the dynamic request of the space this exceeds what any block may have.
    __shared__ float hog[10 * 1024];
    hog[threadIdx.y * TILE + threadIdx.x] = 0.0f;
#endif
    const int tiles_n = (N + TILE - 1) / TILE;
    const int tile_row = blockIdx.x / tiles_n;
    const int tile_col = blockIdx.x - tile_row * tiles_n;
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = tile_row * TILE + ty;
    const int col = tile_col * TILE + tx;

#if FAULT == 3
    // Spin on a volatile shared flag nobody sets: the compiler must keep the loop.
    __shared__ volatile int never;
    if (tx == 0 && ty == 0) never = 0;
    __syncthreads();
    while (never == 0) {
    }
#endif

    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        As[ty][tx] = (row < M && k0 + tx < K) ? A[(size_t)row * K + k0 + tx] : 0.0f;
        Bs[ty][tx] = (k0 + ty < K && col < N) ? B[(size_t)(k0 + ty) * N + col] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < TILE; ++k) acc = fmaf(As[ty][k], Bs[k][tx], acc);
        __syncthreads();
    }
#if FAULT == 2
    // 4 TiB past A: no allocation lives there.
    acc += A[((size_t)1 << 40) + row];
#endif
#if FAULT == 4
    acc = acc * 1.01f + 0.5f;
#endif
#if FAULT == 6
    acc += hog[(tx + 1) % (TILE * TILE)];
#endif
#if FAULT == 7
    acc = __int_as_float(0x7fc00000);
#endif
    if (row < M && col < N) C[(size_t)row * N + col] = acc;
#if FAULT == 1
    // The result is right, but a few floats land just past the end of C.
    if (blockIdx.x == 0) C[(size_t)M * N + ty * TILE + tx] = 1.0f;
#endif
}
