// What autotune's extension reads of a PyTorch tensor on a cached call, read in C++ from the
// tensor itself: a few nanoseconds instead of the ~0.5 us that five Python attribute reads
// cost (dtype, is_cuda, shape, stride(), data_ptr()). Built by autotune/_torchreader.py
// against the PyTorch the program imported (its headers, its C++ ABI), cached per version,
// and loaded by the extension (Runtime.use_torch_reader), which calls autotune_torch_read.
#include <torch/csrc/autograd/python_variable.h>

#include <cstdint>

extern "C" {

// Must match TensorInfo in python/src/lib.rs.
struct autotune_tensor_info {
  uint64_t data;
  int64_t sizes[3];
  int64_t strides[3];
  int32_t ndim;
  int32_t device;  // -1: not a CUDA tensor
};

// The layout of autotune_tensor_info and the meaning of the codes below; the extension
// refuses a reader of another version.
uint32_t autotune_torch_reader_version() noexcept { return 1; }

// 0: `obj` is exactly a torch.Tensor or torch.nn.Parameter, float32, strided, of at most 3
// dimensions, with storage: `out` is filled. 1: another type. 2: another dtype, layout or
// rank, or nested. 3: PyTorch raised (a tensor without storage, symbolic sizes, ...).
// The caller holds the GIL and a reference to `obj`.
int autotune_torch_read(PyObject* obj, autotune_tensor_info* out) noexcept {
  try {
    if (!THPVariable_CheckExact(obj)) return 1;
    const at::Tensor& t = THPVariable_Unpack(obj);
    if (t.layout() != at::kStrided || t.scalar_type() != at::kFloat || t.is_nested() ||
        t.dim() > 3)
      return 2;
    const int64_t n = t.dim();
    out->ndim = static_cast<int32_t>(n);
    for (int64_t i = 0; i < n; ++i) {
      out->sizes[i] = t.size(i);
      out->strides[i] = t.stride(i);
    }
    out->device = t.is_cuda() ? static_cast<int32_t>(t.get_device()) : -1;
    out->data = reinterpret_cast<uint64_t>(t.data_ptr());
    return 0;
  } catch (...) {
    return 3;
  }
}

}  // extern "C"
