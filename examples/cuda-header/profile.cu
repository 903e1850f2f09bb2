// Launches one exported SGEMM header a few times, for a profiler (scripts/gpu.sh, NCU=1).
// Build: nvcc -std=c++17 -O2 -arch=sm_90 -DHELPER=autotune_gemm_4096x4096x4096 -DPROF_M=4096
//        -DPROF_N=4096 -DPROF_K=4096 profile.cu   (gemm.cuh: autotune export --format cuda-header)
#include "gemm.cuh"
#include <cstdio>
int main() {
  const size_t M = PROF_M, N = PROF_N, K = PROF_K;
  float *A, *B, *C;
  cudaMalloc(&A, M * K * 4); cudaMalloc(&B, K * N * 4); cudaMalloc(&C, M * N * 4);
  cudaMemset(A, 0, M * K * 4); cudaMemset(B, 0, K * N * 4);
  cudaError_t e = cudaSuccess;
  for (int i = 0; i < 3 && e == cudaSuccess; ++i) e = HELPER(A, B, C, 0);
  cudaDeviceSynchronize();
  printf("%s\n", cudaGetErrorString(e));
  return e != cudaSuccess;
}
