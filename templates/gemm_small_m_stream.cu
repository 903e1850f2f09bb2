// gemm_small_m_splitk's kernel (few rows of C; its header describes the design, the parameters,
// the workspace and the deterministic split reduction) with B read through loads that also
// fetch the rest of each 256-byte block into L2 and leave L1 alone (SMALL_M_B_HINT,
// small_m_rows.cuh; sm_80 and later, plain __ldg before). B is the whole cost of these problems
// (M = 1 is y = x^T B, one multiply-add per float read), and the hint moved the M = 1 column
// sums of an H100 to within a few percent of cuBLAS's gemv kernel (1x4096x4096: 35.7 us
// without, 31.7 with, cuBLAS 30.3; results/runs/session30/exp). A family of its own so that
// gemm_small_m_splitk's shipped entries and coverage stay current; its space also offers the
// smaller splits (one or two blocks per SM) that measured best there.
// C[M x N] = A[M x K] * B[K x N], all row-major. Correct for every M, N, K >= 1.

#define SMALL_M_B_HINT 1
#include "small_m_splitk.cuh" // the kernel
