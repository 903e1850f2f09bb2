#!/usr/bin/env python3
"""What each read of a CUDA tensor that the extension's torch_call makes costs in Python on the
GPU machine (PyTorch's getters, no autotune): median nanoseconds per read over 7 runs of
200,000 reads each, for a 64x64 float32 CUDA tensor, beside building and looking up a plan key
like torch_call's and asking the current stream.

  python3 results/runs/session44/torch-attr-cost.py
"""
import statistics
import timeit

import torch

t = torch.empty(64, 64, device="cuda")
u = torch.empty(64, 64, device="cuda")
o = torch.empty(64, 64, device="cuda")
raw_stream = torch._C._cuda_getCurrentRawStream
key = ("gemm", False, False, 1.0, 0.0, (type(t), t.shape, t.stride()), (type(u), u.shape, u.stride()),
       (type(o), o.shape, o.stride()))
plans = {key: (0, False, 4096, 4096, 4096, None, None, 7)}
cases = {
    "type(t)": "type(t)",
    "t.dtype": "t.dtype",
    "t.is_cuda": "t.is_cuda",
    "t.layout": "t.layout",
    "t.shape": "t.shape",
    "t.stride()": "t.stride()",
    "t.data_ptr()": "t.data_ptr()",
    "t.get_device()": "t.get_device()",
    "t.device": "t.device",
    "raw_stream(0)": "raw_stream(0)",
    "key build + dict get": "plans.get(('gemm', False, False, 1.0, 0.0, (type(t), t.shape, t.stride()), "
    "(type(u), u.shape, u.stride()), (type(o), o.shape, o.stride())))",
    "empty statement": "pass",
}
g = dict(globals())
print("ns per read, median of 7 runs of 200000 (torch %s, %s)" % (torch.__version__, torch.cuda.get_device_name()))
for name, stmt in cases.items():
    runs = timeit.repeat(stmt, globals=g, number=200000, repeat=7)
    print("  %-22s %8.1f" % (name, statistics.median(runs) / 200000 * 1e9))
