"""The text form of IR files (what `-S` writes, golden tests compare and people read).

    pypto-ir 1.0 tensor
    producer "pypto-trace" {kernel="softmax"}
    module {kernel="softmax"}
    %x = param {index=0, role="input"} : f32[N, 1024] @softmax.py:4
    %0 = amax %x {dims=[1], keepdim=true, tile=[8, 1024]} : f32[N, 1] @softmax.py:7
    loop {var="i0", start=0, stop=N, step=1} @softmax.py:9 {
      ...
    }

One line per op: results, name, operands, {attrs}, ": " result types, "@file:line", then
regions in braces. Attribute values are ints, floats, "strings", triple-quoted strings,
b64"bytes", true/false/null, [lists], {dicts} and bare symbolic expressions (N // 8 + 1).
Lines starting with # are comments. parse(print(doc)) rebuilds the same document.

For people (text_tables.py): a `schedule` op is preceded by a comment block with its
instances as a table (summarised unless print_doc(full=True)), a `run` op by its outputs
(name, dtype, shape, checksum) and its events as a table. The data the tables show is written
in full after them: the attributes of TAIL_ATTRS last in the op's attributes, wrapped over
lines (inside [...] and {...} of attribute values, newlines are skipped), and bytes longer
than BLOB_MIN as blob(N), whose base64 follows at the end of the file as `blob N b64"..."`.
"""
from __future__ import annotations

import base64
import json
import math
import re

from ..errors import LimitError
from . import expr as E
from .core import FORMAT, LEVELS, Document, Loc, Op, Value
from .text_tables import TAIL_ATTRS, comment_block
from .types import DTYPES, SPACES, RegType, ScalarType, TensorType, TileType, reg_type_problem

ISOLATED = ("source", "program")   # ops whose regions have their own value namespace
_BARE = re.compile(r"[A-Za-z_][A-Za-z_0-9]*$")
_BARE_FILE = re.compile(r"[A-Za-z_][A-Za-z_0-9.]*$")
BLOB_MIN = 64        # bytes values longer than this are written at the end, as blob(N)
WRAP = 100           # wrapped attribute values: items per line up to this width


class TextError(ValueError):
    """Malformed text IR; the message starts with the line number."""


# -- printing -------------------------------------------------------------------------------

def print_doc(doc: Document, full: bool = False) -> str:
    """The text form; full=True shows every row of the tables in comments (the data is
    always complete)."""
    p = _Printer(full)
    out = [f"{FORMAT} {doc.version[0]}.{doc.version[1]} {doc.level}"]
    for entry in doc.producer:
        out.append(f'producer {fmt_attr(entry["tool"])} {fmt_attrs(entry.get("options", {}))}')
    if doc.attrs:
        out.append(f"module {fmt_attrs(doc.attrs, p.blobs)}")
    for op in doc.body:
        p.op(op, 0, out)
    if p.blobs:
        out.append("# the bytes referred to above as blob(N), in base64")
        out += [f'blob {i} {fmt_attr(b)}' for i, b in enumerate(p.blobs)]
    return "\n".join(out) + "\n"


class _Printer:
    def __init__(self, full: bool = False):
        self.names: dict[Value, str] = {}
        self.used: set[str] = set()
        self.counter = 0
        self.full = full
        self.blobs: list[bytes] = []

    def define(self, v: Value) -> str:
        if v.name:
            base = v.name if _BARE.match(v.name) else "v_" + re.sub(r"\W", "_", v.name)
            name, k = base, 2
            while name in self.used:
                name, k = f"{base}_{k}", k + 1
        else:
            name = str(self.counter)
            self.counter += 1
        self.used.add(name)
        self.names[v] = name
        return "%" + name

    def ref(self, v: Value) -> str:
        try:
            return "%" + self.names[v]
        except KeyError:
            raise TextError(f"value {v!r} is used before it is defined") from None

    def op(self, op: Op, depth: int, out: list) -> None:
        parts = []
        operands = ", ".join(self.ref(v) for v in op.operands)
        if op.results:
            parts.append(", ".join(self.define(r) for r in op.results) + " =")
        parts.append(op.name)
        if operands:
            parts.append(operands)
        if op.attrs:
            parts.append(self.attrs(op, depth))
        if op.results:
            parts.append(": " + ", ".join(str(r.type) for r in op.results))
        if op.loc is not None:
            f = op.loc.file if _BARE_FILE.match(op.loc.file) else json.dumps(op.loc.file)
            parts.append(f"@{f}:{op.loc.line}")
        line = "  " * depth + " ".join(parts)
        out.extend("  " * depth + c for c in comment_block(op, self.full))
        if not op.regions:
            out.append(line)
            return
        out.append(line + " {")
        saved = (self.names, self.used, self.counter) if op.name in ISOLATED else None
        if saved:
            self.names, self.used, self.counter = {}, set(), 0
        for i, region in enumerate(op.regions):
            if i:
                out.append("  " * depth + "} {")
            for inner in region:
                self.op(inner, depth + 1, out)
        if saved:
            self.names, self.used, self.counter = saved
        out.append("  " * depth + "}")


    def attrs(self, op: Op, depth: int) -> str:
        """{attrs}, with the TAIL_ATTRS of the op last, their lists wrapped over lines."""
        tail = [k for k in TAIL_ATTRS.get(op.name, ()) if isinstance(op.attrs.get(k), list)]
        if not tail:
            return fmt_attrs(op.attrs, self.blobs)
        head = fmt_attrs({k: v for k, v in op.attrs.items() if k not in tail}, self.blobs)
        ind = "  " * (depth + 1)
        parts = [head[:-1] + ("," if len(head) > 2 else "")]
        for k in tail:
            items = [fmt_attr(x, self.blobs) for x in op.attrs[k]]
            parts.append(f"{ind}{_fmt_key(k)}=[" + _wrap(items, ind + "  ") + "]" +
                         ("," if k != tail[-1] else "}"))
        return "\n".join(parts)


def _wrap(items: list[str], ind: str) -> str:
    """Items joined by ', ', a new line (indented by ind) before a line would pass WRAP."""
    lines, cur = [], ""
    for it in items:
        if cur and len(ind) + len(cur) + len(it) + 2 > WRAP:
            lines.append(cur + ",")
            cur = it
        else:
            cur = f"{cur}, {it}" if cur else it
    lines.append(cur)
    return ("\n" + ind).join(lines) if len(lines) == 1 else \
        "\n" + ind + ("\n" + ind).join(lines)


def fmt_attrs(attrs: dict, blobs: list | None = None) -> str:
    return "{" + ", ".join(f"{_fmt_key(k)}={fmt_attr(attrs[k], blobs)}"
                           for k in sorted(attrs)) + "}"


def _fmt_key(k: str) -> str:
    return k if _BARE.match(k) and k not in _KEYWORDS else json.dumps(k)


_KEYWORDS = {"true", "false", "null", "inf", "nan", "and", "or", "not"}


def fmt_attr(v, blobs: list | None = None) -> str:
    """One attribute value; with a list for blobs, bytes longer than BLOB_MIN go there and
    print as blob(N)."""
    if v is True:
        return "true"
    if v is False:
        return "false"
    if v is None:
        return "null"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        r = repr(v)
        return r if any(c in r for c in ".eni") else r + ".0"
    if isinstance(v, str):
        if "\n" in v and '"""' not in v and not v.endswith('"'):
            return '"""' + v + '"""'
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, bytes):
        if blobs is not None and len(v) > BLOB_MIN:
            blobs.append(v)
            return f"blob({len(blobs) - 1})"
        return 'b64"' + base64.b64encode(v).decode() + '"'
    if isinstance(v, E.Expr):
        return E.to_str(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(fmt_attr(x, blobs) for x in v) + "]"
    if isinstance(v, dict):
        return fmt_attrs(v, blobs)
    raise TypeError(f"attribute value of type {type(v).__name__} cannot be printed: {v!r}")


# -- parsing --------------------------------------------------------------------------------

_TOKENS = re.compile(r'''
    (?P<ws>[ \t\r]+)
  | (?P<comment>\#[^\n]*)
  | (?P<nl>\n)
  | (?P<triple>"""(?:.|\n)*?""")
  | (?P<b64>b64"[A-Za-z0-9+/=]*")
  | (?P<str>"(?:[^"\\\n]|\\.)*")
  | (?P<float>\d+\.\d*(?:[eE][-+]?\d+)?|\d+[eE][-+]?\d+)
  | (?P<int>\d+)
  | (?P<val>%[A-Za-z_0-9]+)
  | (?P<name>[A-Za-z_][A-Za-z_0-9.]*)
  | (?P<op>//|<=|>=|==|!=|[-+*%()<>,=:{}\[\]@])
''', re.VERBOSE)


def tokenize(text: str) -> list:
    toks, pos, line = [], 0, 1
    while pos < len(text):
        m = _TOKENS.match(text, pos)
        if not m:
            raise TextError(f"line {line}: unexpected character {text[pos]!r}")
        kind, s = m.lastgroup, m.group()
        if kind == "nl":
            toks.append(("nl", "\n", line))
        elif kind not in ("ws", "comment"):
            toks.append((kind, s, line))
        line += s.count("\n")
        pos = m.end()
    toks.append(("nl", "\n", line))
    return toks


def parse_doc(text: str) -> Document:
    lines = text.split("\n")
    hdr_idx = next((i for i, ln in enumerate(lines)
                    if ln.strip() and not ln.lstrip().startswith("#")), None)
    if hdr_idx is None:
        raise TextError("empty input: no 'pypto-ir' header line")
    m = re.match(r"\s*pypto-ir (\d+)\.(\d+) (\w+)\s*$", lines[hdr_idx])
    if not m:
        raise TextError(f"line {hdr_idx + 1}: expected the header 'pypto-ir <major>.<minor> <level>'")
    version, level = (int(m.group(1)), int(m.group(2))), m.group(3)
    if level not in LEVELS:
        raise TextError(f"line {hdr_idx + 1}: unknown level {level!r} (known: {', '.join(LEVELS)})")
    body_text = "\n" * (hdr_idx + 1) + "\n".join(lines[hdr_idx + 1:])
    toks = tokenize(body_text)
    _check_nesting(toks)
    p = _Parser(toks)
    doc = Document(level, version=version)
    p.document(doc)
    p.resolve_blobs(doc)
    return doc


def _check_nesting(toks) -> None:
    """Refuse brackets (regions, attribute maps and lists, parentheses) nested past
    PYPTO_MAX_DEPTH before the parser recurses into them (a LimitError naming the line)."""
    from .limits import limit, over
    cap, depth = limit("DEPTH"), 0
    for kind, s, line in toks:
        if kind != "op":
            continue
        if s in ("{", "[", "("):
            depth += 1
            if depth > cap:
                raise LimitError(f"line {line}: {over('DEPTH', 'the nesting of brackets')}")
        elif s in ("}", "]", ")"):
            depth -= 1


class _BlobRef:
    """blob(N) in an attribute: the bytes of the `blob N b64"..."` line at the end."""

    def __init__(self, n: int, line: int):
        self.n, self.line = n, line


class _Parser:
    def __init__(self, toks):
        self.toks, self.pos = toks, 0
        self.values: dict[str, Value] = {}
        self.blobs: dict[int, bytes] = {}
        self.has_blob_refs = False

    # token helpers
    def peek(self, k: int = 0):
        return self.toks[min(self.pos + k, len(self.toks) - 1)]

    def take(self):
        t = self.peek()
        self.pos += 1
        return t

    def error(self, msg: str, tok=None):
        tok = tok or self.peek()
        return TextError(f"line {tok[2]}: {msg}")

    def expect(self, s: str):
        t = self.take()
        if t[1] != s or t[0] in ("str", "triple"):
            raise self.error(f"expected {s!r}, got {t[1]!r}", t)
        return t

    def skip_nl(self):
        while self.pos < len(self.toks) and self.peek()[0] == "nl":
            self.pos += 1

    def at_end(self) -> bool:
        return self.pos >= len(self.toks)

    # grammar
    def document(self, doc: Document) -> None:
        while True:
            self.skip_nl()
            if self.at_end():
                return
            t = self.peek()
            if t == ("name", "producer", t[2]):
                self.take()
                tool = self.attr_value()
                opts = self.attr_dict() if self.peek()[1] == "{" else {}
                doc.producer.append({"tool": tool, "options": opts})
            elif t == ("name", "module", t[2]):
                self.take()
                doc.attrs = self.attr_dict()
            elif t == ("name", "blob", t[2]) and self.peek(1)[0] == "int":
                self.blob()
            else:
                doc.body.append(self.op())

    def blob(self) -> None:
        self.take()
        n = int(self.take()[1])
        data = self.take()
        if data[0] != "b64":
            raise self.error(f'expected b64"..." after blob {n}', data)
        if n in self.blobs:
            raise self.error(f"blob {n} is defined twice", data)
        self.blobs[n] = base64.b64decode(data[1][4:-1])

    def resolve_blobs(self, doc: Document) -> None:
        """Put the bytes of every blob(N) in place."""
        def fix(v):
            if isinstance(v, _BlobRef):
                if v.n not in self.blobs:
                    raise TextError(f"line {v.line}: blob({v.n}) is not defined (no line "
                                    f"'blob {v.n} b64\"...\"')")
                return self.blobs[v.n]
            if isinstance(v, list):
                return [fix(x) for x in v]
            if isinstance(v, dict):
                return {k: fix(x) for k, x in v.items()}
            return v

        def walk(ops):
            for op in ops:
                op.attrs = fix(op.attrs)
                for region in op.regions:
                    walk(region)
        if self.has_blob_refs:
            doc.attrs = fix(doc.attrs)
            walk(doc.body)

    def op(self) -> Op:
        """One op: results =, name, operands, {attrs}, : types, @file:line, {regions}."""
        result_names = self.result_names()
        t = self.take()
        if t[0] != "name":
            raise self.error(f"expected an op name, got {t[1]!r}", t)
        name = t[1]
        operands = self.operands(name)
        attrs = {}
        if self.peek()[1] == "{" and self.peek(1)[0] != "nl":
            attrs = self.attr_dict()
        types = []
        if self.peek()[1] == ":":
            self.take()
            types.append(self.type())
            while self.peek()[1] == ",":
                self.take()
                types.append(self.type())
        if len(types) != len(result_names):
            raise self.error(f"{name}: {len(result_names)} results but {len(types)} types")
        loc = self.location()
        results = []
        for rn, ty in zip(result_names, types):
            v = Value(ty, None if rn.isdigit() else rn)
            if rn in self.values:
                raise self.error(f"value %{rn} is defined twice")
            self.values[rn] = v
            results.append(v)
        regions = self.regions(name)
        if self.peek()[0] != "nl":
            raise self.error(f"unexpected {self.peek()[1]!r} after op {name}")
        return Op(name, operands, results, attrs, regions, loc)

    def result_names(self) -> list:
        names = []
        if self.peek()[0] == "val":
            names.append(self.take()[1][1:])
            while self.peek()[1] == ",":
                self.take()
                names.append(self.expect_val())
            self.expect("=")
        return names

    def operands(self, name: str) -> list:
        operands = []
        if self.peek()[0] == "val":
            operands.append(self.lookup(self.take()))
            while self.peek()[1] == ",":
                self.take()
                if self.peek()[0] != "val":
                    raise self.error(f"expected a %value after ',' in the operands of {name}, "
                                     f"got {self.peek()[1]!r}")
                operands.append(self.lookup(self.take()))
        return operands

    def location(self) -> Loc | None:
        if self.peek()[1] != "@":
            return None
        self.take()
        f = self.take()
        fname = json.loads(f[1]) if f[0] == "str" else f[1]
        self.expect(":")
        ln = self.take()
        if ln[0] != "int":
            raise self.error("expected a line number after the file in a location", ln)
        return Loc(fname, int(ln[1]))

    def regions(self, name: str) -> list:
        """The op's regions; `source` and `program` regions have values of their own."""
        regions = []
        saved = self.values if name in ISOLATED else None
        if saved is not None:
            self.values = {}
        while self.peek()[1] == "{" and self.peek(1)[0] == "nl":
            self.take()
            region = []
            while True:
                self.skip_nl()
                if self.at_end():
                    raise self.error(f"region of {name} is not closed")
                if self.peek()[1] == "}":
                    self.take()
                    break
                region.append(self.op())
            regions.append(region)
        if saved is not None:
            self.values = saved
        return regions

    def expect_val(self) -> str:
        t = self.take()
        if t[0] != "val":
            raise self.error(f"expected a %value, got {t[1]!r}", t)
        return t[1][1:]

    def lookup(self, t) -> Value:
        try:
            return self.values[t[1][1:]]
        except KeyError:
            raise self.error(f"use of undefined value {t[1]}", t) from None

    def type(self):
        t = self.take()
        if t[0] != "name":
            raise self.error(f"expected a type, got {t[1]!r}", t)
        parts = t[1].split(".")
        if parts[0] == "scalar" and len(parts) == 2 and parts[1] in DTYPES:
            return ScalarType(DTYPES[parts[1]])
        if len(parts) == 2 and parts[0] in ("vreg", "mask") and parts[1] in DTYPES:
            return self.reg_type(parts, t)
        if len(parts) == 1 and parts[0] in DTYPES:
            return TensorType(DTYPES[parts[0]], tuple(self.shape()))
        if len(parts) == 2 and parts[0] in SPACES and parts[1] in DTYPES:
            shape = self.shape()
            if not all(isinstance(d, int) for d in shape):
                raise self.error("a tile shape must be static ints", t)
            return TileType(parts[0], DTYPES[parts[1]], tuple(shape))
        raise self.error(f"unknown type {t[1]!r}", t)

    def reg_type(self, parts, t) -> RegType:
        """vreg.f32[64], mask.bool[64]: Pro mode's registers (ir/reg_ops.py)."""
        lanes = self.shape()
        bad = len(lanes) != 1 or not isinstance(lanes[0], int) or \
            reg_type_problem(parts[0], DTYPES[parts[1]], lanes[0])
        if bad:
            raise self.error(f"bad register type {t[1]}{lanes}: {bad}", t)
        return RegType(parts[0], DTYPES[parts[1]], lanes[0])

    def shape(self) -> list:
        self.expect("[")
        dims = []
        while self.peek()[1] != "]":
            dims.append(self.expr())
            if self.peek()[1] == ",":
                self.take()
        self.take()
        return dims

    def expr(self):
        # hand the expression tokens to the shared expression parser
        p = E.ExprParser(_ExprView(self.toks), self.pos)
        try:
            e = p.parse()
        except E.ExprSyntaxError as exc:
            raise self.error(str(exc)) from None
        except LimitError as exc:
            raise LimitError(f"line {self.peek()[2]}: {exc}") from None
        self.pos = p.pos
        return e

    def attr_dict(self) -> dict:
        self.expect("{")
        out = {}
        self.skip_nl()
        while self.peek()[1] != "}":
            k = self.take()
            if k[0] not in ("name", "str"):
                raise self.error(f"expected an attribute name, got {k[1]!r}", k)
            key = json.loads(k[1]) if k[0] == "str" else k[1]
            self.expect("=")
            out[key] = self.attr_value()
            self.skip_nl()
            if self.peek()[1] == ",":
                self.take()
                self.skip_nl()
            elif self.peek()[1] != "}":
                raise self.error(f"expected ',' or '}}' in attributes, got {self.peek()[1]!r}")
        self.take()
        return out

    def attr_value(self):
        t = self.peek()
        kind, s = t[0], t[1]
        if s == "{" and kind == "op":
            return self.attr_dict()
        if s == "[" and kind == "op":
            self.take()
            items = []
            self.skip_nl()
            while self.peek()[1] != "]":
                items.append(self.attr_value())
                self.skip_nl()
                if self.peek()[1] == ",":
                    self.take()
                    self.skip_nl()
                elif self.peek()[1] != "]":
                    raise self.error(f"expected ',' or ']' in a list, got {self.peek()[1]!r}")
            self.take()
            return items
        if kind == "str":
            self.take()
            return json.loads(s)
        if kind == "triple":
            self.take()
            return s[3:-3]
        if kind == "b64":
            self.take()
            return base64.b64decode(s[4:-1])
        if kind == "float":
            self.take()
            return float(s)
        if kind == "name" and s in ("true", "false", "null", "inf", "nan"):
            self.take()
            return {"true": True, "false": False, "null": None,
                    "inf": math.inf, "nan": math.nan}[s]
        if kind == "name" and s == "blob" and self.peek(1)[1] == "(" and \
                self.peek(2)[0] == "int" and self.peek(3)[1] == ")":
            self.pos += 4
            self.has_blob_refs = True
            return _BlobRef(int(self.peek(-2)[1]), t[2])
        if s == "-" and self.peek(1)[0] == "float":
            self.take()
            return -float(self.take()[1])
        if s == "-" and self.peek(1)[1] == "inf":
            self.take()
            self.take()
            return -math.inf
        v = self.expr()
        if isinstance(v, int) and not -(1 << 63) <= v < 1 << 64:
            raise self.error(f"the int {v} is out of range (a file holds 64-bit ints)", t)
        return v


class _ExprView:
    """Presents text tokens to ExprParser as (kind, text) pairs; stops at non-expression tokens."""

    _STOP = {"nl", "str", "triple", "b64", "float", "val"}

    def __init__(self, toks):
        self.toks = toks

    def __len__(self):
        return len(self.toks)

    def __getitem__(self, i):
        kind, s, _ = self.toks[i]
        if kind in self._STOP or s in ("{", "}", "[", "]", "=", ":", "@"):
            return ("end", s)
        return ("int" if kind == "int" else "name" if kind == "name" else "op", s)
