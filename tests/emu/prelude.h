// A CPU emulation of the CUDA the kernel templates use, so that tests/emulate.rs can check
// every family's indexing, edge handling and block-level protocols without a GPU.
//
// Each CUDA thread of a block is an OS thread; blocks run one after the other (a grid's blocks
// may run in any order, and the split-K "last block sums" protocols need no block to wait for
// another). __syncthreads is a barrier of the block's threads, shuffles a barrier of the
// warp's. cp.async copies are queued per thread and done when a wait_group retires their group
// (EMU_EAGER=1: at issue), so a read of a stage before its wait sees the stage's old
// contents (poisoned with NaN when each block starts). Global memory is the test's exact-size
// allocations, so AddressSanitizer reports any access outside them; UBSan reports float4 and
// float2 accesses at addresses that are not 16- and 8-byte aligned. Shared memory declared in
// a kernel (`__shared__` arrays) is a function-local static: one per kernel, which is one per
// block since blocks do not overlap.
//
// The test rewrites what C++ cannot take as is: `extern __shared__ T name[];` becomes a pointer
// to the dynamic arena (emu_dynamic_smem) and each `asm volatile(...)` of a known PTX
// instruction a call of its emu_ function below.

#include <algorithm>
#include <atomic>
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <thread>
#include <type_traits>
#include <vector>

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

inline thread_local dim3 threadIdx, blockIdx;
inline dim3 blockDim, gridDim;
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

// Cache-hinted loads and stores are plain ones here.
template <class T> inline T __ldg(const T* p) { return *p; }
template <class T> inline T __ldcg(const T* p) { return *p; }
template <class T> inline T __ldcs(const T* p) { return *p; }
template <class T> inline void __stcg(T* p, T v) { *p = v; }

inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }

template <class T> inline T atomicAdd(T* p, T v) { return std::atomic_ref<T>(*p).fetch_add(v); }
template <class T> inline T atomicExch(T* p, T v) { return std::atomic_ref<T>(*p).exchange(v); }

[[noreturn]] inline void emu_fail(const char* what)
{
    std::fprintf(stderr, "emulator: %s\n", what);
    std::abort();
}

// ---- the block being run ----
struct EmuBlock {
    std::unique_ptr<std::barrier<>> bar;
    std::vector<std::unique_ptr<std::barrier<>>> warp_bars;
    std::vector<uint32_t> shfl; // one slot per thread
    std::atomic<int> or_acc[2];
};
inline EmuBlock* emu_block = nullptr;
inline thread_local unsigned emu_tid = 0; // linear thread index in the block
inline thread_local unsigned emu_or_gen = 0;
inline unsigned char* emu_smem = nullptr; // the dynamic shared memory arena
inline size_t emu_smem_bytes = 0;

inline void __syncthreads() { emu_block->bar->arrive_and_wait(); }

inline int __syncthreads_or(int p)
{
    const unsigned slot = emu_or_gen++ & 1u;
    if (p) emu_block->or_acc[slot].fetch_or(1);
    emu_block->bar->arrive_and_wait();
    const int r = emu_block->or_acc[slot].load();
    if (emu_tid == 0) emu_block->or_acc[slot ^ 1u].store(0);
    emu_block->bar->arrive_and_wait();
    return r;
}

template <class T> inline T __shfl_xor_sync(unsigned, T v, int lane_mask, int width = 32)
{
    static_assert(sizeof(T) == 4, "4-byte shuffles only");
    const unsigned warp = emu_tid / 32, lane = emu_tid % 32;
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    emu_block->shfl[emu_tid] = bits;
    emu_block->warp_bars[warp]->arrive_and_wait();
    unsigned src = lane ^ static_cast<unsigned>(lane_mask);
    // A lane of a later group of `width` lanes gives the caller its own value.
    if (src >= (lane / width + 1) * width) src = lane;
    bits = emu_block->shfl[warp * 32 + src];
    emu_block->warp_bars[warp]->arrive_and_wait();
    T out;
    std::memcpy(&out, &bits, 4);
    return out;
}

// ---- shared memory addresses and cp.async ----
inline unsigned long long __cvta_generic_to_shared(const void* p)
{
    const auto* c = static_cast<const unsigned char*>(p);
    if (c < emu_smem || c >= emu_smem + emu_smem_bytes)
        emu_fail("__cvta_generic_to_shared of an address outside the dynamic shared memory");
    return static_cast<unsigned long long>(c - emu_smem);
}
inline void* emu_dynamic_smem() { return emu_smem; }

struct EmuCopy {
    unsigned dst;
    const void* src;
    int bytes, src_bytes, group;
};
inline thread_local std::vector<EmuCopy> emu_copies;
inline thread_local int emu_group = 0; // the group being filled
inline bool emu_eager = false;

inline void emu_copy_now(const EmuCopy& c)
{
    if (c.src_bytes < 0 || c.src_bytes > c.bytes) emu_fail("cp.async src-size out of range");
    if (c.dst % static_cast<unsigned>(c.bytes) != 0) emu_fail("cp.async destination misaligned");
    if (c.bytes == 16 && reinterpret_cast<uintptr_t>(c.src) % 16 != 0 && c.src_bytes > 0)
        emu_fail("cp.async of 16 bytes from a source that is not 16-byte aligned");
    if (static_cast<size_t>(c.dst) + c.bytes > emu_smem_bytes)
        emu_fail("cp.async past the dynamic shared memory");
    std::memcpy(emu_smem + c.dst, c.src, c.src_bytes);
    std::memset(emu_smem + c.dst + c.src_bytes, 0, c.bytes - c.src_bytes);
}
inline void emu_cp_async(unsigned long long dst, const void* src, int bytes, int src_bytes)
{
    EmuCopy c{static_cast<unsigned>(dst), src, bytes, src_bytes, emu_group};
    if (emu_eager)
        emu_copy_now(c);
    else
        emu_copies.push_back(c);
}
inline void emu_cp_commit() { ++emu_group; }
// Retires every committed group but the newest `n`.
inline void emu_cp_wait(int n)
{
    const int done_below = emu_group - n;
    std::vector<EmuCopy> keep;
    for (const EmuCopy& c : emu_copies) {
        if (c.group < done_below)
            emu_copy_now(c);
        else
            keep.push_back(c);
    }
    emu_copies.swap(keep);
}
inline void emu_red_add_v4(float* p, float a, float b, float c, float d)
{
    if (reinterpret_cast<uintptr_t>(p) % 16 != 0) emu_fail("red.global.add.v4 misaligned");
    atomicAdd(p, a);
    atomicAdd(p + 1, b);
    atomicAdd(p + 2, c);
    atomicAdd(p + 3, d);
}

// ---- the launch ----
// Runs `body` once per thread of every block of `grid`. A pool of one OS thread per thread
// of a block runs the blocks in order; a gate between blocks sets up the next one.
inline void emu_launch(dim3 grid, dim3 block, size_t dynamic_smem, const std::function<void()>& body)
{
    gridDim = grid;
    blockDim = block;
    const unsigned threads = block.x * block.y * block.z;
    const unsigned long long blocks = 1ull * grid.x * grid.y * grid.z;
    if (threads == 0 || threads > 1024 || blocks == 0) emu_fail("bad launch geometry");
    emu_smem_bytes = std::max<size_t>(dynamic_smem, 16);
    std::vector<unsigned char> arena(emu_smem_bytes + 128);
    emu_smem = arena.data() + (128 - reinterpret_cast<uintptr_t>(arena.data()) % 128) % 128;
    unsigned long long current = 0;
    EmuBlock state;
    auto setup = [&]() {
        state.bar = std::make_unique<std::barrier<>>(threads);
        state.warp_bars.clear();
        for (unsigned w = 0; w * 32 < threads; ++w)
            state.warp_bars.push_back(std::make_unique<std::barrier<>>(std::min(32u, threads - w * 32)));
        state.shfl.assign(threads, 0);
        state.or_acc[0] = 0;
        state.or_acc[1] = 0;
        std::memset(emu_smem, 0xFF, emu_smem_bytes); // NaN: a read before a write shows
    };
    setup();
    emu_block = &state;
    auto next = [&]() noexcept {
        ++current;
        if (current < blocks) setup();
    };
    std::barrier gate(threads, next);
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t) {
        pool.emplace_back([&, t]() {
            emu_tid = t;
            threadIdx = {t % block.x, (t / block.x) % block.y, t / (block.x * block.y)};
            while (current < blocks) {
                const unsigned long long b = current;
                blockIdx = {static_cast<unsigned>(b % grid.x),
                            static_cast<unsigned>((b / grid.x) % grid.y),
                            static_cast<unsigned>(b / (1ull * grid.x * grid.y))};
                emu_copies.clear();
                emu_group = 0;
                emu_or_gen = 0;
                body();
                // A finished thread no longer counts at its block's and warp's barriers.
                state.bar->arrive_and_drop();
                state.warp_bars[t / 32]->arrive_and_drop();
                gate.arrive_and_wait();
            }
        });
    }
    for (auto& th : pool) th.join();
    emu_block = nullptr;
}

// ---- the host side: read the problem, launch, write the outputs ----
// Input file: 26 int64 (m, n, k, lda, ldb, ldc, stride_a, stride_b, stride_c, batch, alpha
// bits, beta bits, grid x y z, block x y z, dynamic shared bytes, workspace bytes (-1: none),
// zero_output, workspace_zero (0 never, 1 once, 2 every launch), launches, len a, len b,
// len c), then A, B and C as float32. Output file: C after each launch, then the workspace.
struct EmuProblem {
    long long m, n, k, lda, ldb, ldc, sa, sb, sc, batch, alpha_bits, beta_bits;
    long long gx, gy, gz, bx, by, bz, smem, ws_bytes, zero_output, ws_zero, launches, la, lb,
        lc;
};

inline float emu_float(long long bits)
{
    uint32_t b = static_cast<uint32_t>(bits);
    float f;
    std::memcpy(&f, &b, 4);
    return f;
}

inline std::vector<float> emu_read(FILE* f, long long n)
{
    std::vector<float> v(static_cast<size_t>(n));
    if (n > 0 && std::fread(v.data(), 4, v.size(), f) != v.size()) emu_fail("short input file");
    return v;
}

// The kernel call, written by the test for each kernel's signature.
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

int main(int argc, char** argv)
{
    if (argc != 3) emu_fail("usage: kernel INPUT OUTPUT");
    emu_eager = std::getenv("EMU_EAGER") != nullptr;
    FILE* in = std::fopen(argv[1], "rb");
    if (!in) emu_fail("cannot open the input file");
    EmuProblem p;
    if (std::fread(&p, sizeof p, 1, in) != 1) emu_fail("short header");
    // Exact-size heap copies: AddressSanitizer sees any access past them.
    std::vector<float> a = emu_read(in, p.la), b = emu_read(in, p.lb), c0 = emu_read(in, p.lc);
    std::fclose(in);
    auto heap = [](const std::vector<float>& v) {
        float* h = static_cast<float*>(std::malloc(std::max<size_t>(v.size(), 1) * 4));
        if (!v.empty()) std::memcpy(h, v.data(), v.size() * 4);
        return h;
    };
    float* A = heap(a);
    float* B = heap(b);
    float* C = heap(c0);
    unsigned char* ws = nullptr;
    if (p.ws_bytes >= 0) {
        ws = static_cast<unsigned char*>(std::malloc(std::max<long long>(p.ws_bytes, 1)));
        // Never zeroed by the caller: garbage shows; otherwise the caller's zeros.
        std::memset(ws, p.ws_zero == 0 ? 0xA5 : 0, std::max<long long>(p.ws_bytes, 1));
    }
    FILE* out = std::fopen(argv[2], "wb");
    if (!out) emu_fail("cannot open the output file");
    for (long long l = 0; l < p.launches; ++l) {
        std::memcpy(C, c0.data(), c0.size() * 4);
        if (p.zero_output) std::memset(C, 0, c0.size() * 4);
        if (ws && p.ws_zero == 2) std::memset(ws, 0, p.ws_bytes);
        EmuArgs args{static_cast<int>(p.m), static_cast<int>(p.n), static_cast<int>(p.k),
                     static_cast<int>(p.lda), static_cast<int>(p.ldb), static_cast<int>(p.ldc),
                     p.sa, p.sb, p.sc, static_cast<int>(p.batch), emu_float(p.alpha_bits),
                     emu_float(p.beta_bits), A, B, C, reinterpret_cast<float*>(ws)};
        emu_launch({static_cast<unsigned>(p.gx), static_cast<unsigned>(p.gy), static_cast<unsigned>(p.gz)},
                   {static_cast<unsigned>(p.bx), static_cast<unsigned>(p.by), static_cast<unsigned>(p.bz)},
                   static_cast<size_t>(p.smem), [&]() { emu_call(args); });
        std::fwrite(C, 4, c0.size(), out);
    }
    if (ws) std::fwrite(ws, 1, p.ws_bytes, out);
    std::fclose(out);
    std::free(A);
    std::free(B);
    std::free(C);
    std::free(ws);
    return 0;
}
