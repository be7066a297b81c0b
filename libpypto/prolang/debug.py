"""Pro mode's debug utilities (the reference's Utils-API/debugging pages): `pl.printf`,
`pl.pto_assert`, `pl.dump_data`, `pl.trap`. Each records one instruction
(libpypto/ir/debug_ops.py) in the program of the section it is in; the Pro runner and the C
execute them (libpypto/runtime/pro_debug.py, codegen/pro_debug_c.py).

    pl.printf("tile %d of %d: rows=%d\\n", t, n, rows)      # S pipe
    pl.printf("scale=%+08.3f\\n", scale, loc=True)          # a float scalar parameter
    pl.pto_assert(rows <= 16, "rows=%d", rows)              # S pipe
    pl.dump_data(tile)                                     # its valid region (V, or FIX)
    pl.dump_data(tile, offsets=[0, 8], shapes=[4, 8])       # a window
    pl.trap()                                              # S pipe

Choices (also in docs/pro.md):
- printf's format is the reference's subset (ir/debug_ops.parse_format), checked when the
  kernel is traced and again when an IR file is read. %d %i %u %x take integer scalars
  (Python ints and bools, integer runtime scalars; printed as int64, %u %x as uint64 bits);
  %f takes an fp32 value (a Python float or a float scalar parameter). No %p (pypto has no
  pointers), no precision on integer conversions, `#` only with %x and %f (C and Python
  print the rest differently).
- pto_assert's condition is a Python bool or a runtime scalar (non-zero is true); its
  source text (as the reference extracts it) goes into the message. A failing assert stops
  the run (the reference's NPU only logs it): exit 1 from pypto-run, ProAssertError in
  process.
- dump_data takes a tile: Vec (in a vector section, V pipe) or Acc (in a cube section, FIX
  pipe; the host reads L0C directly, so `workspace=` is accepted and not needed), window
  default the tile's valid region; or a GM tensor (any rank, V pipe, FIX in a cube section;
  the checker sees it read the window), window default the whole tensor. Mat/Left/Right
  tiles and `flag=` are refused.
"""
from __future__ import annotations

import ast
import inspect
import linecache
import textwrap

from ..ir import expr as E
from ..ir.debug_ops import INT_CONV, parse_format
from .dsl import Scalar, expr_of
from .ops import TensorView, emit
from .state import current
from .tiles import Tile


def _float_syms(t) -> set:
    return {n for n, d in getattr(t, "scalar_dtypes", {}).items() if d.startswith(("f", "bf"))}


def _arg(t, conv: str, v, i: int, what: str):
    """One printf argument as an attribute value: an int expression, or a float."""
    floats = _float_syms(t)
    if conv in INT_CONV:
        e = expr_of(v)
        if e is None or (isinstance(e, E.Expr) and E.free_symbols(e) & floats):
            raise t.error(f"{what} argument {i} ({v!r}) for %{conv} must be an integer scalar "
                          f"(%f prints a float)")
        return e
    if isinstance(v, float) and not isinstance(v, bool):
        return v
    if isinstance(v, Scalar) and isinstance(v.e, E.Expr) and E.free_symbols(v.e) & floats:
        return v.e
    raise t.error(f"{what} argument {i} ({v!r}) for %f must be an fp32 value: a Python float "
                  f"or a float scalar parameter (the reference's %f takes FP32 only)")


def _format(t, fmt, args, what: str) -> list:
    if not isinstance(fmt, str):
        raise t.error(f"{what}: the format must be a string literal, not {fmt!r}")
    try:
        pieces = parse_format(fmt)
    except ValueError as exc:
        raise t.error(f"{what}: {exc}") from None
    convs = [p[3] for p in pieces if isinstance(p, tuple)]
    if len(convs) != len(args):
        raise t.error(f"{what}: the format has {len(convs)} conversions, and {len(args)} "
                      f"arguments are given")
    return [_arg(t, c, v, i, what) for i, (c, v) in enumerate(zip(convs, args))]


def _loc_attr(t, loc) -> dict:
    if not isinstance(loc, bool):
        raise t.error(f"loc= must be True or False, not {loc!r}")
    return {"show_location": True} if loc else {}


def printf(format_str, *args, loc=False):
    """pl.printf(format, *args, loc=False): print scalars from the run (S pipe)."""
    t = current()
    vals = _format(t, format_str, args, "pl.printf")
    return emit("dbg_printf", [], {"format": format_str, "args": vals, **_loc_attr(t, loc)})


def pto_assert(condition, format_str=None, *args, loc=False):
    """pl.pto_assert(cond, format=None, *args, loc=False): stop the run when cond is false
    (S pipe), naming the block, the line, the condition and the formatted message."""
    t = current()
    if isinstance(condition, bool):
        cond = int(condition)
    elif isinstance(condition, Scalar):
        cond = condition.e
    else:
        raise t.error(f"pl.pto_assert takes a boolean condition (a comparison of scalars, or "
                      f"True / False), not {condition!r}")
    vals = _format(t, format_str, args, "pl.pto_assert") if format_str is not None else []
    return emit("dbg_assert", [], {"cond": cond, "text": _cond_text(t), "format":
                                   format_str or "", "args": vals, **_loc_attr(t, loc)})


def trap():
    """pl.trap(): stop the run here (S pipe)."""
    current()
    return emit("dbg_trap", [], {})


def dump_data(data, offsets=None, shapes=None, *, workspace=None, loc=False, flag=None):
    """pl.dump_data(tile, offsets=None, shapes=None, workspace=None, loc=False): write the
    tile's window (default its valid region) to an .npy file named by line and block."""
    t = current()
    if isinstance(data, TensorView):
        return _dump_gm(t, data, offsets, shapes, workspace, loc, flag)
    if not isinstance(data, Tile):
        raise t.error(f"pl.dump_data takes a tile, not {data!r}")
    space = data.type.space
    if space not in ("ub", "l0c"):
        raise t.error(f"pl.dump_data of tile {data.name}: only Vec and Acc tiles can be "
                      f"dumped (as the reference: Mat/Left/Right tiles cannot be printed)")
    if workspace is not None and (space != "l0c" or not isinstance(workspace, TensorView)):
        raise t.error("pl.dump_data workspace= is a GM tensor, for an Acc tile only")
    if flag is not None:
        raise t.error("pl.dump_data flag= is not supported (the file name says the line and "
                      "the block)")
    if (offsets is None) != (shapes is None):
        raise t.error("pl.dump_data offsets and shapes go together")
    if offsets is None:
        offs, shape = [0, 0], list(data.valid)
    else:
        offs, shape = _window(t, offsets, shapes)
    return emit("dbg_dump", [data], {"offsets": offs, "shape": shape, **_loc_attr(t, loc)})


def _dump_gm(t, data, offsets, shapes, workspace, loc, flag):
    """A GM tensor's window (default all of it), on V (FIX in a cube section)."""
    if workspace is not None or flag is not None:
        raise t.error("pl.dump_data of a GM tensor takes no workspace= or flag=")
    if (offsets is None) != (shapes is None):
        raise t.error("pl.dump_data offsets and shapes go together")
    rank = len(data.dims)
    if offsets is None:
        offs, shape = [0] * rank, list(data.dims)
    else:
        offs, shape = _window(t, offsets, shapes, rank)
    pipe = "FIX" if t.section == "cube" else "V"
    return emit("dbg_dump_gm", [data], {"offsets": offs, "shape": shape, "pipe": pipe,
                                        **_loc_attr(t, loc)})


def _window(t, offsets, shapes, rank: int = 2) -> tuple:
    if not (isinstance(offsets, (list, tuple)) and isinstance(shapes, (list, tuple)) and
            len(offsets) == rank and len(shapes) == rank):
        raise t.error(f"pl.dump_data offsets and shapes are {rank} entries each (the rank of "
                      f"what is dumped)")
    offs, shape = [expr_of(o) for o in offsets], [expr_of(s) for s in shapes]
    if any(x is None for x in offs + shape):
        raise t.error(f"pl.dump_data offsets and shapes must be integer scalars, not "
                      f"{offsets!r} and {shapes!r}")
    if any(isinstance(s, int) and s <= 0 for s in shape):
        raise t.error(f"pl.dump_data shapes must be positive, not {list(shapes)}")
    return offs, shape


def _cond_text(t) -> str:
    """The source text of the pto_assert call's first argument (as the reference's parser
    extracts it), or "condition" when it cannot be read."""
    loc = t.loc()
    path = inspect.getsourcefile(t.kernel.fn) or ""
    if loc is None or not path:
        return "condition"
    for n in range(1, 12):
        src = "".join(linecache.getline(path, loc.line + k) for k in range(n))
        try:
            tree = ast.parse(textwrap.dedent(src))
        except SyntaxError:
            continue
        text = _first_arg(tree, textwrap.dedent(src))
        text = "".join(ch for ch in " ".join((text or "").split()) if ch.isprintable())
        return text[:200] or "condition"
    return "condition"


def _first_arg(tree, src: str):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args and \
                getattr(node.func, "attr", getattr(node.func, "id", "")) == "pto_assert":
            return ast.get_source_segment(src, node.args[0])
    return None
