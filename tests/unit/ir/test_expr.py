"""libpypto.ir.expr: folding and normalisation, print/parse round trip, evaluation everywhere.

A seeded random generator builds well-typed expressions (integers from arithmetic, 0/1 from
comparisons) as plain tuples, so each one has an independent Python meaning: the folded Expr,
its printed-and-parsed copy, to_py, numpy evaluation and (with cc) to_c must all agree with it.
"""
from __future__ import annotations

import random
import subprocess

import numpy as np
import pytest

from libpypto.ir import expr as E

x, y, z, n = (E.sym(s) for s in "xyzn")
SYMS = ("x", "y", "z", "n")


# -- folding and normalisation ------------------------------------------------------------

def test_add_folds_constants_and_like_terms():
    assert E.add(1, 2) == 3
    assert E.add(x, 0) is x
    assert E.add(x, x) == E.mul(x, 2)
    assert E.add(E.mul(x, 3), E.mul(x, -3)) == 0
    assert E.add(E.add(x, 1), E.add(y, 2)) == E.add(x, y, 3)
    assert E.sub(x, x) == 0
    assert E.add(E.mul(x, 2), E.mul(3, x), y) == E.add(y, E.mul(x, 5))


def test_add_and_mul_are_order_independent():
    assert E.add(x, y, z) == E.add(z, x, y) == E.add(y, E.add(z, x))
    assert E.mul(x, y, 3) == E.mul(3, y, x) == E.mul(E.mul(y, 3), x)
    assert hash(E.add(x, y)) == hash(E.add(y, x))
    assert {E.add(x, 1): "a"}[E.add(1, x)] == "a"


def test_mul_folds_and_distributes_constants():
    assert E.mul(2, 3) == 6
    assert E.mul(x, 0) == 0
    assert E.mul(x, 1) is x
    assert E.mul(E.mul(x, 2), 3) == E.mul(x, 6)
    assert E.mul(E.add(x, 1), 2) == E.add(E.mul(x, 2), 2)
    assert E.mul(E.add(x, y), -1) == E.add(E.mul(x, -1), E.mul(y, -1))


def test_printing_of_sums_uses_minus():
    assert E.to_str(E.add(x, -3)) == "x - 3"
    assert E.to_str(E.sub(x, y)) == "x - y"
    assert E.to_str(E.sub(5, x)) == "5 - x"
    assert E.to_str(E.mul(x, -1)) == "-x"
    assert E.to_str(E.mul(E.add(x, 1), y)) == "(x + 1)*y"
    assert E.to_str(E.floordiv(E.mul(x, -3), 2)) == "x*(-3) // 2"


def test_floordiv_rules():
    assert E.floordiv(7, 2) == 3
    assert E.floordiv(-7, 2) == -4                  # floor, not truncation
    assert E.floordiv(7, -2) == -4
    assert E.floordiv(x, 1) is x
    assert E.floordiv(E.mul(x, 8), 4) == E.mul(x, 2)
    # exact multiples come out of the division, the rest stays inside
    assert E.floordiv(E.add(E.mul(x, 8), y, 16), 8) == E.add(x, E.floordiv(y, 8), 2)
    kept = E.floordiv(E.mul(x, 6), 4)
    assert isinstance(kept, E.Expr) and kept.op == "floordiv"
    neg = E.floordiv(x, -2)                           # no rewriting for negative divisors
    assert isinstance(neg, E.Expr) and neg.op == "floordiv"


def test_cdiv_rules():
    assert E.cdiv(7, 2) == 4
    assert E.cdiv(-7, 2) == -3
    assert E.cdiv(8, 2) == 4
    assert E.cdiv(x, 1) is x
    assert E.cdiv(E.mul(x, 8), 8) == x
    assert E.cdiv(E.mul(x, 8), 4) == E.mul(x, 2)
    c = E.cdiv(x, 8)
    assert c.op == "cdiv" and E.to_str(c) == "cdiv(x, 8)"


def test_mod_rules():
    assert E.mod(-7, 3) == 2                          # Python (floor) semantics
    assert E.mod(7, -3) == -2
    assert E.mod(x, 1) == 0
    assert E.mod(E.mul(x, 8), 4) == 0
    m = E.mod(E.add(E.mul(x, 8), 3), 8)              # kept or folded, it is 3 for every x
    assert all(E.evaluate(m, {"x": v}) == 3 for v in (-5, 0, 7))
    assert E.mod(x, 8).op == "mod"


def test_min_max_drop_dominated_terms():
    assert E.minimum(3, 5) == 3 and E.maximum(3, 5) == 5
    assert E.minimum(x, x) is x
    assert E.minimum(x, E.add(x, 1)) == x
    assert E.maximum(x, E.add(x, 1)) == E.add(x, 1)
    assert E.minimum(E.add(x, 3), E.sub(x, 2)) == E.sub(x, 2)
    # n-ary: nested calls flatten, only the best constant stays
    m = E.minimum(E.minimum(x, 5), E.minimum(y, 3))
    assert m.op == "min" and E.to_str(m) == "min(3, x, y)"
    assert E.to_str(E.maximum(E.maximum(4, x), 9)) == "max(9, x)"
    assert E.minimum(E.minimum(x, E.add(y, 2)), E.sub(y, 1)) == E.minimum(x, E.sub(y, 1))
    assert E.maximum(E.maximum(x, E.add(y, 2)), E.sub(y, 1)) == E.maximum(x, E.add(y, 2))
    # order of arguments does not matter
    assert E.minimum(y, x) == E.minimum(x, y)
    assert E.minimum(E.minimum(x, y), z) == E.minimum(x, E.minimum(z, y))


def test_comparisons_fold_at_constant_distance():
    assert E.lt(1, 2) == 1 and E.lt(2, 1) == 0
    assert E.lt(x, E.add(x, 1)) == 1
    assert E.le(E.add(x, 2), x) == 0
    assert E.eq(E.add(x, y), E.add(y, x)) == 1
    assert E.ne(x, x) == 0
    assert E.ne(x, y).op == "ne"


def test_logic_folds():
    c = E.lt(x, y)
    assert E.logical_and(1, c) is c and E.logical_and(c, 1) is c
    assert E.logical_and(0, c) == 0 and E.logical_and(c, 0) == 0
    assert E.logical_or(1, c) == 1 and E.logical_or(0, c) is c
    assert E.logical_not(0) == 1 and E.logical_not(5) == 0
    assert E.select(1, x, y) is x and E.select(0, x, y) is y
    assert E.select(c, x, x) is x


def test_free_symbols_and_substitute():
    e = E.add(E.cdiv(n, 8), E.mul(x, y))
    assert E.free_symbols(e) == {"n", "x", "y"}
    assert E.free_symbols(7) == set()
    assert E.substitute(E.cdiv(n, 8), {"n": 64}) == 8
    assert E.substitute(E.cdiv(n, 8), {"n": 65}) == 9
    # re-folds on the way up
    assert E.substitute(E.add(x, y), {"y": E.mul(x, -1)}) == 0
    assert E.substitute(E.minimum(x, y), {"y": E.add(x, 4)}) == x
    assert E.substitute(e, {}) == e


def test_substitute_nary_min_max():
    """min/max of 3+ arguments (made by flattening) re-fold through n-ary constructors."""
    e = E.minimum(E.minimum(x, y), z)
    assert len(e.args) == 3
    assert E.substitute(e, {"x": 4, "y": 9, "z": 6}) == 4
    assert E.substitute(E.maximum(E.maximum(x, y), 3), {"y": 1}) == E.maximum(x, 3)


def test_evaluate_unbound_symbol():
    with pytest.raises(E.UnboundSymbol) as exc:
        E.evaluate(E.add(x, n), {"x": 1})
    assert exc.value.name == "n"


@pytest.mark.parametrize("text", ["x +", "foo(x)", "x $ y", "(x", "1 2", "", "min(x, )"])
def test_parse_rejects_garbage(text):
    with pytest.raises(E.ExprSyntaxError):
        E.parse(text)


def test_parse_accepts_what_it_never_prints():
    assert E.parse("x > y") == E.lt(y, x)
    assert E.parse("x >= y") == E.le(y, x)
    assert E.parse("  (x)  ") == x
    assert E.parse("max(x, y, 3, y + 1)") == E.maximum(3, E.maximum(x, E.add(y, 1)))
    assert E.parse("--x") == x
    assert E.parse("x - -3") == E.add(x, 3)


def test_to_c_and_to_py_rendering():
    assert E.to_c(2 ** 40) == "1099511627776LL"
    assert E.to_c(7) == "7"
    assert E.to_c(E.floordiv(x, 8)) == "pp_floordiv(x, 8)"
    assert E.to_c(E.minimum(x, E.minimum(y, 3))) == "pp_min(pp_min(3, x), y)"
    assert E.to_c(x, name=lambda s: "S[" + s + "]") == "S[x]"
    assert E.to_py(E.cdiv(x, 8)) == "(-(-x // 8))"


# -- a seeded generator of well-typed expressions ------------------------------------------

class Gen:
    """Random expression specs: ('int', ...) trees with an independent Python meaning."""

    def __init__(self, seed: int):
        self.r = random.Random(seed)

    def int_(self, depth: int):
        r = self.r
        if depth <= 0 or r.random() < 0.2:
            return ("sym", r.choice(SYMS)) if r.random() < 0.6 else ("const", r.randint(-12, 12))
        k = r.choice(["add", "add", "sub", "mul", "neg", "floordiv", "cdiv", "mod", "min",
                      "max", "select"])
        d = depth - 1
        if k in ("add", "sub"):
            return (k, self.int_(d), self.int_(d))
        if k == "mul":
            if r.random() < 0.75 or depth > 2:
                return ("mul", self.int_(d), ("const", r.randint(-9, 9)))
            return ("mul", self.int_(d), self.int_(d))
        if k == "neg":
            return ("neg", self.int_(d))
        if k in ("floordiv", "cdiv", "mod"):
            return (k, self.int_(d), self.divisor(d))
        if k in ("min", "max"):
            return (k, [self.int_(d) for _ in range(r.randint(2, 4))])
        return ("select", self.bool_(d), self.int_(d), self.int_(d))

    def divisor(self, depth: int):
        r = self.r
        u = r.random()
        if u < 0.6:
            return ("const", r.choice([-9, -4, -3, -2, -1, 1, 2, 3, 4, 8, 16]))
        if u < 0.85:   # symbolic and positive
            return ("max", [("const", 1), self.int_(depth)])
        return ("min", [("const", -1), self.int_(depth)])        # symbolic and negative

    def bool_(self, depth: int):
        r = self.r
        d = max(depth - 1, 0)
        k = r.choice(["lt", "le", "eq", "ne", "gt", "ge", "lt", "and", "or", "not"])
        if k in ("and", "or") and depth > 0:
            return (k, self.bool_(d), self.bool_(d))
        if k == "not" and depth > 0:
            return ("not", self.bool_(d))
        k = k if k not in ("and", "or", "not") else "lt"
        return (k, self.int_(d), self.int_(d))


def build(s):
    k = s[0]
    if k == "sym":
        return E.sym(s[1])
    if k == "const":
        return s[1]
    if k in ("min", "max"):
        r = build(s[1][0])
        for a in s[1][1:]:
            r = (E.minimum if k == "min" else E.maximum)(r, build(a))
        return r
    args = [build(a) for a in s[1:]]
    fn = {"add": E.add, "sub": E.sub, "mul": E.mul, "neg": lambda a: E.mul(a, -1),
          "floordiv": E.floordiv, "cdiv": E.cdiv, "mod": E.mod, "select": E.select,
          "lt": E.lt, "le": E.le, "eq": E.eq, "ne": E.ne, "gt": lambda a, b: E.lt(b, a),
          "ge": lambda a, b: E.le(b, a), "and": E.logical_and, "or": E.logical_or,
          "not": E.logical_not}[k]
    return fn(*args)


class Overflow(Exception):
    pass


def pyeval(s, env, big=2 ** 40):
    """The meaning of a spec in plain Python ints (floor division, 0/1 booleans)."""
    k = s[0]
    if k == "sym":
        return env[s[1]]
    if k == "const":
        return s[1]
    if k in ("min", "max"):
        v = (min if k == "min" else max)(pyeval(a, env, big) for a in s[1])
    elif k == "select":
        v = pyeval(s[2], env, big) if pyeval(s[1], env, big) else pyeval(s[3], env, big)
    elif k == "not":
        v = int(not pyeval(s[1], env, big))
    elif k == "neg":
        v = -pyeval(s[1], env, big)
    else:
        a, b = pyeval(s[1], env, big), pyeval(s[2], env, big)
        v = {"add": lambda: a + b, "sub": lambda: a - b, "mul": lambda: a * b,
             "floordiv": lambda: a // b, "cdiv": lambda: -(-a // b), "mod": lambda: a % b,
             "lt": lambda: int(a < b), "le": lambda: int(a <= b), "eq": lambda: int(a == b),
             "ne": lambda: int(a != b), "gt": lambda: int(a > b), "ge": lambda: int(a >= b),
             "and": lambda: int(bool(a) and bool(b)), "or": lambda: int(bool(a) or bool(b))}[k]()
    if abs(v) > big:
        raise Overflow
    return v


def random_env(r: random.Random) -> dict:
    env = {s: r.randint(-50, 50) for s in SYMS}
    env["n"] = r.randint(0, 300)
    if r.random() < 0.2:
        env["x"] = 0
    return env


def corpus(count: int = 400, seed: int = 20240607):
    """(spec, Expr, [envs]) triples; the first few are fixed hand-picked corner cases."""
    g = Gen(seed)
    r = random.Random(seed + 1)
    out = []
    for i in range(count):
        spec = g.bool_(3) if i % 5 == 4 else g.int_(r.randint(1, 4))
        envs = [random_env(r) for _ in range(6)]
        out.append((spec, build(spec), envs))
    return out


CORPUS = corpus()


def test_generator_makes_varied_expressions():
    ops = set()
    for _, e, _ in CORPUS:
        if isinstance(e, E.Expr):
            stack = [e]
            while stack:
                t = stack.pop()
                if isinstance(t, E.Expr):
                    ops.add(t.op)
                    stack.extend(t.args)
    # every kind of node appears, so the round trips below cover all of them
    assert ops >= {"add", "mul", "floordiv", "cdiv", "mod", "min", "max", "select", "lt", "le",
                   "eq", "ne", "and", "or", "not", "sym"}


def test_folding_preserves_meaning():
    checked = 0
    for spec, e, envs in CORPUS:
        for env in envs:
            try:
                want = pyeval(spec, env, big=2 ** 200)
            except ZeroDivisionError:
                continue
            assert E.evaluate(e, env) == want, (spec, E.to_str(e), env)
            checked += 1
    assert checked > 2000


def test_print_parse_round_trip():
    for spec, e, envs in CORPUS:
        s = E.to_str(e)
        back = E.parse(s)
        assert back == e, (s, E.to_str(back))
        assert E.to_str(back) == s
        for env in envs:
            assert E.evaluate(back, env) == E.evaluate(e, env), (s, env)


def test_substitute_all_symbols_equals_evaluate():
    checked = 0
    for spec, e, envs in CORPUS:
        for env in envs[:2]:
            assert E.substitute(e, env) == E.evaluate(e, env), E.to_str(e)
            checked += 1
    assert checked > 300


def test_substitute_partially_keeps_meaning():
    for spec, e, envs in CORPUS:
        env = envs[0]
        part = E.substitute(e, {"x": env["x"], "y": E.add(E.sym("z"), 1)})
        full = dict(env, y=env["z"] + 1)
        assert E.evaluate(part, full) == E.evaluate(e, full), E.to_str(e)


def test_to_py_agrees_with_evaluate():
    scope = {"__builtins__": {"int": int, "min": min, "max": max}}
    for spec, e, envs in CORPUS:
        code = compile(E.to_py(e), "<to_py>", "eval")
        for env in envs:
            assert eval(code, scope, dict(env)) == E.evaluate(e, env), (E.to_py(e), env)


def test_evaluate_over_numpy_int64_arrays():
    r = random.Random(7)
    for spec, e, _ in CORPUS:
        envs = [random_env(r) for _ in range(16)]
        try:
            want = [pyeval(spec, env) for env in envs]
        except Overflow:
            continue
        arrays = {s: np.array([env[s] for env in envs], dtype=np.int64) for s in SYMS}
        got = np.broadcast_to(np.asarray(E.evaluate(e, arrays)), (len(envs),))
        assert got.tolist() == want, E.to_str(e)


def test_evaluate_numpy_scalars():
    e = E.add(E.floordiv(x, 4), E.minimum(y, 3), E.lt(x, y))
    env = {"x": np.int64(-9), "y": np.int64(5)}
    assert int(E.evaluate(e, env)) == -9 // 4 + 3 + 1


@pytest.mark.needs_cc
def test_to_c_agrees_with_evaluate(tmp_path):
    from importlib import resources
    from libpypto.runtime.compiler import find_cc
    prelude = resources.files("libpypto.codegen").joinpath("c_prelude.h").read_text()
    r = random.Random(11)
    cases = []
    for spec, e, _ in CORPUS:
        env = random_env(r)
        try:
            cases.append((e, env, pyeval(spec, env)))
        except Overflow:
            pass
    lines = [prelude, "#include <stdio.h>", "int main(void) {"]
    for i, (e, env, _) in enumerate(cases):
        decl = " ".join(f"int64_t {s} = {env[s]}LL;" for s in SYMS)
        lines.append(f"  {{ {decl} (void)x; (void)y; (void)z; (void)n;"
                     f" printf(\"%lld\\n\", (long long)({E.to_c(e)})); }}")
    lines.append("  return 0;\n}")
    src = tmp_path / "exprs.c"
    src.write_text("\n".join(lines))
    exe = tmp_path / "exprs"
    cc = subprocess.run([find_cc(), "-O1", "-w", str(src), "-o", str(exe), "-lm"],
                        capture_output=True, text=True)
    assert cc.returncode == 0, cc.stderr[:2000]
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.split()
    assert len(out) == len(cases) > 300
    for (e, env, want), got in zip(cases, out):
        assert int(got) == want, (E.to_c(e), env)


# -- bugs -----------------------------------------------------------------------------------

def test_not_as_operand_round_trips():
    e = E.add(E.logical_not(E.lt(x, y)), 1)
    back = E.parse(E.to_str(e))
    env = {"x": 0, "y": 1}
    assert E.evaluate(e, env) == 1
    assert E.evaluate(back, env) == 1
    assert back == e


def test_evaluate_logic_with_int_and_array_operands():
    e = E.logical_and(E.lt(x, 5), E.lt(y, 2))
    got = E.evaluate(e, {"x": 3, "y": np.arange(4, dtype=np.int64)})
    assert np.asarray(got).tolist() == [1, 1, 0, 0]
