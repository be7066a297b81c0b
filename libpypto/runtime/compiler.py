"""The system C compiler: find it, compile emitted C, keep the result in a verified cache.

The cache ($PYPTO_CACHE_DIR, else $XDG_CACHE_HOME/pypto or ~/.cache/pypto) is never trusted
blindly:

- An entry is the compiled file followed by a trailer naming the key it was built for (a hash
  of the source, the flags, the compiler's version, what -march=native means on this
  machine and the entry format) and the sha256 of what precedes it. It is verified before
  it is handed out: one that is truncated, garbled, or built for another key (another
  kernel's library copied over it) is rebuilt with a warning, never loaded.
- A warm run hashes each thing once per process: the key of a source is remembered, and so
  is a verified entry, by its stat fingerprint (device, inode, size, mtime); a changed file
  has a new fingerprint and is verified again.
- Entries appear by an atomic rename of a complete file, so two processes compiling one
  kernel at once both succeed and a reader never sees half an entry.
- SIGINT and SIGTERM during a compile remove every temporary file: the compiler runs in a
  process group of its own with TMPDIR inside our temporary directory, and is stopped with
  SIGTERM (so it removes its own files too) before that directory goes (ir/files.py).
  What a SIGKILL leaves in the cache is removed by a later compile once a day old.
- An unwritable cache falls back, with one warning per process, to pypto-cache-UID in the
  temporary directory (made 0700, and refused unless it is ours and no one else can write
  it), else to a fresh private directory.

The checksum guards against accidents (a full disk, a killed copy, a stray or swapped file),
not against someone who can write the cache: they could as well edit this library.

Vector math: where the compiler links glibc's libmvec (probed once per process, mvec_flags),
the optimised build adds -DPP_MVEC and -lmvec; the prelude then declares math.h's float
functions SIMD-enabled and gcc vectorises loops over them into libmvec's vector variants
(codegen/c_prelude.h). The flags are part of the cache key, and so is what -march=native
expands to on this machine (native_target).

Sanitized builds (`pypto-run --sanitize`, the `sanitizing()` block, `sanitize=True`): the
kernel and the runtime are built with AddressSanitizer and UndefinedBehaviorSanitizer at -O1
with -g, the level the sanitizers' authors recommend (-O3 merges and widens accesses and
drops checks whose result it can foresee), as a standalone program (rt.c's main under
PYPTO_STANDALONE) in a cache entry of its own (.asan). It runs in a child process
(executable.run_standalone) instead of being loaded into Python. An instrumented library
needs the sanitizer runtime first in the process: for Python that means LD_PRELOAD of the
very libasan the compiler links against, its interceptors over the whole interpreter and
leak reports about Python itself. A separate process needs none of that, gives every tensor
an allocation of exactly its size (numpy's allocations carry no redzones), keeps
LeakSanitizer on for the runtime, and turns a report into an exit status and one error line
instead of a dead Python process.
"""
from __future__ import annotations

import contextlib
import contextvars
import hashlib
import os
import platform
import shutil
import signal
import stat
import subprocess
import tempfile
import time
from functools import lru_cache
from importlib import resources

from ..errors import PyptoError, UsageError, warn
from ..ir.files import atomic_write, cleanup_on_signals, signals_held

# -fno-trapping-math: pypto never reads or unmasks floating-point exception flags, and only
# with it does gcc vectorise floorf/ceilf/truncf (and chains that hold them: relu then floor
# ran 28x slower without it on Zen 4); the values are the same bits
CFLAGS = ["-O3", "-march=native", "-fno-math-errno", "-fno-trapping-math", "-fPIC", "-shared",
          "-std=gnu11", "-Wno-unused-variable", "-Wno-unused-but-set-variable"]
if platform.machine().lower() in ("x86_64", "amd64"):
    # loops vectorise to the widest vectors the CPU has: gcc's tuning for Intel server cores
    # otherwise stops at 256 bits and leaves half of AVX-512 unused
    CFLAGS.append("-mprefer-vector-width=512")
# -march=native keeps the preprocessor on the same paths as the optimised build
SANITIZE_FLAGS = ["-O1", "-g", "-fno-omit-frame-pointer", "-fsanitize=address,undefined",
                  "-fno-sanitize-recover=all", "-march=native", "-fno-math-errno",
                  "-fno-trapping-math", "-std=gnu11",
                  "-pthread", "-DPYPTO_STANDALONE", "-Wno-unused-variable",
                  "-Wno-unused-but-set-variable"]
SANITIZED_SUFFIX = ".asan"
ENTRY_FORMAT = "entry-1"        # part of every key: a new format never meets an old entry
TRAILER_MAGIC = b"\n#pypto-cache-entry "
_TRAILER_LEN = len(TRAILER_MAGIC) + len("key ") + 64 + len(" sha256 ") + 64 + len("\n")
MISSING = "is missing"

_SANITIZE = contextvars.ContextVar("pypto_sanitize", default=False)
_keys: dict = {}          # (source, sanitize, cc) -> key
_verified: dict = {}      # path -> (stat fingerprint, key) of an entry found whole
_dirs: dict = {}          # the cache directory asked for -> the one in use


@lru_cache(maxsize=1)
def find_cc() -> str | None:
    """Path of a usable C compiler ($CC, then cc, gcc, clang), or None."""
    for name in filter(None, [os.environ.get("CC"), "cc", "gcc", "clang"]):
        path = shutil.which(name)
        if path:
            return path
    return None


def cflags(cc: str) -> list:
    """The optimised build's compile flags for cc: CFLAGS, and -DPP_MVEC where it links libmvec."""
    return CFLAGS + list(mvec_flags(cc)[:1])


@lru_cache(maxsize=4)
def mvec_flags(cc: str) -> tuple:
    """("-DPP_MVEC", "-lmvec") when cc can link glibc's vector math library, else ().

    With it, the prelude declares math.h's float functions SIMD-enabled and gcc vectorises
    loops over them into libmvec's calls (c_prelude.h). Probed once per process by linking a
    shared library that calls a vector variant; x86-64 only (the variants' names are its ABI)."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return ()
    probe = ("#include <math.h>\n__attribute__((simd(\"notinbranch\"))) float expf(float);\n"
             "void f(float *restrict y, const float *restrict x) {\n"
             "    for (int i = 0; i < 64; i++) y[i] = expf(x[i]);\n}\n")
    with tempfile.TemporaryDirectory(prefix="pypto-mvec-") as tmp:
        with open(os.path.join(tmp, "probe.c"), "w", encoding="utf-8") as f:
            f.write(probe)
        try:
            rc = subprocess.run([cc, "-O3", "-fno-math-errno", "-fPIC", "-shared", "probe.c",
                                 "-o", "probe.so", "-lmvec", "-lm"], cwd=tmp, timeout=60,
                                capture_output=True).returncode
        except (OSError, subprocess.SubprocessError):
            return ()
    return ("-DPP_MVEC", "-lmvec") if rc == 0 else ()


@lru_cache(maxsize=4)
def native_target(cc: str) -> str:
    """What -march=native means on this machine: the lines of cc's driver output that give
    the CPU and instruction sets it expands to (-march=znver3 -mavx2 -mno-avx512f ...), or
    "" when it does not say.

    Part of the cache key: a cache shared by machines of different CPUs (a home directory
    on NFS, a CI cache moved between runners) never hands an AVX-512 build to a CPU without
    it, where it would die of SIGILL, nor an AVX2 build to one that has more."""
    try:
        err = subprocess.run([cc, "-march=native", "-###", "-E", "-x", "c", os.devnull],
                             capture_output=True, text=True, timeout=30).stderr
    except (OSError, subprocess.SubprocessError):
        return ""
    # gcc's cc1 line carries "-march=znver3" -mavx2 ...; clang's "-target-cpu" "znver3"
    # "-target-feature" "+avx2" ...
    return "\n".join(line.strip() for line in err.splitlines()
                     if "-march=" in line or "-target-cpu" in line)


@lru_cache(maxsize=4)
def _cc_version(cc: str) -> str:
    try:
        return subprocess.run([cc, "--version"], capture_output=True, text=True,
                              timeout=30).stdout.splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        return cc


def runtime_source() -> str:
    return resources.files(__package__).joinpath("rt.c").read_text()


@contextlib.contextmanager
def sanitizing(on: bool = True):
    """Inside this block compile_shared makes sanitized standalone builds, which
    NativeExecutable runs in a child process (module docstring)."""
    token = _SANITIZE.set(on)
    try:
        yield
    finally:
        _SANITIZE.reset(token)


def is_sanitized(path: str) -> bool:
    return path.endswith(SANITIZED_SUFFIX)


def _forget() -> None:
    """Forget what this process verified and chose (for tests: as in a fresh process)."""
    _keys.clear()
    _verified.clear()
    _dirs.clear()


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _require_cc() -> str:
    cc = find_cc()
    if cc is None:
        raise PyptoError("no C compiler found (set $CC or install gcc)")
    return cc


def cache_key(source: str, sanitize: bool = False) -> str:
    """The key of a source's entry (hex sha256), computed once per process."""
    cc = _require_cc()
    k = (source, bool(sanitize), cc)
    key = _keys.get(k)
    if key is None:
        flags = SANITIZE_FLAGS if sanitize else cflags(cc)
        if len(_keys) >= 16:       # sources can be megabytes: keep a few
            _keys.clear()
        key = _keys[k] = _digest("\0".join([source, " ".join(flags), _cc_version(cc),
                                            native_target(cc), ENTRY_FORMAT]).encode())
    return key


# -- the cache directory ---------------------------------------------------------------------

def cache_dir() -> str:
    """The cache directory in use: the one asked for, or a private fallback (module doc)."""
    want = os.environ.get("PYPTO_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "pypto")
    got = _dirs.get(want)
    if got is None:
        why = _unwritable(want)
        got = want
        if why is not None:
            got = _private_tmp_dir()
            warn(f"cache directory {want} is not writable ({why}): using {got}")
        _dirs[want] = got
    return got


def _unwritable(d: str) -> str | None:
    """Why files cannot be made in d (None: they can); tried for real, as root passes access()."""
    try:
        os.makedirs(d, exist_ok=True)
        with signals_held():
            fd, probe = tempfile.mkstemp(dir=d, prefix=".pypto-probe-", suffix=".tmp")
            os.close(fd)
            os.unlink(probe)
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


def _private_tmp_dir() -> str:
    base = os.path.join(tempfile.gettempdir(), f"pypto-cache-{os.geteuid()}")
    try:
        os.mkdir(base, 0o700)
    except FileExistsError:
        pass
    except OSError:
        return tempfile.mkdtemp(prefix="pypto-cache-")
    st = os.lstat(base)
    if (stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and not st.st_mode & 0o077
            and _unwritable(base) is None):
        return base
    return tempfile.mkdtemp(prefix="pypto-cache-")       # someone else's, or open to others


# -- entries ---------------------------------------------------------------------------------

def _trailer(key: str, body: bytes) -> bytes:
    return TRAILER_MAGIC + f"key {key} sha256 {_digest(body)}\n".encode()


def entry_problem(path: str, key: str) -> str | None:
    """None if the entry at path is whole and was built for key, else what is wrong with it
    (MISSING if there is none)."""
    try:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            fingerprint = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
            if _verified.get(path) == (fingerprint, key):
                return None
            data = f.read()
    except FileNotFoundError:
        return MISSING
    except OSError as exc:
        return f"is unreadable ({exc.strerror})"
    trailer = data[-_TRAILER_LEN:]
    fields = trailer[len(TRAILER_MAGIC):].split()
    if (len(data) < _TRAILER_LEN or not trailer.startswith(TRAILER_MAGIC) or len(fields) != 4
            or fields[0] != b"key" or fields[2] != b"sha256"):
        return "has no checksum (truncated or garbled)"
    if fields[1] != key.encode():
        return "was built for another kernel"
    if fields[3] != _digest(data[:-_TRAILER_LEN]).encode():
        return "fails its checksum (garbled)"
    _verified[path] = (fingerprint, key)
    return None


def compile_shared(source: str, sanitize: bool | None = None) -> tuple[str, bool]:
    """Compile C source (programs + runtime) into the cache; returns (path, was_cached).

    The entry is a shared library, or with sanitize (default: whether a sanitizing() block
    is in force) a sanitized standalone program; it is verified before it is returned."""
    cc = _require_cc()
    sanitize = _SANITIZE.get() if sanitize is None else bool(sanitize)
    key = cache_key(source, sanitize)
    path = os.path.join(cache_dir(), f"k_{key[:32]}{SANITIZED_SUFFIX if sanitize else '.so'}")
    problem = entry_problem(path, key)
    if problem is None:
        return path, True
    if problem != MISSING:
        warn(f"cache entry {path} {problem}: removed and rebuilt")
    try:
        _build(cc, SANITIZE_FLAGS if sanitize else cflags(cc), source, key, path, sanitize)
    except PyptoError:
        if problem != MISSING:
            with contextlib.suppress(OSError):
                os.unlink(path)
        raise
    return path, False


def _build(cc: str, flags: list, source: str, key: str, path: str, sanitize: bool) -> None:
    """Compile in a private temporary directory, then rename the entry into the cache."""
    with cleanup_on_signals(), tempfile.TemporaryDirectory(prefix="pypto-cc-") as tmp:
        src = os.path.join(tmp, "kernel.c")
        with open(src, "w", encoding="utf-8") as f:
            f.write(source)
        out = os.path.join(tmp, "kernel.out")
        # run in tmp on a relative name: reports and debug info say kernel.c:LINE
        rc, err = _run_cc([cc, *flags, f"-ffile-prefix-map={tmp}=.", "kernel.c", "-o",
                           "kernel.out", *mvec_flags(cc)[1:], "-lm", "-lpthread"], tmp)
        if rc != 0:
            first = (err.strip().splitlines() or ["unknown error"])[0]
            keep = os.path.join(os.path.dirname(path), f"failed_{key[:16]}.c")
            atomic_write(keep, source.encode())
            hint = " (can this compiler build with -fsanitize=address,undefined?)" \
                if sanitize else ""
            raise PyptoError(f"C compiler failed{hint}: {first} (source kept in {keep})")
        with open(out, "rb") as f:
            body = f.read()
    if sanitize:        # the source its reports point into (kernel.c:LINE)
        atomic_write(path + ".c", source.encode())
    atomic_write(path, body + _trailer(key, body), mode=0o777 if sanitize else 0o666)
    st = os.stat(path)
    _verified[path] = ((st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns), key)
    _prune_stale(os.path.dirname(path))


def _prune_stale(d: str, age_s: float = 86400.0) -> None:
    """Remove the temporary files that killed processes left (SIGKILL cannot be caught)
    once they are a day old: no compile or write takes that long."""
    cutoff = time.time() - age_s
    with contextlib.suppress(OSError), os.scandir(d) as entries:
        for e in entries:
            if e.name.startswith(".pypto-") and e.name.endswith(".tmp"):
                with contextlib.suppress(OSError):
                    if e.stat(follow_symlinks=False).st_mtime < cutoff:
                        os.unlink(e.path)


def _run_cc(cmd: list, tmp: str) -> tuple[int, str]:
    """Run the compiler with its temporary files in tmp; stop it if we are interrupted."""
    env = dict(os.environ, TMPDIR=tmp)
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          env=env, cwd=tmp, process_group=0) as p:
        try:
            _, err = p.communicate()
        except BaseException:
            stop_process_group(p)
            raise
    return p.returncode, err


def stop_process_group(p: subprocess.Popen) -> None:
    """SIGTERM to a child's process group (it cleans up after itself), SIGKILL if it lingers."""
    for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, None)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(p.pid, sig)
        try:
            p.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def sanitized_backend(sanitize: bool, backend: str | None) -> str | None:
    """The backend of a run asked to be sanitized: c (numpy, or no C compiler, is refused)."""
    if not sanitize:
        return backend
    if backend == "numpy" or find_cc() is None:
        raise UsageError("--sanitize needs the c backend and a C compiler")
    return "c"
