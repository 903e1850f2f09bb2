// Which tile of C a block computes, with block rasterization for L2 reuse: GROUP_M (1 when not
// defined) tile rows are walked column by column, so blocks that run together share rows of A
// and columns of B in L2 (GROUP_M = 1: plain row-major order of tiles).
// Expects: BM, BN. Defines TILE_ORDER_OF_BLOCK, which declares bm and bn (the tile's first row
// and column) from blockIdx.x, M and N.

#ifndef GROUP_M
#define GROUP_M 1
#endif

#define TILE_ORDER_OF_BLOCK                                                                      \
    const int tiles_n = (N + BN - 1) / BN;                                                       \
    const int tiles_m = (M + BM - 1) / BM;                                                       \
    const int group_width = GROUP_M * tiles_n;                                                   \
    const int group = (int)blockIdx.x / group_width;                                             \
    const int first_m = group * GROUP_M;                                                         \
    const int group_rows = min(tiles_m - first_m, GROUP_M);                                      \
    const int in_group = (int)blockIdx.x - group * group_width;                                  \
    const int bm = (first_m + in_group % group_rows) * BM;                                       \
    const int bn = (in_group / group_rows) * BN;
