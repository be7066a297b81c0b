"""Pro mode's trace-time helpers (the reference's Utils-API "Python syntax sugar" and
SIMD-API utilities pages): `pl.const`, `pl.struct`, `pl.struct_array`, `pl.make_tuple` and
`pl.Array`. None records an instruction: they group and type the values a kernel body
computes with while it is traced (pl.min / pl.max are dsl.py's).

- `pl.const(value, dtype)`: a compile-time constant of that dtype: an int checked to fit
  an integer dtype, a float rounded to a float dtype (fp16, bf16: the nearest value), a bool.
  It is a Python number (pypto's runtime scalars carry no dtype of their own).
- `pl.struct("Name", field=value, ...)`: a record of scalars (ints, floats, bools, runtime
  scalars) and arrays of them (a list value); `s.field` reads, `s.field = v` writes (the
  fields are the ones it was made with), `s.arr[i]` reads and writes an element (i an int,
  or a runtime scalar: a select over the elements). The reference makes a C struct of it
  for ssbuf_store / ssbuf_load (not built here); pypto keeps it at trace time, so a field
  may be written only at the nesting level the struct was made at: a write inside a
  pl.range loop or a runtime `if` opened after it is an error (a value carried across
  iterations or merged from two arms is not a scalar expression; make the struct inside
  the loop, or compute the value with a conditional expression).
- `pl.struct_array(n, "Name", field=value, ...)`: n structs; `a[i]` with an int, or a runtime
  scalar (field reads select over the slots; writes set each slot's field to a select).
- `pl.make_tuple(field=value, ...)`: an immutable named tuple of any traced values (tiles,
  scalars, tuples): `t.field`, `t[0]`, unpacking; no code at all (as the reference).
- `pl.Array[int, N]` (or the reference's `int[N]` annotation under `from __future__ import
  annotations`), element type int, float or bool, 1 <= N <= 2048: a TilingData field of N
  values (the launch gives a sequence of N). Each element is a runtime scalar
  `<param>_<field>_<i>` (pypto-run --bind tiling_offsets_2=64); `tiling.offsets[i]` reads one
  (a runtime index selects).
"""
from __future__ import annotations

import ast
import re

import numpy as np

from ..errors import CompileError
from ..ir import expr as E
from ..ir.types import DType
from .dsl import Scalar, expr_of, wrap
from .state import _STATE

CNAME = re.compile(r"[A-Za-z_][A-Za-z_0-9]*\Z")
MAX_ARRAY = 2048
ELEM = {"int": "i64", "float": "f32", "bool": "i64"}


def _error(msg: str) -> CompileError:
    return _STATE[-1].error(msg) if _STATE else CompileError(msg)


# -- const ------------------------------------------------------------------------------------

def const(value, dtype):
    """pl.const(value, dtype): a typed compile-time constant (a Python number)."""
    if not isinstance(dtype, DType):
        raise _error(f"pl.const dtype must be a pl.DT_* dtype, not {dtype!r}")
    if isinstance(value, Scalar) or not isinstance(value, (int, float)):
        raise _error(f"pl.const takes a Python int or float, not {value!r}")
    if dtype.kind == "bool":
        if value not in (0, 1):
            raise _error(f"pl.const({value!r}, {dtype.api}): a bool is 0 or 1")
        return bool(value)
    if dtype.kind == "float":
        return float(np.asarray(value, np.float64).astype(dtype.np))
    if isinstance(value, float) and not isinstance(value, bool):
        raise _error(f"pl.const({value!r}, {dtype.api}): an integer dtype takes an int")
    info = np.iinfo(dtype.np)
    if not info.min <= value <= info.max:
        raise _error(f"pl.const({value}, {dtype.api}): out of range [{info.min}, {info.max}]")
    return int(value)


# -- struct -----------------------------------------------------------------------------------

def _nesting() -> tuple:
    """The runtime loops and ifs open where the trace is (their regions' identities)."""
    if not _STATE:
        return ()
    t = _STATE[-1]
    prog = t.programs.get(t.section or ("vector" if not t.sections else ""))
    return tuple(id(r) for r in prog.stack[1:]) if prog is not None else ()


def _value(v, what: str):
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, (int, float, Scalar)):
        return v
    e = expr_of(v)
    if e is None:
        raise _error(f"{what} must be a scalar (int, float, bool or a runtime scalar), not "
                     f"{v!r}")
    return wrap(e)


def _index(i, n: int, what: str):
    if isinstance(i, Scalar):
        return i.e
    if not isinstance(i, int) or isinstance(i, bool) or not 0 <= i < n:
        raise _error(f"{what} index {i!r} is not in [0, {n})")
    return i


def _pick(items: list, idx):
    """items[idx] for a runtime idx: a select over the items (the last one by default)."""
    out = expr_of(items[-1]) if expr_of(items[-1]) is not None else items[-1]
    for k in range(len(items) - 2, -1, -1):
        a, b = expr_of(items[k]), out
        if a is None or isinstance(items[k], float) or isinstance(b, float):
            raise _error("a runtime index selects among integer scalars only")
        out = E.select(E.eq(idx, k), a, b)
    return wrap(out)


class _Field:
    """An array field of a struct: s.arr[i], s.arr[i] = v, len(s.arr)."""

    def __init__(self, owner, name: str, items: list):
        self._owner, self._name, self._items = owner, name, items

    def __len__(self):
        return len(self._items)

    def __iter__(self):
        return iter(list(self._items))

    def __getitem__(self, i):
        idx = _index(i, len(self._items), f"{self._owner._name}.{self._name}")
        return self._items[idx] if isinstance(idx, int) else _pick(self._items, idx)

    def __setitem__(self, i, v):
        self._owner._writable(self._name)
        idx = _index(i, len(self._items), f"{self._owner._name}.{self._name}")
        v = _value(v, f"{self._owner._name}.{self._name}[...]")
        if isinstance(idx, int):
            self._items[idx] = v
            return
        for k, old in enumerate(self._items):
            a, b = expr_of(v), expr_of(old)
            if a is None or b is None:
                raise _error("a runtime index writes integer scalars only")
            self._items[k] = wrap(E.select(E.eq(idx, k), a, b))


class Struct:
    """pl.struct("Name", field=value, ...): see the module docstring."""

    def __init__(self, name, fields: dict):
        if name is not None and not (isinstance(name, str) and CNAME.match(name)):
            raise _error(f"pl.struct name must be a C identifier string, not {name!r}")
        if not fields:
            raise _error("pl.struct needs at least one field (field=value)")
        object.__setattr__(self, "_name", name or "struct")
        object.__setattr__(self, "_where", _nesting())
        vals = {}
        for k, v in fields.items():
            if isinstance(v, (list, tuple)):
                if not v:
                    raise _error(f"pl.struct field {k}: an array field needs elements")
                vals[k] = _Field(self, k, [_value(x, f"{name}.{k}[...]") for x in v])
            else:
                vals[k] = _value(v, f"{name}.{k}")
        object.__setattr__(self, "_fields", vals)

    def __getattr__(self, k):
        fields = object.__getattribute__(self, "_fields")
        if k not in fields:
            raise _error(f"struct {self._name} has no field {k!r} (fields: "
                         f"{', '.join(fields)})")
        return fields[k]

    def __setattr__(self, k, v):
        if k not in self._fields:
            raise _error(f"struct {self._name} has no field {k!r}: its fields are fixed when "
                         f"it is made ({', '.join(self._fields)})")
        self._writable(k)
        if isinstance(self._fields[k], _Field):
            raise _error(f"{self._name}.{k} is an array field: write its elements "
                         f"({self._name}.{k}[i] = v)")
        self._fields[k] = _value(v, f"{self._name}.{k}")

    def _writable(self, k: str) -> None:
        if set(_nesting()) - set(self._where):
            raise _error(f"{self._name}.{k} is written inside a pl.range loop or a runtime "
                         f"if opened after the struct was made: pypto's scalars cannot carry "
                         f"it across iterations or arms (make the struct inside the loop, or "
                         f"compute the value with a conditional expression)")

    def __repr__(self):
        return f"pl.struct({self._name!r}, {', '.join(self._fields)})"


def struct(*args, **fields):
    """pl.struct("Name", field=value, ...) or pl.struct(field=value, ...)."""
    if len(args) > 1:
        raise _error("pl.struct takes one positional argument, its name")
    return Struct(args[0] if args else None, fields)


class _SlotView:
    """struct_array[i] for a runtime i: field reads select over the slots, writes set
    every slot's field to a select."""

    def __init__(self, slots, idx):
        object.__setattr__(self, "_slots", slots)
        object.__setattr__(self, "_idx", idx)

    def __getattr__(self, k):
        vals = [getattr(s, k) for s in self._slots]
        if isinstance(vals[0], _Field):
            raise _error("an array field of a struct_array slot chosen at run time is not "
                         "supported: index the slot with an int")
        return _pick(vals, self._idx)

    def __setattr__(self, k, v):
        a = expr_of(v)
        for n, s in enumerate(self._slots):
            b = expr_of(getattr(s, k))
            if a is None or b is None:
                raise _error("a runtime index writes integer scalars only")
            setattr(s, k, wrap(E.select(E.eq(self._idx, n), a, b)))


class StructArray:
    def __init__(self, slots: list):
        self._slots = slots

    def __len__(self):
        return len(self._slots)

    def __getitem__(self, i):
        idx = _index(i, len(self._slots), "struct_array")
        return self._slots[idx] if isinstance(idx, int) else _SlotView(self._slots, idx)


def struct_array(size, *args, **fields):
    """pl.struct_array(n, "Name", field=value, ...): n structs made alike."""
    if not isinstance(size, int) or isinstance(size, bool) or size < 1:
        raise _error(f"pl.struct_array size must be a positive int, not {size!r}")
    return StructArray([struct(*args, **fields) for _ in range(size)])


# -- make_tuple -------------------------------------------------------------------------------

class NamedTuple(tuple):
    """pl.make_tuple(field=value, ...): immutable; t.field, t[i], unpacking."""

    def __new__(cls, fields: dict):
        self = super().__new__(cls, fields.values())
        self._names = tuple(fields)
        return self

    def __getattr__(self, k):
        names = tuple.__getattribute__(self, "_names") if k != "_names" else ()
        if k in names:
            return self[names.index(k)]
        raise _error(f"make_tuple has no field {k!r} (fields: {', '.join(names)})")

    def __setattr__(self, k, v):
        if k == "_names" and "_names" not in self.__dict__:
            self.__dict__[k] = v
            return
        raise _error(f"a make_tuple is immutable: {k} cannot be assigned (use pl.struct for "
                     f"fields that change)")

    def __repr__(self):
        return "pl.make_tuple(" + ", ".join(f"{k}={v!r}" for k, v in zip(self._names, self)) \
            + ")"


def make_tuple(*args, **fields):
    """pl.make_tuple(field=value, ...)."""
    if args:
        raise _error("pl.make_tuple takes keyword arguments only (field=value)")
    if not fields:
        raise _error("pl.make_tuple needs at least one field (field=value)")
    return NamedTuple(fields)


# -- Array (TilingData fields) ----------------------------------------------------------------

class ArraySpec:
    def __init__(self, elem: str, n: int):
        if elem not in ELEM:
            raise CompileError(f"an array field's element type is int, float or bool, not "
                               f"{elem}")
        if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= MAX_ARRAY:
            raise CompileError(f"an array field's length is an int in [1, {MAX_ARRAY}], not "
                               f"{n!r}")
        self.elem, self.n = elem, n

    def __repr__(self):
        return f"pl.Array[{self.elem}, {self.n}]"


class Array:
    """pl.Array[int, 4]: a TilingData field of 4 ints (float and bool too)."""

    def __class_getitem__(cls, item):
        if not (isinstance(item, tuple) and len(item) == 2):
            raise CompileError("pl.Array takes an element type and a length: pl.Array[int, 4]")
        elem, n = item
        return ArraySpec(getattr(elem, "__name__", str(elem)), n)


def array_field(ann) -> ArraySpec | None:
    """The ArraySpec of a TilingData field annotation (pl.Array[int, 4], or as a string
    under `from __future__ import annotations`: "pl.Array[int, 4]", "int[4]"), None for a
    scalar one."""
    if isinstance(ann, ArraySpec):
        return ann
    if not isinstance(ann, str) or "[" not in ann:
        return None
    try:
        node = ast.parse(ann, mode="eval").body
    except SyntaxError:
        return None
    if not isinstance(node, ast.Subscript):
        return None
    base, sl = node.value, node.slice
    if getattr(base, "attr", getattr(base, "id", None)) == "Array" and \
            isinstance(sl, ast.Tuple) and len(sl.elts) == 2:     # "pl.Array[int, 4]"
        base, sl = sl.elts
    if isinstance(base, ast.Name) and isinstance(sl, ast.Constant):   # "int[4]"
        return ArraySpec(base.id, sl.value)
    return None


class ArrayView:
    """A TilingData array field at trace time: its elements' runtime scalars."""

    def __init__(self, name: str, items: list):
        self._name, self._items = name, items

    def __len__(self):
        return len(self._items)

    def __iter__(self):
        return iter(self._items)

    def __getitem__(self, i):
        idx = _index(i, len(self._items), self._name)
        return self._items[idx] if isinstance(idx, int) else _pick(self._items, idx)
