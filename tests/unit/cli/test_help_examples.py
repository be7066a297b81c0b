"""Every example command line of every tool's --help and README.md works as written.

Each line runs in bash (pipefail) in its own scratch folder holding the files the examples
name: `examples/` (the real one), `op.py` (softmax, rows x_0), softmax at every level as
op.ir, op.exec, op.sched, op.code and a run record run.msgpack, inputs in.npz and x.npy,
and a target file my-chip.toml. A line must exit 0.
"""
from __future__ import annotations

import importlib
import os
import re
import shutil
import subprocess

import numpy as np
import pytest

from toolrun import ROOT, TOOLS, env_for, ok, path_for, tool


def help_examples(name: str) -> list[str]:
    epilog = importlib.import_module(f"pypto_{name}.main").EPILOG
    return [ln.strip() for ln in epilog.splitlines() if ln.strip().startswith("pypto-")]


def readme_examples(name: str) -> list[str]:
    text = (ROOT / "tools" / f"pypto-{name}" / "README.md").read_text()
    m = re.search(r"^Examples:\s*\n+```\n(.*?)\n```", text, re.S | re.M)
    assert m, f"tools/pypto-{name}/README.md has no Examples: block"
    return [ln.strip() for ln in m.group(1).splitlines() if ln.strip().startswith("pypto-")]


LINES = sorted({(src, line) for name in TOOLS
                for src, lines in ((f"pypto-{name} --help", help_examples(name)),
                                   (f"tools/pypto-{name}/README.md", readme_examples(name)))
                for line in lines})


@pytest.fixture(scope="session")
def workspace(tmp_path_factory):
    d = tmp_path_factory.mktemp("examples-workspace")
    os.symlink(ROOT / "examples", d / "examples")
    shutil.copy(ROOT / "examples" / "softmax.py", d / "op.py")
    ok(tool("trace", "op.py", "-o", "op.ir", cwd=d))
    ok(tool("lower", "op.ir", "-o", "op.exec", cwd=d))
    ok(tool("sched", "op.exec", "-o", "op.sched", cwd=d))
    ok(tool("emit", "op.sched", "-o", "op.code", cwd=d))
    ok(tool("run", "op.code", "--bind", "x_0=64", "-o", "run.msgpack", cwd=d))
    x = np.random.default_rng(0).standard_normal((37, 1024)).astype(np.float32)
    np.savez(d / "in.npz", x=x)
    np.save(d / "x.npy", x)
    a2 = (ROOT / "libpypto" / "targets" / "a2.toml").read_text()
    (d / "my-chip.toml").write_text(a2.replace('name = "a2"', 'name = "my-chip"'))
    return d


def test_the_help_prints_the_examples_as_written():
    for name in TOOLS:
        p = ok(tool(name, "--help"))
        shown = [ln.strip() for ln in p.stdout.decode().splitlines()]
        for line in help_examples(name):
            assert line in shown, (name, line)


def test_every_tool_has_examples_in_both_places():
    for name in TOOLS:
        assert help_examples(name) and readme_examples(name), name
        assert any(" | pypto-" in ln for ln in help_examples(name) + readme_examples(name))


@pytest.mark.slow
@pytest.mark.needs_cc
@pytest.mark.parametrize("source, line", LINES, ids=[f"{s}: {ln}" for s, ln in LINES])
def test_example_line_works(workspace, tmp_path, source, line):
    run_in = tmp_path / "ws"
    shutil.copytree(workspace, run_in, symlinks=True)
    env = env_for(PATH=path_for())
    p = subprocess.run(["bash", "-o", "pipefail", "-c", line], cwd=run_in, env=env,
                       capture_output=True, timeout=300)
    assert p.returncode == 0, f"{source}: {line}\n{p.stderr.decode()}"
