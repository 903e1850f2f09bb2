"""Argument checking without a GPU: every wrong call raises a clear TypeError or ValueError
and launches nothing (the runtime stand-in records no call); right calls reach the runtime
with the descriptor the arrays' shapes and strides say, without copies."""

import os
import subprocess
import sys

import numpy as np
import pytest

import autotune
from autotune import _native
from conftest import FakeCuda as F
from conftest import FakeDLPack


def gemm_call(recorder):
    """The one recorded gemm launch as a dict of its arguments."""
    assert len(recorder.calls) == 1, recorder.calls
    kind, (desc, *args) = recorder.calls[0]
    assert kind == "gemm"
    ta, tb, m, n, k, lds, alpha, beta, batch, strides = desc
    args = (ta, tb, m, n, k) + lds + (alpha, beta, batch) + strides + tuple(args)
    names = ("trans_a trans_b m n k lda ldb ldc alpha beta batch stride_a stride_b stride_c "
             "a a_len b b_len c c_len stream").split()
    return dict(zip(names, args))


def gemv_call(recorder):
    assert len(recorder.calls) == 1, recorder.calls
    kind, (desc, *args) = recorder.calls[0]
    assert kind == "gemv"
    args = tuple(desc) + tuple(args)
    names = ("trans m k lda alpha beta batch stride_a stride_x stride_y "
             "a a_len x x_len y y_len stream").split()
    return dict(zip(names, args))


# ---------------------------------------------------------------- right calls, their descriptors


def test_plain_gemm_reaches_the_runtime_packed(tuned, recorder):
    a, b, c = F((64, 32)), F((32, 48)), F((64, 48))
    assert tuned.gemm(a, b, out=c) is c
    call = gemm_call(recorder)
    assert (call["trans_a"], call["trans_b"], call["m"], call["n"], call["k"]) == (False, False, 64, 48, 32)
    assert (call["lda"], call["ldb"], call["ldc"]) == (32, 48, 48)
    assert (call["a"], call["b"], call["c"]) == (a.ptr, b.ptr, c.ptr)
    assert (call["a_len"], call["b_len"], call["c_len"]) == (64 * 32, 32 * 48, 64 * 48)
    assert (call["batch"], call["alpha"], call["beta"]) == (1, 1.0, 0.0)
    assert call["stream"] == 0  # no stream said: the default stream


def test_transposed_view_is_a_layout_flag_not_a_copy(tuned, recorder):
    # x @ w.t() with w stored 48 x 32 (nn.Linear): b is w's transpose, first stride 1.
    x, c = F((64, 32)), F((64, 48))
    wt = F((32, 48), strides=(1, 32))
    tuned.gemm(x, wt, out=c)
    call = gemm_call(recorder)
    assert (call["trans_a"], call["trans_b"], call["ldb"], call["b"]) == (False, True, 32, wt.ptr)
    assert autotune.check_gemm(x, wt, out=c) == "64x48x32:nt"


def test_trans_flags_and_transposed_views_compose(tuned, recorder):
    # trans_a on a transposed view reads the stored matrix as is.
    a_view = F((32, 64), strides=(1, 32))  # the transpose of a 64 x 32 row-major matrix
    tuned.gemm(a_view, F((32, 48)), out=F((64, 48)), trans_a=True)
    call = gemm_call(recorder)
    assert (call["trans_a"], call["m"], call["k"], call["lda"]) == (False, 64, 32, 32)
    recorder.calls.clear()
    tuned.gemm(F((32, 64)), F((32, 48)), out=F((64, 48)), trans_a=True)
    call = gemm_call(recorder)
    assert (call["trans_a"], call["m"], call["k"], call["lda"]) == (True, 64, 32, 64)


def test_padded_rows_keep_their_leading_dimension(tuned, recorder):
    # A 64 x 32 slice of a 64 x 40 array: lda 40.
    a = F((64, 32), strides=(40, 1))
    tuned.gemm(a, F((32, 48)), out=F((64, 48)))
    call = gemm_call(recorder)
    assert call["lda"] == 40
    assert call["a_len"] == 63 * 40 + 32


def test_transposed_out_swaps_the_operands(tuned, recorder):
    a, b = F((64, 32)), F((32, 48))
    out = F((64, 48), strides=(1, 64))  # the transpose of a 48 x 64 row-major array
    tuned.gemm(a, b, out=out)
    call = gemm_call(recorder)
    # out^T (48 x 64) = b^T a^T: the runtime's A is b, stored as it is, read transposed.
    assert (call["m"], call["n"], call["k"]) == (48, 64, 32)
    assert (call["trans_a"], call["trans_b"]) == (True, True)
    assert (call["a"], call["b"], call["ldc"]) == (b.ptr, a.ptr, 64)


def test_batched_gemm_takes_batch_strides(tuned, recorder):
    a, b, c = F((5, 64, 32)), F((5, 32, 48)), F((5, 64, 48))
    tuned.gemm(a, b, out=c)
    call = gemm_call(recorder)
    assert (call["batch"], call["stride_a"], call["stride_b"], call["stride_c"]) == (
        5, 64 * 32, 32 * 48, 64 * 48)
    assert autotune.check_gemm(a, b, out=c) == "64x48x32:b5"


def test_a_batch_against_one_matrix_is_one_taller_product(tuned, recorder):
    # (batch, tokens, d_in) @ W: rows after rows, as torch's linear computes it.
    tuned.gemm(F((5, 64, 32)), F((32, 48)), out=F((5, 64, 48)))
    call = gemm_call(recorder)
    assert (call["m"], call["batch"]) == (5 * 64, 1)


def test_a_shared_operand_in_a_batch_has_stride_zero(tuned, recorder):
    tuned.gemm(F((64, 32)), F((5, 32, 48)), out=F((5, 64, 48)))
    call = gemm_call(recorder)
    assert (call["batch"], call["stride_a"], call["stride_b"]) == (5, 0, 32 * 48)


def test_alpha_beta_and_the_stream_of_the_arrays(tuned, recorder):
    s = 0x7F00AB00
    a, b, c = F((8, 8), stream=s), F((8, 8), stream=s), F((8, 8), stream=s)
    tuned.gemm(a, b, out=c, alpha=0.5, beta=2)
    call = gemm_call(recorder)
    assert (call["alpha"], call["beta"], call["stream"]) == (0.5, 2.0, s)


def test_stream_argument_overrides(tuned, recorder):
    class TorchLikeStream:
        cuda_stream = 0x1234

    a, b, c = F((8, 8), stream=5), F((8, 8), stream=6), F((8, 8))
    tuned.gemm(a, b, out=c, stream=TorchLikeStream())
    assert gemm_call(recorder)["stream"] == 0x1234


def test_gemv_plain_transposed_and_batched(tuned, recorder):
    tuned.gemv(F((64, 32)), F((32,)), out=F((64,)))
    call = gemv_call(recorder)
    assert (call["trans"], call["m"], call["k"], call["lda"]) == (False, 64, 32, 32)
    recorder.calls.clear()
    # A transposed view (w.t(), w stored 32 x 64): y = w^T x, the runtime's trans.
    tuned.gemv(F((64, 32), strides=(1, 64)), F((32,)), out=F((64,)))
    call = gemv_call(recorder)
    assert (call["trans"], call["m"], call["k"], call["lda"]) == (True, 32, 64, 64)
    recorder.calls.clear()
    tuned.gemv(F((64, 32)), F((64,)), out=F((32,)), trans=True)
    assert gemv_call(recorder)["trans"] is True
    recorder.calls.clear()
    tuned.gemv(F((3, 64, 32)), F((3, 32)), out=F((3, 64)))
    call = gemv_call(recorder)
    assert (call["batch"], call["stride_a"], call["stride_x"], call["stride_y"]) == (
        3, 64 * 32, 32, 64)
    assert autotune.check_gemv(F((3, 64, 32)), F((32,)), out=F((3, 64))) == "64x32:b3"


def test_explain_takes_shapes(tuned, recorder):
    assert tuned.explain("gemm", (8, 4096), (4096, 11008)) == "explained"
    assert recorder.calls[-1] == ("explain_gemm", (False, False, 8, 11008, 4096,
                                                   (4096, 11008, 11008), 1.0, 0.0, 1, (0, 0, 0)))
    # The layer call x @ w.t(), w stored 11008 x 4096.
    tuned.explain("gemm", (8, 4096), (11008, 4096), trans_b=True)
    assert recorder.calls[-1][1][:5] == (False, True, 8, 11008, 4096)
    tuned.explain("gemv", (4096, 1024), (1024,))
    assert recorder.calls[-1][0] == "explain_gemv"
    with pytest.raises(ValueError, match="op must be"):
        tuned.explain("gemmm", (8, 8), (8, 8))
    with pytest.raises(ValueError, match="gemv takes trans"):
        tuned.explain("gemv", (8, 8), (8,), trans_b=True)


def test_dlpack_capsules_are_read_in_place(tuned, recorder):
    arr = np.zeros((64, 48), dtype=np.float32)
    a = FakeDLPack(np.zeros((64, 32), dtype=np.float32))
    b = FakeDLPack(np.zeros((48, 32), dtype=np.float32).T)  # a transposed view
    out = FakeDLPack(arr)
    tuned.gemm(a, b, out=out)
    call = gemm_call(recorder)
    assert call["c"] == arr.ctypes.data
    assert (call["trans_b"], call["ldb"]) == (True, 32)
    # The producer was told the stream the call runs on (1: the legacy default stream).
    assert a.streams == [1]


# ---------------------------------------------------------------- wrong calls: nothing launched


@pytest.mark.parametrize("a_shape,b_shape,out_shape,match", [
    ((64, 32), (31, 48), (64, 48), "cannot be multiplied"),
    ((64, 32), (32, 48), (64, 47), "out has shape"),
    ((64, 32), (32, 48), (5, 64, 48), "out has shape"),
    ((64,), (64, 48), (1, 48), "a must be 2-D"),
    ((2, 2, 64, 32), (32, 48), (64, 48), "a must be 2-D"),
    ((0, 32), (32, 48), (0, 48), "at least 1"),
    ((5, 64, 32), (4, 32, 48), (5, 64, 48), "batch sizes differ"),
])
def test_shapes(tuned, recorder, a_shape, b_shape, out_shape, match):
    with pytest.raises(ValueError, match=match):
        tuned.gemm(F(a_shape), F(b_shape), out=F(out_shape))
    assert recorder.calls == []


def test_non_contiguous_arrays_are_refused_not_copied(tuned, recorder):
    # Every other column of a 64 x 64 array: no leading dimension describes it.
    a = F((64, 32), strides=(64, 2))
    with pytest.raises(ValueError, match=r"neither a row-major matrix.*never copies"):
        tuned.gemm(a, F((32, 48)), out=F((64, 48)))
    # A broadcast row (stride 0) is no matrix either.
    with pytest.raises(ValueError, match="neither a row-major"):
        tuned.gemm(F((64, 32), strides=(0, 1)), F((32, 48)), out=F((64, 48)))
    # Negative strides.
    with pytest.raises(ValueError, match="neither a row-major"):
        tuned.gemm(F((64, 32), strides=(-32, 1)), F((32, 48)), out=F((64, 48)))
    # A vector with a stride.
    with pytest.raises(ValueError, match="contiguous vectors"):
        tuned.gemv(F((64, 32)), F((32,), strides=(2,)), out=F((64,)))
    # Byte strides that are not whole elements.
    bad = F((64, 32))
    bad.__cuda_array_interface__["strides"] = (130, 4)
    with pytest.raises(ValueError, match="whole float32"):
        tuned.gemm(bad, F((32, 48)), out=F((64, 48)))
    assert recorder.calls == []


@pytest.mark.parametrize("typestr", ["<f8", "<f2", "<i4", "|u1", "<c8"])
def test_dtypes_other_than_float32(tuned, recorder, typestr):
    with pytest.raises(TypeError, match="float32"):
        tuned.gemm(F((8, 8), typestr=typestr), F((8, 8)), out=F((8, 8)))
    with pytest.raises(TypeError, match="float32"):
        tuned.gemv(F((8, 8)), F((8,), typestr=typestr), out=F((8,)))
    assert recorder.calls == []


def test_dlpack_dtype_is_checked(tuned, recorder):
    with pytest.raises(TypeError, match="float64"):
        tuned.gemm(FakeDLPack(np.zeros((8, 8))), F((8, 8)), out=F((8, 8)))
    assert recorder.calls == []


def test_cpu_arrays(tuned, recorder):
    cpu = np.zeros((8, 8), dtype=np.float32)
    with pytest.raises(TypeError, match=r"CPU array.*\.cuda\(\)"):
        tuned.gemm(cpu, F((8, 8)), out=F((8, 8)))
    with pytest.raises(TypeError, match="CPU array"):
        tuned.gemv(F((8, 8)), np.zeros(8, dtype=np.float32), out=F((8,)))
    with pytest.raises(TypeError, match="not a CUDA array"):
        tuned.gemm([[1.0]], F((1, 1)), out=F((1, 1)))
    with pytest.raises(TypeError, match="not a CUDA array"):
        tuned.gemm(None, F((1, 1)), out=F((1, 1)))
    assert recorder.calls == []


def test_cpu_torch_tensors():
    torch = pytest.importorskip("torch", reason="torch is not installed (the GPU machine has it)")
    rec = __import__("conftest").Recorder()
    tuned = autotune.Tuned._with_runtime(rec)
    x = torch.zeros(8, 8)
    with pytest.raises(TypeError, match=r"CPU.*\.cuda\(\)"):
        tuned.gemm(x, x)
    with pytest.raises(TypeError, match="float32"):
        tuned.gemm(x.double(), x)
    assert rec.calls == []


def test_out_errors(tuned, recorder):
    a, b = F((8, 8)), F((8, 8))
    with pytest.raises(ValueError, match="read-only"):
        tuned.gemm(a, b, out=F((8, 8), readonly=True))
    with pytest.raises(ValueError, match="overlaps a"):
        tuned.gemm(a, b, out=F((8, 8), ptr=a.ptr))
    with pytest.raises(ValueError, match="overlaps x"):
        x = F((8,))
        tuned.gemv(F((8, 8)), x, out=F((8,), ptr=x.ptr + 16))
    with pytest.raises(ValueError, match="beta = 1 reads out"):
        tuned.gemm(a, b, beta=1.0)
    # out=None with arrays of no known library: nothing to allocate with.
    with pytest.raises(TypeError, match="pass out="):
        tuned.gemm(a, b)
    assert recorder.calls == []


def test_misaligned_pointers(tuned, recorder):
    with pytest.raises(ValueError, match="multiple of 16 bytes"):
        tuned.gemm(F((8, 8), ptr=(1 << 40) + 4), F((8, 8)), out=F((8, 8)))
    assert recorder.calls == []


def test_streams_that_disagree(tuned, recorder):
    with pytest.raises(ValueError, match="different streams"):
        tuned.gemm(F((8, 8), stream=5), F((8, 8), stream=6), out=F((8, 8)))
    with pytest.raises(ValueError, match="stream 0"):
        tuned.gemm(F((8, 8), stream=0), F((8, 8)), out=F((8, 8)))
    with pytest.raises(TypeError, match="not a CUDA stream"):
        tuned.gemm(F((8, 8)), F((8, 8)), out=F((8, 8)), stream="fast")
    with pytest.raises(TypeError, match="not a bool"):
        tuned.gemm(F((8, 8)), F((8, 8)), out=F((8, 8)), stream=True)
    assert recorder.calls == []


def test_devices_that_disagree(tuned, recorder):
    with pytest.raises(ValueError, match="different GPUs"):
        tuned.gemm(FakeDLPack(np.zeros((8, 8), np.float32), device=0),
                   FakeDLPack(np.zeros((8, 8), np.float32), device=1), out=F((8, 8)))
    assert recorder.calls == []


def test_cai_versions_and_garbage(tuned, recorder):
    v2 = F((8, 8), version=2)
    tuned.gemm(v2, F((8, 8)), out=F((8, 8)))
    assert gemm_call(recorder)["stream"] == 0
    recorder.calls.clear()
    old = F((8, 8), version=1)
    with pytest.raises(TypeError, match="version"):
        tuned.gemm(old, F((8, 8)), out=F((8, 8)))
    broken = F((8, 8))
    del broken.__cuda_array_interface__["data"]
    with pytest.raises(TypeError, match="'data'"):
        tuned.gemm(broken, F((8, 8)), out=F((8, 8)))
    with pytest.raises(TypeError, match="real number"):
        tuned.gemm(F((8, 8)), F((8, 8)), out=F((8, 8)), alpha="two")
    assert recorder.calls == []


# ---------------------------------------------------------------- the extension's own checks


def test_the_extension_checks_descriptors_without_a_device():
    # (trans_a, trans_b, m, n, k, (lda, ldb, ldc), alpha, beta, batch, (sa, sb, sc)), lens...
    ok = (False, False, 64, 48, 32, (32, 48, 48), 1.0, 0.0, 1, (0, 0, 0))
    assert _native.check_gemm(ok, 64 * 32, 32 * 48, 64 * 48) == "64x48x32"
    with pytest.raises(ValueError, match="lda must be at least 32"):
        _native.check_gemm((False, False, 64, 48, 32, (31, 48, 48), 1.0, 0.0, 1, (0, 0, 0)),
                           10 ** 6, 10 ** 6, 10 ** 6)
    with pytest.raises(ValueError, match="buffer c has 100 elements"):
        _native.check_gemm(ok, 64 * 32, 32 * 48, 100)
    with pytest.raises(ValueError, match="would overlap"):
        _native.check_gemm((False, False, 64, 48, 32, (32, 48, 48), 1.0, 0.0, 2, (0, 0, 10)),
                           10 ** 6, 10 ** 6, 10 ** 6)
    with pytest.raises(ValueError, match="batch count"):
        _native.check_gemv((False, 8, 8, 8, 1.0, 0.0, 0, 0, 0, 0), 64, 8, 8)
    with pytest.raises((TypeError, ValueError), match="length 10"):
        _native.check_gemm((False, False, 64), 1, 1, 1)  # a short descriptor


def test_the_runtime_checks_before_touching_the_device():
    """The extension's gemm checks its descriptor before it looks at the pointers or the GPU,
    so a wrong call raises ValueError even where there is no GPU; a Runtime cannot be made
    here, so this calls the check the runtime runs first, with what Tuned.gemm passes."""
    rec = __import__("conftest").Recorder()
    tuned = autotune.Tuned._with_runtime(rec)
    a, b, c = F((64, 32)), F((32, 48)), F((64, 48))
    tuned.gemm(a, b, out=c)
    desc, _, a_len, _, b_len, _, c_len, _ = rec.calls[0][1]
    assert _native.check_gemm(desc, a_len, b_len, c_len) == "64x48x32"


# ---------------------------------------------------------------- construction, no GPU


@pytest.mark.skipif(autotune.device_count() > 0, reason="a GPU is here: the no-GPU error cannot happen")
def test_no_gpu_is_autotune_error_saying_what_to_do():
    with pytest.raises(autotune.Error) as e:
        autotune.Tuned()
    assert isinstance(e.value, RuntimeError)
    msg = str(e.value)
    assert "driver" in msg or "device" in msg
    assert "nvidia-smi" in msg or "install" in msg


def test_database_errors_come_before_the_device(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such file"):
        autotune.Tuned(db=tmp_path / "missing.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("this is = = not toml\n")
    with pytest.raises(ValueError, match="bad.toml"):
        autotune.Tuned(db=bad)
    with pytest.raises(TypeError, match="ordinal"):
        autotune.Tuned(device=-1)
    with pytest.raises(ValueError, match="math"):
        autotune.Tuned(math="tf32")


def test_device_count_never_raises():
    assert autotune.device_count() >= 0


def test_error_is_a_runtime_error():
    assert issubclass(autotune.Error, RuntimeError)
    assert autotune.Error.__module__ == "autotune"


# ---------------------------------------------------------------- python -m autotune, libraries


def test_python_m_autotune_without_the_binary_says_what_to_do(tmp_path):
    import autotune.__main__ as cli

    bundled = os.path.join(os.path.dirname(cli.__file__), "_bin", "autotune")
    if os.path.exists(bundled):
        pytest.skip("this install bundles the executable")
    env = dict(os.environ, PATH=str(tmp_path), AUTOTUNE_BIN="")
    r = subprocess.run([sys.executable, "-m", "autotune", "best"], env=env,
                       capture_output=True, text=True)
    assert r.returncode == 2
    assert "cargo install --path ." in r.stderr


def test_python_m_autotune_runs_the_executable_with_the_arguments(tmp_path):
    fake = tmp_path / "autotune"
    fake.write_text("#!/bin/sh\necho \"ran: $*\"\nexit 3\n")
    fake.chmod(0o755)
    import autotune.__main__ as cli

    if os.path.exists(os.path.join(os.path.dirname(cli.__file__), "_bin", "autotune")):
        pytest.skip("this install bundles the executable, which comes first")
    env = dict(os.environ, AUTOTUNE_BIN=str(fake))
    r = subprocess.run([sys.executable, "-m", "autotune", "best", "--op", "gemm"], env=env,
                       capture_output=True, text=True)
    assert r.returncode == 3
    assert r.stdout.strip() == "ran: best --op gemm"


def test_cuda_libraries_from_wheels(tmp_path, monkeypatch):
    from autotune import _cudalibs

    for sub, name in (("cu13", "libnvrtc.so.13"), ("cuda_nvrtc", "libnvrtc.so.12"),
                      ("cublas", "libcublas.so.12")):
        d = tmp_path / "nvidia" / sub / "lib"
        d.mkdir(parents=True)
        (d / name).write_bytes(b"")
    monkeypatch.setattr(sys, "path", [str(tmp_path)] + sys.path)
    monkeypatch.delenv("AUTOTUNE_NVRTC", raising=False)
    monkeypatch.setenv("AUTOTUNE_CUBLAS", "/chosen")
    monkeypatch.setattr(_cudalibs, "_preferred_major", lambda: 12)
    _cudalibs.configure()
    assert os.environ["AUTOTUNE_NVRTC"] == str(tmp_path / "nvidia" / "cuda_nvrtc" / "lib")
    assert os.environ["AUTOTUNE_CUBLAS"] == "/chosen"  # never changed once set
    monkeypatch.delenv("AUTOTUNE_NVRTC")
    monkeypatch.setattr(_cudalibs, "_preferred_major", lambda: None)
    _cudalibs.configure()
    assert os.environ["AUTOTUNE_NVRTC"] == str(tmp_path / "nvidia" / "cu13" / "lib")


def test_arrays_on_another_gpu(tuned, recorder):
    with pytest.raises(ValueError, match=r"on GPU 1, this autotune.Tuned on GPU 0"):
        tuned.gemm(FakeDLPack(np.zeros((8, 8), np.float32), device=1),
                   FakeDLPack(np.zeros((8, 8), np.float32), device=1), out=F((8, 8)))
    assert recorder.calls == []
