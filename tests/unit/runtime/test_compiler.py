"""The compile cache is never trusted blindly.

An entry carries the key it was built for and a checksum, verified before it is loaded: a
truncated, garbled or swapped entry is rebuilt with one warning, never loaded. Two processes
compiling one kernel at once both succeed; an unwritable cache falls back to a private
temporary one; SIGTERM and SIGINT during a compile leave no temporary file. Damaged libraries
are never loaded into the test process (a truncated one would kill it with SIGBUS): results
are checked on copies of verified entries.
"""
from __future__ import annotations

import ctypes
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid

import pytest

from libpypto import errors
from libpypto.runtime import compiler

pytestmark = pytest.mark.needs_cc
ROOT = pathlib.Path(__file__).resolve().parents[3]


def source(answer: int = 42, functions: int = 0) -> str:
    """A small library whose pp_answer() returns `answer`; `functions` makes it slow to build."""
    extra = "".join(f"""
void pp_f{i}(float *restrict a, const float *restrict b, int n) {{
    for (int k = 0; k < n; k++) {{
        float s = 0;
        for (int j = 0; j < 64; j++) s += b[(k + j) % n] * {i}.5f;
        a[k] = s + a[(k * 7) % n];
    }}
}}""" for i in range(functions))
    return f"#include <stdint.h>\nint64_t pp_answer(void) {{ return {answer}; }}\n{extra}\n"


def answer_of(path: str, tmp_path) -> int:
    """pp_answer() of a library, loaded from a fresh copy (the loader keys libraries by path)."""
    copy = tmp_path / f"copy-{uuid.uuid4().hex}.so"
    shutil.copyfile(path, copy)
    fn = ctypes.CDLL(str(copy)).pp_answer
    fn.restype = ctypes.c_int64
    return fn()


@pytest.fixture
def warnings_seen():
    seen: list = []
    errors.set_warning_handler(lambda msg, loc=None: seen.append(msg))
    yield seen
    errors.set_warning_handler(None)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(d))
    return d


def entries(d: pathlib.Path) -> list:
    return sorted(p.name for p in d.iterdir())


def test_an_entry_names_its_key_and_checksum(cache, warnings_seen, tmp_path):
    path, cached = compiler.compile_shared(source())
    assert not cached and os.path.dirname(path) == str(cache)
    key = compiler.cache_key(source())
    data = pathlib.Path(path).read_bytes()
    assert key.encode() in data[-200:]
    assert compiler.entry_problem(path, key) is None
    assert compiler.compile_shared(source()) == (path, True)
    assert answer_of(path, tmp_path) == 42
    assert warnings_seen == []


def _truncate(path, other):
    data = pathlib.Path(path).read_bytes()
    pathlib.Path(path).write_bytes(data[:len(data) // 3])


def _garble(path, other):
    data = bytearray(pathlib.Path(path).read_bytes())
    for i in range(64, len(data) - 300, 97):
        data[i] ^= 0x5A
    pathlib.Path(path).write_bytes(bytes(data))


def _swap(path, other):
    shutil.copyfile(other, path)        # another kernel's valid library under this key


def _strip_trailer(path, other):         # e.g. an entry from before checksums
    data = pathlib.Path(path).read_bytes()
    pathlib.Path(path).write_bytes(data[:data.rfind(compiler.TRAILER_MAGIC)])


def _garbage(path, other):
    pathlib.Path(path).write_bytes(os.urandom(5000))


def _empty(path, other):
    pathlib.Path(path).write_bytes(b"")


@pytest.mark.parametrize("damage", [_truncate, _garble, _swap, _strip_trailer, _garbage, _empty],
                         ids=lambda f: f.__name__.strip("_"))
def test_a_damaged_entry_is_rebuilt_not_loaded(cache, warnings_seen, tmp_path, damage):
    path, _ = compiler.compile_shared(source(42))
    other, _ = compiler.compile_shared(source(7))
    good = pathlib.Path(path).read_bytes()
    damage(path, other)
    assert pathlib.Path(path).read_bytes() != good
    assert compiler.entry_problem(path, compiler.cache_key(source(42))) is not None
    again, cached = compiler.compile_shared(source(42))
    assert (again, cached) == (path, False)
    assert len(warnings_seen) == 1 and os.path.basename(path) in warnings_seen[0], warnings_seen
    assert "rebuilt" in warnings_seen[0]
    assert compiler.entry_problem(path, compiler.cache_key(source(42))) is None
    assert answer_of(path, tmp_path) == 42
    assert [e for e in entries(cache) if e.endswith(".tmp")] == []


def test_a_cached_entry_is_hashed_once_per_process(cache, monkeypatch, warnings_seen):
    src = source(5) + "/*" + "x" * (2 << 20) + "*/\n"     # megabytes of source
    path, _ = compiler.compile_shared(src)
    hashed: list = []
    real = compiler._digest

    def counting(data):
        hashed.append(len(data))
        return real(data)
    monkeypatch.setattr(compiler, "_digest", counting)
    compiler._forget()                       # as in a new process
    for _ in range(5):
        assert compiler.compile_shared(src) == (path, True)
    # one hash of the source (the key), one of the library (the check), not five of each
    assert len(hashed) == 2, hashed
    # a changed entry is noticed even so
    _garble(path, None)
    assert compiler.compile_shared(src) == (path, False)
    assert len(warnings_seen) == 1


def test_another_cpu_means_another_entry(cache, monkeypatch):
    """-march=native builds for the CPU it runs on: a cache shared with a machine of another
    CPU must not hand its build over (an AVX-512 library dies of SIGILL on an AVX2 CPU)."""
    here = compiler.native_target(compiler.find_cc())
    assert here                               # gcc and clang both say what it expands to
    key = compiler.cache_key(source())
    compiler._forget()
    monkeypatch.setattr(compiler, "native_target", lambda cc: here + " -mavx512f")
    assert compiler.cache_key(source()) != key


def test_the_sanitized_build_is_a_separate_entry(cache):
    assert compiler.cache_key(source()) != compiler.cache_key(source(), sanitize=True)


def test_temporary_files_a_kill_left_are_pruned_when_a_day_old(cache):
    os.makedirs(cache)
    old, new = cache / ".pypto-old.tmp", cache / ".pypto-new.tmp"
    old.write_bytes(b"left by a kill -9")
    new.write_bytes(b"another process is writing this")
    os.utime(old, (time.time() - 2 * 86400,) * 2)
    compiler.compile_shared(source(9))
    assert not old.exists() and new.exists()


# -- two processes, unwritable caches, signals ------------------------------------------------

RACER = r"""
import os, sys, time
from libpypto.runtime import compiler
src, go = open(sys.argv[1]).read(), sys.argv[2]
while not os.path.exists(go):
    time.sleep(0.001)
path, cached = compiler.compile_shared(src)
print(path, cached)
"""


@pytest.mark.slow
def test_two_processes_compiling_one_kernel_at_once_both_succeed(cache, tmp_path):
    src_file = tmp_path / "k.c"
    src_file.write_text(source(11, functions=60))
    go = tmp_path / "go"
    env = dict(os.environ, PYPTO_CACHE_DIR=str(cache))
    procs = [subprocess.Popen([sys.executable, "-c", RACER, str(src_file), str(go)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
             for _ in range(2)]
    time.sleep(1.0)                           # both started and waiting
    go.write_text("go")
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err.decode()
        assert err == b""                     # no warning: neither saw a damaged entry
    paths = {out.split()[0].decode() for out, _ in outs}
    assert len(paths) == 1
    path = paths.pop()
    assert compiler.entry_problem(path, compiler.cache_key(source(11, functions=60))) is None
    assert entries(cache) == [os.path.basename(path)]
    assert answer_of(path, tmp_path) == 11


@pytest.mark.parametrize("where", ["file-in-the-way", "read-only-fs"])
def test_an_unwritable_cache_falls_back_to_a_temporary_one(tmp_path, monkeypatch,
                                                          warnings_seen, where):
    if where == "file-in-the-way":
        (tmp_path / "f").write_text("not a directory")
        want = tmp_path / "f" / "cache"
    else:
        want = pathlib.Path("/proc/pypto-cache")      # /proc refuses new files, even to root
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(want))
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    monkeypatch.setattr(tempfile, "tempdir", None)          # tempfile caches $TMPDIR
    os.makedirs(tmp_path / "tmp")
    compiler._forget()
    path, cached = compiler.compile_shared(source(3))
    assert not path.startswith(str(want))
    assert path.startswith(str(tmp_path / "tmp"))
    assert answer_of(path, tmp_path) == 3
    assert len(warnings_seen) == 1 and str(want) in warnings_seen[0], warnings_seen
    assert compiler.compile_shared(source(3)) == (path, True)
    assert len(warnings_seen) == 1                   # one notice per process
    mode = os.stat(os.path.dirname(path)).st_mode
    assert mode & 0o077 == 0, oct(mode)              # private to this user


def test_the_fallback_refuses_a_directory_someone_else_could_write(tmp_path, monkeypatch,
                                                                  warnings_seen):
    (tmp_path / "f").write_text("x")
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "f" / "cache"))
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    monkeypatch.setattr(tempfile, "tempdir", None)          # tempfile caches $TMPDIR
    planted = tmp_path / "tmp" / f"pypto-cache-{os.geteuid()}"
    os.makedirs(planted)
    os.chmod(planted, 0o777)
    compiler._forget()
    path, _ = compiler.compile_shared(source(4))
    assert not path.startswith(str(planted) + os.sep)
    assert answer_of(path, tmp_path) == 4


COMPILE = r"""
import signal, sys
from libpypto.runtime import compiler
signal.signal(signal.SIGINT, signal.default_int_handler)   # even if started with it ignored
compiler.compile_shared(open(sys.argv[1]).read())
"""


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_during_a_compile_leaves_no_temporary_file(tmp_path, sig):
    src_file = tmp_path / "slow.c"
    src_file.write_text(source(1, functions=400))          # a few seconds of cc
    tmp, cache = tmp_path / "tmp", tmp_path / "cache"
    os.makedirs(tmp)
    env = dict(os.environ, PYPTO_CACHE_DIR=str(cache), TMPDIR=str(tmp))
    p = subprocess.Popen([sys.executable, "-c", COMPILE, str(src_file)], env=env, cwd=ROOT,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not any(tmp.iterdir()) and time.monotonic() < deadline:
        time.sleep(0.01)                  # the compile has begun: its directory exists
    assert any(tmp.iterdir()), "the compile never started"
    time.sleep(0.5)                       # cc is at work
    assert p.poll() is None, "the compile ended before the signal"
    p.send_signal(sig)
    _, err = p.communicate(timeout=60)
    assert p.returncode != 0
    if sig == signal.SIGTERM:
        assert p.returncode == -signal.SIGTERM, err.decode()
    time.sleep(0.2)                       # anything cc still had running is gone
    assert list(tmp.iterdir()) == [], err.decode()
    leftovers = [e for e in (entries(cache) if cache.exists() else []) if e.endswith(".tmp")
                 or e.startswith("k_")]
    assert leftovers == []
