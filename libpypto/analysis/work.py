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
    """GM bytes moved and FLOPs done by a launch (full tiles, loops at their trip counts)."""
    formal = formal_scalars(prog, scalars)
    n = len(scalars)

    def walk(ops, mult: int) -> tuple[int, int]:
        b = f = 0
        for op in ops:
            if op.name == "for":
                bb, ff = walk(op.regions[0], mult * trip_count(op.attrs, formal))
                b, f = b + bb, f + ff
            elif op.name in ("tload", "tstore"):
                b += mult * op.operands[0].type.nbytes
            elif op.name == "tmatmul":
                _, a_t, b_t = (v.type for v in op.operands)
                f += mult * 2 * a_t.shape[0] * a_t.shape[1] * b_t.shape[1]
            elif op.attrs.get("pipe") == "V" and op.operands:
                t0 = op.operands[0].type
                f += mult * (t0.nbytes // t0.dtype.itemsize)
        return b, f

    b, f = walk(prog.regions[0], 1)
    return b * n, f * n
