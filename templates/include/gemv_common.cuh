// Small device helpers of the SGEMV templates: a float4 dot-product step, shuffle sums over
// a warp or a sub-warp, a 16-byte alignment test, and the alpha / beta store of the full
// interface.
// Expects no parameter macros.
// Like every include, this text is inlined into each instantiated source (and exported header):
// an exported header wraps it in the kernel's own namespace, so the copies of two headers in
// one translation unit do not clash; static (internal linkage) keeps copies in several
// translation units apart at link time.

// acc + a . b, as four fused multiply-adds in x, y, z, w order.
static __device__ __forceinline__ float dot4(float4 a, float4 b, float acc)
{
    acc = fmaf(a.x, b.x, acc);
    acc = fmaf(a.y, b.y, acc);
    acc = fmaf(a.z, b.z, acc);
    acc = fmaf(a.w, b.w, acc);
    return acc;
}

// Sum of v over each aligned group of WIDTH consecutive lanes (a power of two <= 32), returned
// to every lane of the group. Xor offsets below WIDTH stay inside the group. All 32 lanes of
// the warp must be active.
template <int WIDTH = 32>
static __device__ __forceinline__ float warp_sum(float v)
{
#pragma unroll
    for (int o = WIDTH / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o, WIDTH);
    return v;
}

// Whether p is 16-byte aligned (may be read as float4).
static __device__ __forceinline__ bool aligned16(const float* p)
{
    return (((unsigned long long)p) & 15ull) == 0;
}

// *p = alpha * s + beta * *p; *p is not read when beta == 0 (it may hold NaN), as with cuBLAS.
static __device__ __forceinline__ void store_scaled(float* p, float s, float alpha, float beta)
{
    float v = alpha * s;
    if (beta != 0.0f) v = fmaf(beta, *p, v);
    *p = v;
}
