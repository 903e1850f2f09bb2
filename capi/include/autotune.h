/*
 * autotune.h: the C ABI of the autotune runtime (libautotune.so / libautotune.a).
 *
 * SGEMM and SGEMV with the kernel a tuning database chooses for the GPU and the problem, or
 * cuBLAS where the database has no evidence that a tuned kernel is faster (the vendor guard).
 * The calls take cuBLAS's arguments in cuBLAS's order and convention (column-major, host
 * pointers to alpha and beta, device pointers to the matrices), so that a product replaces
 * cublasSgemm with autotune_sgemm and changes nothing else:
 *
 *     autotune_handle_t h;
 *     if (autotune_create(&h, 0, NULL) != AUTOTUNE_STATUS_SUCCESS) { ... fall back ... }
 *     autotune_set_stream(h, stream);
 *     autotune_sgemm(h, CUBLAS_OP_N, CUBLAS_OP_T, m, n, k, &alpha, A, lda, B, ldb, &beta, C, ldc);
 *     autotune_destroy(h);
 *
 * Every function returns a status and never aborts: a missing NVIDIA driver or GPU is
 * AUTOTUNE_STATUS_NO_DEVICE, invalid arguments are AUTOTUNE_STATUS_INVALID_VALUE (checked as
 * cuBLAS checks them, before anything is launched), and autotune_last_error() says why.
 *
 * Threads: as with cuBLAS, one handle may be used from several host threads at once; the
 * stream set on it is shared by them, so threads that want streams of their own create a handle
 * each. A handle belongs to one GPU (the CUDA runtime's primary context of that device, so
 * cudaMalloc's pointers and cudaStream_t streams of that device are valid in it).
 *
 * Kernels compile with NVRTC on their first call (libnvrtc from CUDA 12 or 13 must be
 * loadable; AUTOTUNE_NVRTC names it) and are kept in a disk cache. docs/shipping.md says more.
 */
#ifndef AUTOTUNE_H
#define AUTOTUNE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What every call returns. The values cuBLAS's cublasStatus_t has are cuBLAS's. */
typedef enum autotune_status_t {
    AUTOTUNE_STATUS_SUCCESS = 0,          /* done (or nothing to do: m, n or batchCount 0) */
    AUTOTUNE_STATUS_NOT_INITIALIZED = 1,  /* the handle is NULL */
    AUTOTUNE_STATUS_ALLOC_FAILED = 3,     /* memory could not be allocated */
    AUTOTUNE_STATUS_INVALID_VALUE = 7,    /* an invalid argument; nothing was launched */
    AUTOTUNE_STATUS_EXECUTION_FAILED = 13, /* a launch or a CUDA driver call failed */
    AUTOTUNE_STATUS_INTERNAL_ERROR = 14,  /* a failure inside libautotune: please report it */
    AUTOTUNE_STATUS_NOT_SUPPORTED = 15,   /* valid for cuBLAS, not computed here (incx != 1, k == 0) */
    AUTOTUNE_STATUS_NO_DEVICE = 100,      /* no NVIDIA driver (libcuda), or no such GPU */
    AUTOTUNE_STATUS_DATABASE_ERROR = 101, /* the tuning database could not be read or parsed */
    AUTOTUNE_STATUS_COMPILE_ERROR = 102   /* NVRTC is missing or could not compile the kernel */
} autotune_status_t;

/* A transpose, with cublasOperation_t's values: a cublasOperation_t passes as it is. */
typedef int autotune_operation_t;
#define AUTOTUNE_OP_N 0 /* op(X) = X */
#define AUTOTUNE_OP_T 1 /* op(X) = X^T */
#define AUTOTUNE_OP_C 2 /* op(X) = X^H, which is X^T for real matrices */

/* A runtime bound to one GPU and a tuning database, and the stream its calls go to. */
typedef struct autotune_context *autotune_handle_t;

/*
 * Creates a handle on GPU `device` with the tuning database at `db_path`, a TOML file written
 * by `autotune` (NULL: the database built into libautotune, results/tuning.toml of its
 * source). *handle is NULL unless this succeeds. Its stream is the legacy default stream.
 */
autotune_status_t autotune_create(autotune_handle_t *handle, int device, const char *db_path);

/* Waits for the handle's work on its GPU (as cublasDestroy does), then releases it. No call on
 * the handle may be running in another thread, or come after. */
autotune_status_t autotune_destroy(autotune_handle_t handle);

/*
 * The stream the handle's calls are enqueued on: a cudaStream_t or CUstream of the handle's
 * GPU, NULL for the legacy default stream. It must outlive the handle (or the next
 * autotune_set_stream), as the handle keeps a workspace on each stream it ran on.
 */
autotune_status_t autotune_set_stream(autotune_handle_t handle, void *stream);
autotune_status_t autotune_get_stream(autotune_handle_t handle, void **stream);

/* C = alpha op(A) op(B) + beta C, column-major, as cublasSgemm. */
autotune_status_t autotune_sgemm(autotune_handle_t handle, autotune_operation_t transa,
                                 autotune_operation_t transb, int m, int n, int k,
                                 const float *alpha, const float *A, int lda, const float *B,
                                 int ldb, const float *beta, float *C, int ldc);

/* batchCount products, the i-th at A + i strideA, B + i strideB, C + i strideC, as
 * cublasSgemmStridedBatched. */
autotune_status_t autotune_sgemm_strided_batched(
    autotune_handle_t handle, autotune_operation_t transa, autotune_operation_t transb, int m,
    int n, int k, const float *alpha, const float *A, int lda, long long int strideA,
    const float *B, int ldb, long long int strideB, const float *beta, float *C, int ldc,
    long long int strideC, int batchCount);

/* y = alpha op(A) x + beta y, A m x n column-major, as cublasSgemv. incx and incy must be 1
 * (other increments are AUTOTUNE_STATUS_NOT_SUPPORTED). */
autotune_status_t autotune_sgemv(autotune_handle_t handle, autotune_operation_t trans, int m,
                                 int n, const float *alpha, const float *A, int lda,
                                 const float *x, int incx, const float *beta, float *y,
                                 int incy);

/* batchCount products, as cublasSgemvStridedBatched. */
autotune_status_t autotune_sgemv_strided_batched(
    autotune_handle_t handle, autotune_operation_t trans, int m, int n, const float *alpha,
    const float *A, int lda, long long int strideA, const float *x, int incx,
    long long int stridex, const float *beta, float *y, int incy, long long int stridey,
    int batchCount);

/*
 * What autotune_sgemm_strided_batched (batchCount 1: autotune_sgemm) with these arguments would
 * run and why: the row-major problem it maps to, the lookup's rule, the config, the vendor
 * guard's evidence. Written into buf as snprintf writes (at most size - 1 bytes and a NUL;
 * buf may be NULL when size is 0); *length (when not NULL) gets the full length without the
 * NUL, so a text that did not fit is length >= size.
 */
autotune_status_t autotune_explain_sgemm(autotune_handle_t handle, autotune_operation_t transa,
                                         autotune_operation_t transb, int m, int n, int k,
                                         float alpha, int lda, int ldb, float beta, int ldc,
                                         int batchCount, char *buf, size_t size,
                                         size_t *length);

/* The same for autotune_sgemv_strided_batched (batchCount 1: autotune_sgemv). */
autotune_status_t autotune_explain_sgemv(autotune_handle_t handle, autotune_operation_t trans,
                                         int m, int n, float alpha, int lda, float beta,
                                         int batchCount, char *buf, size_t size,
                                         size_t *length);

/* A static description of a status: its name and what it means. */
const char *autotune_status_string(autotune_status_t status);

/* Why this thread's last failed call failed (empty if none did), valid until this thread's
 * next call into libautotune. */
const char *autotune_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* AUTOTUNE_H */
