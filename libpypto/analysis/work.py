"""Work of a task launch: the GM bytes it moves and the FLOPs it does (full tiles)."""
from __future__ import annotations

import numpy as np

from ..ir import expr as E
from ..ir.core import Op


def formal_scalars(prog: Op, scalars) -> dict:
    """Program scalar values of a launch, from the first row of its S matrix."""
    g = prog.attrs["grid_rank"]
    row = scalars[0] if len(scalars) else []
    return {s: int(row[g + i]) for i, s in enumerate(prog.attrs["scalars"])} if len(row) else {}


def trip_count(loop_attrs: dict, env: dict) -> int:
    """Iterations of a `for` region under env (raises E.UnboundSymbol when unknown)."""
    a = loop_attrs
    span = E.evaluate(a["stop"], env) - E.evaluate(a["start"], env)
    trips = -(-span // E.evaluate(a["step"], env))
    return max(0, trips) if isinstance(trips, int) else trips


def task_work(prog: Op, scalars) -> tuple[int, int]:
    """GM bytes moved and FLOPs done by a launch (full tiles, loops at their trip counts:
    per instance where a trip count depends on the grid index, as a merged block's loop
    over its instances does; a branch counts the arm its condition takes where the
    program's scalars, grid index and loop variables decide it, else the larger arm)."""
    formal = formal_scalars(prog, scalars)
    n = len(scalars)
    env = dict(formal)
    if n:
        rows = np.asarray(scalars)
        env.update({f"g{d}": rows[:, d].astype(np.int64) for d in range(prog.attrs["grid_rank"])})
    b, f = _walk(prog.regions[0], 1, env)
    return tuple(int(np.sum(x)) if not isinstance(x, int) else x * n for x in (b, f))


ITERATE = 1 << 12          # loops with a branch inside are walked iteration by iteration up to
#                            this many iterations (the branch may depend on the variable)


def _walk(ops, mult, env: dict) -> tuple:
    """(bytes, flops) of ops run mult times; each an int, or an array per instance."""
    b = f = 0
    for op in ops:
        bb = ff = 0
        if op.name == "for":
            bb, ff = _loop(op, mult, env)
        elif op.name == "if":
            bb, ff = _branch(op, mult, env)
        elif op.name in ("tload", "tstore"):
            bb = mult * op.operands[0].type.nbytes
        elif op.name == "tmatmul":
            _, a_t, b_t = (v.type for v in op.operands[:3])
            ff = mult * 2 * a_t.shape[0] * a_t.shape[1] * b_t.shape[1]
        elif op.attrs.get("pipe") == "V" and op.operands:
            t0 = op.operands[0].type
            ff = mult * (t0.nbytes // t0.dtype.itemsize)
        b, f = b + bb, f + ff
    return b, f


def _branch(op, mult, env: dict) -> tuple:
    try:
        cond = E.evaluate(op.attrs["cond"], env)
    except E.UnboundSymbol:
        (b0, f0), (b1, f1) = (_walk(r, mult, env) for r in op.regions)
        return _larger(b0, b1), _larger(f0, f1)
    if isinstance(cond, np.ndarray):             # per instance
        (b0, f0), (b1, f1) = (_walk(r, mult, env) for r in op.regions)
        return np.where(cond != 0, b0, b1), np.where(cond != 0, f0, f1)
    return _walk(op.regions[0 if cond else 1], mult, env)


def _larger(x, y):
    return max(x, y) if isinstance(x, int) and isinstance(y, int) else np.maximum(x, y)


def _loop(op, mult, env: dict) -> tuple:
    a = op.attrs
    count = trip_count(a, env)
    if not isinstance(count, int):               # per instance
        return _walk(op.regions[0], mult * np.maximum(count, 0), env)
    branchy = any(x.name == "if" for top in op.regions[0] for x in top.walk())
    if not branchy or count > ITERATE:
        return _walk(op.regions[0], mult * count, env)
    b = f = 0
    start, step = E.evaluate(a["start"], env), E.evaluate(a["step"], env)
    for i in range(count):
        bb, ff = _walk(op.regions[0], mult, {**env, a["var"]: start + i * step})
        b, f = b + bb, f + ff
    return b, f
