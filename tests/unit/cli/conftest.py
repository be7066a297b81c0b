"""Fixtures of the CLI tests: the tools run in this process (cli), softmax at every level
(files), the session's compile cache. Helpers live in toolrun.py."""
from __future__ import annotations

import importlib
import io
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from toolrun import _CACHE, RUN_FAST, SOFTMAX, ok  # noqa: E402


@pytest.fixture(scope="session", autouse=True)
def _tool_cache(pypto_cache_dir):
    _CACHE.append(pypto_cache_dir)        # the session's (tests/conftest.py)


def in_process(name: str, *args, input: bytes = b"", cwd=None,
               **env) -> subprocess.CompletedProcess:
    """Run pypto-NAME's main() in this process with argv, stdio, env and cwd replaced: the
    console script's code path without its start-up."""
    from libpypto import errors
    main = importlib.import_module(f"pypto_{name}.main").main
    out, err = io.BytesIO(), io.BytesIO()
    stdout = io.TextIOWrapper(out, encoding="utf-8", write_through=True)
    stderr = io.TextIOWrapper(err, encoding="utf-8", write_through=True)
    with pytest.MonkeyPatch.context() as m:
        m.delenv("PYPTO_DEBUG", raising=False)
        m.setattr(sys, "argv", [f"pypto-{name}", *map(str, args)])
        m.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(input), encoding="utf-8"))
        m.setattr(sys, "stdout", stdout)
        m.setattr(sys, "stderr", stderr)
        for k, v in env.items():
            m.setenv(k, v)
        if cwd is not None:
            m.chdir(cwd)
        try:
            main()
            code = 0
        except SystemExit as done:
            code = done.code if isinstance(done.code, int) else int(done.code is not None)
        finally:
            errors.set_warning_handler(None)
    return subprocess.CompletedProcess([name, *args], code, out.getvalue(), err.getvalue())


@pytest.fixture
def cli():
    """cli(name, *args, input=b"", cwd=None, **env): run pypto-NAME's main() in this process."""
    return in_process


@pytest.fixture(scope="session")
def files(tmp_path_factory):
    """softmax at every level, each written by its tool with -o."""
    d = tmp_path_factory.mktemp("levels")
    f = {lvl: d / f"softmax.{lvl}" for lvl in ("tensor", "exec", "sched", "code", "run")}
    ok(in_process("trace", SOFTMAX, "-o", f["tensor"]))
    ok(in_process("lower", f["tensor"], "-o", f["exec"]))
    ok(in_process("sched", f["exec"], "-o", f["sched"]))
    ok(in_process("emit", f["sched"], "-o", f["code"]))
    ok(in_process("run", f["code"], "--bind", "x_0=16", *RUN_FAST, "-o", f["run"],
                  PYPTO_CACHE_DIR=_CACHE[0]))
    return f
