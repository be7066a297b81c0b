"""The op catalogue: every elementwise op's numpy semantics, C form and PTO name, plus the
reduction kinds.

Elementwise ops compute in float32 for fp16/bf16 (in int64 for integer and bool inputs) and
round each result to the result dtype, in the numpy reference and in emitted C alike: every
op's result is what its dtype can hold, never a wider intermediate.

Templates: `np` is a numpy expression over a, b, c (arrays in the compute type, float32 or
int64); `c` is a C expression over a, b, c (float or int64_t values).
"""
from __future__ import annotations

from dataclasses import dataclass

FLOAT, INT, BOOL = "float", "int", "bool"
ANY = (FLOAT, INT, BOOL)
NUM = (FLOAT, INT)
INTS = (INT, BOOL)


@dataclass(frozen=True)
class Elementwise:
    name: str
    arity: int
    np: str            # numpy expression over a, b, c
    c: str             # C expression over a, b, c
    pto: str           # PTO instruction (tile-tile form)
    kinds: tuple       # element kinds it accepts
    out: str = "same"  # result dtype: "same" as the inputs, or "bool"
    c_int: str | None = None     # C form for integer inputs, when it differs


def _u(name, np_, c, pto, kinds=(FLOAT,), out="same", c_int=None):
    return Elementwise(name, 1, np_, c, pto, kinds, out, c_int)


def _b(name, np_, c, pto, kinds=NUM, out="same", c_int=None):
    return Elementwise(name, 2, np_, c, pto, kinds, out, c_int)


UNARY = {e.name: e for e in [
    _u("neg", "-a", "-a", "TNEG", NUM),
    _u("abs", "np.abs(a)", "fabsf(a)", "TABS", NUM, c_int="(a < 0 ? -a : a)"),
    _u("sign", "np.sign(a)", "(float)((a > 0) - (a < 0))", "TSIGN", NUM,
       c_int="((a > 0) - (a < 0))"),
    _u("signbit", "np.signbit(a)", "signbit(a) != 0", "TSIGNBIT", NUM, out="bool",
       c_int="(a < 0)"),
    _u("reciprocal", "1 / a", "1.0f / a", "TRECIP"),
    _u("sqrt", "np.sqrt(a)", "sqrtf(a)", "TSQRT"),
    _u("rsqrt", "1 / np.sqrt(a)", "1.0f / sqrtf(a)", "TRSQRT"),
    _u("cbrt", "np.cbrt(a)", "cbrtf(a)", "TCBRT"),
    _u("exp", "np.exp(a)", "pp_expf(a)", "TEXP"),
    _u("exp2", "np.exp2(a)", "exp2f(a)", "TEXP2"),
    _u("expm1", "np.expm1(a)", "expm1f(a)", "TEXPM1"),
    _u("log", "np.log(a)", "logf(a)", "TLOG"),
    _u("log2", "np.log2(a)", "log2f(a)", "TLOG2"),
    _u("log10", "np.log10(a)", "log10f(a)", "TLOG10"),
    _u("log1p", "np.log1p(a)", "log1pf(a)", "TLOG1P"),
    _u("sin", "np.sin(a)", "sinf(a)", "TSIN"),
    _u("cos", "np.cos(a)", "cosf(a)", "TCOS"),
    _u("tan", "np.tan(a)", "tanf(a)", "TTAN"),
    _u("asin", "np.arcsin(a)", "asinf(a)", "TASIN"),
    _u("acos", "np.arccos(a)", "acosf(a)", "TACOS"),
    _u("atan", "np.arctan(a)", "atanf(a)", "TATAN"),
    _u("sinh", "np.sinh(a)", "sinhf(a)", "TSINH"),
    _u("cosh", "np.cosh(a)", "coshf(a)", "TCOSH"),
    _u("tanh", "np.tanh(a)", "tanhf(a)", "TTANH"),
    _u("asinh", "np.arcsinh(a)", "asinhf(a)", "TASINH"),
    _u("acosh", "np.arccosh(a)", "acoshf(a)", "TACOSH"),
    _u("atanh", "np.arctanh(a)", "atanhf(a)", "TATANH"),
    _u("erf", "erf(a)", "erff(a)", "TERF"),
    _u("erfc", "erfc(a)", "erfcf(a)", "TERFC"),
    _u("ceil", "np.ceil(a)", "ceilf(a)", "TCEIL"),
    _u("floor", "np.floor(a)", "floorf(a)", "TFLOOR"),
    _u("trunc", "np.trunc(a)", "truncf(a)", "TTRUNC"),
    _u("rint", "np.rint(a)", "nearbyintf(a)", "TRINT"),
    _u("isfinite", "np.isfinite(a)", "isfinite(a) != 0", "TISFINITE", out="bool"),
    _u("isnan", "np.isnan(a)", "isnan(a) != 0", "TISNAN", out="bool"),
    _u("sigmoid", "1 / (1 + np.exp(-a))", "1.0f / (1.0f + pp_expf(-a))", "TSIGMOID"),
    _u("relu", "np.maximum(a, 0)", "(a > 0 ? a : 0)", "TRELU", NUM),
    _u("logical_not", "a == 0", "a == 0", "TNOT", ANY, out="bool"),
    _u("bitwise_not", "~a", "~a", "TNOT", INTS, c_int="~a"),
    _u("copy", "a", "a", "TMOV", ANY),
]}

BINARY = {e.name: e for e in [
    _b("add", "a + b", "a + b", "TADD"),
    _b("sub", "a - b", "a - b", "TSUB"),
    _b("mul", "a * b", "a * b", "TMUL"),
    _b("div", "a / b", "a / b", "TDIV", (FLOAT,)),
    _b("pow", "np.power(a, b)", "powf(a, b)", "TPOW", (FLOAT,)),
    _b("fmod", "np.fmod(a, b)", "fmodf(a, b)", "TFMOD", NUM, c_int="pp_ifmod(a, b)"),
    _b("remainder", "np.remainder(a, b)", "pp_fremainder(a, b)", "TREM", NUM,
       c_int="pp_iremainder(a, b)"),
    _b("floor_div", "np.floor_divide(a, b)", "floorf(a / b)", "TFLOORDIV", NUM,
       c_int="pp_ifloordiv(a, b)"),
    _b("maximum", "np.maximum(a, b)", "pp_fmax(a, b)", "TMAX", c_int="(a > b ? a : b)"),
    _b("minimum", "np.minimum(a, b)", "pp_fmin(a, b)", "TMIN", c_int="(a < b ? a : b)"),
    _b("atan2", "np.arctan2(a, b)", "atan2f(a, b)", "TATAN2", (FLOAT,)),
    _b("hypot", "np.hypot(a, b)", "hypotf(a, b)", "THYPOT", (FLOAT,)),
    # greatest common divisor of integers (non-negative; gcd(0, 0) = 0), as numpy's
    _b("gcd", "np.gcd(a, b)", "pp_igcd(a, b)", "TGCD", (INT,)),
    _b("bitwise_and", "a & b", "a & b", "TAND", INTS),
    _b("bitwise_or", "a | b", "a | b", "TOR", INTS),
    _b("bitwise_xor", "a ^ b", "a ^ b", "TXOR", INTS),
    _b("bitwise_left_shift", "np.left_shift(a, b)", "a << b", "TSHL", (INT,)),
    _b("bitwise_right_shift", "np.right_shift(a, b)", "a >> b", "TSHR", (INT,)),
    _b("logical_and", "(a != 0) & (b != 0)", "(a != 0) && (b != 0)", "TAND", ANY, out="bool"),
    _b("logical_or", "(a != 0) | (b != 0)", "(a != 0) || (b != 0)", "TOR", ANY, out="bool"),
    _b("eq", "a == b", "a == b", "TCMP.EQ", ANY, out="bool"),
    _b("ne", "a != b", "a != b", "TCMP.NE", ANY, out="bool"),
    _b("lt", "a < b", "a < b", "TCMP.LT", NUM, out="bool"),
    _b("le", "a <= b", "a <= b", "TCMP.LE", NUM, out="bool"),
    _b("gt", "a > b", "a > b", "TCMP.GT", NUM, out="bool"),
    _b("ge", "a >= b", "a >= b", "TCMP.GE", NUM, out="bool"),
]}

TERNARY = {e.name: e for e in [
    Elementwise("where", 3, "np.where(a != 0, b, c)", "(a != 0 ? b : c)", "TSEL", ANY),
]}

# reductions: accumulator identity, numpy function, C combine, PTO row and column forms
REDUCE = {
    "sum": ("0", "np.sum", "{acc} + {x}", "TROWSUM", "TCOLSUM"),
    "prod": ("1", "np.prod", "{acc} * {x}", "TROWPROD", "TCOLPROD"),
    "max": ("-INFINITY", "np.max", "({x} > {acc} || {x} != {x} ? {x} : {acc})", "TROWMAX",
            "TCOLMAX"),
    "min": ("INFINITY", "np.min", "({x} < {acc} || {x} != {x} ? {x} : {acc})", "TROWMIN",
            "TCOLMIN"),
}

REDUCE["amax"], REDUCE["amin"] = REDUCE["max"], REDUCE["min"]     # tensor-level names

ELEMENTWISE = {**UNARY, **BINARY, **TERNARY}

# uniform's float of a Philox word x: (x & (2**bits - 1)) / 2**bits, the low mantissa bits of
# the dtype (runtime/philox.py, codegen/c_more.py i_tuniform)
UNIFORM_BITS = {"f32": 23, "f16": 10, "bf16": 7}


def is_elementwise(name: str) -> bool:
    return name in ELEMENTWISE or name == "cast"
