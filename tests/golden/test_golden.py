"""Golden tests of the tools: each case file's RUN lines run, their output is compared.

A case file tests/golden/<tool>/<name>.test starts with comment lines:

    # Protects: what breaks if this output changes
    # RUN: pypto-lower -p tensor-to-tile -S %s     bash: pipes, 2>&1, `;` and `&&` allowed
    # RUN: not pypto-lower -p bogus %s 2>&1        the line must fail; `# exit N` ends its output
    # CHECK: text   /   # CHECK-NOT: text          FileCheck-style, in order, for noisy output
    # REQUIRES: cc                                 skipped (needs_cc) without a C compiler

%s is the case file, %examples the examples folder, %t an empty scratch folder. A RUN line
ending in `\\` continues on the next RUN line. Commands run in the case file's folder, with
this Python's bin folder first on PATH and PYPTO_FAKE_CLOCK=1. The rest of the file is free:
a text-form IR file can be its own input (the IR reader skips `#` lines). Lines `# -----`
split a file into independent cases (invalid.test), each with its own RUN and CHECK lines.
The pypto-* commands are the test tool server's shims (tests/toolserver.py: a fork of a
process that has imported libpypto, on the command's own stdin, stdout and stderr; the
same exit status), or the real tools with PYPTO_TEST_REAL_TOOLS=1.

The stdout of the RUN lines, cases joined by `# -----`, must equal <name>.expected beside the
case file; a file with CHECK lines has no .expected file. A failing (`not`) command must print
exactly one `pypto-<tool>: error: ...` line and no traceback. `make golden` (pytest
tests/golden --update-goldens) rewrites the .expected files: read the diff before keeping it.
One case file: pytest tests/golden -k lower/tensor-to-tile.
"""
from __future__ import annotations

import difflib
import os
import pathlib
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import pytest

HERE = pathlib.Path(__file__).resolve().parent
EXAMPLES = HERE.parents[1] / "examples"
SPLIT = "# -----"
DIRECTIVE = re.compile(r"^#\s*(Protects|RUN|CHECK-NOT|CHECK|REQUIRES):\s?(.*)$")
TOOL_LINE = re.compile(r"^pypto-(trace|lower|sched|emit|run|prof): ")
ERROR_LINE = re.compile(r"^pypto-(trace|lower|sched|emit|run|prof): error: \S")


@dataclass
class Case:
    runs: list = field(default_factory=list)      # shell commands, `not ` prefix kept
    checks: list = field(default_factory=list)    # ("CHECK" | "CHECK-NOT", text)


@dataclass
class CaseFile:
    path: pathlib.Path
    protects: str = ""
    requires: set = field(default_factory=set)
    cases: list = field(default_factory=lambda: [Case()])


def parse(path: pathlib.Path) -> CaseFile:
    f = CaseFile(path)
    for line in path.read_text().splitlines():
        if line.strip() == SPLIT:
            f.cases.append(Case())
            continue
        m = DIRECTIVE.match(line)
        if not m:
            continue
        kind, text = m.group(1), m.group(2).strip()
        case = f.cases[-1]
        if kind == "RUN" and case.runs and case.runs[-1].endswith("\\"):
            case.runs[-1] = case.runs[-1][:-1] + " " + text
        elif kind == "RUN":
            case.runs.append(text)
        elif kind in ("CHECK", "CHECK-NOT"):
            case.checks.append((kind, text))
        elif kind == "REQUIRES":
            f.requires.update(text.replace(",", " ").split())
        else:
            f.protects = f.protects or text
    return f


FILES = [parse(p) for p in sorted(HERE.glob("*/*.test")) if p.parent.name != "Inputs"]
# the cases `make check` runs (one or two per tool, seconds in all); the rest are slow
FAST = {"pro/errors.test", "trace/softmax.test", "trace/version.test", "lower/softmax.test",
        "lower/pass-dce.test",
        "lower/list-passes.test", "sched/softmax.test"}


def run_line(line: str, f: CaseFile, scratch: pathlib.Path, env: dict) -> str:
    """Run one RUN line; its stdout, plus `# exit N` for a `not` line."""
    expect_fail = line.startswith("not ")
    subs = {"%examples": str(EXAMPLES), "%s": str(f.path), "%t": str(scratch)}
    cmd = re.sub(r"%(examples|s|t)\b", lambda m: subs[m.group(0)],
                 line[4:] if expect_fail else line)
    p = subprocess.run(["bash", "-c", cmd], cwd=f.path.parent, env=env, capture_output=True,
                       text=True, timeout=300)
    where = f"{f.path.relative_to(HERE)}: RUN: {line}\n"
    if "Traceback" in p.stdout + p.stderr:
        pytest.fail(f"{where}a Python traceback:\n{p.stderr}{p.stdout}", pytrace=False)
    if not expect_fail:
        if p.returncode != 0:
            pytest.fail(f"{where}exit {p.returncode}\n{p.stderr}", pytrace=False)
        return p.stdout
    if p.returncode == 0:
        pytest.fail(f"{where}expected to fail but exited 0\n{p.stderr}", pytrace=False)
    lines = (p.stdout + p.stderr).splitlines()
    errors = [ln for ln in lines if TOOL_LINE.match(ln) and "error" in ln]
    stray = [ln for ln in p.stderr.splitlines() if not TOOL_LINE.match(ln)]
    if len(errors) != 1 or not ERROR_LINE.match(errors[0]) or stray:
        pytest.fail(f"{where}an error must be one `pypto-<tool>: error: ...` line on stderr; "
                    f"got:\n{p.stderr}{p.stdout}", pytrace=False)
    out = p.stdout if not p.stdout or p.stdout.endswith("\n") else p.stdout + "\n"
    return out + f"# exit {p.returncode}\n"


def run_case(f: CaseFile, i: int, scratch: pathlib.Path, env: dict) -> str:
    """The output of case i of f (its RUN lines in order), after its CHECK lines pass."""
    case = f.cases[i]
    if not case.runs:
        pytest.fail(f"{f.path.name}: case {i + 1} has no RUN line", pytrace=False)
    out = "".join(run_line(line, f, scratch, env) for line in case.runs)
    check(out, case.checks, f"{f.path.relative_to(HERE)}, case {i + 1}: ")
    return out if not out or out.endswith("\n") else out + "\n"


def check(output: str, checks: list, where: str) -> None:
    """FileCheck-style: each CHECK found after the previous one, no CHECK-NOT in between."""
    pos, forbidden = 0, []
    for kind, text in checks + [("CHECK", None)]:
        if kind == "CHECK-NOT":
            forbidden.append(text)
            continue
        end = len(output) if text is None else output.find(text, pos)
        if end < 0:
            pytest.fail(f"{where}CHECK: {text!r} not found after offset {pos} in:\n{output}",
                        pytrace=False)
        for bad in forbidden:
            if bad in output[pos:end]:
                pytest.fail(f"{where}CHECK-NOT: {bad!r} found in:\n{output}", pytrace=False)
        pos, forbidden = end + len(text or ""), []


_futures: dict | None = None    # (case file path, case index) -> Future of the case's output


def start_all(request, tmp_path_factory) -> dict:
    """Start every selected case on a thread pool: tools are processes, so cases overlap."""
    shims = request.getfixturevalue("tool_shims")     # the tool server (tests/conftest.py)
    path = [shims] if shims else []
    env = {**os.environ, "PYPTO_FAKE_CLOCK": "1",    # taken inside a test: fixtures' env too
           "PATH": os.pathsep.join(path + [os.path.dirname(sys.executable),
                                           os.environ.get("PATH", "")])}
    env.pop("PYPTO_DEBUG", None)
    pool = ThreadPoolExecutor(max_workers=os.cpu_count() or 2)
    request.config.add_cleanup(lambda: pool.shutdown(cancel_futures=True))
    futures = {}
    for item in request.session.items:
        f = getattr(item, "callspec", None) and item.callspec.params.get("f")
        if isinstance(f, CaseFile) and not item.get_closest_marker("skip"):
            for i in range(len(f.cases)):
                scratch = tmp_path_factory.mktemp(f"{f.path.stem}-case{i + 1}")
                futures[f.path, i] = pool.submit(run_case, f, i, scratch, env)
    return futures


@pytest.mark.parametrize("f", [
    pytest.param(f, id=str(f.path.relative_to(HERE)),
                 marks=([pytest.mark.needs_cc] if "cc" in f.requires else [])
                 + ([] if str(f.path.relative_to(HERE)) in FAST else [pytest.mark.slow]))
    for f in FILES])
def test_golden(f: CaseFile, request, tmp_path_factory):
    global _futures
    if not f.protects:
        pytest.fail(f"{f.path.name}: say what the case protects in a `# Protects:` line",
                    pytrace=False)
    if _futures is None:
        _futures = start_all(request, tmp_path_factory)
    outputs = [_futures.pop((f.path, i)).result() for i in range(len(f.cases))]
    expected = f.path.with_suffix(".expected")
    if any(case.checks for case in f.cases):
        if expected.exists():
            pytest.fail(f"{expected.name}: a case file with CHECK lines has no .expected file",
                        pytrace=False)
        return
    actual = (SPLIT + "\n").join(outputs)
    if request.config.getoption("--update-goldens"):
        expected.write_text(actual)
        return
    if not expected.exists():
        pytest.fail(f"no {expected.relative_to(HERE)}: run `make golden` and review it",
                    pytrace=False)
    want = expected.read_text()
    if want != actual:
        diff = difflib.unified_diff(want.splitlines(True), actual.splitlines(True),
                                    str(expected.relative_to(HERE)), "actual output")
        pytest.fail("".join(diff), pytrace=False)
