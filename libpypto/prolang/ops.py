"""Pro-mode instructions: data movement, vector compute and cube compute, destination first.

Each call checks its operands (spaces, shapes, dtypes, layouts, the section it is in) and
records one block-level tile instruction (libpypto/ir/tile_ops.py) on the pipe its spaces
give (reference section 1.6): load GM -> Vec/Mat on MTE2; store Vec -> GM on MTE3 and
Acc -> GM on FIX; move Mat -> Left/Right on MTE1 (textract), Acc -> Vec on FIX, Mat <-> Vec
on V (tmov); vector compute on V; matmul on M.

Names and argument orders are Pro's (`pypto_pro.language._api`); choices:
- tile-tile forms take tiles of one shape, dtype and layout (no broadcast, no promotion);
  the tile-scalar form is the same name with a number or an integer runtime scalar last.
- compare ops (eq ne lt le gt ge) write a pl.DT_BOOL tile (Pro's packed predicate mask is a
  hardware encoding); select(out, mask, lhs, rhs_or_scalar, tmp) reads it.
- reductions: sum / maximum / minimum (and max / min) with `dim=`: dim=0 reduces each row
  to an [R, 1] tile, which must have layout pl.DN; dim=1 each column to a [1, C] tile; tmp
  is a Vec tile of src's shape and dtype (checked, unused on the host).
- expand_{add,sub,mul,div,max,min}(out, src, operand, dim=): dim=0 broadcasts an [R, 1]
  (DN) operand along each row, dim=1 a [1, C] operand down each column.
- a DN tile is a column tile: elementwise ops take it only with other DN tiles of its shape.
- matmul_acc(dst, acc, ...) needs dst and acc to be the same tile (an in-place
  accumulator); matmul(dst, lhs, rhs, bias) adds a [1, N] Bias tile (Mat -> Bias by move).
- store / move options and subview: see their docstrings (fixpipe relu and scale from Acc,
  atomic add into GM, order=, insert into Mat).
Everything touches only the destination's valid region; loads and stores move only the
valid region of the tile, and the runner refuses a box past the tensor's end.
"""
from __future__ import annotations

from ..ir import expr as E
from ..ir.core import make
from ..ir.defs import pipe_of
from ..ir.types import BOOL, FP8, TensorType
from .dsl import AtomicType, ReluPreMode, Scalar, TileLayout, expr_of
from .state import current
from .tiles import Tile

VECTOR_UNARY = {"abs": "abs", "neg": "neg", "relu": "relu", "exp": "exp", "log": "log",
                "sqrt": "sqrt", "rsqrt": "rsqrt", "recip": "reciprocal"}
VECTOR_BINARY = {"add": "add", "sub": "sub", "mul": "mul", "div": "div", "maximum": "maximum",
                 "minimum": "minimum", "and_": "bitwise_and", "or_": "bitwise_or",
                 "eq": "eq", "ne": "ne", "lt": "lt", "le": "le", "gt": "gt", "ge": "ge"}
COMPARE = {"eq", "ne", "lt", "le", "gt", "ge"}
SPACE_NAME = {"ub": "Vec", "l1": "Mat", "l0a": "Left", "l0b": "Right", "l0c": "Acc",
              "bias": "Bias", "scale_left": "ScaleLeft", "scale_right": "ScaleRight"}
MORE: dict = {}     # load_scale, move_scale: registered by ops_more.py (MX scales)


class TensorView:
    """A GM tensor parameter at trace time: name, dtype, shape (ints and Scalars)."""

    def __init__(self, name: str, dtype, shape: list, index: int):
        self.name, self.dtype, self.index = name, dtype, index
        self.dims = shape                      # ints and expressions
        from .dsl import wrap
        self.shape = [wrap(d) for d in shape]

    def ir_type(self) -> TensorType:
        return TensorType(self.dtype, tuple(self.dims))

    def value(self, t):
        prog = t.program(f"a use of tensor {self.name}")
        op = prog.args.get(self.name)
        if op is None:
            op = prog.args[self.name] = make("arg", (), (self.ir_type(),),
                                             {"index": self.index}, names=[self.name])
        return op.result

    def __repr__(self) -> str:
        return f"Tensor({self.name})"


def _tile(t, v, what: str) -> Tile:
    if not isinstance(v, Tile):
        raise t.error(f"{what} must be a tile (from pl.make_tile or a tile group), not {v!r}")
    return v


def _tensor(t, v, what: str) -> TensorView:
    if not isinstance(v, TensorView):
        raise t.error(f"{what} must be a GM tensor parameter, not {v!r}")
    return v


def _section_of(t, tiles, name: str = "") -> None:
    core = t.section or ("vector" if not t.sections else None)
    for i, x in enumerate(tiles):
        if name == "tinsert" and i == 0 and x.type.space == "l1" and t.mixed:
            continue        # UB -> L1 insert: the vector cores write the cluster's L1
        if name == "tmov_acc2vec" and i == 0:
            continue        # L0C -> UB: the cube writes its vector cores' UB (pipeline.py)
        if core == "vector" and x.type.space != "ub":
            raise t.error(f"tile {x.name} is in {SPACE_NAME[x.type.space]} (cube memory): "
                          f"use it inside pl.section_cube()")
        if core == "cube" and x.type.space == "ub":
            raise t.error(f"tile {x.name} is in Vec (vector memory): use it inside "
                          f"pl.section_vector()")


def emit(name: str, operands: list, attrs: dict):
    """One instruction on the pipe its definition gives, wrapped in the auto-mutex locks of
    the tile-group slots it touches."""
    t = current()
    _section_of(t, [o for o in operands if isinstance(o, Tile)], name)
    vals = [o.value(t) for o in operands]
    op = make(name, vals, (), attrs, None, t.loc())
    op.attrs["pipe"] = pipe_of(op)
    locks = []
    if t.auto_mutex:
        for o in operands:
            if isinstance(o, Tile) and o.slot is not None:
                locks += [i for i in o.owner.mutex_of(o.slot) if i not in locks]
    prog = t.program(name)
    for i in locks:
        prog.emit(make("mutex_lock", (), (), {"pipe": op.attrs["pipe"], "mutex_id": i},
                       None, op.loc))
    prog.emit(op)
    t.pos += 1
    for i in locks:
        prog.emit(make("mutex_unlock", (), (), {"pipe": op.attrs["pipe"], "mutex_id": i},
                       None, op.loc))
    return op


# -- data movement ----------------------------------------------------------------------------

def _box(t, tile: Tile, tensor: TensorView, offsets, what: str, order=None) -> tuple:
    offs = offsets if isinstance(offsets, (list, tuple)) else [offsets]
    es = [expr_of(o) for o in offs]
    if any(e is None for e in es):
        raise t.error(f"{what} offsets must be integer scalars, not {offsets!r}")
    rank = len(tensor.dims)
    if len(es) != rank:
        raise t.error(f"{what} of tensor {tensor.name} (rank {rank}) takes {rank} offsets, "
                      f"not {len(es)}")
    axes = _order(t, what, rank, order)
    valid = [1] * rank
    valid[axes[0]], valid[axes[1]] = tile.valid
    return es, valid


def _order(t, what: str, rank: int, order) -> list:
    """The two tensor axes a tile's rows and columns map to (order=; default the last two).
    A descending order (rows from the later axis) transposes: loads only, as in the
    reference (store.md allows ascending orders only)."""
    if order is None:
        return [rank - 2, rank - 1]
    o = list(order) if isinstance(order, (list, tuple)) else None
    if o is None or len(o) != 2 or o[0] == o[1] or \
            any(not isinstance(a, int) or not 0 <= a < rank for a in o):
        raise t.error(f"{what} order= must be two distinct tensor axes in [0, {rank}), not "
                      f"{order!r}")
    if o[0] > o[1] and not what.startswith("load"):
        raise t.error(f"{what} order={o}: a store takes ascending orders only (a descending "
                      f"order transposes, which only loads do)")
    return o


def _ordered(attrs: dict, rank: int, t, what: str, order) -> dict:
    axes = _order(t, what, rank, order)
    if axes != [rank - 2, rank - 1]:
        attrs["order"] = axes
    return attrs


def load(dst, src, offsets, order=None):
    """pl.load(dst_tile, src_tensor, [row, col], order=None): GM -> Vec/Mat (MTE2), element
    offsets; order= names the two tensor axes the tile's rows and columns come from (default
    the last two; descending, e.g. [1, 0], loads transposed: tile[i, j] = x[.., j, .., i])."""
    t = current()
    dst, src = _tile(t, dst, "load destination"), _tensor(t, src, "load source")
    if dst.type.space not in ("ub", "l1"):
        raise t.error(f"load into a {SPACE_NAME[dst.type.space]} tile: GM loads go to Vec or "
                      f"Mat (then pl.move to Left/Right/Bias)")
    if dst.type.space == "l1" and dst.type.layout.name in ("ZZ", "NN"):   # MX scales
        return MORE["load_scale"](t, dst, src, offsets, order)
    _same_dtype(t, "load", dst, src)
    offs, valid = _box(t, dst, src, offsets, "load", order)
    return emit("tload", [dst, src], _ordered({"offsets": offs, "valid": valid},
                                              len(src.dims), t, "load", order))


def load_tile(dst, src, tile_offsets, order=None):
    """pl.load_tile(dst_tile, src_tensor, [ti, tj], order=None): offsets in tile units."""
    return load(dst, src, _scaled(dst, tile_offsets, order), order=order)


def _scaled(tile, offs, order=None):
    t = current()
    tile = _tile(t, tile, "load_tile / store_tile tile")
    offs = list(offs) if isinstance(offs, (list, tuple)) else [offs]
    axes = _order(t, "load_tile / store_tile", len(offs), order) if len(offs) >= 2 else []
    out = list(offs)
    for a, n in zip(axes, tile.type.shape):
        out[a] = offs[a] * n
    return out


def _same_dtype(t, what, tile, tensor) -> None:
    if tile.type.dtype != tensor.dtype and tile.type.space != "l0c":
        raise t.error(f"{what} between a {tile.type.dtype} tile and a {tensor.dtype} tensor "
                      f"(only stores from Acc convert; use pl.cast)")


def store(dst, src, offsets, relu_pre_mode=None, scale=None, atomic=None, phase=None,
          order=None):
    """pl.store(dst_tensor, src_tile, offsets, relu_pre_mode=, scale=, atomic=, phase=,
    order=): Vec -> GM (MTE3), Acc -> GM (FIX). The fixpipe options (Acc sources only), in
    this order: relu_pre_mode=pl.ReluPreMode.NormalRelu (max(x, 0)), scale= (a float or a
    runtime FP32 scalar: x * scale in fp32, then rounded to the tensor's dtype, saturating
    for an integer tensor: quantisation). atomic=pl.AtomicType.AtomicAdd adds into GM
    (tensor + value, rounded to its dtype) from Vec or Acc. order= maps the tile onto two
    tensor axes (ascending)."""
    t = current()
    dst, src = _tensor(t, dst, "store destination"), _tile(t, src, "store source")
    if src.type.space not in ("ub", "l0c"):
        raise t.error(f"store from a {SPACE_NAME[src.type.space]} tile: stores go from Vec "
                      f"or Acc")
    _same_dtype(t, "store", src, dst)
    if dst.dtype.c_type == "uint8_t" and dst.dtype.kind == "float" and \
            src.type.dtype != dst.dtype:
        raise t.error(f"store of {src.type.dtype} into a {dst.dtype} tensor: converting to "
                      f"8-bit floats is not built")
    offs, valid = _box(t, src, dst, offsets, "store", order)
    attrs = _ordered({"offsets": offs, "valid": valid}, len(dst.dims), t, "store", order)
    attrs.update(fixpipe_options(t, "pl.store", src, relu_pre_mode, scale))
    if atomic is not None and atomic is not AtomicType.AtomicNone:
        if atomic is not AtomicType.AtomicAdd:
            raise t.error(f"pl.store atomic= must be pl.AtomicType.AtomicNone or AtomicAdd, "
                          f"not {atomic!r}")
        attrs["atomic"] = "add"
    return emit("tstore", [src, dst], attrs)


def store_tile(dst, src, tile_offsets, **kw):
    """pl.store_tile(dst_tensor, src_tile, [ti, tj], ...): offsets in tile units; the options
    of pl.store."""
    return store(dst, src, _scaled(src, tile_offsets, kw.get("order")), **kw)


def fixpipe_options(t, what: str, src, relu, scale) -> dict:
    """The attrs of relu_pre_mode= and scale= (Acc sources only: they are the fixpipe's)."""
    if relu is None and scale is None:
        return {}
    if src.type.space != "l0c":
        raise t.error(f"{what}: relu_pre_mode= and scale= are fixpipe options, for an Acc "
                      f"source (tile {src.name} is in {SPACE_NAME[src.type.space]}; use "
                      f"pl.relu / pl.mul on the vector core)")
    out: dict = {}
    if relu is not None:
        if relu is not ReluPreMode.NormalRelu:
            raise t.error(f"{what} relu_pre_mode= must be pl.ReluPreMode.NormalRelu, not "
                          f"{relu!r}")
        out["relu"] = True
    if scale is not None:
        out["scale"] = _scale(t, what, scale)
    return out


def _scale(t, what: str, scale):
    if isinstance(scale, Tile):
        raise t.error(f"{what}: a per-channel scale tile (MemorySpace.Scaling) is not built "
                      f"yet: pass a float or a runtime FP32 scalar")
    if isinstance(scale, (int, float)) and not isinstance(scale, bool):
        return float(scale)
    e = expr_of(scale) if isinstance(scale, Scalar) else None
    floats = {n for n, d in getattr(t, "scalar_dtypes", {}).items() if d.startswith(("f", "bf"))}
    if e is None or not E.free_symbols(e) or not E.free_symbols(e) <= floats:
        raise t.error(f"{what} scale= must be a float or a runtime FP32 scalar, not {scale!r} "
                      f"(an integer scalar holding float32 bits is not supported)")
    return e


def move(dst, src, offset=None, acc_to_vec_mode=None, relu_pre_mode=None, scale=None):
    """pl.move(dst_tile, src_tile, offset=None, acc_to_vec_mode=, relu_pre_mode=, scale=):
    tile to tile (reference move.md). Paths and pipes: Mat -> Left/Right (MTE1, TEXTRACT:
    offset= picks the sub-block of a larger source), Mat -> Bias (MTE1, converting to the
    bias dtype), Acc -> Vec (FIX), Mat -> Vec and Vec -> Vec (V, a layout change such as
    ND -> NZ), Vec -> Mat (MTE3, as an insert at [0, 0]). A source that is a sub-block of the
    destination (no larger in each dim, smaller in one) with offset= is inserted at offset,
    as pl.insert. acc_to_vec_mode= (in the cube section) writes the Acc tile straight into
    the UB of the cluster's vector cores (pipeline.acc_to_vec). Refused with an error naming
    them: relu_pre_mode= / scale= (the Acc -> Vec fixpipe options; pl.store has them)."""
    t = current()
    dst, src = _tile(t, dst, "move destination"), _tile(t, src, "move source")
    ds, ss = dst.type.space, src.type.space
    if acc_to_vec_mode is not None and relu_pre_mode is None and scale is None:
        # L0C -> the vector cores' UB: pipeline.acc_to_vec (kernel.py hands it to the trace)
        return t.acc_to_vec(t, dst, src, acc_to_vec_mode)
    if relu_pre_mode is not None or scale is not None:
        raise t.error("pl.move relu_pre_mode= / scale= belong to the Acc -> Vec move, which a "
                      "kernel cannot express on the host yet (an Acc tile lives in the cube "
                      "section, a Vec tile in the vector section): use pl.store's options")
    if offset is not None and _sub_block(src, dst):
        return insert(dst, src, offset)
    if ds in ("l0a", "l0b"):
        if ss != "l1":
            raise t.error(f"move into {SPACE_NAME[ds]} takes a Mat tile, not "
                          f"{SPACE_NAME[ss]}")
        if dst.type.dtype != src.type.dtype:
            raise t.error(f"move of {src.type.dtype} into {dst.type.dtype}")
        offs = [expr_of(o) for o in (offset or [0, 0])]
        return emit("textract", [dst, src], {"offsets": offs, "valid": list(dst.valid)})
    if ds == "bias":
        return _move_bias(t, dst, src, offset)
    if ds in ("scale_left", "scale_right"):
        return MORE["move_scale"](t, dst, src)
    legal = {("l0c", "ub"), ("l1", "ub"), ("ub", "l1"), ("ub", "ub")}
    if (ss, ds) not in legal:
        raise t.error(f"move from {SPACE_NAME[ss]} to {SPACE_NAME[ds]} is not a path of the "
                      f"core (Mat -> Left/Right/Bias, Acc -> Vec, Mat <-> Vec, Vec -> Vec)")
    if offset is not None or dst.type.shape != src.type.shape:
        raise t.error(f"move from {SPACE_NAME[ss]} to {SPACE_NAME[ds]} copies a whole tile of "
                      f"the same shape")
    if (ss, ds) == ("ub", "l1"):        # UB -> L1 on MTE3: the insert instruction at [0, 0]
        return emit("tinsert", [dst, src], {"offsets": [0, 0], "valid": list(src.valid)})
    return emit("tmov", [dst, src], {"valid": list(dst.valid)})


def _sub_block(src, dst) -> bool:
    s, d = src.type.shape, dst.type.shape
    return all(a <= b for a, b in zip(s, d)) and s != d


def _move_bias(t, dst, src, offset):
    """Mat -> Bias (MTE1): a [1, N] row, converted to the bias table's dtype (fp32 or int32,
    the accumulator's); fp16/bf16 -> fp32 and int32 -> int32."""
    if src.type.space != "l1":
        raise t.error(f"move into Bias takes a Mat tile (GM -> Mat with pl.load first), not "
                      f"{SPACE_NAME[src.type.space]}")
    if offset is not None or dst.type.shape != src.type.shape:
        raise t.error(f"move into Bias copies a whole [1, N] tile of the same shape: "
                      f"{list(src.type.shape)} into {list(dst.type.shape)}")
    if (src.type.dtype.kind == "float") != (dst.type.dtype.kind == "float"):
        raise t.error(f"move of {src.type.dtype} into a {dst.type.dtype} Bias tile (floats "
                      f"go to fp32, integers to int32)")
    return emit("tmov", [dst, src], {"valid": list(dst.valid)})


def insert(dst, src, offset):
    """pl.insert(dst, src, [row, col]): src's valid region written into a larger tile at
    [row, col]; the rest of dst is kept. Vec -> Vec (V), and Vec -> Mat (MTE3: the
    reference's UB -> L1 path, whose source must be in the NZ layout: pl.move an ND tile into
    an NZ Vec tile first). A Mat destination may be used from the vector section of a mixed
    kernel: it is the cluster's L1 (the cube core's), shared with its vector cores."""
    t = current()
    dst, src = _tile(t, dst, "insert destination"), _tile(t, src, "insert source")
    path = (src.type.space, dst.type.space)
    if path not in (("ub", "ub"), ("ub", "l1")):
        raise t.error(f"pl.insert from {SPACE_NAME[path[0]]} into {SPACE_NAME[path[1]]}: the "
                      f"paths are Vec -> Vec and Vec -> Mat")
    if path == ("ub", "l1") and src.type.layout != TileLayout.NZ:
        raise t.error(f"pl.insert into Mat takes an NZ source: give tile {src.name} "
                      f"layout=pl.NZ and pl.move the ND result into it first")
    if dst.type.dtype != src.type.dtype:
        raise t.error(f"pl.insert of a {src.type.dtype} tile into a {dst.type.dtype} tile")
    offs = [expr_of(o) for o in (offset if isinstance(offset, (list, tuple)) else [offset])]
    if len(offs) != 2 or any(o is None for o in offs):
        raise t.error(f"pl.insert offset must be [row, col] integer scalars, not {offset!r}")
    if all(isinstance(o, int) for o in offs) and any(
            o < 0 or o + n > m for o, n, m in zip(offs, src.type.shape, dst.type.shape)):
        raise t.error(f"pl.insert of a {list(src.type.shape)} tile at {offs} falls outside the "
                      f"{list(dst.type.shape)} destination")
    return emit("tinsert", [dst, src], {"offsets": offs, "valid": list(src.valid)})


# -- vector compute ---------------------------------------------------------------------------

def no_fp8(t, what: str, tiles) -> None:
    """fp8 / E8M0 tiles only move and feed pl.matmul_mx (ops_more.py)."""
    for x in tiles:
        if x.type.dtype.name in FP8:
            raise t.error(f"{what} on tile {x.name} of {x.type.dtype}: 8-bit float tiles only "
                          f"move (load, store, move, insert) and feed pl.matmul_mx")


def _vector(t, what: str, tiles: list, same_dtype=True) -> None:
    no_fp8(t, what, tiles)
    for x in tiles:
        if x.type.space != "ub":
            raise t.error(f"{what} is a vector op: tile {x.name} is in "
                          f"{SPACE_NAME[x.type.space]}, not Vec")
    shapes = {x.type.shape for x in tiles}
    if len(shapes) > 1:
        raise t.error(f"{what} on tiles of different shapes "
                      f"({', '.join(f'{x.name} {list(x.type.shape)}' for x in tiles)})")
    layouts = {x.type.layout for x in tiles}
    if len(layouts) > 1:
        raise t.error(f"{what} mixes ND and DN tiles: a DN (column) tile is for reduction "
                      f"outputs and expand operands")
    if same_dtype and len({x.type.dtype for x in tiles}) > 1:
        raise t.error(f"{what} on tiles of different dtypes "
                      f"({', '.join(f'{x.name} {x.type.dtype}' for x in tiles)}): use pl.cast")


def _scalar_attr(t, v, what: str):
    if isinstance(v, float):
        return v
    e = expr_of(v)
    if e is None:
        raise t.error(f"{what}: the last operand must be a tile, a number or a runtime "
                      f"scalar, not {v!r}")
    return e


def _unary(name: str):
    def op(out, src):
        t = current()
        out, src = _tile(t, out, f"{name} out"), _tile(t, src, f"{name} src")
        _vector(t, f"pl.{name}", [out, src])
        return emit("t" + VECTOR_UNARY[name], [out, src], {"valid": list(out.valid)})
    op.__name__ = name
    op.__doc__ = f"pl.{name}(out, src): elementwise on the vector core."
    return op


def _binary(name: str):
    def op(out, lhs, rhs, dim=None):
        t = current()
        if dim is not None:
            if name not in ("maximum", "minimum"):
                raise t.error(f"pl.{name} takes no dim= (reductions: sum, maximum, minimum)")
            return _reduce(t, {"maximum": "max", "minimum": "min"}[name], out, lhs, rhs, dim)
        out, lhs = _tile(t, out, f"{name} out"), _tile(t, lhs, f"{name} lhs")
        if isinstance(rhs, Tile):
            _binary_check(t, name, out, [lhs, rhs])
            return emit("t" + VECTOR_BINARY[name], [out, lhs, rhs], {"valid": list(out.valid)})
        _binary_check(t, name, out, [lhs])
        return emit("t" + VECTOR_BINARY[name], [out, lhs],
                    {"scalar": _scalar_attr(t, rhs, f"pl.{name}"), "scalar_side": "rhs",
                     "valid": list(out.valid)})
    op.__name__ = name
    op.__doc__ = f"pl.{name}(out, lhs, rhs_tile_or_scalar): elementwise on the vector core."
    return op


def _binary_check(t, name, out, srcs) -> None:
    _vector(t, f"pl.{name}", srcs)
    _vector(t, f"pl.{name}", [out] + srcs, same_dtype=name not in COMPARE)
    if name in COMPARE and out.type.dtype != BOOL:
        raise t.error(f"pl.{name} writes a mask: its out tile must be pl.DT_BOOL, not "
                      f"{out.type.dtype}")


for _n in VECTOR_UNARY:
    globals()[_n] = _unary(_n)
for _n in VECTOR_BINARY:
    globals()[_n] = _binary(_n)


def cast(out, src, mode=None):
    """pl.cast(out, src): convert to out's dtype (round to nearest even)."""
    t = current()
    out, src = _tile(t, out, "cast out"), _tile(t, src, "cast src")
    _vector(t, "pl.cast", [out, src], same_dtype=False)
    return emit("tcvt", [out, src], {"valid": list(out.valid)})


def expands(out, scalar):
    """pl.expands(out, scalar): fill the tile's valid region with a scalar."""
    t = current()
    out = _tile(t, out, "expands out")
    _vector(t, "pl.expands", [out])
    return emit("texpands", [out], {"value": _scalar_attr(t, scalar, "pl.expands"),
                                    "valid": list(out.valid)})


def select(out, mask, lhs, rhs, tmp=None):
    """pl.select(out, mask, lhs, rhs, tmp): out = lhs where mask else rhs."""
    t = current()
    out, mask, lhs = (_tile(t, v, f"select {w}") for v, w in ((out, "out"), (mask, "mask"),
                                                            (lhs, "lhs")))
    if mask.type.dtype != BOOL:
        raise t.error("pl.select: the mask must be a pl.DT_BOOL tile (from pl.eq, pl.gt, ...)")
    if not isinstance(rhs, Tile):
        raise t.error("pl.select with a scalar rhs is not built yet: fill a tile with "
                      "pl.expands")
    _vector(t, "pl.select", [out, lhs, rhs])
    _vector(t, "pl.select", [out, mask], same_dtype=False)
    return emit("twhere", [out, mask, lhs, rhs], {"valid": list(out.valid)})


def _reduce(t, kind: str, out, src, tmp, dim):
    out, src = _tile(t, out, "reduction out"), _tile(t, src, "reduction src")
    tmp = _tile(t, tmp, "reduction tmp")
    for x in (out, src, tmp):
        if x.type.space != "ub":
            raise t.error(f"reduction on tile {x.name} in {SPACE_NAME[x.type.space]}, not Vec")
    R, C = src.type.shape
    if dim not in (0, 1):
        raise t.error(f"reduction dim must be 0 (each row) or 1 (each column), not {dim!r}")
    want = [R, 1] if dim == 0 else [1, C]
    if list(out.type.shape) != want:
        raise t.error(f"reduction with dim={dim} of a {[R, C]} tile writes a {want} tile, not "
                      f"{list(out.type.shape)}")
    if dim == 0 and out.type.layout != TileLayout.DN:
        raise t.error(f"a row reduction writes an [R, 1] column tile: give {out.name} "
                      f"layout=pl.DN")
    if tmp.type.shape != src.type.shape or tmp.type.dtype != src.type.dtype:
        raise t.error(f"reduction tmp {tmp.name} must have src's shape and dtype")
    if out.type.dtype != src.type.dtype:
        raise t.error(f"reduction of {src.type.dtype} into a {out.type.dtype} tile")
    dims = [1] if dim == 0 else [0]
    emit("treduce", [out, src], {"kind": kind, "dims": dims, "valid": list(src.valid)})


def sum(out, src, tmp, dim=0):       # noqa: A001 -- pl.sum, as in Pro
    """pl.sum(out, src, tmp, dim=): row sums (dim=0, [R, 1] DN) or column sums (dim=1)."""
    return _reduce(current(), "sum", out, src, tmp, dim)


def max(out, src, tmp, dim=0):       # noqa: A001
    """pl.max(out, src, tmp, dim=) on tiles: the reduction (as maximum with dim=)."""
    return _reduce(current(), "max", out, src, tmp, dim)


def min(out, src, tmp, dim=0):       # noqa: A001
    return _reduce(current(), "min", out, src, tmp, dim)


def _expand(name: str, base: str):
    def op(out, src, operand, dim=0):
        t = current()
        out, src = _tile(t, out, f"{name} out"), _tile(t, src, f"{name} src")
        operand = _tile(t, operand, f"{name} operand")
        _vector(t, f"pl.{name}", [out, src])
        R, C = src.type.shape
        want = [R, 1] if dim == 0 else [1, C]
        if dim not in (0, 1) or list(operand.type.shape) != want:
            raise t.error(f"pl.{name} dim={dim!r} broadcasts a {want} operand, not "
                          f"{list(operand.type.shape)}")
        if operand.type.space != "ub" or operand.type.dtype != src.type.dtype:
            raise t.error(f"pl.{name}: the operand must be a Vec tile of {src.type.dtype}")
        if dim == 0 and operand.type.layout != TileLayout.DN:
            raise t.error(f"pl.{name} dim=0 takes an [R, 1] operand with layout=pl.DN")
        return emit("t" + base, [out, src, operand], {"valid": list(out.valid)})
    op.__name__ = name
    op.__doc__ = f"pl.{name}(out, src, operand, dim=): broadcast operand and {base}."
    return op


for _n, _b in (("expand_add", "add"), ("expand_sub", "sub"), ("expand_mul", "mul"),
               ("expand_div", "div"), ("expand_max", "maximum"), ("expand_min", "minimum")):
    globals()[_n] = _expand(_n, _b)


# -- cube compute -----------------------------------------------------------------------------

ACC_OF = {"f16": "f32", "bf16": "f32", "f32": "f32", "i8": "i32"}


def _cube(t, what: str, dst, lhs, rhs) -> None:
    for x, sp in ((dst, "l0c"), (lhs, "l0a"), (rhs, "l0b")):
        if x.type.space != sp:
            raise t.error(f"{what}: tile {x.name} is in {SPACE_NAME[x.type.space]}, it must be "
                          f"in {SPACE_NAME[sp]} (a cube op reads Left x Right into Acc)")
    (m, k), (k2, n) = lhs.type.shape, rhs.type.shape
    if k != k2 or tuple(dst.type.shape) != (m, n):
        raise t.error(f"{what}: shapes do not chain: {[m, k]} x {[k2, n]} into "
                      f"{list(dst.type.shape)}")
    a = lhs.type.dtype.name
    if rhs.type.dtype.name != a or ACC_OF.get(a) != dst.type.dtype.name:
        raise t.error(f"{what}: {a} x {rhs.type.dtype} into {dst.type.dtype} (the cube takes "
                      f"fp16/bf16/fp32 into fp32 and int8 into int32)")


def matmul(dst, lhs, rhs, bias_tile=None, *, phase=None):
    """pl.matmul(dst_acc, left, right, bias_tile=None, phase=): dst = left @ right (M pipe);
    with a bias tile (4th positional, as in the reference: a [1, N] MemorySpace.Bias tile of
    the accumulator's dtype, filled by pl.move from Mat) dst = left @ right + bias, the bias
    broadcast down the rows and added to the fp32 (int32) sums before rounding."""
    t = current()
    dst, lhs, rhs = (_tile(t, v, "matmul operand") for v in (dst, lhs, rhs))
    _cube(t, "pl.matmul", dst, lhs, rhs)
    operands = [dst, lhs, rhs]
    if bias_tile is not None:
        bias = _tile(t, bias_tile, "matmul bias")
        n = dst.type.shape[1]
        if bias.type.space != "bias" or tuple(bias.type.shape) != (1, n) or \
                bias.type.dtype != dst.type.dtype:
            raise t.error(f"pl.matmul bias: tile {bias.name} must be a [1, {n}] "
                          f"MemorySpace.Bias tile of {dst.type.dtype}, not "
                          f"{list(bias.type.shape)} {bias.type.dtype} in "
                          f"{SPACE_NAME[bias.type.space]}")
        operands.append(bias)
    return emit("tmatmul", operands, {"init": 1, "k_valid": lhs.valid[1],
                                      "valid": [lhs.valid[0], rhs.valid[1]]})


def matmul_acc(dst, acc, lhs, rhs, *, phase=None):
    """pl.matmul_acc(dst, acc, left, right, phase=): dst = acc + left @ right."""
    t = current()
    dst, acc, lhs, rhs = (_tile(t, v, "matmul_acc operand") for v in (dst, acc, lhs, rhs))
    if acc.owner is not dst.owner or acc.addr != dst.addr:
        raise t.error("matmul_acc accumulates in place: dst and acc must be the same tile")
    _cube(t, "pl.matmul_acc", dst, lhs, rhs)
    return emit("tmatmul", [dst, lhs, rhs], {"init": 0, "k_valid": lhs.valid[1],
                                              "valid": [lhs.valid[0], rhs.valid[1]]})

