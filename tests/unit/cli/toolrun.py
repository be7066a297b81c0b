"""Running the installed tools in tests: as processes (tool) or in this process (conftest's cli).

tool() runs pypto-X through the test tool server's shim (tests/toolserver.py: a fork of a
process that has already imported libpypto; the same argv, env, cwd, stdio and exit status)
unless $PYPTO_TEST_REAL_TOOLS is set; real_tool() always runs the installed console script,
for what only a real process shows (its own pid and process group, a hash seed of its own).

Shared by the tests of this folder (conftest.py puts the folder on sys.path).
"""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys

from libpypto.driver import parse_ir

BIN = pathlib.Path(sys.executable).parent
ROOT = pathlib.Path(__file__).resolve().parents[3]
EX = ROOT / "examples"
SOFTMAX = str(EX / "softmax.py")        # DYNAMIC rows: x_0
ADD = str(EX / "add.py")                # fully static
TOOLS = ("trace", "lower", "sched", "emit", "run", "prof")
READERS = ("lower", "sched", "emit", "run", "prof")       # tools that read IR
WRITERS = ("trace", "lower", "sched", "emit")             # tools whose output is IR
RUN_FAST = ("--backend", "numpy", "--threads", "1")
_CACHE: list = []


def env_for(debug: bool = False, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYPTO_DEBUG"}
    env.setdefault("PYPTO_CACHE_DIR", _CACHE[0])
    if debug:
        env["PYPTO_DEBUG"] = "1"
    env.update(extra)
    return env


def bin_dir() -> pathlib.Path:
    """Where tool() finds pypto-X: the tool server's shims, else this Python's bin folder."""
    shims = sys.modules["toolserver"].shim_dir()        # loaded by tests/conftest.py
    return pathlib.Path(shims) if shims else BIN


def path_for() -> str:
    """$PATH for a shell or make that runs pypto-X: bin_dir() first, then BIN."""
    return os.pathsep.join(dict.fromkeys([str(bin_dir()), str(BIN), os.environ["PATH"]]))


def tool(name: str, *args, input: bytes | None = None, debug: bool = False, cwd=None,
         **extra_env) -> subprocess.CompletedProcess:
    return _run(bin_dir(), name, args, input, debug, cwd, extra_env)


def real_tool(name: str, *args, input: bytes | None = None, debug: bool = False, cwd=None,
              **extra_env) -> subprocess.CompletedProcess:
    return _run(BIN, name, args, input, debug, cwd, extra_env)


def _run(where, name, args, input, debug, cwd, extra_env) -> subprocess.CompletedProcess:
    return subprocess.run([str(where / f"pypto-{name}"), *map(str, args)], input=input,
                          capture_output=True, env=env_for(debug, **extra_env), cwd=cwd,
                          timeout=180)


def interrupted(exe: pathlib.Path, after: float, past: str | None = None) -> tuple:
    """(exit code, stderr) of exe run with its stdin open (so it waits there once up), sent
    SIGINT `after` seconds from its start or, with `past`, `after` seconds from the first
    import that follows module `past` (-X importtime's lines on stderr, left out of the
    result, tell): proof that the tool's code has gone on from there. A signal during
    Python's own start-up, before any of the tool's code runs, is Python's business, and on
    a loaded machine that start-up can take longer than `after`."""
    import signal
    import threading
    import time
    env = env_for(PYTHONPROFILEIMPORTTIME="1") if past else env_for()
    p = subprocess.Popen([str(exe)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=env)
    watchdog = threading.Timer(120, p.kill)          # whatever goes wrong: no hang
    watchdog.start()
    try:
        seen = False
        for line in p.stderr if past else ():
            if seen:
                break
            seen = line.rsplit(b"|", 1)[-1].strip() == past.encode()
        time.sleep(after)
        p.send_signal(signal.SIGINT)
        # stdin stays open until the tool is gone: closing it at once (as communicate does)
        # races the signal, which through a shim arrives later, and an EOF would win
        err = b"".join(line for line in p.stderr if not line.startswith(b"import time:"))
        p.wait()
    finally:
        watchdog.cancel()
        if p.poll() is None:
            p.kill()
            p.wait()
        for f in (p.stdin, p.stdout, p.stderr):
            f.close()
    return p.returncode, err.decode()


def tools(*calls: tuple) -> list:
    """Several tool(...) runs at once (each call: (name, args, kwargs)); results in order."""
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = [pool.submit(tool, name, *args, **kw) for name, args, kw in calls]
        return [f.result() for f in futures]


def ok(p: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert p.returncode == 0, p.stderr.decode()
    return p


def one_error_line(p: subprocess.CompletedProcess, name: str, code: int) -> str:
    """The stderr of a failed run: exactly one line `pypto-X: error: ...`, no traceback."""
    err = p.stderr.decode()
    assert p.returncode == code, (p.returncode, err)
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"pypto-{name}: error: "), err
    return lines[0][len(f"pypto-{name}: error: "):]


def level_of(data: bytes) -> str:
    return parse_ir(data, "<test>").level
