# The cuBLAS kernels ncu reads beside ours (call 3): 4096^3 SGEMM (TF32 off) and TF32.
import torch
a = torch.rand(4096, 4096, device="cuda")
b = torch.rand(4096, 4096, device="cuda")
for tf32 in (False, True):
    torch.backends.cuda.matmul.allow_tf32 = tf32
    for _ in range(3):
        torch.mm(a, b)
torch.cuda.synchronize()
