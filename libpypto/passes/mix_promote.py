"""Running state of a mixed program kept in the vector cores' UB (mix-fuse).

Flash attention's running max, sum and output (the local tensors row_max, row_sum, acc)
are loaded and stored back every step, each vector core its own rows. A tensor that only
the vector phases of the loop touch, always at one box (the same offsets, valid extents and
tile every step: free of the loop variable) and with no other tensor sharing its bytes,
instead lives in a UB tile of each vector core for the whole loop ("promoted"): loaded once
before the loop, each load in the loop a copy (tmov) from that tile, each store a copy into
it, and stored back after the loop when anything else reads the tensor (a parameter, or a
tensor used outside the loop). A loop-carried tensor the cube writes once (acc = P V in the
first step) first has that store redirected: the cube stores into a new workspace, and the
next vector phase, under the same branch conditions, copies it into the tensor, which is
then the vector cores' alone.
"""
from __future__ import annotations

from ..ir import expr as E
from ..ir.core import Op, Value
from .footprint import access_key, grid_key
from .mix_phases import accesses


def redirect(plan, gms: dict) -> list:
    """Redirect cube stores of tensors the vector phases also use (see the module doc); the
    new workspace gm ops, to add to the document."""
    ph, made = plan.phases, []
    for k in range(len(ph) - 1):
        if ph[k].core != "cube" or ph[k + 1].core != "vector":
            continue
        vec = {v: op for p in ph if p.core == "vector" for v, _, op in accesses(p.items)}
        for store, path in _stores(ph[k].items, ()):
            t = store.operands[1]
            if t not in vec or gms[t].attrs.get("workspace") or \
                    any(t is v for p in ph if p.core == "cube" for v, m, op in accesses(p.items)
                        if op is not store):
                continue
            w = Value(t.type, f"{t.name}_c")
            made.append(Op("gm", [], [w], {"workspace": True}, [], gms[t].loc))
            store.operands = [store.operands[0], w]
            like = vec[t]
            tile = Op("tile", [], [Value(like.operands[0].type)], {}, [], store.loc)
            box = {k2: like.attrs[k2] for k2 in ("offsets", "valid")}
            copy = [tile, Op("tload", [tile.result, w], [], {**box, "pipe": "MTE2"}, [],
                             store.loc),
                    Op("tstore", [tile.result, t], [], {**box, "pipe": "MTE3"}, [],
                       store.loc)]
            for cond, arm in reversed(path):
                copy = [Op("if", [], [], {"cond": cond}, [copy, []] if arm == 0 else
                           [[], copy], store.loc)]
            ph[k + 1].items[:0] = copy
    return made


def _stores(items: list, path: tuple):
    """(tstore, [(if condition, arm), ...] above it) of every store under items."""
    for op in items:
        if op.name == "tstore":
            yield op, path
        elif op.name == "if":
            for arm, region in enumerate(op.regions):
                yield from _stores(region, path + ((op.attrs["cond"], arm),))


def promotable(plan, gms: dict) -> dict:
    """tensor -> an access of it (its box and tile) for every tensor the module doc keeps in
    UB."""
    ph, var = plan.phases, plan.var
    by_t: dict = {}
    for p in ph:
        for v, mode, op in accesses(p.items):
            by_t.setdefault(v, []).append((p.core, mode, op))
    grid = grid_key(plan.vgrid)
    out = {}
    for t, accs in by_t.items():
        ops = [op for _, _, op in accs]
        if gms[t].attrs.get("workspace") or any(c != "vector" for c, _, _ in accs) or \
                not any(m == "r" for _, m, _ in accs) or t in plan.slots:
            continue
        keys = {access_key(op, grid) for op in ops}
        types = {op.operands[0].type for op in ops}
        free = set()
        for op in ops:
            for e in op.attrs["offsets"] + op.attrs["valid"]:
                free |= E.free_symbols(e) if isinstance(e, E.Expr) else set()
        if len(keys) == 1 and len(types) == 1 and var not in free and \
                next(iter(types)).dtype == t.type.dtype:
            out[t] = ops[0]
    return out


def promote(items: list, tiles: dict) -> None:
    """Loads and stores of promoted tensors under items as copies from and into their
    tiles (tensor -> this vector core's tile)."""
    for top in items:
        for op in top.walk():
            if op.name in ("tload", "tstore") and op.operands[1] in tiles:
                tile = tiles[op.operands[1]]
                x = op.operands[0]
                op.operands = [x, tile] if op.name == "tload" else [tile, x]
                op.name, op.attrs = "tmov", {"pipe": "V"}
