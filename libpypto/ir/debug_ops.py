"""Definitions of the debug instructions of Pro mode (`pl.printf`, `pl.pto_assert`,
`pl.dump_data`, `pl.trap`; the reference's Utils-API/debugging pages), and the printf format
grammar both execution paths share.

    dbg_printf  format, args                  on S      PRINTF
    dbg_assert  cond, text, format, args      on S      PTO_ASSERT
    dbg_dump    a tile, offsets, shape        on V (Vec tile) / FIX (Acc tile)   TPRINT
    dbg_dump_gm a GM tensor, offsets, shape   on V      TPRINT
    dbg_trap                                  on S      TRAP

A format string is data (an IR file may hold anything): the attribute grammar (FORMAT)
admits only the reference's restricted printf subset, `%[flags][width][.precision]conv`
with flags `-+ #0`, conv d i u x f, no `%%`, `%s`, `%c`, `%n`, `%p` or length modifiers,
printable characters plus newline and tab, at most MAX_FORMAT characters, a width of at most
MAX_WIDTH and a precision of at most MAX_PRECISION. Further, so that the Pro runner's Python
formatting and the C's snprintf give the same bytes: `#` only with x and f, and no
precision on an integer conversion. The C never sees the string as a format: parse_format
splits it into literal pieces (emitted as escaped C string literals) and conversions, and
the C builds each conversion's spec itself from the parsed flags, width and precision.
An argument is an integer expression (%d %i print it as int64, %u %x as its uint64 bits) or
a number/float expression for %f (rounded to fp32 first, as the reference's FP32-only %f).

The instructions take no tile operand except dbg_dump (whose tile the checker sees as read);
their C and numpy implementations in Tensor mode are the no-op sync ones (they never appear
there); the Pro runner's are in libpypto/runtime/pro_debug.py and the C's in
libpypto/codegen/pro_debug_c.py.
"""
from __future__ import annotations

import re

from .opdef import EXPR, EXPRS, Bool, Ex, Kind, ListOf, OpDef, PIPE, attr, opt, short

W = ("tile",)
MAX_FORMAT = 1024
MAX_TEXT = 512
MAX_ARGS = 32
MAX_WIDTH = 128
MAX_PRECISION = 32
FLAGS = "-+ #0"
INT_CONV, FLOAT_CONV = "diux", "f"
SPEC = re.compile(r"%([-+ #0]*)([0-9]*)(?:\.([0-9]+))?([a-zA-Z%]?)")


def _printable(s: str) -> bool:
    return all(ch.isprintable() or ch in "\n\t" for ch in s)


def parse_format(fmt: str) -> list:
    """The pieces of a format string: str (literal text) and (flags, width, precision,
    conv) tuples (width and precision ints or None). ValueError says what is wrong."""
    if not isinstance(fmt, str):
        raise ValueError(f"a format must be a string, not {short(fmt)}")
    if len(fmt) > MAX_FORMAT:
        raise ValueError(f"a format is at most {MAX_FORMAT} characters, not {len(fmt)}")
    if not _printable(fmt):
        raise ValueError("a format holds only printable characters, newlines and tabs")
    out, i, lit = [], 0, []
    while i < len(fmt):
        if fmt[i] != "%":
            lit.append(fmt[i])
            i += 1
            continue
        m = SPEC.match(fmt, i)
        flags, width, prec, conv = m.group(1), m.group(2), m.group(3), m.group(4)
        if conv == "%" and not flags and not width and prec is None:
            raise ValueError("printf does not support a literal '%%' (as the reference)")
        if conv not in tuple(INT_CONV + FLOAT_CONV):
            what = "an incomplete conversion" if not conv else f"conversion '%{conv}'"
            raise ValueError(f"printf does not support {what} (use %d %i %u %x or %f, "
                             f"without length modifiers)")
        if len(set(flags)) != len(flags):
            raise ValueError(f"printf conversion {m.group(0)!r} repeats a flag")
        if "#" in flags and conv not in "xf":
            raise ValueError(f"printf conversion {m.group(0)!r}: '#' goes with %x and %f only")
        if prec is not None and conv != "f":
            raise ValueError(f"printf conversion {m.group(0)!r}: a precision goes with %f only")
        w = int(width) if width else None
        p = int(prec) if prec is not None else None
        if (w or 0) > MAX_WIDTH or (p or 0) > MAX_PRECISION:
            raise ValueError(f"printf conversion {m.group(0)!r}: width at most {MAX_WIDTH}, "
                             f"precision at most {MAX_PRECISION}")
        if lit:
            out.append("".join(lit))
            lit = []
        out.append((flags, w, p, conv))
        i = m.end()
    if lit:
        out.append("".join(lit))
    return out


def conversions(fmt: str) -> list:
    """The conversion letters of a (valid) format, in order."""
    return [p[3] for p in parse_format(fmt) if isinstance(p, tuple)]


class Format(Kind):
    """A printf format of the restricted subset (see the module docstring)."""

    what = "a printf format (%d %i %u %x %f)"

    def problem(self, v):
        try:
            parse_format(v)
        except ValueError as exc:
            return f"is not a valid format: {exc}"
        return None


class Printable(Kind):
    """Free text shown in a message (an assertion's condition source)."""

    what = "printable text"

    def problem(self, v):
        if not isinstance(v, str) or len(v) > MAX_TEXT or not _printable(v):
            return f"must be printable text of at most {MAX_TEXT} characters, not {short(v)}"
        return None


ARGS = ListOf(Ex(num=True), max_len=MAX_ARGS)


def _v_args(op, err) -> None:
    fmt, args = op.attrs.get("format", ""), op.attrs.get("args", [])
    try:
        convs = conversions(fmt)
    except ValueError:
        return                      # the attribute grammar reports it
    if len(convs) != len(args):
        err(f"{op.name}: the format has {len(convs)} conversions and {len(args)} arguments")
        return
    for i, (c, a) in enumerate(zip(convs, args)):
        if c in INT_CONV and isinstance(a, float):
            err(f"{op.name}: argument {i} is the float {a!r} for %{c} (an integer conversion)")


def _v_dump(op, err) -> None:
    t = op.operands[0].type
    if t.space not in ("ub", "l0c", "any"):
        err(f"dbg_dump of a {t.space} tile: only Vec (ub) and Acc (l0c) tiles can be dumped")
    for key in ("offsets", "shape"):
        if len(op.attrs[key]) != 2:
            err(f"dbg_dump {key} must have 2 entries")


def _v_dump_gm(op, err) -> None:
    rank = op.operands[0].type.rank
    for key in ("offsets", "shape"):
        if len(op.attrs[key]) != rank:
            err(f"dbg_dump_gm {key} must have {rank} entries (the tensor's rank)")


def _pipe_dump(op) -> str:
    return "FIX" if op.operands[0].type.space == "l0c" else "V"


def _d(name, operands, attrs, verify, pipe, pto, writes=()):
    return OpDef(name, W, operands, 0, (), 0, {**attrs, "pipe": opt(PIPE)}, verify,
                 {"c": "i_sync", "numpy": "tsync", "pto": pto}, writes, (), pipe, pto)


DEFS = [
    _d("dbg_printf", (), {"format": attr(Format()), "args": attr(ARGS),
                          "show_location": opt(Bool())}, _v_args, "S", "PRINTF"),
    _d("dbg_assert", (), {"cond": attr(EXPR), "text": attr(Printable()),
                          "format": attr(Format()), "args": attr(ARGS),
                          "show_location": opt(Bool())}, _v_args, "S", "PTO_ASSERT"),
    _d("dbg_dump", ("tile",), {"offsets": attr(EXPRS), "shape": attr(EXPRS),
                               "show_location": opt(Bool())}, _v_dump, _pipe_dump, "TPRINT"),
    _d("dbg_dump_gm", ("tensor",), {"offsets": attr(EXPRS), "shape": attr(EXPRS),
                                     "show_location": opt(Bool())}, _v_dump_gm,
       lambda op: op.attrs.get("pipe", "V"), "TPRINT"),
    _d("dbg_trap", (), {}, None, "S", "TRAP"),
]
DEBUG_OPS = frozenset(d.name for d in DEFS)


def debug_ops(doc) -> dict:
    """The debug instructions of a document by (program number, number within the program in
    program order): the key both execution paths name a record by."""
    progs = [top for top in doc.body if top.name == "program"]
    return {(i, j): op for i, p in enumerate(progs) for j, op in enumerate(program_debug_ops(p))}


def program_debug_ops(prog) -> list:
    return [op for op in prog.walk() if op.name in DEBUG_OPS]
