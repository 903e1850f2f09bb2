// The kernel of gemm_small_m_splitk and gemm_small_m_stream (the design, its parameters, the
// workspace and the split reduction are described in gemm_small_m_splitk.cu): few rows of C,
// threads along N, K split in the block (threadIdx.y) and across blocks (grid z), reduced in a
// fixed order. The two families differ only in how B is read (SMALL_M_B_HINT, small_m_rows.cuh).
// Expects: MT, VEC, BX, KS, UNROLL, SPLIT (1 when not defined), KERNEL_NAME.

#ifndef SPLIT
#define SPLIT 1
#endif

#define THREADS (BX * KS)
#define COLS (BX * VEC)
#define TILE (MT * COLS)
// Output slots a thread owns after the in-block reduction: its own accumulators when KS = 1,
// else slots ty * BX + tx + i * THREADS of the summed tile.
#if KS == 1
#define OWN (MT * VEC)
#else
#define OWN ((TILE + THREADS - 1) / THREADS)
#endif

#include "small_m_rows.cuh" // load_b, SMALL_M_COLUMNS_AND_ROWS, SMALL_M_UNROLLED_STEP
#include "small_m_tile.cuh" // SMALL_M_TILE_OF_BLOCK, SMALL_M_ACCUMULATE, ...
#include "split_fixup.cuh"  // split_count_in_last_by
#if SPLIT < 1 || UNROLL < 1 || KS < 1 || MT < 1
#error "SPLIT, UNROLL, KS and MT must be at least 1"
#endif

// This thread's partial sums acc[r][v] = sum over its k in [k_begin, k_end) of
// A[m0 + r][k] * B[k][column v], k increasing.
template <bool VECOK>
static __device__ __forceinline__ void accumulate(int M, int N, int K, const float* __restrict__ A,
                                                  const float* __restrict__ B, int m0, int n0,
                                                  int tx, int ty, int k_begin, int k_end,
                                                  float (&acc)[MT][VEC])
{
    SMALL_M_COLUMNS_AND_ROWS

    int k = k_begin + ty;
    // The UNROLL rows k, k + KS, ... all lie in the chunk. (As `k < k_end - KS * (UNROLL - 1)`
    // ptxas took up to 30% more registers, and spilled.)
    for (; k + KS * (UNROLL - 1) < k_end; k += KS * UNROLL) {
        SMALL_M_UNROLLED_STEP
    }
#if UNROLL > 1
    // Fewer than UNROLL rows left for this thread: one step, each row predicated, so their
    // loads are in flight together; the same FMAs in the same order as a loop would do.
    if (k < k_end) {
        const int left = (k_end - 1 - k) / KS + 1; // 1 .. UNROLL - 1
        float b[UNROLL][VEC];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            if (u < left) {
                load_b<VECOK>(B + (size_t)(k + KS * u) * N, col, b[u]);
            } else {
#pragma unroll
                for (int v = 0; v < VEC; ++v) b[u][v] = 0.0f;
            }
        }
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            if (u < left) {
#pragma unroll
                for (int r = 0; r < MT; ++r) {
                    const float a = __ldg(arow[r] + k + KS * u);
#pragma unroll
                    for (int v = 0; v < VEC; ++v) acc[r][v] = fmaf(a, b[u][v], acc[r][v]);
                }
            }
        }
    }
#endif
}

#if SPLIT > 1
// After every thread of the block has stored its slots of the chunk's partial tile: counts the
// chunk in on the tile's counter and says (to every thread) whether it was the last of the
// tile's `splits` chunks to do so. Each thread's stores are made visible device-wide (fence)
// before the block counts itself in (barrier, then thread 0's atomicAdd); the last block fences
// again before it reads the others' partials.
static __device__ __forceinline__ bool count_in_last(unsigned* counter, int splits)
{
    return split_count_in_last_by(counter, splits, threadIdx.x == 0 && threadIdx.y == 0);
}

// Called by the last block of a tile after its reduction: every chunk of this tile has counted
// in, so no one else touches the counter in this launch, and the next launch (stream-ordered)
// finds it zero.
static __device__ __forceinline__ void reset_counter(unsigned* counter)
{
    if (threadIdx.x == 0 && threadIdx.y == 0) atomicExch(counter, 0u);
}
#endif

extern "C" __global__ void __launch_bounds__(THREADS)
KERNEL_NAME(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
            float* __restrict__ C, float* workspace)
{
    const int mtiles = (M + MT - 1) / MT;
    const int tile = blockIdx.x;
    SMALL_M_TILE_OF_BLOCK(tile)
#if SPLIT > 1
    // Chunks of a multiple of 4 rows; `splits` (1..SPLIT) of them are non-empty. A block of an
    // empty chunk exits before any barrier (the whole block: the condition is uniform).
    const long long chunk = (((long long)K + SPLIT - 1) / SPLIT + 3) / 4 * 4;
    const int splits = (int)(((long long)K + chunk - 1) / chunk);
    const int split = blockIdx.z;
    if (split >= splits) return;
    const int k_begin = (int)(split * chunk);
    const int k_end = (int)min((long long)K, (long long)k_begin + chunk);
#else
    const int k_begin = 0;
    const int k_end = K;
#endif
    SMALL_M_ACCUMULATE(M, N, K, A, B, m0, n0, tx, ty, k_begin, k_end)

#if SPLIT > 1
    // The chunks' partial tiles, [SPLIT][tiles][TILE], then the tiles' counters. Slot s of a
    // partial tile holds output (s / COLS, column) where column is s % COLS when KS > 1 (the
    // summed tile in shared memory) and out[v] of thread tx for s = r * COLS + v * BX + tx when
    // KS = 1 (its accumulators; a warp's stores coalesce). Each slot is stored and summed by the
    // same thread (tx, ty) in every block of a tile: vecok, which fixes the columns, depends on
    // N and B only.
    const long long zstride = (long long)mtiles * ((N + COLS - 1) / COLS) * TILE;
    float* const tile_part = workspace + (long long)tile * TILE;
    float* const mine = tile_part + (long long)split * zstride;
    unsigned* const counter = reinterpret_cast<unsigned*>(workspace + SPLIT * zstride) + tile;
#endif

#if KS == 1
#if SPLIT > 1
    if (splits > 1) {
#pragma unroll
        for (int r = 0; r < MT; ++r) {
#pragma unroll
            for (int v = 0; v < VEC; ++v) __stcg(mine + r * COLS + v * BX + tx, acc[r][v]);
        }
        if (!count_in_last(counter, splits)) return; // block-uniform; no barrier follows
        // Chunks in order, ZB at a time: up to 32 loads in flight per thread.
#define ZB (MT * VEC >= 32 ? 1 : (SPLIT < 32 / (MT * VEC) ? SPLIT : 32 / (MT * VEC)))
        float sum[MT][VEC];
#pragma unroll
        for (int r = 0; r < MT; ++r) {
#pragma unroll
            for (int v = 0; v < VEC; ++v) sum[r][v] = -0.0f;
        }
        for (int z0 = 0; z0 < splits; z0 += ZB) {
            float p[ZB][MT][VEC];
#pragma unroll
            for (int dz = 0; dz < ZB; ++dz) {
                const int z = z0 + dz;
#pragma unroll
                for (int r = 0; r < MT; ++r) {
#pragma unroll
                    for (int v = 0; v < VEC; ++v) {
                        p[dz][r][v] = 0.0f;
                        if (z < splits)
                            p[dz][r][v] =
                                __ldcg(tile_part + z * zstride + r * COLS + v * BX + tx);
                    }
                }
            }
#pragma unroll
            for (int dz = 0; dz < ZB; ++dz) {
                if (z0 + dz < splits) {
#pragma unroll
                    for (int r = 0; r < MT; ++r) {
#pragma unroll
                        for (int v = 0; v < VEC; ++v) sum[r][v] += p[dz][r][v];
                    }
                }
            }
        }
#undef ZB
#pragma unroll
        for (int r = 0; r < MT; ++r) {
#pragma unroll
            for (int v = 0; v < VEC; ++v) acc[r][v] = sum[r][v];
        }
        reset_counter(counter);
    }
#endif
    SMALL_M_STORE_ACC
#else
    // red[s][r][c]: thread row s's partial sum of output (m0 + r, n0 + c).
    __shared__ float red[KS * TILE];
    SMALL_M_PARTS_STORE(ty, out[v])
    // Each output is summed by one thread, over s in a fixed order; consecutive threads take
    // consecutive columns (conflict-free reads, coalesced stores).
    const int first = ty * BX + tx;
#if SPLIT > 1
    if (splits > 1) {
        // The block's sums are this chunk's partial tile, slot o for output o.
        for (int o = first; o < TILE; o += THREADS) {
            float s = red[o];
#pragma unroll
            for (int t = 1; t < KS; ++t) s += red[t * TILE + o];
            __stcg(mine + o, s);
        }
        if (!count_in_last(counter, splits)) return; // block-uniform; no barrier follows
        // Chunks in order, ZB at a time: up to 32 loads in flight per output.
#define ZB (SPLIT < 32 ? SPLIT : 32)
        for (int o = first; o < TILE; o += THREADS) {
            float s = -0.0f;
            for (int z0 = 0; z0 < splits; z0 += ZB) {
                float p[ZB];
#pragma unroll
                for (int dz = 0; dz < ZB; ++dz) {
                    const int z = z0 + dz;
                    p[dz] = 0.0f;
                    if (z < splits) p[dz] = __ldcg(tile_part + z * zstride + o);
                }
#pragma unroll
                for (int dz = 0; dz < ZB; ++dz) {
                    if (z0 + dz < splits) s += p[dz];
                }
            }
            const int r = o / COLS;
            const int m = m0 + r;
            const int n = n0 + (o - r * COLS);
            if (m < M && n < N) C[(size_t)m * N + n] = s;
        }
#undef ZB
        reset_counter(counter);
        return;
    }
#endif
    for (int o = first; o < TILE; o += THREADS) {
        float s = red[o];
#pragma unroll
        for (int t = 1; t < KS; ++t) s += red[t * TILE + o];
        const int r = o / COLS;
        const int m = m0 + r;
        const int n = n0 + (o - r * COLS);
        if (m < M && n < N) C[(size_t)m * N + n] = s;
    }
#endif
#if SPLIT == 1
    (void)workspace;
#endif
}
