"""Op definitions: the one place an op is described, in the spirit of MLIR's ODS.

An OpDef names an op and says where it may appear, how many operands, results and regions
it has, the grammar of every attribute (a file's strings are checked against it before any
pass or renderer sees them: IR files are data), its own verifier (result types, shapes), and
the names of its implementations in the later floors (the tiling rule, the numpy meaning, the
C and numpy renderers, the PTO mnemonic). The level verifiers, the renderers' dispatch and the
tables of names are derived from the definitions; tests/unit/ir/test_opdefs.py checks that
every defined op has every implementation it needs.

The definitions themselves live in tensor_ops.py, tile_ops.py and module_ops.py; defs.py
collects them into OPS.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Callable

from . import expr as E
from .types import DTYPES, SPACES

IDENT = re.compile(r"[A-Za-z_][A-Za-z_0-9]*\Z")
INT_LIMIT = 1 << 62          # ints in files stay well inside int64 (sizes, offsets, values)
PIPES = ("MTE1", "MTE2", "MTE3", "V", "M", "FIX", "S")
MAX_TEXT = 64 << 20          # a string attribute (program source, a listing) up to 64 MiB


# -- attribute grammar ------------------------------------------------------------------------

class Kind:
    """A grammar for attribute values: problem(v) is None for a valid value, else what is
    wrong (one phrase)."""

    what = "a value"

    def problem(self, v) -> str | None:
        raise NotImplementedError


class Int(Kind):
    def __init__(self, lo: int | None = None, hi: int | None = None):
        lo = -INT_LIMIT if lo is None else lo
        self.lo, self.hi = lo, INT_LIMIT if hi is None else hi
        self.what = "an int" + (f" >= {lo}" if lo != -INT_LIMIT else "") + \
            (f" <= {hi}" if hi is not None else "")

    def problem(self, v):
        if not is_int(v) or (self.lo is not None and v < self.lo) or \
                (self.hi is not None and v > self.hi):
            return f"must be {self.what}, not {short(v)}"
        return None


class Bool(Kind):
    what = "true or false"

    def problem(self, v):
        return None if isinstance(v, bool) else f"must be true or false, not {short(v)}"


class Num(Kind):
    """An int or a float (inf and nan included: fill values)."""

    what = "a number"

    def problem(self, v):
        ok = is_num(v) and (not isinstance(v, int) or -INT_LIMIT <= v <= INT_LIMIT)
        return None if ok else f"must be a number, not {short(v)}"


class Ex(Kind):
    """A symbolic integer expression (or an int); num=True also admits a float."""

    def __init__(self, num: bool = False):
        self.num = num
        self.what = "an expression" + (" or a number" if num else "")

    def problem(self, v):
        if is_int(v) and -INT_LIMIT <= v <= INT_LIMIT or (self.num and is_num(v)):
            return None
        if isinstance(v, E.Expr):
            big = [x for x in _ints(v) if not -INT_LIMIT <= x <= INT_LIMIT]
            return f"holds {short(big[0])}, out of range" if big else None
        return f"must be {self.what}, not {short(v)}"


class Str(Kind):
    """One of a closed set of strings."""

    def __init__(self, *choices: str):
        self.choices = choices
        self.what = "one of " + ", ".join(repr(c) for c in choices)

    def problem(self, v):
        return None if v in self.choices and isinstance(v, str) else \
            f"must be {self.what}, not {short(v)}"


class Ident(Kind):
    what = "a name (letters, digits, _)"

    def problem(self, v):
        return None if isinstance(v, str) and IDENT.match(v) else \
            f"must be a name (letters, digits and _), not {short(v)}"


class Text(Kind):
    """Free text (a description, program source): printed escaped, never a name."""

    what = "a string"

    def problem(self, v):
        if not isinstance(v, str):
            return f"must be a string, not {short(v)}"
        return f"is longer than {MAX_TEXT} characters" if len(v) > MAX_TEXT else None


class Bytes(Kind):
    what = "bytes"

    def problem(self, v):
        return None if isinstance(v, bytes) else f"must be bytes, not {short(v)}"


class OneOf(Kind):
    """A value of any of several kinds (e.g. a number or an expression)."""

    def __init__(self, *kinds: Kind):
        self.kinds = kinds
        self.what = " or ".join(k.what for k in kinds)

    def problem(self, v):
        for k in self.kinds:
            if k.problem(v) is None:
                return None
        return f"must be {self.what}, not {short(v)}"


class Null(Kind):
    what = "null"

    def problem(self, v):
        return None if v is None else f"must be null, not {short(v)}"


class ListOf(Kind):
    def __init__(self, item: Kind, n: int | None = None, max_len: int = 1 << 24):
        self.item, self.n, self.max_len = item, n, max_len
        self.what = f"a list of {self.n or ''}{' ' if self.n else ''}{item.what}"

    def problem(self, v):
        if not isinstance(v, list):
            return f"must be {self.what}, not {short(v)}"
        if self.n is not None and len(v) != self.n:
            return f"must have {self.n} entries, not {len(v)}"
        if len(v) > self.max_len:
            return f"has more than {self.max_len} entries"
        for i, x in enumerate(v):
            p = self.item.problem(x)
            if p is not None:
                return f"[{i}] {p}"
        return None


class Tuple(Kind):
    """A list of fixed length whose entries have their own kinds."""

    def __init__(self, *items: Kind):
        self.items = items
        self.what = "[" + ", ".join(k.what for k in items) + "]"

    def problem(self, v):
        if not isinstance(v, list) or len(v) != len(self.items):
            return f"must be {self.what}, not {short(v)}"
        for i, (k, x) in enumerate(zip(self.items, v)):
            p = k.problem(x)
            if p is not None:
                return f"[{i}] {p}"
        return None


class DictOf(Kind):
    """A dict with these keys: name -> (kind, required); no other keys."""

    def __init__(self, schema: dict, open_: bool = False):
        self.schema, self.open = schema, open_
        self.what = "a dict {" + ", ".join(schema) + "}"

    def problem(self, v):
        if not isinstance(v, dict):
            return f"must be {self.what}, not {short(v)}"
        return check_fields(v, self.schema, self.open)


class MapOf(Kind):
    """A dict from keys of one kind to values of another (bindings, buffer sizes)."""

    def __init__(self, key: Kind, value: Kind, max_len: int = 1 << 16):
        self.key, self.value, self.max_len = key, value, max_len
        self.what = f"a dict of {key.what} to {value.what}"

    def problem(self, v):
        if not isinstance(v, dict):
            return f"must be {self.what}, not {short(v)}"
        if len(v) > self.max_len:
            return f"has more than {self.max_len} entries"
        for k, x in v.items():
            p = self.key.problem(k) or self.value.problem(x)
            if p is not None:
                return f"{{{short(k)}}} {p}"
        return None


class Anything(Kind):
    what = "anything"

    def problem(self, v):
        return None


def check_fields(v: dict, schema: dict, open_: bool = False) -> str | None:
    """The first problem of a dict against a schema (name -> (kind, required)), or None."""
    missing = [name for name, (_, required) in schema.items() if required and name not in v]
    if len(missing) == 1:
        return f"needs {missing[0]} ({schema[missing[0]][0].what})"
    if missing:
        return f"needs {', '.join(missing)}"
    for name, (kind, _) in schema.items():
        if name not in v:
            continue
        p = kind.problem(v[name])
        if p is not None:
            return f"{name} {p}"
    if not open_:
        extra = sorted(str(k) for k in v if k not in schema)
        if extra:
            return f"has unknown attribute {short(extra[0])} (known: {', '.join(schema)})"
    return None


def _ints(e):
    for a in e.args:
        if isinstance(a, E.Expr):
            yield from _ints(a)
        elif isinstance(a, int):
            yield a


def is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def is_num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def short(v) -> str:
    """A value for a message: repr, cut to 40 characters."""
    s = repr(v) if not isinstance(v, E.Expr) else E.to_str(v)
    return s if len(s) <= 40 else s[:37] + "..."


MAX_RANK = 16               # dims of a tensor or a tile


def type_problem(t) -> str | None:
    """What is wrong with a value's type as read from a file, or None: a tile is in a known
    space with static dims >= 1; a tensor's dims are ints >= 0 or expressions; every int
    within INT_LIMIT."""
    from .types import TensorType, TileType
    shape = getattr(t, "shape", ())
    if len(shape) > MAX_RANK:
        return f"has {len(shape)} dims, more than {MAX_RANK}"
    if isinstance(t, TileType):
        if t.space not in SPACES:
            return f"is in unknown memory space {short(t.space)}"
        bad = [d for d in shape if not (is_int(d) and 1 <= d <= INT_LIMIT)]
        return f"has tile dim {short(bad[0])}, not an int in 1 .. 2**62" if bad else None
    if isinstance(t, TensorType):
        for d in shape:
            if is_int(d) and not 0 <= d <= INT_LIMIT:
                return f"has dim {short(d)}, not an int in 0 .. 2**62"
            p = EXPR.problem(d)
            if p is not None:
                return f"has a dim that {p}"
    return None


DTYPE = Str(*DTYPES)
SPACE = Str(*SPACES)
PIPE = Str(*PIPES)
EXPR = Ex()
EXPRS = ListOf(EXPR)
INTS = ListOf(Int())
NAT = Int(0)
FINITE = Num()


# -- definitions ------------------------------------------------------------------------------

@dataclass(frozen=True)
class OpDef:
    """One op. where: the contexts it may appear in ("tensor": a tensor graph, "tile": a
    kernel, block or program body, "module": the top level of a tile-or-later document).
    operands: a kind per position ("tensor", "tile", "scalar", "any"), the last one ending in
    "*" for any number more; optional: how many trailing operands may be left out.
    impl: implementation kind -> name (see tensor_ops.py and tile_ops.py for the kinds)."""

    name: str
    where: tuple
    operands: tuple = ()
    optional: int = 0
    results: tuple = ()
    regions: int = 0
    attrs: dict = field(default_factory=dict)
    verify: Callable | None = None
    impl: dict = field(default_factory=dict)
    writes: tuple = (0,)             # tile instructions: operand positions written ...
    reads_dest: tuple = ()           # ... and those of them also read (accumulators)
    pipe: Callable | str | None = None
    pto: str | None = None

    def operand_range(self) -> tuple[int, float]:
        if self.operands and self.operands[-1].endswith("*"):
            return len(self.operands) - 1, math.inf
        return len(self.operands) - self.optional, len(self.operands)

    def operand_kind(self, i: int) -> str:
        if self.operands and self.operands[-1].endswith("*") and i >= len(self.operands) - 1:
            return self.operands[-1][:-1]
        return self.operands[i]


def attr(kind: Kind, required: bool = True) -> tuple:
    return (kind, required)


def opt(kind: Kind) -> tuple:
    return (kind, False)
