// A CPU emulation of the CUDA the kernel templates use, so that tests/emulate.rs can check
// every family's indexing, edge handling and block-level protocols without a GPU.
//
// Each CUDA thread of a block is an OS thread; blocks run one after the other, in an order
// shuffled by a seed (EMU_SEED; 0: ascending), so a kernel that relies on the order of its
// blocks fails (the split-K "last block sums" protocols need no block to wait for another, and
// pass in any order). __syncthreads is a barrier of the block's threads. A warp-level call
// (__shfl_*_sync, __ballot_sync, __any_sync, __all_sync, __syncwarp) waits for the lanes its
// mask names, which must each make the same call with the same mask: a lane whose mask leaves
// it out, a mask naming a lane that has exited, is not in the warp or makes another call, and
// a shuffle reading a lane the mask does not name fail the run. cp.async copies are queued per
// thread and done when a wait_group retires their group (EMU_EAGER=1: at issue), so a read of
// a stage before its wait sees the stage's old contents.
//
// Shared memory is poisoned when each block starts: every word of every `__shared__` array
// and of the dynamic arena holds 0x7FA5A5A5 (a signalling NaN as a float, garbage as an
// integer), so a kernel that reads a slot it never wrote sees garbage rather than zero or the
// previous block's data. Global memory is the test's exact-size allocations, so
// AddressSanitizer reports any access outside them; UBSan reports a float4 or float2 access
// at an address that is not 16- or 8-byte aligned, and the emulator a misaligned cp.async or
// red.v4. Every failure names the kernel, the block and the thread.
//
// The test rewrites what C++ cannot take as is: `extern __shared__ T name[];` becomes a pointer
// to the dynamic arena (emu_dynamic_smem), each `__shared__` declaration is followed by its
// registration for poisoning (emu_shared: the array itself is a function-local static, one
// per kernel, which is one per block since blocks do not overlap), each `asm volatile(...)` of
// a known PTX instruction a call of its emu_ function below; and it defines emu_kernel.

#include <algorithm>
#include <atomic>
#include <barrier>
#include <cmath>
#include <condition_variable>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <numeric>
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

// ---- failures ----
extern const char* const emu_kernel; // the kernel's name, defined by the test
inline unsigned long long emu_seed = 0; // of the blocks' order (EMU_SEED)
inline long long emu_launch_index = 0;

[[noreturn]] inline void emu_fail(const char* fmt, ...)
{
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    std::fprintf(stderr,
                 "emulator: %s, block (%u, %u, %u), thread (%u, %u, %u): %s (launch %lld, "
                 "block order seed %llu)\n",
                 emu_kernel, blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x, threadIdx.y,
                 threadIdx.z, what, emu_launch_index, emu_seed);
    std::abort();
}

// ---- shared memory poison ----
inline constexpr uint32_t emu_poison_word = 0x7FA5A5A5u;

// Fills [p, p + bytes) with the poison word (byte i of the range is byte i % 4 of the word:
// a float at a 4-byte boundary reads as the word).
inline void emu_poison(void* p, size_t bytes)
{
    auto* c = static_cast<unsigned char*>(p);
    const size_t first = std::min<size_t>(bytes, 4);
    std::memcpy(c, &emu_poison_word, first);
    for (size_t done = first; done < bytes; done *= 2)
        std::memcpy(c + done, c, std::min(done, bytes - done));
}

struct EmuShared {
    void* p;
    size_t bytes;
};
inline std::mutex emu_shared_mu;
inline std::vector<EmuShared> emu_shared_arrays; // every __shared__ array met so far

// Registers a `__shared__` array (a function-local static) for poisoning when each block
// starts, poisoning it now the first time (`Site`: a lambda type unique to the declaration).
// Each thread passes here before it can touch the array.
template <class A, class Site> inline void emu_shared(A& a, Site)
{
    static std::once_flag once;
    std::call_once(once, [&] {
        std::lock_guard<std::mutex> g(emu_shared_mu);
        emu_shared_arrays.push_back({&a, sizeof a});
        emu_poison(&a, sizeof a);
    });
}

// ---- the block being run ----
enum class EmuWarpOp { shfl, shfl_up, shfl_down, shfl_xor, ballot, any, all, syncwarp };
inline const char* emu_op_name(EmuWarpOp op)
{
    static const char* const names[] = {"__shfl_sync",   "__shfl_up_sync", "__shfl_down_sync",
                                        "__shfl_xor_sync", "__ballot_sync", "__any_sync",
                                        "__all_sync",     "__syncwarp"};
    return names[static_cast<int>(op)];
}

// One warp's lanes at warp-level calls.
struct EmuWarp {
    std::mutex mu;
    std::condition_variable cv;
    unsigned lanes = 32;   // lanes the warp has (a block's last warp may have fewer)
    uint32_t waiting = 0;  // lanes at a warp-level call
    uint32_t exited = 0;   // lanes whose thread has returned
    struct Lane {
        EmuWarpOp op;
        uint32_t mask, value, result;
        int arg, width;
        unsigned long long done; // calls completed
    } lane[32];
};

struct EmuBlock {
    std::unique_ptr<std::barrier<>> bar;
    std::vector<std::unique_ptr<EmuWarp>> warps;
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

// ---- warp-level calls ----
// The lane whose value `lane` receives from a shuffle of its group.
inline unsigned emu_shfl_source(const EmuWarp::Lane& c, unsigned lane)
{
    const unsigned w = static_cast<unsigned>(c.width), base = lane & ~(w - 1), in = lane & (w - 1);
    const unsigned arg = static_cast<unsigned>(c.arg);
    switch (c.op) {
    case EmuWarpOp::shfl:
        return base + (arg & (w - 1));
    case EmuWarpOp::shfl_up:
        return in >= arg ? lane - arg : lane;
    case EmuWarpOp::shfl_down:
        return in + arg < w ? lane + arg : lane;
    default: {
        // A lane of a later group of `width` lanes gives the caller its own value.
        const unsigned src = lane ^ (arg & 31u);
        return src >= base + w ? lane : src;
    }
    }
}

// Completes a call that every lane of `mask` has reached: each lane's result.
inline void emu_warp_complete(EmuWarp& w, uint32_t mask)
{
    uint32_t votes = 0;
    for (unsigned l = 0; l < 32; ++l)
        if ((mask >> l & 1u) && w.lane[l].value != 0) votes |= 1u << l;
    for (unsigned l = 0; l < 32; ++l) {
        if (!(mask >> l & 1u)) continue;
        EmuWarp::Lane& c = w.lane[l];
        switch (c.op) {
        case EmuWarpOp::ballot:
            c.result = votes;
            break;
        case EmuWarpOp::any:
            c.result = votes != 0;
            break;
        case EmuWarpOp::all:
            c.result = votes == mask;
            break;
        case EmuWarpOp::syncwarp:
            c.result = 0;
            break;
        default: {
            const unsigned src = emu_shfl_source(c, l);
            if (!(mask >> src & 1u))
                emu_fail("lane %u's %s reads lane %u, which its mask 0x%08x does not name", l,
                         emu_op_name(c.op), src, mask);
            c.result = w.lane[src].value;
        }
        }
        ++c.done;
    }
    w.waiting &= ~mask;
}

// A warp-level call of this lane: waits for every lane `mask` names to make the same call with
// the same mask, then returns this lane's result.
inline uint32_t emu_warp_call(EmuWarpOp op, uint32_t mask, uint32_t value, int arg, int width)
{
    const unsigned lane = emu_tid % 32;
    const char* name = emu_op_name(op);
    if (!(mask >> lane & 1u))
        emu_fail("lane %u calls %s with mask 0x%08x, which does not include the lane", lane, name,
                 mask);
    if (width < 1 || width > 32 || (width & (width - 1)) != 0)
        emu_fail("%s with width %d (not a power of two up to 32)", name, width);
    EmuWarp& w = *emu_block->warps[emu_tid / 32];
    std::unique_lock<std::mutex> lock(w.mu);
    const uint32_t present = w.lanes == 32 ? ~0u : (1u << w.lanes) - 1;
    if (mask & ~present)
        emu_fail("lane %u calls %s with mask 0x%08x, which names lanes the warp does not have "
                 "(it has %u)",
                 lane, name, mask, w.lanes);
    if (mask & w.exited)
        emu_fail("lane %u calls %s with mask 0x%08x, which names lane %d, which has exited", lane,
                 name, mask, __builtin_ctz(mask & w.exited));
    for (unsigned l = 0; l < 32; ++l) {
        if (!(w.waiting >> l & 1u)) continue;
        const EmuWarp::Lane& o = w.lane[l];
        const bool related = (mask >> l & 1u) || (o.mask >> lane & 1u);
        if (related && (o.mask != mask || o.op != op))
            emu_fail("lane %u calls %s with mask 0x%08x, but lane %u waits at %s with mask 0x%08x",
                     lane, name, mask, l, emu_op_name(o.op), o.mask);
    }
    EmuWarp::Lane& me = w.lane[lane];
    me.op = op;
    me.mask = mask;
    me.value = value;
    me.arg = arg;
    me.width = width;
    const unsigned long long done = me.done;
    w.waiting |= 1u << lane;
    if ((w.waiting & mask) == mask) {
        emu_warp_complete(w, mask);
        w.cv.notify_all();
    } else {
        w.cv.wait(lock, [&] { return me.done != done; });
    }
    return me.result;
}

// This thread has returned: no lane may wait for it any more.
inline void emu_warp_exit()
{
    const unsigned lane = emu_tid % 32;
    EmuWarp& w = *emu_block->warps[emu_tid / 32];
    std::lock_guard<std::mutex> lock(w.mu);
    w.exited |= 1u << lane;
    for (unsigned l = 0; l < 32; ++l)
        if ((w.waiting >> l & 1u) && (w.lane[l].mask >> lane & 1u))
            emu_fail("lane %u waits at %s with mask 0x%08x for lane %u, which has exited", l,
                     emu_op_name(w.lane[l].op), w.lane[l].mask, lane);
}

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
    return emu_from_bits<T>(emu_warp_call(EmuWarpOp::shfl, mask, emu_bits(v), src, width));
}
template <class T> inline T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32)
{
    return emu_from_bits<T>(
        emu_warp_call(EmuWarpOp::shfl_up, mask, emu_bits(v), static_cast<int>(delta), width));
}
template <class T> inline T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32)
{
    return emu_from_bits<T>(
        emu_warp_call(EmuWarpOp::shfl_down, mask, emu_bits(v), static_cast<int>(delta), width));
}
template <class T> inline T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32)
{
    return emu_from_bits<T>(emu_warp_call(EmuWarpOp::shfl_xor, mask, emu_bits(v), lane_mask, width));
}
inline unsigned __ballot_sync(unsigned mask, int p)
{
    return emu_warp_call(EmuWarpOp::ballot, mask, p != 0, 0, 32);
}
inline int __any_sync(unsigned mask, int p)
{
    return static_cast<int>(emu_warp_call(EmuWarpOp::any, mask, p != 0, 0, 32));
}
inline int __all_sync(unsigned mask, int p)
{
    return static_cast<int>(emu_warp_call(EmuWarpOp::all, mask, p != 0, 0, 32));
}
inline void __syncwarp(unsigned mask = 0xffffffffu)
{
    emu_warp_call(EmuWarpOp::syncwarp, mask, 0, 0, 32);
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
    if (c.dst % static_cast<unsigned>(c.bytes) != 0)
        emu_fail("misaligned cp.async: a %d-byte copy to shared offset %u", c.bytes, c.dst);
    if (reinterpret_cast<uintptr_t>(c.src) % static_cast<unsigned>(c.bytes) != 0 && c.src_bytes > 0)
        emu_fail("misaligned cp.async: a %d-byte copy from %p", c.bytes, c.src);
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
    if (reinterpret_cast<uintptr_t>(p) % 16 != 0) emu_fail("misaligned red.global.add.v4 at %p", p);
    atomicAdd(p, a);
    atomicAdd(p + 1, b);
    atomicAdd(p + 2, c);
    atomicAdd(p + 3, d);
}

// ---- the launch ----
// The order blocks run in: 0, 1, ... with seed 0, else a permutation drawn from the seed and
// the launch (each launch of a run its own).
inline std::vector<unsigned long long> emu_block_order(unsigned long long blocks,
                                                       unsigned long long seed, long long launch)
{
    std::vector<unsigned long long> order(blocks);
    std::iota(order.begin(), order.end(), 0ull);
    uint64_t s = seed * 0x2545F4914F6CDD1Dull + static_cast<uint64_t>(launch);
    auto next = [&s]() { // splitmix64
        uint64_t z = (s += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    };
    if (seed != 0)
        for (unsigned long long i = blocks; i > 1; --i) std::swap(order[i - 1], order[next() % i]);
    return order;
}

// Runs `body` once per thread of every block of `grid`, the blocks in the order emu_seed draws
// for this launch. A pool of one OS thread per thread of a block runs the blocks one at a time; a gate between
// blocks sets up the next one (barriers, warps, poisoned shared memory).
inline void emu_launch(dim3 grid, dim3 block, size_t dynamic_smem,
                       const std::function<void()>& body)
{
    gridDim = grid;
    blockDim = block;
    const unsigned threads = block.x * block.y * block.z;
    const unsigned long long blocks = 1ull * grid.x * grid.y * grid.z;
    if (threads == 0 || threads > 1024 || blocks == 0) emu_fail("bad launch geometry");
    const std::vector<unsigned long long> order = emu_block_order(blocks, emu_seed, emu_launch_index);
    emu_smem_bytes = std::max<size_t>(dynamic_smem, 16);
    std::vector<unsigned char> arena(emu_smem_bytes + 128);
    emu_smem = arena.data() + (128 - reinterpret_cast<uintptr_t>(arena.data()) % 128) % 128;
    unsigned long long current = 0;
    EmuBlock state;
    for (unsigned w = 0; w * 32 < threads; ++w) state.warps.push_back(std::make_unique<EmuWarp>());
    auto setup = [&]() {
        state.bar = std::make_unique<std::barrier<>>(threads);
        for (unsigned w = 0; w < state.warps.size(); ++w) {
            state.warps[w]->lanes = std::min(32u, threads - w * 32);
            state.warps[w]->waiting = 0;
            state.warps[w]->exited = 0;
        }
        state.or_acc[0] = 0;
        state.or_acc[1] = 0;
        emu_poison(emu_smem, emu_smem_bytes);
        std::lock_guard<std::mutex> g(emu_shared_mu);
        for (const EmuShared& s : emu_shared_arrays) emu_poison(s.p, s.bytes);
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
                const unsigned long long b = order[current];
                blockIdx = {static_cast<unsigned>(b % grid.x),
                            static_cast<unsigned>((b / grid.x) % grid.y),
                            static_cast<unsigned>(b / (1ull * grid.x * grid.y))};
                emu_copies.clear();
                emu_group = 0;
                emu_or_gen = 0;
                body();
                // A finished thread no longer counts at its block's barrier, nor its warp's.
                state.bar->arrive_and_drop();
                emu_warp_exit();
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
    if (const char* seed = std::getenv("EMU_SEED")) emu_seed = std::strtoull(seed, nullptr, 10);
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
        emu_launch_index = l;
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
