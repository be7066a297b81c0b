"""Programs run on numpy by walking their instructions: the numpy backend executes no text.

Each instruction calls the npkern function its definition names (libpypto/ir/tile_ops.py),
with its tiles and its attributes, the symbolic ones evaluated for the instance at hand:

    npkern.<impl>(*operands, **attrs)          telementwise: (name, *operands, **attrs)

The numpy backend's source (codegen/numpy_backend.py) prints exactly these calls for people
to read; it is never run, so a code-level file cannot make pypto-run execute anything.
"""
from __future__ import annotations

import numpy as np

from ..ir import expr as E
from ..ir.defs import OPS, numpy_call
from . import npkern


def _value(v, env: dict):
    """An attribute's value with its symbolic parts evaluated under env."""
    if isinstance(v, E.Expr):
        return int(E.evaluate(v, env))
    if isinstance(v, list):
        return tuple(_value(x, env) for x in v)
    if isinstance(v, dict):
        return {k: _value(x, env) for k, x in v.items()}
    return v


def instruction_calls(region) -> dict:
    """id(op) -> its npkern call (numpy_call) for every tile instruction under region's ops."""
    return {id(op): numpy_call(op) for top in region for op in top.walk()
            if op.name in OPS and OPS[op.name].pipe is not None}


class ProgramRunner:
    """One exec-level program, run for one instance at a time: T holds the task's tensor
    arrays in arg order, S its grid indices then the program's scalars."""

    def __init__(self, prog):
        self.prog = prog
        self.names = [f"g{i}" for i in range(prog.attrs["grid_rank"])] + \
            list(prog.attrs["scalars"])
        self.args = {op.result: op.attrs["index"] for op in prog.regions[0] if op.name == "arg"}
        self.calls = instruction_calls(prog.regions[0])

    def __call__(self, T: list, S: list) -> None:
        env = dict(zip(self.names, (int(x) for x in S)))
        vals = {v: T[i] for v, i in self.args.items()}
        self.run(self.prog.regions[0], env, vals)

    def run(self, ops, env: dict, vals: dict) -> None:
        for op in ops:
            n = op.name
            if n == "arg":
                continue
            if n == "tile":
                t = op.result.type
                vals[op.result] = np.empty(t.shape, t.dtype.np)
            elif n == "for":
                a = op.attrs
                for i in range(*(int(E.evaluate(a[k], env)) for k in ("start", "stop", "step"))):
                    self.run(op.regions[0], {**env, a["var"]: i}, vals)
            elif n == "if":           # a branch of a mixed program (mix-fuse)
                self.run(op.regions[0 if E.evaluate(op.attrs["cond"], env) else 1], env, vals)
            else:
                fn, lead, attrs = self.calls[id(op)]
                args = [vals[v] for v in op.operands]
                if n == "tscatter" and len(args) == 2:
                    args.append(None)
                getattr(npkern, fn)(*lead, *args, **_value(attrs, env))
