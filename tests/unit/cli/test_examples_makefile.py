"""examples/Makefile: the stages as make targets with their files, for any example."""
from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from toolrun import ROOT, env_for, path_for

STAGES = ["op.ir", "op.exec", "op.sched", "op.code", "op.run", "profile.txt"]
pytestmark = [pytest.mark.needs_cc,
              pytest.mark.skipif(shutil.which("make") is None, reason="no make")]


def make(*args, cwd=ROOT) -> subprocess.CompletedProcess:
    env = env_for(PATH=path_for())
    return subprocess.run(["make", "-C", str(ROOT / "examples"), *args], capture_output=True,
                          text=True, env=env, cwd=cwd, timeout=600)


@pytest.mark.slow
def test_default_example_through_every_stage(tmp_path):
    out = tmp_path / "softmax"
    p = make(f"OUT={out}")
    assert p.returncode == 0, p.stderr
    assert sorted(f.name for f in out.iterdir()) == sorted(STAGES + ["lanes.svg", "trace.json"])
    tools = [ln.split()[0] for ln in p.stdout.splitlines() if ln.startswith("pypto-")]
    assert tools == ["pypto-trace", "pypto-lower", "pypto-sched", "pypto-emit", "pypto-run",
                     "pypto-prof"]
    assert "pypto-sched " in p.stdout and "--bind x_0=100" in p.stdout    # softmax's EXAMPLE
    assert (out / "profile.txt").read_text().startswith("kernel softmax: pass")
    again = make(f"OUT={out}")
    assert again.returncode == 0 and "Nothing to be done" in again.stdout


@pytest.mark.slow
def test_any_example_with_ex(tmp_path):
    out = tmp_path / "rmsnorm"
    p = make("EX=rmsnorm", f"OUT={out}", "TARGET=a2")
    assert p.returncode == 0, p.stderr
    assert "--bind T=" in p.stdout and "--target a2" in p.stdout
    assert (out / "profile.txt").read_text().startswith("kernel rmsnorm: pass")
    # a later stage is remade from the one before it
    (out / "op.run").unlink()
    p = make("EX=rmsnorm", f"OUT={out}", "TARGET=a2")
    assert [ln.split()[0] for ln in p.stdout.splitlines() if ln.startswith("pypto-")] == \
        ["pypto-run", "pypto-prof"]
