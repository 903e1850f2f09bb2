// Exploration (session 30, issue 26): M = 1 plain GEMM, C[1 x N] = x[1 x K] * B[K x N] (row-major),
// a column sum of B weighted by x. Ours tuned reached 0.83-0.85x cuBLAS on the H100 at 1x4096x4096,
// 1x3001x2003 and 1x768x512. This program times candidate designs against cuBLAS in one process,
// L2 flushed before every sample, to find where the time goes before a family is written:
//   split   : the gemm_small_m_splitk design (threads along N, K split in the block and across
//             blocks, last block reduces), with the number of K chunks chosen at run time
//   cluster : K split across the blocks of a thread-block cluster, reduced through distributed
//             shared memory (sm_90), no workspace and no second pass
//   atomic  : partial sums added into C with atomics after a memset (a lower bound for a fix-up)
//   stream  : a plain read of B (the roofline of any design)
// Build: nvcc -O3 -std=c++17 -arch=sm_90a colsum.cu -lcublas -o colsum
// Run:   ./colsum > table.md   (./colsum ncu: only cuBLAS and the stream kernel, once per shape, for ncu)
#include <cooperative_groups.h>
#ifndef __CUDACC_RTC__
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>
#endif

namespace cg = cooperative_groups;

#define CK(x)                                                                                     \
    do {                                                                                          \
        cudaError_t e_ = (x);                                                                     \
        if (e_ != cudaSuccess) {                                                                  \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));    \
            exit(1);                                                                              \
        }                                                                                         \
    } while (0)

template <bool PF>
__device__ __forceinline__ float4 ld4(const float* p)
{
    if (PF) {
        float4 v;
        asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.f32 {%0,%1,%2,%3}, [%4];"
                     : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
                     : "l"(p));
        return v;
    }
    return __ldg(reinterpret_cast<const float4*>(p));
}

// acc[4] += sum over this thread's rows k in [kb, ke) (k = kb + ty, + KS, ...) of x[k] * B[k][cols].
template <int KS, int UNROLL, bool PF>
__device__ __forceinline__ void rows(int N, const float* __restrict__ x, const float* __restrict__ B,
                                     int cc, bool vec, int kb, int ke, int ty, float (&acc)[4])
{
    int k = kb + ty;
    if (vec) {
        for (; k + KS * (UNROLL - 1) < ke; k += KS * UNROLL) {
            float4 b[UNROLL];
            float a[UNROLL];
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) {
                b[u] = ld4<PF>(B + (size_t)(k + KS * u) * N + cc);
                a[u] = __ldg(x + k + KS * u);
            }
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) {
                acc[0] = fmaf(a[u], b[u].x, acc[0]);
                acc[1] = fmaf(a[u], b[u].y, acc[1]);
                acc[2] = fmaf(a[u], b[u].z, acc[2]);
                acc[3] = fmaf(a[u], b[u].w, acc[3]);
            }
        }
        for (; k < ke; k += KS) {
            const float4 b = ld4<PF>(B + (size_t)k * N + cc);
            const float a = __ldg(x + k);
            acc[0] = fmaf(a, b.x, acc[0]);
            acc[1] = fmaf(a, b.y, acc[1]);
            acc[2] = fmaf(a, b.z, acc[2]);
            acc[3] = fmaf(a, b.w, acc[3]);
        }
    } else {
        int c[4];
#pragma unroll
        for (int v = 0; v < 4; ++v) c[v] = min(cc + v, N - 1);
        for (; k + KS * (UNROLL - 1) < ke; k += KS * UNROLL) {
            float b[UNROLL][4];
            float a[UNROLL];
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) {
#pragma unroll
                for (int v = 0; v < 4; ++v) b[u][v] = __ldg(B + (size_t)(k + KS * u) * N + c[v]);
                a[u] = __ldg(x + k + KS * u);
            }
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) {
#pragma unroll
                for (int v = 0; v < 4; ++v) acc[v] = fmaf(a[u], b[u][v], acc[v]);
            }
        }
        for (; k < ke; k += KS) {
            const float a = __ldg(x + k);
#pragma unroll
            for (int v = 0; v < 4; ++v) acc[v] = fmaf(a, __ldg(B + (size_t)k * N + c[v]), acc[v]);
        }
    }
}

// The block's column sums over its K chunk into part[COLS] (shared), summed over ty in order.
template <int BX, int KS>
__device__ __forceinline__ void block_reduce(float (&acc)[4], float* red, float* part)
{
    constexpr int COLS = BX * 4;
    const int tx = threadIdx.x, ty = threadIdx.y;
#pragma unroll
    for (int v = 0; v < 4; ++v) red[ty * COLS + tx * 4 + v] = acc[v];
    __syncthreads();
    for (int o = ty * BX + tx; o < COLS; o += BX * KS) {
        float s = red[o];
#pragma unroll
        for (int t = 1; t < KS; ++t) s += red[t * COLS + o];
        part[o] = s;
    }
    __syncthreads();
}

// Column strip blockIdx.x (COLS = 4 * BX columns), K chunk blockIdx.y of `chunk` rows.
template <int BX, int KS, int UNROLL, bool PF>
__global__ void __launch_bounds__(BX* KS) split_kernel(int N, int K, const float* __restrict__ x,
                                                       const float* __restrict__ B, float* C,
                                                       float* ws, unsigned* counters, int splits,
                                                       int chunk)
{
    constexpr int COLS = BX * 4;
    __shared__ float red[KS * COLS];
    __shared__ float part[COLS];
    const int n0 = blockIdx.x * COLS;
    const int split = blockIdx.y;
    const int kb = split * chunk, ke = min(K, kb + chunk);
    const bool vec = N % 4 == 0;
    const int cc = vec ? min(n0 + (int)threadIdx.x * 4, N - 4) : n0 + (int)threadIdx.x * 4;
    float acc[4] = {0.f, 0.f, 0.f, 0.f};
    rows<KS, UNROLL, PF>(N, x, B, cc, vec, kb, ke, threadIdx.y, acc);
    block_reduce<BX, KS>(acc, red, part);
    const int tid = threadIdx.y * BX + threadIdx.x;
    if (splits == 1) {
        for (int o = tid; o < COLS; o += BX * KS)
            if (n0 + o < N) C[n0 + o] = part[o];
        return;
    }
    for (int o = tid; o < COLS; o += BX * KS)
        if (n0 + o < N) __stcg(ws + (size_t)split * N + n0 + o, part[o]);
    __threadfence();
    __syncthreads();
    unsigned seen = 0;
    if (tid == 0) seen = atomicAdd(counters + blockIdx.x, 1u);
    if (!__syncthreads_or(tid == 0 && seen == (unsigned)(splits - 1))) return;
    __threadfence();
    for (int o = tid; o < COLS; o += BX * KS) {
        if (n0 + o >= N) continue;
        float s = -0.0f;
        int z = 0;
        for (; z + 8 <= splits; z += 8) {
            float p[8];
#pragma unroll
            for (int d = 0; d < 8; ++d) p[d] = __ldcg(ws + (size_t)(z + d) * N + n0 + o);
#pragma unroll
            for (int d = 0; d < 8; ++d) s += p[d];
        }
        for (; z < splits; ++z) s += __ldcg(ws + (size_t)z * N + n0 + o);
        C[n0 + o] = s;
    }
    if (tid == 0) atomicExch(counters + blockIdx.x, 0u);
}

// The cluster's blocks (along y, CL of them) split K; block rank r sums columns [r, r + CL, ...)
// of the tile over the cluster's ranks in order, from their shared memory.
template <int BX, int KS, int UNROLL, bool PF>
__global__ void __launch_bounds__(BX* KS) cluster_kernel(int N, int K, const float* __restrict__ x,
                                                         const float* __restrict__ B, float* C,
                                                         int chunk)
{
    constexpr int COLS = BX * 4;
    __shared__ float red[KS * COLS];
    __shared__ float part[COLS];
    cg::cluster_group cluster = cg::this_cluster();
    const int CL = (int)cluster.num_blocks();
    const int rank = (int)cluster.block_rank();
    const int n0 = blockIdx.x * COLS;
    const int kb = blockIdx.y * chunk, ke = min(K, kb + chunk);
    const bool vec = N % 4 == 0;
    const int cc = vec ? min(n0 + (int)threadIdx.x * 4, N - 4) : n0 + (int)threadIdx.x * 4;
    float acc[4] = {0.f, 0.f, 0.f, 0.f};
    rows<KS, UNROLL, PF>(N, x, B, cc, vec, kb, ke, threadIdx.y, acc);
    block_reduce<BX, KS>(acc, red, part);
    cluster.sync();
    const int tid = threadIdx.y * BX + threadIdx.x;
    const int per = (COLS + CL - 1) / CL;
    for (int o = rank * per + tid; o < min(COLS, (rank + 1) * per); o += BX * KS) {
        float s = -0.0f;
        for (int q = 0; q < CL; ++q) s += cluster.map_shared_rank(part, q)[o];
        if (n0 + o < N) C[n0 + o] = s;
    }
    cluster.sync();
}

// Partial column sums added into C (zeroed by a memset in the timed region).
template <int BX, int KS, int UNROLL, bool PF>
__global__ void __launch_bounds__(BX* KS) atomic_kernel(int N, int K, const float* __restrict__ x,
                                                        const float* __restrict__ B, float* C,
                                                        int chunk)
{
    constexpr int COLS = BX * 4;
    __shared__ float red[KS * COLS];
    __shared__ float part[COLS];
    const int n0 = blockIdx.x * COLS;
    const int kb = blockIdx.y * chunk, ke = min(K, kb + chunk);
    const bool vec = N % 4 == 0;
    const int cc = vec ? min(n0 + (int)threadIdx.x * 4, N - 4) : n0 + (int)threadIdx.x * 4;
    float acc[4] = {0.f, 0.f, 0.f, 0.f};
    rows<KS, UNROLL, PF>(N, x, B, cc, vec, kb, ke, threadIdx.y, acc);
    block_reduce<BX, KS>(acc, red, part);
    for (int o = threadIdx.y * BX + threadIdx.x; o < COLS; o += BX * KS)
        if (n0 + o < N) atomicAdd(C + n0 + o, part[o]);
}

// Reads n floats (n % 4 == 0) once; one sum per block (keeps the loads alive).
__global__ void stream_kernel(const float4* __restrict__ p, size_t n4, float* out)
{
    float s = 0.f;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n4;
         i += (size_t)gridDim.x * blockDim.x) {
        const float4 v = __ldg(p + i);
        s += v.x + v.y + v.z + v.w;
    }
    if (s == 1234.5f) out[blockIdx.x] = s;
}

#ifdef __CUDACC_RTC__
// Only for a syntax check of the device code with NVRTC (no nvcc where it is written).
template __global__ void split_kernel<32, 8, 8, true>(int, int, const float*, const float*, float*,
                                                       float*, unsigned*, int, int);
template __global__ void split_kernel<64, 4, 4, false>(int, int, const float*, const float*, float*,
                                                        float*, unsigned*, int, int);
template __global__ void cluster_kernel<128, 4, 4, true>(int, int, const float*, const float*,
                                                          float*, int);
template __global__ void atomic_kernel<64, 8, 4, false>(int, int, const float*, const float*,
                                                         float*, int);
#else
struct Shape {
    int n, k;
};

struct Bufs {
    float *x, *B, *C, *ws, *flush;
    unsigned* counters;
    size_t flush_bytes;
};

static cudaStream_t stream;

// Median of `reps` samples of f, each after an L2 flush, timed with events.
static float time_ms(const Bufs& b, const std::function<void()>& f, int reps = 25)
{
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    for (int i = 0; i < 3; ++i) f();
    std::vector<float> t;
    for (int i = 0; i < reps; ++i) {
        CK(cudaMemsetAsync(b.flush, i & 0xff, b.flush_bytes, stream));
        CK(cudaEventRecord(e0, stream));
        f();
        CK(cudaEventRecord(e1, stream));
        CK(cudaEventSynchronize(e1));
        float ms;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        t.push_back(ms);
    }
    CK(cudaGetLastError());
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

static std::vector<double> reference(const Shape& s, const std::vector<float>& x,
                                     const std::vector<float>& B)
{
    std::vector<double> r(s.n, 0.0);
    for (int k = 0; k < s.k; ++k)
        for (int n = 0; n < s.n; ++n) r[n] += (double)x[k] * B[(size_t)k * s.n + n];
    return r;
}

// Max |C - ref| / (sum |x||B| column bound); NaN (unwritten) gives 1e9.
static double check(const Bufs& b, const Shape& s, const std::vector<double>& ref,
                    const std::vector<double>& bound)
{
    std::vector<float> c(s.n);
    CK(cudaMemcpy(c.data(), b.C, s.n * 4, cudaMemcpyDeviceToHost));
    double worst = 0;
    for (int n = 0; n < s.n; ++n) {
        if (!std::isfinite(c[n])) return 1e9;
        worst = std::max(worst, std::fabs(c[n] - ref[n]) / (bound[n] + 1e-30));
    }
    return worst;
}

struct Result {
    std::string design, config;
    float ms;
};

int main(int argc, char** argv)
{
    const bool ncu = argc > 1 && std::string(argv[1]) == "ncu";
    CK(cudaStreamCreate(&stream));
    cublasHandle_t h;
    if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) return 1;
    cublasSetStream(h, stream);
    int sms;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    printf("# %s, %d SMs\n", prop.name, sms);

    const std::vector<Shape> shapes = {{768, 512},   {1000, 1000}, {2048, 2048}, {3001, 2003},
                                       {4096, 1024}, {1024, 4096}, {4096, 4096}, {8192, 4096},
                                       {11008, 4096}, {4096, 11008}};
    size_t max_b = 0, max_n = 0;
    for (auto& s : shapes) {
        max_b = std::max(max_b, (size_t)s.n * s.k);
        max_n = std::max(max_n, (size_t)s.n);
    }
    Bufs b;
    b.flush_bytes = 256u << 20;
    CK(cudaMalloc(&b.x, 16384 * 4));
    CK(cudaMalloc(&b.B, max_b * 4));
    CK(cudaMalloc(&b.C, max_n * 4));
    CK(cudaMalloc(&b.ws, 128 * max_n * 4));
    CK(cudaMalloc(&b.counters, 4096 * 4));
    CK(cudaMemset(b.counters, 0, 4096 * 4));
    CK(cudaMalloc(&b.flush, b.flush_bytes));

    std::mt19937 rng(3001);
    std::uniform_real_distribution<float> U(-1.f, 1.f);

    // The configurations tried: (BX, KS, UNROLL, PF) over every design.
    using Launch = std::function<cudaError_t(const Shape&, int /*splits*/)>;
    struct Cfg {
        std::string name;
        int bx, ks, unroll;
        Launch split, cluster, atomic;
    };
    std::vector<Cfg> cfgs;
#define CFG(BX, KS, U, PF)                                                                        \
    cfgs.push_back(Cfg{                                                                           \
        "BX" #BX "_KS" #KS "_U" #U "_PF" #PF, BX, KS, U,                                          \
        [&](const Shape& s, int splits) {                                                         \
            const int tiles = (s.n + 4 * BX - 1) / (4 * BX);                                      \
            const int chunk = ((s.k + splits - 1) / splits + 3) / 4 * 4;                          \
            const int real = (s.k + chunk - 1) / chunk;                                           \
            split_kernel<BX, KS, U, PF><<<dim3(tiles, real), dim3(BX, KS), 0, stream>>>(          \
                s.n, s.k, b.x, b.B, b.C, b.ws, b.counters, real, chunk);                          \
            return cudaGetLastError();                                                            \
        },                                                                                        \
        [&](const Shape& s, int cl) {                                                             \
            const int tiles = (s.n + 4 * BX - 1) / (4 * BX);                                      \
            const int chunk = (s.k + cl - 1) / cl;                                                \
            cudaLaunchConfig_t lc = {};                                                           \
            lc.gridDim = dim3(tiles, cl);                                                         \
            lc.blockDim = dim3(BX, KS);                                                           \
            lc.stream = stream;                                                                   \
            cudaLaunchAttribute at[1];                                                            \
            at[0].id = cudaLaunchAttributeClusterDimension;                                       \
            at[0].val.clusterDim.x = 1;                                                           \
            at[0].val.clusterDim.y = cl;                                                          \
            at[0].val.clusterDim.z = 1;                                                           \
            lc.attrs = at;                                                                        \
            lc.numAttrs = 1;                                                                      \
            if (cl > 8)                                                                           \
                CK(cudaFuncSetAttribute(cluster_kernel<BX, KS, U, PF>,                            \
                                        cudaFuncAttributeNonPortableClusterSizeAllowed, 1));      \
            return cudaLaunchKernelEx(&lc, cluster_kernel<BX, KS, U, PF>, s.n, s.k,               \
                                      (const float*)b.x, (const float*)b.B, b.C, chunk);          \
        },                                                                                        \
        [&](const Shape& s, int splits) {                                                         \
            const int tiles = (s.n + 4 * BX - 1) / (4 * BX);                                      \
            const int chunk = (s.k + splits - 1) / splits;                                        \
            CK(cudaMemsetAsync(b.C, 0, s.n * 4, stream));                                         \
            atomic_kernel<BX, KS, U, PF><<<dim3(tiles, splits), dim3(BX, KS), 0, stream>>>(       \
                s.n, s.k, b.x, b.B, b.C, chunk);                                                  \
            return cudaGetLastError();                                                            \
        }})
    CFG(32, 4, 4, 0);
    CFG(32, 8, 4, 0);
    CFG(32, 8, 8, 0);
    CFG(32, 16, 4, 0);
    CFG(32, 8, 8, 1);
    CFG(64, 4, 8, 0);
    CFG(64, 4, 4, 0);
    CFG(64, 8, 4, 0);
    CFG(64, 8, 4, 1);
    CFG(64, 4, 8, 1);
    CFG(128, 2, 8, 0);
    CFG(128, 4, 4, 0);
    CFG(128, 4, 4, 1);
    CFG(128, 2, 8, 1);
    const std::vector<int> splits_list = {1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 32, 48, 64};
    const std::vector<int> cluster_list = {2, 4, 8, 16};

    FILE* full = fopen(ncu ? "/dev/null" : "full.tsv", "w");
    printf("| 1xNxK | cuBLAS gemm us | cuBLAS gemv us | stream us | best split (config, S) | "
           "best cluster | best atomic |\n|---|---:|---:|---:|---|---|---|\n");
    for (const Shape& s : shapes) {
        std::vector<float> hx(s.k), hB((size_t)s.k * s.n);
        for (auto& v : hx) v = U(rng);
        for (auto& v : hB) v = U(rng);
        CK(cudaMemcpy(b.x, hx.data(), s.k * 4, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(b.B, hB.data(), hB.size() * 4, cudaMemcpyHostToDevice));
        const auto ref = reference(s, hx, hB);
        std::vector<double> bound(s.n, 0.0);
        for (int k = 0; k < s.k; ++k)
            for (int n = 0; n < s.n; ++n) bound[n] += std::fabs((double)hx[k] * hB[(size_t)k * s.n + n]);
        const float one = 1.f, zero = 0.f;
        auto gemm = [&] {
            cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, s.n, 1, s.k, &one, b.B, s.n, b.x, s.k, &zero,
                        b.C, s.n);
        };
        auto gemv = [&] { cublasSgemv(h, CUBLAS_OP_N, s.n, s.k, &one, b.B, s.n, b.x, 1, &zero, b.C, 1); };
        const int n4 = (int)(((size_t)s.n * s.k) / 4);
        auto stream_f = [&] { stream_kernel<<<sms * 8, 256, 0, stream>>>((const float4*)b.B, n4, b.ws); };
        if (ncu) {
            gemm();
            gemv();
            stream_f();
            CK(cudaDeviceSynchronize());
            continue;
        }
        const float t_gemm = time_ms(b, gemm), t_gemv = time_ms(b, gemv), t_stream = time_ms(b, stream_f);
        fprintf(full, "%dx%d\tcublas_gemm\t-\t%.2f\n", s.n, s.k, t_gemm * 1e3);
        fprintf(full, "%dx%d\tcublas_gemv\t-\t%.2f\n", s.n, s.k, t_gemv * 1e3);
        fprintf(full, "%dx%d\tstream\t-\t%.2f\n", s.n, s.k, t_stream * 1e3);
        Result best[3] = {{"split", "", 1e9}, {"cluster", "", 1e9}, {"atomic", "", 1e9}};
        for (auto& c : cfgs) {
            for (int d = 0; d < 3; ++d) {
                const auto& list = d == 1 ? cluster_list : splits_list;
                for (int sp : list) {
                    if (d != 1 && sp > 1 && (s.k + sp - 1) / sp < c.ks * c.unroll) continue;
                    if (d == 2 && sp == 1) continue;
                    const Launch& L = d == 0 ? c.split : d == 1 ? c.cluster : c.atomic;
                    auto f = [&] { L(s, sp); };
                    const std::string cfg = c.name + "_S" + std::to_string(sp);
                    CK(cudaMemset(b.C, 0xff, s.n * 4));
                    const cudaError_t le = L(s, sp);
                    if (le != cudaSuccess) {
                        printf("NOLAUNCH %s %s %dx%d: %s\n", best[d].design.c_str(), cfg.c_str(), s.n,
                               s.k, cudaGetErrorString(le));
                        (void)cudaGetLastError(); // not sticky: clear it for the next launch
                        continue;
                    }
                    CK(cudaDeviceSynchronize());
                    const double err = check(b, s, ref, bound);
                    if (err > 2.0 * s.k * 6e-8) {
                        printf("WRONG %s %s %dx%d err %g\n", best[d].design.c_str(), cfg.c_str(), s.n, s.k, err);
                        continue;
                    }
                    const float t = time_ms(b, f);
                    fprintf(full, "%dx%d\t%s\t%s\t%.2f\n", s.n, s.k, best[d].design.c_str(), cfg.c_str(), t * 1e3);
                    if (t < best[d].ms) best[d] = {best[d].design, cfg, t};
                }
            }
        }
        if (!ncu) {
            printf("| 1x%dx%d | %.1f | %.1f | %.1f |", s.n, s.k, t_gemm * 1e3, t_gemv * 1e3, t_stream * 1e3);
            for (auto& r : best) printf(" %s %.1f (%.3fx) |", r.config.c_str(), r.ms * 1e3, t_gemm / r.ms);
            printf("\n");
            fflush(stdout);
        }
    }
    fclose(full);
    return 0;
}
#endif
