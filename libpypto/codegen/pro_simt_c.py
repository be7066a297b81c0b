"""The C of a SIMT launch (`simt_launch`, ir/simt_ops.py), inside its Pro program function
(pro_c.py): one thread block of the vector core, vectorised as one loop over the threads
per body instruction, the same lockstep as the Pro runner (runtime/pro_simt.py), never one
OS thread per SIMT thread.

    {   /* simt_launch <fn>: N threads */
        registers: int64_t / float arrays of N (calloc), masks: bytes of N
        for (t = 0; t < N; t++) if (m[t]) r5[t] = r3[t] + r4[t];      one per instruction
        ...
    }

An `if` computes its two arms' masks and runs each arm under its mask; a `for` runs its
body while any thread of the mask still iterates. Integer arithmetic wraps (unsigned
arithmetic on int64), `//` and `%` are floor forms (x // -1 wraps, no trap), shifts use the
count's low 6 bits; floats compute in float (one operation per statement: nothing to fuse).
An element index outside its buffer, an integer division by zero or a loop step <= 0 on an
executing thread stops the launch with an error index (pro_c's pp_err_line: the launch's
line; pro_native names the kind). Atomics apply thread after thread in thread order; a GM
integer atomic is a compare-and-swap loop on the element (`__atomic` builtins), so clusters
on different worker threads never lose an update; a launch whose GM atomics depend on the
order of the blocks is serial (pro_native runs the clusters in cluster order).
Everything pasted is an int, a register index or a name from simt_ops' tables: the body was
checked against its grammar (simt_ops._Body) before it reaches here.
"""
from __future__ import annotations

import math

from ..ir.simt_ops import walk
from ..ir.types import TensorType
from .c_text import _ld, _st, c_comment

_ICMP = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}
_WRAP = {"add": "+", "sub": "-", "mul": "*"}
_BITS = {"and": "&", "or": "|", "xor": "^"}


class _Err:
    """An error kind of a launch, for pro_c's error tables (name in ERR_OPS, loc)."""

    def __init__(self, name: str, loc):
        self.name, self.loc = name, loc


def render_launch(prog, op) -> None:
    """Emit the launch into prog (a pro_c._Prog)."""
    _Launch(prog, op).render()


class _Launch:
    def __init__(self, prog, op):
        self.p, self.op = prog, op
        a = op.attrs
        self.regs = a["regs"]
        x, y, z = a["threads"]
        self.dims, self.nt = (x, y, z), x * y * z
        self.k = prog.fresh("simt")
        self.masks = 1
        self.errs: dict = {}

    def emit(self, s: str) -> None:
        self.p.emit(s)

    def err(self, kind: str) -> str:
        """`serr = <index>; goto done` for an error of this kind."""
        if kind not in self.errs:
            self.p.errs.append(_Err(kind, self.op.loc))
            self.errs[kind] = len(self.p.errs)
        return f"{{ serr = {self.errs[kind]}; goto {self.k}_done; }}"

    def r(self, d: int) -> str:
        return f"r{d}[t]"

    def render(self) -> None:
        p, a, nt = self.p, self.op.attrs, self.nt
        ni = sum(1 for c in self.regs if c == "i")
        nf = len(self.regs) - ni
        nm = 1 + _count_masks(a["body"])
        self.emit("{   " + c_comment(f"simt_launch {a['fn']}: {nt} threads"))
        p.depth += 1
        self.emit("int serr = 0; (void)serr;")
        self.emit(f"int64_t *ri = (int64_t *)calloc({max(1, ni * nt)}, sizeof(int64_t));")
        self.emit(f"float *rf = (float *)calloc({max(1, nf * nt)}, sizeof(float));")
        self.emit(f"unsigned char *mk = (unsigned char *)calloc({nm * nt}, 1);")
        self.emit(f"if (!ri || !rf || !mk) {self.err('simt_oom')}")
        ki = kf = 0
        for d, c in enumerate(self.regs):
            if c == "i":
                self.emit(f"int64_t *r{d} = ri + {ki * nt}; (void)r{d};")
                ki += 1
            else:
                self.emit(f"float *r{d} = rf + {kf * nt}; (void)r{d};")
                kf += 1
        classes = {i[2]: self.regs[i[1]] for i in walk(a["body"]) if i[0] == "scalar"}
        for k, e in enumerate(a["scalars"]):       # an int exactly, a float as a double
            ct = "int64_t" if classes.get(k) == "i" else "double"
            self.emit(f"const {ct} sc{k} = ({ct})({p.ex(e)}); (void)sc{k};")
        self.emit(f"unsigned char *m0 = mk; for (int64_t t = 0; t < {nt}; t++) m0[t] = 1;")
        self.block(a["body"], "m0")
        p.depth -= 1
        self.emit(f"{self.k}_done:")
        p.depth += 1
        self.emit("free(ri); free(rf); free(mk);")
        self.emit("if (serr) { co->err = serr; return; }")
        p.depth -= 1
        self.emit("}")

    def lanes(self, m: str, body: str) -> None:
        self.emit(f"for (int64_t t = 0; t < {self.nt}; t++) if ({m}[t]) {{ {body} }}")

    def block(self, body, m: str) -> None:
        for i in body:
            getattr(self, "i_" + i[0])(i, m)

    # -- values -----------------------------------------------------------------------------
    def i_const(self, i, m):
        self.lanes(m, f"{self.r(i[1])} = {_lit(i[2], self.regs[i[1]])};")

    def i_scalar(self, i, m):
        cast = "(float)" if self.regs[i[1]] == "f" else "(int64_t)"
        self.lanes(m, f"{self.r(i[1])} = {cast}sc{i[2]};")

    def i_ctx(self, i, m):
        x, y, _ = self.dims
        v = {"tx": f"t % {x}", "ty": f"t / {x} % {y}", "tz": f"t / {x * y}", "tid": "t",
             "warp": "32"}[i[2]]
        self.lanes(m, f"{self.r(i[1])} = {v};")

    def i_mov(self, i, m):
        self.lanes(m, f"{self.r(i[1])} = {self.r(i[2])};")

    def i_sel(self, i, m):
        self.lanes(m, f"{self.r(i[1])} = {self.r(i[2])} != 0 ? {self.r(i[3])} : "
                      f"{self.r(i[4])};")

    def i_bin(self, i, m):
        op, a, b = i[2], self.r(i[3]), self.r(i[4])
        if self.regs[i[3]] == "f":
            self.lanes(m, f"{self.r(i[1])} = {_fbin(op, a, b)};")
            return
        if op in ("floordiv", "mod"):
            self.lanes(m, f"if ({b} == 0) {self.err('simt_div')} "
                          f"{self.r(i[1])} = {_ifloor(op, a, b)};")
            return
        self.lanes(m, f"{self.r(i[1])} = {_ibin(op, a, b)};")

    def i_un(self, i, m):
        op, a, f = i[2], self.r(i[3]), self.regs[i[3]] == "f"
        v = {"neg": f"-{a}" if f else f"(int64_t)(0 - (uint64_t){a})",
             "abs": f"fabsf({a})" if f else f"({a} < 0 ? (int64_t)(0 - (uint64_t){a}) : {a})",
             "not": f"(int64_t)({a} == 0)", "inv": f"~{a}", "itof": f"(float){a}",
             "ftoi": (f"({a} != {a} ? 0 : {a} >= 9223372036854775808.0f ? INT64_MAX : "
                      f"{a} < -9223372036854775808.0f ? INT64_MIN : (int64_t){a})")}[op]
        self.lanes(m, f"{self.r(i[1])} = {v};")

    # -- control flow -----------------------------------------------------------------------
    def mask(self) -> str:
        n = self.masks
        self.masks += 1
        name = f"m{n}"
        self.emit(f"unsigned char *{name} = mk + {n * self.nt};")
        return name

    def i_if(self, i, m):
        self.emit("{")
        mt, me = self.mask(), self.mask()
        c = self.r(i[1])
        self.emit(f"for (int64_t t = 0; t < {self.nt}; t++) {{ {mt}[t] = {m}[t] && {c} != 0; "
                  f"{me}[t] = {m}[t] && {c} == 0; }}")
        self.block(i[2], mt)
        self.block(i[3], me)
        self.emit("}")

    def i_for(self, i, m):
        v, start, stop, step = (self.r(r) for r in i[1:5])
        self.emit("{")
        ml = self.mask()
        self.lanes(m, f"if ({step} <= 0) {self.err('simt_step')} {v} = {start};")
        self.emit("for (;;) {")
        self.emit(f"    int anyl = 0; for (int64_t t = 0; t < {self.nt}; t++) {{ {ml}[t] = "
                  f"{m}[t] && {v} < {stop}; anyl |= {ml}[t]; }}")
        self.emit("    if (!anyl) break;")
        self.block(i[5], ml)
        self.lanes(ml, f"{v} = (int64_t)((uint64_t){v} + (uint64_t){step});")
        self.emit("}")
        self.emit("}")

    # -- memory -----------------------------------------------------------------------------
    def at(self, b: int, idx: list) -> tuple:
        """(pointer expression, check code) of element idx of buffer b."""
        v = self.op.operands[b]
        ix = [self.r(r) for r in idx]
        if isinstance(v.type, TensorType):
            dims = [f"({self.p.ex(d)})" for d in v.type.shape]
            off, stride = "0", "1"
            for x, d in zip(reversed(ix), reversed(dims)):
                off = f"{off} + {x} * {stride}"
                stride = f"{stride} * {d}"
        else:
            dims = [str(s) for s in v.type.shape]
            off = f"{ix[0]} * {self.p.rs(v)} + {ix[1]}"
        bad = " || ".join(f"{x} < 0 || {x} >= {d}" for x, d in zip(ix, dims))
        return f"{self.p.names[v]}[{off}]", f"if ({bad}) {self.err('simt_index')}"

    def i_ld(self, i, m):
        dt = self.op.operands[i[2]].type.dtype
        ptr, check = self.at(i[2], i[3])
        self.lanes(m, f"{check} {self.r(i[1])} = {_ld(dt, ptr)};")

    def i_st(self, i, m):
        dt = self.op.operands[i[1]].type.dtype
        ptr, check = self.at(i[1], i[2])
        kind = "float" if self.regs[i[3]] == "f" else "int"
        self.lanes(m, f"{check} {ptr} = {_st(dt, self.r(i[3]), kind)};")

    def i_atom(self, i, m):
        d, kind, b, idx, v, cmp = i[1:]
        buf = self.op.operands[b]
        dt = buf.type.dtype
        ptr, check = self.at(b, idx)
        f = dt.kind == "float"
        val, c = self.r(v), self.r(cmp) if cmp >= 0 else None
        keep = (lambda x: f"{self.r(d)} = {x};") if d >= 0 else (lambda x: f"(void){x};")
        if isinstance(buf.type, TensorType) and not f:      # other blocks may race: CAS
            new = _atomic_new(kind, "ow", val, c, False)
            body = (f"{dt.c_type} *pa = &{ptr}; {dt.c_type} o = __atomic_load_n(pa, "
                    f"__ATOMIC_RELAXED), nv; do {{ int64_t ow = (int64_t)o; nv = "
                    f"({dt.c_type})({new}); }} while (!__atomic_compare_exchange_n(pa, &o, nv, "
                    f"0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)); {keep('(int64_t)o')}")
        else:
            new = _atomic_new(kind, "ow", val, c, f)
            wt = "float" if f else "int64_t"
            body = (f"{wt} ow = {_ld(dt, ptr)}; {ptr} = "
                    f"{_st(dt, new, 'float' if f else 'int')}; {keep('ow')}")
        self.lanes(m, f"{check} {body}")


def _count_masks(body) -> int:
    n = 0
    for i in body:
        if i[0] == "if":
            n += 2 + _count_masks(i[2]) + _count_masks(i[3])
        elif i[0] == "for":
            n += 1 + _count_masks(i[5])
    return n


def _lit(v, cls: str) -> str:
    if cls == "i":
        v = int(v)
        return f"(INT64_MIN + {v + 2 ** 63})" if v < -(2 ** 62) else f"(int64_t){v}LL"
    v = float(v)
    if math.isinf(v):
        return "INFINITY" if v > 0 else "(-INFINITY)"
    if math.isnan(v):
        return "NAN"
    return f"(float){v.hex()}"


def _ibin(op: str, a: str, b: str) -> str:
    if op in _WRAP:
        return f"(int64_t)((uint64_t){a} {_WRAP[op]} (uint64_t){b})"
    if op in _BITS:
        return f"({a} {_BITS[op]} {b})"
    if op in _ICMP:
        return f"(int64_t)({a} {_ICMP[op]} {b})"
    return {"min": f"({a} < {b} ? {a} : {b})", "max": f"({a} > {b} ? {a} : {b})",
            "shl": f"(int64_t)((uint64_t){a} << ({b} & 63))", "shr": f"({a} >> ({b} & 63))",
            "land": f"(int64_t)({a} != 0 && {b} != 0)",
            "lor": f"(int64_t)({a} != 0 || {b} != 0)"}[op]


def _ifloor(op: str, a: str, b: str) -> str:
    """Python's // and % on int64 (b != 0); x // -1 wraps instead of trapping."""
    adjust = f"({a} % {b} != 0 && (({a} < 0) != ({b} < 0)))"
    if op == "floordiv":
        return f"({b} == -1 ? (int64_t)(0 - (uint64_t){a}) : {a} / {b} - {adjust})"
    return f"({b} == -1 ? 0 : {a} % {b} + ({adjust} ? {b} : 0))"


def _fbin(op: str, a: str, b: str) -> str:
    if op in ("add", "sub", "mul", "div"):
        return f"{a} {dict(add='+', sub='-', mul='*', div='/')[op]} {b}"
    if op in _ICMP:
        return f"(int64_t)({a} {_ICMP[op]} {b})"
    pick = "<" if op == "min" else ">"      # numpy's minimum / maximum: NaN wins
    return f"({a} != {a} ? {a} : {b} != {b} ? {b} : {a} {pick} {b} ? {a} : {b})"


def _atomic_new(kind: str, o: str, v: str, c, f: bool) -> str:
    """An atomic's new value from the old value o (int64 or float)."""
    if kind in ("add", "sub"):
        return f"{o} {'+' if kind == 'add' else '-'} {v}" if f else _ibin(kind, o, v)
    if kind in ("max", "min"):
        return _fbin(kind, o, v) if f else _ibin(kind, o, v)
    if kind == "exch":
        return v
    if kind == "cas":
        return f"({o} == {c} ? {v} : {o})"
    return _ibin(kind, o, v)
