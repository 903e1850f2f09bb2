// Operand tiles for the wgmma 3xTF32 templates: a tile of ROWS_ rows (of op(A) or of op(B)^T)
// by BK_ of k is read from global memory, split into its TF32 parts (include/tf32x3.cuh) and
// stored K-major and swizzled (include/wgmma_tf32.cuh) as two tiles, big and small; the split
// happens once per element. Two ways to read, so that the global latency hides behind the
// tensor cores' work on earlier tiles:
//   into registers (load, then store): one tile ahead;
//   by cp.async into a ring of raw slots in shared memory (issue, then split_from): as many
//     tiles ahead as the ring has slots. Each thread later splits exactly the pieces it copied
//     (piece c at slot + 16 c; row e of 4 x 4 block c at slot + 16 (e PIECES/4 + c):
//     consecutive threads, consecutive 16 bytes, no bank conflict), so its own cp.async wait is
//     all the ordering it needs.
// Expects: THREADS (the block's threads, which share the copies); include/cp_async.cuh,
// include/tf32x3.cuh and include/wgmma_tf32.cuh before it. With TF32_LATE_CHECK 1 the split
// leaves `finite` alone (split_tf32_unchecked): the template checks its accumulators.
//
// KCONT_ says how the operand is stored: true when k is contiguous (element (r, k) at
// src[r * ld + k]: A of NN / NT, B of NT / TT), false when r is (src[k * ld + r]: A of TN / TT,
// B of NN / TN). Either way a thread copies 16-byte pieces along the contiguous dimension:
//   k contiguous: chunk c of the tile is row c / (BK_/4), floats 4 (c % (BK_/4)) .. + 3 of k,
//     stored whole (8 threads of a quarter warp cover one 128-byte row: no bank conflict);
//   r contiguous: chunk c is a 4 x 4 block (4 rows of k, 4 of r) read as four float4 and
//     transposed in registers; consecutive c alternate two r blocks and walk 4 of k, so each
//     quarter warp's 16-byte stores land in 8 different chunks of the 128-byte swizzle.
// A piece that is not whole inside the matrix, or not 16-byte aligned (vec false: the caller
// checks the base pointer and ld once), is read element by element with bounds checks; what
// lies outside is 0, so edge tiles need no other care.
//
// XLOAD 1 (r contiguous, read into registers only) reads such a tile by columns instead: warp
// task u is the 32 rows 32 (u / KQ) .. + 31 by the 4 k of chunk u % KQ; lane l reads row
// 32 (u / KQ) + l at each of the 4 k (four 4-byte loads, a warp's each one 128-byte line of the
// stored row) and stores the chunk whole. Every load uses its whole line, where the 4 x 4
// blocks above touch 8 lines by halves, and a quarter warp's stores go to 8 consecutive rows,
// which the swizzle puts in 8 different chunks; no alignment is needed. The ring (issue,
// split_from) keeps the blocks.

// TRUNC (TF32_LATE_CHECK 1 only) says how a value is split: 0 rounds big to nearest
// (split_tf32_unchecked); 1 truncates big (its low 13 bits cleared) and rounds small to nearest;
// 2 truncates both (small stored as x - big, whose low bits the tensor cores ignore). Truncation
// leaves x - big under one TF32 unit of x instead of half, so big + small holds x to about 2^-22
// (1) or 2^-21 (2, toward zero) instead of 2^-23, still below the FP32 sums' rounding for the K
// the accuracy rule checks. big costs one instruction (a mask) instead of cvt.rna's four (its
// inf / NaN select among them), and small with TRUNC 2 none instead of two. inf and NaN keep a
// non-finite big (a truncated finite value cannot overflow), so the late check sees them as
// before.
#ifndef TF32_LATE_CHECK
#define TF32_LATE_CHECK 0
#endif
#ifndef XLOAD
#define XLOAD 0
#endif
#ifndef TRUNC
#define TRUNC 0
#endif
#ifndef FASTLOAD
#define FASTLOAD 0
#endif
#if TRUNC < 0 || TRUNC > 2 || (TRUNC != 0 && !TF32_LATE_CHECK)
#error "TRUNC must be 0, 1 or 2, and above 0 only with TF32_LATE_CHECK 1"
#endif
#if FASTLOAD < 0 || FASTLOAD > 2
#error "FASTLOAD must be 0, 1 or 2"
#endif
#if FASTLOAD == 2
// FASTLOAD 2: as 1, and each read (load, load_inside) takes its inputs (pointer, leading
// dimension, extents, first row, thread) through an empty asm, so that the addresses of its
// pieces are computed again for each K tile. Otherwise ptxas keeps them from one tile to the
// next (they differ only by k0), in registers that a 128 x 128 tile with two accumulator sets
// cannot spare: with NVRTC 13.0 the shipped 128 x 128 x 32 NN kernel used 255 registers and
// 176 bytes of local memory, and with this 212 and none, at the same count of instructions in
// its K loop (results/runs/session49). The asm emits nothing.
static __device__ __forceinline__ void opaque(int& x) { asm volatile("" : "+r"(x)); }
static __device__ __forceinline__ void opaque(const float*& p) { asm volatile("" : "+l"(p)); }
#endif
#if TRUNC != 0
// x = big + small with big truncated (TRUNC above).
static __device__ __forceinline__ void split_tf32_trunc(float x, unsigned& big, unsigned& small)
{
    big = __float_as_uint(x) & 0xffffe000u;
    const unsigned rest = __float_as_uint(x - __uint_as_float(big));
#if TRUNC == 1
    small = (rest + 0x1000u) & 0xffffe000u;
#else
    small = rest;
#endif
}
#define SPLIT_LATE split_tf32_trunc
#else
#define SPLIT_LATE split_tf32_unchecked
#endif

template <int ROWS_, int BK_, bool KCONT_>
struct SplitTile {
    static constexpr int KQ = BK_ / 4;          // 16-byte chunks of one row
    static constexpr int PIECES = ROWS_ * KQ;   // float4 pieces of the tile
    static constexpr int PER = (PIECES + THREADS - 1) / THREADS;    // k contiguous: pieces
    static constexpr int PER4 = (PIECES / 4 + THREADS - 1) / THREADS; // r contiguous: blocks
    // r contiguous, read by columns (XLOAD): the warp tasks, and those of one warp. An enum,
    // not static members: those would be emitted into the PTX of every family.
    enum : int {
        COLS = !KCONT_ && XLOAD != 0,
        WARPS = THREADS / 32,
        TASKS = ROWS_ / 32 * KQ,
        PERX = (TASKS + WARPS - 1) / WARPS,
    };
    float4 v[KCONT_ ? PER : COLS ? PERX : 4 * PER4];

    // r contiguous, 4 x 4 block c: its chunk of k and its first row in the tile (consecutive c
    // alternate two r blocks and walk 4 of k).
    static __device__ __forceinline__ int block_kq(int c) { return (c >> 1) % KQ; }
    static __device__ __forceinline__ int block_r(int c)
    {
        return 4 * (2 * ((c >> 1) / KQ) + (c & 1));
    }

    // Calls f(i, c) for each 4 x 4 block c (r contiguous) of the tile this thread handles, its
    // i-th.
    template <class F>
    static __device__ __forceinline__ void each_block(int tid, F f)
    {
#pragma unroll
        for (int i = 0; i < PER4; ++i) {
            const int c = tid + i * THREADS;
            if (PER4 * THREADS != PIECES / 4 && c >= PIECES / 4) continue;
            f(i, c);
        }
    }

    // Reads the tile whose first row is r0 and first k is k0 (rows below `rows`, k below K).
    __device__ __forceinline__ void load(const float* src, int ld, int rows, int K, int r0,
                                         int k0, bool vec, int tid)
    {
#if FASTLOAD == 2
        opaque(src), opaque(ld), opaque(rows), opaque(K), opaque(r0), opaque(tid);
#endif
        if constexpr (KCONT_) {
#pragma unroll
            for (int i = 0; i < PER; ++i) {
                const int c = tid + i * THREADS;
                const int r = r0 + c / KQ, k = k0 + 4 * (c % KQ);
                const float* p = src + (long long)r * ld + k;
                const bool in = (PER * THREADS == PIECES || c < PIECES) && r < rows;
                if (in && vec && k + 3 < K) {
                    v[i] = __ldg(reinterpret_cast<const float4*>(p));
                } else {
                    v[i].x = in && k < K ? __ldg(p) : 0.0f;
                    v[i].y = in && k + 1 < K ? __ldg(p + 1) : 0.0f;
                    v[i].z = in && k + 2 < K ? __ldg(p + 2) : 0.0f;
                    v[i].w = in && k + 3 < K ? __ldg(p + 3) : 0.0f;
                }
            }
        } else if constexpr (COLS) {
            static_assert(ROWS_ % 32 == 0 && THREADS % 32 == 0, "whole warps over 32-row tasks");
#pragma unroll
            for (int i = 0; i < PERX; ++i) {
                const int u = (tid >> 5) + i * WARPS;
                const int k = k0 + 4 * (u % KQ);
                const int r = r0 + 32 * (u / KQ) + (tid & 31);
                const bool in = (PERX * WARPS == TASKS || u < TASKS) && r < rows;
                const float* p = src + (long long)k * ld + r;
                v[i].x = in && k < K ? __ldg(p) : 0.0f;
                v[i].y = in && k + 1 < K ? __ldg(p + ld) : 0.0f;
                v[i].z = in && k + 2 < K ? __ldg(p + 2 * (long long)ld) : 0.0f;
                v[i].w = in && k + 3 < K ? __ldg(p + 3 * (long long)ld) : 0.0f;
            }
        } else {
#pragma unroll
            for (int i = 0; i < PER4; ++i) {
                const int c = tid + i * THREADS;
                const int kq = block_kq(c);
                const int r = r0 + block_r(c);
                const bool in = (PER4 * THREADS == PIECES / 4 || c < PIECES / 4) && r < rows;
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    const int k = k0 + 4 * kq + e;
                    const float* p = src + (long long)k * ld + r;
                    const bool row_in = in && k < K;
                    float4& x = v[4 * i + e];
                    if (row_in && vec && r + 3 < rows) {
                        x = __ldg(reinterpret_cast<const float4*>(p));
                    } else {
                        x.x = row_in ? __ldg(p) : 0.0f;
                        x.y = row_in && r + 1 < rows ? __ldg(p + 1) : 0.0f;
                        x.z = row_in && r + 2 < rows ? __ldg(p + 2) : 0.0f;
                        x.w = row_in && r + 3 < rows ? __ldg(p + 3) : 0.0f;
                    }
                }
            }
        }
    }

#if FASTLOAD
    // Whether load_inside may read a tile of this operand: pieces read as 16 bytes need vec.
    enum : int { INSIDE_NEEDS_VEC = !COLS };

    // load for a tile wholly inside the matrix (rows r0 .. r0 + ROWS_ - 1 below the matrix's
    // rows, k0 + BK_ <= K) whose 16-byte pieces may be read whole where they are (vec, unless
    // read by columns): no bounds checks and no element-by-element fallback.
    __device__ __forceinline__ void load_inside(const float* src, int ld, int r0, int k0,
                                                int tid)
    {
#if FASTLOAD == 2
        opaque(src), opaque(ld), opaque(r0), opaque(tid);
#endif
        if constexpr (KCONT_) {
#pragma unroll
            for (int i = 0; i < PER; ++i) {
                const int c = tid + i * THREADS;
                if (PER * THREADS != PIECES && c >= PIECES) continue;
                v[i] = __ldg(reinterpret_cast<const float4*>(
                    src + (long long)(r0 + c / KQ) * ld + k0 + 4 * (c % KQ)));
            }
        } else if constexpr (COLS) {
#pragma unroll
            for (int i = 0; i < PERX; ++i) {
                const int u = (tid >> 5) + i * WARPS;
                if (PERX * WARPS != TASKS && u >= TASKS) continue;
                const float* p =
                    src + (long long)(k0 + 4 * (u % KQ)) * ld + r0 + 32 * (u / KQ) + (tid & 31);
                v[i].x = __ldg(p);
                v[i].y = __ldg(p + ld);
                v[i].z = __ldg(p + 2 * (long long)ld);
                v[i].w = __ldg(p + 3 * (long long)ld);
            }
        } else {
            each_block(tid, [&](int i, int c) {
                const int kq = block_kq(c);
                const int r = r0 + block_r(c);
#pragma unroll
                for (int e = 0; e < 4; ++e)
                    v[4 * i + e] = __ldg(reinterpret_cast<const float4*>(
                        src + (long long)(k0 + 4 * kq + e) * ld + r));
            });
        }
    }
#endif

    // Issues the cp.async copies of the tile load would read into the ring slot at shared
    // address slot (and its generic pointer slot_ptr); pieces wholly outside are zeroed there.
    __device__ __forceinline__ void issue(unsigned slot, unsigned char* slot_ptr, const float* src,
                                          int ld, int rows, int K, int r0, int k0, bool vec,
                                          int tid) const
    {
        if constexpr (KCONT_) {
#pragma unroll
            for (int i = 0; i < PER; ++i) {
                const int c = tid + i * THREADS;
                if (PER * THREADS != PIECES && c >= PIECES) continue;
                const int r = r0 + c / KQ, k = k0 + 4 * (c % KQ);
                piece(slot, slot_ptr, c, src, src + (long long)r * ld + k,
                      r < rows, vec, min(K - k, 4));
            }
        } else {
            each_block(tid, [&](int, int c) {
                const int kq = block_kq(c);
                const int r = r0 + block_r(c);
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    const int k = k0 + 4 * kq + e;
                    piece(slot, slot_ptr, e * (PIECES / 4) + c, src,
                          src + (long long)k * ld + r, k < K, vec, min(rows - r, 4));
                }
            });
        }
    }

    // One 16-byte piece j of the slot from p (include/cp_async.cuh).
    static __device__ __forceinline__ void piece(unsigned slot, unsigned char* slot_ptr, int j,
                                                 const float* base, const float* p, bool in,
                                                 bool vec, int have)
    {
        copy_piece(slot + 16u * j, slot_ptr + 16 * j, base, p, in, vec, have);
    }

    // Splits the pieces this thread copied into the ring slot (its copies waited for) and
    // stores them into the big and small tiles, as store does.
    __device__ __forceinline__ void split_from(const unsigned char* slot_ptr, unsigned char* big,
                                               unsigned char* small, bool& finite, int tid) const
    {
        const float4* raw = reinterpret_cast<const float4*>(slot_ptr);
        split_each(big, small, finite, tid,
                   [&](int, int c, int e) { return raw[e * (PIECES / 4) + c]; });
    }

    // Splits and stores what load read; finite becomes false if a value had no finite TF32
    // part.
    __device__ __forceinline__ void store(unsigned char* big, unsigned char* small, bool& finite,
                                          int tid) const
    {
        if constexpr (COLS) {
#pragma unroll
            for (int i = 0; i < PERX; ++i) {
                const int u = (tid >> 5) + i * WARPS;
                if (PERX * WARPS != TASKS && u >= TASKS) continue;
                put(big, small, 32 * (u / KQ) + (tid & 31), u % KQ, v[i], finite);
            }
        } else {
            split_each(big, small, finite, tid,
                       [&](int i, int, int e) { return KCONT_ ? v[i] : v[4 * i + e]; });
        }
    }

    // Splits and stores the thread's pieces: get(i, c, e) is its i-th piece c (k contiguous,
    // e = 0), or row e of its i-th 4 x 4 block c (r contiguous).
    template <class Get>
    __device__ __forceinline__ void split_each(unsigned char* big, unsigned char* small,
                                               bool& finite, int tid, Get get) const
    {
        if constexpr (KCONT_) {
#pragma unroll
            for (int i = 0; i < PER; ++i) {
                const int c = tid + i * THREADS;
                if (PER * THREADS != PIECES && c >= PIECES) continue;
                put(big, small, c / KQ, c % KQ, get(i, c, 0), finite);
            }
        } else {
            each_block(tid, [&](int i, int c) {
                const float4 x[4] = {get(i, c, 0), get(i, c, 1), get(i, c, 2), get(i, c, 3)};
                put4(big, small, c, x, finite);
            });
        }
    }

    // The 4 x 4 block c (x: its 4 rows of k, each 4 of r), transposed into 4 rows of the tiles.
    static __device__ __forceinline__ void put4(unsigned char* big, unsigned char* small, int c,
                                                const float4* x, bool& finite)
    {
        const int kq = block_kq(c);
        const int r = block_r(c);
        put(big, small, r, kq, make_float4(x[0].x, x[1].x, x[2].x, x[3].x), finite);
        put(big, small, r + 1, kq, make_float4(x[0].y, x[1].y, x[2].y, x[3].y), finite);
        put(big, small, r + 2, kq, make_float4(x[0].z, x[1].z, x[2].z, x[3].z), finite);
        put(big, small, r + 3, kq, make_float4(x[0].w, x[1].w, x[2].w, x[3].w), finite);
    }

    // Row r, chunk kq of both tiles.
    static __device__ __forceinline__ void put(unsigned char* big, unsigned char* small, int r,
                                               int kq, float4 x, bool& finite)
    {
        unsigned b[4], s[4];
#if TF32_LATE_CHECK
        SPLIT_LATE(x.x, b[0], s[0]);
        SPLIT_LATE(x.y, b[1], s[1]);
        SPLIT_LATE(x.z, b[2], s[2]);
        SPLIT_LATE(x.w, b[3], s[3]);
#else
        finite &= split_tf32(x.x, b[0], s[0]);
        finite &= split_tf32(x.y, b[1], s[1]);
        finite &= split_tf32(x.z, b[2], s[2]);
        finite &= split_tf32(x.w, b[3], s[3]);
#endif
        const unsigned at = swizzled<BK_ * 4>(r, kq);
        *reinterpret_cast<float4*>(big + at) = make_float4(
            __uint_as_float(b[0]), __uint_as_float(b[1]), __uint_as_float(b[2]),
            __uint_as_float(b[3]));
        *reinterpret_cast<float4*>(small + at) = make_float4(
            __uint_as_float(s[0]), __uint_as_float(s[1]), __uint_as_float(s[2]),
            __uint_as_float(s[3]));
    }
};
