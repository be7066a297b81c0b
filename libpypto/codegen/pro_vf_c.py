"""C for the Reg instructions of a Pro kernel (ir/reg_ops.py): a mixin of pro_c._Prog.

A register is a 64-byte aligned local array of the program function (`float vr3[64]`;
fp16/bf16 lanes as uint16_t bits, a mask as uint8_t lanes), zeroed where it is declared
(the program's first ops). Each instruction is one loop over the lanes with a fixed trip
count, which gcc vectorises; instructions that read other lanes than the one they write
(broadcast, reductions, casts of another width) go through a temporary. The formulas are
the Pro runner's (runtime/pro_vf.py), written so that both round the same way (and the
program is compiled with fp-contract=off, vf_attrs): float lanes
compute in float and round to the register's dtype; exp, ln and exp_sub in double, rounded
once to float; axpy and mul_add_dst in double (the product of two floats is exact there, so
a contraction into fma changes nothing); reduce_sum's binary tree. Loads and stores check
their tile's bytes (and 32-byte alignment for the aligned forms) and stop the launch with
the instruction's line otherwise.
"""
from __future__ import annotations

from ..ir.reg_ops import REG_OPS
from ..ir.types import REG_BYTES
from .c_text import _ld, _st

UN = {"vabs": ("fabsf({a})", "({a} < 0 ? -{a} : {a})"), "vneg": ("-{a}", "-{a}"),
      "vexp": ("(float)exp((double){a})", None), "vln": ("(float)log((double){a})", None),
      "vsqrt": ("sqrtf({a})", None), "vrelu": ("({a} > 0.0f ? {a} : 0.0f)",
                                                "({a} > 0 ? {a} : 0)"),
      "vnot": (None, "~{a}")}
BIN = {"add": "{a} + {b}", "sub": "{a} - {b}", "mul": "{a} * {b}", "div": "{a} / {b}",
       "max": "(({a} > {b} || {a} != {a}) ? {a} : {b})",
       "min": "(({a} < {b} || {a} != {a}) ? {a} : {b})",
       "and": "{a} & {b}", "or": "{a} | {b}", "xor": "{a} ^ {b}",
       "lrelu": "({a} >= 0.0f ? {a} : {a} * {b})",
       "expsub": "(float)exp((double){a} - (double){b})"}
ABSDIF = ("fabsf({a} - {b})", "({a} - {b} < 0 ? {b} - {a} : {a} - {b})")
SCALAR_KEY = {"vadds": "add", "vsubs": "sub", "vmuls": "mul", "vmaxs": "max", "vmins": "min"}
CMP = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
ROUND = {"rint": "nearbyint({x})", "round": "trunc({x} + copysign(0.5, {x}))",
         "floor": "floor({x})", "ceil": "ceil({x})", "trunc": "trunc({x})"}
PATTERN = {"ALL": "1", "ALLF": "0", "H": "l < {n} / 2", "Q": "l < {n} / 4",
           "M3": "l % 3 == 0", "M4": "l % 4 == 0"}


def _kind(dt) -> str:
    return "float" if dt.kind == "float" else "int"


class VfC:
    """The i_<name> methods of the Reg instructions (mixed into pro_c._Prog)."""

    def vf_attrs(self) -> str:
        """A program with Reg instructions is compiled without floating-point contraction:
        gcc would otherwise fuse one instruction's product into the next one's sum (an fma,
        rounded once) once both lane loops are vectorised and the register between them is
        forwarded, and the Pro runner rounds every instruction."""
        if any(op.name in REG_OPS for top in self.p.regions[0] for op in top.walk()):
            return '__attribute__((optimize("fp-contract=off"))) '
        return ""

    def reg(self, v) -> str:
        return self.names[v]

    def lane(self, v, i: str = "l") -> str:
        """Lane i of register v in its compute type."""
        return _ld(v.type.dtype, f"{self.reg(v)}[{i}]")

    def lanes(self, v, body: str) -> None:
        self.emit(f"for (int l = 0; l < {v.type.lanes}; l++) {body}")

    def write(self, op, value: str, active: str | None) -> None:
        """dst[l] = value on the active lanes; 0 elsewhere, or the old lane with merge."""
        dst = op.operands[0]
        val = _st(dst.type.dtype, value, _kind(dst.type.dtype))
        if active is None:
            self.lanes(dst, f"{self.reg(dst)}[l] = {val};")
            return
        keep = f"{self.reg(dst)}[l]" if op.attrs.get("merge") else "0"
        self.lanes(dst, f"{self.reg(dst)}[l] = {active} ? {val} : {keep};")

    def mask_of(self, op) -> str:
        return f"{self.reg(op.operands[-1])}[l]"

    def scalar_of(self, op, dt) -> str:
        key = "scalar" if "scalar" in op.attrs else "value"
        return self.scalar(op.attrs[key], dt.kind != "float")

    # -- declarations and movement ------------------------------------------------------------
    def i_vreg(self, op) -> None:
        t = op.result.type
        name = self.names[op.result] = f"vr{len(self.names)}"
        ct = "uint8_t" if t.kind == "mask" else t.dtype.c_type
        self.emit(f"{ct} {name}[{t.lanes}] __attribute__((aligned(64))); "
                  f"memset({name}, 0, sizeof {name});   /* {op.attrs['name']} */")

    def tile_at(self, op, tile, nbytes: str, aligned: bool) -> str:
        """A checked element offset into a tile (the register's bytes inside the tile)."""
        o = self.fresh("o")
        isz = tile.type.dtype.itemsize
        rows, cols = tile.type.shape
        extent = ((rows - 1) * self.rs(tile) + cols) * isz
        self.emit(f"const int64_t {o} = {self.ex(op.attrs['offset'])};")
        cond = f"{o} < 0 || {o} * {isz} + {nbytes} > {extent}"
        if aligned:
            cond += f" || ({o} * {isz}) % 32 != 0"
        self.fail(cond, op)
        return f"(char *){self.names[tile]} + {o} * {isz}"

    def i_vlds(self, op) -> None:
        dst, tile = op.operands
        at = self.tile_at(op, tile, str(REG_BYTES), op.name == "vlds")
        self.emit(f"memcpy({self.reg(dst)}, {at}, {REG_BYTES});")

    i_vldus = i_vlds

    def i_vsts(self, op) -> None:
        tile, src, m = op.operands
        at = self.tile_at(op, tile, str(REG_BYTES), True)
        p = self.fresh("p")
        ct = src.type.dtype.c_type
        self.emit(f"{ct} *{p} = ({ct} *)({at});")
        self.lanes(src, f"{p}[l] = {self.reg(m)}[l] ? {self.reg(src)}[l] : {p}[l];")

    def i_vstus(self, op) -> None:
        tile, src = op.operands
        n = self.fresh("n")
        isz = src.type.dtype.itemsize
        self.emit(f"const int64_t {n} = {self.ex(op.attrs['count'])};")
        self.fail(f"{n} < 0 || {n} > {src.type.lanes}", op)
        at = self.tile_at(op, tile, f"{n} * {isz}", False)
        self.emit(f"memcpy({at}, {self.reg(src)}, (size_t)({n} * {isz}));")

    def i_vdup(self, op) -> None:
        dst = op.operands[0]
        s = self.fresh("s")
        work = "float" if dst.type.dtype.kind == "float" else "int64_t"
        self.emit(f"const {work} {s} = {self.scalar_of(op, dst.type.dtype)};")
        self.write(op, s, self.mask_of(op) if len(op.operands) > 1 else None)

    def i_vdupl(self, op) -> None:
        dst, src, _ = op.operands
        s = self.fresh("s")
        work = "float" if dst.type.dtype.kind == "float" else "int64_t"
        i = "0" if op.attrs["pos"] == "lowest" else str(src.type.lanes - 1)
        self.emit(f"const {work} {s} = {self.lane(src, i)};")
        self.write(op, s, self.mask_of(op))

    def i_vmov(self, op) -> None:
        dst, src = op.operands
        self.emit(f"memcpy({self.reg(dst)}, {self.reg(src)}, sizeof {self.reg(dst)});")

    i_vbitcast = i_vmov

    # -- compute ------------------------------------------------------------------------------
    def unary(self, op) -> None:
        src = op.operands[1]
        f, i = UN[op.name]
        tmpl = f if src.type.dtype.kind == "float" else i
        self.write(op, tmpl.format(a=f"({self.lane(src)})"), self.mask_of(op))

    i_vabs = i_vneg = i_vexp = i_vln = i_vsqrt = i_vrelu = i_vnot = unary

    def binary(self, op) -> None:
        a = op.operands[1]
        fl = a.type.dtype.kind == "float"
        b = self.lane(op.operands[2]) if len(op.operands) == 4 else \
            self.scalar_of(op, a.type.dtype)
        key = SCALAR_KEY.get(op.name, op.name[1:])
        tmpl = ABSDIF[0 if fl else 1] if key == "absdif" else BIN[key]
        self.write(op, tmpl.format(a=f"({self.lane(a)})", b=f"({b})"), self.mask_of(op))

    i_vadd = i_vsub = i_vmul = i_vdiv = i_vmax = i_vmin = i_vand = i_vor = i_vxor = binary
    i_vabsdif = i_vexpsub = i_vadds = i_vsubs = i_vmuls = i_vmaxs = i_vmins = binary
    i_vlrelu = binary

    def i_vaxpy(self, op) -> None:
        dst, a = op.operands[:2]
        b = f"(double){self.lane(op.operands[2])}" if op.name == "vmula" else \
            f"(double)({self.scalar_of(op, a.type.dtype)})"
        self.write(op, f"(float)((double){self.lane(dst)} + (double){self.lane(a)} * {b})",
                   self.mask_of(op))

    i_vmula = i_vaxpy

    def i_vcmp(self, op) -> None:
        dst, a = op.operands[:2]
        b = self.lane(op.operands[2]) if op.name == "vcmp" else \
            self.scalar_of(op, a.type.dtype)
        self.lanes(dst, f"{self.reg(dst)}[l] = (uint8_t)(({self.lane(a)} "
                        f"{CMP[op.attrs['cmp']]} {b}) && {self.mask_of(op)});")

    i_vcmps = i_vcmp

    def i_vsel(self, op) -> None:
        d, a, b, m = op.operands
        self.lanes(d, f"{self.reg(d)}[l] = {self.reg(m)}[l] ? {self.reg(a)}[l] : "
                      f"{self.reg(b)}[l];")

    def i_vci(self, op) -> None:
        dst = op.operands[0]
        fl = dst.type.dtype.kind == "float"
        s = self.fresh("s")
        self.emit(f"const {'float' if fl else 'int64_t'} {s} = "
                  f"{self.scalar(op.attrs['start'], not fl)};")
        sign = "+" if op.attrs["order"] == "inc" else "-"
        lane = "(float)l" if fl else "(int64_t)l"
        self.write(op, f"{s} {sign} {lane}", None)

    def i_pset(self, op) -> None:
        m = op.operands[0]
        pat, n = op.attrs["pattern"], m.type.lanes
        cond = f"l < {pat[2:]}" if pat.startswith("VL") else PATTERN[pat].format(n=n)
        self.lanes(m, f"{self.reg(m)}[l] = (uint8_t)({cond});")

    def i_plt(self, op) -> None:
        m = op.operands[0]
        n = self.fresh("n")
        self.emit(f"const int64_t {n} = {self.ex(op.attrs['n'])};")
        self.lanes(m, f"{self.reg(m)}[l] = (uint8_t)(l < {n});")

    # -- across lanes -------------------------------------------------------------------------
    def i_vcadd(self, op) -> None:
        """reduce_sum: the active lanes (0 elsewhere) summed in a binary tree."""
        dst, src, m = op.operands
        n, dt = src.type.lanes, src.type.dtype
        work = "float" if dt.kind == "float" else "int64_t"
        t = self.fresh("acc")
        self.emit(f"{work} {t}[{n}];")
        self.lanes(src, f"{t}[l] = {self.reg(m)}[l] ? ({work})({self.lane(src)}) : 0;")
        self.emit(f"for (int w = {n // 2}; w >= 1; w /= 2) for (int l = 0; l < w; l++) "
                  f"{t}[l] = {t}[2 * l] + {t}[2 * l + 1];")
        self.emit(f"memset({self.reg(dst)}, 0, sizeof {self.reg(dst)});")
        self.emit(f"{self.reg(dst)}[0] = {_st(dt, f'{t}[0]', _kind(dt))};")

    def i_vcmax(self, op) -> None:
        """reduce_max / reduce_min: lane 0 the first NaN or the first extreme active lane
        (+0 over -0 for max, -0 over +0 for min), lane 1 its index's bits (runtime/pro_vf.py
        extreme)."""
        dst, src, m = op.operands
        n, dt = src.type.lanes, src.type.dtype
        is_max = op.name == "vcmax"
        fl = dt.kind == "float"
        work = "float" if fl else "int64_t"
        best, idx, seen = self.fresh("best"), self.fresh("idx"), self.fresh("seen")
        lo, hi = ("-INFINITY", "INFINITY") if fl else _int_limits(dt)
        better = ">" if is_max else "<"
        zero = (f" || ({{x}} == {best} && {{x}} == 0 && "
                f"{'signbit' if is_max else '!signbit'}({best}) && "
                f"{'!signbit' if is_max else 'signbit'}({{x}}))") if fl else ""
        x = self.fresh("x")
        self.emit(f"{work} {best} = {lo if is_max else hi}; int64_t {idx} = 0; int {seen} = 0;")
        self.emit(f"for (int l = 0; l < {n}; l++) {{")
        self.emit(f"    if (!{self.reg(m)}[l]) continue;")
        self.emit(f"    const {work} {x} = {self.lane(src)};")
        nan = f"{x} != {x}" if fl else "0"
        self.emit(f"    if (!{seen} || {nan}) {{ {best} = {x}; {idx} = l; {seen} = 1; "
                  f"if ({nan}) break; continue; }}")
        self.emit(f"    if ({x} {better} {best}{zero.format(x=x)}) {{ {best} = {x}; "
                  f"{idx} = l; }}")
        self.emit("}")
        u = f"uint{dt.itemsize * 8}_t"
        self.emit(f"memset({self.reg(dst)}, 0, sizeof {self.reg(dst)});")
        self.emit(f"{self.reg(dst)}[0] = {_st(dt, best, _kind(dt))};")
        self.emit(f"{{ const {u} u_ = ({u}){idx}; memcpy(&{self.reg(dst)}[1], &u_, "
                  f"sizeof u_); }}")

    i_vcmin = i_vcmax

    def i_vcvt(self, op) -> None:
        """astype: lane to lane, or widening from source elements 2i + part, or narrowing
        into destination elements 2i + part (the others 0); the mask is the source's."""
        dst, src, m = op.operands
        sdt, dt = src.type.dtype, dst.type.dtype
        ns, nd, part = src.type.lanes, dst.type.lanes, op.attrs["part"]
        val = _convert(self.lane(src, "k"), sdt, dt, op.attrs["round"])
        t = self.fresh("cv")
        self.emit(f"{dt.c_type} {t}[{nd}];")
        self.emit(f"memset({t}, 0, sizeof {t});")
        if nd == ns:
            k, at = "l", "l"
        elif nd < ns:
            k, at = f"2 * l + {part}", "l"
        else:
            k, at = "l", f"2 * l + {part}"
        self.emit(f"for (int l = 0; l < {min(ns, nd)}; l++) {{ const int k = {k}; "
                  f"{t}[{at}] = {self.reg(m)}[k] ? {val} : 0; }}")
        self.emit(f"memcpy({self.reg(dst)}, {t}, sizeof {t});")


def _int_limits(dt) -> tuple:
    bits = dt.itemsize * 8
    if dt.name.startswith("u"):
        return "0", f"{(1 << bits) - 1}ULL"
    return f"({-(1 << (bits - 1)) + 1}LL - 1)", f"{(1 << (bits - 1)) - 1}LL"


def _convert(x: str, sdt, dt, mode: str) -> str:
    """One lane of astype in C (runtime/pro_vf.py convert, then the rounding to dt)."""
    if dt.kind == "float":
        return _st(dt, f"(float)({x})", "float")
    if sdt.kind != "float":
        return f"({dt.c_type})({x})"
    lo, hi = _int_limits(dt)
    r = ROUND[mode].format(x=f"(double)({x})")
    return (f"({dt.c_type})(({x}) != ({x}) ? 0 : (int64_t)fmin(fmax({r}, (double){lo}), "
            f"(double){hi}))")
