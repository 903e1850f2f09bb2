// A C++ product calling libautotune: a small RAII wrapper that turns statuses into exceptions,
// the layer call Y = X W^T of a transformer (cuBLAS's column-major view: C = W^T X, op T, N),
// and what libautotune would run for it and why.
//
// With the CUDA toolkit at hand (cuda_runtime.h, as CMake's CUDA::cudart gives it: see
// CMakeLists.txt here), it allocates the buffers and runs the call on a stream; without it,
// it only asks autotune_explain_sgemm. CI builds the second form with CMake
// (scripts/capi-test.sh), as docs/shipping.md tells a product to:
//   cmake -S examples/cpp -B build -DAUTOTUNE_ROOT=$PWD && cmake --build build
// Exit status 0 when the call ran (or there is no GPU: it says so), 1 on an error.
#include "autotune.h"

#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#if __has_include(<cuda_runtime.h>)
#include <cuda_runtime.h>
#define HAVE_CUDART 1
#endif

namespace at {

// A status other than success, with the library's message.
struct Error : std::runtime_error {
    autotune_status_t status;
    Error(autotune_status_t s, const char *what)
        : std::runtime_error(std::string(what) + ": " + autotune_status_string(s) + ": " +
                             autotune_last_error()),
          status(s) {}
};

inline void check(autotune_status_t s, const char *what) {
    if (s != AUTOTUNE_STATUS_SUCCESS) throw Error(s, what);
}

// One handle: created on a GPU with a database (nullptr: the one built in), destroyed once.
class Handle {
  public:
    explicit Handle(int device = 0, const char *db = nullptr) {
        check(autotune_create(&h_, device, db), "autotune_create");
    }
    ~Handle() { autotune_destroy(h_); }
    Handle(const Handle &) = delete;
    Handle &operator=(const Handle &) = delete;
    operator autotune_handle_t() const { return h_; }

    // What autotune_sgemm would run for these arguments, and why.
    std::string explain_sgemm(int transa, int transb, int m, int n, int k, int lda, int ldb,
                              int ldc) const {
        size_t len = 0;
        check(autotune_explain_sgemm(h_, transa, transb, m, n, k, 1.0f, lda, ldb, 0.0f, ldc, 1,
                                     nullptr, 0, &len),
              "autotune_explain_sgemm");
        std::vector<char> text(len + 1);
        check(autotune_explain_sgemm(h_, transa, transb, m, n, k, 1.0f, lda, ldb, 0.0f, ldc, 1,
                                     text.data(), text.size(), nullptr),
              "autotune_explain_sgemm");
        return text.data();
    }

  private:
    autotune_handle_t h_ = nullptr;
};

} // namespace at

int main() {
    // Y (tokens x out) = X (tokens x in) W^T with W (out x in), row-major as a framework keeps
    // them. Read column-major, the same memory holds Y^T (out x tokens), W^T (in x out) and
    // X^T (in x tokens), and Y^T = W X^T: transa = T on W's buffer, transb = N on X's.
    const int tokens = 8, in = 4096, out = 11008;
    try {
        at::Handle h;
        std::printf("%s\n", h.explain_sgemm(AUTOTUNE_OP_T, AUTOTUNE_OP_N, out, tokens, in, in,
                                            in, out).c_str());
#ifdef HAVE_CUDART
        float *w, *x, *y;
        cudaStream_t stream;
        cudaStreamCreate(&stream);
        cudaMalloc(&w, sizeof(float) * out * in);
        cudaMalloc(&x, sizeof(float) * tokens * in);
        cudaMalloc(&y, sizeof(float) * tokens * out);
        cudaMemset(w, 0, sizeof(float) * out * in);
        cudaMemset(x, 0, sizeof(float) * tokens * in);
        at::check(autotune_set_stream(h, stream), "autotune_set_stream");
        const float alpha = 1.0f, beta = 0.0f;
        // Was: cublasSgemm(blas, CUBLAS_OP_T, CUBLAS_OP_N, out, tokens, in, &alpha, w, in, x,
        //                  in, &beta, y, out);
        at::check(autotune_sgemm(h, AUTOTUNE_OP_T, AUTOTUNE_OP_N, out, tokens, in, &alpha, w, in,
                                 x, in, &beta, y, out),
                  "autotune_sgemm");
        cudaStreamSynchronize(stream);
        std::printf("Y = X W^T: %d x %d done\n", tokens, out);
        cudaFree(w), cudaFree(x), cudaFree(y);
        cudaStreamDestroy(stream);
#endif
    } catch (const at::Error &e) {
        std::printf("%s\n", e.what());
        // No GPU is not a failure of this example: a product would fall back here.
        return e.status == AUTOTUNE_STATUS_NO_DEVICE ? 0 : 1;
    }
    return 0;
}
