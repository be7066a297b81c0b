"""Work of a task launch: the GM bytes it moves and the FLOPs it does (full tiles)."""
from __future__ import annotations

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
    return max(0, -(-span // E.evaluate(a["step"], env)))


def task_work(prog: Op, scalars) -> tuple[int, int]:
    """GM bytes moved and FLOPs done by a launch (full tiles, loops at their trip counts;
    a branch counts the arm its condition takes where the program's scalars and loop
    variables decide it, else the larger arm)."""
    formal = formal_scalars(prog, scalars)
    n = len(scalars)
    b, f = _walk(prog.regions[0], 1, formal)
    return b * n, f * n


ITERATE = 1 << 12          # loops with a branch inside are walked iteration by iteration up to
#                            this many iterations (the branch may depend on the variable)


def _walk(ops, mult: int, env: dict) -> tuple[int, int]:
    b = f = 0
    for op in ops:
        bb = ff = 0
        if op.name == "for":
            bb, ff = _loop(op, mult, env)
        elif op.name == "if":
            try:
                arms = [op.regions[0 if E.evaluate(op.attrs["cond"], env) else 1]]
            except E.UnboundSymbol:
                arms = op.regions
            bb, ff = max(_walk(r, mult, env) for r in arms)
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


def _loop(op, mult: int, env: dict) -> tuple[int, int]:
    a = op.attrs
    count = trip_count(a, env)
    branchy = any(x.name == "if" for top in op.regions[0] for x in top.walk())
    if not branchy or count > ITERATE:
        return _walk(op.regions[0], mult * count, env)
    b = f = 0
    start, step = E.evaluate(a["start"], env), E.evaluate(a["step"], env)
    for i in range(count):
        bb, ff = _walk(op.regions[0], mult, {**env, a["var"]: start + i * step})
        b, f = b + bb, f + ff
    return b, f
