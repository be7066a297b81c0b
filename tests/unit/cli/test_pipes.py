"""The three pipe shapes of DESIGN.md section 1, through the installed tools, on every example.

    pypto-trace op.py | pypto-lower | pypto-sched | pypto-emit | pypto-run | pypto-prof
    pypto-trace op.py | pypto-lower | pypto-run
    pypto-trace op.py | pypto-run
"""
import ast
import os
import pathlib
import re
import subprocess

import pytest

from toolrun import path_for

ROOT = pathlib.Path(__file__).resolve().parents[3]
EXAMPLES = sorted(p.stem for p in (ROOT / "examples").glob("*.py"))
PIPES = {
    "full": "pypto-trace {f} | pypto-lower | pypto-sched | pypto-emit | pypto-run {b} "
            "| pypto-prof --fmt plain",
    "lowered": "pypto-trace {f} | pypto-lower | pypto-run {b} -o /dev/null",
    "short": "pypto-trace {f} | pypto-run {b} -o /dev/null",
}


def binds(name: str) -> str:
    text = (ROOT / "examples" / f"{name}.py").read_text()
    spec = ast.literal_eval(re.search(r"^EXAMPLE = (.*)$", text, re.M).group(1))
    return " ".join(f"--bind {k}={v}" for k, v in spec["bind"].items())


@pytest.mark.slow
@pytest.mark.needs_cc
@pytest.mark.parametrize("pipe", sorted(PIPES))
@pytest.mark.parametrize("name", EXAMPLES)
def test_pipe(name, pipe, tmp_path):
    cmd = PIPES[pipe].format(f=ROOT / "examples" / f"{name}.py", b=binds(name))
    env = {**os.environ, "PATH": path_for()}
    proc = subprocess.run(["bash", "-o", "pipefail", "-c", cmd], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert f"pypto-run: {name}: pass" in proc.stderr
    if pipe == "full":
        assert f"kernel {name}: pass" in proc.stdout and "achieved GB/s" in proc.stdout


@pytest.mark.slow
@pytest.mark.needs_cc
def test_a_target_file_is_needed_once(tmp_path):
    """The document carries the target's record: later stages need no --target, and the
    schedule is made for the file's machine (its name and its core count)."""
    mine = (ROOT / "libpypto" / "targets" / "a2.toml").read_text()
    mine = mine.replace('name = "a2"', 'name = "mychip"').replace("cube = 24", "cube = 3")
    (tmp_path / "my.toml").write_text(mine)
    f = ROOT / "examples" / "matmul.py"
    env = {**os.environ, "PATH": path_for()}
    cmd = (f"pypto-lower --target my.toml {f} | pypto-sched {binds('matmul')} -o s.ir && "
           f"pypto-run s.ir -o /dev/null && rm my.toml && pypto-sched s.ir -S")
    proc = subprocess.run(["bash", "-o", "pipefail", "-c", cmd], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "pypto-run: matmul: pass" in proc.stderr
    schedule = next(ln for ln in proc.stdout.splitlines() if ln.startswith("schedule "))
    assert 'target="mychip"' in schedule and "cores={cube=3, vector=48}" in schedule
