"""make-exec: turn block subgraphs into programs and tasks (the Execute Graph).

Isomorphic blocks share one program (MPMD: few programs, many tasks): a program's tensors
and symbolic sizes are formal parameters (`arg` ops, scalars s0, s1, ...), and each `task`
op binds them for one block, with its grid. Tasks also record the GM box every instance reads
and writes (as expressions of the grid variables) so that a runtime can order instances of
different tasks by the data they share.
"""
from __future__ import annotations

from ..ir import expr as E
from ..ir.core import Document, Op, Value, clone_ops, copy_doc
from ..ir.text import print_doc
from ..ir.types import TensorType


def make_exec(doc: Document, *, target) -> Document:
    """Deduplicate isomorphic blocks into programs; one task per block with its footprints."""
    doc = copy_doc(doc)
    programs: dict[str, Op] = {}
    rest = [op for op in doc.body if op.name in ("source", "gm")]
    body = _region([op for op in doc.body if op.name not in ("source", "gm")], programs)
    doc.body = rest + list(programs.values()) + body
    return doc


def _region(ops: list, programs: dict) -> list:
    out, accesses = [], []
    for op in ops:
        if op.name != "block":
            op.regions = [_region(r, programs) for r in op.regions]
            out.append(op)
            continue
        prog, tensors, scalars = _program(op)
        key = _canonical(prog)
        if key not in programs:
            prog.attrs["name"] = f"p{len(programs)}"
            programs[key] = prog
        prog = programs[key]
        reads, writes = _footprints(op, tensors)
        attrs = {"program": prog.attrs["name"], "block": op.attrs["name"],
                 "grid": op.attrs["grid"], "scalars": scalars, "reads": reads,
                 "writes": writes, "ops": op.attrs.get("ops", [])}
        if op.attrs.get("labels"):
            attrs["labels"] = list(op.attrs["labels"])
        task = Op("task", tensors, [], attrs, [], op.loc)
        out.append(task)
        accesses.append((task, {tensors[t] for t, *_ in reads}, {tensors[t] for t, *_ in writes}))
    # informational: earlier tasks of this region that must (partly) precede each task
    for j, (tj, rj, wj) in enumerate(accesses):
        tj.attrs["after"] = [i for i in range(j)
                             if (accesses[i][2] & (rj | wj)) or (wj & accesses[i][1])]
    return out


def _program(blk: Op) -> tuple[Op, list, list]:
    """The block's body as a program over formal tensors and scalars, plus the actuals."""
    body = blk.regions[0]
    tensors: list[Value] = []
    for top in body:
        for op in top.walk():
            for v in op.operands:
                if isinstance(v.type, TensorType) and v not in tensors:
                    tensors.append(v)
    bound = {f"g{i}" for i in range(len(blk.attrs["grid"]))}
    for top in body:
        for op in top.walk():
            if op.name == "for":
                bound.add(op.attrs["var"])
    syms: list[str] = []
    for top in body:
        for op in top.walk():
            _symbols(op.attrs, bound, syms)
    for t in tensors:
        for d in t.type.shape:
            _symbols(d, bound, syms)
    ren = {s: E.sym(f"s{i}") for i, s in enumerate(syms)}
    vmap: dict = {}
    args = []
    for i, t in enumerate(tensors):
        a = Value(TensorType(t.type.dtype, tuple(E.substitute(d, ren) for d in t.type.shape)),
                  f"a{i}")
        vmap[t] = a
        args.append(Op("arg", [], [a], {"index": i}, [], None))
    new_body = clone_ops(body, vmap)
    for top in new_body:
        for op in top.walk():
            op.attrs = E.substitute_attrs(op.attrs, ren)
    attrs = {"core": blk.attrs["core"], "scalars": [f"s{i}" for i in range(len(syms))],
             "grid_rank": len(blk.attrs["grid"]), "buffers": blk.attrs.get("buffers", {}),
             "ops": blk.attrs.get("ops", [])}
    attrs.update({k: blk.attrs[k] for k in ("sync", "nbuffer", "merge") if k in blk.attrs})
    prog = Op("program", [], [], attrs, [args + new_body], blk.loc)
    return prog, tensors, [E.sym(s) for s in syms]


def _symbols(a, bound: set, out: list) -> None:
    if isinstance(a, dict):
        for k in sorted(a):
            _symbols(a[k], bound, out)
    elif isinstance(a, list):
        for v in a:
            _symbols(v, bound, out)
    elif isinstance(a, E.Expr):
        for s in sorted(E.free_symbols(a)):
            if s not in bound and s not in out:
                out.append(s)


def _canonical(prog: Op) -> str:
    """Text of a program without its name and source locations: equal text, same program."""
    body = clone_ops(prog.regions[0], {})
    for top in body:
        for op in top.walk():
            op.loc = None
    tmp = Op(prog.name, [], [], {k: v for k, v in prog.attrs.items() if k not in ("name", "ops")},
             [body], None)
    return print_doc(Document("exec", [tmp]))


def _footprints(blk: Op, tensors: list) -> tuple[list, list]:
    """[tensor index, lo, hi] boxes of every load and store, loop variables at their extremes
    (an `if` on `var < e` or `e <= var` narrows var's range in its first arm; a ring slot
    `x % n` spans 0 .. n - 1: mix-fuse's guards and workspace rings)."""
    reads, writes = [], []

    def visit(ops, loops):
        for op in ops:
            if op.name == "for":
                visit(op.regions[0], loops + [op.attrs])
                continue
            if op.name == "if":
                visit(op.regions[0], _narrowed(loops, op.attrs["cond"]))
                visit(op.regions[1], loops)
                continue
            if op.name in ("tload", "tstore"):
                lo_env = {lp["var"]: lp["start"] for lp in loops}
                hi_env = {lp["var"]: E.sub(lp["stop"], 1) for lp in loops}
                offs, valid = op.attrs["offsets"], op.attrs["valid"]
                lo = [E.substitute(_slots(o, False), lo_env) for o in offs]
                hi = [E.substitute(E.add(_slots(o, True), E.maximum(v, 0)), hi_env)
                      for o, v in zip(offs, valid)]
                entry = [tensors.index(op.operands[1]), lo, hi]
                (reads if op.name == "tload" else writes).append(entry)
            elif op.name == "tgather":
                reads.append(_region_box(tensors.index(op.operands[1]), op.attrs))
            elif op.name == "tscatter":
                a = op.attrs
                out_box = _region_box(tensors.index(op.operands[0]), a["out_region"])
                writes.append(out_box)
                reads.append(out_box)
                reads.append(_region_box(tensors.index(op.operands[1]), a["index_region"]))
                if len(op.operands) > 2:
                    reads.append(_region_box(tensors.index(op.operands[2]), a["src_region"]))
            for r in op.regions:
                visit(r, loops)

    visit(blk.regions[0], [])
    return _unique(reads), _unique(writes)


def _narrowed(loops: list, cond) -> list:
    """The loops' ranges under an `if` whose condition bounds one loop variable."""
    if isinstance(cond, E.Expr) and cond.op == "and":
        for c in cond.args:
            loops = _narrowed(loops, c)
        return loops
    if not isinstance(cond, E.Expr) or cond.op not in ("lt", "le"):
        return loops
    a, b = cond.args
    out = []
    for lp in loops:
        v = E.sym(lp["var"])
        if cond.op == "lt" and a == v:
            lp = {**lp, "stop": E.minimum(lp["stop"], b)}
        elif cond.op == "le" and b == v:
            lp = {**lp, "start": E.maximum(lp["start"], a)}
        out.append(lp)
    return out


def _slots(o, high: bool):
    """An offset with each ring slot `x % n` (n an int) at its lowest (0) or highest value."""
    if not isinstance(o, E.Expr):
        return o
    if o.op == "mod" and isinstance(o.args[1], int) and o.args[1] > 0:
        return o.args[1] - 1 if high else 0
    if o.op in ("add", "mul"):
        parts = [_slots(x, high) for x in o.args]
        return E.add(*parts) if o.op == "add" else E.mul(*parts)
    return o


def _region_box(tensor: int, a: dict) -> list:
    offs = a["region_offsets"]
    return [tensor, list(offs), [E.add(o, s) for o, s in zip(offs, a["region_shape"])]]


def _unique(items: list) -> list:
    out = []
    for it in items:
        if it not in out:
            out.append(it)
    return out
