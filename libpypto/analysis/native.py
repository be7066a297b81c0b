"""C helpers of the simulator and the scheduler: built at first use, cached, loaded.

`load(name, source)` compiles a C source shipped with the library (sim/engine.c,
sched/place.c) with the system compiler ($CC, cc, gcc or clang) into the cache
($PYPTO_CACHE_DIR, else $XDG_CACHE_HOME/pypto or ~/.cache/pypto; a private temporary
directory when that is not writable), keyed by the hash of the source, the flags and the
compiler's version, and returns the loaded ctypes library. An entry carries the sha256 of
its body in a trailer and is checked before it is loaded (a truncated or swapped file is
rebuilt). Entries appear by an atomic rename, so concurrent processes both succeed.

None instead, with one warning per process, when there is no compiler, it fails, or
$PYPTO_NO_NATIVE is set: the callers then take their Python paths, which give the same
results, only slower. The flags keep floating point exactly as Python computes it (no
fused multiply-add, no fast-math), which the bit-identical results rely on.

(The kernels' compiler and cache are runtime/compiler.py's, a floor above this one.)
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile

from ..errors import warn
from ..ir.files import atomic_write, cleanup_on_signals

CFLAGS = ["-O2", "-fPIC", "-shared", "-std=gnu11", "-ffp-contract=off", "-fno-fast-math",
          "-fno-strict-aliasing"]
TRAILER = b"\n#pypto-native "
_loaded: dict = {}
_warned: list = []


def load(name: str, source: str):
    """The compiled library of source (ctypes.CDLL), or None (module docstring)."""
    if os.environ.get("PYPTO_NO_NATIVE"):
        return _without(name, "PYPTO_NO_NATIVE is set")
    key = (name, source)
    if key in _loaded:
        return _loaded[key]
    cc = next((shutil.which(c) for c in filter(None, [os.environ.get("CC"), "cc", "gcc",
                                                      "clang"]) if shutil.which(c)), None)
    if cc is None:
        _loaded[key] = None
        return _without(name, "no C compiler found (set $CC or install gcc)")
    digest = hashlib.sha256("\0".join([source, " ".join(CFLAGS), _version(cc)]).encode())
    lib, why = _cached(name, digest.hexdigest(), cc, source)
    _loaded[key] = lib
    return lib if lib is not None else _without(name, why)


class no_gc:
    """No cyclic garbage collection inside this block: building millions of small acyclic
    lists (a record's rows) otherwise wakes the collector again and again to walk them."""

    def __enter__(self):
        import gc
        self.was = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc):
        import gc
        if self.was:
            gc.enable()


def _without(name: str, why: str):
    if not _warned:             # once per process, whichever helper asks first
        _warned.append(name)
        warn(f"the simulator and the scheduler run in Python, slower ({why})")
    return None


def _version(cc: str) -> str:
    try:
        return subprocess.run([cc, "--version"], capture_output=True, text=True,
                              timeout=30).stdout.splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        return cc


def _cache_dir() -> str | None:
    d = os.environ.get("PYPTO_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "pypto")
    try:
        os.makedirs(d, exist_ok=True)
    except OSError:
        return None
    return d if os.access(d, os.W_OK) else None


def _cached(name: str, key: str, cc: str, source: str) -> tuple:
    """(library, None) from the cache, built into it first if need be; (None, why)."""
    d = _cache_dir()
    path = os.path.join(d, f"native_{name}_{key[:32]}.so") if d else None
    body = _entry(path, key) if path else None
    if body is None:
        with cleanup_on_signals(), tempfile.TemporaryDirectory(prefix="pypto-native-") as tmp:
            src, out = os.path.join(tmp, f"{name}.c"), os.path.join(tmp, f"{name}.so")
            with open(src, "w", encoding="utf-8") as f:
                f.write(source)
            try:
                p = subprocess.run([cc, *CFLAGS, src, "-o", out, "-lm"], capture_output=True,
                                   text=True, timeout=300)
            except (OSError, subprocess.SubprocessError) as exc:
                return None, f"the C compiler failed: {exc}"
            if p.returncode != 0:
                first = (p.stderr.strip().splitlines() or ["unknown error"])[0]
                return None, f"the C compiler failed: {first}"
            with open(out, "rb") as f:
                body = f.read()
            if path is None:             # no cache: load from the temporary directory
                return ctypes.CDLL(out), None
            try:
                atomic_write(path, body + _trailer(key, body))
            except Exception:            # an unwritable cache: this process only
                return ctypes.CDLL(out), None
    return ctypes.CDLL(path), None


def _trailer(key: str, body: bytes) -> bytes:
    return TRAILER + f"key {key} sha256 {hashlib.sha256(body).hexdigest()}\n".encode()


def _entry(path: str, key: str) -> bytes | None:
    """The body of the cache entry at path if it is whole and built for key, else None."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    cut = data.rfind(TRAILER)
    if cut < 0:
        return None
    body = data[:cut]
    return body if data[cut:] == _trailer(key, body) else None
