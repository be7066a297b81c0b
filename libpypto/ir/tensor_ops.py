"""Definitions of the tensor-level ops (the Tensor Graph) with their type rules.

Implementation kinds of a tensor op:
  trace   the op-file function that emits it (libpypto.frontend.catalogue; "" where the
          tracer itself emits it: param, tensor, loop, if)
  tile    the tiling rule in libpypto.passes.tensor_to_tile (an _Expander method)
  interp  its numpy meaning in libpypto.runtime.interp (an _Interp method)
"""
from __future__ import annotations

from . import expr as E
from . import ops as O
from .opdef import (DTYPE, EXPR, EXPRS, INTS, NAT, Bool, Ex, Ident, Int, ListOf, Num, OpDef,
                    Str, Text, Tuple, attr, opt)
from .types import BOOL, DTYPES, I32, TensorType

# the dtype of index outputs (argmax, argmin, topk, sort, argsort): the reference's DT_INT32
INDEX = I32

TILE = opt(ListOf(Int(1)))
WORDS = ListOf(Int(0, 0xFFFFFFFF), 2)      # a uint64 as its (low, high) 32-bit words
UNTILED = ("param", "tensor", "view", "loop", "if", "reshape", "read")     # no tile shape of their own


def aligned_problem(tile: list, shape, dt, align: int = 32) -> str | None:
    """The alignment rule for tile shapes: the last dim of a tile is a multiple of `align`
    bytes unless the tile covers the whole (static) dim. One place for the frontend's
    trace-time check and the verifier's."""
    if not tile:
        return None
    last, full = tile[-1], shape[-1] if shape else None
    if last * dt.itemsize % align and not (isinstance(full, int) and last >= full):
        per = max(1, align // dt.itemsize)
        return (f"tile shape {tuple(tile)} is not {align}-byte aligned in dim {len(tile) - 1} "
                f"({last} x {dt.itemsize} B = {last * dt.itemsize} B); use a multiple of {per} "
                f"elements for {dt}")
    return None


# -- helpers for type rules -------------------------------------------------------------------

def _t(v):
    return v.type if isinstance(v.type, TensorType) else None


def broadcast(shapes: list) -> list | None:
    """Right-aligned broadcast of shapes (dims equal or 1), None if they do not broadcast."""
    n = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(n):
        dim = 1
        for s in shapes:
            j = i - (n - len(s))
            if j < 0 or s[j] == 1:
                continue
            if dim == 1:
                dim = s[j]
            elif dim != s[j]:
                return None
        out.append(dim)
    return out


def expect(op, err, types: list) -> None:
    """Report results whose types differ from the rule's."""
    for i, (r, want) in enumerate(zip(op.results, types)):
        if r.type != want:
            err(f"{op.name} result {i} is {r.type}, its operands make it {want}")


def _dims_ok(op, err, rank: int, key: str = "dims") -> bool:
    dims = op.attrs[key] if key == "dims" else [op.attrs[key]]
    if not dims or any(not 0 <= d < rank for d in dims):
        err(f"{op.name} {key} {op.attrs[key]} must be in [0, {rank})")
        return False
    return True


def _tile_ok(op, err, shape, dt) -> None:
    tile = op.attrs.get("tile")
    if tile is None:
        if op.name not in UNTILED + ("assemble",):
            err(f"{op.name} has no tile shape")
        return
    if len(tile) != len(shape):
        err(f"tile shape {tuple(tile)} has rank {len(tile)} but the operand has rank "
            f"{len(shape)}")
        return
    p = aligned_problem(tile, shape, dt)
    if p:
        err(p)


# -- type rules -------------------------------------------------------------------------------

def v_elementwise(op, err) -> None:
    d = O.ELEMENTWISE[op.name] if op.name != "cast" else None
    ts = [_t(v) for v in op.operands]
    scalar = "scalar" in op.attrs
    arity = d.arity if d else 1
    if len(ts) != arity - (1 if scalar else 0) or None in ts:
        err(f"{op.name} takes {arity} tensor operand(s)" + (" with its scalar" if scalar else ""))
        return
    data = ts[1:] if op.name == "where" else ts
    if len({t.dtype for t in data}) > 1:
        err(f"{op.name}: dtype mismatch {' vs '.join(str(t.dtype) for t in data)}")
        return
    dt = data[0].dtype
    if d and dt.kind not in d.kinds:
        err(f"{op.name} takes {' or '.join(d.kinds)} tensors, not {dt}")
    shape = broadcast([t.shape for t in ts])
    if shape is None:
        err(f"{op.name}: shapes {' and '.join(str(t) for t in ts)} do not broadcast")
        return
    out = DTYPES[op.attrs["dtype"]] if op.name == "cast" else (BOOL if d.out == "bool" else dt)
    expect(op, err, [TensorType(out, tuple(shape))])
    small = dt if op.name != "cast" or dt.itemsize <= out.itemsize else out
    _tile_ok(op, err, ts[0].shape if len(ts[0].shape) == len(shape) else shape, small)


def v_reduce(op, err) -> None:
    x = op.operands[0].type
    if not _dims_ok(op, err, x.rank):
        return
    dims, keep = op.attrs["dims"], op.attrs["keepdim"]
    shape = [1 if i in dims else s for i, s in enumerate(x.shape)]
    if not keep:
        shape = [s for i, s in enumerate(shape) if i not in dims]
    dt = INDEX if op.name in ("argmax", "argmin") else x.dtype
    expect(op, err, [TensorType(dt, tuple(shape))])
    _tile_ok(op, err, x.shape, x.dtype)


def v_scan(op, err) -> None:
    x = op.operands[0].type
    if _dims_ok(op, err, x.rank, "dim"):
        expect(op, err, [x])
        _tile_ok(op, err, x.shape, x.dtype)


def v_sort(op, err) -> None:
    x = op.operands[0].type
    if not _dims_ok(op, err, x.rank, "dim"):
        return
    k = op.attrs.get("k", x.shape[-1]) if op.name == "topk" else x.shape[-1]
    shape = tuple(x.shape[:-1]) + (k,)
    want = [TensorType(INDEX, shape)] if op.name == "argsort" else \
        [TensorType(x.dtype, shape), TensorType(INDEX, shape)]
    if len(op.results) != len(want):
        err(f"{op.name} has {len(want)} results")
        return
    expect(op, err, want)
    _tile_ok(op, err, x.shape, x.dtype)


def v_matmul(op, err) -> None:
    a, b = (v.type for v in op.operands)
    if not (2 <= a.rank <= 4 and 2 <= b.rank <= 4):
        err(f"matmul takes 2-D to 4-D operands, got ranks {a.rank} and {b.rank}")
        return
    if a.dtype != b.dtype:
        err(f"matmul: operand dtypes differ ({a.dtype} vs {b.dtype})")
    at, bt = op.attrs.get("a_trans", False), op.attrs.get("b_trans", False)
    m, k = (a.shape[-1], a.shape[-2]) if at else (a.shape[-2], a.shape[-1])
    k2, n = (b.shape[-1], b.shape[-2]) if bt else (b.shape[-2], b.shape[-1])
    if k != k2:
        err(f"matmul: inner dims differ ({E.to_str(k)} vs {E.to_str(k2)})")
        return
    batch = broadcast([a.shape[:-2], b.shape[:-2]])
    if batch is None:
        err("matmul batch dims do not broadcast")
        return
    expect(op, err, [TensorType(DTYPES[op.attrs["out_dtype"]], tuple(batch) + (m, n))])


def v_view(op, err) -> None:
    x = op.operands[0].type
    a = op.attrs
    for key in ("offsets", "shape") + (("valid",) if "valid" in a else ()):
        if len(a[key]) != x.rank:
            err(f"view {key} needs {x.rank} entries")
            return
    expect(op, err, [TensorType(x.dtype, tuple(a["shape"]))])


def v_assemble(op, err) -> None:
    src, dst = (v.type for v in op.operands)
    if len(op.attrs["offsets"]) != dst.rank:
        err(f"assemble needs offsets = a list of {dst.rank} offsets")
    elif src.rank != dst.rank:
        err("assemble source and destination ranks differ")
    elif src.dtype != dst.dtype:
        err(f"assemble of {src.dtype} into {dst.dtype}")
    elif "tile" in op.attrs:
        _tile_ok(op, err, src.shape, src.dtype)


def v_reshape(op, err) -> None:
    x = op.operands[0].type
    shape = tuple(op.attrs["shape"])
    expect(op, err, [TensorType(x.dtype, shape)])
    n_in, n_out = E.mul(*x.shape) if x.shape else 1, E.mul(*shape) if shape else 1
    if isinstance(n_in, int) and isinstance(n_out, int) and n_in != n_out:
        err(f"reshape of {n_in} elements into {n_out}")


def v_bitcast(op, err) -> None:
    """pack / unpack: the bytes of each row (last dim, static) as another dtype; the other
    dims are kept; a tile of the result covers whole source elements."""
    x, t = op.operands[0].type, op.results[0].type
    if x.rank < 1 or t.rank != x.rank or tuple(x.shape[:-1]) != tuple(t.shape[:-1]) or \
            not isinstance(x.shape[-1], int) or not isinstance(t.shape[-1], int) or \
            x.shape[-1] * x.dtype.itemsize != t.shape[-1] * t.dtype.itemsize or \
            BOOL in (x.dtype, t.dtype):
        err(f"bitcast of {x} into {t}: not the same bytes per row of numeric tensors")
    tile = op.attrs["tile"]
    if len(tile) != t.rank or tile[-1] * t.dtype.itemsize % x.dtype.itemsize:
        err(f"bitcast tile {tile} must have rank {t.rank} and cover whole {x.dtype} elements")


def v_permute(op, err) -> None:
    x = op.operands[0].type
    perm = op.attrs["perm"]
    if sorted(perm) != list(range(x.rank)):
        err(f"permute needs perm = a permutation of the {x.rank} dims")
        return
    shape = tuple(x.shape[p] for p in perm)
    expect(op, err, [TensorType(x.dtype, shape)])
    _tile_ok(op, err, shape, x.dtype)


def v_same(op, err) -> None:
    """tril, triu: the operand's type."""
    x = op.operands[0].type
    expect(op, err, [x])
    _tile_ok(op, err, x.shape, x.dtype)


def v_index(op, err) -> None:
    x, idx = op.operands[0].type, op.operands[1].type
    if not _dims_ok(op, err, x.rank, "dim"):
        return
    if idx.dtype.kind != "int":
        err(f"{op.name} indices must be integers, not {idx.dtype}")
    d = op.attrs["dim"]
    if op.name == "gather":
        want = TensorType(x.dtype, idx.shape)
    elif op.name == "index_select":
        want = TensorType(x.dtype, x.shape[:d] + (idx.shape[0],) + x.shape[d + 1:])
    else:
        want = x
        if op.name == "scatter" and len(op.operands) < 3 and "value" not in op.attrs:
            err("scatter needs a source tensor or a value")
    expect(op, err, [want])


def v_created(op, err) -> None:
    """param, tensor, full, arange, copy: the result is what the op declares."""
    t = op.results[0].type
    if op.name == "copy":
        x = op.operands[0].type
        if broadcast([x.shape, t.shape]) != list(t.shape) or x.dtype != t.dtype:
            err(f"copy of {x} into {t}: not a broadcast")
            return
    if op.name == "arange" and t.rank != 1:
        err("arange makes a 1-D tensor")
    if op.name == "uniform" and (t.dtype.kind != "float" or
                                 not all(isinstance(d, int) for d in t.shape)):
        err(f"uniform makes a float tensor of static shape, not {t}")
    if op.name in ("full", "arange", "copy", "uniform"):
        _tile_ok(op, err, t.shape, t.dtype)


def v_bitonic(op, err) -> None:
    """One kernel of a sort longer than a tile (frontend/sorts.py): values and int32
    positions of a static last dim N (a power of two, padded past n), the same types out."""
    v, i = (x.type for x in op.operands)
    a = op.attrs
    n_all = v.shape[-1] if v.shape else None
    if not isinstance(n_all, int) or n_all & (n_all - 1) or i.shape != v.shape or \
            i.dtype != INDEX or a["n"] > n_all:
        err(f"bitonic of {v} and {i}: a power-of-two static last dim, int32 positions")
        return
    expect(op, err, [v, i])
    t = a["tile"][-1]
    if t & (t - 1) or n_all % t:
        err(f"bitonic tile {a['tile']} must split the last dim into powers of two")
    for s, d, flip in a.get("steps", []):
        if s > t or d >= s or (flip and 2 * d != s):
            err(f"bitonic step {[s, d, flip]} is not one of a {t}-element tile")
    if a["mode"] != "tile" and not t <= a["dist"] < n_all:
        err(f"bitonic {a['mode']} distance {a['dist']} must be at least the tile")
    _tile_ok(op, err, v.shape, v.dtype)


def v_probe(op, err) -> None:
    a = op.attrs
    sizes = {"text": len(a["texts"]), "expr": len(a["exprs"]), "tensor": len(op.operands),
             "name": len(a.get("names", []))}
    for kind, i in a["order"]:
        if i >= sizes[kind]:
            err(f"probe: {kind} {i} does not exist")
    if a["kind"] == "save" and (len(op.operands) != 1 or len(a["texts"]) != 1 or
                                len(a.get("names", [])) != len(a["exprs"])):
        err("a save probe has one tensor, one file name and a value per name")


# -- the definitions --------------------------------------------------------------------------

T, ST = "tensor", ("tensor",)
LABEL = opt(Text())
SCOPE = opt(Tuple(Int(0), Bool()))
LOOP = {"var": attr(Ident()), "start": attr(EXPR), "stop": attr(EXPR), "step": attr(EXPR),
        "name": opt(Text()), "unroll": opt(Int(1))}


def _d(name, operands, results, attrs, verify, trace=None, tile=None, interp=None, optional=0,
       where=ST, regions=0):
    impl = {"trace": name if trace is None else trace, "tile": tile or f"x_{name}",
            "interp": interp or f"op_{name}"}
    attrs = {**attrs, "label": LABEL,      # set_semantic_label's name for the op, if any
             "scope": SCOPE}               # sg_set_scope's [id, allow_cross_scope_merge]
    return OpDef(name, where, operands, optional, results, regions, attrs, verify, impl)


def _elementwise(d: O.Elementwise) -> OpDef:
    attrs = {"tile": TILE, "scalar": opt(Ex(num=True)), "scalar_side": opt(Str("lhs", "rhs"))}
    trace = "clone" if d.name == "copy" else d.name
    return _d(d.name, (T,) * d.arity, (T,), attrs, v_elementwise, trace=trace,
              tile="x_elementwise", interp="op_elementwise", optional=1 if d.arity == 2 else 0)


# cast: a rounding mode (runtime/cast.py; absent: the reference's default for the dtypes)
# and saturation
CAST = {"mode": opt(Str("rint", "round", "floor", "ceil", "trunc", "odd")), "sat": opt(Bool())}
REDUCE = {"dims": attr(INTS), "keepdim": attr(Bool()), "tile": TILE}
SCAN = {"dim": attr(NAT), "tile": TILE}

DEFS = [_elementwise(d) for d in O.ELEMENTWISE.values()] + [
    _d("cast", (T,), (T,), {"dtype": attr(DTYPE), "tile": TILE, **CAST}, v_elementwise,
       tile="x_elementwise", interp="op_elementwise"),
    _d("param", (), (T,), {"index": attr(NAT), "role": opt(Str("input", "output"))},
       v_created, trace=""),
    _d("tensor", (), (T,), {}, v_created),
    _d("view", (T,), (T,), {"offsets": attr(EXPRS), "shape": attr(EXPRS),
                            "valid": opt(EXPRS)}, v_view),
    _d("assemble", (T, T), (), {"offsets": attr(EXPRS), "tile": TILE}, v_assemble),
    _d("matmul", (T, T), (T,), {"out_dtype": attr(DTYPE), "a_trans": opt(Bool()),
                                "b_trans": opt(Bool()),
                                "cube": attr(ListOf(ListOf(Int(1), 2), 3))}, v_matmul),
    *[_d(n, (T,), (T,), REDUCE, v_reduce) for n in ("sum", "prod", "amax", "amin")],
    *[_d(n, (T,), (T,), REDUCE, v_reduce) for n in ("argmax", "argmin")],
    *[_d(n, (T,), (T,), SCAN, v_scan) for n in ("cumsum", "cumprod")],
    _d("topk", (T,), (T, T), {**SCAN, "k": attr(Int(1)), "largest": attr(Bool())}, v_sort),
    _d("sort", (T,), (T, T), {**SCAN, "descending": attr(Bool())}, v_sort),
    _d("argsort", (T,), (T,), {**SCAN, "descending": attr(Bool())}, v_sort),
    _d("reshape", (T,), (T,), {"shape": attr(EXPRS)}, v_reshape),
    _d("bitcast", (T,), (T,), {"tile": attr(ListOf(Int(1)))}, v_bitcast, trace="pack"),
    _d("permute", (T,), (T,), {"perm": attr(INTS), "tile": TILE}, v_permute),
    *[_d(n, (T,), (T,), {"diagonal": attr(Int()), "tile": TILE}, v_same)
      for n in ("tril", "triu")],
    _d("gather", (T, T), (T,), SCAN, v_index),
    _d("index_select", (T, T), (T,), SCAN, v_index),
    _d("scatter", (T, T, T), (T,), {**SCAN, "reduce": attr(Str("none", "add", "multiply")),
                                    "value": opt(Num())}, v_index, optional=1),
    _d("index_add", (T, T, T), (T,), {**SCAN, "alpha": attr(Num())}, v_index),
    _d("full", (), (T,), {"value": attr(Ex(num=True)), "tile": TILE}, v_created),
    _d("arange", (), (T,), {"start": attr(Ex(num=True)), "step": attr(Ex(num=True)),
                            "tile": TILE}, v_created),
    # Philox4x32 uniform [0, 1) floats (runtime/philox.py): the two 32-bit words of the key
    # and of the counter's upper 64 bits, the round count
    _d("uniform", (), (T,), {"key": attr(WORDS), "counter": attr(WORDS),
                             "rounds": attr(Int(1, 16)), "tile": TILE}, v_created),
    # a size check; why ends its error (default: "it would fall off the end")
    _d("check", (), (), {"cond": attr(EXPR), "what": attr(Text()), "why": opt(Text())}, None,
       trace="", where=("tensor", "module")),
    _d("loop", (), (), LOOP, None, trace="", where=("tensor", "module"), regions=1),
    # a data-dependent scalar: var = param[index...], read at run time (frontend: t[i, j] on
    # an integer input parameter); var is bound for the ops after it in its region
    _d("read", (), (), {"param": attr(Ident()), "index": attr(EXPRS), "var": attr(Ident())},
       None, trace="", where=("tensor", "module")),
    _d("if", (), (), {"cond": attr(EXPR)}, None, trace="", where=("tensor", "module", "tile"),
       regions=2),
    # a sort longer than a tile, one kernel of its bitonic network (frontend/sorts.py): mode
    # tile runs steps [block, distance, mirrored] inside each tile; pair compares the tiles
    # dist apart, mirror the tile pairs mirrored in blocks of 2 dist; n: positions >= n pad
    _d("bitonic", (T, T), (T, T), {
        "n": attr(Int(1)), "descending": attr(Bool()), "mode": attr(Str("tile", "pair",
                                                                         "mirror")),
        "dist": attr(NAT), "steps": opt(ListOf(Tuple(Int(2), Int(1), Bool()))),
        "tile": attr(ListOf(Int(1)))}, v_bitonic, trace="sort"),
    # pass_verify_print / pass_verify_save (frontend/verify.py): what pypto's pass verify
    # prints or saves when it interprets the graph; the lowering drops it
    _d("probe", ("tensor*",), (), {
        "kind": attr(Str("print", "save")), "texts": attr(ListOf(Text())), "exprs": attr(EXPRS),
        "order": attr(ListOf(Tuple(Str("text", "expr", "tensor", "name"), NAT))),
        "names": opt(ListOf(Ident())), "cond": attr(EXPR)}, v_probe,
       trace="pass_verify_print"),
]
# `copy` (clone, expand_clone) is the elementwise copy with a broadcasting result
DEFS = [d if d.name != "copy" else OpDef(
    d.name, d.where, d.operands, 0, d.results, 0, d.attrs, v_created,
    {**d.impl, "interp": "op_copy"}) for d in DEFS]
