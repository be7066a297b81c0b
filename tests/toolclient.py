"""The client half of the test-only tool server (toolserver.py): what a shim pypto-X runs.

A shim is `#!python -IS` plus a call of main(); it starts in a few milliseconds because it
imports only built-in modules. It hands the tool server its argv, cwd, environment, umask,
resource limits, CPU affinity, signal mask, ignored signals and its own stdin, stdout and
stderr (the file descriptors themselves, SCM_RIGHTS), then waits. The server forks a child
that has already imported libpypto; the child runs the tool on those descriptors and the
shim ends the way the child did: the same exit status, or killed by the same signal.
Signals the shim gets (SIGINT, SIGTERM, ...) are passed on to the child; if the shim is
killed outright, the server kills the child (SIGKILL).

Where the server cannot stand in for a real process (it is not running, the environment
changes what Python or numpy read at start-up, a standard descriptor is closed) the shim
execs the real console script instead, so a run is never refused.
"""
import _signal
import _socket
import marshal
import os
import sys

FORWARDED = ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGWINCH")
LIMITS = ("RLIMIT_AS", "RLIMIT_DATA", "RLIMIT_STACK", "RLIMIT_CPU", "RLIMIT_FSIZE",
          "RLIMIT_NOFILE", "RLIMIT_CORE", "RLIMIT_NPROC", "RLIMIT_MEMLOCK")
_child = [0]
_pending = []


def _forward(signum, frame):
    if _child[0]:
        try:
            os.kill(_child[0], signum)
        except ProcessLookupError:
            pass
    else:
        _pending.append(signum)


def _real(script):
    """Become the real tool (a fresh Python process), as if the shim had never run."""
    os.execv(script, [script, *sys.argv[1:]])


def _limits():
    import resource
    return [(getattr(resource, n), *resource.getrlimit(getattr(resource, n)))
            for n in LIMITS if hasattr(resource, n)]


def _recv_exact(sock, n):
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def main(tool, script, address):
    if os.environ.get("PYPTO_TEST_REAL_TOOLS"):
        _real(script)
    try:
        cwd = os.getcwd()
        for fd in (0, 1, 2):
            os.fstat(fd)
    except OSError:          # a closed standard descriptor or a removed cwd: only a real
        _real(script)        # process starts there as it would
    ignored, forwarded = [], []
    for name in FORWARDED:
        sig = getattr(_signal, name)
        if _signal.getsignal(sig) == _signal.SIG_IGN:
            ignored.append(sig)            # the tool inherits it ignored, as from a shell
        else:
            forwarded.append(sig)
            _signal.signal(sig, _forward)
    request = marshal.dumps((2, tool, script, [os.fsencode(a) for a in sys.argv[1:]],
                             os.fsencode(cwd), dict(os.environb), _umask(),
                             _limits(), sorted(os.sched_getaffinity(0)),
                             sorted(_signal.pthread_sigmask(_signal.SIG_BLOCK, [])),
                             ignored, os.getpgrp()))
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.connect(address)
        fds = b"".join(fd.to_bytes(4, sys.byteorder) for fd in (0, 1, 2))
        sock.sendmsg([len(request).to_bytes(8, "little"), request],
                     [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, fds)])
        answer = _recv_exact(sock, 1)
    except OSError:
        answer = None
    if answer in (None, b"F"):             # no server, or one that cannot stand in
        sock.close()
        for sig in forwarded:
            _signal.signal(sig, _signal.SIG_DFL)
        for sig in _pending:               # got before there was a tool: as if it had been
            os.kill(os.getpid(), sig)
        _real(script)
    pid = int.from_bytes(_recv_exact(sock, 8) or b"\0" * 8, "little")
    _child[0] = pid
    for sig in _pending:
        _forward(sig, None)
    status = _recv_exact(sock, 9)
    if status is None or status[:1] != b"X":
        os.write(2, f"{tool}: the test tool server went away\n".encode())
        os._exit(125)
    status = int.from_bytes(status[1:], "little", signed=True)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        _signal.signal(sig, _signal.SIG_DFL)
        _signal.pthread_sigmask(_signal.SIG_UNBLOCK, [sig])
        os.kill(os.getpid(), sig)
        os._exit(128 + sig)
    os._exit(os.WEXITSTATUS(status))


def _umask():
    mask = os.umask(0o22)
    os.umask(mask)
    return mask
