"""Row-mode rendering, mixed into c._Program: prints a planned row run (c_plan.RowRun) as a
loop over rows, and in it each instruction for row r of its tiles (`row_<instruction>`) and
each pass over the row (c_plan.RowPass) with the reductions or the store it takes along.

Which instructions form a row run, which tiles get a row on the stack, which loads are
hoisted, which stores stream and what a pass takes along are decided in c_plan.py; this
module only gives them C names and prints them.
"""
from __future__ import annotations

import re

from . import c_text as c


class _RowState:
    """The C names given while printing a row run: its row index, the row pointers of tiles
    used in place, the tiles whose row the loop body touches, the stores' streaming flags
    (and the run's local tiles, and those read in place in GM)."""

    def __init__(self, run):
        self.rows, self.local, self.in_place = run.rows, run.local, run.in_place
        self.lead = run.lead          # the tiles' leading dims: a row per point of them
        self.var = ""                 # the row index in C
        self.idx: list = []           # its index along each leading dim (C expressions)
        self.ptr: dict = {}           # tile used in place -> its row pointer
        self.ptr_row: dict = {}       # ... and which of its rows that is (C expression)
        self.used: set = set()        # tiles whose row the loop body touches
        self.stream: dict = {}        # tstore -> its streaming flag
        self.prefetch: list = []      # (C name, bytes per element) of the next row's GM loads
        self.guard = True             # lane steps test their column against the valid count
        self.narrow: list = []        # the pass's 16-bit float rows, widened a chunk at a time
        self.wide: dict = {}          # ... in the chunk being printed: tile -> its fp32 copy
        self.narrowing = False        # the store's values wanted as floats (pp_narrow32)
        self.group = ""               # with a group of rows: the index of row r in it


class RowRuns:
    """Rendering one row at a time: row_run prints a planned run, row_pass a pass over the
    row, and the row_* methods an instruction for row r of its tiles."""

    def row_run(self, run) -> None:
        """for r < R: the run's units on row r (its local tiles declared per row); with a
        group of G rows (RowRun.group), for each G rows: each unit on each of them in turn."""
        if run.own:             # a scope whose tile pointers hide the arena's
            self.emit("{   /* loads every row reads whole, each in storage of its own */")
            self.depth += 1
            for v in sorted(run.own, key=self.tile):
                t, n = v.type, self.tile(v)
                self.emit(f"{t.dtype.c_type} {n}_own[{t.nbytes // t.dtype.itemsize}] "
                          f"__attribute__((aligned(64)));")
                self.emit(f"{t.dtype.c_type} *const {n} = {n}_own;")
        for op in run.hoisted:
            self.op(op)
        state = _RowState(run)
        r = state.var = self.fresh("r")
        self.emit(f"/* {' '.join(op.name for op in run.body)}: one row at a time */")
        self.emit("{")
        self.depth += 1
        for op in run.streams:
            state.stream[op] = self.fresh("stream")
            self.emit(f"const int {state.stream[op]} = {self.stream_test(op.operands[1])};")
        if run.group > 1:
            self.row_groups(run, state)
        else:
            self.emit(f"for (int64_t {r} = 0; {r} < {run.rows}; {r}++) {{")
            self.depth += 1
            at = len(self.lines)
            self.row = state
            decl = self.row_indices(state)       # the rows the loop body uses, at its top
            pf_decl = self.prefetch_rows(run)
            self.units(run.units)
            self.row = None
            decl += self.row_decls(run, state)[1] + self.prefetch_decls(pf_decl)
            self.lines[at:at] = ["    " * self.depth + line for line in decl]
            self.depth -= 1
            self.emit("}")
        self.depth -= 1
        self.emit("}")
        if run.own:
            self.depth -= 1
            self.emit("}")

    def row_groups(self, run, state) -> None:
        """for rb < R step G: the group's stack rows, then per unit: for q < G, row rb + q's
        names (its indices, its rows, its next-row pointers), then the unit."""
        G, r = run.group, state.var
        rb, q = self.fresh("rb"), self.fresh("q")
        state.group = q
        self.emit(f"for (int64_t {rb} = 0; {rb} < {run.rows}; {rb} += {G}) {{  "
                  f"/* {G} rows through each unit in turn */")
        self.depth += 1
        at = len(self.lines)
        self.row = state
        idx = self.row_indices(state)
        pf_decl = self.prefetch_rows(run)
        spans = []
        self.depth += 1
        for u in run.units:
            start = len(self.lines)
            self.units([u])
            spans.append((start, len(self.lines)))
        self.depth -= 1
        self.row = None
        group_decl, names = self.row_decls(run, state)
        pad, inner = "    " * self.depth, "    " * (self.depth + 1)
        decls = [f"const int64_t {r} = {rb} + {q};"] + idx + names + \
            self.prefetch_decls(pf_decl)
        for start, end in reversed(spans):
            body = self.lines[start:end]
            self.lines[end:end] = [pad + "}"]
            self.lines[start:start] = [f"{pad}for (int {q} = 0; {q} < {G}; {q}++) {{"] + \
                [inner + line for line in _needed(decls, body)]
        self.lines[at:at] = [pad + line for line in group_decl]
        self.depth -= 1
        self.emit("}")

    def row_decls(self, run, state) -> tuple[list, list]:
        """The C declarations of the rows the body touched: (the group's stack rows, the
        names of row r). Without a group, row r's rows are on the stack themselves."""
        r, q, G = state.var, state.group, run.group
        group, names = [], []
        for v in run.tiles:
            if v not in state.used:
                continue
            t, n = v.type, self.tile(v)
            ct, C = t.dtype.c_type, t.shape[-1]
            if v in run.in_place:      # a full row in GM, else this row (c_plan.RowRun)
                if q:
                    group += [f"{ct} {n}_bg[{G}][{C}];  /* rows of {t} with a tail */",
                              f"const {ct} *{n}_g[{G}] = {{0}};"]
                    names += [f"{ct} *const {n}_b = {n}_bg[{q}];",
                              f"const {ct} *{n} = {n}_g[{q}];"]
                else:
                    names += [f"{ct} {n}_b[{C}];  /* row {r} of {t} with a tail */",
                              f"const {ct} *{n} = {n}_b;"]
            elif v in run.local:
                if q:
                    group.append(f"{ct} {n}_g[{G}][{C}];  /* rows of {t} */")
                    names.append(f"{ct} *const {n} = {n}_g[{q}];")
                else:
                    names.append(f"{ct} {n}[{C}];  /* row {r} of {t} */")
            else:
                names.append(f"{ct} *const {state.ptr[v]} = {n} + "
                             f"{c._paren(state.ptr_row[v])} * {C};")
        return group, names

    @staticmethod
    def prefetch_decls(pf_decl: list) -> list:
        return [f"const char *const {name} = (const char *)({addr});  /* next row */"
                for name, addr in pf_decl]

    def row_indices(self, state) -> list:
        """Declarations of the row's index along each leading dim (row r of a run over
        (A, B, C) tiles is (r / B, r % B)); one leading dim is r itself."""
        r, lead = state.var, state.lead
        if len(lead) <= 1:
            state.idx = [r]
            return []
        decl, inner = [], 1
        state.idx = [""] * len(lead)
        for d in range(len(lead) - 1, -1, -1):
            name = self.fresh("i")
            q = r if inner == 1 else f"{r} / {inner}"
            decl.append(f"const int64_t {name} = {q}" + (f" % {lead[d]};" if d else ";"))
            state.idx[d] = name
            inner *= lead[d]
        return decl[::-1]

    def row_offset(self, v) -> str:
        """Which row of tile v row r reads (tiles broadcast along a leading dim share
        rows): a C expression over the row's indices."""
        state, t = self.row, v.type
        if tuple(t.shape[:-1]) == state.lead:
            return state.var
        terms, stride = [], 1
        for d in range(len(state.lead) - 1, -1, -1):
            if t.shape[d] != 1:
                terms.append(state.idx[d] if stride == 1 else f"{state.idx[d]} * {stride}")
            stride *= t.shape[d]
        return " + ".join(reversed(terms)) or "0"

    def row_ptr(self, v) -> str:
        """Row r of tile v: its row of its own, a pointer to its row in place (or to the row
        it shares, broadcast along a leading dim), or the tile itself for tiles the same for
        every row (no row dim, or only dims of 1 ahead of its row in a run of more rows)."""
        run, t = self.row, v.type
        if t.rank == len(run.lead) + 1 and (tuple(t.shape[:-1]) == run.lead
                                            or any(x != 1 for x in t.shape[:-1])):
            run.used.add(v)
            if v not in run.local:
                if v not in run.ptr:
                    run.ptr[v] = f"{self.tile(v)}r"
                    run.ptr_row[v] = self.row_offset(v)
                return run.ptr[v]
        return self.tile(v)

    def row_at(self, v, j: str) -> str:
        """Element j of row r of tile v (its one element for (R, 1) and (1, 1) tiles)."""
        return f"{self.row_ptr(v)}[{j if v.type.shape[-1] != 1 else 0}]"

    def gm_row(self, op) -> tuple[str, str]:
        """Row r of a row-mode tload/tstore: declares how many of its elements are valid
        (none for rows past the valid region), returns that and the row's GM address."""
        t, gm = op.operands
        shape = t.type.shape
        valid = op.attrs["valid"]
        skip = len(valid) - len(shape)               # GM dims the tile does not have (1s)
        idx = self.row.idx
        cond = [f"{self.ex(v)} > 0" for v in valid[:skip] if not (isinstance(v, int) and v >= 1)]
        for d, size in enumerate(shape[:-1]):
            v = valid[skip + d]
            if not (isinstance(v, int) and v >= size):
                cond.append(f"{idx[d]} < {self.clamp(size, v)}")
        n = self.fresh("n")
        cols = self.clamp(shape[-1], valid[-1])
        r = self.row.var
        self.emit(f"const int64_t {n} = {' && '.join(cond)} ? {cols} : 0;  /* valid in row {r} */"
                  if cond else f"const int64_t {n} = {cols};  /* valid in row {r} */")
        return n, self.gm_row_at(op, idx)

    def gm_row_at(self, op, idx: list) -> str:
        """The GM address of the row at indices idx (C expressions, one per leading tile dim)
        of a row-mode tload/tstore."""
        gm = op.operands[1]
        offs = [self.ex(o) for o in op.attrs["offsets"]]
        gst = self.gm_strides(gm.type)
        skip = len(offs) - len(idx) - 1
        terms = list(zip(offs[:skip], gst[:skip]))
        for d, i in enumerate(idx):
            o = offs[skip + d]
            terms.append((i if o == "0" else f"{o} + {c._paren(i)}", gst[skip + d]))
        return c._at(self.names[gm], terms + [(offs[-1], "1")])

    def prefetch_rows(self, run) -> list:
        """The next row of each GM tile the run loads row by row, prefetched (into L2) while
        this row is computed: one cache line per 64 bytes of a pass's columns (prefetch()),
        in the first pass over the row. The last row of the tile prefetches the first row of
        the next tile (the same worker usually runs it: the runtime takes consecutive small
        instances together; next_row_in_gm), the tensor's last row its own row again.
        Prefetches never fault and change no value; they let the loads of row r + 1 overlap
        the arithmetic on row r, which the hardware prefetchers alone do not (they stop at
        page boundaries and run only a few lines ahead of the demand loads)."""
        out, r = [], self.row.var
        lead, ahead = self.row.lead, run.group        # with a group: the next group's row
        nx = f"{r} + {ahead}"
        for op in run.body:
            if op.name == "tload" and self.row_local_of(op.operands[0]):
                name = self.fresh("pf")
                gm = op.operands[1]
                if len(lead) == 1:
                    last = (f"{self.ex(gm.type.shape[-2])} - 1 - "
                            f"{c._paren(self.ex(op.attrs['offsets'][-2]))}")
                    nxt = [f"pp_min({nx}, {last})"]
                else:
                    nxt = self.next_row_in_gm(op, lead, f"({nx})")
                out.append((name, self.gm_row_at(op, nxt)))
                self.row.prefetch.append((name, op.operands[1].type.dtype.itemsize))
        return out

    def next_row_in_gm(self, op, lead: tuple, q: str) -> list:
        """Row q of a run over tiles of several leading dims, as indices along them (C
        expressions), row q = R (past the tile) the first row of the next tile along its
        outermost leading dim of more than one row: the next instance's, where the runtime
        takes consecutive instances together; clamped to the tensor's last row."""
        d0 = c.next_tile_dim(lead)
        offs, gshape = op.attrs["offsets"], op.operands[1].type.shape
        skip = len(offs) - len(lead) - 1
        nxt, inner = [], 1
        for d in range(len(lead) - 1, -1, -1):
            at = f"{q} / {inner}" if inner > 1 else q
            if d < d0:
                nxt.append("0")
            elif d == d0:
                last = f"{self.ex(gshape[skip + d])} - 1 - {c._paren(self.ex(offs[skip + d]))}"
                nxt.append(f"pp_min({at}, {last})")
            else:
                nxt.append(f"{at} % {lead[d]}")
            inner *= lead[d]
        return nxt[::-1]

    def row_local_of(self, v) -> bool:
        t = v.type
        return tuple(t.shape[:-1]) == self.row.lead

    def prefetch(self, j: str, w: int, pad: str) -> None:
        """Prefetch statements for columns j .. j + w of the next row (see prefetch_rows)."""
        for name, isz in self.row.prefetch:
            for q in range(0, max(1, w * isz // 64)):
                off = f"{j} * {isz}" + (f" + {64 * q}" if q else "")
                self.emit(f"{pad}__builtin_prefetch({name} + {off}, 0, 2);")

    def row_tload(self, op) -> None:
        d, gm = op.operands
        if not self.row_local_of(d):       # a tile every row reads (kept in place, one row)
            self.i_tload(op)
            return
        C, dt, gdt = d.type.shape[-1], d.type.dtype, gm.type.dtype
        dst = self.row_ptr(d)
        self.emit("{")
        self.depth += 1
        n, src = self.gm_row(op)
        if d in self.row.in_place:    # read in place when the whole row is valid
            buf = f"{dst}_b"
            self.emit(f"if ({n} == {C}) {dst} = {src};")
            self.emit(f"else {{ if ({n}) memcpy({buf}, {src}, {n} * {dt.itemsize}); "
                      f"memset({buf} + {n}, 0, ({C} - {n}) * {dt.itemsize}); {dst} = {buf}; }}")
            if self.row.group:        # the later units' row rb + q reads it there
                self.emit(f"{dst}_g[{self.row.group}] = {dst};")
            self.depth -= 1
            self.emit("}")
            return
        if dt == gdt:
            self.emit(f"if ({n}) memcpy({dst}, {src}, {n} * {dt.itemsize});")
        else:
            j = self.fresh("j")
            self.emit(f"for (int64_t {j} = 0; {j} < {n}; {j}++) "
                      f"{dst}[{j}] = {c._st(dt, c._ld(gdt, f'({src})[{j}]'), gdt.kind)};")
        self.emit(f"if ({n} < {C}) memset({dst} + {n}, 0, ({C} - {n}) * {dt.itemsize});")
        self.depth -= 1
        self.emit("}")

    def row_tstore(self, op) -> None:
        t, gm = op.operands
        dt, gdt = t.type.dtype, gm.type.dtype
        src = self.row_ptr(t)
        self.emit("{")
        self.depth += 1
        n, dst = self.gm_row(op)
        if op in self.row.stream:
            self.emit(f"if ({n}) pp_store({dst}, {src}, {n} * {dt.itemsize}, "
                      f"{self.row.stream[op]});")
        else:
            j = self.fresh("j")
            self.emit(f"for (int64_t {j} = 0; {j} < {n}; {j}++) "
                      f"({dst})[{j}] = {c._st(gdt, c._ld(dt, f'{src}[{j}]'), dt.kind)};")
        self.depth -= 1
        self.emit("}")

    def row_texpands(self, op) -> None:
        d = op.operands[0]
        j = self.fresh("j")
        self.emit(f"for (int64_t {j} = 0; {j} < {d.type.shape[-1]}; {j}++) "
                  f"{self.row_at(d, j)} = {self.fill_value(op)};")

    def row_treduce(self, op) -> None:
        dst, src = op.operands
        C = src.type.shape[-1]
        kind = op.attrs["kind"]
        ident, comb, work = c._reduce_ops(kind, src.type.dtype)
        self.emit("{")
        self.depth += 1
        n = self.fresh("v")
        self.emit(f"const int64_t {n} = {self.clamp(C, op.attrs['valid'][-1])};")
        row = self.row_ptr(src)
        if C >= c.ACC_LANES:
            self.lane_reduce(row, src.type.dtype, n, ident, comb, work, kind)
        else:
            self.lane_result = acc = self.fresh("acc")
            j = self.fresh("j")
            x = c._ld(src.type.dtype, f"{row}[{j}]")
            self.emit(f"{work} {acc} = {ident};")
            self.emit(f"for (int64_t {j} = 0; {j} < {n}; {j}++) "
                      f"{acc} = {comb.format(acc=acc, x=x)};")
        self.emit(f"{self.row_at(dst, '0')} = "
                  f"{c._st(dst.type.dtype, self.lane_result, 'float' if work == 'float' else 'int')};")
        self.depth -= 1
        self.emit("}")

    def row_pass(self, unit) -> None:
        """A planned pass over row r (c_plan.RowPass): its elementwise instructions as one
        loop over the columns; a reduction taken along accumulates each element as it is
        made, in the lanes and the order of treduce; a store taken along writes the values
        straight to GM (in streamed 64-byte pieces when the output is big)."""
        instrs, reds, store = unit.instrs, unit.reductions, unit.store
        C = instrs[0].operands[0].type.shape[-1]
        names = " ".join(op.name for op in instrs + reds + ([store] if store else []))
        self.emit(f"{{   /* {names}: one pass over the row */")
        self.depth += 1
        pre = self.row_scalars(instrs)
        lanes = [_Lanes(self, red, C) for red in reds]
        self.row.narrow = _narrow_rows(instrs, pre)

        def element(j: str, k: str, pad: str) -> str:
            return self.row_element(unit, pre, lanes, j, k, pad)

        if store:
            self.row_sink(store, element)
        elif lanes:
            self.row_lanes(C, lanes, element)
        elif C == 1:          # per-row scalars
            element("0", "0", "")
        elif self.row.prefetch and C >= c.ACC_LANES:
            self.row_chunks(C, element)
        else:
            j = self.fresh("j")
            self.emit(f"for (int64_t {j} = 0; {j} < {C}; {j}++) {{")
            element(j, "0", "    ")
            self.emit("}")
        if C > 1:
            self.row.prefetch = []     # one pass prefetches the next row
        self.row.narrow = []
        self.depth -= 1
        self.emit("}")

    def row_chunks(self, C: int, element) -> None:
        """A pass's plain loop in chunks of ACC_LANES columns (each chunk prefetching the next
        row's lines, then one vector step), then the tail."""
        j, k = self.fresh("j"), self.fresh("k")
        L = c.ACC_LANES
        self.emit(f"int64_t {j} = 0;")
        self.emit(f"for (; {j} + {L} <= {C}; {j} += {L}) {{")
        self.prefetch(j, L, "    ")
        self.widen(j, k, L, "    ")
        self.emit(f"    PP_LANES for (int {k} = 0; {k} < {L}; {k}++) {{")
        element(f"{j} + {k}", "0", "        ")
        self.emit("    }")
        self.emit("}")
        self.row.wide = {}
        if C % L:
            self.emit(f"for (; {j} < {C}; {j}++) {{")
            element(j, "0", "    ")
            self.emit("}")

    def row_scalars(self, instrs: list) -> dict:
        """The per-row scalars ((R, 1) sources) a pass reads, loaded once: tile -> C name."""
        made = [op.operands[0] for op in instrs]
        pre: dict = {}
        for op in instrs:
            for v in op.operands[1:]:
                if v not in made and v not in pre and v.type.shape[-1] == 1:
                    pre[v] = self.fresh("s")
                    ct = "float" if v.type.dtype.kind == "float" else "int64_t"
                    self.emit(f"const {ct} {pre[v]} = {c._ld(v.type.dtype, self.row_at(v, '0'))};")
        return pre

    def row_element(self, unit, pre: dict, lanes: list, j: str, k: str, pad: str) -> str:
        """Prints the pass for column j (lane k) at indent pad; returns the value to store, if
        the pass takes a store along."""
        local: dict = {}

        def arg(v):
            if v in local:
                return local[v]
            if v in self.row.wide:
                return self.row.wide[v]
            return pre[v] if v in pre else c._ld(v.type.dtype, self.row_at(v, j))

        self.chain(unit.instrs, arg, lambda v: self.row_at(v, j), unit.stored, local, pad)
        for ln in lanes:
            ln.step(local[ln.src], j, k, pad)
        if unit.store:
            t, gm = unit.store.operands
            rounded = self.bits.get(local[t])
            if self.row.narrowing:             # the float pp_narrow32 rounds to the dtype
                return self.unrounded[local[t]] if rounded and rounded[0] == gm.type.dtype \
                    else local[t]
            if rounded and rounded[0] == gm.type.dtype:
                return rounded[1]              # already the stored dtype's bits
            return c._st(gm.type.dtype, local[t], "float" if t.type.dtype.kind == "float"
                         else "int")
        return ""

    def row_lanes(self, C: int, lanes: list, element) -> None:
        """The loop of a pass with reductions: ACC_LANES columns at a time, then the tail,
        then each reduction's lanes combined. When a reduction's valid columns are known
        only at run time, the whole chunks of valid columns come first, without the test of
        each element (a test per element keeps gcc from vectorising the pass), then the
        chunks past them with it; the lanes see the same elements in the same order."""
        j, k = self.fresh("j"), self.fresh("k")
        self.emit(f"int64_t {j} = 0;")
        bounds = [ln.n for ln in lanes if ln.n]
        if bounds:
            full = self.fresh("full")
            lim = bounds[0]
            for b in bounds[1:]:
                lim = f"pp_min({lim}, {b})"
            self.emit(f"const int64_t {full} = {lim} / {c.ACC_LANES} * {c.ACC_LANES};")
            self.row.guard = False
            self.lane_chunks(full, j, k, element)
            self.row.guard = True
        self.lane_chunks(str(C), j, k, element)
        if C % c.ACC_LANES:
            self.emit(f"for (int {k} = 0; {j} + {k} < {C}; {k}++) {{")
            element(f"{j} + {k}", k, "    ")
            self.emit("}")
        for ln in lanes:
            ln.close()

    def lane_chunks(self, end: str, j: str, k: str, element) -> None:
        """for (; j + ACC_LANES <= end; ...): one lane step per chunk of columns."""
        L = c.ACC_LANES
        block = bool(self.row.prefetch or self.row.narrow)
        if block:
            self.emit(f"for (; {j} + {L} <= {end}; {j} += {L}) {{")
            self.prefetch(j, L, "    ")
            self.widen(j, k, L, "    ")
        else:
            self.emit(f"for (; {j} + {L} <= {end}; {j} += {L})")
        self.emit(f"    PP_LANES for (int {k} = 0; {k} < {L}; {k}++) {{")
        element(f"{j} + {k}", k, "        ")
        self.emit("    }")
        if block:
            self.emit("}")
        self.row.wide = {}

    def widen(self, j: str, k: str, w: int, pad: str) -> None:
        """Before a chunk of ACC_LANES columns from j: each 16-bit float row the pass reads,
        as 16 floats (pp_widen16, the same values as pp_bf2f / pp_h2f); the chunk's loop
        reads those (self.row.wide). In the loop, gcc would size every vector by the 16-bit
        elements (ymm on AVX-512): a reduction's lanes then stay in two halves and the
        fp32 row it stores is reread by whole vectors that no store forwards to."""
        if w != c.ACC_LANES:
            return
        for v in self.row.narrow:
            name = self.fresh("w")
            code = "PP_BF16" if v.type.dtype.name == "bf16" else "PP_F16"
            self.emit(f"{pad}float {name}[{w}];")
            self.emit(f"{pad}pp_widen16({name}, &{self.row_at(v, j)}, {code});")
            self.row.wide[v] = f"{name}[{k}]"

    def row_sink(self, store, element) -> None:
        """The loop of a pass that ends in a store: valid elements of row r only, written to
        GM as they are made; a big output in 64-byte pieces, streamed when aligned, a piece
        of bf16 / fp16 made as floats and rounded in whole vectors (pp_narrow32)."""
        gdt = store.operands[1].type.dtype
        n, at = self.gm_row(store)
        g = self.fresh("g")
        self.emit(f"{gdt.c_type} *const {g} = {at};")
        j = self.fresh("j")
        stream = self.row.stream.get(store)
        if stream:
            w, k, o = 64 // gdt.itemsize, self.fresh("k"), self.fresh("o")
            narrow = gdt.name in ("bf16", "f16") and \
                store.operands[0].type.dtype.kind == "float"
            self.emit(f"int64_t {j} = 0;")
            self.emit(f"for (; {j} + {w} <= {n}; {j} += {w}) {{")
            self.prefetch(j, w, "    ")
            self.widen(j, k, w, "    ")
            self.emit(f"    {gdt.c_type} {o}[{w}];")
            f = self.fresh("f") if narrow else o
            if narrow:
                self.emit(f"    float {f}[{w}];")
            self.emit(f"    PP_LANES for (int {k} = 0; {k} < {w}; {k}++) {{")
            self.row.narrowing = narrow
            value = element(f"{j} + {k}", k, "        ")
            self.row.narrowing = False
            self.emit(f"        {f}[{k}] = {value};")
            self.emit("    }")
            self.row.wide = {}
            if narrow:
                code = "PP_BF16" if gdt.name == "bf16" else "PP_F16"
                self.emit(f"    pp_narrow32({o}, {f}, {code});")
            self.emit(f"    pp_put64({g} + {j}, {o}, {stream});")
            self.emit("}")
            self.emit(f"for (; {j} < {n}; {j}++) {{")
        else:
            self.emit(f"for (int64_t {j} = 0; {j} < {n}; {j}++) {{")
        value = element(j, "0", "    ")
        self.emit(f"    {g}[{j}] = {value};")
        self.emit("}")


def _narrow_rows(instrs: list, pre: dict) -> list:
    """The bf16 / fp16 rows a pass's instructions read (not made in it, not per-row
    scalars), in first-read order."""
    made = {op.operands[0] for op in instrs}
    out: list = []
    for op in instrs:
        for v in op.operands[1:]:
            if (v not in made and v not in pre and v not in out and v.type.shape[-1] != 1
                    and v.type.dtype.name in ("bf16", "f16")):
                out.append(v)
    return out


def _needed(decls: list, body: list) -> list:
    """The declarations (each naming one C variable, after the ones it uses) that body uses,
    directly or through a later one kept."""
    text, keep = "\n".join(body), []
    for line in reversed(decls):
        name = re.match(r"[^=]*?([A-Za-z_]\w*)\s*=", line).group(1)
        if re.search(rf"\b{name}\b", text):
            keep.append(line)
            text += "\n" + line
    return keep[::-1]


class _Lanes:
    """The lanes of a reduction along the row taken into the pass that makes its source:
    element j goes to lane j % ACC_LANES in order of j, then the tree, as in lane_reduce (a
    float max/min keeps NaNs in lanes of their own, merged before the tree: the same result
    as the NaN-propagating combine)."""

    def __init__(self, prog, red, C: int):
        self.p, (self.dst, self.src) = prog, red.operands
        self.kind = red.attrs["kind"]
        self.ident, self.comb, self.work = c._reduce_ops(self.kind, self.src.type.dtype)
        self.split = self.work == "float" and self.kind in ("max", "min")
        self.lanes, self.k = prog.fresh("lane"), prog.fresh("k")
        valid = red.attrs["valid"][-1]
        self.n = None
        if not (isinstance(valid, int) and valid >= C):
            self.n = prog.fresh("n")
            prog.emit(f"const int64_t {self.n} = {prog.clamp(C, valid)};")
        prog.emit(f"{self.work} {self.lanes}[{c.ACC_LANES}];")
        prog.emit(f"for (int {self.k} = 0; {self.k} < {c.ACC_LANES}; {self.k}++) "
                  f"{self.lanes}[{self.k}] = {self.ident};")
        if self.split:
            self.nans = prog.fresh("nan")
            prog.emit(f"float {self.nans}[{c.ACC_LANES}] = {{0}};  /* NaNs met by each lane */")

    def step(self, x: str, j: str, k: str, pad: str) -> None:
        lane = f"{self.lanes}[{k}]"
        if self.split:
            cmp = {"max": ">", "min": "<"}[self.kind]
            nan = f"{self.nans}[{k}]"
            upd = [(lane, f"{x} {cmp} {lane} ? {x} : {lane}"), (nan, f"{x} != {x} ? {x} : {nan}")]
        else:
            if self.kind == "sum" and self.work == "float":
                # x + 0.0f keeps gcc from fusing a product x into the lane's add (one
                # rounding where a store and reload of the product gives two); a lane is
                # never -0, so adding x + 0.0f (+0 for -0) is adding x
                x = f"({x} + 0.0f)"
            upd = [(lane, self.comb.format(acc=lane, x=x))]
        for target, e in upd:
            if self.n and self.p.row.guard:      # only the valid columns count
                e = f"{j} < {self.n} ? {c._paren(e)} : {target}"
            self.p.emit(f"{pad}{target} = {e};")

    def close(self) -> None:
        p, k, lanes = self.p, self.k, self.lanes
        if self.split:
            nans = self.nans
            p.emit(f"for (int {k} = 0; {k} < {c.ACC_LANES}; {k}++) "
                   f"{lanes}[{k}] = {nans}[{k}] != {nans}[{k}] ? {nans}[{k}] : {lanes}[{k}];")
        res = p.lane_tree(lanes, self.comb, k, self.kind if self.split else None, self.work)
        kind = "float" if self.work == "float" else "int"
        p.emit(f"{p.row_at(self.dst, '0')} = {c._st(self.dst.type.dtype, res, kind)};")


# -- for the plan (c_plan): a run's row groups, its GM accesses ------------------------------

GROUP_MAX = 8          # rows a run takes through each unit in turn (RowRun.group) ...
GROUP_BYTES = 1024     # ... when its widest row on the stack is at most this big


def row_group(run, stack: int) -> int:
    """How many rows of a run go through each of its units in turn (the rows of a group
    unit by unit, each row with a stack row of its own) instead of one row through all the
    units: a short row's units form one chain of dependent steps (a pass, its reduction's
    tree, a division, the next pass) too long for the core to overlap with the next row's,
    while the same unit on several rows gives it independent chains. Any order that keeps
    each row's units in order and each unit's rows in order is the row order's result (the
    run's instructions meet across rows only in that order), so the bytes do not change.
    The largest divisor of the rows up to GROUP_MAX whose stack rows fit in `stack` bytes, for
    rows of at most GROUP_BYTES in a run of two reductions or more (the chain: measured on
    Zen 4, softmax's 256-float rows take 0.8x the time in groups of 8, layernorm's 0.9x, its
    128 bf16 ones 0.63x; an rmsnorm's one reduction gains nothing, 1024-float rows 1.2x).
    Else 1, and for tiles of more than one leading dim, whose next row to prefetch
    (prefetch_rows) would be past a group of all the tile's rows."""
    sizes = [v.type.shape[-1] * v.type.dtype.itemsize for v in run.tiles if v in run.local]
    if (not sizes or run.rows < 2 or max(sizes) > GROUP_BYTES or len(run.lead) > 1
            or sum(op.name == "treduce" for op in run.body) < 2):
        return 1
    cap = min(GROUP_MAX, stack // sum(sizes))
    return max(g for g in range(1, max(1, cap) + 1) if run.rows % g == 0)



def stores_meet(stores: list) -> bool:
    """Could two stores of a run into one GM tensor touch one element? Row by row they would
    run in another order; stores into constant, disjoint ranges of one dim (out[..., 0:64]
    and out[..., 64:128]) never meet."""
    for i, a in enumerate(stores):
        for b in stores[i + 1:]:
            if a.operands[1] is b.operands[1] and not _apart(a, b):
                return True
    return False


def _apart(a, b) -> bool:
    """Do two GM accesses cover constant, disjoint ranges of some dim?"""
    for d, (oa, ob) in enumerate(zip(a.attrs["offsets"], b.attrs["offsets"])):
        ea, eb = _extent(a, d), _extent(b, d)
        if all(type(x) is int for x in (oa, ob, ea, eb)) and (oa + ea <= ob or ob + eb <= oa):
            return True
    return False


def _extent(op, d: int):
    """At most how many elements of GM dim d an access covers: its tile's (the valid extent
    when that is a smaller constant)."""
    t = op.operands[0].type
    gr = len(op.attrs["offsets"])
    size = t.shape[d - (gr - t.rank)] if d >= gr - t.rank else 1
    v = op.attrs["valid"][d]
    return min(size, v) if type(v) is int else size
