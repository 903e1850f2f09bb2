// A C++ product using headers exported by `autotune export --format cuda-header` (see
// scripts/gpu.sh, EXPORT_CHECK=1): gemm 2048^3 (included twice, to exercise the guards), gemv
// 256x65536 (split-K: zeroes y first) and gemv 4096x4096, each checked against a CPU reference.
// Build: nvcc -std=c++17 -O2 -arch=sm_90 main.cu
#include "gemm.cuh"
#include "gemm.cuh"
#include "gemv.cuh"
#include "gemv2.cuh"
#include <cstdio>
#include <vector>
#include <cmath>
#include <cstdlib>
static float rnd() { return (float)rand() / RAND_MAX - 0.5f; }
int main() {
  int bad = 0;
  { const int M=2048,N=2048,K=2048; std::vector<float> a((size_t)M*K), b((size_t)K*N), c((size_t)M*N);
    for (auto& v: a) v = rnd(); for (auto& v: b) v = rnd();
    float *A,*B,*C; cudaMalloc(&A,a.size()*4); cudaMalloc(&B,b.size()*4); cudaMalloc(&C,c.size()*4);
    cudaMemcpy(A,a.data(),a.size()*4,cudaMemcpyHostToDevice); cudaMemcpy(B,b.data(),b.size()*4,cudaMemcpyHostToDevice);
    cudaError_t e = autotune_gemm_2048x2048x2048(A,B,C,0); cudaDeviceSynchronize();
    cudaMemcpy(c.data(),C,c.size()*4,cudaMemcpyDeviceToHost);
    double maxerr=0; for (int t=0;t<2000;t++){ int i=rand()%M, j=rand()%N; double r=0; for(int k=0;k<K;k++) r+=(double)a[(size_t)i*K+k]*b[(size_t)k*N+j]; maxerr=fmax(maxerr,fabs(r-c[(size_t)i*N+j])); }
    printf("gemm: %s maxerr %.3g\n", cudaGetErrorString(e), maxerr); bad |= e!=cudaSuccess || maxerr>1e-2; }
  for (int which=0; which<2; which++) { int M = which?4096:256, K = which?4096:65536; std::vector<float> a((size_t)M*K), x(K), y(M, 123.f);
    for (auto& v: a) v = rnd(); for (auto& v: x) v = rnd();
    float *A,*X,*Y; cudaMalloc(&A,a.size()*4); cudaMalloc(&X,x.size()*4); cudaMalloc(&Y,y.size()*4);
    cudaMemcpy(A,a.data(),a.size()*4,cudaMemcpyHostToDevice); cudaMemcpy(X,x.data(),x.size()*4,cudaMemcpyHostToDevice);
    cudaMemcpy(Y,y.data(),y.size()*4,cudaMemcpyHostToDevice);
    cudaError_t e = which ? autotune_gemv_4096x4096(A,X,Y,0) : autotune_gemv_256x65536(A,X,Y,0); cudaDeviceSynchronize();
    cudaMemcpy(y.data(),Y,y.size()*4,cudaMemcpyDeviceToHost);
    double maxerr=0; for(int i=0;i<M;i++){ double r=0; for(int k=0;k<K;k++) r+=(double)a[(size_t)i*K+k]*x[k]; maxerr=fmax(maxerr,fabs(r-y[i])); }
    printf("gemv %dx%d: %s maxerr %.3g\n", M, K, cudaGetErrorString(e), maxerr); bad |= e!=cudaSuccess || maxerr>1e-2; }
  printf(bad ? "FAIL\n" : "PASS\n"); return bad;
}
