"""Every op's definition, by name (OPS), and checking an op against its definition."""
from __future__ import annotations

from . import (debug_ops, mix_ops, module_ops, pro_ops, reg_ops, simt_ops, tensor_ops,
               tile_ops, tile_ops_more)
from .opdef import IDENT, INT_LIMIT, OpDef, check_fields, is_int, short, type_problem
from .types import RegType, ScalarType, TensorType, TileType

OPS: dict[str, OpDef] = {}
for _d in (tensor_ops.DEFS + tile_ops.DEFS + tile_ops_more.DEFS + pro_ops.DEFS + simt_ops.DEFS +
           reg_ops.DEFS + module_ops.DEFS + debug_ops.DEFS + mix_ops.DEFS):
    assert _d.name not in OPS, f"op {_d.name} defined twice"
    OPS[_d.name] = _d

_TYPES = {"tensor": TensorType, "tile": TileType, "scalar": ScalarType, "reg": RegType}


def check_op(op, where: str, err) -> bool:
    """Check op against its definition in context `where` ("tensor", "tile" or "module"):
    its name, operand, result and region counts and kinds, its attributes' grammar, then its
    own verifier. err(message) reports; returns whether the op is well formed (so that its
    regions and users may be looked at)."""
    d = OPS.get(op.name)
    if d is None or where not in d.where:
        what = {"tensor": "tensor-level op", "tile": "tile instruction",
                "module": "top-level op"}[where]
        err(f"unknown {what} {short(op.name)}")
        return False
    problem = _shape_problem(op, d) or check_fields(op.attrs, d.attrs) or \
        _offsets_problem(op.attrs) or _loc_problem(op.loc)
    if problem:
        err(f"{op.name} {problem}")
        return False
    if d.verify is not None:
        bad = []
        d.verify(op, lambda m: bad.append(m) or err(m))
        return not bad
    return True


OFFSETS = ("offsets", "out_offsets", "region_offsets")


def _offsets_problem(attrs: dict) -> str | None:
    """Offsets into a tensor or a tile are never negative where they are plain ints (an
    expression's value is checked where it is bound)."""
    for key in OFFSETS:
        bad = [o for o in attrs.get(key, ()) if is_int(o) and o < 0]
        if bad:
            return f"{key} holds the negative offset {bad[0]}"
    return None


def _loc_problem(loc) -> str | None:
    if loc is None or isinstance(loc.file, str) and is_int(loc.line) and \
            0 <= loc.line <= INT_LIMIT:
        return None
    return f"has a bad source location ({short(loc.file)}, line {short(loc.line)})"


def _shape_problem(op, d: OpDef) -> str | None:
    lo, hi = d.operand_range()
    if not lo <= len(op.operands) <= hi:
        n = str(lo) if lo == hi else f"{lo} to {hi}" if hi != float("inf") else f"{lo} or more"
        return f"takes {n} operands, not {len(op.operands)}"
    for i, v in enumerate(op.operands):
        kind = d.operand_kind(i)
        if kind != "any" and not isinstance(v.type, _TYPES[kind]):
            return f"operand {i} must be a {kind}, not {v.type}"
    if len(op.results) != len(d.results):
        return f"has {len(d.results)} results, not {len(op.results)}"
    for i, (r, kind) in enumerate(zip(op.results, d.results)):
        if not isinstance(r.type, _TYPES[kind]):
            return f"result {i} must be a {kind}, not {r.type}"
        if r.name is not None and not (isinstance(r.name, str) and IDENT.match(r.name)):
            return f"result {i} is named {short(r.name)}, not a name (letters, digits, _)"
        bad = type_problem(r.type)
        if bad:
            return f"result {i} {bad}"
    if len(op.regions) != d.regions:
        return f"has {d.regions} regions, not {len(op.regions)}"
    return None


def pipe_of(op) -> str:
    """The pipe a tile instruction runs on (from its definition; some depend on spaces)."""
    rule = OPS[op.name].pipe
    return rule(op) if callable(rule) else rule


def dests(op) -> list:
    """The tiles a tile instruction writes (an instruction with fewer operands than its
    definition's write positions, a Reg one with optional operands, writes none there)."""
    pos = OPS[op.name].writes
    return [op.operands[i] for i in pos
            if i < len(op.operands) and isinstance(op.operands[i].type, TileType)]


def sources(op) -> list:
    """The tiles a tile instruction reads."""
    d = OPS[op.name]
    written = set(d.writes) - set(d.reads_dest)
    return [v for i, v in enumerate(op.operands)
            if i not in written and isinstance(v.type, TileType)]


def numpy_call(op) -> tuple:
    """(npkern function, leading arguments, attributes) of a tile instruction: the numpy
    backend runs `npkern.<function>(*lead, *operands, **attributes)` (libpypto/runtime/
    npexec.py) and prints the same call (libpypto/codegen/numpy_backend.py)."""
    fn = OPS[op.name].impl["numpy"]
    attrs = {k: v for k, v in op.attrs.items() if k != "pipe"}
    return fn, ((op.name[1:],) if fn == "telementwise" else ()), attrs
