"""Definitions of the tile instructions: the block-level program of one core, shared by both
modes (Tensor mode reaches it by lowering, Pro mode will write it directly).

Destination first: an instruction writes the operands at `writes` (reading those at
`reads_dest` too: accumulators) and reads the rest. Each runs on a pipe (MTE2 copy-in, MTE1
L1 -> L0, M matmul, V vector, FIX L0C out, MTE3 UB out, S scalar).

Implementation kinds of a tile instruction:
  c      the C renderer's method (libpypto.codegen.c, a renderer method)
  numpy  the numpy semantics it runs as (a function of libpypto.runtime.npkern)
  pto    its PTO instruction mnemonic in the listing
"""
from __future__ import annotations

from ..errors import VerifyError
from . import ops as O
from .opdef import (EXPR, EXPRS, INTS, NAT, PIPE, Bool, DictOf, Ex, Ident, Int, ListOf, Num,
                    OpDef, Str, Tuple, attr, opt)
from .types import BOOL, I64, TileType

CUBE_SPACES = {"tload": ({"ub", "l1"}, None), "textract": ({"l0a", "l0b"}, {"l1"}),
               "tmatmul": ({"l0c"}, {"l0a", "l0b", "bias"}), "tstore": (None, {"ub", "l0c"})}


# -- pipes ------------------------------------------------------------------------------------

def _pipe_tstore(op) -> str:
    return "FIX" if op.operands[0].type.space == "l0c" else "MTE3"


def _pipe_tmov(op) -> str:
    src, dst = op.operands[1].type.space, op.operands[0].type.space
    if src == "l0c":
        return "FIX"
    return "MTE1" if dst in ("l0a", "l0b", "bias", "scale_left", "scale_right") else "V"


def _pipe_tinsert(op) -> str:
    if op.operands[0].type.space == "l1":
        return "MTE3"                   # UB -> L1 (Pro's insert into Mat)
    return _pipe_vector(op)


def _pipe_vector(op) -> str:
    for v in op.operands:
        if isinstance(v.type, TileType) and v.type.space not in ("ub", "any"):
            raise VerifyError(f"vector instruction {op.name} on a {v.type.space} tile", op.loc)
    return "V"


# -- verifiers --------------------------------------------------------------------------------

def _tiles(op):
    return [v.type for v in op.operands if isinstance(v.type, TileType)]


def _spaces(op, err) -> None:
    """Cube-path instructions move between fixed spaces (checked once spaces are assigned)."""
    rule = CUBE_SPACES.get(op.name)
    tiles = _tiles(op)
    if not rule or any(t.space == "any" for t in tiles):
        return
    dst_ok, src_ok = rule
    if op.name == "tstore":
        if tiles[0].space not in src_ok:
            err(f"tstore from a {tiles[0].space} tile")
        return
    if dst_ok and tiles[0].space not in dst_ok:
        err(f"{op.name} into a {tiles[0].space} tile")
    if src_ok and any(t.space not in src_ok for t in tiles[1:]):
        err(f"{op.name} from a {'/'.join(t.space for t in tiles[1:])} tile")


def v_copy_gm(op, err) -> None:
    """tload, tstore: a tile and a GM tensor, one offset and one valid extent per GM dim (the
    dtypes may differ: the copy converts)."""
    tile, gm = op.operands[0].type, op.operands[1].type
    for key in ("offsets", "valid"):
        if len(op.attrs[key]) != gm.rank:
            err(f"{op.name} {key} must have {gm.rank} entries")
    if tile.rank > gm.rank:
        err(f"{op.name} of a rank-{tile.rank} tile from a rank-{gm.rank} tensor")
    _spaces(op, err)


def _fits(src: tuple, dst: tuple) -> bool:
    """Does a source tile broadcast (right-aligned, dims equal or 1) to the destination?"""
    return len(src) <= len(dst) and all(
        s in (1, d) for s, d in zip(reversed(src), reversed(dst)))


def v_elementwise(op, err) -> None:
    d = O.ELEMENTWISE.get(op.name[1:])
    dst, srcs = op.operands[0].type, [v.type for v in op.operands[1:]]
    if d is not None:
        scalar = "scalar" in op.attrs
        if len(srcs) != d.arity - (1 if scalar else 0):
            err(f"{op.name} takes {d.arity} source tile(s)" + (" with its scalar" if scalar
                                                                else ""))
            return
        data = srcs[1:] if d.name == "where" else srcs
        if len({t.dtype for t in data}) > 1:
            err(f"{op.name}: source dtypes differ")
        elif d.out == "bool" and dst.dtype != BOOL:
            err(f"{op.name} writes a bool tile, not {dst.dtype}")
        elif d.out != "bool" and d.name != "copy" and dst.dtype != data[0].dtype:
            err(f"{op.name} of {data[0].dtype} into a {dst.dtype} tile")
    for s in srcs:
        if not _fits(s.shape, dst.shape):
            err(f"{op.name}: a {s} source does not broadcast to the {dst} destination")
            return


def v_same_size(op, err) -> None:
    """tmov, tcvt, treshape: a flat copy of as many elements (tmov and tcvt may convert the
    dtype, treshape may not)."""
    dst, src = op.operands[0].type, op.operands[1].type
    if dst.nbytes // dst.dtype.itemsize != src.nbytes // src.dtype.itemsize or \
            (op.name == "treshape" and dst.dtype != src.dtype):
        err(f"{op.name} of a {src} tile into a {dst} tile")


def v_bitcast(op, err) -> None:
    """tbitcast: the same bytes, another dtype (pack / unpack)."""
    dst, src = op.operands[0].type, op.operands[1].type
    if dst.nbytes != src.nbytes:
        err(f"tbitcast of a {src} tile into a {dst} tile")


def v_bitonic(op, err) -> None:
    """tbitonic, tbitonic2: value and position tiles of one shape, positions int32."""
    ts = [v.type for v in op.operands]
    vals, pos = ts[0::2], ts[1::2]
    if len({t.shape for t in ts}) != 1 or len({t.dtype for t in vals}) != 1 or \
            any(t.dtype.name != "i32" for t in pos):
        err(f"{op.name} takes value and int32 position tiles of one shape")


def v_textract(op, err) -> None:
    dst, src = op.operands[0].type, op.operands[1].type
    if dst.rank != 2 or src.rank < 2:
        err("textract takes a 2-D destination from a (batched) matrix")
    elif len(op.attrs["offsets"]) != 2:
        err("textract offsets must have 2 entries")
    elif dst.dtype != src.dtype:
        err(f"textract of {src.dtype} into {dst.dtype}")
    _spaces(op, err)


def v_tinsert(op, err) -> None:
    dst, src = op.operands[0].type, op.operands[1].type
    if dst.rank != 2 or src.rank != 2 or len(op.attrs["offsets"]) != 2 or dst.dtype != src.dtype:
        err(f"tinsert of {src} into {dst}")


def v_tmatmul(op, err) -> None:
    acc, a, b = (v.type for v in op.operands[:3])
    if len(op.operands) == 4:           # Pro mode's bias: a [1, N] row of the acc dtype
        bias = op.operands[3].type
        if bias.shape != (1, acc.shape[-1]) or bias.dtype != acc.dtype:
            err(f"tmatmul bias {bias} for a {acc} accumulator")
    if acc.rank != 2 or a.rank != 2 or b.rank != 2 or a.shape[1] != b.shape[0] or \
            acc.shape != (a.shape[0], b.shape[1]):
        err(f"tmatmul of {a} by {b} into {acc}")
    elif a.dtype != b.dtype or acc.dtype.kind != ("float" if a.dtype.is_float else "int"):
        err(f"tmatmul of {a.dtype} x {b.dtype} into {acc.dtype}")
    _spaces(op, err)


def _reduced(src: tuple, dims) -> tuple:
    return tuple(1 if i in dims else s for i, s in enumerate(src))


def v_treduce(op, err) -> None:
    dst, src = op.operands[0].type, op.operands[1].type
    dims = op.attrs["dims"]
    if any(not 0 <= d < src.rank for d in dims) or len(op.attrs["valid"]) != src.rank:
        err(f"treduce dims {dims} and valid must fit a rank-{src.rank} tile")
    elif dst.shape != _reduced(src.shape, dims):
        err(f"treduce of {src} over {dims} into {dst}")


def v_dim_ops(op, err) -> None:
    """targreduce, tscan, tsort: along one dim of the source (the last operand for
    targreduce and tsort, the second for tscan)."""
    src = op.operands[1 if op.name == "tscan" else 2].type
    dim = op.attrs.get("dim", src.rank - 1)
    if not 0 <= dim < src.rank or len(op.attrs["valid"]) != src.rank:
        err(f"{op.name} dim and valid must fit a rank-{src.rank} tile")
        return
    a, b = op.operands[0].type, op.operands[1 if op.name != "tscan" else 2].type
    if op.name == "targreduce":
        want = [(a, _reduced(src.shape, [dim])), (b, _reduced(src.shape, [dim]))]
    elif op.name == "tscan":
        want = [(a, src.shape), (b, _reduced(src.shape, [dim]))]
    else:
        want = [(a, src.shape), (b, src.shape)]
    if any(t.shape != shape for t, shape in want):
        err(f"{op.name}: the tiles do not match a {src} source")
    elif op.name in ("targreduce", "tsort") and b.dtype != I64:
        err(f"{op.name} writes indices into an i64 tile, not {b.dtype}")


def v_ttrans(op, err) -> None:
    dst, src = op.operands[0].type, op.operands[1].type
    perm = op.attrs["perm"]
    if sorted(perm) != list(range(src.rank)) or dst.shape != tuple(src.shape[p] for p in perm):
        err(f"ttrans of {src} by {perm} into {dst}")


def v_ttri(op, err) -> None:
    dst, src = op.operands[0].type, op.operands[1].type
    if dst.shape != src.shape or dst.rank < 2:
        err(f"ttri of {src} into {dst}")


def v_tiota(op, err) -> None:
    if op.operands[0].type.rank != 1:
        err("tiota fills a 1-D tile")


def v_tuniform(op, err) -> None:
    t, a = op.operands[0].type, op.attrs
    if t.dtype.kind != "float" or len(a["offsets"]) != t.rank or len(a["shape"]) != t.rank:
        err(f"tuniform fills a float tile with offsets and a shape of its rank, not {t}")


def v_tgather(op, err) -> None:
    dst, gm = op.operands[0].type, op.operands[1].type
    a = op.attrs
    if not 0 <= a["dim"] < dst.rank or any(len(a[k]) != gm.rank for k in (
            "region_offsets", "region_shape")) or len(a["out_offsets"]) != dst.rank:
        err(f"tgather dim and regions must fit a {dst} tile of a {gm} tensor")


def v_tscatter(op, err) -> None:
    a = op.attrs
    out = op.operands[0].type
    regions = [("out_region", 0), ("index_region", 1)] + (
        [("src_region", 2)] if len(op.operands) > 2 else [])
    for key, i in regions:
        if key not in a:
            err(f"tscatter needs {key}")
            return
        if any(len(a[key][k]) != op.operands[i].type.rank for k in a[key]):
            err(f"tscatter {key} must fit the rank of its tensor")
            return
    if not 0 <= a["dim"] < out.rank:
        err(f"tscatter dim must be in [0, {out.rank})")
    if len(op.operands) == 2 and "value" not in a:
        err("tscatter needs a source tensor or a value")


# -- the definitions --------------------------------------------------------------------------

TL, GM = "tile", "tensor"
W = ("tile",)
PIPED = {"pipe": opt(PIPE)}
BOX = {"offsets": attr(EXPRS), "valid": attr(EXPRS), **PIPED,
       # Pro mode: the tensor axes of the tile's rows and columns (default the last two)
       "order": opt(INTS)}
# Pro mode's fixpipe options on a store from Acc (relu, then scale in fp32, then
# rounding, saturating into an integer dtype) and a store's atomic add into GM
FIXPIPE = {"relu": opt(Bool()), "scale": opt(Ex(num=True))}
REGION = DictOf({"region_offsets": attr(EXPRS), "region_shape": attr(EXPRS)})
VALID = {"valid": attr(EXPRS)}
# Pro mode (libpypto.prolang) stamps the destination's valid region on the instructions that
# have no region of their own: they touch only that region (the Pro runner honours it; Tensor
# mode never writes it)
PRO_VALID = {"valid": opt(EXPRS)}


def _i(name, operands, attrs, verify, pipe, pto, numpy=None, c=None, writes=(0,),
       reads_dest=(), optional=0):
    impl = {"c": c or f"i_{name}", "numpy": numpy or name, "pto": pto}
    return OpDef(name, W, operands, optional, (), 0, {**attrs, **PIPED}, verify, impl, writes,
                 reads_dest, pipe, pto)


def _elementwise(d: O.Elementwise) -> OpDef:
    attrs = {"scalar": opt(Ex(num=True)), "scalar_side": opt(Str("lhs", "rhs")), **PRO_VALID}
    return _i("t" + d.name, (TL,) * (d.arity + 1), attrs, v_elementwise, _pipe_vector, d.pto,
              numpy="telementwise", c="i_elementwise", optional=1 if d.arity == 2 else 0)


MAX_SLOTS = 64          # buffers of one tile (more never fit a core's buffer)

DEFS = [_elementwise(d) for d in O.ELEMENTWISE.values()] + [
    # addr: a byte offset; Pro mode may make it an expression (a tile group's slot chosen at
    # run time) and names the tile (name) for its messages
    # stride: a Pro subview's row stride in elements (its parent's columns; default its own)
    # slots: N buffers of a copy-in tile in a loop (passes/nbuffer.py): alloc gives it N
    # places and addr picks the iteration's, base + (i mod N) * size; at most MAX_SLOTS
    OpDef("tile", W, (), 0, (TL,), 0, {"addr": opt(EXPR), "name": opt(Ident()),
                                        "stride": opt(NAT), "slots": opt(Int(1, MAX_SLOTS))},
          None,
          {"c": "i_tile"}),
    OpDef("arg", W, (), 0, (GM,), 0, {"index": attr(NAT)}, None, {}),
    OpDef("for", W, (), 0, (), 1, {"var": attr(Ident()), "start": attr(EXPR),
                                   "stop": attr(EXPR), "step": attr(EXPR)}, None,
          {"c": "i_for"}),
    # mx: an E8M0 scale load into a ZZ / NN Mat tile from the packed [M, G/2, 2] /
    # [G/2, N, 2] tensor (prolang/ops_more.py)
    _i("tload", (TL, GM), {**BOX, "mx": opt(Str("ZZ", "NN"))}, v_copy_gm, "MTE2", "TLOAD"),
    _i("tstore", (TL, GM), {**BOX, **FIXPIPE, "atomic": opt(Str("add"))}, v_copy_gm,
       _pipe_tstore, "TSTORE", writes=()),
    _i("tmov", (TL, TL), dict(PRO_VALID), v_same_size, _pipe_tmov, "TMOV", numpy="tcopy"),
    # Pro mode (prolang/pipeline.py): L0C -> the UB of one or both vector cores of the
    # cluster on FIX (A5's direct path; valid: the Acc region moved, split by `mode`)
    _i("tmov_acc2vec", (TL, TL), {"mode": attr(Str("SingleModeVec0", "SingleModeVec1",
                                                   "DualModeSplitM", "DualModeSplitN")),
                                  **PRO_VALID}, None, "FIX", "TMOV", numpy="tcopy", c="i_tmov"),
    _i("tcvt", (TL, TL), {"mode": opt(Str("rint", "round", "floor", "ceil", "trunc", "odd")),
                          "sat": opt(Bool()), **PRO_VALID}, v_same_size, _pipe_vector, "TCVT"),
    _i("treshape", (TL, TL), {}, v_same_size, _pipe_vector, "TRESHAPE", numpy="tcopy"),
    _i("tbitcast", (TL, TL), {}, v_bitcast, _pipe_vector, "TBITCAST"),
    _i("textract", (TL, TL), {"offsets": attr(EXPRS), "trans": opt(Bool()), **PRO_VALID}, v_textract,
       "MTE1", "TEXTRACT"),
    _i("tinsert", (TL, TL), {"offsets": attr(EXPRS), **PRO_VALID}, v_tinsert, _pipe_tinsert,
       "TINSERT", reads_dest=(0,)),
    # an optional 4th operand (Pro mode): a bias row added to the products (TMATMUL_BIAS)
    _i("tmatmul", (TL, TL, TL, TL), {"init": attr(EXPR), "k_valid": attr(EXPR), **PRO_VALID},
       v_tmatmul, "M", "TMATMUL", reads_dest=(0,), optional=1),
    _i("treduce", (TL, TL), {"kind": attr(Str("sum", "prod", "max", "min")),
                             "dims": attr(INTS), **VALID}, v_treduce, _pipe_vector, "TREDUCE"),
    _i("texpands", (TL,), {"value": attr(Ex(num=True)), **PRO_VALID}, None, _pipe_vector, "TEXPANDS"),
    _i("tiota", (TL,), {"start": attr(Ex(num=True)), "step": attr(Ex(num=True)),
                        "offset": attr(EXPR)}, v_tiota, _pipe_vector, "TIOTA"),
    _i("tuniform", (TL,), {"offsets": attr(EXPRS), "shape": attr(INTS),
                           "key": attr(ListOf(Int(0, 0xFFFFFFFF), 2)),
                           "counter": attr(ListOf(Int(0, 0xFFFFFFFF), 2)),
                           "rounds": attr(Int(1, 16))}, v_tuniform, _pipe_vector, "TUNIFORM"),
    _i("ttri", (TL, TL), {"lower": attr(Bool()), "diagonal": attr(Int()), "row0": attr(EXPR),
                          "col0": attr(EXPR)}, v_ttri, _pipe_vector, "TTRI"),
    _i("targreduce", (TL, TL, TL), {"kind": attr(Str("max", "min")), "dim": attr(NAT),
                                    "base": attr(EXPR), "init": attr(EXPR), **VALID},
       v_dim_ops, _pipe_vector, "TARGREDUCE", writes=(0, 1), reads_dest=(0, 1)),
    _i("tscan", (TL, TL, TL), {"kind": attr(Str("sum", "prod")), "dim": attr(NAT),
                               "init": attr(EXPR), **VALID}, v_dim_ops, _pipe_vector, "TSCAN",
       writes=(0, 2), reads_dest=(2,)),
    _i("tsort", (TL, TL, TL), {"descending": attr(Bool()), **VALID}, v_dim_ops, _pipe_vector,
       "TSORT", writes=(0, 1)),
    _i("ttrans", (TL, TL), {"perm": attr(INTS)}, v_ttrans, _pipe_vector, "TTRANS"),
    # a sort longer than a tile (tensor op bitonic): steps of a bitonic network inside the
    # tile rows (values, positions), and the compare-exchange of two tiles (mirror: the
    # second one's elements in reverse)
    _i("tbitonic", (TL, TL, TL, TL), {"n": attr(Int(1)), "descending": attr(Bool()),
                                      "steps": attr(ListOf(Tuple(Int(2), Int(1), Bool())))},
       v_bitonic, _pipe_vector, "TBITONIC", writes=(0, 1)),
    _i("tbitonic2", (TL,) * 8, {"n": attr(Int(1)), "descending": attr(Bool()),
                                "mirror": attr(Bool())},
       v_bitonic, _pipe_vector, "TBITONIC2", writes=(0, 1, 2, 3)),
    _i("tgather", (TL, GM, TL), {"dim": attr(NAT), "mode": attr(Str("gather", "select")),
                                 "out_offsets": attr(EXPRS), "region_offsets": attr(EXPRS),
                                 "region_shape": attr(EXPRS)}, v_tgather, "MTE2", "TGATHER"),
    _i("tscatter", (GM, GM, GM), {"dim": attr(NAT), "reduce": attr(Str("none", "add",
                                                                       "multiply")),
                                  "mode": attr(Str("scatter", "index_add")),
                                  "out_region": attr(REGION), "index_region": attr(REGION),
                                  "src_region": opt(REGION), "value": opt(Num()),
                                  "alpha": opt(Num())},
       v_tscatter, "MTE3", "TSCATTER", writes=(), optional=1),
]
