"""The C++ tensor reader's build, cache and hand-over (autotune/_torchreader.py), without
PyTorch or a GPU: a stand-in torch module and a stand-in compiler (a script that writes the
output file, or fails). The reader itself is checked against real PyTorch tensors in
test_gpu.py."""

import os
import stat
import sys
import types

import pytest

from autotune import _torchreader


@pytest.fixture
def fake_torch_module(tmp_path):
    root = tmp_path / "site" / "torch"
    (root / "include").mkdir(parents=True)
    (root / "lib").mkdir()
    m = types.ModuleType("torch")
    m.__file__ = str(root / "__init__.py")
    m.__version__ = "9.9.9"
    m._C = types.SimpleNamespace(_GLIBCXX_USE_CXX11_ABI=False)
    return m


@pytest.fixture
def cache(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setenv("AUTOTUNE_CACHE_DIR", str(d))
    monkeypatch.delenv("AUTOTUNE_TORCH_READER", raising=False)
    monkeypatch.setattr(_torchreader, "_state",
                        {"path": None, "error": None, "thread": None, "waiting": []})
    return d


def compiler(tmp_path, body, name="cxx"):
    """A stand-in compiler: a script running ``body`` with the output path in $out and its
    arguments in $all, its calls counted in NAME.log."""
    path = tmp_path / name
    log = tmp_path / (name + ".log")
    path.write_text("#!/bin/sh\nall=\"$*\"\necho \"$all\" >> %s\nout=\nwhile [ $# -gt 0 ]; do "
                    "[ \"$1\" = -o ] && out=$2; shift; done\n%s\n" % (log, body))
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path), log


def calls(log):
    return log.read_text().splitlines() if log.exists() else []


def test_the_command_builds_against_the_torch_given(fake_torch_module, tmp_path):
    cmd = _torchreader.command(fake_torch_module, "/o/reader.so", "-std=c++20", cxx="g++")
    inc = os.path.join(os.path.dirname(fake_torch_module.__file__), "include")
    lib = os.path.join(os.path.dirname(fake_torch_module.__file__), "lib")
    assert cmd[0] == "g++" and "-std=c++20" in cmd and "-shared" in cmd and "-fPIC" in cmd
    assert "-D_GLIBCXX_USE_CXX11_ABI=0" in cmd  # the module's own ABI
    assert cmd[cmd.index(inc) - 1] == "-I" and os.path.join(inc, "torch", "csrc", "api",
                                                             "include") in cmd
    assert "-ltorch_python" in cmd and "-Wl,-rpath," + lib in cmd
    assert cmd[-2:] == ["-o", "/o/reader.so"] and _torchreader.SOURCE in cmd


def test_the_cache_key_follows_torch_and_the_compiler(fake_torch_module, cache):
    a = _torchreader.reader_path(fake_torch_module, "g++")
    assert a.startswith(str(cache)) and a == _torchreader.reader_path(fake_torch_module, "g++")
    assert a != _torchreader.reader_path(fake_torch_module, "clang++")
    fake_torch_module.__version__ = "9.9.10"
    assert a != _torchreader.reader_path(fake_torch_module, "g++")


def test_a_build_is_cached_and_a_failure_says_why(fake_torch_module, cache, tmp_path):
    good, log = compiler(tmp_path, 'echo built > "$out"')
    path = _torchreader.build(fake_torch_module, cxx=good)
    assert open(path).read() == "built\n" and len(calls(log)) == 1
    assert _torchreader.build(fake_torch_module, cxx=good) == path
    assert len(calls(log)) == 1  # served from the cache
    bad, log2 = compiler(tmp_path, 'echo "fatal error: Python.h: No such file" >&2; exit 1',
                         name="bad")
    with pytest.raises(_torchreader.ReaderError, match="Python.h: No such file") as e:
        _torchreader.build(fake_torch_module, cxx=bad)
    assert "-std=c++20" in str(e.value) and "-std=c++17" in str(e.value)
    assert len(calls(log2)) == 2  # C++20, then C++17
    left = os.listdir(os.path.dirname(_torchreader.reader_path(fake_torch_module, bad)))
    assert left == []  # no half-written reader stays
    with pytest.raises(_torchreader.ReaderError, match="set CXX"):
        _torchreader.build(fake_torch_module, cxx=str(tmp_path / "no-such-compiler"))


def test_the_second_standard_is_tried_when_the_first_fails(fake_torch_module, cache,
                                                          tmp_path):
    cxx, log = compiler(tmp_path, 'case "$all" in *c++20*) exit 1;; esac; echo ok > "$out"')
    assert open(_torchreader.build(fake_torch_module, cxx=cxx)).read() == "ok\n"
    assert len(calls(log)) == 2


class _Runtime:
    def __init__(self, fail=None):
        self.loaded, self.fail = [], fail

    def use_torch_reader(self, path):
        if self.fail:
            raise RuntimeError(self.fail)
        self.loaded.append(path)


class _Tuned:
    def __init__(self, rt):
        self._rt = rt


def test_attach_builds_in_the_background_then_hands_the_reader_over(
        fake_torch_module, cache, tmp_path, monkeypatch):
    cxx, log = compiler(tmp_path, 'sleep 0.3; echo ok > "$out"')
    monkeypatch.setenv("CXX", cxx)
    first, second = _Tuned(_Runtime()), _Tuned(_Runtime())
    _torchreader.attach(first, fake_torch_module)
    _torchreader.attach(second, fake_torch_module)  # joins the build under way
    assert first._rt.loaded == [] and _torchreader._state["thread"] is not None
    path, error = _torchreader.wait(30)
    assert error is None and path == _torchreader.reader_path(fake_torch_module, cxx)
    assert first._rt.loaded == [path] and second._rt.loaded == [path]
    assert first._torch_reader == path and len(calls(log)) == 1
    third = _Tuned(_Runtime())
    _torchreader.attach(third, fake_torch_module)  # cached: at once
    assert third._rt.loaded == [path] and len(calls(log)) == 1


def test_attach_never_raises_and_keeps_the_reason(fake_torch_module, cache, tmp_path,
                                                  monkeypatch):
    cxx, log = compiler(tmp_path, "exit 1")
    monkeypatch.setenv("CXX", cxx)
    tuned = _Tuned(_Runtime())
    _torchreader.attach(tuned, fake_torch_module)
    path, error = _torchreader.wait(30)
    assert path is None and "failed" in error and tuned._rt.loaded == []
    _torchreader.attach(_Tuned(_Runtime()), fake_torch_module)
    assert _torchreader._state["thread"] is None and len(calls(log)) == 2  # not tried again


@pytest.mark.parametrize("off", ["0", "off"])
def test_the_reader_can_be_turned_off(fake_torch_module, cache, tmp_path, monkeypatch, off):
    cxx, log = compiler(tmp_path, 'echo ok > "$out"')
    monkeypatch.setenv("CXX", cxx)
    monkeypatch.setenv("AUTOTUNE_TORCH_READER", off)
    tuned = _Tuned(_Runtime())
    _torchreader.attach(tuned, fake_torch_module)
    assert _torchreader._state["thread"] is None and calls(log) == [] and not tuned._rt.loaded


def test_a_named_reader_is_loaded_as_it_is(fake_torch_module, cache, monkeypatch):
    monkeypatch.setenv("AUTOTUNE_TORCH_READER", "/opt/reader.so")
    tuned = _Tuned(_Runtime())
    _torchreader.attach(tuned, fake_torch_module)
    assert tuned._rt.loaded == ["/opt/reader.so"]
    broken = _Tuned(_Runtime(fail="not autotune's tensor reader"))
    _torchreader.attach(broken, fake_torch_module)
    assert "/opt/reader.so" in _torchreader.status()[1]


def test_the_extension_refuses_a_file_that_is_no_reader(tmp_path):
    native = pytest.importorskip("autotune._native")
    not_a_reader = tmp_path / "reader.so"
    not_a_reader.write_text("not a library")
    with pytest.raises(native.Error, match="loading"):
        native._torch_read(str(not_a_reader), object())


def test_python_m_autotune_torch_reader_without_torch(monkeypatch, capsys):
    from autotune import __main__ as cli
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch raises ImportError
    assert cli.main(["torch-reader"]) == 2
    assert "PyTorch" in capsys.readouterr().err
    assert cli.main(["torch-reader", "x"]) == 2
