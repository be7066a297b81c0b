"""Every crash the fuzz suite has found, kept as a small file (regressions/NAME.LEVEL.ir,
shrunk by reduce.py) and replayed through the tool that reads its level: each must now end
in exit 0, 1 or 2 with one error line. A sample of mutated files also goes through the
installed tools as processes, the C backend included: what runs native code runs there."""
from __future__ import annotations

import random

import pytest
from conftest import cases

import harness
import mutate

FILES = sorted(harness.REGRESSIONS.glob("*.ir"))


def test_regressions_are_kept():
    assert FILES, "tests/fuzz/regressions/ holds the crashes found so far"
    for f in FILES:
        assert f.name.rsplit(".", 2)[-2] in harness.READER, f"{f.name}: no level in its name"
        assert f.stat().st_size <= 64 << 10, f"{f.name}: shrink it (reduce.py)"


@pytest.mark.parametrize("path", FILES, ids=[f.name for f in FILES])
def test_regression(path, case_dir):
    level = path.name.rsplit(".", 2)[-2]
    o = harness.feed(level, path.read_bytes(), case_dir)
    assert o.problem() is None, f"{path.name}: pypto-{o.tool} gave {o.problem()}\n{o.stderr}"


@pytest.mark.needs_cc
@pytest.mark.parametrize("index", cases(0.01, fast_share=0))
def test_native(seeds, case_dir, index):
    """A code-level file, mutated in structure, run by pypto-run as a process with the C
    backend (compiled and run when the mutation leaves the source what pypto-emit makes)."""
    code = [s for s in seeds if s.level == "code" and s.form == "msgpack"]
    seed = code[index % len(code)]
    kind, data = mutate.mutate_value(seed.data, random.Random(f"native-{index}"))
    o = harness.feed("code", data, case_dir, runner=harness.subprocess_run, tool="run",
                     options=("--threads", "2"))
    assert o.problem() is None, f"{seed.name} {kind}: {o.problem()}\n{o.stderr}"


@pytest.mark.parametrize("index", cases(0.01, fast_share=0.5))
def test_process(seeds, case_dir, index):
    """Byte mutations through the tools as processes: the console scripts' own start-up and
    error boundary, and a crash would be a signal."""
    seed = seeds[(index * 7) % len(seeds)]
    kind, data = mutate.mutate_bytes(seed.data, random.Random(f"process-{index}"))
    o = harness.feed(seed.level, data, case_dir, runner=harness.subprocess_run)
    assert o.problem() is None, f"{seed.name} {kind}: {o.problem()}\n{o.stderr}"


NATIVE = sorted((harness.REGRESSIONS / "native").glob("*.ir"))


@pytest.mark.slow
@pytest.mark.needs_cc
@pytest.mark.parametrize("path", NATIVE, ids=[f.name for f in NATIVE])
def test_native_regression(path, case_dir):
    """Files that crashed native code (found by the fuzzer): pypto-run with the C backend, as
    a process. A program's access outside its tensor is refused before anything runs
    (libpypto/analysis/access.py)."""
    level = path.name.rsplit(".", 2)[-2]
    o = harness.feed(level, path.read_bytes(), case_dir, runner=harness.subprocess_run,
                     tool="run", options=("--threads", "2"))
    assert o.problem() is None, f"{path.name}: {o.problem()}\n{o.stderr}"
