// The deterministic split-K fix-up's hand-over ("last block reduces"), for templates whose
// blocks each sum one chunk of K of an output tile into a workspace and whose last block to
// finish reduces the tile.
// Expects no parameter macros.
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
// same answer on every thread). Every thread of the block must call it (it has barriers).
static __device__ __forceinline__ bool split_count_in_last(unsigned* counter, int splits)
{
    const bool lead = threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0;
    __threadfence();
    __syncthreads();
    unsigned seen = 0;
    if (lead) seen = atomicAdd(counter, 1u);
    // The barrier is unconditional; it also orders thread 0's atomic before the reads after.
    const int last = __syncthreads_or(lead && seen == (unsigned)(splits - 1));
    if (last) __threadfence();
    return last != 0;
}
