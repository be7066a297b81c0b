"""Every GM box a program touches lies inside its tensor, for every instance a run launches.

The tasks of a document declare what their instances read and write (the runtime orders
instances by those boxes), but the native code does what the programs say: a hand-edited
program whose tload reaches past its tensor would read or write outside the array. So
before anything runs, each program's accesses are evaluated for the instances of every
launch (vectorised over the instances, loop variables of the program stepped through their
ranges), and a box outside its tensor, or a valid extent larger than its tile, is refused
with the program line that makes it.
"""
from __future__ import annotations

import numpy as np

from ..errors import InputError
from ..ir import expr as E
from .limits import require


def check_accesses(exp) -> None:
    """Raise InputError where a launched instance would touch GM outside a tensor."""
    progs = {p.attrs["name"]: p for p in exp.programs}
    shape_of = {op.result: exp.shapes[op] for op in exp.gms}
    for lc in exp.launches:
        task = exp.tasks[lc.task]
        prog = progs.get(task.attrs["program"])
        if prog is None or lc.n == 0:
            continue
        args = {op.result: shape_of.get(task.operands[op.attrs["index"]])
                for op in prog.regions[0] if op.name == "arg"}
        rank = int(prog.attrs.get("grid_rank", len(task.attrs["grid"])))
        env = {**exp.env, **{f"g{d}": lc.scalars[:, d] for d in range(rank)},
               **{name: lc.scalars[:, rank + k]
                  for k, name in enumerate(prog.attrs.get("scalars", []))}}
        _Checker(args, lc.n).ops(prog.regions[0], env, np.ones(lc.n, bool))


class _Checker:
    def __init__(self, args: dict, n: int):
        self.args, self.n, self.steps = args, n, 0

    def ev(self, e, env) -> np.ndarray:
        v = E.evaluate(e, env)
        return np.broadcast_to(np.asarray(v, dtype=np.int64), (self.n,))

    def ops(self, ops, env, live) -> None:
        for op in ops:
            if op.name == "for":
                self.loop(op, env, live)
            elif op.name in ("tload", "tstore"):
                self.box(op, op.operands[1], op.attrs["offsets"], op.attrs["valid"], env, live,
                         tile=op.operands[0].type.shape)
            elif op.name in ("tgather", "tscatter"):
                self.regions(op, env, live)
            elif op.name == "if":           # a mixed program's guards (mix-fuse)
                taken = self.ev(op.attrs["cond"], env) != 0
                self.ops(op.regions[0], env, live & taken)
                self.ops(op.regions[1], env, live & ~taken)
            else:
                for r in op.regions:
                    self.ops(r, env, live)

    def loop(self, op, env, live) -> None:
        a = op.attrs
        start, stop, step = (self.ev(a[k], env) for k in ("start", "stop", "step"))
        if not live.any():
            return
        first, last = int(start[live].min()), int(stop[live].max())
        by = max(1, int(step[live].min()))
        require("INSTANCES", self.steps + self.n * len(range(first, last, by)),
                "program loop steps checked for their accesses")
        for i in range(first, last, by):
            self.steps += self.n
            inside = live & (i >= start) & (i < stop) & ((i - start) % np.maximum(step, 1) == 0)
            if inside.any():
                self.ops(op.regions[0], {**env, a["var"]: np.full(self.n, i, np.int64)}, inside)

    def regions(self, op, env, live) -> None:
        a = op.attrs
        for key, idx in (("out_region", 0), ("index_region", 1), ("src_region", 2),
                         (None, 1)):
            region = a if key is None else a.get(key)
            if region is None or "region_offsets" not in region or idx >= len(op.operands):
                continue
            if key is None and op.name != "tgather":
                continue
            self.box(op, op.operands[idx], region["region_offsets"], region["region_shape"],
                     env, live)

    def box(self, op, gm, offsets, extents, env, live, tile=None) -> None:
        shape = self.args.get(gm)
        if shape is None:
            return
        for d, (o, x) in enumerate(zip(offsets, extents)):
            lo, ext = self.ev(o, env), np.maximum(self.ev(x, env), 0)
            bad = live & (ext > 0) & ((lo < 0) | (lo + ext > shape[d]))
            if tile is not None and len(tile) == len(offsets) and isinstance(tile[d], int):
                bad |= live & (ext > tile[d])
            if bad.any():
                j = int(np.argmax(bad))
                raise InputError(f"{op.name} touches [{lo[j]}:{lo[j] + ext[j]}] in dim {d} of "
                                 f"a tensor of shape {list(shape)}"
                                 + (f" through a tile of {list(tile)}" if tile else "")
                                 + ": outside the tensor or the tile", op.loc)
