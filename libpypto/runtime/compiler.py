"""The system C compiler: find it, compile emitted C into a shared library, cache by content."""
from __future__ import annotations

import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
from functools import lru_cache
from importlib import resources

from ..errors import PyptoError

CFLAGS = ["-O3", "-march=native", "-fno-math-errno", "-fPIC", "-shared", "-std=gnu11",
          "-Wno-unused-variable", "-Wno-unused-but-set-variable"]
if platform.machine().lower() in ("x86_64", "amd64"):
    # loops vectorise to the widest vectors the CPU has: gcc's tuning for Intel server cores
    # otherwise stops at 256 bits and leaves half of AVX-512 unused
    CFLAGS.append("-mprefer-vector-width=512")


@lru_cache(maxsize=1)
def find_cc() -> str | None:
    """Path of a usable C compiler ($CC, then cc, gcc, clang), or None."""
    for name in filter(None, [os.environ.get("CC"), "cc", "gcc", "clang"]):
        path = shutil.which(name)
        if path:
            return path
    return None


@lru_cache(maxsize=4)
def _cc_version(cc: str) -> str:
    try:
        return subprocess.run([cc, "--version"], capture_output=True, text=True,
                              timeout=30).stdout.splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        return cc


def cache_dir() -> str:
    base = os.environ.get("PYPTO_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "pypto")
    os.makedirs(base, exist_ok=True)
    return base


def runtime_source() -> str:
    return resources.files(__package__).joinpath("rt.c").read_text()


def compile_shared(source: str) -> tuple[str, bool]:
    """Compile C source (programs + runtime) to a .so; returns (path, was_cached)."""
    cc = find_cc()
    if cc is None:
        raise PyptoError("no C compiler found (set $CC or install gcc)")
    flags = list(CFLAGS)
    key = hashlib.sha256("\0".join([source, " ".join(flags), _cc_version(cc)]).encode()).hexdigest()
    path = os.path.join(cache_dir(), f"k_{key[:32]}.so")
    if os.path.exists(path):
        return path, True
    with tempfile.TemporaryDirectory(prefix="pypto-cc-") as tmp:
        src = os.path.join(tmp, "kernel.c")
        with open(src, "w", encoding="utf-8") as f:
            f.write(source)
        out = os.path.join(tmp, "kernel.so")
        proc = subprocess.run([cc, *flags, src, "-o", out, "-lm", "-lpthread"],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            first = (proc.stderr.strip().splitlines() or ["unknown error"])[0]
            keep = os.path.join(cache_dir(), f"failed_{key[:16]}.c")
            with open(keep, "w", encoding="utf-8") as f:
                f.write(source)
            raise PyptoError(f"C compiler failed: {first} (source kept in {keep})")
        fd, staged = tempfile.mkstemp(dir=cache_dir(), suffix=".so.tmp")
        os.close(fd)
        shutil.copyfile(out, staged)
        os.replace(staged, path)
    return path, False
