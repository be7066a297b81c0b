"""The Pro C of the instructions of libpypto/ir/tile_ops_more.py and of the MX scale load:
methods installed on pro_c._Prog (METHODS), helpers prepended to the source (C_HELPERS).
They follow runtime/pro_exec_more.py step for step (same order, same roundings), so the two
agree bit for bit: a float product that feeds an add is written `x * y + 0.0f` (gcc may
contract that into fma(x, y, 0), which rounds the product alone), and the MX matmul's
products are exact in double (its sum in order, then one rounding to float)."""
from __future__ import annotations

from .c_text import _ld, _st

C_HELPERS = r"""
/* issue 9 item 4 (codegen/pro_c_more.py): 8-bit floats decoded exactly, and helpers */
static inline double pp_e4m3(uint8_t b) {
    int e = (b >> 3) & 15, m = b & 7; double v;
    if (e == 15 && m == 7) return NAN;
    v = e ? ldexp(8 + m, e - 10) : ldexp(m, -9);
    return (b & 0x80) ? -v : v;
}
static inline double pp_e5m2(uint8_t b) {
    int e = (b >> 2) & 31, m = b & 3; double v;
    if (e == 31) v = m ? NAN : INFINITY;
    else v = e ? ldexp(4 + m, e - 17) : ldexp(m, -16);
    return (b & 0x80) ? -v : v;
}
static inline double pp_e8m0(uint8_t b) { return b == 255 ? NAN : ldexp(1.0, b - 127); }
static inline float pp_relu_nan(float x) { return (x > 0.0f || x != x) ? x : 0.0f; }
static inline int64_t pp_shl(int64_t a, int64_t s, int bits) {
    return (s >= 0 && s < bits) ? (int64_t)((uint64_t)a << s) : 0; }
static inline int64_t pp_shr(int64_t a, int64_t s, int bits) {
    return (s >= 0 && s < bits) ? (a >> s) : (a < 0 ? -1 : 0); }
static inline int pp_gt_nanlast(double x, double y) { return x == x && (y != y || x > y); }
"""

_DEC = {"f8e4m3": "pp_e4m3", "f8e5m2": "pp_e5m2", "e8m0": "pp_e8m0"}


def _loop2(self, r, c, body: str) -> tuple:
    i, j = self.fresh(), self.fresh("j")
    self.emit(f"for (int64_t {i} = 0; {i} < {r}; {i}++) for (int64_t {j} = 0; {j} < {c}; "
              f"{j}++) {body.format(i=i, j=j)};")


def _el(self, v, i="{i}", j="{j}") -> str:
    return f"{self.names[v]}[{i} * {self.rs(v)} + {j}]"


def tload_mx(self, op) -> None:
    """The MX scale load (pro_exec_more.load_mx): ZZ tile[i, j] = x[o0 + i, o1 + j / 2,
    o2 + j % 2]; NN tile[i, j] = x[o0 + i / 2, o1 + j, o2 + i % 2]."""
    tile, gm = op.operands
    offs = [self.fresh("o") for _ in range(3)]
    ext = [self.fresh("e") for _ in range(3)]
    dims = [self.fresh("d") for _ in range(3)]
    for o, e, d, oe, ve, de in zip(offs, ext, dims, op.attrs["offsets"], op.attrs["valid"],
                                   gm.type.shape):
        self.emit(f"const int64_t {o} = {self.ex(oe)}, {e} = {self.ex(ve)}, "
                  f"{d} = {self.ex(de)};")
    self.fail(" || ".join(f"{o} < 0 || {e} < 0 || {o} + {e} > {d}"
                          for o, e, d in zip(offs, ext, dims)), op)
    g = self.names[gm]
    s0, s1 = f"({dims[1]} * {dims[2]})", dims[2]
    if op.attrs["mx"] == "ZZ":
        src = f"{g}[({offs[0]} + {{i}}) * {s0} + ({offs[1]} + {{j}} / 2) * {s1} + {offs[2]} + " \
              f"{{j}} % 2]"
        _loop2(self, ext[0], f"2 * {ext[1]}", f"{_el(self, tile)} = {src}")
    else:
        src = f"{g}[({offs[0]} + {{i}} / 2) * {s0} + ({offs[1]} + {{j}}) * {s1} + {offs[2]} + " \
              f"{{i}} % 2]"
        _loop2(self, f"2 * {ext[0]}", ext[1], f"{_el(self, tile)} = {src}")


def i_tmatmul_mx(self, op) -> None:
    acc, a, b, sa, sb = op.operands
    for s, d in ((sa, a), (sb, b)):     # the scales are read at the data address >> 4
        so = f"((char *){self.names[s]} - co->buf[{self.space_index(s)}])"
        do = f"((char *){self.names[d]} - co->buf[{self.space_index(d)}])"
        self.fail(f"{so} != ({do} >> 4)", op)
    m, n = self.valid(op, acc.type.shape)
    k = self.fresh("k")
    self.emit(f"const int64_t {k} = pp_max(0, pp_min({a.type.shape[1]}, "
              f"{self.ex(op.attrs['k_valid'])}));")
    init = self.ex(op.attrs["init"])
    i, j, q, s = self.fresh(), self.fresh("j"), self.fresh("q"), self.fresh("sum")
    da = f"{_DEC[a.type.dtype.name]}({_el(self, a, i, q)}) * " \
         f"pp_e8m0({_el(self, sa, i, f'({q} / 32)')})"
    db = f"{_DEC[b.type.dtype.name]}({_el(self, b, q, j)}) * " \
         f"pp_e8m0({_el(self, sb, f'({q} / 32)', j)})"
    cv = _el(self, acc, i, j)
    self.emit(f"for (int64_t {i} = 0; {i} < {m}; {i}++) for (int64_t {j} = 0; {j} < {n}; "
              f"{j}++) {{")
    self.emit(f"    double {s} = 0;")
    self.emit(f"    for (int64_t {q} = 0; {q} < {k}; {q}++) {s} += ({da}) * ({db});")
    self.emit(f"    {cv} = (float)(({init}) ? {s} : (double){cv} + {s});")
    self.emit("}")


def i_tquant(self, op) -> None:
    d, src, scale = op.operands[:3]
    r, c = self.valid(op, d.type.shape)
    v = f"nearbyintf({_ld(src.type.dtype, _el(self, src))} * {_el(self, scale, '{i}', '0')})"
    lo, hi = (-128, 127) if op.attrs["mode"] == "sym" else (0, 255)
    if op.attrs["mode"] == "asym":
        v = f"nearbyintf({v} + {_el(self, op.operands[3], '{i}', '0')})"
    x = self.fresh("x")
    i, j = self.fresh(), self.fresh("j")
    self.emit(f"for (int64_t {i} = 0; {i} < {r}; {i}++) for (int64_t {j} = 0; {j} < {c}; "
              f"{j}++) {{ const float {x} = {v.format(i=i, j=j)}; "
              f"{_el(self, d, i, j)} = ({d.type.dtype.c_type})({x} != {x} ? 0.0f : "
              f"fminf(fmaxf({x}, {lo}.0f), {hi}.0f)); }}")


def i_tdequant(self, op) -> None:
    d, src, scale, off = op.operands
    r, c = self.valid(op, d.type.shape)
    v = f"((float){_ld(src.type.dtype, _el(self, src))} - {_el(self, off, '{i}', '0')}) * " \
        f"{_el(self, scale, '{i}', '0')}"
    _loop2(self, r, c, f"{_el(self, d)} = {v}")


def i_tvgather(self, op) -> None:
    d, src, idx = op.operands[:3]
    r, c = self.valid(op, d.type.shape)
    x = self.fresh("x")
    size = src.type.shape[0] * src.type.shape[1]
    cols = src.type.shape[1]
    i, j = self.fresh(), self.fresh("j")
    self.emit(f"for (int64_t {i} = 0; {i} < {r}; {i}++) for (int64_t {j} = 0; {j} < {c}; "
              f"{j}++) {{")
    self.depth += 1
    self.emit(f"const int64_t {x} = (int64_t){_el(self, idx, i, j)} + {op.attrs['offset']};")
    self.fail(f"{x} < 0 || {x} >= {size}", op)
    self.emit(f"{_el(self, d, i, j)} = {_el(self, src, f'({x} / {cols})', f'({x} % {cols})')};")
    self.depth -= 1
    self.emit("}")


def i_tvscatter(self, op) -> None:
    d, src, idx = op.operands
    r, c = self.valid(op, src.type.shape)
    x = self.fresh("x")
    cols = d.type.shape[1]
    i, j = self.fresh(), self.fresh("j")
    self.emit(f"for (int64_t {i} = 0; {i} < {r}; {i}++) for (int64_t {j} = 0; {j} < {c}; "
              f"{j}++) {{")
    self.depth += 1
    self.emit(f"const int64_t {x} = (int64_t){_el(self, idx, i, j)};")
    self.fail(f"{x} < 0 || {x} >= {d.type.shape[0] * cols}", op)
    self.emit(f"{_el(self, d, f'({x} / {cols})', f'({x} % {cols})')} = {_el(self, src, i, j)};")
    self.depth -= 1
    self.emit("}")


def _sort_records(self, vals: str, ids: str, n: str, dst: str, dt) -> None:
    """Stable insertion sort (descending, NaN last) of n (value, id) pairs into 8-byte
    records at dst (a char pointer)."""
    a, b = self.fresh("a"), self.fresh("b")
    w = dt.itemsize
    self.emit(f"for (int64_t {a} = 1; {a} < {n}; {a}++) {{")
    self.emit(f"    double v = {vals}[{a}]; uint32_t id = {ids}[{a}]; "
              f"{dt.c_type} raw = {vals}_raw[{a}]; int64_t {b} = {a};")
    self.emit(f"    while ({b} > 0 && pp_gt_nanlast(v, {vals}[{b} - 1])) {{ {vals}[{b}] = "
              f"{vals}[{b} - 1]; {ids}[{b}] = {ids}[{b} - 1]; {vals}_raw[{b}] = "
              f"{vals}_raw[{b} - 1]; {b}--; }}")
    self.emit(f"    {vals}[{b}] = v; {ids}[{b}] = id; {vals}_raw[{b}] = raw;")
    self.emit("}")
    self.emit(f"for (int64_t {a} = 0; {a} < {n}; {a}++) {{ memset({dst} + 8 * {a}, 0, 8); "
              f"memcpy({dst} + 8 * {a}, &{vals}_raw[{a}], {w}); "
              f"memcpy({dst} + 8 * {a} + 4, &{ids}[{a}], 4); }}")


def i_tsort32(self, op) -> None:
    d, src, idx = op.operands[:3]
    r, c = self.valid(op, src.type.shape)
    dt = src.type.dtype
    w = 8 // dt.itemsize
    i, g, e = self.fresh(), self.fresh("g"), self.fresh("e")
    ir = i if idx.type.shape[0] > 1 else "0"
    self.emit(f"for (int64_t {i} = 0; {i} < {r}; {i}++) for (int64_t {g} = 0; {g} < {c}; "
              f"{g} += 32) {{")
    self.depth += 1
    self.emit(f"double sv[32]; uint32_t si[32]; {dt.c_type} sv_raw[32]; "
              f"const int64_t n = pp_min(32, {c} - {g});")
    self.emit(f"for (int64_t {e} = 0; {e} < n; {e}++) {{ sv_raw[{e}] = "
              f"{_el(self, src, i, f'{g} + {e}')}; sv[{e}] = "
              f"{_ld(dt, f'sv_raw[{e}]')}; si[{e}] = (uint32_t){_el(self, idx, ir, f'{g} + {e}')}; }}")
    _sort_records(self, "sv", "si", "n", f"(char *)&{_el(self, d, i, f'{g} * {w}')}", dt)
    self.depth -= 1
    self.emit("}")


def i_tmrgsort(self, op) -> None:
    d, src = op.operands
    dt = src.type.dtype
    w, bl, n = 8 // dt.itemsize, op.attrs["block_len"], src.type.shape[1]
    g, e = self.fresh("g"), self.fresh("e")
    cap = 4 * bl // w
    self.emit(f"for (int64_t {g} = 0; {g} < {n}; {g} += {4 * bl}) {{")
    self.depth += 1
    self.emit(f"static __thread double mv[{cap}]; static __thread uint32_t mi[{cap}]; "
              f"static __thread {dt.c_type} mv_raw[{cap}];")
    self.emit(f"const int64_t n = pp_min({4 * bl}, {n} - {g}) / {w};")
    self.emit(f"const char *p = (const char *)&{self.names[src]}[{g}];")
    self.emit(f"for (int64_t {e} = 0; {e} < n; {e}++) {{ memcpy(&mv_raw[{e}], p + 8 * {e}, "
              f"{dt.itemsize}); memcpy(&mi[{e}], p + 8 * {e} + 4, 4); mv[{e}] = "
              f"{_ld(dt, f'mv_raw[{e}]')}; }}")
    _sort_records(self, "mv", "mi", "n", f"(char *)&{self.names[d]}[{g}]", dt)
    self.depth -= 1
    self.emit("}")


def i_thistogram(self, op) -> None:
    d, src, idx = op.operands
    r, c = self.valid(op, src.type.shape)
    i, j, b = self.fresh(), self.fresh("j"), self.fresh("b")
    msb = op.attrs["msb"]
    self.emit(f"for (int64_t {i} = 0; {i} < {r}; {i}++) {{")
    self.emit("    uint32_t cnt[256] = {0};")
    x = f"(uint32_t){_el(self, src, i, j)}"
    if msb:
        self.emit(f"    for (int64_t {j} = 0; {j} < {c}; {j}++) cnt[{x} >> 8]++;")
    else:
        self.emit(f"    for (int64_t {j} = 0; {j} < {c}; {j}++) if (({x} >> 8) == "
                  f"(uint32_t){_el(self, idx, i, '0')}) cnt[{x} & 255]++;")
    self.emit(f"    uint32_t run = 0; for (int64_t {b} = 0; {b} < 256; {b}++) {{ run += "
              f"cnt[{b}]; {_el(self, d, i, b)} = run; }}")
    self.emit("}")


def i_tfillpad(self, op) -> None:
    d, src = op.operands
    r, c = self.valid(op, src.type.shape)
    dt, pad = d.type.dtype, op.attrs["pad"]
    if pad == "zero":
        val = _st(dt, "0", "int")
    elif dt.kind == "float":
        val = _st(dt, "INFINITY" if pad == "max" else "-INFINITY")
    else:
        lo, hi = _int_range(dt)
        val = f"({dt.c_type})({hi if pad == 'max' else lo}LL)" if dt.itemsize < 8 else "0"
    _loop2(self, d.type.shape[0], d.type.shape[1],
           f"{_el(self, d)} = ({{i}} < {r} && {{j}} < {c}) ? {_el(self, src)} : {val}")


def _int_range(dt) -> tuple:
    bits = dt.itemsize * 8
    if dt.name.startswith("u"):
        return 0, (1 << bits) - 1
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


def _targ(self, op) -> None:
    d, src = op.operands
    r, c = self.valid(op, src.type.shape)
    rows = op.attrs["dim"] == 0
    outer, inner = (r, c) if rows else (c, r)
    i, j = self.fresh(), self.fresh("j")
    big = op.name == "targmax"
    x = _ld(src.type.dtype, _el(self, src, i, j) if rows else _el(self, src, j, i))
    better = "xv > best" if big else "xv < best"
    self.emit(f"for (int64_t {i} = 0; {i} < {outer}; {i}++) {{")
    self.emit("    double best = 0; int64_t at = 0, nan = -1; int have = 0;")
    self.emit(f"    for (int64_t {j} = 0; {j} < {inner}; {j}++) {{ const double xv = "
              f"(double)({x}); if (xv != xv) {{ if (nan < 0) nan = {j}; }} else if "
              f"(!have || {better}) {{ best = xv; at = {j}; have = 1; }} }}")
    out = _el(self, d, i, "0") if rows else _el(self, d, "0", i)
    self.emit(f"    {out} = ({d.type.dtype.c_type})(nan >= 0 ? nan : at);")
    self.emit("}")


_FUSED_F = {
    "add_relu": "pp_relu_nan({a} + {b})", "sub_relu": "pp_relu_nan({a} - {b})",
    "add_relu_cast": "pp_relu_nan({a} + {b})", "sub_relu_cast": "pp_relu_nan({a} - {b})",
    "mul_cast": "({a} * {b})", "addc": "(({a} + {b}) + {c})",
    "mul_add_dst": "(({a} * {b} + 0.0f) + {o})", "fused_mul_add": "(({a} * {o} + 0.0f) + {b})",
    "fused_mul_add_relu": "pp_relu_nan(({o} * {a} + 0.0f) + {b})",
    "axpy": "(({a} * {alpha} + 0.0f) + {o})"}
_FUSED_I = {
    "add_relu": "pp_relu_i({a} + {b})", "sub_relu": "pp_relu_i({a} - {b})",
    "add_relu_cast": "pp_relu_i({a} + {b})", "sub_relu_cast": "pp_relu_i({a} - {b})",
    "mul_cast": "({a} * {b})", "addc": "({a} + {b} + {c})", "mul_add_dst": "({a} * {b} + {o})",
    "fused_mul_add": "({a} * {o} + {b})", "fused_mul_add_relu": "pp_relu_i({o} * {a} + {b})",
    "axpy": "({a} * {alpha} + {o})", "xor": "({a} ^ {b})", "shl": "pp_shl({a}, {b}, {bits})",
    "shr": "pp_shr({a}, {b}, {bits})"}


def _fused(self, op) -> None:
    d = op.operands[0]
    r, c = self.valid(op, d.type.shape)
    kind = op.name[1:]
    src_dt = op.operands[1].type.dtype
    is_f = src_dt.kind == "float"
    env = {k: f"({_ld(v.type.dtype, _el(self, v))})" for k, v in zip("abc", op.operands[1:])}
    env["o"] = f"({_ld(d.type.dtype, _el(self, d))})"
    env["bits"] = str(src_dt.itemsize * 8)
    if "alpha" in op.attrs:
        env["alpha"] = self.scalar(op.attrs["alpha"], not is_f)
    expr = (_FUSED_F if is_f else _FUSED_I)[kind].format(**env)
    _loop2(self, r, c, f"{_el(self, d)} = {_st(d.type.dtype, expr, 'float' if is_f else 'int')}")


METHODS = {"i_tmatmul_mx": i_tmatmul_mx, "i_tquant": i_tquant, "i_tdequant": i_tdequant,
           "i_tvgather": i_tvgather, "i_tvscatter": i_tvscatter, "i_tsort32": i_tsort32,
           "i_tmrgsort": i_tmrgsort, "i_thistogram": i_thistogram, "i_tfillpad": i_tfillpad,
           "i_targmax": _targ,
           "i_targmin": _targ}
METHODS.update({"i_t" + k: _fused for k in _FUSED_I})
