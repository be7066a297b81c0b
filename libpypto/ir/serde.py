"""The binary IR file: one msgpack map with sorted keys, byte-identical for identical input.

    {"format": "pypto-ir", "version": [1, 0], "level": "tensor",
     "producer": [{"tool": ..., "options": {...}}], "attrs": {...}, "body": [op, ...]}

An op is {"op": name, "args": [value ids], "res": [[id, name, type]], "attrs": {...},
"regions": [[op, ...]], "loc": [file, line]}; value ids count definitions in program order.
Symbolic expressions travel as msgpack extension 1 holding their text form.
"""
from __future__ import annotations

import msgpack

from ..errors import InputError
from . import expr as E
from .core import FORMAT, LEVELS, VERSION, Document, Loc, Op, Value
from .types import DTYPES, ScalarType, TensorType, TileType

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
    try:
        m = msgpack.unpackb(data, ext_hook=_ext_hook, raw=False, strict_map_key=False)
    except (msgpack.ExtraData, msgpack.FormatError, msgpack.StackError, ValueError) as exc:
        raise InputError(f"{source}: not a pypto IR file (msgpack: {exc})") from None
    except Exception as exc:  # msgpack raises several types for truncated data
        raise InputError(f"{source}: truncated or corrupt IR file ({type(exc).__name__})") from None
    if not isinstance(m, dict) or m.get("format") != FORMAT:
        raise InputError(f"{source}: not a pypto IR file (no '{FORMAT}' header)")
    return _doc_in(m, source)


def check_version(version, source: str) -> tuple:
    if not (isinstance(version, (list, tuple)) and len(version) == 2
            and all(isinstance(x, int) for x in version)):
        raise InputError(f"{source}: malformed version {version!r}")
    if version[0] != VERSION[0]:
        raise InputError(f"{source}: IR format version {version[0]}.{version[1]} is not readable "
                         f"by this pypto (reads {VERSION[0]}.x); use a matching pypto release")
    return tuple(version)


def _ext_hook(code, data):
    if code == _EXT_EXPR:
        return E.parse(data.decode())
    return msgpack.ExtType(code, data)


def _doc_in(m: dict, source: str) -> Document:
    try:
        version = check_version(m.get("version"), source)
        level = m["level"]
        if level not in LEVELS:
            raise InputError(f"{source}: unknown level {level!r}")
        values: dict = {}
        body = [_op_in(o, values) for o in m["body"]]
        return Document(level, body, m.get("attrs") or {}, list(m.get("producer") or []), version)
    except InputError:
        raise
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise InputError(f"{source}: malformed IR file ({type(exc).__name__}: {exc})") from None


def _type_in(t):
    if t[0] == "tensor":
        return TensorType(DTYPES[t[1]], tuple(t[2]))
    if t[0] == "tile":
        return TileType(t[1], DTYPES[t[2]], tuple(t[3]))
    if t[0] == "scalar":
        return ScalarType(DTYPES[t[1]])
    raise ValueError(f"unknown type tag {t[0]!r}")


def _op_in(m: dict, values: dict) -> Op:
    operands = [values[i] for i in m.get("args", [])]
    results = []
    for vid, name, ty in m.get("res", []):
        v = Value(_type_in(ty), name)
        values[vid] = v
        results.append(v)
    regions = [[_op_in(o, values) for o in reg] for reg in m.get("regions", [])]
    loc = Loc(*m["loc"]) if m.get("loc") else None
    return Op(m["op"], operands, results, m.get("attrs") or {}, regions, loc)
