// An operand tile kept raw (FP32, as read) in a cp.async ring slot, laid out so that the
// warpgroup MMA's register fragments of A (wgmma with A from registers) read it without bank
// conflicts. Each thread reads its own fragments: for 8 of k at kk, the thread lane 4 g + t of
// warp w of its warpgroup holds rows 16 w + g and 16 w + g + 8, k = kk + t and kk + t + 4.
// Expects: THREADS; include/cp_async.cuh (copy_piece) before it.
//
// KCONT_ says how the operand is stored (as in include/split_tiles.cuh): true when k is
// contiguous (element (r, k) at src[r * ld + k]), false when r is (src[k * ld + r]). A thread
// copies 16-byte pieces along the contiguous dimension, consecutive threads consecutive pieces:
//   k contiguous: row r of BK_ floats at r * 4 BK_, its chunk q (4 of k) at chunk q ^ s(r),
//     s(r) = (r / 2) % 4 for 64-byte rows (BK_ 16), r % 8 for longer ones: the 8 rows g of a
//     fragment read fall in 8 different chunks;
//   r contiguous: row k of ROWS_ floats at k * 4 ROWS_, its chunk q (4 of r) at q ^ 2 (k % 4):
//     the two chunks of rows g and the four k = t of a fragment read fall in 8 different chunks.
// A piece that is not whole inside the matrix, or not 16-byte aligned (vec false), is copied
// float by float; what lies outside is 0.

template <int ROWS_, int BK_, bool KCONT_>
struct RawFragTile {
    static constexpr int BYTES = ROWS_ * BK_ * 4;
    static constexpr int PIECES = ROWS_ * BK_ / 4;
    static constexpr int PER = (PIECES + THREADS - 1) / THREADS;

    // The byte offset of element (r, k) in the slot.
    static __device__ __forceinline__ int offset(int r, int k)
    {
        if constexpr (KCONT_) {
            const int s = BK_ == 16 ? ((r >> 1) & 3) : (r & 7);
            return r * (4 * BK_) + ((((k >> 2) ^ s)) << 4) + 4 * (k & 3);
        } else {
            return k * (4 * ROWS_) + ((((r >> 2) ^ (2 * (k & 3)))) << 4) + 4 * (r & 3);
        }
    }

    // Issues the copies of the tile whose first row is r0 and first k is k0 (rows below `rows`,
    // k below K) into the slot at shared address slot (generic pointer slot_ptr).
    __device__ __forceinline__ void issue(unsigned slot, unsigned char* slot_ptr, const float* src,
                                          int ld, int rows, int K, int r0, int k0, bool vec,
                                          int tid) const
    {
#pragma unroll
        for (int i = 0; i < PER; ++i) {
            const int c = tid + i * THREADS;
            if (PER * THREADS != PIECES && c >= PIECES) continue;
            // Along the contiguous dimension: (row, first of 4 k) or (k, first of 4 rows).
            const int r = KCONT_ ? c / (BK_ / 4) : 4 * (c % (ROWS_ / 4));
            const int k = KCONT_ ? 4 * (c % (BK_ / 4)) : c / (ROWS_ / 4);
            const int at = offset(r, k);
            const bool in = KCONT_ ? r0 + r < rows : k0 + k < K;
            const int have = KCONT_ ? K - (k0 + k) : rows - (r0 + r);
            copy_piece(slot + at, slot_ptr + at, src,
                       src + (KCONT_ ? (long long)(r0 + r) * ld + k0 + k
                                     : (long long)(k0 + k) * ld + r0 + r),
                       in, vec, min(have, 4));
        }
    }

    // Element (r, k) of the tile in the slot.
    static __device__ __forceinline__ float at(const unsigned char* slot_ptr, int r, int k)
    {
        return *reinterpret_cast<const float*>(slot_ptr + offset(r, k));
    }
};
