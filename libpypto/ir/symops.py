"""Python operators on a symbolic integer at trace time, shared by Tensor mode's SymScalar
(frontend/tensor.py) and Pro mode's Scalar (prolang/dsl.py): each holds an expression `e`
and says how another operand becomes an expression (_operand) and how a result is wrapped
(_result for binary operators, _unary for - and ~)."""
from __future__ import annotations

from . import expr as E


def int_expr(v, cls):
    """The expression of an int, a bool, a numpy integer, an expression or a cls (None for
    anything else)."""
    if isinstance(v, cls):
        return v.e
    if isinstance(v, E.Expr):
        return v
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, int):
        return v
    if type(v).__module__ == "numpy" and getattr(v, "dtype", None) is not None and \
            v.dtype.kind in "iu":
        return int(v)
    return None


class SymOps:
    """+ - * // % , comparisons, & | ~ building expressions; no hash (== builds one)."""

    __slots__ = ()

    def _operand(self, other):
        raise NotImplementedError

    def _result(self, e):
        raise NotImplementedError

    def _unary(self, e):
        return self._result(e)

    def _bin(self, other, fn, swap=False):
        o = self._operand(other)
        if o is None:
            return NotImplemented
        return self._result(fn(o, self.e) if swap else fn(self.e, o))

    def __add__(self, o): return self._bin(o, E.add)
    def __radd__(self, o): return self._bin(o, E.add, True)
    def __sub__(self, o): return self._bin(o, E.sub)
    def __rsub__(self, o): return self._bin(o, E.sub, True)
    def __mul__(self, o): return self._bin(o, E.mul)
    def __rmul__(self, o): return self._bin(o, E.mul, True)
    def __floordiv__(self, o): return self._bin(o, E.floordiv)
    def __rfloordiv__(self, o): return self._bin(o, E.floordiv, True)
    def __mod__(self, o): return self._bin(o, E.mod)
    def __rmod__(self, o): return self._bin(o, E.mod, True)
    def __neg__(self): return self._unary(E.mul(self.e, -1))
    def __lt__(self, o): return self._bin(o, E.lt)
    def __le__(self, o): return self._bin(o, E.le)
    def __gt__(self, o): return self._bin(o, E.lt, True)
    def __ge__(self, o): return self._bin(o, E.le, True)
    def __eq__(self, o): return self._bin(o, E.eq)
    def __ne__(self, o): return self._bin(o, E.ne)
    def __and__(self, o): return self._bin(o, E.logical_and)
    def __or__(self, o): return self._bin(o, E.logical_or)
    def __invert__(self): return self._unary(E.logical_not(self.e))
    __hash__ = None
