// Named barriers (bar.sync / bar.arrive with an id and a thread count), for blocks whose warps
// play different roles: a producer arrives (no wait) where its consumers sync (wait), and the
// other way round. Ids 1 to 15 (0 is __syncthreads'); the count, a multiple of 32, is every
// thread that takes part in the barrier, arriving or syncing. Arriving orders the thread's
// earlier shared-memory accesses before the accesses the syncing threads make after it.
// Expects no parameter macros.

// Waits until `count` threads have arrived at barrier `id`, this one included.
static __device__ __forceinline__ void named_sync(int id, int count)
{
    asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}

// Counts this thread in at barrier `id` of `count` threads and goes on.
static __device__ __forceinline__ void named_arrive(int id, int count)
{
    asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}
