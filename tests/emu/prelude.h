// The CUDA that kernels see in the CPU emulator of tests/emulate.rs: included before each
// kernel, which is then linked with the emulator's runtime (runtime.cpp: the scheduler of
// blocks and threads, warp-level calls, cp.async, the launch and main). Kept light, since
// every kernel parses it.
//
// The test rewrites what C++ cannot take as is: `extern __shared__ T name[];` becomes a pointer
// to the dynamic arena (emu_dynamic_smem), each `__shared__` declaration is followed by its
// registration for poisoning (emu_shared: the array itself is a function-local static, one
// per kernel, which is one per block since blocks do not overlap), each `asm volatile(...)` of
// a known PTX instruction a call of its emu_ function below; and it defines emu_kernel (the
// kernel's name, for messages) and emu_call (the kernel called with its family's signature).

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

struct dim3 {
    unsigned x = 1, y = 1, z = 1;
};
struct alignas(16) float4 {
    float x, y, z, w;
};
struct alignas(8) float2 {
    float x, y;
};
inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
inline float2 make_float2(float x, float y) { return {x, y}; }

// The running thread's indices (set each time the scheduler switches to a thread) and the
// launch's dimensions.
extern dim3 threadIdx, blockIdx, blockDim, gridDim;
inline constexpr int warpSize = 32;

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
#define __shared__ static

template <class A, class B> inline auto min(A a, B b)
{
    using T = std::common_type_t<A, B>;
    return static_cast<T>(a) < static_cast<T>(b) ? static_cast<T>(a) : static_cast<T>(b);
}
template <class A, class B> inline auto max(A a, B b)
{
    using T = std::common_type_t<A, B>;
    return static_cast<T>(a) < static_cast<T>(b) ? static_cast<T>(b) : static_cast<T>(a);
}

// Cache-hinted loads and stores are plain ones here (UBSan checks a float4's or float2's
// alignment at each).
template <class T> inline T __ldg(const T* p) { return *p; }
template <class T> inline T __ldcg(const T* p) { return *p; }
template <class T> inline T __ldcs(const T* p) { return *p; }
template <class T> inline void __stcg(T* p, T v) { *p = v; }

// One OS thread runs every CUDA thread, switching only where a thread waits: memory is
// sequentially consistent, atomics plain read-modify-writes, fences nothing.
inline void __threadfence() {}
template <class T> inline T atomicAdd(T* p, T v)
{
    const T old = *p;
    *p = old + v;
    return old;
}
template <class T> inline T atomicExch(T* p, T v)
{
    const T old = *p;
    *p = v;
    return old;
}

// ---- the runtime's ----
extern const char* const emu_kernel; // the kernel's name, defined by the test
[[noreturn]] void emu_fail(const char* fmt, ...);

// Registers a static shared array for poisoning at every block's start (poisoning it now).
void emu_register_shared(void* p, size_t bytes);
// Registers a `__shared__` array once (`Site`: a lambda type unique to the declaration).
template <class A, class Site> inline void emu_shared(A& a, Site)
{
    static bool registered = false;
    if (!registered) {
        registered = true;
        emu_register_shared(&a, sizeof a);
    }
}

void __syncthreads();
int __syncthreads_or(int p);

// A warp-level call: op (0 shfl, 1 up, 2 down, 3 xor, 4 ballot, 5 any, 6 all, 7 syncwarp)
// with this lane's mask, 4-byte value, source lane, delta or lane mask, and width.
uint32_t emu_warp_call(int op, uint32_t mask, uint32_t value, int arg, int width);
template <class T> inline uint32_t emu_bits(T v)
{
    static_assert(sizeof(T) == 4, "4-byte shuffles only");
    uint32_t b;
    std::memcpy(&b, &v, 4);
    return b;
}
template <class T> inline T emu_from_bits(uint32_t b)
{
    T v;
    std::memcpy(&v, &b, 4);
    return v;
}
template <class T> inline T __shfl_sync(unsigned mask, T v, int src, int width = 32)
{
    return emu_from_bits<T>(emu_warp_call(0, mask, emu_bits(v), src, width));
}
template <class T> inline T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32)
{
    return emu_from_bits<T>(emu_warp_call(1, mask, emu_bits(v), static_cast<int>(delta), width));
}
template <class T> inline T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32)
{
    return emu_from_bits<T>(emu_warp_call(2, mask, emu_bits(v), static_cast<int>(delta), width));
}
template <class T> inline T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32)
{
    return emu_from_bits<T>(emu_warp_call(3, mask, emu_bits(v), lane_mask, width));
}
inline unsigned __ballot_sync(unsigned mask, int p) { return emu_warp_call(4, mask, p != 0, 0, 32); }
inline int __any_sync(unsigned mask, int p)
{
    return static_cast<int>(emu_warp_call(5, mask, p != 0, 0, 32));
}
inline int __all_sync(unsigned mask, int p)
{
    return static_cast<int>(emu_warp_call(6, mask, p != 0, 0, 32));
}
inline void __syncwarp(unsigned mask = 0xffffffffu) { emu_warp_call(7, mask, 0, 0, 32); }

// Shared memory addresses, cp.async and red.v4 (the rewritten inline PTX).
unsigned long long __cvta_generic_to_shared(const void* p);
void* emu_dynamic_smem();
void emu_cp_async(unsigned long long dst, const void* src, int bytes, int src_bytes);
void emu_cp_commit();
void emu_cp_wait(int n);
void emu_red_add_v4(float* p, float a, float b, float c, float d);
// ld.global.nc with a cache hint: `lanes` floats from p (aligned to 4 * lanes bytes) into the
// outputs (the unused ones null).
void emu_ld_nc_n(const float* p, int lanes, float* a, float* b, float* c, float* d);
inline void emu_ld_nc(const float* p, float* a, int lanes) { emu_ld_nc_n(p, lanes, a, 0, 0, 0); }
inline void emu_ld_nc(const float* p, float* a, float* b, int lanes)
{
    emu_ld_nc_n(p, lanes, a, b, 0, 0);
}
inline void emu_ld_nc(const float* p, float* a, float* b, float* c, float* d, int lanes)
{
    emu_ld_nc_n(p, lanes, a, b, c, d);
}

inline float __uint_as_float(unsigned u) { return emu_from_bits<float>(u); }
inline unsigned __float_as_uint(float f) { return emu_bits(f); }

// cvt.rna.tf32.f32: x rounded to TF32 (10 fraction bits; the low 13 bits zero), to nearest with
// ties away from zero; inf and NaN kept, and a finite x past the largest TF32 becomes inf (as
// an H100 does: results/runs/session30/exp/mma_layout.cu).
inline unsigned emu_cvt_rna_tf32(float x)
{
    const uint32_t b = emu_bits(x);
    if ((b & 0x7f800000u) == 0x7f800000u) return b;
    return (b + 0x1000u) & 0xffffe000u;
}

// mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32: d += A B over the warp (runtime.cpp says
// which lane holds what). Every lane of the warp must call it.
void emu_mma_tf32_call(float* d, const uint32_t* a, const uint32_t* b);
inline void emu_mma_tf32(float& d0, float& d1, float& d2, float& d3, unsigned a0, unsigned a1,
                         unsigned a2, unsigned a3, unsigned b0, unsigned b1)
{
    float d[4] = {d0, d1, d2, d3};
    const uint32_t a[4] = {a0, a1, a2, a3}, b[2] = {b0, b1};
    emu_mma_tf32_call(d, a, b);
    d0 = d[0];
    d1 = d[1];
    d2 = d[2];
    d3 = d[3];
}

// wgmma.mma_async.sync.aligned.m64nNk8.f32.tf32.tf32 with both operands in shared memory
// (descriptors a and b): recorded by the thread, done at the wgmma.wait_group that retires its
// group (runtime.cpp says how), so shared memory overwritten before the wait shows.
void emu_wgmma_tf32(int n, unsigned long long a, unsigned long long b, float* d, int scale_d);
// The same with A from registers: this thread's fragment registers a0..a3 (lane 4 g + t of warp
// w: A[16w + g][t], A[16w + g + 8][t], A[16w + g][t + 4], A[16w + g + 8][t + 4]), gathered over
// the warp when every lane has issued; the wait fails if they changed before it.
void emu_wgmma_tf32_rs(int n, const unsigned* a0, const unsigned* a1, const unsigned* a2,
                       const unsigned* a3, unsigned long long b, float* d, int scale_d);
void emu_wgmma_fence();
void emu_wgmma_commit();
void emu_wgmma_wait(int n);
// One thread runs every CUDA thread: the proxies see the same memory.
inline void emu_fence_proxy_async() {}

// The kernel's arguments, for emu_call (written by the test for each kernel's signature).
struct EmuArgs {
    int M, N, K, lda, ldb, ldc;
    long long sa, sb, sc;
    int batch;
    float alpha, beta;
    const float* A;
    const float* B;
    float* C;
    float* workspace;
};
void emu_call(const EmuArgs& a);
