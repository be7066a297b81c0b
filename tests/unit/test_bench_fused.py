"""bench/fused.py runs: its checks of pypto against numpy pass and it prints its tables (no
time is asserted); a bad op name is a one-line error."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "bench", "fused.py")


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True,
                          timeout=900)


def test_unknown_op_is_an_error():
    p = run("--ops", "softmax,nope")
    assert p.returncode == 1
    assert p.stderr.strip() == ("fused.py: unknown op(s) nope (known: softmax, rmsnorm, "
                                "layernorm, gelu_tanh, gelu_erf, silu_mul, add_rmsnorm, rope)")


@pytest.mark.slow
@pytest.mark.needs_cc
def test_quick_run_checks_and_prints_every_table():
    p = run("--quick", "--ops", "softmax,rope", "--reps", "1")
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert "STREAM triad" in out and "torch" in out
    rows = [line.split()[:2] for line in out.splitlines()]
    # the main table, the named-H table (none for rope) and the tile rows tables (1 and 2
    # threads)
    for row, n in ((["softmax", "512x4096"], 4), (["softmax", "2048x1024"], 4),
                   (["rope", "512x32x128"], 3)):
        assert rows.count(row) == n, row
    assert "named H 1T ms" in out and "rows 64 ms (/best)" in out
