"""Finding NVRTC and cuBLAS where pip puts them.

The runtime compiles kernels with NVRTC and calls cuBLAS (the vendor guard); it opens them as
``AUTOTUNE_NVRTC`` and ``AUTOTUNE_CUBLAS`` say (a library file or its lib directory), else by
the names the dynamic loader knows. A Python environment often has them only as NVIDIA's
wheels (``nvidia-cuda-nvrtc``, ``nvidia-cublas``, which PyTorch depends on), outside the
loader's search path: :func:`configure` points the variables at those wheels' lib directories
when they are unset, preferring the CUDA major version of an imported PyTorch (the one its
driver runs). Variables already set are never changed.
"""

import glob
import os
import sys

__all__ = ["configure", "candidates"]


def _site_dirs():
    seen = []
    for p in sys.path:
        d = os.path.join(p or ".", "nvidia")
        if os.path.isdir(d) and d not in seen:
            seen.append(d)
    return seen


def candidates(lib):
    """``(major, lib directory)`` of every wheel-installed ``lib`` (``nvrtc``, ``cublas``)."""
    found = []
    for base in _site_dirs():
        for path in glob.glob(os.path.join(base, "*", "lib", "lib%s.so.*" % lib)):
            tail = os.path.basename(path)[len("lib%s.so." % lib):]
            major = tail.split(".", 1)[0]
            if major.isdigit():
                found.append((int(major), os.path.dirname(path)))
    return sorted(set(found), reverse=True)


def _preferred_major():
    torch = sys.modules.get("torch")
    version = getattr(getattr(torch, "version", None), "cuda", None)
    try:
        return int(str(version).split(".", 1)[0])
    except ValueError:
        return None


def configure():
    """Sets ``AUTOTUNE_NVRTC`` / ``AUTOTUNE_CUBLAS`` to wheel lib directories where unset."""
    major = _preferred_major()
    for lib, var in (("nvrtc", "AUTOTUNE_NVRTC"), ("cublas", "AUTOTUNE_CUBLAS")):
        if os.environ.get(var):
            continue
        found = candidates(lib)
        if not found:
            continue
        same = [d for m, d in found if m == major]
        os.environ[var] = same[0] if same else found[0][1]
