"""The C of Pro mode's debug instructions (ir/debug_ops.py), methods of pro_c's program
renderer (installed by `install`), and the runtime header they need (HEADER, included only
in the C of a kernel that has one).

Records go to a log per (cluster, core) in memory (pp_dbg_log: written by the one thread
running the cluster, read back and freed by runtime/pro_debug.NativeLog after the launch),
each a header (program number, debug op number in it, block index, rows, cols, payload
bytes) and a payload: the printed text, or the dumped window's elements row by row (a GM
window: its dims, then its elements). The logs hang off one static pointer of the compiled
library, set for the duration of one launch: two launches of one kernel's library at once,
from two Python threads, would share it (pypto never does that).

The format string is data: it is never handed to C as a format. Its literal pieces are
emitted as C string literals in which every byte but letters, digits, space and `,.:;=_-`
is an octal escape, copied with memcpy of their length; each conversion is printed by
snprintf with a spec built here from the parsed flags (`-+ #0`), width and precision (digits)
and a conversion letter of ours (`lld`, `llu`, `llx`, `f`), on an argument cast to that
type. So quotes, backslashes, `%n`, newlines or `*/` in a format cannot change the program.
"""
from __future__ import annotations

from ..ir.debug_ops import parse_format, program_debug_ops
from .c_text import _flit, c_comment

SAFE = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 ,.:;=_-")

HEADER = r"""/* pypto Pro runtime, debug part (codegen/pro_debug_c.py): printf, pto_assert,
   dump_data and trap leave records in a log per (cluster, core) */
typedef struct pp_str { char *p; int64_t n, cap; } pp_str;
static pp_str *pp_dbg_logs;
static int64_t pp_dbg_nlogs;

static void pp_str_add(pp_str *s, const char *b, int64_t n) {
    if (n <= 0) return;
    if (s->n + n > s->cap) {
        int64_t cap = s->cap ? s->cap : 256;
        while (cap < s->n + n) cap *= 2;
        char *q = (char *)realloc(s->p, (size_t)cap);
        if (!q) return;
        s->p = q; s->cap = cap;
    }
    memcpy(s->p + s->n, b, (size_t)n);
    s->n += n;
}

static void pp_str_int(pp_str *s, const char *spec, long long v) {
    char b[256];
    int n = snprintf(b, sizeof b, spec, v);
    pp_str_add(s, b, n < (int)sizeof b ? n : (int)sizeof b - 1);
}

static void pp_str_uint(pp_str *s, const char *spec, unsigned long long v) {
    char b[256];
    int n = snprintf(b, sizeof b, spec, v);
    pp_str_add(s, b, n < (int)sizeof b ? n : (int)sizeof b - 1);
}

static void pp_str_f(pp_str *s, const char *spec, double v) {
    char b[256];
    if (v != v) v = NAN;                 /* no "-nan": the Pro runner prints "nan" */
    int n = snprintf(b, sizeof b, spec, v);
    pp_str_add(s, b, n < (int)sizeof b ? n : (int)sizeof b - 1);
}

/* the log of core `id` (0 cube, 1 and 2 vector) of cluster c */
static pp_str *pp_dbg_log(int64_t c, int id) {
    return (pp_dbg_logs && c >= 0 && 3 * c + id < pp_dbg_nlogs) ? &pp_dbg_logs[3 * c + id] : 0;
}

static void pp_dbg_put(pp_str *log, int p, int k, int64_t g0, int64_t rows, int64_t cols,
                       const char *data, int64_t n) {
    int32_t h32[2] = {p, k};
    int64_t h64[4] = {g0, rows, cols, n};
    static const char zero[8] = {0};
    if (!log) return;
    pp_str_add(log, (const char *)h32, sizeof h32);
    pp_str_add(log, (const char *)h64, sizeof h64);
    pp_str_add(log, data, n);
    pp_str_add(log, zero, (8 - n % 8) % 8);
}

static void pp_dbg_tile(pp_str *log, int p, int k, int64_t g0, const char *t, int64_t o0,
                        int64_t o1, int64_t r, int64_t c, int64_t rs, int64_t isz) {
    pp_str s = {0, 0, 0};
    for (int64_t i = 0; i < r; i++) pp_str_add(&s, t + ((o0 + i) * rs + o1) * isz, c * isz);
    if (s.n == r * c * isz) pp_dbg_put(log, p, k, g0, r, c, s.p, s.n);
    free(s.p);
}

int pypto_pro_debug_begin(int64_t block_dim) {
    pp_dbg_nlogs = 3 * block_dim;
    pp_dbg_logs = (pp_str *)calloc((size_t)pp_dbg_nlogs, sizeof(pp_str));
    return pp_dbg_logs != 0;
}

const char *pypto_pro_debug_log(int64_t i, int64_t *n) {
    *n = (pp_dbg_logs && i >= 0 && i < pp_dbg_nlogs) ? pp_dbg_logs[i].n : 0;
    return *n ? pp_dbg_logs[i].p : 0;
}

void pypto_pro_debug_end(void) {
    for (int64_t i = 0; pp_dbg_logs && i < pp_dbg_nlogs; i++) free(pp_dbg_logs[i].p);
    free(pp_dbg_logs);
    pp_dbg_logs = 0;
    pp_dbg_nlogs = 0;
}
"""


def c_string(text: str) -> str:
    """A C string literal of text's UTF-8 bytes: anything but letters, digits, space and
    ,.:;=_- is a three-digit octal escape (no quote, backslash, `?` or `%` survives)."""
    return '"' + "".join(chr(b) if b in SAFE else f"\\{b:03o}" for b in text.encode()) + '"'


def header(doc) -> str:
    """The debug runtime, for a document with debug instructions (else nothing)."""
    has = any(program_debug_ops(p) for p in doc.body if p.name == "program")
    return HEADER if has else ""


def _key(self, op) -> str:
    """`program, number` of a debug op (runtime/pro_debug.NativeLog maps it back)."""
    ops = getattr(self, "_dbg_ops", None)
    if ops is None:
        ops = self._dbg_ops = program_debug_ops(self.p)
    return f"{self.index}, {next(j for j, o in enumerate(ops) if o is op)}"


def _log(self) -> str:
    c = "g0 / 2" if self.mixed and self.p.attrs["core"] == "vector" else "g0"
    return f"pp_dbg_log({c}, co->id)"


def _text(self, op, s: str) -> None:
    """Statements appending the formatted text of op's format and args to pp_str s."""
    args = iter(op.attrs.get("args", []))
    for piece in parse_format(op.attrs.get("format", "")):
        if isinstance(piece, str):
            self.emit(f"pp_str_add(&{s}, {c_string(piece)}, {len(piece.encode())});")
            continue
        flags, width, prec, conv = piece
        spec = "%" + flags + (str(width) if width else "") + \
            (f".{prec}" if prec is not None else "") + \
            {"d": "lld", "i": "lld", "u": "llu", "x": "llx", "f": "f"}[conv]
        a = next(args)
        if conv == "f":
            v = f"(double)(float)({_flit(a, self.ex)})"
            self.emit(f"pp_str_f(&{s}, {c_string(spec)}, {v});")
        elif conv in "di":
            self.emit(f"pp_str_int(&{s}, {c_string(spec)}, (long long)(int64_t)({self.ex(a)}));")
        else:
            self.emit(f"pp_str_uint(&{s}, {c_string(spec)}, "
                      f"(unsigned long long)(int64_t)({self.ex(a)}));")


def _put_text(self, op) -> None:
    s = self.fresh("str")
    self.emit(f"pp_str {s} = {{0, 0, 0}};")
    _text(self, op, s)
    self.emit(f"pp_dbg_put({_log(self)}, {_key(self, op)}, g0, 0, 0, {s}.p, {s}.n);")
    self.emit(f"free({s}.p);")


def i_dbg_printf(self, op) -> None:
    self.emit(c_comment(f"printf (line {op.loc.line if op.loc else '?'})") + " {")
    self.depth += 1
    _put_text(self, op)
    self.depth -= 1
    self.emit("}")


def i_dbg_assert(self, op) -> None:
    self.emit(f"if (!({self.ex(op.attrs['cond'])})) {{   " + c_comment("pto_assert"))
    self.depth += 1
    _put_text(self, op)
    self.fail("1", op)
    self.depth -= 1
    self.emit("}")


def i_dbg_trap(self, op) -> None:
    self.emit(f"pp_dbg_put({_log(self)}, {_key(self, op)}, g0, 0, 0, \"\", 0);   " +
              c_comment("trap"))
    self.fail("1", op)


def i_dbg_dump(self, op) -> None:
    t = op.operands[0]
    rows, cols = t.type.shape
    o = [self.fresh("o") for _ in range(4)]
    vals = [self.ex(x) for x in op.attrs["offsets"] + op.attrs["shape"]]
    self.emit("const int64_t " + ", ".join(f"{a} = {b}" for a, b in zip(o, vals)) + ";")
    self.fail(f"{o[0]} < 0 || {o[1]} < 0 || {o[2]} < 0 || {o[3]} < 0 || "
              f"{o[0]} + {o[2]} > {rows} || {o[1]} + {o[3]} > {cols}", op)
    self.emit(f"pp_dbg_tile({_log(self)}, {_key(self, op)}, g0, (const char *)"
              f"{self.names[t]}, {o[0]}, {o[1]}, {o[2]}, {o[3]}, {self.rs(t)}, "
              f"{t.type.dtype.itemsize});   " + c_comment("dump_data"))


def i_dbg_dump_gm(self, op) -> None:
    """The window's dims (int64), then its elements, the last dim's runs copied whole."""
    gm = op.operands[0]
    rank = gm.type.rank
    o, s, d = ([self.fresh(p) for _ in range(rank)] for p in ("o", "n", "d"))
    for k in range(rank):
        self.emit(f"const int64_t {o[k]} = {self.ex(op.attrs['offsets'][k])}, {s[k]} = "
                  f"{self.ex(op.attrs['shape'][k])}, {d[k]} = {self.ex(gm.type.shape[k])};")
    self.fail(" || ".join(f"{o[k]} < 0 || {s[k]} < 0 || {o[k]} + {s[k]} > {d[k]}"
                          for k in range(rank)), op)
    buf, dims, idx = self.fresh("str"), self.fresh("dims"), [self.fresh() for _ in range(rank)]
    self.emit(f"pp_str {buf} = {{0, 0, 0}};   " + c_comment("dump_data of a GM tensor"))
    self.emit(f"const int64_t {dims}[{rank}] = {{{', '.join(s)}}};")
    self.emit(f"pp_str_add(&{buf}, (const char *){dims}, sizeof {dims});")
    stride = ["1"] * rank
    for k in range(rank - 2, -1, -1):
        stride[k] = f"{stride[k + 1]} * {d[k + 1]}"
    for k in range(rank - 1):
        self.emit(f"for (int64_t {idx[k]} = 0; {idx[k]} < {s[k]}; {idx[k]}++)")
    at = " + ".join([f"({o[k]} + {idx[k]}) * {stride[k]}" for k in range(rank - 1)] +
                    [o[-1]])
    isz = gm.type.dtype.itemsize
    self.emit(f"    pp_str_add(&{buf}, (const char *)({self.names[gm]} + {at}), "
              f"{s[-1]} * {isz});")
    self.emit(f"pp_dbg_put({_log(self)}, {_key(self, op)}, g0, 0, 0, {buf}.p, {buf}.n);")
    self.emit(f"free({buf}.p);")


def install(prog_class) -> None:
    """Give pro_c's program renderer its debug instruction methods."""
    for f in (i_dbg_printf, i_dbg_assert, i_dbg_trap, i_dbg_dump, i_dbg_dump_gm):
        setattr(prog_class, f.__name__, f)
