"""numpy meets a traced tensor: an error that names the pypto op to use instead.

A traced tensor has no values, only a place in the graph, so `np.exp(x)` cannot work while
a kernel traces. Without help numpy tries to convert it and fails somewhere unrelated (it
iterates over it). install() gives the tracer tensor class numpy's three hooks:

- `__array_ufunc__` (np.exp, np.add, np.maximum, ...): `use pypto.exp`, at the line that
  called it. The operator ufuncs are the exception: a numpy scalar on the left of an
  operator (`np.float32(2) * x`) reaches the tensor through them, and runs the tensor's
  own operator, as it did through __array_priority__ before;
- `__array_function__` (np.sum, np.concatenate, np.where, ...): the same error;
- `__array__` (np.asarray(x), np.array(x)): a traced tensor has no values to convert.

The name numpy uses becomes the catalogue's name (np.subtract -> pypto.sub, np.concatenate
-> pypto.concat); one the catalogue does not have gets the closest that it does.
"""
from __future__ import annotations

import difflib
import os
import sys

from ..errors import CompileError
from ..ir.core import Loc

# numpy's name -> the catalogue's, where they differ
RENAMED = {
    "subtract": "sub", "multiply": "mul", "divide": "div", "true_divide": "div",
    "floor_divide": "floor_div", "mod": "remainder", "negative": "neg", "absolute": "abs",
    "fabs": "abs", "power": "pow", "float_power": "pow", "arcsin": "asin", "arccos": "acos",
    "arctan": "atan", "arctan2": "atan2", "arcsinh": "asinh", "arccosh": "acosh",
    "arctanh": "atanh", "rint": "round", "around": "round", "fix": "trunc",
    "equal": "eq", "not_equal": "ne", "less": "lt", "less_equal": "le", "greater": "gt",
    "greater_equal": "ge", "invert": "bitwise_not", "left_shift": "bitwise_left_shift",
    "right_shift": "bitwise_right_shift", "max": "amax", "min": "amin", "fmax": "maximum",
    "fmin": "minimum", "concatenate": "concat", "expand_dims": "unsqueeze", "dot": "matmul",
    "take_along_axis": "gather", "take": "index_select", "cumulative_sum": "cumsum",
    "cumulative_prod": "cumprod", "broadcast_to": "expand_clone", "copy": "clone",
    "full_like": "full", "zeros_like": "zeros", "ones_like": "ones",
}

# operator ufuncs: (the operator on a tensor at the left, the operator on one at the right)
OPERATORS = {
    "add": ("__add__", "__radd__"), "subtract": ("__sub__", "__rsub__"),
    "multiply": ("__mul__", "__rmul__"), "true_divide": ("__truediv__", "__rtruediv__"),
    "floor_divide": ("__floordiv__", "__rfloordiv__"), "remainder": ("__mod__", "__rmod__"),
    "power": ("__pow__", "__rpow__"), "bitwise_and": ("__and__", "__rand__"),
    "bitwise_or": ("__or__", "__ror__"), "bitwise_xor": ("__xor__", "__rxor__"),
    "less": ("__lt__", "__gt__"), "less_equal": ("__le__", "__ge__"),
    "greater": ("__gt__", "__lt__"), "greater_equal": ("__ge__", "__le__"),
    "equal": ("__eq__", "__eq__"), "not_equal": ("__ne__", "__ne__"),
}

_LIB = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def install(cls, ops) -> None:
    """Give cls (the tracer tensor) numpy's hooks; ops: the catalogue's op names."""
    names = frozenset(ops)
    cls.__array_ufunc__ = lambda self, ufunc, method, *inputs, **kwargs: \
        _array_ufunc(names, self, ufunc, method, inputs, kwargs)
    cls.__array_function__ = lambda self, func, types, args, kwargs: \
        _refuse(names, getattr(func, "__name__", str(func)))
    cls.__array__ = _array


def _array_ufunc(names, tensor, ufunc, method, inputs, kwargs):
    ops = OPERATORS.get(ufunc.__name__)
    if ops is not None and method == "__call__" and not kwargs and len(inputs) == 2:
        cls = type(tensor)
        a, b = inputs
        if isinstance(a, cls) and _is_scalar(b):
            return getattr(a, ops[0])(b)
        if isinstance(b, cls) and _is_scalar(a) and hasattr(b, ops[1]):
            return getattr(b, ops[1])(a)
    name = ufunc.__name__ if method == "__call__" else f"{ufunc.__name__}.{method}"
    _refuse(names, name)


def _is_scalar(v) -> bool:
    import numpy as np
    return isinstance(v, (int, float, bool, np.generic)) or \
        (isinstance(v, np.ndarray) and v.ndim == 0)


def _array(self, dtype=None, copy=None):
    raise CompileError("a traced tensor has no values while the kernel traces, so numpy "
                       "cannot convert it (np.asarray, np.array); compute with pypto ops",
                       user_loc())


def advice(names, numpy_name: str) -> str:
    """What to write instead of numpy.<numpy_name> on a traced tensor."""
    base = numpy_name.split(".")[0]
    want = RENAMED.get(base, base)
    if want in names:
        return f"use pypto.{want}"
    close = difflib.get_close_matches(want, sorted(names), n=1, cutoff=0.6)
    return f"pypto has no {want}" + (f"; did you mean pypto.{close[0]}?" if close else
                                     " (the catalogue is in README.md)")


def _refuse(names, numpy_name: str):
    raise CompileError(f"numpy.{numpy_name} cannot be applied to a traced tensor (it has no "
                       f"values while the kernel traces); {advice(names, numpy_name)}",
                       user_loc())


def user_loc():
    """The innermost line outside libpypto and numpy: where the op file called numpy."""
    import numpy as np
    skip = (_LIB + os.sep, os.path.dirname(os.path.abspath(np.__file__)) + os.sep)
    f = sys._getframe(1)
    while f is not None:
        fn = os.path.abspath(f.f_code.co_filename)
        if not fn.startswith(skip):
            return Loc(os.path.basename(fn), f.f_lineno)
        f = f.f_back
    return None
