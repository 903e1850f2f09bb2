// cp.async wrappers: asynchronous global -> shared copies (sm_80 and newer). CP_ASYNC says
// whether the target has them (1 on sm_80+, else 0: the template stages copies through
// registers instead); the wrappers exist only where it is 1.
// Expects no parameter macros.
//
// dst is a shared-memory address (__cvta_generic_to_shared), src a global pointer. A copy with
// ok = false copies nothing and zero-fills its destination (src-size 0): src must still be a
// valid address (templates pass the matrix's first element), it is not read.

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define CP_ASYNC 1
#else
#define CP_ASYNC 0
#endif

#if CP_ASYNC
// 4 bytes, cached in L1 (cp.async.ca), zero-filled when !ok.
__device__ __forceinline__ void cp_async4(unsigned dst, const float* src, bool ok)
{
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src),
                 "r"(ok ? 4 : 0));
}
// 16 bytes, through L2 only (cp.async.cg); unconditional.
__device__ __forceinline__ void cp_async16(unsigned dst, const float* src)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src));
}
// 16 bytes through L2 (cp.async.cg), zero-filled when !ok.
__device__ __forceinline__ void cp_async16_zfill(unsigned dst, const float* src, bool ok)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
                 "r"(ok ? 16 : 0));
}
// One 16-byte piece at shared address dst (generic pointer dst_ptr) from p: whole (one
// cp.async) when in, vec and all 4 floats lie inside; else float by float (the first `have`),
// zero-filled. base: any valid address (a zero-filling copy must still name one).
__device__ __forceinline__ void copy_piece(unsigned dst, unsigned char* dst_ptr, const float* base,
                                           const float* p, bool in, bool vec, int have)
{
    if (!in || have <= 0) {
        *reinterpret_cast<float4*>(dst_ptr) = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    } else if (vec && have >= 4) {
        cp_async16(dst, p);
    } else {
#pragma unroll
        for (int e = 0; e < 4; ++e) cp_async4(dst + 4 * e, e < have ? p + e : base, e < have);
    }
}

// Closes the group of the copies issued since the last commit.
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
// Waits until at most N_ groups are still in flight.
template <int N_>
__device__ __forceinline__ void cp_async_wait()
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N_) : "memory");
}
#endif
