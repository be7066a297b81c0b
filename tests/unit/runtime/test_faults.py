"""Faults while outputs are made: kills and signals during a write, races between workers.

Every output file goes through libpypto.ir.files.atomic_write: a kill -9 at any moment leaves
the old file or the complete new one, and SIGTERM or SIGINT leave no temporary file behind.
Writers are real processes killed at random moments; each payload carries its own length and
checksum, so a half-written file cannot pass for a whole one. Worker threads must not change
a single bit of any output: every example runs with 1, 2 and 8 threads.
"""
from __future__ import annotations

import hashlib
import io
import os
import pathlib
import random
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import libpypto as pypto

ROOT = pathlib.Path(__file__).resolve().parents[3]
BIN = pathlib.Path(sys.executable).parent

# alternately writes two self-checking payloads of SIZE bytes to PATH until it is killed
WRITER = r"""
import hashlib, os, signal, sys
from libpypto.ir.files import atomic_write
signal.signal(signal.SIGINT, signal.default_int_handler)   # even if started with it ignored
path, size = sys.argv[1], int(sys.argv[2])
def payload(tag):
    body = os.urandom(size)
    return b"PPT1 %s %d %s\n" % (tag, size, hashlib.sha256(body).hexdigest().encode()) + body
a, b = payload(b"a"), payload(b"b")
i = 0
while True:
    atomic_write(path, a if i % 2 == 0 else b)
    if i == 0:
        print("ready", flush=True)
    i += 1
"""


def check_payload(data: bytes) -> bytes:
    """The tag of a complete payload; fails on a truncated or mixed one."""
    head, _, body = data.partition(b"\n")
    magic, tag, size, digest = head.split(b" ")
    assert magic == b"PPT1"
    assert len(body) == int(size), f"truncated: {len(body)} of {int(size)} bytes"
    assert hashlib.sha256(body).hexdigest().encode() == digest, "content of two writes mixed"
    return tag


def temporaries(d: pathlib.Path) -> list:
    return sorted(p.name for p in d.iterdir() if p.name.endswith(".tmp"))


def start_writer(path: pathlib.Path, size: int) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(size)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)


@pytest.mark.slow
def test_kill9_at_any_moment_leaves_the_old_or_a_whole_new_file(tmp_path):
    path = tmp_path / "out.bin"
    old = b"old file"
    rng = random.Random(1)
    tags = set()
    for trial in range(10):
        path.write_bytes(old)
        p = start_writer(path, 8 << 20)
        if trial % 2:                          # after the first write, during later ones
            p.stdout.readline()
            time.sleep(rng.uniform(0.0, 0.3))
        else:                                  # any moment, maybe before the first write
            time.sleep(rng.uniform(0.0, 1.2))
        p.kill()
        p.wait()
        data = path.read_bytes()
        tags.add(b"old" if data == old else check_payload(data))
    # SIGKILL cannot be caught: its temporary file may stay, but never in place of the output
    assert tags - {b"old"}, "no trial got as far as one write: the test proved nothing"


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_sigterm_and_sigint_during_atomic_write_leave_no_temporary_file(tmp_path, sig):
    path = tmp_path / "out.bin"
    rng = random.Random(int(sig))
    for trial in range(6):
        p = start_writer(path, 32 << 20)
        assert p.stdout.readline() == b"ready\n", p.stderr.read().decode()
        time.sleep(rng.uniform(0.0, 0.2))
        p.send_signal(sig)
        _, err = p.communicate(timeout=60)
        assert p.returncode != 0, "the writer ended on its own"
        if sig == signal.SIGTERM:      # the handler cleans up, then dies of the signal as usual
            assert p.returncode == -signal.SIGTERM, err.decode()
        assert temporaries(tmp_path) == [], f"trial {trial}: {err.decode()[-500:]}"
        check_payload(path.read_bytes())


def test_the_signal_guard_is_gone_after_a_write(tmp_path):
    from libpypto.ir.files import atomic_write
    before = signal.getsignal(signal.SIGTERM)
    atomic_write(str(tmp_path / "x"), b"x")
    assert signal.getsignal(signal.SIGTERM) is before
    assert (tmp_path / "x").read_bytes() == b"x"


# -- the tools' outputs ----------------------------------------------------------------------

def _npz_ok(path: pathlib.Path, name: str) -> str:
    with np.load(io.BytesIO(path.read_bytes())) as z:      # a truncated zip fails here
        arrays = {k: z[k] for k in z.files}
    if "old" in arrays:
        return "old"
    assert arrays[name].size > 0
    return "new"


@pytest.mark.slow
@pytest.mark.needs_cc
def test_kill9_during_pypto_run_leaves_old_or_whole_outputs(tmp_path):
    """--outputs and -o of a run whose outputs take a while to write, killed at random."""
    from libpypto.driver import parse_ir
    os.makedirs(tmp_path / "tmp")            # what a killed compile leaves stays in here
    env = dict(os.environ, TMPDIR=str(tmp_path / "tmp"))
    npz, rec = tmp_path / "out.npz", tmp_path / "run.msgpack"
    cmd = [str(BIN / "pypto-run"), str(ROOT / "examples" / "softmax.py"), "--bind",
           "x_0=8192", "--no-verify", "--outputs", str(npz), "-o", str(rec)]
    rng = random.Random(3)
    for trial in range(5):
        np.savez(npz, old=np.ones(1))
        rec.write_bytes(b"old record")
        p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(rng.uniform(0.5, 3.0))
        p.kill()
        p.wait()
        _npz_ok(npz, "y")
        if rec.read_bytes() != b"old record":
            assert parse_ir(rec.read_bytes(), "run.msgpack").level == "run"
    p = subprocess.run(cmd, env=env, capture_output=True, timeout=300)
    assert p.returncode == 0, p.stderr.decode()
    assert _npz_ok(npz, "y") == "new"
    assert parse_ir(rec.read_bytes(), "run.msgpack").level == "run"


@pytest.mark.slow
def test_kill9_during_pypto_prof_leaves_old_or_whole_profiles(tmp_path):
    import json
    rec = pypto.run(pypto.trace(str(ROOT / "examples" / "softmax.py")), bind={"x_0": 4096},
                    backend="numpy", threads=2, verify=False, keep_data=False)
    from libpypto.driver import dump_ir
    (tmp_path / "run.msgpack").write_bytes(dump_ir(rec, False))
    chrome, svg = tmp_path / "t.json", tmp_path / "t.svg"
    cmd = [str(BIN / "pypto-prof"), str(tmp_path / "run.msgpack"), "--chrome", str(chrome),
           "--svg", str(svg)]
    rng = random.Random(4)
    for trial in range(4):
        chrome.write_text("old")
        svg.write_text("old")
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(rng.uniform(0.2, 1.5))
        p.kill()
        p.wait()
        if chrome.read_text() != "old":
            json.loads(chrome.read_text())
        if svg.read_text() != "old":
            assert svg.read_text().rstrip().endswith("</svg>")
    p = subprocess.run(cmd, capture_output=True, timeout=120)
    assert p.returncode == 0, p.stderr.decode()
    assert json.loads(chrome.read_text()) and svg.read_text().rstrip().endswith("</svg>")


# -- worker threads --------------------------------------------------------------------------

FORKER = r"""
import os, sys
import libpypto as pypto
doc = pypto.emit(pypto.trace(sys.argv[1]))
pypto.run(doc, bind={"x_0": 64}, threads=2, verify=False)      # the pool's threads exist
pid = os.fork()
if pid == 0:             # only the forking thread is in the child: the pool must start anew
    rec = pypto.run(doc, bind={"x_0": 64}, threads=2, seed=1)
    os._exit(0 if rec.body[0].attrs["verdict"] == "pass" else 3)
_, status = os.waitpid(pid, 0)
rec = pypto.run(doc, bind={"x_0": 64}, threads=2, seed=1)     # and the parent's still works
print(os.waitstatus_to_exitcode(status), rec.body[0].attrs["verdict"])
"""


@pytest.mark.slow
@pytest.mark.needs_cc
def test_a_forked_child_runs_kernels_its_parent_ran(tmp_path):
    p = subprocess.Popen([sys.executable, "-c", FORKER, str(ROOT / "examples" / "softmax.py")],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT,
                         start_new_session=True)
    try:
        out, err = p.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)          # the hung child too
        p.communicate()
        pytest.fail("a run in the forked child waited forever for its parent's workers")
    assert p.returncode == 0, err.decode()
    assert out.decode().split() == ["0", "pass"], err.decode()


EXAMPLES = sorted(p.stem for p in (ROOT / "examples").glob("*.py"))


@pytest.mark.slow
@pytest.mark.needs_cc
@pytest.mark.parametrize("name", EXAMPLES)
def test_outputs_are_bit_identical_for_1_2_and_8_threads(name, ex):
    doc = pypto.emit(pypto.trace(ex.path(name)))
    digests = {}
    for threads in (1, 2, 8):
        rec = pypto.run(doc, bind=ex.bind(name), threads=threads, seed=1, verify=False)
        a = rec.body[0].attrs
        assert a["threads"] == threads
        digests[threads] = [(o["name"], o["sha256"]) for o in a["outputs"]]
    assert digests[1], "no outputs to compare"
    assert digests[2] == digests[1] and digests[8] == digests[1], digests
