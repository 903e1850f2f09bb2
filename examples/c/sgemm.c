/*
 * A small cuBLAS program moved onto libautotune: each cublasSgemm, cublasSgemv and strided
 * batched call becomes the autotune_ call of the same name with the same arguments (the
 * handle aside). It runs both side by side on the same inputs, prints each result's largest
 * difference from cuBLAS's and the time per call of both, and what libautotune chose.
 *
 * Builds with no CUDA headers or libraries at hand: the CUDA driver (libcuda) and cuBLAS are
 * loaded at run time with dlopen (AUTOTUNE_CUBLAS may name the cuBLAS library file).
 *
 *   cc -std=c99 -Wall -Werror -I capi/include examples/c/sgemm.c \
 *      -L target/release -lautotune -ldl -o sgemm
 *   LD_LIBRARY_PATH=target/release ./sgemm [tuning.toml]
 *
 * Exit status: 0 when every result matches cuBLAS's, or when there is no GPU (it says so: the
 * status libautotune returns without a driver); 1 when a result differs or a call fails.
 */
#define _POSIX_C_SOURCE 200809L
#include "autotune.h"

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- The few CUDA driver and cuBLAS declarations this program needs (no headers). ---- */
typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef void *CUcontext, *CUstream, *CUevent;
typedef void *cublasHandle_t;
typedef int cublasStatus_t;
enum { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1 };

static struct {
    CUresult (*cuInit)(unsigned);
    CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, int);
    CUresult (*cuCtxSetCurrent)(CUcontext);
    CUresult (*cuMemAlloc_v2)(CUdeviceptr *, size_t);
    CUresult (*cuMemFree_v2)(CUdeviceptr);
    CUresult (*cuMemcpyHtoD_v2)(CUdeviceptr, const void *, size_t);
    CUresult (*cuMemcpyDtoH_v2)(void *, CUdeviceptr, size_t);
    CUresult (*cuStreamCreate)(CUstream *, unsigned);
    CUresult (*cuStreamSynchronize)(CUstream);
    CUresult (*cuEventCreate)(CUevent *, unsigned);
    CUresult (*cuEventRecord)(CUevent, CUstream);
    CUresult (*cuEventSynchronize)(CUevent);
    CUresult (*cuEventElapsedTime)(float *, CUevent, CUevent);
    cublasStatus_t (*cublasCreate_v2)(cublasHandle_t *);
    cublasStatus_t (*cublasSetStream_v2)(cublasHandle_t, CUstream);
    cublasStatus_t (*cublasSgemm_v2)(cublasHandle_t, int, int, int, int, int, const float *,
                                     const float *, int, const float *, int, const float *,
                                     float *, int);
    cublasStatus_t (*cublasSgemmStridedBatched)(cublasHandle_t, int, int, int, int, int,
                                                const float *, const float *, int, long long,
                                                const float *, int, long long, const float *,
                                                float *, int, long long, int);
    cublasStatus_t (*cublasSgemv_v2)(cublasHandle_t, int, int, int, const float *,
                                     const float *, int, const float *, int, const float *,
                                     float *, int);
    cublasStatus_t (*cublasSgemvStridedBatched)(cublasHandle_t, int, int, int, const float *,
                                                const float *, int, long long, const float *,
                                                int, long long, const float *, float *, int,
                                                long long, int);
} api;

/* Loads `name` from `lib` into `*slot` (a function pointer); 0 when missing. */
static int load(void *lib, const char *name, void *slot) {
    void *f = dlsym(lib, name);
    if (!f) {
        fprintf(stderr, "missing symbol %s\n", name);
        return 0;
    }
    memcpy(slot, &f, sizeof f);
    return 1;
}

static int load_api(void) {
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW);
    const char *names[] = {getenv("AUTOTUNE_CUBLAS"), "libcublas.so.13", "libcublas.so.12",
                           "libcublas.so"};
    void *blas = NULL;
    for (size_t i = 0; i < sizeof names / sizeof *names && !blas; i++)
        if (names[i] && *names[i]) blas = dlopen(names[i], RTLD_NOW);
    if (!cuda || !blas) {
        fprintf(stderr, "could not load %s\n", cuda ? "cuBLAS (set AUTOTUNE_CUBLAS)" : "libcuda.so.1");
        return 0;
    }
#define LOAD(lib, f) load(lib, #f, &api.f)
    return LOAD(cuda, cuInit) && LOAD(cuda, cuDevicePrimaryCtxRetain) &&
           LOAD(cuda, cuCtxSetCurrent) && LOAD(cuda, cuMemAlloc_v2) && LOAD(cuda, cuMemFree_v2) &&
           LOAD(cuda, cuMemcpyHtoD_v2) && LOAD(cuda, cuMemcpyDtoH_v2) &&
           LOAD(cuda, cuStreamCreate) && LOAD(cuda, cuStreamSynchronize) &&
           LOAD(cuda, cuEventCreate) && LOAD(cuda, cuEventRecord) &&
           LOAD(cuda, cuEventSynchronize) && LOAD(cuda, cuEventElapsedTime) &&
           LOAD(blas, cublasCreate_v2) && LOAD(blas, cublasSetStream_v2) &&
           LOAD(blas, cublasSgemm_v2) && LOAD(blas, cublasSgemmStridedBatched) &&
           LOAD(blas, cublasSgemv_v2) && LOAD(blas, cublasSgemvStridedBatched);
#undef LOAD
}

/* ---- One call, made through cuBLAS or libautotune with the same arguments. ---- */
typedef struct {
    const char *name;
    int gemv;                 /* 0: sgemm, 1: sgemv */
    int transa, transb;       /* transb unused for sgemv */
    int m, n, k;              /* k unused for sgemv */
    int pad;                  /* added to every leading dimension */
    int batch;                /* 1: the plain call; more: the strided batched one */
    float alpha, beta;
} Case;

typedef struct {
    int lda, ldb, ldc;
    long long sa, sb, sc;     /* batch strides (elements) */
    size_t na, nb, nc;        /* buffer lengths (elements) */
} Dims;

static Dims dims(const Case *c) {
    Dims d;
    /* Column-major, as cuBLAS stores them: op(A) m x k, op(B) k x n, C m x n; for sgemv A is
     * m x n, x has n (or m, transposed) elements, y m (or n). */
    int a_rows = c->gemv ? c->m : (c->transa ? c->k : c->m);
    int a_cols = c->gemv ? c->n : (c->transa ? c->m : c->k);
    d.lda = a_rows + c->pad;
    d.sa = (long long)d.lda * a_cols;
    if (c->gemv) {
        d.ldb = d.ldc = 1;
        d.sb = c->transa ? c->m : c->n;
        d.sc = c->transa ? c->n : c->m;
    } else {
        d.ldb = (c->transb ? c->n : c->k) + c->pad;
        d.sb = (long long)d.ldb * (c->transb ? c->k : c->n);
        d.ldc = c->m + c->pad;
        d.sc = (long long)d.ldc * c->n;
    }
    d.na = (size_t)(d.sa * c->batch);
    d.nb = (size_t)(d.sb * c->batch);
    d.nc = (size_t)(d.sc * c->batch);
    return d;
}

static autotune_handle_t at;
static cublasHandle_t cublas;

/* Runs `c` once on (A, B, C) with cuBLAS (vendor = 1) or libautotune; the call's status. */
static int call(const Case *c, const Dims *d, int vendor, CUdeviceptr A, CUdeviceptr B,
                CUdeviceptr C) {
    const float *a = (const float *)(size_t)A, *b = (const float *)(size_t)B;
    float *out = (float *)(size_t)C;
    const float *alpha = &c->alpha, *beta = &c->beta;
    if (!c->gemv && c->batch == 1)
        return vendor ? api.cublasSgemm_v2(cublas, c->transa, c->transb, c->m, c->n, c->k, alpha,
                                           a, d->lda, b, d->ldb, beta, out, d->ldc)
                      : (int)autotune_sgemm(at, c->transa, c->transb, c->m, c->n, c->k, alpha,
                                            a, d->lda, b, d->ldb, beta, out, d->ldc);
    if (!c->gemv)
        return vendor ? api.cublasSgemmStridedBatched(cublas, c->transa, c->transb, c->m, c->n,
                                                      c->k, alpha, a, d->lda, d->sa, b, d->ldb,
                                                      d->sb, beta, out, d->ldc, d->sc, c->batch)
                      : (int)autotune_sgemm_strided_batched(
                            at, c->transa, c->transb, c->m, c->n, c->k, alpha, a, d->lda, d->sa,
                            b, d->ldb, d->sb, beta, out, d->ldc, d->sc, c->batch);
    if (c->batch == 1)
        return vendor ? api.cublasSgemv_v2(cublas, c->transa, c->m, c->n, alpha, a, d->lda, b, 1,
                                           beta, out, 1)
                      : (int)autotune_sgemv(at, c->transa, c->m, c->n, alpha, a, d->lda, b, 1,
                                            beta, out, 1);
    return vendor ? api.cublasSgemvStridedBatched(cublas, c->transa, c->m, c->n, alpha, a,
                                                  d->lda, d->sa, b, 1, d->sb, beta, out, 1,
                                                  d->sc, c->batch)
                  : (int)autotune_sgemv_strided_batched(at, c->transa, c->m, c->n, alpha, a,
                                                        d->lda, d->sa, b, 1, d->sb, beta, out, 1,
                                                        d->sc, c->batch);
}

static float *random_floats(size_t n, unsigned seed) {
    float *v = malloc(n * sizeof *v);
    unsigned long long s = seed * 6364136223846793005ull + 1442695040888963407ull;
    for (size_t i = 0; v && i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        v[i] = (float)((s >> 40) % 2001) / 1000.0f - 1.0f;
    }
    return v;
}

/* Microseconds per call of `c`, the mean of `reps` calls between two events after a warm-up. */
static double time_us(const Case *c, const Dims *d, int vendor, CUstream stream, CUdeviceptr A,
                      CUdeviceptr B, CUdeviceptr C, int reps) {
    CUevent e0, e1;
    float ms = 0;
    call(c, d, vendor, A, B, C);
    api.cuEventCreate(&e0, 0);
    api.cuEventCreate(&e1, 0);
    api.cuEventRecord(e0, stream);
    for (int i = 0; i < reps; i++) call(c, d, vendor, A, B, C);
    api.cuEventRecord(e1, stream);
    api.cuEventSynchronize(e1);
    api.cuEventElapsedTime(&ms, e0, e1);
    return 1e3 * ms / reps;
}

/* Runs one case both ways; 1 when libautotune's result matches cuBLAS's. */
static int run_case(const Case *c, CUstream stream) {
    Dims d = dims(c);
    float *a = random_floats(d.na, 1), *b = random_floats(d.nb, 2), *c0 = random_floats(d.nc, 3);
    float *want = malloc(d.nc * sizeof(float)), *got = malloc(d.nc * sizeof(float));
    CUdeviceptr A, B, Cv, Ca;
    int ok = a && b && c0 && want && got && !api.cuMemAlloc_v2(&A, d.na * 4) &&
             !api.cuMemAlloc_v2(&B, d.nb * 4) && !api.cuMemAlloc_v2(&Cv, d.nc * 4) &&
             !api.cuMemAlloc_v2(&Ca, d.nc * 4);
    if (!ok) {
        fprintf(stderr, "%s: out of memory\n", c->name);
        return 0;
    }
    api.cuMemcpyHtoD_v2(A, a, d.na * 4);
    api.cuMemcpyHtoD_v2(B, b, d.nb * 4);
    api.cuMemcpyHtoD_v2(Cv, c0, d.nc * 4);
    api.cuMemcpyHtoD_v2(Ca, c0, d.nc * 4);
    int sv = call(c, &d, 1, A, B, Cv);
    int sa = call(c, &d, 0, A, B, Ca);
    api.cuStreamSynchronize(stream);
    api.cuMemcpyDtoH_v2(want, Cv, d.nc * 4);
    api.cuMemcpyDtoH_v2(got, Ca, d.nc * 4);
    double err = 0, scale = 1e-30;
    for (size_t i = 0; i < d.nc; i++) {
        double diff = fabs((double)got[i] - want[i]);
        err = (diff > err || diff != diff) ? diff : err;
        scale = fabs(want[i]) > scale ? fabs(want[i]) : scale;
    }
    double rel = err / scale;
    ok = sv == 0 && sa == AUTOTUNE_STATUS_SUCCESS && rel <= 1e-4;
    if (sa != AUTOTUNE_STATUS_SUCCESS)
        printf("%-28s autotune: %s (%s)\n", c->name, autotune_status_string(sa), autotune_last_error());
    /* beta != 0 accumulates into C on every timed call: harmless for the timing. */
    double t_at = time_us(c, &d, 0, stream, A, B, Ca, 20);
    double t_cb = time_us(c, &d, 1, stream, A, B, Cv, 20);
    char why[1024];
    if (c->gemv)
        autotune_explain_sgemv(at, c->transa, c->m, c->n, c->alpha, d.lda, c->beta, c->batch, why,
                               sizeof why, NULL);
    else
        autotune_explain_sgemm(at, c->transa, c->transb, c->m, c->n, c->k, c->alpha, d.lda, d.ldb,
                               c->beta, d.ldc, c->batch, why, sizeof why, NULL);
    printf("%-28s max rel err %.2e %s  autotune %9.1f us  cuBLAS %9.1f us  x cuBLAS %.3f\n",
           c->name, rel, ok ? "ok  " : "FAIL", t_at, t_cb, t_cb / t_at);
    printf("    %s\n", why);
    api.cuMemFree_v2(A);
    api.cuMemFree_v2(B);
    api.cuMemFree_v2(Cv);
    api.cuMemFree_v2(Ca);
    free(a), free(b), free(c0), free(want), free(got);
    return ok;
}

int main(int argc, char **argv) {
    const char *db = argc > 1 ? argv[1] : NULL; /* NULL: the database built into libautotune */
    autotune_status_t s = autotune_create(&at, 0, db);
    if (s == AUTOTUNE_STATUS_NO_DEVICE) {
        printf("autotune_create: %s\n  %s\nno GPU here: nothing to compare with cuBLAS\n",
               autotune_status_string(s), autotune_last_error());
        return 0;
    }
    if (s != AUTOTUNE_STATUS_SUCCESS) {
        fprintf(stderr, "autotune_create: %s\n  %s\n", autotune_status_string(s), autotune_last_error());
        return 1;
    }
    CUcontext ctx;
    CUstream stream;
    if (!load_api() || api.cuInit(0) || api.cuDevicePrimaryCtxRetain(&ctx, 0) ||
        api.cuCtxSetCurrent(ctx) || api.cuStreamCreate(&stream, 1) ||
        api.cublasCreate_v2(&cublas) || api.cublasSetStream_v2(cublas, stream)) {
        fprintf(stderr, "could not set up CUDA and cuBLAS for the comparison\n");
        return 1;
    }
    /* Both libraries on the same stream of the same (primary) context. */
    autotune_set_stream(at, stream);
    static const Case cases[] = {
        {"sgemm NN 1024^3", 0, CUBLAS_OP_N, CUBLAS_OP_N, 1024, 1024, 1024, 0, 1, 1.0f, 0.0f},
        {"sgemm NT 777x555x333", 0, CUBLAS_OP_N, CUBLAS_OP_T, 777, 555, 333, 0, 1, 1.0f, 0.0f},
        /* The layer call Y = X W^T (row-major X: 8 tokens x 4096, W: 11008 x 4096), read
         * column-major: Y^T = W X^T, op T on W's buffer. */
        {"sgemm TN layer 11008x8x4096", 0, CUBLAS_OP_T, CUBLAS_OP_N, 11008, 8, 4096, 0, 1, 1.0f, 0.0f},
        {"sgemm TT padded a,b", 0, CUBLAS_OP_T, CUBLAS_OP_T, 300, 200, 100, 5, 1, 0.5f, 2.0f},
        {"sgemm NN batched 64x128^2x64", 0, CUBLAS_OP_N, CUBLAS_OP_N, 128, 128, 64, 0, 64, 1.0f, 0.0f},
        {"sgemm TN batched 8, beta", 0, CUBLAS_OP_T, CUBLAS_OP_N, 256, 96, 512, 3, 8, 1.0f, 1.0f},
        {"sgemv N 4096x4096", 1, CUBLAS_OP_N, 0, 4096, 4096, 0, 0, 1, 1.0f, 0.0f},
        {"sgemv T 1000x3000", 1, CUBLAS_OP_T, 0, 1000, 3000, 0, 0, 1, 1.0f, 0.0f},
        {"sgemv N batched 16x512x1024", 1, CUBLAS_OP_N, 0, 512, 1024, 0, 0, 16, 1.0f, 0.5f},
        {"sgemv T batched 4, padded", 1, CUBLAS_OP_T, 0, 2000, 700, 0, 7, 4, 2.0f, 0.0f},
    };
    int failed = 0;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) failed += !run_case(&cases[i], stream);
    /* A bad argument is a status, and nothing runs: ldc < m. */
    float one = 1.0f;
    s = autotune_sgemm(at, CUBLAS_OP_N, CUBLAS_OP_N, 64, 64, 64, &one, NULL, 64, NULL, 64, &one,
                       NULL, 63);
    printf("ldc < m: %s (%s)\n", autotune_status_string(s), autotune_last_error());
    failed += s != AUTOTUNE_STATUS_INVALID_VALUE;
    autotune_destroy(at);
    printf("%s\n", failed ? "FAILED: some results differ from cuBLAS's" : "every result matches cuBLAS's");
    return failed ? 1 : 0;
}
