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
    trips = -(-span // E.evaluate(a["step"], env))
    return max(0, trips) if isinstance(trips, int) else trips


def task_work(prog: Op, scalars) -> tuple[int, int]:
    """GM bytes moved and FLOPs done by a launch (full tiles, loops at their trip counts:
    per instance where a trip count depends on the grid index, as a merged block's loop
    over its instances does)."""
    import numpy as np
    formal = formal_scalars(prog, scalars)
    n = len(scalars)
    env = dict(formal)
    if n:
        rows = np.asarray(scalars)
        env.update({f"g{d}": rows[:, d].astype(np.int64) for d in range(prog.attrs["grid_rank"])})

    def walk(ops, mult) -> tuple:
        b = f = 0
        for op in ops:
            if op.name == "for":
                trips = trip_count(op.attrs, env)
                if not isinstance(trips, int):
                    trips = np.maximum(trips, 0)
                bb, ff = walk(op.regions[0], mult * trips)
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
    return tuple(int(np.sum(x)) if not isinstance(x, int) else x * n for x in (b, f))
