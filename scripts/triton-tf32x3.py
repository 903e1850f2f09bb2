#!/usr/bin/env python3
"""Triton's 3xTF32 GEMM (tl.dot with input_precision="tf32x3") beside cuBLAS SGEMM, in one process.

    python3 scripts/triton-tf32x3.py configs/suites/gemm-layers.toml [--out table.md]

For each gemm shape of the suite (MxNxK with an optional :nt tag; other forms are skipped), on
uniform(-1, 1) inputs: cuBLAS SGEMM through PyTorch (TF32 off), and a Triton kernel autotuned
over the configs below, each timed with triton.testing.do_bench (L2 cleared before every run,
median). Errors: the largest |C - C64| / (|A| |B|)(i, j) over the output, against a float64
product, the normalisation autotune's validation uses. Needs a GPU, PyTorch and Triton.
"""
import argparse
import sys
import tomllib

import torch
import triton
import triton.language as tl

CONFIGS = [
    triton.Config({"BM": bm, "BN": bn, "BK": bk, "G": 8}, num_stages=s, num_warps=w)
    for (bm, bn, bk, s, w) in [
        (128, 128, 32, 3, 8),
        (128, 256, 32, 3, 8),
        (256, 128, 32, 3, 8),
        (128, 128, 32, 4, 4),
        (64, 128, 32, 4, 4),
        (128, 64, 32, 4, 4),
        (64, 256, 32, 4, 8),
        (128, 128, 64, 3, 8),
    ]
]


@triton.autotune(configs=CONFIGS, key=["M", "N", "K", "sbk"])
@triton.jit
def mm_tf32x3(a, b, c, M, N, K, sam, sak, sbk, sbn, scm, scn,
              BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, G: tl.constexpr):
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BM)
    tiles_n = tl.cdiv(N, BN)
    width = G * tiles_n
    group = pid // width
    first = group * G
    rows = min(tiles_m - first, G)
    pm = first + (pid % width) % rows
    pn = (pid % width) // rows
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        ks = k0 + rk
        at = tl.load(a + rm[:, None] * sam + ks[None, :] * sak,
                     mask=(rm[:, None] < M) & (ks[None, :] < K), other=0.0)
        bt = tl.load(b + ks[:, None] * sbk + rn[None, :] * sbn,
                     mask=(ks[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(at, bt, acc, input_precision="tf32x3")
    tl.store(c + rm[:, None] * scm + rn[None, :] * scn, acc,
             mask=(rm[:, None] < M) & (rn[None, :] < N))


def triton_mm(a, b):
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), device=a.device, dtype=torch.float32)
    grid = lambda meta: (triton.cdiv(M, meta["BM"]) * triton.cdiv(N, meta["BN"]),)
    mm_tf32x3[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                    c.stride(0), c.stride(1))
    return c


def bench(fn):
    try:
        return triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median")
    except TypeError:
        return triton.testing.do_bench(fn, warmup=25, rep=200)


def error(c, ref, bound):
    return ((c.double() - ref).abs() / bound.clamp_min(1e-300)).max().item()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("suite")
    p.add_argument("--out")
    args = p.parse_args()
    with open(args.suite, "rb") as f:
        suite = tomllib.load(f)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    gen = torch.Generator(device="cuda").manual_seed(31)
    lines = [
        f"Triton {triton.__version__}, PyTorch {torch.__version__}, {torch.cuda.get_device_name()}",
        "",
        "| shape | cuBLAS SGEMM ms | Triton tf32x3 ms | Triton x cuBLAS | Triton config "
        "| max rel. error cuBLAS | max rel. error Triton |",
        "|---|---:|---:|---:|---|---:|---:|",
    ]
    for label in suite["shapes"]:
        dims, *tags = label.split(":")
        if any(t != "nt" for t in tags):
            continue
        m, n, k = (int(x) for x in dims.split("x"))
        nt = "nt" in tags
        a = torch.rand((m, k), device="cuda", generator=gen) * 2 - 1
        # B as op(B): for NT, the transposed view of an N x K matrix (W of x W^T).
        w = torch.rand((n, k) if nt else (k, n), device="cuda", generator=gen) * 2 - 1
        b = w.t() if nt else w
        cublas_ms = bench(lambda: torch.mm(a, b))
        triton_ms = bench(lambda: triton_mm(a, b))
        cfg = mm_tf32x3.best_config
        cfg_text = " ".join(f"{k}={v}" for k, v in cfg.kwargs.items())
        cfg_text += f" stages={cfg.num_stages} warps={cfg.num_warps}"
        ref = torch.mm(a.double(), b.double())
        bound = torch.mm(a.double().abs(), b.double().abs())
        e_cublas = error(torch.mm(a, b), ref, bound)
        e_triton = error(triton_mm(a, b), ref, bound)
        del ref, bound
        lines.append(
            f"| {label} | {cublas_ms:.4f} | {triton_ms:.4f} | {cublas_ms / triton_ms:.3f} "
            f"| {cfg_text} | {e_cublas:.2e} | {e_triton:.2e} |"
        )
        print(lines[-1], flush=True)
    text = "\n".join(lines) + "\n"
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
