"""The op catalogue: every tensor-level op's kind, numpy semantics, C form and PTO name.

Elementwise ops compute in float32 for fp16/bf16 (and in their own type otherwise) and round
each result to the declared dtype, in the numpy reference and in emitted C alike: the result
of every op is what the declared dtype can hold, never a wider intermediate.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Elementwise:
    name: str
    arity: int
    np: str            # numpy expression over a, b (float32 or integer arrays)
    c: str             # C expression over a, b (float for floats, the storage type for ints)
    pto: str           # PTO instruction (tile-tile form)
    kinds: tuple = ("float",)    # element kinds it accepts
    c_int: str | None = None     # C form for integer inputs, when it differs


def _u(name, np_, c, pto, kinds=("float",), c_int=None):
    return Elementwise(name, 1, np_, c, pto, kinds, c_int)


def _b(name, np_, c, pto, kinds=("float", "int"), c_int=None):
    return Elementwise(name, 2, np_, c, pto, kinds, c_int)


UNARY = {e.name: e for e in [
    _u("neg", "-a", "-a", "TNEG", ("float", "int")),
    _u("abs", "np.abs(a)", "fabsf(a)", "TABS", ("float", "int"), c_int="(a < 0 ? -a : a)"),
    _u("exp", "np.exp(a)", "pp_expf(a)", "TEXP"),
    _u("log", "np.log(a)", "logf(a)", "TLOG"),
    _u("sqrt", "np.sqrt(a)", "sqrtf(a)", "TSQRT"),
    _u("rsqrt", "1 / np.sqrt(a)", "1.0f / sqrtf(a)", "TRSQRT"),
    _u("tanh", "np.tanh(a)", "pp_tanhf(a)", "TTANH"),
    _u("sigmoid", "1 / (1 + np.exp(-a))", "1.0f / (1.0f + pp_expf(-a))", "TSIGMOID"),
    _u("relu", "np.maximum(a, 0)", "(a > 0 ? a : 0)", "TRELU", ("float", "int")),
]}

BINARY = {e.name: e for e in [
    _b("add", "a + b", "a + b", "TADD"),
    _b("sub", "a - b", "a - b", "TSUB"),
    _b("mul", "a * b", "a * b", "TMUL"),
    _b("div", "a / b", "a / b", "TDIV", ("float",)),
    _b("maximum", "np.maximum(a, b)", "(a > b ? a : b)", "TMAX"),
    _b("minimum", "np.minimum(a, b)", "(a < b ? a : b)", "TMIN"),
]}

# reductions: identity for the accumulator, numpy function, C combine, PTO row form
REDUCE = {
    "sum": ("0", "np.sum", "{acc} + {x}", "TROWSUM", "TCOLSUM"),
    "amax": ("-INFINITY", "np.max", "({x} > {acc} ? {x} : {acc})", "TROWMAX", "TCOLMAX"),
    "amin": ("INFINITY", "np.min", "({x} < {acc} ? {x} : {acc})", "TROWMIN", "TCOLMIN"),
}

ELEMENTWISE = {**UNARY, **BINARY}


def is_elementwise(name: str) -> bool:
    return name in ELEMENTWISE or name == "cast"
