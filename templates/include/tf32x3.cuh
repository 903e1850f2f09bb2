// FP32-accurate products on the TF32 tensor cores (3xTF32; sm_80 and newer): each operand x is
// split into big = tf32(x) (round to nearest, ties away: cvt.rna) and small = tf32(x - big),
// and a product accumulates small_a * big_b + big_a * small_b + big_a * big_b in FP32 (small
// terms first; small_a * small_b, below FP32's rounding, is left out). Each part carries 11
// significant bits, so big + small holds x to about 2^-22 relative, and the products' error is
// that of FP32 or better (CUTLASS's 3xTF32, Triton's tf32x3).
// Expects no parameter macros.
//
// Special values: an inf or NaN x gives big = x and small = NaN, and a finite x near FLT_MAX
// rounds to big = inf; the products then hold NaN where FP32 would give inf. The split says so
// (split_tf32 returns false), and a template whose block saw such a value computes its tile
// again in plain FP32 (IEEE semantics for inf and NaN, as cuBLAS's SGEMM).
//
// mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32, lane = 4 g + t (g = lane / 4,
// t = lane % 4), checked on an H100 (results/runs/session30/exp/mma_layout.cu):
//   A (16 x 8): a0 = A[g][t], a1 = A[g + 8][t], a2 = A[g][t + 4], a3 = A[g + 8][t + 4]
//   B (8 x 8):  b0 = B[t][g], b1 = B[t + 4][g]
//   C (16 x 8): c0 = C[g][2t], c1 = C[g][2t + 1], c2 = C[g + 8][2t], c3 = C[g + 8][2t + 1]

// x as TF32 (the low 13 bits zero), rounded to nearest, ties away from zero.
static __device__ __forceinline__ unsigned to_tf32(float x)
{
    unsigned r;
    asm volatile("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
    return r;
}

// x = big + small (to about 2^-22); whether big is finite (false for inf, NaN, and a finite x
// that rounds past FLT_MAX: the caller must not trust the products then).
static __device__ __forceinline__ bool split_tf32(float x, unsigned& big, unsigned& small)
{
    big = to_tf32(x);
    const float b = __uint_as_float(big);
    small = to_tf32(x - b);
    return fabsf(b) <= 3.402823466e38f;
}

// split_tf32 for a template that checks its accumulators instead (TF32_LATE_CHECK): no test per
// value, and small rounded by the integer steps cvt.rna compiles to for a finite value (x - big
// is finite whenever big is). Three instructions fewer per value, and big and small are the
// same bits as split_tf32's wherever x is finite. A non-finite x still reaches the products:
// inf and NaN keep big = x, and a finite x that rounds past FLT_MAX gives big = inf, so the
// sums of its row or column go inf or NaN (inf times 0 is NaN on the tensor cores too).
static __device__ __forceinline__ void split_tf32_unchecked(float x, unsigned& big,
                                                            unsigned& small)
{
    big = to_tf32(x);
    small = (__float_as_uint(x - __uint_as_float(big)) + 0x1000u) & 0xffffe000u;
}

// d += a b on the tensor cores (one 16 x 8 x 8 product of the warp).
static __device__ __forceinline__ void mma_tf32(float (&d)[4], const unsigned (&a)[4],
                                                const unsigned (&b)[2])
{
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, "
                 "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
