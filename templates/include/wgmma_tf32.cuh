// Hopper's warpgroup MMA on TF32 (wgmma.mma_async, sm_90a only), both operands K-major in shared
// memory through matrix descriptors. Expects no parameter macros.
//
// A warpgroup (4 consecutive warps, 128 threads) issues wgmma.mma_async together; the products
// run asynchronously until wgmma_wait. Shared memory written by ordinary stores must be fenced
// (fence_proxy_async) and the block synchronized before a wgmma reads it; the accumulators
// must not be touched between a wgmma and the wait that completes it.
//
// Operand tiles (wgmma_desc): rows of 128 bytes (32 floats of k, 128-byte swizzle) or 64 bytes
// (16 floats, 64-byte swizzle), row r at r * ROW bytes from a base aligned to 8 * ROW; the
// 16-byte chunk c of row r stored at chunk c ^ (r % 8) (128-byte rows) or c ^ ((r / 2) % 4)
// (64-byte rows): the swizzle is a function of the address bits, so a descriptor whose start
// is base + 4 * k (k = 0, 8, ... within the row) reads k .. k + 7 of every row.
//
// D of wgmma.m64nNk8 (lane = 4 g + t of warp w of the warpgroup), for j = 0 .. N/8 - 1:
//   d[4j] = D[16w + g][8j + 2t], d[4j + 1] = D[16w + g][8j + 2t + 1],
//   d[4j + 2] = D[16w + g + 8][8j + 2t], d[4j + 3] = D[16w + g + 8][8j + 2t + 1]

// The shared swizzled position of 16-byte chunk c of row r (ROW_BYTES_ 128 or 64).
template <int ROW_BYTES_>
static __device__ __forceinline__ unsigned swizzled(int r, int c)
{
    const int x = ROW_BYTES_ == 128 ? (r & 7) : ((r >> 1) & 3);
    return (unsigned)(r * ROW_BYTES_ + ((c ^ x) << 4));
}

// The descriptor of a K-major tile whose row 0, k offset included, is at shared address addr
// (leading offset 16 bytes, unused by K-major swizzled tiles; 8-row groups 8 * ROW apart).
template <int ROW_BYTES_>
static __device__ __forceinline__ unsigned long long wgmma_desc(unsigned addr)
{
    const unsigned long long layout = ROW_BYTES_ == 128 ? 1ull : 2ull; // 128- or 64-byte swizzle
    return (unsigned long long)((addr & 0x3ffffu) >> 4) | (1ull << 16) |
           ((unsigned long long)((8 * ROW_BYTES_) >> 4) << 32) | (layout << 62);
}

static __device__ __forceinline__ void wgmma_fence()
{
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
static __device__ __forceinline__ void wgmma_commit()
{
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
// Waits until at most N_ committed groups of this warpgroup are still running.
template <int N_>
static __device__ __forceinline__ void wgmma_wait()
{
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N_) : "memory");
}
// Makes this thread's ordinary shared-memory stores visible to the wgmma that follow (after a
// barrier).
static __device__ __forceinline__ void fence_proxy_async()
{
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// The accumulator operands ("+f", read and written) d[0 .. 4n-1] and their names in the PTX.
#define WG_D4(d, i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3])
#define WG_D16(d, i) WG_D4(d, i), WG_D4(d, i + 4), WG_D4(d, i + 8), WG_D4(d, i + 12)
#define WG_D32(d, i) WG_D16(d, i), WG_D16(d, i + 16)
#define WG_R0 \
    "%0, %1, %2, %3, %4, %5, %6, %7, " \
    "%8, %9, %10, %11, %12, %13, %14, %15, " \
    "%16, %17, %18, %19, %20, %21, %22, %23, " \
    "%24, %25, %26, %27, %28, %29, %30, %31"
#define WG_R32 \
    "%32, %33, %34, %35, %36, %37, %38, %39, " \
    "%40, %41, %42, %43, %44, %45, %46, %47, " \
    "%48, %49, %50, %51, %52, %53, %54, %55, " \
    "%56, %57, %58, %59, %60, %61, %62, %63"
#define WG_R64 \
    "%64, %65, %66, %67, %68, %69, %70, %71, " \
    "%72, %73, %74, %75, %76, %77, %78, %79, " \
    "%80, %81, %82, %83, %84, %85, %86, %87, " \
    "%88, %89, %90, %91, %92, %93, %94, %95"
#define WG_R96 \
    "%96, %97, %98, %99, %100, %101, %102, %103, " \
    "%104, %105, %106, %107, %108, %109, %110, %111, " \
    "%112, %113, %114, %115, %116, %117, %118, %119, " \
    "%120, %121, %122, %123, %124, %125, %126, %127"

// d = A B + (scale_d ? d : 0): A 64 x 8 (rows of a), B N x 8 (rows of b), both TF32 (the low 13
// bits ignored). The tensor cores add the products and d with truncation (round toward zero), so
// a long chain of wgmma into one d drifts: callers add each K tile's chain into FP32 registers.
static __device__ __forceinline__ void wgmma_tf32_n64(float (&d)[32], unsigned long long a,
                                                      unsigned long long b, int scale_d)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 {" WG_R0 "}, "
                 "%32, %33, p, 1, 1;\n}\n"
                 : WG_D32(d, 0)
                 : "l"(a), "l"(b), "r"(scale_d));
}
static __device__ __forceinline__ void wgmma_tf32_n128(float (&d)[64], unsigned long long a,
                                                       unsigned long long b, int scale_d)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {" WG_R0 ", " WG_R32 "}, "
                 "%64, %65, p, 1, 1;\n}\n"
                 : WG_D32(d, 0), WG_D32(d, 32)
                 : "l"(a), "l"(b), "r"(scale_d));
}
static __device__ __forceinline__ void wgmma_tf32_n256(float (&d)[128], unsigned long long a,
                                                       unsigned long long b, int scale_d)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32 {" WG_R0 ", " WG_R32
                 ", " WG_R64 ", " WG_R96 "}, %128, %129, p, 1, 1;\n}\n"
                 : WG_D32(d, 0), WG_D32(d, 32), WG_D32(d, 64), WG_D32(d, 96)
                 : "l"(a), "l"(b), "r"(scale_d));
}

// The same with A from registers: a[0..3] this thread's TF32 fragment of A 64 x 8 (lane 4 g + t
// of warp w: A[16w + g][t], A[16w + g + 8][t], A[16w + g][t + 4], A[16w + g + 8][t + 4]). The
// tensor cores read the registers asynchronously: they must not change before the wait.
static __device__ __forceinline__ void wgmma_tf32_rs_n64(float (&d)[32], const unsigned (&a)[4],
                                                         unsigned long long b, int scale_d)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 {" WG_R0 "}, "
                 "{%32, %33, %34, %35}, %36, p, 1, 1;\n}\n"
                 : WG_D32(d, 0)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(scale_d));
}
static __device__ __forceinline__ void wgmma_tf32_rs_n128(float (&d)[64], const unsigned (&a)[4],
                                                          unsigned long long b, int scale_d)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {" WG_R0 ", " WG_R32 "}, "
                 "{%64, %65, %66, %67}, %68, p, 1, 1;\n}\n"
                 : WG_D32(d, 0), WG_D32(d, 32)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(scale_d));
}
