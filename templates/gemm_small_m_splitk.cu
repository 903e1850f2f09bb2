// GEMV-shaped SGEMM for few rows of C (M up to ~16; M = 1 is y = x^T B): the work is reading B
// once, so threads map along N (coalesced reads of B's rows) and K is split across the block's
// threadIdx.y, with a deterministic shared-memory reduction (no atomics), and across SPLIT
// blocks (grid z) with a deterministic "last block reduces" through a workspace.
//
// gemm_small_m.cu's kernel with the split added (SPLIT = 1 here is that kernel, with the last
// rows of a thread's chunk loaded in one predicated step). It is a family of its own so that
// gemm_small_m's shipped entries and coverage stay current; keep the two loops in step.
// C[M x N] = A[M x K] * B[K x N], all row-major. Correct for every M, N, K >= 1.
//
// Parameters (all #defined by the tuner):
//   MT      rows of C per block; a larger M takes ceil(M / MT) row tiles (more blocks)
//   VEC     columns per thread (1, 2 or 4): read as one float2/float4 when N % VEC == 0 and B is
//           4 * VEC-byte aligned (the whole block then reads VEC consecutive columns per
//           thread), else as VEC scalars of columns BX apart (each warp load stays coalesced)
//   BX      threads along N (a multiple of 32: a warp reads 32 * VEC consecutive floats of a row)
//   KS      threads along K (threadIdx.y): thread ty takes k = ty, ty + KS, ... of its chunk
//   UNROLL  B rows each thread has in flight per iteration (memory-level parallelism)
//   SPLIT   K chunks across blocks (grid z, the split-K convention the performance model
//           reads; 1 when not defined). With a moderate N the tiles alone are too few blocks to
//           keep every SM streaming B: 1x4096x4096 ran at 0.51x cuBLAS on an H200 with its best
//           single-pass config, 64 blocks of 512 threads for 132 SMs. SPLIT multiplies the
//           blocks, each reading SPLIT times fewer rows of B. SPLIT = 1 is the single-pass
//           kernel: C written directly, the workspace untouched.
//
// Block (BX, KS, chunk) computes a tile of MT rows x COLS = BX * VEC columns of C over one chunk
// of K. Tiles are numbered row tile fastest along grid x, so the blocks that read the same
// columns (and rows) of B run together (L2 hits when M > MT). A's few values are read with
// __ldg: every lane of a warp reads the same address (a broadcast served by L1), so A needs no
// shared-memory staging and the main loop no barrier. A thread's last (fewer than UNROLL) rows
// of its chunk are one predicated step, their loads in flight together: the scalar loop used
// before could wait on them one at a time, at the end of every chunk once K is split (the
// same FMAs in the same order, so SPLIT = 1 gives the same bits as before).
//
// Chunks: ceil(K / SPLIT) rounded up to a multiple of 4 rows; `splits` (1..SPLIT) of them are
// non-empty (a short K leaves the last ones empty): the blocks of an empty chunk exit at once,
// the whole block (the condition is uniform), before any barrier, and are not counted.
//
// Workspace (the kernel's last argument; the space's workspace_bytes; unused when SPLIT = 1):
//   partials  float [SPLIT][tiles][MT * COLS]: chunk z of tile t stores its partial tile there,
//             one float per output slot (slots are laid out so that a warp's stores coalesce)
//   counters  unsigned [tiles], after the partials: how many chunks of a tile have stored
// It must be zeroed before the first launch (workspace_zero = "once"); the kernel leaves it
// zeroed: the last chunk of a tile resets the tile's counter, and the partials need no
// initialisation. Launches that share a workspace must not overlap (one stream).
//
// Split reduction (as gemm_warptile_splitk_det.cu: "last block reduces"): after the in-block
// reduction each thread owns the final values of some slots of the tile; every chunk's block
// stores them (st.global.cg), each thread fences (__threadfence), the block synchronises, and
// thread 0 counts the chunk in with an atomicAdd on the tile's counter. The block that counts
// last (it sees splits - 1) reduces: it fences again, then each thread sums each of its slots
// over z = 0, 1, ..., splits - 1 in that order, starting from -0.0f (x + -0.0f == x for every
// x, zeros included), reading every chunk's value with ld.global.cg (L2: L1 is not coherent
// across SMs), its own chunk's too (what this same thread stored, bit for bit: taking it from
// registers instead, a select per load, cost up to 28 registers), and writes C. Which block is
// last varies from run to run; the sum and its order do not. A slot is stored and summed by the
// same thread of every block of its tile: vecok, which fixes the columns, depends on N and B.
//
// Edges: rows past M read row M - 1 and columns past N read a column inside N (clamped
// addresses, no branch in the loop); their sums are never stored to C (they may be stored to
// the workspace, in bounds). Every thread of a block that does not exit at once runs to every
// barrier: only whole blocks leave early (an empty chunk's, and after counting in, those that
// were not last).
// Determinism: each thread adds its k in increasing order, the KS partial sums of an output are
// added in the order ty = 0, 1, ..., KS - 1, and the chunks' in the order 0, 1, ..., splits - 1:
// bit-identical run to run.

#include "small_m_splitk.cuh" // the kernel
