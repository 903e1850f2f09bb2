// Launches one exported SGEMM header a few times, for a profiler (scripts/gpu.sh, NCU=1).
// Build: nvcc -std=c++17 -O2 -arch=sm_90a -DHELPER=autotune_gemm_4096x4096x4096 -DPROF_M=4096
//        -DPROF_N=4096 -DPROF_K=4096 [-DPROF_NT] profile.cu   (gemm.cuh: autotune export
//        --format cuda-header; -DPROF_NT for a header exported for layout nt, B stored N x K)
#include "gemm.cuh"
#include <cstdio>
int main() {
  const size_t M = PROF_M, N = PROF_N, K = PROF_K;
  float *A, *B, *C;
  cudaMalloc(&A, M * K * 4); cudaMalloc(&B, K * N * 4); cudaMalloc(&C, M * N * 4);
  cudaMemset(A, 0, M * K * 4); cudaMemset(B, 0, K * N * 4);
#ifdef PROF_NT
  const int ldb = (int)K;
#else
  const int ldb = (int)N;
#endif
  cudaError_t e = cudaSuccess;
  for (int i = 0; i < 3 && e == cudaSuccess; ++i)
    e = HELPER(A, (int)K, 0, B, ldb, 0, C, (int)N, 0, 1, 1.0f, 0.0f, 0);
  cudaDeviceSynchronize();
  printf("%s\n", cudaGetErrorString(e));
  return e != cudaSuccess;
}
