"""The fuzz harness: seed files at every level, mutators, and one call that feeds a file to
the tool reading its level and judges what the tool did.

A tool passes a case when it ends with exit 0, 1 or 2; on 1 or 2 its stderr ends in exactly
one `pypto-X: error: ...` line (every line it writes starts `pypto-X: `); never exit 70 (an
internal error), a Python traceback, a hang or a signal.

Run as a script to hunt for crashes outside pytest:
    .venv/bin/python tests/fuzz/harness.py [N] [SEED]
"""
from __future__ import annotations

import importlib
import io
import os
import pathlib
import random
import re
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
BIN = pathlib.Path(sys.executable).parent
REGRESSIONS = pathlib.Path(__file__).resolve().parent / "regressions"

# the examples the seeds come from, with the sizes their dynamic dims are bound to
SEED_EXAMPLES = {"add": {}, "softmax": {"x_0": 100}, "matmul": {"M": 200},
                 "ffn_relu_dynamic": {"h_0": 37, "out_0": 37}}
# level -> the tool that reads it, and its options besides the file
READER = {"tensor": ("lower", ()), "tile": ("lower", ()), "block": ("lower", ()),
          "exec": ("sched", ()), "sched": ("emit", ()),
          "code": ("run", ("--backend", "numpy", "--threads", "1")),
          "run": ("prof", ())}
LEVELS = tuple(READER)
TIMEOUT = 20.0           # seconds a case may take in process
CASE_LIMITS = {"PYPTO_MAX_BYTES": str(64 << 20), "PYPTO_MAX_INSTANCES": str(1 << 16),
               "PYPTO_MAX_LAUNCHES": str(1 << 14)}


class Hang(BaseException):
    """A case ran past TIMEOUT (BaseException: the tools' error boundary lets it through)."""


@dataclass
class Seed:
    example: str
    level: str
    form: str            # "msgpack" or "text"
    data: bytes

    @property
    def name(self) -> str:
        return f"{self.example}.{self.level}.{self.form}"


# -- running a tool ---------------------------------------------------------------------------

@dataclass
class Outcome:
    tool: str
    code: int
    stderr: str

    def problem(self) -> str | None:
        """What is wrong with this outcome, or None when the tool behaved."""
        prog = f"pypto-{self.tool}"
        if self.code not in (0, 1, 2):
            return f"exit {self.code}"
        if "Traceback" in self.stderr:
            return "a Python traceback"
        lines = self.stderr.splitlines()
        if self.code and not lines:
            return f"exit {self.code} without a message"
        stray = [ln for ln in lines if not ln.startswith(f"{prog}: ")]
        if stray:
            return f"a stderr line not starting with {prog}: {stray[0][:120]!r}"
        errors = [ln for ln in lines if ln.startswith(f"{prog}: error: ")]
        if self.code and (len(errors) != 1 or lines[-1] != errors[0]):
            return f"{len(errors)} error lines (want one, last)"
        if not self.code and errors:
            return "an error line with exit 0"
        return None

    def crash_site(self) -> str:
        """For an internal error: the exception and the innermost library frame of the
        traceback its reproducer folder keeps; else the last stderr line."""
        m = re.search(r"saved the input to (\S+)$", self.stderr.strip())
        tb = os.path.join(m.group(1), "traceback.txt") if m else None
        if not tb or not os.path.exists(tb):
            return self.site
        with open(tb) as f:
            text = f.read()
        frames = re.findall(r'File ".*?(libpypto/[^"]+)", line (\d+), in (\w+)', text)
        last = text.strip().splitlines()[-1].split(":")[0]
        return f"{last} at {':'.join(frames[-1]) if frames else '?'}"

    @property
    def site(self) -> str:
        """The error line without the parts that vary between cases (for grouping)."""
        return self.stderr.strip().splitlines()[-1][:160] if self.stderr.strip() else ""


def _on_alarm(signum, frame):
    raise Hang()


def in_process(tool: str, *args, stdin: bytes = b"", timeout: float = TIMEOUT,
               env: dict | None = None) -> Outcome:
    """pypto-TOOL's main() in this process with argv, stdio and env replaced."""
    from libpypto import errors
    main = importlib.import_module(f"pypto_{tool}.main").main
    err = io.BytesIO()
    saved = (sys.argv, sys.stdin, sys.stdout, sys.stderr)
    saved_env = {k: os.environ.get(k) for k in [*(env or {}), "PYPTO_DEBUG"]}
    os.environ.pop("PYPTO_DEBUG", None)
    os.environ.update(env or {})
    sys.argv = [f"pypto-{tool}", *map(str, args)]
    sys.stdin = io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8")
    sys.stdout = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", write_through=True)
    sys.stderr = errw = io.TextIOWrapper(err, encoding="utf-8", write_through=True)
    old = signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        main()
        code = 0
    except SystemExit as done:
        code = done.code if isinstance(done.code, int) else int(done.code is not None)
    except Hang:
        code = -1000
        err.write(b"\n(hang: no result within the per-case timeout)\n")
    finally:
        text = err.getvalue().decode("utf-8", "replace")
        errw.detach()
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        errors.set_warning_handler(None)
        sys.argv, sys.stdin, sys.stdout, sys.stderr = saved
        for k, v in saved_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return Outcome(tool, code, text)


def subprocess_run(tool: str, *args, timeout: float = 120.0, env: dict | None = None) -> Outcome:
    """pypto-TOOL as a process (native code may run: a crash is a signal, not our death)."""
    full = {k: v for k, v in os.environ.items() if k != "PYPTO_DEBUG"}
    full.update(env or {})
    try:
        p = subprocess.run([str(BIN / f"pypto-{tool}"), *map(str, args)], capture_output=True,
                           env=full, timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return Outcome(tool, -1000, "(hang: no result within the timeout)")
    code = p.returncode if p.returncode >= 0 else 128 - p.returncode
    return Outcome(tool, code, p.stderr.decode("utf-8", "replace"))


def feed(level: str, data: bytes, folder: str, name: str = "case.ir", runner=in_process,
         tool: str | None = None, options: tuple | None = None) -> Outcome:
    """Write data to folder/name and give it to the tool that reads `level` (or to `tool`,
    with `options` instead of the reader's)."""
    path = os.path.join(folder, name)
    with open(path, "wb") as f:
        f.write(data)
    t, opts = READER[level]
    t = tool or t
    opts = opts if options is None else options
    return runner(t, path, *opts, "-o", os.devnull, env=dict(CASE_LIMITS))


def keep_failure(level: str, data: bytes, label: str) -> str:
    """Save a failing case where a person can pick it up for regressions/ (the name carries
    the level, as the regression files' names do); the path."""
    folder = os.environ.get("PYPTO_FUZZ_FAILURES") or os.path.join(tempfile.gettempdir(),
                                                                   "pypto-fuzz-failures")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"{re.sub(r'[^A-Za-z0-9_.-]', '_', label)}.{level}.ir")
    with open(path, "wb") as f:
        f.write(data)
    return path


# -- seeds ------------------------------------------------------------------------------------

def _ok(o: Outcome, what: str) -> None:
    if o.code != 0:
        raise RuntimeError(f"making the seed {what}: exit {o.code}: {o.stderr}")


def make_seeds(folder: str, examples=None) -> list[Seed]:
    """Every example of SEED_EXAMPLES at every level, as msgpack (made by the tools in this
    process) and as text (the same document as -S prints it); then the Pro kernels of
    PRO_SEEDS at the levels a Pro kernel has (exec, code, run)."""
    seeds = []
    for ex in examples or SEED_EXAMPLES:
        seeds += _example_seeds(ex, SEED_EXAMPLES[ex], folder)
    if examples is None:
        for ex in PRO_SEEDS:
            seeds += _pro_seeds(ex, folder)
    return seeds


PRO_SEEDS = ("matmul",)         # examples/pro: a cube section with a K loop and manual sync


def _pro_seeds(ex: str, folder: str) -> list[Seed]:
    src = str(EXAMPLES / "pro" / f"{ex}.py")
    npz = os.path.join(folder, f"pro-{ex}.out.npz")
    steps = {"exec": ("trace", [src]), "code": ("emit", ["{exec}"]),
             "run": ("run", [*READER["code"][1], "--outputs", npz, "{code}"])}
    return _level_seeds(f"pro-{ex}", steps, folder)


def _level_seeds(name: str, steps: dict, folder: str) -> list[Seed]:
    """Run steps ({level: (tool, args)}, args naming earlier levels' files as {level}) in
    this process; each level's file as a msgpack seed and as a text seed."""
    from libpypto.ir import serde, text
    paths, seeds = {}, []
    for level, (tool, args) in steps.items():
        path = paths[level] = os.path.join(folder, f"{name}.{level}.msgpack")
        _ok(in_process(tool, *[a.format(**paths) for a in args], "-o", path, timeout=300), path)
        with open(path, "rb") as f:
            data = f.read()
        seeds.append(Seed(name, level, "msgpack", data))
        seeds.append(Seed(name, level, "text", text.print_doc(serde.loads(data)).encode()))
    return seeds


def _example_seeds(ex: str, bind: dict, folder: str) -> list[Seed]:
    src = str(EXAMPLES / f"{ex}.py")
    binds = [a for k, v in bind.items() for a in ("--bind", f"{k}={v}")]
    npz = os.path.join(folder, f"{ex}.out.npz")        # keeps the output data out of the record
    steps = {"tensor": ("trace", [src]),
             "tile": ("lower", ["-p", "tensor-to-tile,assign-memory", "{tensor}"]),
             "block": ("lower", ["-p", "fuse,forward,cse,dce,alloc", "{tile}"]),
             "exec": ("lower", ["-p", "make-exec", "{block}"]),
             "sched": ("sched", ["--target", "a2", *binds, "{tensor}"]),
             "code": ("emit", ["{sched}"]),
             "run": ("run", [*READER["code"][1], *binds, "--outputs", npz, "{code}"])}
    return _level_seeds(ex, steps, folder)


# -- the command line: hunt for crashes -------------------------------------------------------

def hunt(n: int, seed: int) -> int:
    from mutate import mutate_case  # noqa: E402  (this folder)
    rng = random.Random(seed)
    found: dict[str, tuple] = {}
    codes: dict = {}
    with tempfile.TemporaryDirectory() as d:
        os.environ["PYPTO_CACHE_DIR"] = os.path.join(d, "cache")
        seeds = make_seeds(d)
        for i in range(n):
            s = rng.choice(seeds)
            kind, data = mutate_case(s, rng)
            o = feed(s.level, data, d)
            codes[(s.level, o.code)] = codes.get((s.level, o.code), 0) + 1
            bad = o.problem()
            if bad:
                key = f"{o.tool}: {bad}: {o.crash_site() if o.code == 70 else o.site}"
                if key not in found:
                    found[key] = (s.name, kind, data)
                    path = os.path.join("/tmp", f"fuzz-{len(found)}.ir")
                    with open(path, "wb") as f:
                        f.write(data)
                    print(f"[{i}] {s.name} {kind}: {key}  -> {path}", flush=True)
    print(f"{n} cases, {len(found)} distinct problems; exit codes by level: "
          f"{dict(sorted(codes.items()))}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    sys.exit(hunt(int(sys.argv[1]) if len(sys.argv) > 1 else 200,
                  int(sys.argv[2]) if len(sys.argv) > 2 else 0))
