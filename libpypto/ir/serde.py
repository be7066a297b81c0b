"""The binary IR file: one msgpack map with sorted keys, byte-identical for identical input.

    {"format": "pypto-ir", "version": [1, 0], "level": "tensor",
     "producer": [{"tool": ..., "options": {...}}], "attrs": {...}, "body": [op, ...]}

An op is {"op": name, "args": [value ids], "res": [[id, name, type]], "attrs": {...},
"regions": [[op, ...]], "loc": [file, line]}; value ids count definitions in program order.
Symbolic expressions travel as msgpack extension 1 holding their text form.
"""
from __future__ import annotations

import msgpack

from ..errors import InputError, LimitError
from . import expr as E
from .core import FORMAT, LEVELS, VERSION, Document, Loc, Op, Value
from .limits import limit, nesting_depth, over
from .opdef import is_int, short
from .types import DTYPES, RegType, ScalarType, TensorType, TileType, reg_type_problem

_EXT_EXPR = 1


def dumps(doc: Document) -> bytes:
    ids: dict = {}
    body = [_op_out(op, ids) for op in doc.body]
    m = {"format": FORMAT, "version": list(doc.version), "level": doc.level,
         "producer": doc.producer, "attrs": doc.attrs, "body": body}
    return msgpack.packb(_sorted(m), default=_default, use_bin_type=True)


def _sorted(v):
    if isinstance(v, dict):
        return {k: _sorted(v[k]) for k in sorted(v)}
    if isinstance(v, (list, tuple)):
        return [_sorted(x) for x in v]
    return v


def _default(v):
    if isinstance(v, E.Expr):
        return msgpack.ExtType(_EXT_EXPR, E.to_str(v).encode())
    raise TypeError(f"cannot serialise {type(v).__name__}: {v!r}")


def _type_out(t):
    if isinstance(t, TensorType):
        return ["tensor", t.dtype.name, list(t.shape)]
    if isinstance(t, TileType):
        return ["tile", t.space, t.dtype.name, list(t.shape)]
    if isinstance(t, ScalarType):
        return ["scalar", t.dtype.name]
    if isinstance(t, RegType):                   # Pro mode's registers (ir/reg_ops.py)
        return ["reg", t.kind, t.dtype.name, t.lanes]
    raise TypeError(f"unknown type {t!r}")


def _op_out(op: Op, ids: dict) -> dict:
    m = {"op": op.name, "args": [ids[v] for v in op.operands]}
    res = []
    for r in op.results:
        ids[r] = len(ids)
        res.append([ids[r], r.name, _type_out(r.type)])
    if res:
        m["res"] = res
    if op.attrs:
        m["attrs"] = op.attrs
    if op.regions:
        m["regions"] = [[_op_out(o, ids) for o in reg] for reg in op.regions]
    if op.loc is not None:
        m["loc"] = [op.loc.file, op.loc.line]
    return m


def loads(data: bytes, source: str = "<input>") -> Document:
    """A document from msgpack bytes. Only the file's form is checked here (a map of ops
    with values, types and regions, nesting within PYPTO_MAX_DEPTH); what the ops mean is
    the verifier's business (verify.py)."""
    try:
        m = msgpack.unpackb(data, ext_hook=_ext_hook, raw=False, strict_map_key=False)
    except _BadExt as exc:
        raise InputError(f"{source}: {exc}") from None
    except LimitError as exc:
        raise LimitError(f"{source}: {exc}") from None
    except (msgpack.ExtraData, msgpack.FormatError, msgpack.StackError, ValueError) as exc:
        raise InputError(f"{source}: not a pypto IR file (msgpack: {exc})") from None
    except Exception as exc:  # msgpack raises several types for truncated data
        raise InputError(f"{source}: truncated or corrupt IR file ({type(exc).__name__})") from None
    cap = limit("DEPTH")
    if nesting_depth(m, cap) > cap:
        raise LimitError(f"{source}: {over('DEPTH', 'the nesting of lists and maps')}")
    if not isinstance(m, dict) or m.get("format") != FORMAT:
        raise InputError(f"{source}: not a pypto IR file (no '{FORMAT}' header)")
    return _Reader(source).document(m)


def check_version(version, source: str) -> tuple:
    if not (isinstance(version, (list, tuple)) and len(version) == 2
            and all(is_int(x) and 0 <= x < 1 << 32 for x in version)):
        raise InputError(f"{source}: malformed version {short(version)}")
    if version[0] != VERSION[0]:
        raise InputError(f"{source}: IR format version {version[0]}.{version[1]} is not readable "
                         f"by this pypto (reads {VERSION[0]}.x); use a matching pypto release")
    return tuple(version)


class _BadExt(Exception):
    """An extension value that is not an expression (raised through msgpack's hook)."""


def _ext_hook(code, data):
    if code != _EXT_EXPR:       # a later minor's: kept as it is (the verifier judges it)
        return msgpack.ExtType(code, data)
    try:
        return E.parse(data.decode())
    except UnicodeDecodeError:
        raise _BadExt("malformed IR file: an expression that is not UTF-8 text") from None
    except ValueError as exc:
        raise _BadExt(f"malformed IR file: bad expression: {exc}") from None


_OP_KEYS = {"op", "args", "res", "attrs", "regions", "loc"}
ISOLATED = ("source", "program")   # ops whose regions have values of their own (as in text)


class _Reader:
    """The form of a decoded file, checked as objects are built; errors name the place
    (`body[3].regions[0][2].attrs`)."""

    def __init__(self, source: str):
        self.source = source
        self.values: dict = {}

    def fail(self, where: str, what: str):
        return InputError(f"{self.source}: malformed IR file: {where}: {what}")

    def document(self, m: dict) -> Document:
        version = check_version(m.get("version"), self.source)
        level = m.get("level")
        if level is None:
            raise InputError(f"{self.source}: malformed IR file: it has no level")
        if level not in LEVELS or not isinstance(level, str):
            raise InputError(f"{self.source}: unknown level {short(level)}")
        attrs = self.attrs(m.get("attrs"), "attrs")
        producer = m.get("producer") or []
        if not isinstance(producer, list):
            raise self.fail("producer", f"must be a list, not {short(producer)}")
        for i, entry in enumerate(producer):
            if not isinstance(entry, dict) or not isinstance(entry.get("tool"), str):
                raise self.fail(f"producer[{i}]", "must be a map with a tool name")
            self.attrs(entry.get("options"), f"producer[{i}].options")
        body = self.ops(m.get("body"), "body")
        return Document(level, body, attrs, list(producer), version)

    def attrs(self, a, where: str) -> dict:
        if a is None:
            return {}
        if not isinstance(a, dict):
            raise self.fail(where, f"must be a map, not {short(a)}")
        bad = [k for k in a if not isinstance(k, str)]
        if bad:
            raise self.fail(where, f"has a key that is not a string: {short(bad[0])}")
        return a

    def ops(self, ops, where: str) -> list:
        if not isinstance(ops, list):
            raise self.fail(where, f"must be a list of ops, not {short(ops)}")
        return [self.op(o, f"{where}[{i}]") for i, o in enumerate(ops)]

    def op(self, m, where: str) -> Op:
        if not isinstance(m, dict):
            raise self.fail(where, f"an op must be a map, not {short(m)}")
        extra = sorted(str(k) for k in m if k not in _OP_KEYS)
        if extra:
            raise self.fail(where, f"unknown field {short(extra[0])} in an op")
        name = m.get("op")
        if not isinstance(name, str):
            raise self.fail(f"{where}.op", f"must be an op name, not {short(name)}")
        operands = [self.use(v, f"{where}.args") for v in self.list(m, "args", where)]
        results = [self.result(r, f"{where}.res[{i}]")
                   for i, r in enumerate(self.list(m, "res", where))]
        attrs = self.attrs(m.get("attrs"), f"{where}.attrs")
        saved = self.values
        if name in ISOLATED:
            self.values = {}
        regions = [self.ops(r, f"{where}.regions[{i}]")
                   for i, r in enumerate(self.list(m, "regions", where))]
        self.values = saved
        return Op(name, operands, results, attrs, regions, self.loc(m.get("loc"), where))

    def list(self, m: dict, key: str, where: str) -> list:
        v = m.get(key, [])
        if not isinstance(v, list):
            raise self.fail(f"{where}.{key}", f"must be a list, not {short(v)}")
        return v

    def use(self, vid, where: str) -> Value:
        if not is_int(vid):
            raise self.fail(where, f"a value id must be an int, not {short(vid)}")
        if vid not in self.values:
            raise self.fail(where, f"value {vid} is used where it is not defined")
        return self.values[vid]

    def result(self, r, where: str) -> Value:
        if not (isinstance(r, list) and len(r) == 3):
            raise self.fail(where, f"a result must be [id, name, type], not {short(r)}")
        vid, name, ty = r
        if not is_int(vid) or vid in self.values:
            raise self.fail(where, f"value id {short(vid)} is not a new int")
        if name is not None and not isinstance(name, str):
            raise self.fail(where, f"a value name must be a string, not {short(name)}")
        v = Value(self.type(ty, f"{where}[2]"), name)
        self.values[vid] = v
        return v

    def type(self, t, where: str):
        try:
            return _type_in(t)
        except (KeyError, TypeError, ValueError, IndexError):
            raise self.fail(where, f"not a type: {short(t)}") from None

    def loc(self, loc, where: str):
        if loc is None:
            return None
        if not (isinstance(loc, list) and len(loc) == 2 and isinstance(loc[0], str)
                and is_int(loc[1])):
            raise self.fail(f"{where}.loc", f"must be [file, line], not {short(loc)}")
        return Loc(*loc)


def _type_in(t):
    """A type from its record ["tensor", dtype, dims], ["tile", space, dtype, dims] or
    ["scalar", dtype]; ValueError if it is none of these. The dims are the verifier's
    business (types.type_problem)."""
    shapes = {"tensor": (str, str, list), "tile": (str, str, str, list), "scalar": (str, str),
              "reg": (str, str, str, int)}
    want = shapes.get(t[0]) if isinstance(t, list) and t and isinstance(t[0], str) else None
    if want is None or len(t) != len(want) or \
            not all(isinstance(x, k) for x, k in zip(t, want)):
        raise ValueError(t)
    if t[0] == "reg":
        if t[2] not in DTYPES or reg_type_problem(t[1], DTYPES[t[2]], t[3]):
            raise ValueError(t)
        return RegType(t[1], DTYPES[t[2]], t[3])
    dims = t[-1] if t[0] != "scalar" else []
    if not all(is_int(d) or isinstance(d, E.Expr) and t[0] == "tensor" for d in dims):
        raise ValueError(t)
    if t[0] == "tensor":
        return TensorType(DTYPES[t[1]], tuple(dims))
    if t[0] == "tile":
        return TileType(t[1], DTYPES[t[2]], tuple(dims))
    return ScalarType(DTYPES[t[1]])
