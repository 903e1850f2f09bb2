#!/usr/bin/env bash
# The main job, from a fresh clone on a machine with an NVIDIA GPU and its driver: finds or
# installs the CUDA libraries autotune loads at run time, builds it, and runs it with these
# arguments:
#   bash scripts/tune.sh --shape 2048x2048x2048 --db mine.toml
#   bash scripts/tune.sh best --db mine.toml --shape 2048x2048x2048   # any subcommand
# NVRTC and cuBLAS: those AUTOTUNE_NVRTC / AUTOTUNE_CUBLAS name, else those the dynamic loader
# finds (a CUDA toolkit), else the PyPI wheels, installed into .venv once: CUDA 13's, or CUDA
# 12's where the driver is older than 580 or the GPU older than sm_75 (a GTX 1080 Ti).
# Needs cargo, and python3 with venv where no CUDA toolkit is found. docs/install.md has more.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.venv

# Whether the dynamic loader finds a library named $1* (its cache, or LD_LIBRARY_PATH).
loader_finds() {
  if ldconfig -p 2>/dev/null | grep -q "$1"; then return 0; fi
  local d dirs
  IFS=: read -ra dirs <<<"${LD_LIBRARY_PATH:-}"
  for d in "${dirs[@]}"; do
    if [ -n "$d" ] && compgen -G "$d/$1*" >/dev/null; then return 0; fi
  done
  return 1
}

# The directory in .venv holding the library file $1 (e.g. libnvrtc.so.13); empty if none.
wheel_dir() {
  local f
  f=$(find "$venv/" -name "$1" 2>/dev/null | head -n1 || true)
  [ -n "$f" ] && dirname "$f"
  return 0
}

need_nvrtc=0
need_cublas=0
if [ -z "${AUTOTUNE_NVRTC:-}" ] && ! loader_finds libnvrtc.so; then need_nvrtc=1; fi
if [ -z "${AUTOTUNE_CUBLAS:-}" ] && ! loader_finds libcublas.so; then need_cublas=1; fi
if [ $need_nvrtc = 1 ] || [ $need_cublas = 1 ]; then
  # CUDA 13's libraries need driver 580 or newer and drop the archs before sm_75.
  cuda=13
  driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -n1 || true)
  cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n1 || true)
  if [[ $driver =~ ^[0-9]+\. ]] && [ "${driver%%.*}" -lt 580 ]; then cuda=12; fi
  if [[ $cc =~ ^[0-9]+\.[0-9]$ ]] && [ "${cc%%.*}${cc#*.}" -lt 75 ]; then cuda=12; fi
  suffix=""
  [ $cuda = 12 ] && suffix="-cu12"
  wheels=()
  if [ $need_nvrtc = 1 ] && [ -z "$(wheel_dir "libnvrtc.so.$cuda")" ]; then
    wheels+=("nvidia-cuda-nvrtc$suffix")
  fi
  if [ $need_cublas = 1 ] && [ -z "$(wheel_dir "libcublas.so.$cuda")" ]; then
    wheels+=("nvidia-cublas$suffix")
  fi
  if [ ${#wheels[@]} -gt 0 ]; then
    if [ ! -x "$venv/bin/python" ]; then
      echo "tune.sh: creating $venv"
      python3 -m venv "$venv"
    fi
    echo "tune.sh: no CUDA $cuda toolkit found: installing ${wheels[*]} into $venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "${wheels[@]}"
  fi
  for lib in nvrtc cublas; do
    var="need_$lib"
    [ "${!var}" = 1 ] || continue
    dir=$(wheel_dir "lib$lib.so.$cuda")
    if [ -z "$dir" ]; then
      echo "tune.sh: lib$lib.so.$cuda not found under $venv after installing the wheels" >&2
      exit 1
    fi
    dir=$(cd "$dir" && pwd)
    # The directory: autotune takes the highest lib$lib.so.N there; LD_LIBRARY_PATH finds what
    # that library loads beside it (libcublasLt, libnvrtc-builtins).
    if [ $lib = nvrtc ]; then export AUTOTUNE_NVRTC="$dir"; else export AUTOTUNE_CUBLAS="$dir"; fi
    export LD_LIBRARY_PATH="$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    echo "tune.sh: lib$lib from $dir"
  done
fi

exec cargo run --release --quiet --bin autotune -- "$@"
