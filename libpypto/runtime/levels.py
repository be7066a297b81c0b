"""The tile and block levels run on numpy, for `pypto-run --check-levels`.

A tile- or block-level document is a list of kernels (tile level) or blocks (block level),
each a grid of instances whose tile instructions read and write GM tensors, under top-level
`loop`, `if` and `check` ops. Run in program order, every instance of a kernel one after the
other, it computes what the lowered program computes: the order the schedule picks only has to
respect the dependences that program order already does. The instructions run through the
same npkern calls as the numpy backend (npexec.ProgramRunner); GM workspaces are zeroed arrays.

run_level(doc, arrays, env, watch=None) runs it on the parameter arrays in place. watch =
(name, index) records the last instruction that changed that element of parameter `name`:
when a level diverges, that instruction (with its op file line) is where to look.
"""
from __future__ import annotations

import itertools

import numpy as np

from ..errors import PyptoError
from ..ir import expr as E
from ..analysis.expand import check, read_value
from .npexec import ProgramRunner, instruction_calls

GRID_OPS = ("kernel", "block")


class _Grid(ProgramRunner):
    """One kernel or block op: its tile instructions, run for one grid instance at a time."""

    def __init__(self, op, watch=None):   # noqa: D107 (ProgramRunner's tables, no prog args)
        self.prog = op
        self.calls = instruction_calls(op.regions[0])
        self.watch = watch          # (array, index, record list) or None

    def run(self, ops, env: dict, vals: dict) -> None:
        if self.watch is None:
            return super().run(ops, env, vals)
        arr, index, seen = self.watch
        for op in ops:
            before = arr[index]
            super().run([op], env, vals)
            if op.name not in ("tile", "for") and not _same(arr[index], before):
                seen.append((self.prog, op))


def _same(a, b) -> bool:
    return bool(a == b) or (a != a and b != b)      # NaN == NaN here


class _Level:
    def __init__(self, doc, arrays: dict, env: dict, watch):
        self.env = dict(env)
        self.arrays = arrays
        self.vals: dict = {}
        self.watch = None
        self.changed: list = []
        for op in doc.walk():
            if op.name != "gm":
                continue
            t = op.result.type
            if "param" in op.attrs:
                self.vals[op.result] = arrays[op.attrs["param"]]
            else:
                shape = [int(E.evaluate(d, env)) if isinstance(d, E.Expr) else d
                         for d in t.shape]
                self.vals[op.result] = np.zeros(shape, t.dtype.np)
        if watch is not None:
            self.watch = (arrays[watch[0]], tuple(watch[1]), self.changed)

    def region(self, ops, env: dict) -> None:
        for op in ops:
            n = op.name
            if n == "loop":
                a = op.attrs
                start, stop, step = (_ev(a[k], env) for k in ("start", "stop", "step"))
                for i in range(start, stop, step):
                    self.region(op.regions[0], {**env, a["var"]: i})
            elif n == "if":
                self.region(op.regions[0] if _ev(op.attrs["cond"], env) else op.regions[1], env)
            elif n == "check":
                check(op, env)
            elif n == "read":
                name = op.attrs["param"]
                env = {**env, op.attrs["var"]: read_value(op, env, {name: self.arrays[name]})}
            elif n in GRID_OPS:
                self.grid(op, env)
            elif n not in ("gm", "source"):
                raise PyptoError(f"--check-levels: cannot interpret a top-level {n!r} op")

    def grid(self, op, env: dict) -> None:
        runner = _Grid(op, self.watch)
        dims = [range(_ev(d, env)) for d in op.attrs["grid"]]
        for point in itertools.product(*dims):
            genv = {**env, **{f"g{i}": g for i, g in enumerate(point)}}
            runner.run(op.regions[0], genv, dict(self.vals))


def _ev(x, env: dict) -> int:
    return int(E.evaluate(x, env)) if isinstance(x, E.Expr) else int(x)


def run_level(doc, arrays: dict, env: dict, watch=None) -> list:
    """Run a tile- or block-level document on arrays (in place); the instructions that last
    changed the watched element, in order (empty without a watch)."""
    lv = _Level(doc, arrays, env, watch)
    lv.region([op for op in doc.body if op.name not in ("gm", "source")], env)
    return lv.changed


def level_outputs(doc, arrays: dict, env: dict, watch=None) -> tuple[dict, list]:
    """The parameter arrays after running doc on a copy of arrays, at the doc's own level
    (tensor: the interpreter, as after fold-scale; tile and block: run_level; exec, sched
    and code: their programs on numpy, in task order on one thread), and the instructions
    that changed the watched element (tile and block only)."""
    got = {k: v.copy() for k, v in arrays.items()}
    if doc.level == "tensor":
        from .interp import run_tensor
        return run_tensor(doc, got, env), []
    if doc.level in ("tile", "block"):
        return got, run_level(doc, got, env, watch)
    from .executable import NumpyExecutable
    exe = NumpyExecutable(doc)
    exe(exe.plan(env, got), got, 1)
    return got, []


def compare_outputs(doc, got: dict, want: dict, mags: dict) -> list:
    """D.compare of every output parameter of doc."""
    from ..analysis.bind import param_roles
    from .data import compare
    return [compare(n, got[n], want[n], mags[n]) for n, r in param_roles(doc).items()
            if r == "output"]


def culprit(doc, arrays: dict, env: dict, check: dict) -> str:
    """Where a diverging output element of a tile- or block-level doc was last written:
    `tstore in kernel k5 at softmax.py:13`; '' where that cannot be told."""
    if doc.level not in ("tile", "block") or "first" not in check:
        return ""
    _, changed = level_outputs(doc, arrays, env, (check["name"], check["first"]))
    if not changed:
        return f"no instruction of the {doc.level} level writes that element"
    grid, op = changed[-1]
    where = f" at {op.loc.file}:{op.loc.line}" if op.loc is not None else ""
    return f"last written by {op.name} in {grid.name} {grid.attrs.get('name', '?')}{where}"


MAX_DUMPS = 10000           # --dump-tensors files per run


def tensor_dumper(directory: str):
    """dump(op, array) for run_tensor: each value as DIR/NNNNN-OP-lineL.npy (NNNNN counts
    the values in the order computed). Names are made of the op's registered name and line
    number only; nothing else from the file reaches a path. Returns (dump, count())."""
    import io
    import os
    import re
    from ..errors import UsageError
    from ..ir.files import atomic_write
    if os.path.exists(directory) and not os.path.isdir(directory):
        raise UsageError(f"--dump-tensors {directory}: exists and is not a directory")
    os.makedirs(directory, exist_ok=True)
    seq = itertools.count()
    state = {"n": 0}

    def dump(op, arr) -> None:
        n = next(seq)
        state["n"] = n + 1
        if n >= MAX_DUMPS:
            return
        line = op.loc.line if op.loc is not None else 0
        name = f"{n:05d}-{re.sub(r'[^a-z0-9_]', '_', op.name.lower())}-line{int(line)}.npy"
        buf = io.BytesIO()
        np.save(buf, np.ascontiguousarray(arr), allow_pickle=False)
        atomic_write(os.path.join(directory, name), buf.getvalue())

    return dump, lambda: state["n"]
