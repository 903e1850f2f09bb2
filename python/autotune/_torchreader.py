"""The C++ tensor reader of the PyTorch fast path (``_torch_reader.cpp``).

A cached call on PyTorch tensors reads each tensor's dtype, device, shape, strides and address.
Through Python's attributes that is five reads per tensor, about 2 us for a GEMM's three on a
GPU server, more than half of what the call adds over the runtime's own. The reader does it in
C++ against the PyTorch the program imported, so it is compiled per PyTorch version: with the
C++ compiler and Python headers that any PyTorch C++ extension needs, once, into the cache
directory (``$AUTOTUNE_CACHE_DIR``, else ``$XDG_CACHE_HOME/autotune``, else
``~/.cache/autotune``), the NVRTC cache's. Until it is there, or where it cannot be built, the
fast path reads the attributes, as before.

``AUTOTUNE_TORCH_READER``: unset or ``auto``: use the cached reader, or build it in a
background thread on the first call that could use it; ``0`` / ``off``: never; a path: that
prebuilt reader (e.g. built into a container image with ``python -m autotune torch-reader``).
"""

import hashlib
import os
import subprocess
import sys
import sysconfig
import tempfile
import threading
import weakref

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_torch_reader.cpp")

# Compiler flags beside the include paths: PyTorch 2.6 and later need C++20 for their
# headers, older ones build with C++17; both are tried, in that order.
_STDS = ("-std=c++20", "-std=c++17")


class ReaderError(RuntimeError):
    """The reader could not be built or loaded; the message says why and what to do."""


_lock = threading.Lock()
_state = {"path": None, "error": None, "thread": None, "waiting": []}


def cache_root():
    """The directory autotune caches compiled code in (the runtime's NVRTC cache's)."""
    d = os.environ.get("AUTOTUNE_CACHE_DIR")
    if d:
        return d
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg:
        return os.path.join(xdg, "autotune")
    return os.path.join(os.path.expanduser("~"), ".cache", "autotune")


def _compiler():
    return os.environ.get("CXX") or "c++"


def _torch_dirs(torch):
    root = os.path.dirname(os.path.abspath(torch.__file__))
    inc = os.path.join(root, "include")
    return root, [inc, os.path.join(inc, "torch", "csrc", "api", "include")], os.path.join(
        root, "lib")


def reader_path(torch, cxx=None):
    """Where the reader for this PyTorch, Python and compiler lives once built: the key
    hashes the source, PyTorch's version and location, the Python version and the
    compiler."""
    with open(SOURCE, "rb") as f:
        h = hashlib.sha256(f.read())
    root, _, _ = _torch_dirs(torch)
    for part in (getattr(torch, "__version__", "?"), root, sys.version, cxx or _compiler()):
        h.update(b"\0" + str(part).encode())
    return os.path.join(cache_root(), "torch-reader", h.hexdigest()[:24], "reader.so")


def command(torch, out, std, cxx=None):
    """The compiler's command line that builds the reader into ``out``."""
    _, incs, lib = _torch_dirs(torch)
    abi = int(bool(getattr(getattr(torch, "_C", None), "_GLIBCXX_USE_CXX11_ABI", True)))
    cmd = [cxx or _compiler(), "-O2", "-shared", "-fPIC", std, "-w",
           "-D_GLIBCXX_USE_CXX11_ABI=%d" % abi]
    for d in incs + [sysconfig.get_paths()["include"]]:
        cmd += ["-I", d]
    cmd += [SOURCE, "-L", lib, "-lc10", "-ltorch", "-ltorch_cpu", "-ltorch_python",
            "-Wl,-rpath," + lib, "-o", out]
    return cmd


def build(torch=None, cxx=None, timeout=600):
    """The reader's path: the cached one, or built now (seconds to a minute). Raises
    :class:`ReaderError` saying why it cannot be built (no compiler, no Python headers,
    PyTorch's headers missing), with the compiler's last lines."""
    if torch is None:
        torch = sys.modules.get("torch")
        if torch is None:
            raise ReaderError("import torch first: the reader is built against it")
    path = reader_path(torch, cxx)
    if os.path.isfile(path):
        return path
    os.makedirs(os.path.dirname(path), exist_ok=True)
    errors = []
    for std in _STDS:
        fd, tmp = tempfile.mkstemp(suffix=".so", dir=os.path.dirname(path))
        os.close(fd)
        try:
            run = subprocess.run(command(torch, tmp, std, cxx), capture_output=True, text=True,
                                 timeout=timeout)
        except (OSError, subprocess.TimeoutExpired) as e:
            os.unlink(tmp)
            raise ReaderError("building the PyTorch tensor reader: %s (set CXX to a C++ "
                              "compiler, or AUTOTUNE_TORCH_READER=0)" % e) from None
        if run.returncode == 0:
            os.replace(tmp, path)  # atomic: a concurrent build writes the same bytes
            return path
        os.unlink(tmp)
        errors.append("%s: %s" % (std, "\n".join(run.stderr.strip().splitlines()[-4:])))
    raise ReaderError("building the PyTorch tensor reader failed (it needs a C++ compiler, "
                      "Python's headers and PyTorch's; AUTOTUNE_TORCH_READER=0 stops "
                      "trying):\n" + "\n".join(errors))


def _load(tuned, path):
    tuned._rt.use_torch_reader(path)
    tuned._torch_reader = path


def attach(tuned, torch):
    """Gives ``tuned``'s runtime the reader per ``AUTOTUNE_TORCH_READER``: at once where it
    is cached (or named), else once a background build ends. Never raises: the fast path
    reads attributes meanwhile, and a failure is kept for :func:`status`."""
    mode = os.environ.get("AUTOTUNE_TORCH_READER", "auto").strip()
    if mode.lower() in ("0", "off", "no", "false"):
        return
    if mode and mode.lower() != "auto":
        try:
            _load(tuned, mode)
        except Exception as e:  # noqa: BLE001 - a wrong path must not break the call
            _state["error"] = "AUTOTUNE_TORCH_READER=%s: %s" % (mode, e)
        return
    with _lock:
        path = _state["path"] or (reader_path(torch) if os.path.isfile(reader_path(torch))
                                  else None)
        if path is None:
            if _state["error"] is not None:
                return
            _state["waiting"].append(weakref.ref(tuned))
            if _state["thread"] is None:
                t = threading.Thread(target=_build_then_attach, args=(torch,),
                                     name="autotune-torch-reader", daemon=True)
                _state["thread"] = t
                t.start()
            return
        _state["path"] = path
    try:
        _load(tuned, path)
    except Exception as e:  # noqa: BLE001
        _state["error"] = str(e)


def _build_then_attach(torch):
    try:
        path = build(torch)
    except ReaderError as e:
        with _lock:
            _state["error"], _state["waiting"], _state["thread"] = str(e), [], None
        return
    with _lock:
        _state["path"], waiting, _state["waiting"] = path, _state["waiting"], []
        _state["thread"] = None
    for ref in waiting:
        tuned = ref()
        if tuned is not None:
            try:
                _load(tuned, path)
            except Exception as e:  # noqa: BLE001
                _state["error"] = str(e)


def wait(timeout=None):
    """Waits for a background build, if one runs; returns :func:`status`."""
    t = _state["thread"]
    if t is not None:
        t.join(timeout)
    return status()


def status():
    """``(path, error)``: the reader built or found in this process, and why it could not
    be (``None`` each where nothing is known yet)."""
    return _state["path"], _state["error"]
