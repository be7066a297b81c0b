"""A test-only fork server for the pypto-* tools: start-up paid once per test worker.

A tool run as a process spends most of its CPU time importing (libpypto, numpy, msgpack,
networkx, typer and the pydantic it brings): about 0.6 s here, for every one of the hundreds
of tool runs of the golden and CLI tests. The server imports all that once, then forks a
child per tool run. The tests reach it through shims: a folder of `pypto-X` scripts
(toolclient.py) put first on PATH, or named directly (toolrun.tool). What the child gets is
what a real process gets: the shim's argv, cwd, environment, umask, resource limits, CPU
affinity, signal mask and ignored signals, and the shim's own stdin, stdout and stderr file
descriptors, so isatty, pipes, EOF and exit statuses behave as before; the shim ends with
the child's exit status or its signal, passes signals on, and a shim killed outright takes
its child with it. The child starts Python's way: SIGINT raises KeyboardInterrupt, SIGPIPE
and SIGXFSZ ignored, stdio rebuilt on the descriptors (line-buffered on a terminal), a fresh
__main__, non-daemon threads joined and atexit handlers run at the end.

What a fork cannot give, a real process does: the shim execs the real console script when
the server is not running, when $PYPTO_TEST_REAL_TOOLS is set, when a standard descriptor is
closed, or when the environment differs from the server's in a variable read at start-up
(PYTHON*, locale, OpenBLAS/OpenMP threads, LD_*, TZ: see start_up_env). The child shares
the server's hash seed (a real process draws one each), and its parent is the server.
Tests of signals, kill -9, terminals and interrupted writes run the real tools (see
toolrun.real_tool); `PYPTO_TEST_REAL_TOOLS=1 make test` runs every tool as a process.

Usage (tests/conftest.py): shim_dir() starts the server of this process on first use and
returns the folder of shims; stop() ends it.
"""
from __future__ import annotations

import os
import pathlib
import stat
import subprocess
import sys
import tempfile
import threading

HERE = pathlib.Path(__file__).resolve().parent
BIN = pathlib.Path(sys.executable).parent
# read by Python, the C library or numpy's BLAS when a process starts: a run whose value
# differs from the server's gets a real process
# (typer, rich and msgpack read some at import: colours, terminal width, the pure-Python
# msgpack; networkx its backends)
START_UP = ("PYTHON", "LC_", "LANG", "LANGUAGE", "OPENBLAS_", "OMP_", "MKL_", "GOTO",
            "BLIS_", "NUMPY_", "LD_", "MALLOC_", "GLIBC_TUNABLES", "TZ", "NPY_",
            "TERMINAL_", "TYPER_", "_TYPER_", "GITHUB_ACTIONS", "FORCE_COLOR", "PY_COLORS",
            "NO_COLOR", "MSGPACK_", "NETWORKX_")


def start_up_env(env: dict) -> dict:
    return {k: v for k, v in env.items() if k.startswith(tuple(s.encode() for s in START_UP))}


# -- the test process's side -------------------------------------------------------------

_state: dict = {}
_lock = threading.Lock()


def tools() -> list:
    """The console scripts pypto-*: (name, module, function), from the installed metadata."""
    from importlib.metadata import entry_points
    return sorted((ep.name, *ep.value.split(":")) for ep in entry_points(group="console_scripts")
                  if ep.name.startswith("pypto-") and (BIN / ep.name).exists())


def shim_dir() -> str | None:
    """The folder of shims pypto-X (started on first use); None with $PYPTO_TEST_REAL_TOOLS
    or when the server could not start (then the tests run real processes, with a warning)."""
    if os.environ.get("PYPTO_TEST_REAL_TOOLS"):
        return None
    with _lock:
        if "dir" not in _state:
            try:
                _start()
            except Exception as exc:          # noqa: BLE001 (real processes instead)
                import warnings
                warnings.warn(f"the test tool server did not start, tools run as real "
                              f"processes: {exc}", RuntimeWarning, stacklevel=2)
                _state["dir"] = None
        return _state["dir"]


def _start() -> None:
    d = tempfile.mkdtemp(prefix="pypto-toolserver-")
    address = os.path.join(d, "socket")
    shims = os.path.join(d, "bin")
    os.mkdir(shims)
    for name, _, _ in tools():
        path = os.path.join(shims, name)
        with open(path, "w") as f:
            f.write(f"#!{sys.executable} -IS\n"
                    f"import sys\nsys.path.insert(0, {str(HERE)!r})\n"
                    f"from toolclient import main\n"
                    f"main({name!r}, {str(BIN / name)!r}, {address!r})\n")
        os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    # the server watches the read end of a pipe: EOF (this process gone) stops it
    r, w = os.pipe()
    log = open(os.path.join(d, "log"), "wb")
    proc = subprocess.Popen([sys.executable, str(HERE / "toolserver.py"), address, str(r)],
                            stdin=subprocess.DEVNULL, stdout=log, stderr=log, pass_fds=(r,),
                            cwd=d)
    os.close(r)
    log.close()
    ready = os.path.join(d, "ready")
    import shutil
    import time
    deadline = time.monotonic() + 120
    while not os.path.exists(ready):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            proc.wait()
            os.close(w)
            text = pathlib.Path(d, "log").read_text(errors="replace")[-2000:]
            shutil.rmtree(d, ignore_errors=True)
            raise RuntimeError(text.strip() or f"exit {proc.returncode}")
        time.sleep(0.02)
    _state.update(dir=shims, root=d, proc=proc, pipe=w)


def stop() -> None:
    """Stop the server of this process and remove its folder."""
    import shutil
    with _lock:
        if "proc" not in _state:
            _state.pop("dir", None)
            return
        os.close(_state.pop("pipe"))
        proc = _state.pop("proc")
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(_state.pop("root"), ignore_errors=True)
        _state.pop("dir", None)


# -- the server ---------------------------------------------------------------------------

def _warm() -> list:
    """Import what the tools import, so that a child starts with it all."""
    import importlib
    import pkgutil

    import libpypto
    mains = {}
    for name, module, func in tools():
        mains[name] = (module, func)
        importlib.import_module(module)
    for info in pkgutil.walk_packages(libpypto.__path__, "libpypto."):
        importlib.import_module(info.name)
    for extra in ("numpy", "msgpack", "networkx", "tabulate", "ml_dtypes", "typer",
                  "typer._adapters", "typer.main", "pydantic", "json", "tomllib",
                  "concurrent.futures", "ctypes", "difflib", "shlex"):
        try:
            importlib.import_module(extra)
        except ImportError:
            pass
    return mains


def serve(address: str, parent_fd: int) -> None:
    import gc
    import selectors
    import signal
    import socket
    # a Ctrl-C reaches the whole process group: the test run stops the server (stop()), and
    # the children, which have Python's own SIGINT handler, get it themselves
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    mains = _warm()
    gc.collect()
    gc.freeze()            # children do not copy the imported objects' pages to collect them
    base = start_up_env(dict(os.environb))
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(address)
    listener.listen(128)
    wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    signal.signal(signal.SIGCHLD, lambda *a: None)
    signal.set_wakeup_fd(wake_w)
    sel = selectors.DefaultSelector()
    sel.register(listener, selectors.EVENT_READ, "accept")
    sel.register(wake_r, selectors.EVENT_READ, "child")
    sel.register(parent_fd, selectors.EVENT_READ, "parent")
    children: dict = {}        # pid -> conn
    conns: dict = {}           # conn -> pid
    own = [listener.fileno(), wake_r, wake_w, parent_fd]
    pathlib.Path(os.path.dirname(address), "ready").touch()
    while True:
        for key, _ in sel.select():
            what = key.data
            if what == "parent":
                for pid in children:
                    _kill(pid)
                return
            if what == "child":
                _drain(wake_r)
                _reap(children, conns, sel)
            elif what == "accept":
                _accept(listener, mains, base, own, sel, children, conns)
            else:      # a shim's connection: EOF means the shim died, and its child with it
                conn = key.fileobj
                try:
                    data = conn.recv(1)
                except OSError:
                    data = b""
                if not data:
                    sel.unregister(conn)
                    pid = conns.pop(conn)
                    children[pid] = None
                    _kill(pid)
                    conn.close()


def _accept(listener, mains: dict, base: dict, own: list, sel, children: dict,
            conns: dict) -> None:
    """Take one shim's request: fork its tool, or answer F (the shim runs the real one)."""
    import selectors
    conn, _ = listener.accept()
    req = _receive(conn)
    if req is None or mains.get(req[1]) is None or not _can_stand_in(req, base):
        _send(conn, b"F")
        _close_fds(req)
        conn.close()
        return
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        _child(req, mains[req[1]], own + [c.fileno() for c in conns] +
               [conn.fileno(), sel.fileno()])
    _close_fds(req)
    _send(conn, b"P" + pid.to_bytes(8, "little"))
    children[pid] = conn
    conns[conn] = pid
    sel.register(conn, selectors.EVENT_READ, "conn")


def _kill(pid: int) -> None:
    import signal
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _drain(fd: int) -> None:
    try:
        while os.read(fd, 512):
            pass
    except BlockingIOError:
        pass


def _reap(children: dict, conns: dict, sel) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        conn = children.pop(pid, None)
        if conn is not None:
            sel.unregister(conn)
            conns.pop(conn, None)
            _send(conn, b"X" + status.to_bytes(8, "little", signed=True))
            conn.close()


def _send(conn, data: bytes) -> None:
    try:
        conn.sendall(data)
    except OSError:
        pass


def _receive(conn):
    """(version, tool, script, argv, cwd, env, umask, limits, cpus, mask, ignored, pgid,
    fds)."""
    import marshal
    import socket
    conn.settimeout(30)
    try:
        msg, anc, _, _ = conn.recvmsg(1 << 16, socket.CMSG_SPACE(3 * 4))
        fds = []
        for level, kind, data in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds += [int.from_bytes(data[i:i + 4], sys.byteorder)
                        for i in range(0, len(data) - len(data) % 4, 4)]
        if len(msg) < 8:
            return None if not fds else (None,) * 12 + (fds,)
        size = int.from_bytes(msg[:8], "little")
        body = msg[8:]
        while len(body) < size:
            chunk = conn.recv(size - len(body))
            if not chunk:
                return (None,) * 12 + (fds,)
            body += chunk
        req = marshal.loads(body)
    except (OSError, ValueError, EOFError):
        return None
    finally:
        conn.settimeout(None)
    if len(fds) != 3 or req[0] != 2:
        return (None,) * 12 + (fds,)
    return (*req, fds)


def _close_fds(req) -> None:
    for fd in (req[-1] if req else None) or ():
        try:
            os.close(fd)
        except OSError:
            pass


def _can_stand_in(req, base: dict) -> bool:
    import resource
    if start_up_env(req[5]) != base:
        return False
    # the child is in the server's process group: a shim in another one (its own session,
    # a job of an interactive shell) gets a real process, so that signals to its group and
    # terminal job control reach the tool as they would
    if req[11] != os.getpgrp():
        return False
    for res, soft, hard in req[7]:          # a child can lower limits, never raise them
        _, have_hard = resource.getrlimit(res)
        if have_hard != resource.RLIM_INFINITY and (hard == resource.RLIM_INFINITY
                                                    or hard > have_hard):
            return False
    return True


def _child(req, entry: tuple, close: list) -> None:
    """Become the tool run req asks for; never returns."""
    try:
        func = _set_up(req, entry, close)
    except BaseException as exc:      # noqa: BLE001 (report, and end like a failed exec)
        try:
            os.write(2, f"toolserver: could not start {req[1]}: {exc!r}\n".encode())
        finally:
            os._exit(125)
    os._exit(_run(func))


def _set_up(req, entry: tuple, close: list):
    import importlib
    import io
    import resource
    import signal
    import types
    _, tool, script, argv, cwd, env, umask, limits, cpus, mask, ignored, _, fds = req
    signal.set_wakeup_fd(-1)
    for fd in close:
        try:
            os.close(fd)
        except OSError:
            pass
    _fresh_signals(ignored)
    for i, fd in enumerate(fds):
        os.dup2(fd, i)
    for fd in fds:
        if fd > 2 and fd not in (0, 1, 2):
            os.close(fd)
    os.chdir(cwd)
    os.umask(umask)
    for res, soft, hard in limits:
        if resource.getrlimit(res) != (soft, hard):
            resource.setrlimit(res, (soft, hard))
    if cpus and sorted(os.sched_getaffinity(0)) != cpus:
        os.sched_setaffinity(0, cpus)
    os.environ.clear()
    os.environb.update(env)
    argv0 = script
    sys.argv = [argv0, *map(os.fsdecode, argv)]
    sys.orig_argv = [sys.executable, *sys.argv]
    sys.path[0] = os.path.dirname(script)
    main = types.ModuleType("__main__")
    main.__file__ = script
    sys.modules["__main__"] = main
    sys.stdin, sys.stdout, sys.stderr = (_stdio(0, io), _stdio(1, io), _stdio(2, io))
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = sys.stdin, sys.stdout, sys.stderr
    import random
    random.seed()                    # fresh draws, as a new process would have
    try:
        import numpy
        numpy.random.seed()
    except ImportError:
        pass
    import tempfile as tmp
    tmp.tempdir = None               # found again from this environment's TMPDIR
    importlib.invalidate_caches()    # files made since the server started are seen
    func = getattr(importlib.import_module(entry[0]), entry[1])
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    return func


def _fresh_signals(ignored: list) -> None:
    """Signal dispositions as a fresh Python has them (the shim's ignored ones stay ignored)."""
    import signal
    for sig in signal.valid_signals():
        if sig in (signal.SIGKILL, signal.SIGSTOP):
            continue
        try:
            signal.signal(sig, signal.SIG_DFL)
        except (OSError, ValueError):
            pass
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for sig in ignored:
        signal.signal(sig, signal.SIG_IGN)


def _stdio(fd: int, io):
    """A standard stream as CPython makes it at start-up (Python/pylifecycle.c)."""
    write = fd != 0
    like = (sys.__stdin__, sys.__stdout__, sys.__stderr__)[fd]
    # -u or PYTHONUNBUFFERED (the server started under the same PYTHON* variables)
    unbuffered = write and isinstance(like.buffer, io.FileIO)
    buf = io.open(fd, "wb" if write else "rb", buffering=0 if unbuffered else -1,
                  closefd=False)
    line = write and not unbuffered and (fd == 2 or os.isatty(fd))
    text = io.TextIOWrapper(buf, encoding=like.encoding, errors=like.errors, newline="\n",
                            line_buffering=line, write_through=unbuffered)
    text.mode = "w" if write else "r"
    return text


def _run(func) -> int:
    """Run the tool's main() as the console script would; the exit status."""
    import atexit
    import signal
    import traceback
    try:
        try:
            code = _exit_code(func())
        except SystemExit as exc:
            code = _exit_code(exc.code)
        except KeyboardInterrupt:
            traceback.print_exc()
            _flush()
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGINT)
            return 130
        except BaseException:         # noqa: BLE001 (Python's own report of an uncaught error)
            sys.excepthook(*sys.exc_info())
            code = 1
        threading._shutdown()
        atexit._run_exitfuncs()
    except BaseException:             # noqa: BLE001
        traceback.print_exc()
        code = 1
    return _flush(code)


def _exit_code(code) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    try:
        print(code, file=sys.stderr)
    except Exception:                 # noqa: BLE001
        pass
    return 1


def _flush(code: int = 0) -> int:
    """Flush stdout and stderr as Python does at exit: a failed flush of stdout is exit 120."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception as exc:      # noqa: BLE001
            if stream is sys.stdout:
                try:
                    sys.stderr.write(f"Exception ignored in: {stream!r}\n"
                                     f"{type(exc).__name__}: {exc}\n")
                    sys.stderr.flush()
                except Exception:     # noqa: BLE001
                    pass
                code = code or 120
    return code


if __name__ == "__main__":
    serve(sys.argv[1], int(sys.argv[2]))
