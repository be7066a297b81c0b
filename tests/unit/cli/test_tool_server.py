"""The test tool server (tests/toolserver.py) stands in for a real tool process.

A run through a shim must look, from inside and from outside, like a run of the installed
console script: the same argv, cwd, environment, umask, limits, signal dispositions, open
descriptors and stdio (encoding, buffering, terminals); the same stdout, stderr and exit
status; signals passed on; a killed shim takes its tool with it. The state seen from inside
is written by an op file that pypto-trace executes (it then fails: there is no kernel).
"""
from __future__ import annotations

import json
import os
import pathlib
import pty
import signal
import subprocess
import sys
import time

import pytest

from toolrun import BIN, SOFTMAX, env_for, interrupted

toolserver = sys.modules["toolserver"]

PROBE = r'''
import json, os, signal, sys, resource
names = ["SIGINT", "SIGTERM", "SIGPIPE", "SIGXFSZ", "SIGCHLD", "SIGHUP", "SIGUSR1", "SIGALRM"]
def disp(s):
    h = signal.getsignal(getattr(signal, s))
    return h if isinstance(h, int) else getattr(h, "__name__", "python")
umask = os.umask(0); os.umask(umask)
state = {
    "argv": sys.argv, "path0": sys.path[0], "cwd": os.getcwd(), "umask": umask,
    "env": {k: v for k, v in os.environ.items()},
    "fds": sorted(os.listdir("/proc/self/fd")),
    "signals": {s: disp(s) for s in names},
    "mask": sorted(signal.pthread_sigmask(signal.SIG_BLOCK, [])),
    "stdio": [[s.encoding, s.errors, s.line_buffering, s.isatty(), s.mode, s.fileno()]
              for s in (sys.stdin, sys.stdout, sys.stderr)],
    "main": getattr(sys.modules["__main__"], "__file__", None),
    "flags": list(sys.flags), "executable": sys.executable,
    "nofile": list(resource.getrlimit(resource.RLIMIT_NOFILE)),
    "cpus": sorted(os.sched_getaffinity(0)),
    "threads": len(os.listdir("/proc/self/task")),
}
with open(os.environ["PROBE_OUT"], "w") as f:
    json.dump(state, f)
'''


@pytest.fixture
def shims(tool_shims):
    if tool_shims is None:
        pytest.skip("PYPTO_TEST_REAL_TOOLS: no tool server")
    return pathlib.Path(tool_shims)


def probe(exe, tmp_path, **popen) -> dict:
    """The state the op file sees (the same command line and environment for every exe)."""
    op = tmp_path / "probe.py"
    op.write_text(PROBE)
    out = tmp_path / "state.json"
    env = env_for(PROBE_OUT=str(out))
    p = subprocess.run([str(exe), str(op), "-o", str(tmp_path / "out.ir")], env=env,
                       cwd=tmp_path, capture_output=True, timeout=120, **popen)
    assert p.returncode == 1 and b"no @pypto.jit kernel" in p.stderr, p.stderr  # it has none
    return json.loads(out.read_text())


def test_a_served_tool_sees_what_a_real_process_sees(shims, tmp_path):
    real = probe(BIN / "pypto-trace", tmp_path)
    served = probe(shims / "pypto-trace", tmp_path)
    # the real tool's executable is the console script; the shim's run names it too
    assert served["argv"] == real["argv"] and served["argv"][0] == str(BIN / "pypto-trace")
    for key in ("path0", "cwd", "umask", "env", "fds", "signals", "mask", "stdio", "main",
                "flags", "executable", "nofile", "cpus"):
        assert served[key] == real[key], key
    assert served["fds"] == ["0", "1", "2", "3"]     # 3: the listing's own descriptor
    assert served["threads"] <= real["threads"]


def test_limits_umask_and_ignored_signals_are_passed_on(shims, tmp_path):
    def limited():
        import resource
        os.umask(0o077)
        resource.setrlimit(resource.RLIMIT_NOFILE, (200, 300))
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
    served = probe(shims / "pypto-trace", tmp_path, preexec_fn=limited)
    real = probe(BIN / "pypto-trace", tmp_path, preexec_fn=limited)
    assert served["umask"] == real["umask"] == 0o077
    assert served["nofile"] == real["nofile"] == [200, 300]
    assert served["signals"] == real["signals"] and served["signals"]["SIGHUP"] == 1


@pytest.mark.parametrize("args, stdin", [
    (["lower", "--version"], b""),
    (["lower", "--bogus"], b""),
    (["lower", "/no/such.ir"], b""),
    (["lower"], b"garbage\n"),
    (["sched", "-S"], None),             # a real pipe of IR in
    (["trace", SOFTMAX, "-S"], b""),
])
def test_same_output_and_exit_status(shims, args, stdin):
    if stdin is None:
        stdin = subprocess.run([str(BIN / "pypto-trace"), SOFTMAX], capture_output=True,
                               env=env_for(), check=True).stdout
    name, *rest = args
    runs = [subprocess.run([str(d / f"pypto-{name}"), *rest], input=stdin, capture_output=True,
                           env=env_for(), timeout=120) for d in (BIN, shims)]
    real, served = runs
    assert (served.returncode, served.stdout, served.stderr) == \
        (real.returncode, real.stdout, real.stderr)


def test_a_terminal_is_a_terminal(shims):
    master, slave = pty.openpty()
    try:
        p = subprocess.Popen([str(shims / "pypto-trace"), SOFTMAX], stdout=slave,
                             stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env_for())
    finally:
        os.close(slave)
    err = p.stderr.read()
    p.wait(timeout=120)
    os.close(master)
    assert p.returncode == 2 and b"refusing to write binary IR to a terminal" in err


def test_signals_reach_the_tool(shims):
    # blocked reading stdin after a second
    assert interrupted(shims / "pypto-lower", 1.0) == (130, "pypto-lower: interrupted\n")


def test_a_tool_killed_by_a_signal_kills_its_shim(shims, tmp_path):
    op = tmp_path / "die.py"
    op.write_text("import os, signal\nos.kill(os.getpid(), signal.SIGTERM)\n")
    p = subprocess.run([str(shims / "pypto-trace"), str(op)], capture_output=True,
                       env=env_for(), timeout=120)
    assert p.returncode == -signal.SIGTERM


def test_a_killed_shim_takes_its_tool_with_it(shims):
    p = subprocess.Popen([str(shims / "pypto-lower")], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env_for())
    time.sleep(1.0)
    p.kill()
    p.wait()
    # the tool held the other copy of the stdout pipe: EOF means it is gone
    assert p.stdout.read() == b""
    p.stdin.close()
    p.stdout.close()
    p.stderr.close()


def test_what_a_fork_cannot_give_gets_a_real_process():
    base = toolserver.start_up_env({b"PATH": b"/bin", b"LANG": b"C.UTF-8"})
    assert base == {b"LANG": b"C.UTF-8"}
    req = (2, "pypto-lower", "", [], b"/", {b"LANG": b"C.UTF-8", b"PYTHONHASHSEED": b"0"},
           0o22, [], [], [], [], os.getpgrp(), [0, 1, 2])
    assert not toolserver._can_stand_in(req, base)
    fine = req[:5] + ({b"LANG": b"C.UTF-8", b"X": b"1"},) + req[6:]
    assert toolserver._can_stand_in(fine, base)
    for name in (b"TERMINAL_WIDTH", b"FORCE_COLOR", b"OMP_NUM_THREADS"):     # read at import
        assert not toolserver._can_stand_in(
            fine[:5] + ({**fine[5], name: b"1"},) + fine[6:], base), name
    # another process group (a shim in its own session): group signals must reach the tool
    assert not toolserver._can_stand_in(fine[:11] + (os.getpgrp() + 1,) + fine[12:], base)


def test_a_shim_in_its_own_session_runs_the_real_tool(shims, tmp_path):
    served = probe(shims / "pypto-trace", tmp_path, start_new_session=True)
    real = probe(BIN / "pypto-trace", tmp_path, start_new_session=True)
    assert served == {**real, "threads": served["threads"]}


def test_a_server_that_cannot_start_means_real_processes(monkeypatch, tmp_path):
    broken = tmp_path / "toolserver.py"
    broken.write_text("import sys\nsys.exit('no server today')\n")
    monkeypatch.delenv("PYPTO_TEST_REAL_TOOLS", raising=False)     # asked for a server
    monkeypatch.setattr(toolserver, "HERE", tmp_path)
    monkeypatch.setattr(toolserver, "_state", {})
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(toolserver.tempfile, "tempdir", str(scratch))
    with pytest.warns(RuntimeWarning, match="no server today"):
        assert toolserver.shim_dir() is None
    assert toolserver.shim_dir() is None          # asked once, not at every run
    toolserver.stop()
    assert toolserver._state == {}
    assert list(scratch.iterdir()) == []          # its folder is gone


def test_a_removed_cwd_or_a_closed_stdin_gets_a_real_process(shims, tmp_path):
    runs = []
    for d in (BIN, shims):
        gone = tmp_path / f"gone{len(runs)}"
        gone.mkdir()
        line = f"cd {gone} && rmdir {gone} && {d}/pypto-lower --version && " \
               f"{d}/pypto-lower --version <&-"
        p = subprocess.run(["bash", "-c", line], capture_output=True, env=env_for(),
                           timeout=120)
        runs.append((p.returncode, p.stdout, p.stderr))
    assert runs[1] == runs[0] and runs[0][0] == 0, runs
