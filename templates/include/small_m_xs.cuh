// The staged op(A) and the W rows streamed against it, shared by gemm_general_small_m (TRANS_B = 1
// path) and gemm_general_small_m_splitk (see their headers): xs holds MT rows of op(A) for a
// range of k, XS_LD floats apart; a warp's lanes walk W's rows along k against it.
// Expects: MT, RPW, UNROLL, THREADS, TRANS_A, TRANS_B, aligned16 and dot4 (gemv_common.cuh), and
// what differs between the two (macros, so that each kernel's text, and PTX, is what it was):
//   XS_LD            the row stride of xs (KC, KSL)
//   XS_STAGE_UNROLL  _Pragma("unroll") or nothing: whether the staging's row loop is unrolled
//   XS_LANE0         a lane's first k (or float4) of the range
//   XS_LANE_STEP     the k (or float4) step between a lane's loads of a row
//   XS_W(j, kk)      the address of W_j(k0 + kk), W_j from wr[j] (`step`: 1 or ldb, below)

// xs[r * XS_LD + kk] = op(A_b)(m0 + r, k0 + kk) for kk < klen (0 for rows past M).
static __device__ __forceinline__ void xs_stage(float* __restrict__ xs,
                                                const float* __restrict__ Ab, int M, int lda,
                                                int m0, int k0, int klen, int tid)
{
#if TRANS_A == 0
    // Rows of A along k: consecutive threads, consecutive k of one row. k0 is a multiple of 4:
    // every row's k0 is 16-byte aligned when lda and A are.
    const bool al = (lda & 3) == 0 && aligned16(Ab);
    XS_STAGE_UNROLL
    for (int r = 0; r < MT; ++r) {
        float* dst = xs + r * XS_LD;
        const int m = m0 + r;
        if (m >= M) {
            for (int kk = tid; kk < klen; kk += THREADS) dst[kk] = 0.0f;
            continue;
        }
        const float* src = Ab + (long long)m * lda + k0;
        int done = 0;
        if (al) {
            const int n4 = klen >> 2;
            for (int j = tid; j < n4; j += THREADS)
                reinterpret_cast<float4*>(dst)[j] = __ldg(reinterpret_cast<const float4*>(src) + j);
            done = n4 << 2;
        }
        for (int kk = done + tid; kk < klen; kk += THREADS) dst[kk] = __ldg(src + kk);
    }
#else
    // A stored K x M: row k of the stored matrix holds op(A)(., k); consecutive threads take
    // consecutive m (MT of a row), then the next k.
    for (int i = tid; i < MT * klen; i += THREADS) {
        const int kk = i / MT;
        const int r = i - kk * MT;
        const int m = m0 + r;
        xs[r * XS_LD + kk] = m < M ? __ldg(Ab + (long long)(k0 + kk) * lda + m) : 0.0f;
    }
#endif
}

// acc[r][j] += sum over this lane's k of the range of xs[r][k] * W_j(k0 + k), where W_j(k) is
// wr[j][k] (TRANS_B = 1) or wr[j][k * ldb] (TRANS_B = 0). V4 (TRANS_B = 1 only): 16-byte loads,
// each wr[j] + k0 16-byte aligned. sl: the lane's slice of k, for XS_LANE0.
template <bool V4>
static __device__ __forceinline__ void xs_rows(const float* __restrict__ xs,
                                               const float* const (&wr)[RPW], int ldb, int k0,
                                               int klen, int lane, int sl, float (&acc)[MT][RPW])
{
    int done = 0;
#if TRANS_B == 1
    if (V4) {
        const int n4 = klen >> 2;
        const float4* w4[RPW];
#pragma unroll
        for (int j = 0; j < RPW; ++j) w4[j] = reinterpret_cast<const float4*>(wr[j] + k0);
        const float4* x4 = reinterpret_cast<const float4*>(xs);
        int q = XS_LANE0;
        for (; q + XS_LANE_STEP * (UNROLL - 1) < n4; q += XS_LANE_STEP * UNROLL) {
            float4 w[UNROLL][RPW];
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) {
#pragma unroll
                for (int j = 0; j < RPW; ++j) w[u][j] = __ldg(w4[j] + q + XS_LANE_STEP * u);
            }
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) {
#pragma unroll
                for (int r = 0; r < MT; ++r) {
                    const float4 x = x4[r * (XS_LD / 4) + q + XS_LANE_STEP * u];
#pragma unroll
                    for (int j = 0; j < RPW; ++j) acc[r][j] = dot4(x, w[u][j], acc[r][j]);
                }
            }
        }
#if UNROLL > 1
        // Fewer than UNROLL steps' float4s left: one predicated step, loads in flight together.
        if (q < n4) {
            float4 w[UNROLL][RPW];
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) {
#pragma unroll
                for (int j = 0; j < RPW; ++j)
                    w[u][j] = q + XS_LANE_STEP * u < n4 ? __ldg(w4[j] + q + XS_LANE_STEP * u)
                                                        : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            }
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) {
                if (q + XS_LANE_STEP * u < n4) {
#pragma unroll
                    for (int r = 0; r < MT; ++r) {
                        const float4 x = x4[r * (XS_LD / 4) + q + XS_LANE_STEP * u];
#pragma unroll
                        for (int j = 0; j < RPW; ++j) acc[r][j] = dot4(x, w[u][j], acc[r][j]);
                    }
                }
            }
        }
#endif
        done = n4 << 2;
    }
    const long long step = 1;
#else
    const long long step = ldb;
#endif
    // Scalars: the whole range (V4 false) or its 0..3 last k.
    int k = done + XS_LANE0;
    for (; k + XS_LANE_STEP * (UNROLL - 1) < klen; k += XS_LANE_STEP * UNROLL) {
        float w[UNROLL][RPW];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
#pragma unroll
            for (int j = 0; j < RPW; ++j) w[u][j] = __ldg(XS_W(j, k + XS_LANE_STEP * u));
        }
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
#pragma unroll
            for (int r = 0; r < MT; ++r) {
                const float x = xs[r * XS_LD + k + XS_LANE_STEP * u];
#pragma unroll
                for (int j = 0; j < RPW; ++j) acc[r][j] = fmaf(x, w[u][j], acc[r][j]);
            }
        }
    }
    for (; k < klen; k += XS_LANE_STEP) {
        float w[RPW];
#pragma unroll
        for (int j = 0; j < RPW; ++j) w[j] = __ldg(XS_W(j, k));
#pragma unroll
        for (int r = 0; r < MT; ++r) {
            const float x = xs[r * XS_LD + k];
#pragma unroll
            for (int j = 0; j < RPW; ++j) acc[r][j] = fmaf(x, w[j], acc[r][j]);
        }
    }
}
