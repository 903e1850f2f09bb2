// The deterministic split-K fix-up's hand-over ("last block reduces"), for templates whose
// blocks each sum one chunk of K of an output tile into a workspace and whose last block to
// finish reduces the tile.
// Expects no parameter macros (SPLIT_K_CHUNKS and SPLIT_K_BATCH_RANGE read SPLIT_K and BK
// where they are used).
//
// Protocol: every block of a tile stores its partial tile (st.global.cg) and then calls
// split_count_in_last(counter, splits) with every thread of the block: each thread's stores are
// made visible device-wide (fence), the block synchronises, and thread 0 counts the block in
// with an atomicAdd on the tile's counter. The block that counts last (it sees splits - 1)
// learns it on every thread, fences again, and may then read every block's partial with
// ld.global.cg (L2: L1 is not coherent across SMs), sum them in a fixed order (bit-identical
// results whichever block is last) and reset the counter to 0 for the next launch (launches
// that share a workspace must be stream-ordered).

// Counts this block in on `counter`; whether it was the last of `splits` blocks to do so (the
// same answer on every thread). `lead` is true on exactly one thread of the block, the one that
// counts. Every thread of the block must call it (it has barriers).
static __device__ __forceinline__ bool split_count_in_last_by(unsigned* counter, int splits,
                                                              bool lead)
{
    __threadfence();
    __syncthreads();
    unsigned seen = 0;
    if (lead) seen = atomicAdd(counter, 1u);
    // The barrier is unconditional; it also orders the lead's atomic before the reads after.
    const int last = __syncthreads_or(lead && seen == (unsigned)(splits - 1));
    if (last) __threadfence();
    return last != 0;
}

// split_count_in_last_by with thread (0, 0, 0) counting.
static __device__ __forceinline__ bool split_count_in_last(unsigned* counter, int splits)
{
    return split_count_in_last_by(counter, splits,
                                  threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0);
}

// The same hand-over written out for a kernel whose lead thread is `tid == 0` (one-dimensional
// blocks): declares `last`, non-zero on every thread of the block that counted last (it saw
// `expected` = splits - 1 on `counter`). The caller leaves when !last and fences again before
// it reads the partials.
#define SPLIT_COUNT_IN(last, counter, expected)                                                  \
    __threadfence();                                                                             \
    __syncthreads();                                                                             \
    unsigned seen = 0;                                                                           \
    if (tid == 0) seen = atomicAdd(counter, 1u);                                                 \
    /* Every thread learns whether this block counted last (the barrier is unconditional; it */  \
    /* also orders thread 0's atomic before everyone's reads after it). */                       \
    const int last = __syncthreads_or(tid == 0 && seen == (unsigned)(expected));

// K (in scope) cut into SPLIT_K chunks of whole BK tiles: declares `chunk`, their length, and
// `splits` (1..SPLIT_K), how many of them are non-empty.
#define SPLIT_K_CHUNKS                                                                           \
    const int chunk = (int)((((long long)K + SPLIT_K - 1) / SPLIT_K + BK - 1) / BK * BK);         \
    const int splits = (int)(((long long)K + chunk - 1) / chunk);

// In the batch loop (over bz, grid z walking the batch) of a template that splits K along grid
// y, `split` being the block's chunk: only the first batch of a grid-z slot is split
// (bz == blockIdx.z; every batch when batch <= 65535). Later batches reuse the slot's
// workspace, which the previous batch's reduction may still be reading, and no block may wait
// for another: they are computed whole (K from 0), C written directly, by split 0 alone, and
// the other splits leave the loop. Declares `split_batch` (block-uniform) and the block's K
// range [kb, ke).
#define SPLIT_K_BATCH_RANGE(split)                                                               \
    const bool split_batch = bz == (int)blockIdx.z && splits > 1; /* block-uniform */            \
    if (!split_batch && (split) != 0) break;                                                     \
    const int kb = split_batch ? (split) * chunk : 0;                                            \
    const int ke = split_batch ? (int)min((long long)K, (long long)kb + chunk) : K;
