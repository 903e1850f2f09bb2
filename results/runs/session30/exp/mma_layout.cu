// Checks the fragment layout assumed for mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32
// (and what cvt.rna.tf32.f32 does to special values) on the GPU, before the CPU emulator and
// the gemm_tf32x3 template rely on it. g = lane / 4, t = lane % 4:
//   A (16 x 8, row): a0 = A[g][t], a1 = A[g + 8][t], a2 = A[g][t + 4], a3 = A[g + 8][t + 4]
//   B (8 x 8, col):  b0 = B[t][g], b1 = B[t + 4][g]
//   C (16 x 8):      c0 = C[g][2t], c1 = C[g][2t + 1], c2 = C[g + 8][2t], c3 = C[g + 8][2t + 1]
// Build: nvcc -O2 -arch=sm_90a mma_layout.cu -o mma_layout
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>

__global__ void mma(const float* A, const float* B, const float* C, float* D)
{
    const int lane = threadIdx.x, g = lane / 4, t = lane % 4;
    uint32_t a[4], b[2];
    float c[4], d[4];
    const float av[4] = {A[g * 8 + t], A[(g + 8) * 8 + t], A[g * 8 + t + 4], A[(g + 8) * 8 + t + 4]};
    const float bv[2] = {B[t * 8 + g], B[(t + 4) * 8 + g]};
    for (int i = 0; i < 4; ++i) asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(a[i]) : "f"(av[i]));
    for (int i = 0; i < 2; ++i) asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(b[i]) : "f"(bv[i]));
    c[0] = C[g * 8 + 2 * t];
    c[1] = C[g * 8 + 2 * t + 1];
    c[2] = C[(g + 8) * 8 + 2 * t];
    c[3] = C[(g + 8) * 8 + 2 * t + 1];
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
                 "{%8,%9}, {%10,%11,%12,%13};"
                 : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]),
                   "f"(c[1]), "f"(c[2]), "f"(c[3]));
    D[g * 8 + 2 * t] = d[0];
    D[g * 8 + 2 * t + 1] = d[1];
    D[(g + 8) * 8 + 2 * t] = d[2];
    D[(g + 8) * 8 + 2 * t + 1] = d[3];
}

// What cvt.rna.tf32.f32 gives (as bits) for x.
__global__ void cvt(const float* x, uint32_t* out, int n)
{
    const int i = threadIdx.x;
    if (i < n) {
        uint32_t r;
        asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x[i]));
        out[i] = r;
    }
}

int main()
{
    float A[128], B[64], C[128], D[128];
    // Small integers: exact in TF32, so the product is exact and any misplacement shows.
    for (int i = 0; i < 128; ++i) A[i] = (float)((i * 7) % 13 - 6);
    for (int i = 0; i < 64; ++i) B[i] = (float)((i * 5) % 11 - 5);
    for (int i = 0; i < 128; ++i) C[i] = (float)(i % 9);
    float *dA, *dB, *dC, *dD;
    cudaMalloc(&dA, 512);
    cudaMalloc(&dB, 256);
    cudaMalloc(&dC, 512);
    cudaMalloc(&dD, 512);
    cudaMemcpy(dA, A, 512, cudaMemcpyHostToDevice);
    cudaMemcpy(dB, B, 256, cudaMemcpyHostToDevice);
    cudaMemcpy(dC, C, 512, cudaMemcpyHostToDevice);
    mma<<<1, 32>>>(dA, dB, dC, dD);
    cudaMemcpy(D, dD, 512, cudaMemcpyDeviceToHost);
    int bad = 0;
    for (int m = 0; m < 16; ++m)
        for (int n = 0; n < 8; ++n) {
            float r = C[m * 8 + n];
            for (int k = 0; k < 8; ++k) r += A[m * 8 + k] * B[k * 8 + n];
            if (r != D[m * 8 + n]) ++bad;
        }
    printf("mma m16n8k8 tf32 layout: %s (%d of 128 wrong)\n", bad ? "WRONG" : "as assumed", bad);
    const float xs[] = {1.0f, 1.0f + 1.0f / 4096, 1.0f + 3.0f / 4096, 1.0f + 1.0f / 2048 + 1.0f / 4096,
                        INFINITY, -INFINITY, NAN, 3.4028235e38f, 1e-40f, -0.0f, 0.1f};
    const int n = sizeof(xs) / sizeof(xs[0]);
    float* dx;
    uint32_t* dr;
    uint32_t r[16];
    cudaMalloc(&dx, sizeof(xs));
    cudaMalloc(&dr, 64);
    cudaMemcpy(dx, xs, sizeof(xs), cudaMemcpyHostToDevice);
    cvt<<<1, 32>>>(dx, dr, n);
    cudaMemcpy(r, dr, 4 * n, cudaMemcpyDeviceToHost);
    for (int i = 0; i < n; ++i) {
        uint32_t xb;
        memcpy(&xb, &xs[i], 4);
        float rf;
        memcpy(&rf, &r[i], 4);
        printf("cvt.rna.tf32 %.9g (0x%08x) -> 0x%08x (%.9g)\n", xs[i], xb, r[i], rf);
    }
    printf("cuda: %s\n", cudaGetErrorString(cudaGetLastError()));
    return bad != 0;
}
