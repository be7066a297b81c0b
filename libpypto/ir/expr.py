"""Symbolic integer expressions: dims, offsets, valid shapes, loop bounds and conditions.

An expression is either a Python ``int`` or an immutable ``Expr`` node. Constructors fold
constants and normalise sums and products, so structurally equal computations compare equal
(two kernels over ``cdiv(N, 8)`` rows have the same grid). Expressions print in infix form,
parse back from it, evaluate over ints or numpy int64 arrays, and render as C.
"""
from __future__ import annotations

import re
from typing import Callable, Mapping, Union

Ex = Union[int, "Expr"]

# op -> (printed infix token, precedence); function-style ops print as name(args)
_INFIX = {"add": ("+", 4), "mul": ("*", 5), "floordiv": ("//", 5), "mod": ("%", 5),
          "lt": ("<", 3), "le": ("<=", 3), "eq": ("==", 3), "ne": ("!=", 3),
          "and": ("and", 1), "or": ("or", 0)}
_FUNCS = ("min", "max", "cdiv", "not", "select")


class Expr:
    """A symbolic integer (or boolean 0/1) expression node. Build with the module functions."""

    __slots__ = ("op", "args", "_hash")

    def __init__(self, op: str, args: tuple):
        self.op = op
        self.args = args
        self._hash = hash((op, args))

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other) -> bool:
        return isinstance(other, Expr) and self._hash == other._hash and \
            self.op == other.op and self.args == other.args

    def __repr__(self) -> str:
        return f"Expr({to_str(self)!r})"

    def __str__(self) -> str:
        return to_str(self)


def sym(name: str) -> Expr:
    return Expr("sym", (name,))


# -- construction with folding ------------------------------------------------------------

def _sort_key(e: Ex):
    return (0, e) if isinstance(e, int) else (1, to_str(e))


def add(*terms: Ex) -> Ex:
    """Sum with constants folded and like terms (c*x) combined."""
    const = 0
    coeffs: dict[Expr, int] = {}
    stack = list(terms)
    while stack:
        t = stack.pop()
        if isinstance(t, int):
            const += t
        elif t.op == "add":
            stack.extend(t.args)
        else:
            c, base = _split_coeff(t)
            coeffs[base] = coeffs.get(base, 0) + c
    items = [_scale(b, c) for b, c in coeffs.items() if c != 0]
    items.sort(key=_sort_key)
    if const:
        items.append(const)
    if not items:
        return 0
    if len(items) == 1:
        return items[0]
    return Expr("add", tuple(items))


def _split_coeff(e: Expr) -> tuple[int, Expr]:
    if e.op == "mul" and isinstance(e.args[-1], int):
        rest = e.args[:-1]
        return e.args[-1], rest[0] if len(rest) == 1 else Expr("mul", rest)
    return 1, e


def _scale(e: Expr, c: int) -> Ex:
    return e if c == 1 else mul(e, c)


def sub(a: Ex, b: Ex) -> Ex:
    return add(a, mul(b, -1))


def mul(*factors: Ex) -> Ex:
    const = 1
    parts: list[Expr] = []
    stack = list(factors)
    while stack:
        f = stack.pop()
        if isinstance(f, int):
            const *= f
        elif f.op == "mul":
            stack.extend(f.args)
        else:
            parts.append(f)
    if const == 0:
        return 0
    if not parts:
        return const
    if len(parts) == 1 and any(p.op == "add" for p in parts):
        # distribute a constant over a sum so that (a + b) * 2 and 2a + 2b agree
        return add(*[mul(t, const) for t in parts[0].args])
    parts.sort(key=_sort_key)
    if const != 1:
        parts.append(const)
    return parts[0] if len(parts) == 1 else Expr("mul", tuple(parts))


def floordiv(a: Ex, b: Ex) -> Ex:
    if isinstance(a, int) and isinstance(b, int):
        return a // b
    if b == 1:
        return a
    if isinstance(b, int) and b > 0:
        # (k*b*x + r) // b == k*x + r // b when the multiple part divides exactly
        if isinstance(a, Expr) and a.op == "mul" and isinstance(a.args[-1], int) and a.args[-1] % b == 0:
            return mul(_drop_coeff(a), a.args[-1] // b)
        if isinstance(a, Expr) and a.op == "add":
            whole = [t for t in a.args if _divisible(t, b)]
            if whole:
                rest = add(*[t for t in a.args if not _divisible(t, b)])
                return add(*[floordiv(t, b) for t in whole], floordiv(rest, b))
    return Expr("floordiv", (a, b))


def _drop_coeff(e: Expr) -> Ex:
    rest = e.args[:-1]
    return rest[0] if len(rest) == 1 else Expr("mul", rest)


def _divisible(t: Ex, b: int) -> bool:
    if isinstance(t, int):
        return t % b == 0
    return t.op == "mul" and isinstance(t.args[-1], int) and t.args[-1] % b == 0


def cdiv(a: Ex, b: Ex) -> Ex:
    """Ceiling division (number of tiles of size b covering a)."""
    if isinstance(a, int) and isinstance(b, int):
        return -(-a // b)
    if b == 1:
        return a
    if isinstance(b, int) and _divisible(a, b):
        return floordiv(a, b)
    return Expr("cdiv", (a, b))


def mod(a: Ex, b: Ex) -> Ex:
    if isinstance(a, int) and isinstance(b, int):
        return a % b
    if b == 1:
        return 0
    if isinstance(b, int) and _divisible(a, b):
        return 0
    return Expr("mod", (a, b))


def _minmax(op: str, a: Ex, b: Ex) -> Ex:
    """n-ary min/max: nested calls flatten, duplicates go, and of two arguments that differ
    by a constant only the smaller (min) or larger (max) stays."""
    pick = min if op == "min" else max
    args: list = []
    for x in (a, b):
        args.extend(x.args if isinstance(x, Expr) and x.op == op else [x])
    consts = [x for x in args if isinstance(x, int)]
    kept: list = [pick(consts)] if consts else []
    for x in args:
        if isinstance(x, int) or x in kept:
            continue
        for i, y in enumerate(kept):
            d = sub(x, y)
            if isinstance(d, int):
                if pick(d, 0) == d:      # x is the better pick
                    kept[i] = x
                break
        else:
            kept.append(x)
    # a constant may now be dominated by a symbolic term at constant distance: re-run once
    kept = list(dict.fromkeys(kept))
    if len(kept) == 1:
        return kept[0]
    return Expr(op, tuple(sorted(kept, key=_sort_key)))


def minimum(a: Ex, *rest: Ex) -> Ex:
    for b in rest:
        a = _minmax("min", a, b)
    return a


def maximum(a: Ex, *rest: Ex) -> Ex:
    for b in rest:
        a = _minmax("max", a, b)
    return a


def _cmp(op: str, a: Ex, b: Ex, fold: Callable[[int, int], bool]) -> Ex:
    if isinstance(a, int) and isinstance(b, int):
        return int(fold(a, b))
    d = sub(a, b)
    if isinstance(d, int):
        return int(fold(d, 0))
    return Expr(op, (a, b))


def lt(a: Ex, b: Ex) -> Ex:
    return _cmp("lt", a, b, lambda x, y: x < y)


def le(a: Ex, b: Ex) -> Ex:
    return _cmp("le", a, b, lambda x, y: x <= y)


def eq(a: Ex, b: Ex) -> Ex:
    return _cmp("eq", a, b, lambda x, y: x == y)


def ne(a: Ex, b: Ex) -> Ex:
    return _cmp("ne", a, b, lambda x, y: x != y)


def logical_and(a: Ex, b: Ex) -> Ex:
    if isinstance(a, int):
        return b if a else 0
    if isinstance(b, int):
        return a if b else 0
    return Expr("and", (a, b))


def logical_or(a: Ex, b: Ex) -> Ex:
    if isinstance(a, int):
        return 1 if a else b
    if isinstance(b, int):
        return 1 if b else a
    return Expr("or", (a, b))


def logical_not(a: Ex) -> Ex:
    if isinstance(a, int):
        return int(not a)
    return Expr("not", (a,))


def select(c: Ex, a: Ex, b: Ex) -> Ex:
    if isinstance(c, int):
        return a if c else b
    return a if a == b else Expr("select", (c, a, b))


_BUILD = {"add": add, "mul": mul, "floordiv": floordiv, "mod": mod, "cdiv": cdiv,
          "min": minimum, "max": maximum, "lt": lt, "le": le, "eq": eq, "ne": ne,
          "and": logical_and, "or": logical_or, "not": logical_not, "select": select}


# -- queries and rewriting -----------------------------------------------------------------

def free_symbols(e: Ex) -> set[str]:
    out: set[str] = set()
    _collect(e, out)
    return out


def _collect(e: Ex, out: set) -> None:
    if isinstance(e, Expr):
        if e.op == "sym":
            out.add(e.args[0])
        else:
            for a in e.args:
                _collect(a, out)


def substitute(e: Ex, env: Mapping[str, Ex]) -> Ex:
    """Replace symbols by expressions (or ints), re-folding on the way up."""
    if isinstance(e, int):
        return e
    if e.op == "sym":
        return env.get(e.args[0], e)
    return _BUILD[e.op](*[substitute(a, env) for a in e.args])


def substitute_attrs(a, env: Mapping[str, Ex]):
    """substitute() in every expression of an attribute value (nested dicts and lists)."""
    if isinstance(a, dict):
        return {k: substitute_attrs(v, env) for k, v in a.items()}
    if isinstance(a, list):
        return [substitute_attrs(v, env) for v in a]
    return substitute(a, env) if isinstance(a, Expr) else a


def evaluate(e: Ex, env: Mapping[str, object]):
    """Value of e with every symbol bound; works elementwise on numpy integer arrays."""
    if isinstance(e, int):
        return e
    op, args = e.op, e.args
    if op == "sym":
        try:
            return env[args[0]]
        except KeyError:
            raise UnboundSymbol(args[0]) from None
    v = [evaluate(a, env) for a in args]
    if op == "add":
        r = v[0]
        for x in v[1:]:
            r = r + x
        return r
    if op == "mul":
        r = v[0]
        for x in v[1:]:
            r = r * x
        return r
    if op == "floordiv":
        return v[0] // v[1]
    if op == "cdiv":
        return -(-v[0] // v[1])
    if op == "mod":
        return v[0] % v[1]
    if op in ("min", "max"):
        if all(isinstance(x, int) for x in v):
            return min(v) if op == "min" else max(v)
        import numpy as np
        r = v[0]
        for x in v[1:]:
            r = (np.minimum if op == "min" else np.maximum)(r, x)
        return r
    if op in ("lt", "le", "eq", "ne"):
        r = {"lt": v[0] < v[1], "le": v[0] <= v[1], "eq": v[0] == v[1], "ne": v[0] != v[1]}[op]
        return int(r) if isinstance(r, bool) else r.astype("int64")
    if op in ("and", "or", "not"):
        if all(isinstance(x, int) for x in v):
            return int({"and": lambda: bool(v[0]) and bool(v[1]),
                        "or": lambda: bool(v[0]) or bool(v[1]),
                        "not": lambda: not v[0]}[op]())
        import numpy as np
        b = [np.asarray(x) != 0 for x in v]
        r = {"and": lambda: b[0] & b[1], "or": lambda: b[0] | b[1], "not": lambda: ~b[0]}[op]()
        return r.astype("int64")
    if op == "select":
        if isinstance(v[0], int):
            return v[1] if v[0] else v[2]
        import numpy as np
        return np.where(v[0] != 0, v[1], v[2])
    raise ValueError(f"unknown expression op {op!r}")


def bounds(e: Ex, ranges: Mapping[str, tuple]) -> tuple:
    """Interval (lo, hi) that e stays in when each symbol stays in its range; None = unbounded.

    Symbols without a range are only known to be >= 0 (sizes, indices)."""
    inf = None
    if isinstance(e, int):
        return e, e
    op, args = e.op, e.args
    if op == "sym":
        return ranges.get(args[0], (0, inf))
    b = [bounds(a, ranges) for a in args]
    if op == "add":
        lo = sum(x[0] for x in b) if all(x[0] is not None for x in b) else None
        hi = sum(x[1] for x in b) if all(x[1] is not None for x in b) else None
        return lo, hi
    if op == "mul":
        lo, hi = b[0]
        for lo2, hi2 in b[1:]:
            if None in (lo, hi, lo2, hi2):
                if (lo is not None and lo >= 0 and lo2 is not None and lo2 >= 0):
                    lo, hi = lo * lo2, None
                    continue
                return None, None
            c = [lo * lo2, lo * hi2, hi * lo2, hi * hi2]
            lo, hi = min(c), max(c)
        return lo, hi
    if op in ("min", "max"):
        los, his = [x[0] for x in b], [x[1] for x in b]
        if op == "min":
            lo = min(los) if None not in los else None
            hi = min(h for h in his if h is not None) if any(h is not None for h in his) else None
        else:
            lo = max(lo for lo in los if lo is not None) if any(x is not None for x in los) else None
            hi = max(his) if None not in his else None
        return lo, hi
    if op in ("floordiv", "cdiv") and isinstance(args[1], int) and args[1] > 0:
        (lo, hi), d = b[0], args[1]
        f = (lambda v: v // d) if op == "floordiv" else (lambda v: -(-v // d))
        return (f(lo) if lo is not None else None), (f(hi) if hi is not None else None)
    return None, None


def simplify_in(e: Ex, ranges: Mapping[str, tuple]) -> Ex:
    """Drop the arguments of a min (max) that the ranges prove never smaller (larger)."""
    if not isinstance(e, Expr) or e.op not in ("min", "max"):
        return e
    keep = []
    for a in e.args:
        dominated = False
        for o in e.args:
            if o is a:
                continue
            lo, hi = bounds(sub(a, o) if e.op == "min" else sub(o, a), ranges)
            if lo is not None and lo >= 0 and (o in keep or o not in keep):
                dominated = True
                break
        if not dominated:
            keep.append(a)
    if not keep:
        keep = [e.args[0]]
    r = keep[0]
    for a in keep[1:]:
        r = _minmax(e.op, r, a)
    return r


class UnboundSymbol(Exception):
    """Raised by evaluate() when a symbol has no value; .name is the symbol."""

    def __init__(self, name: str):
        super().__init__(name)
        self.name = name


# -- printing -------------------------------------------------------------------------------

def to_str(e: Ex) -> str:
    return _fmt(e, 0)


def _fmt(e: Ex, prec: int) -> str:
    if isinstance(e, int):
        s = str(e)
        return f"({s})" if e < 0 and prec > 4 else s
    op, args = e.op, e.args
    if op == "sym":
        return args[0]
    if op in _FUNCS:
        return f"{op}({', '.join(_fmt(a, 0) for a in args)})"
    if op == "add":
        args = sorted(args, key=lambda t: _negated(t) is not None)
        s = _fmt(args[0], 4)
        for t in args[1:]:
            neg = _negated(t)
            s += f" - {_fmt(neg, 5)}" if neg is not None else f" + {_fmt(t, 5)}"
        return f"({s})" if prec > 4 else s
    tok, p = _INFIX[op]
    if op == "mul" and args[-1] == -1:
        s = "-" + _fmt(_drop_coeff(e), 6)
    elif op == "mul":
        s = "*".join(_fmt(a, 6) for a in args)
    else:
        s = f"{_fmt(args[0], p)} {tok} {_fmt(args[1], p + 1)}"
    return f"({s})" if prec > p else s


def _negated(t: Ex):
    if isinstance(t, int):
        return -t if t < 0 else None
    if t.op == "mul" and isinstance(t.args[-1], int) and t.args[-1] < 0:
        return mul(t, -1)
    return None


def to_c(e: Ex, name: Callable[[str], str] = lambda s: s) -> str:
    """C expression over int64_t; floor division and min/max through pp_* helpers."""
    if isinstance(e, int):
        return f"{e}LL" if abs(e) > 2**31 - 1 else str(e)
    op, args = e.op, e.args
    if op == "sym":
        return name(args[0])
    a = [to_c(x, name) for x in args]
    if op == "add":
        return "(" + " + ".join(a) + ")"
    if op == "mul":
        return "(" + " * ".join(a) + ")"
    simple = {"lt": "<", "le": "<=", "eq": "==", "ne": "!=", "and": "&&", "or": "||"}
    if op in simple:
        return f"({a[0]} {simple[op]} {a[1]})"
    if op == "not":
        return f"(!{a[0]})"
    if op == "select":
        return f"({a[0]} ? {a[1]} : {a[2]})"
    if op in ("min", "max"):
        r = a[0]
        for x in a[1:]:
            r = f"pp_{op}({r}, {x})"
        return r
    return f"pp_{op}({', '.join(a)})"


def to_py(e: Ex, name: Callable[[str], str] = lambda s: s) -> str:
    """Python expression over ints (floor division as in the IR)."""
    if isinstance(e, int):
        return str(e) if e >= 0 else f"({e})"
    op, args = e.op, e.args
    if op == "sym":
        return name(args[0])
    a = [to_py(x, name) for x in args]
    if op == "add":
        return "(" + " + ".join(a) + ")"
    if op == "mul":
        return "(" + " * ".join(a) + ")"
    simple = {"floordiv": "//", "mod": "%", "lt": "<", "le": "<=", "eq": "==", "ne": "!=",
              "and": "and", "or": "or"}
    if op in simple:
        return f"int({a[0]} {simple[op]} {a[1]})" if op in ("lt", "le", "eq", "ne", "and", "or") \
            else f"({a[0]} {simple[op]} {a[1]})"
    if op == "not":
        return f"int(not {a[0]})"
    if op == "cdiv":
        return f"(-(-{a[0]} // {a[1]}))"
    if op == "select":
        return f"({a[1]} if {a[0]} else {a[2]})"
    return f"{op}({', '.join(a)})"


# -- parsing --------------------------------------------------------------------------------

_TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z_][A-Za-z_0-9]*)|(//|<=|>=|==|!=|[-+*%()<>,]))")


class ExprSyntaxError(ValueError):
    pass


def parse(text: str) -> Ex:
    """Parse the infix form written by to_str(); a LimitError past the limits on an
    expression's length and nesting (libpypto/ir/limits.py)."""
    from .limits import limit, over
    if len(text) > limit("EXPR"):
        raise over("EXPR", "an expression's length in characters", len(text))
    p = ExprParser(tokenize(text))
    e = p.parse()
    if p.peek() is not None:
        raise ExprSyntaxError(f"unexpected {p.peek()[1]!r} in expression {_cut(text)!r}")
    return e


def _cut(text: str) -> str:
    return text if len(text) <= 40 else text[:37] + "..."


def depth(e: Ex, cap: int) -> int:
    """How deeply e nests (an int or a symbol is 1), counted without recursion; stops
    counting past cap (returns cap + 1)."""
    deepest, stack = 0, [(e, 1)]
    while stack:
        x, d = stack.pop()
        if d > cap:
            return d
        deepest = max(deepest, d)
        if isinstance(x, Expr):
            stack.extend((a, d + 1) for a in x.args if isinstance(a, Expr))
    return deepest


def tokenize(text: str) -> list[tuple[str, str]]:
    toks, pos = [], 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise ExprSyntaxError(f"bad character {text[pos:].lstrip()[:1]!r} in expression "
                                  f"{_cut(text)!r}")
        if m.group(1):
            toks.append(("int", m.group(1)))
        elif m.group(2):
            toks.append(("name", m.group(2)))
        else:
            toks.append(("op", m.group(3)))
        pos = m.end()
    return toks


class ExprParser:
    """Precedence climbing over tokens from tokenize(); shared with the IR text parser."""

    _BIN = {"or": 0, "and": 1, "<": 3, "<=": 3, "==": 3, "!=": 3, ">": 3, ">=": 3,
            "+": 4, "-": 4, "*": 5, "//": 5, "%": 5}

    def __init__(self, toks, pos: int = 0):
        from .limits import limit
        self.toks, self.pos = toks, pos
        self.nesting, self.max_depth = 0, limit("EXPR_DEPTH")
        self.size, self.max_size = 0, limit("EXPR")

    def parse(self) -> Ex:
        """One expression, refused (LimitError) when it nests past the limit as written
        (brackets, unary minus) or as built (a long chain of // or %)."""
        from .limits import over
        try:
            e = self.expr()
        except ZeroDivisionError:
            raise ExprSyntaxError("division by zero in an expression") from None
        if depth(e, self.max_depth) > self.max_depth:
            raise over("EXPR_DEPTH", "an expression's nesting")
        return e

    def peek(self):
        return self.toks[self.pos] if self.pos < len(self.toks) else None

    def take(self):
        t = self.peek()
        if t is None:
            raise ExprSyntaxError("expression ends too early")
        self.pos += 1
        self.size += len(t[1]) + 1        # about the characters of the expression so far
        if self.size > self.max_size:
            from .limits import over
            raise over("EXPR", "an expression's length in characters")
        return t

    def expr(self, min_prec: int = 0) -> Ex:
        lhs = self.unary()
        while True:
            t = self.peek()
            if t is None or t[1] not in self._BIN or t[0] == "int":
                return lhs
            prec = self._BIN[t[1]]
            if prec < min_prec:
                return lhs
            self.take()
            rhs = self.expr(prec + 1)
            lhs = _binary(t[1], lhs, rhs)

    def unary(self) -> Ex:
        from .limits import over
        self.nesting += 1
        try:
            if self.nesting > self.max_depth:
                raise over("EXPR_DEPTH", "an expression's nesting")
            return self._unary()
        finally:
            self.nesting -= 1

    def _unary(self) -> Ex:
        t = self.take()
        if t == ("op", "-"):
            return mul(self.unary(), -1)
        if t[0] == "int":
            if len(t[1]) > 40:
                raise ExprSyntaxError(f"an int of {len(t[1])} digits in an expression")
            return int(t[1])
        if t == ("op", "("):
            e = self.expr()
            self.expect(")")
            return e
        if t[0] == "name":
            if t[1] == "not":
                if self.peek() == ("op", "("):     # not(...) as printed: binds tightly
                    self.take()
                    e = self.expr()
                    self.expect(")")
                    return logical_not(e)
                return logical_not(self.expr(2))
            if self.peek() == ("op", "("):
                self.take()
                args = [self.expr()]
                while self.peek() == ("op", ","):
                    self.take()
                    args.append(self.expr())
                self.expect(")")
                if t[1] in ("min", "max") and len(args) >= 2:
                    r = args[0]
                    for x in args[1:]:
                        r = _minmax(t[1], r, x)
                    return r
                fn, arity = {"cdiv": (cdiv, 2), "select": (select, 3)}.get(t[1], (None, 0))
                if fn is None:
                    raise ExprSyntaxError(f"unknown function {t[1]!r} in expression")
                if len(args) != arity:
                    raise ExprSyntaxError(f"{t[1]} takes {arity} arguments, not {len(args)}")
                return fn(*args)
            return sym(t[1])
        raise ExprSyntaxError(f"unexpected {t[1]!r} in expression")

    def expect(self, tok: str) -> None:
        t = self.take()
        if t[1] != tok:
            raise ExprSyntaxError(f"expected {tok!r}, got {t[1]!r}")


def _binary(tok: str, a: Ex, b: Ex) -> Ex:
    if tok == "+":
        return add(a, b)
    if tok == "-":
        return sub(a, b)
    if tok == "*":
        return mul(a, b)
    if tok == "//":
        return floordiv(a, b)
    if tok == "%":
        return mod(a, b)
    if tok == ">":
        return lt(b, a)
    if tok == ">=":
        return le(b, a)
    return {"<": lt, "<=": le, "==": eq, "!=": ne, "and": logical_and, "or": logical_or}[tok](a, b)
