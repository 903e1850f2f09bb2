#!/usr/bin/env bash
# Writes results/tf32x3-pipe2-h100.md from the shipped database and this session's files: the
# 3xTF32 winners' errors beside cuBLAS's, beside Triton's tf32x3, their SASS, and Nsight
# Compute beside cuBLAS. Needs NVRTC and cuobjdump (scripts/tf32x3-sass.py says where from).
#   bash results/runs/session39/tf32x3-report.sh
set -euo pipefail
cd "$(dirname "$0")/../../.."
R=results/runs/session39
PY=${PYTHON:-python3}
{
  echo "# 3xTF32 on the H100 with gemm_tf32x3_wgmma_pipe revision 2 (session 39)"
  echo
  echo "NVIDIA H100 80GB HBM3, cuBLAS 13.1. Written by \`bash $R/tf32x3-report.sh\` from"
  echo "results/tuning.toml and the files of [runs/session39](runs/session39/README.md). Every x cuBLAS"
  echo "is cuBLAS SGEMM's time over the kernel's, both timed in the same process; errors are the"
  echo "largest |C - C64| over the magnitude bound of each dot product, on the same uniform(-1, 1)"
  echo "inputs for the kernel and cuBLAS SGEMM."
  echo
  echo "## Beside Triton's tf32x3"
  echo
  echo "\`python3 scripts/tf32x3-vs-triton.py $R/triton.md\` (Triton 3.6, autotuned over"
  echo "scripts/triton-tf32x3.py's configs, timed against cuBLAS SGEMM through PyTorch in its own"
  echo "process on the same machine; \"no entry\": the database has none for the problem, so the"
  echo "runtime predicts or calls cuBLAS):"
  echo
  python3 scripts/tf32x3-vs-triton.py $R/triton.md
  echo
  echo "## Errors of the shipped 3xTF32 entries beside cuBLAS SGEMM's"
  echo
  echo "\`python3 scripts/tf32x3-errors.py results/tuning.toml\` (every GPU; from K = 256 a 3xTF32"
  echo "kernel less accurate than cuBLAS on the same inputs now fails validation):"
  echo
  python3 scripts/tf32x3-errors.py results/tuning.toml
  echo
  echo "## SASS of the shipped H100 winners"
  echo
  echo "\`python3 scripts/tf32x3-sass.py --gpu H100\` (each entry's kernel compiled by NVRTC as"
  echo "tuning compiled it, read by cuobjdump):"
  echo
  $PY scripts/tf32x3-sass.py --gpu H100
  echo
  echo "## Nsight Compute beside cuBLAS (4096^3 and 1024x14336x4096 NT)"
  echo
  echo "\`python3 $R/ncu-table.py\` over $R/ncu/ (\`$R/plans/ncu.sh\`, \`--clock-control none\`;"
  echo "the database of that moment: 4096^3 NT was then predicted, gemm_tf32x3_wgmma; cuBLAS through"
  echo "PyTorch with TF32 off (SGEMM) and on (its TF32 tensor-core GEMM)):"
  echo
  python3 $R/ncu-table.py
} >results/tf32x3-pipe2-h100.md
echo "wrote results/tf32x3-pipe2-h100.md"
