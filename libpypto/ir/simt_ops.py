"""The SIMT launch of Pro mode (`pl.simt.launch`, libpypto/prolang/simt.py): one block-level
instruction that runs a SIMT function on every thread of a thread block of the vector core.

    simt_launch(buf0, buf1, ...) {fn, threads, max_threads, scalars, regs, body, pipe, serial}

It runs on the V pipe (the reference's backend registers simt.launch on PIPE_V). Operands:
the tiles (Vec) and GM tensors the function reads or writes, in the order the body names
them (`buf` k below). Attributes:

  fn           the SIMT function's name (for messages and listings)
  threads      [x, y, z] the block's thread dims (compile-time, product <= max_threads <= 2048)
  max_threads  the function's launch bound (@pl.simt.function(max_threads=N))
  scalars      block-level expressions evaluated once per launch: scalar arguments, a tile
               argument's valid shape, a tensor's dims, block_idx and grid_dim
  regs         one class per per-thread register: "i" (int64) or "f" (float32)
  body         the per-thread program (below): a list of instructions, each a list
  serial       true when the body has a GM atomic whose result depends on the order of the
               blocks (its old value used, exch/cas, a float, or kinds on one tensor that
               do not commute, such as add and max): the clusters then run one
               after the other in cluster order (pro_exec.serial), so results are identical
               for any thread count

The body is a small register machine, not SSA: registers are per-thread values (an array
over the block's threads when it runs), referred to by index. Instructions:

  ["const", d, value]             r[d] = value (an int, or a float already rounded to f32)
  ["ctx", d, kind]                kind tx, ty, tz (thread_idx), tid (linear_thread_idx),
                                  warp (warp_size, 32)
  ["scalar", d, k]                r[d] = scalars[k]
  ["bin", d, op, a, b]            ints: add sub mul floordiv mod min max and or xor shl shr
                                  lt le gt ge eq ne land lor; floats: add sub mul div min
                                  max lt le gt ge eq ne (a comparison's d is an int 0/1)
  ["un", d, op, a]                neg abs not inv itof ftoi
  ["sel", d, c, a, b]             r[d] = r[a] if r[c] else r[b]
  ["mov", d, a]                   r[d] = r[a] (same class)
  ["ld", d, buf, [i, ...]]        one element of buffer buf (one index per dim)
  ["st", buf, [i, ...], v]        store r[v] into one element
  ["atom", d, kind, buf, [i, ...], v, cmp]   atomic add sub max min exch cas and or xor on
                                  one element; d the old value (-1: unused); cmp the compare
                                  register of cas (-1 otherwise)
  ["if", c, [then...], [else...]]    divergent branch: each arm runs under its lanes' mask
  ["for", v, start, stop, step, [body...]]  a per-thread loop: r[v] from r[start] while
                                  < r[stop], step r[step] (> 0, checked at run time)

This module checks a body's grammar completely (IR files are data: the C renderer pastes
only what passed this check: ints, and names from the tables here).
"""
from __future__ import annotations

from .opdef import (Anything, Bool, Ex, Ident, Int, ListOf, OpDef, Str, attr, is_int, is_num,
                    opt)
from .types import TensorType, TileType

INT_BIN = ("add", "sub", "mul", "floordiv", "mod", "min", "max", "and", "or", "xor", "shl",
           "shr", "lt", "le", "gt", "ge", "eq", "ne", "land", "lor")
FLOAT_BIN = ("add", "sub", "mul", "div", "min", "max", "lt", "le", "gt", "ge", "eq", "ne")
COMPARE = ("lt", "le", "gt", "ge", "eq", "ne", "land", "lor")
UNARY = ("neg", "abs", "not", "inv", "itof", "ftoi")
CTX = ("tx", "ty", "tz", "tid", "warp")
ATOMICS = ("add", "sub", "max", "min", "exch", "cas", "and", "or", "xor")
INT_ONLY_ATOMICS = ("and", "or", "xor")
ORDERLESS = ("add", "sub", "max", "min", "and", "or", "xor")   # integer final value only
WARP_SIZE = 32
MAX_THREADS = 2048
ATOMIC_DTYPES = ("i8", "i16", "i32", "i64", "u8", "u16", "u32", "f32")


def buffer_rank(v) -> int:
    t = v.type
    return 2 if isinstance(t, TileType) else t.rank


def _verify(op, err) -> None:
    a = op.attrs
    threads = a["threads"]
    n = threads[0] * threads[1] * threads[2]
    if not n <= a["max_threads"] <= MAX_THREADS:
        err(f"simt_launch of {a['fn']}: {n} threads exceed max_threads {a['max_threads']}")
        return
    for v in op.operands:
        if isinstance(v.type, TileType) and v.type.space != "ub":
            err(f"simt_launch of {a['fn']}: tile operands must be in Vec (ub), not "
                f"{v.type.space}")
            return
        if not isinstance(v.type, (TileType, TensorType)):
            err(f"simt_launch of {a['fn']}: operands are tiles and tensors")
            return
    problem = _Body(op).block(a["body"])
    if problem:
        err(f"simt_launch of {a['fn']}: body {problem}")


class _Body:
    """The grammar of a body; block() returns the first problem or None."""

    def __init__(self, op):
        self.op, self.regs = op, op.attrs["regs"]
        self.nscalars = len(op.attrs["scalars"])

    def reg(self, r, cls=None) -> bool:
        return is_int(r) and 0 <= r < len(self.regs) and (cls is None or self.regs[r] == cls)

    def buf(self, b, idx) -> bool:
        return (is_int(b) and 0 <= b < len(self.op.operands) and isinstance(idx, list) and
                len(idx) == buffer_rank(self.op.operands[b]) and
                all(self.reg(i, "i") for i in idx))

    def block(self, ins) -> str | None:
        if not isinstance(ins, list):
            return "is not a list of instructions"
        for i in ins:
            if not (isinstance(i, list) and i and isinstance(i[0], str)):
                return f"has a malformed instruction {str(i)[:40]}"
            check = getattr(self, "i_" + i[0], None)
            problem = check(i) if check is not None else f"has the unknown instruction {i[0]!r}"
            if problem:
                return problem
        return None

    def _shape(self, i, n) -> bool:
        return len(i) == n

    def i_const(self, i):
        if not (self._shape(i, 3) and self.reg(i[1]) and is_num(i[2]) and
                (self.regs[i[1]] == "f" or is_int(i[2]))):
            return f"has a bad const {str(i)[:40]}"

    def i_ctx(self, i):
        if not (self._shape(i, 3) and self.reg(i[1], "i") and i[2] in CTX):
            return f"has a bad ctx {str(i)[:40]}"

    def i_scalar(self, i):
        if not (self._shape(i, 3) and self.reg(i[1]) and is_int(i[2]) and
                0 <= i[2] < self.nscalars):
            return f"has a bad scalar {str(i)[:40]}"

    def i_bin(self, i):
        if not (self._shape(i, 5) and self.reg(i[3]) and self.reg(i[4]) and self.reg(i[1])):
            return f"has a bad bin {str(i)[:40]}"
        cls = self.regs[i[3]]
        ok = i[2] in (INT_BIN if cls == "i" else FLOAT_BIN) and self.regs[i[4]] == cls and \
            self.regs[i[1]] == ("i" if i[2] in COMPARE else cls)
        if not ok:
            return f"has a bad bin {str(i)[:40]}"

    def i_un(self, i):
        if not (self._shape(i, 4) and i[2] in UNARY and self.reg(i[1]) and self.reg(i[3])):
            return f"has a bad un {str(i)[:40]}"
        want = {"itof": ("f", "i"), "ftoi": ("i", "f"), "not": ("i", None),
                "inv": ("i", "i")}.get(i[2], (self.regs[i[3]], None))
        if self.regs[i[1]] != want[0] or (want[1] and self.regs[i[3]] != want[1]):
            return f"has a bad un {str(i)[:40]}"

    def i_sel(self, i):
        if not (self._shape(i, 5) and self.reg(i[2], "i") and self.reg(i[1]) and
                self.reg(i[3], self.regs[i[1]]) and self.reg(i[4], self.regs[i[1]])):
            return f"has a bad sel {str(i)[:40]}"

    def i_mov(self, i):
        if not (self._shape(i, 3) and self.reg(i[1]) and self.reg(i[2], self.regs[i[1]])):
            return f"has a bad mov {str(i)[:40]}"

    def _elem_class(self, b) -> str:
        return "f" if self.op.operands[b].type.dtype.kind == "float" else "i"

    def i_ld(self, i):
        if not (self._shape(i, 4) and self.buf(i[2], i[3]) and
                self.reg(i[1], self._elem_class(i[2]))):
            return f"has a bad ld {str(i)[:40]}"

    def i_st(self, i):
        if not (self._shape(i, 4) and self.buf(i[1], i[2]) and
                self.reg(i[3], self._elem_class(i[1]))):
            return f"has a bad st {str(i)[:40]}"

    def i_atom(self, i):
        if not (self._shape(i, 7) and i[2] in ATOMICS and self.buf(i[3], i[4])):
            return f"has a bad atom {str(i)[:40]}"
        cls = self._elem_class(i[3])
        dt = self.op.operands[i[3]].type.dtype
        if dt.name not in ATOMIC_DTYPES or (cls == "f" and i[2] in INT_ONLY_ATOMICS):
            return f"has an atomic {i[2]} on {dt.name} elements"
        if not (self.reg(i[5], cls) and (i[1] == -1 or self.reg(i[1], cls)) and
                ((i[6] == -1) if i[2] != "cas" else self.reg(i[6], cls))):
            return f"has a bad atom {str(i)[:40]}"

    def i_if(self, i):
        if not (self._shape(i, 4) and self.reg(i[1], "i")):
            return f"has a bad if {str(i)[:40]}"
        return self.block(i[2]) or self.block(i[3])

    def i_for(self, i):
        if not (self._shape(i, 6) and all(self.reg(r, "i") for r in i[1:5])):
            return f"has a bad for {str(i)[:40]}"
        return self.block(i[5])


def walk(body):
    """Every instruction of a body, nested ones too, in order."""
    for i in body:
        yield i
        if i[0] == "if":
            yield from walk(i[2])
            yield from walk(i[3])
        elif i[0] == "for":
            yield from walk(i[5])


def gm_order_matters(op) -> bool:
    """Does a launch's GM atomic give results that depend on the order of the blocks? Not
    if every GM atomic is on integers with its old value unused, and the kinds on each
    tensor commute with each other: add and sub, or one of max, min, and, or, xor."""
    kinds: dict = {}
    for i in walk(op.attrs["body"]):
        if i[0] == "atom" and isinstance(op.operands[i[3]].type, TensorType):
            if i[1] != -1 or i[2] not in ORDERLESS or op.operands[i[3]].type.dtype.kind == \
                    "float":
                return True
            kinds.setdefault(i[3], set()).add("add" if i[2] == "sub" else i[2])
    return any(len(k) > 1 for k in kinds.values())


def written(op) -> list:
    """The names of the GM tensors a launch's body stores into or updates atomically."""
    out = []
    for i in walk(op.attrs["body"]):
        b = i[1] if i[0] == "st" else i[3] if i[0] == "atom" else None
        if b is not None and isinstance(op.operands[b].type, TensorType):
            out.append(op.operands[b].name)
    return out


DEFS = [
    OpDef("simt_launch", ("tile",), ("any*",), 0, (), 0, {
        "fn": attr(Ident()), "threads": attr(ListOf(Int(1, MAX_THREADS), 3)),
        "max_threads": attr(Int(1, MAX_THREADS)), "scalars": attr(ListOf(Ex(num=True))),
        "regs": attr(ListOf(Str("i", "f"))), "body": attr(ListOf(Anything())),
        "serial": opt(Bool()), "pipe": opt(Str("V"))},
        _verify, {"c": "i_sync", "numpy": "tsync", "pto": "SIMT_LAUNCH"}, (), (), "V",
        "SIMT_LAUNCH"),
]
