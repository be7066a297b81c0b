"""More of the C renderer, mixed into c._Program (shared helpers from c_text).

MoreInstrs: the rules for tile instructions beyond copies, elementwise math, reductions and
matmul: iota, triangle masks, tile transposes, arg-reductions, scans, row sorts, GM gathers and
the sequential GM scatters; each method renders one instruction.

RowRuns: runs of row-wise instructions rendered one row at a time (see RowRuns.plan_rows).
"""
from __future__ import annotations

from ..ir import expr as E
from ..ir.instr import dests, sources
from . import c_text as c

ROW_MIN = 64           # row runs need a row of at least this many elements ...
ROW_BYTES = 65536      # ... give a tile a row of its own on the stack up to this size ...
ROW_STACK = 262144     # ... and up to this much in all


class MoreInstrs:
    def loops(self, shape, idx) -> None:
        for k, n in enumerate(shape):
            self.emit(f"for (int64_t {idx[k]} = 0; {idx[k]} < {n}; {idx[k]}++)")

    @staticmethod
    def flat(shape, idx) -> str:
        st = c._strides(shape)
        return " + ".join([f"{i} * {s}" for i, s in zip(idx, st)] + ["0"])

    def scalar_lit(self, v, dt) -> str:
        if dt.kind == "float":
            return c._flit(v)
        return f"(int64_t)({E.to_c(v)})" if isinstance(v, E.Expr) else f"(int64_t){int(v)}"

    def i_tiota(self, op) -> None:
        d = op.operands[0]
        a = op.attrs
        dt = d.type.dtype
        i = self.fresh()
        start, step = self.scalar_lit(a["start"], dt), self.scalar_lit(a["step"], dt)
        work = "float" if dt.kind == "float" else "int64_t"
        offset = self.ex(a["offset"])
        value = c._st(dt, f"({start} + ({work})({offset} + {i}) * {step})",
                      "float" if work == "float" else "int")
        self.emit(f"for (int64_t {i} = 0; {i} < {d.type.shape[0]}; {i}++) "
                  f"{self.tile(d)}[{i}] = {value};")

    def i_ttri(self, op) -> None:
        dst, src = op.operands
        a = op.attrs
        shape = dst.type.shape
        R, C = shape[-2], shape[-1]
        lead = 1
        for s in shape[:-2]:
            lead *= s
        b, r, cc = self.fresh("b"), self.fresh("r"), self.fresh("c")
        cmp = "<=" if a["lower"] else ">="
        self.emit(f"for (int64_t {b} = 0; {b} < {lead}; {b}++)")
        self.emit(f"for (int64_t {r} = 0; {r} < {R}; {r}++)")
        self.emit(f"for (int64_t {cc} = 0; {cc} < {C}; {cc}++) {{")
        self.emit(f"    const int64_t at = ({b} * {R} + {r}) * {C} + {cc};")
        self.emit(f"    {self.tile(dst)}[at] = (({self.ex(a['col0'])} + {cc}) - "
                  f"({self.ex(a['row0'])} + {r}) {cmp} {a['diagonal']}) ? {self.tile(src)}[at] : 0;")
        self.emit("}")

    def i_ttrans(self, op) -> None:
        dst, src = op.operands
        perm = op.attrs["perm"]
        shape = dst.type.shape
        idx = [self.fresh() for _ in shape]
        src_idx = [None] * len(perm)
        for i, p in enumerate(perm):
            src_idx[p] = idx[i]
        self.loops(shape, idx)
        self.emit(f"    {self.tile(dst)}[{self.flat(shape, idx)}] = "
                  f"{self.tile(src)}[{self.flat(src.type.shape, src_idx)}];")

    def _around_dim(self, shape, d):
        """Loops over every dim but d; returns (index vars, flat base, stride of d)."""
        idx = [self.fresh() for _ in shape]
        st = c._strides(shape)
        for k, n in enumerate(shape):
            if k != d:
                self.emit(f"for (int64_t {idx[k]} = 0; {idx[k]} < {n}; {idx[k]}++) {{")
                self.depth += 1
        base = " + ".join([f"{idx[k]} * {st[k]}" for k in range(len(shape)) if k != d] + ["0"])
        return idx, base, st[d]

    def _close(self, n: int) -> None:
        for _ in range(n):
            self.depth -= 1
            self.emit("}")

    def i_targreduce(self, op) -> None:
        acc_v, acc_i, src = op.operands
        a = op.attrs
        d, shape = a["dim"], src.type.shape
        sdt = src.type.dtype
        work = "float" if sdt.kind == "float" else "int64_t"
        better = ">" if a["kind"] == "max" else "<"
        nan = " || (x != x && bv == bv)" if work == "float" else ""
        self.emit("{")
        self.depth += 1
        n = self.fresh("n")
        self.emit(f"const int64_t {n} = pp_max(0, pp_min({shape[d]}, {self.ex(a['valid'][d])}));")
        self.emit(f"const int init = {self.ex(a['init'])};")
        self.emit(f"const int64_t base = {self.ex(a['base'])};")
        idx, base, stride = self._around_dim(shape, d)
        out_st = c._strides(acc_v.type.shape)
        out = " + ".join([f"{idx[k]} * {out_st[k]}" for k in range(len(shape)) if k != d] + ["0"])
        self.emit(f"if ({n} > 0) {{")
        self.emit(f"    {work} bv = {c._ld(sdt, f'{self.tile(src)}[{base}]')};")
        self.emit("    int64_t bi = 0;")
        j = self.fresh("j")
        self.emit(f"    for (int64_t {j} = 1; {j} < {n}; {j}++) {{")
        self.emit(f"        const {work} x = {c._ld(sdt, f'{self.tile(src)}[{base} + {j} * {stride}]')};")
        self.emit(f"        if (x {better} bv{nan}) {{ bv = x; bi = {j}; }}")
        self.emit("    }")
        vn = acc_v.type.dtype
        cur = c._ld(vn, f"{self.tile(acc_v)}[{out}]")
        nan2 = " || (bv != bv && old == old)" if work == "float" else ""
        self.emit(f"    const {work} old = {cur};")
        self.emit(f"    if (init || bv {better} old{nan2}) {{")
        self.emit(f"        {self.tile(acc_v)}[{out}] = "
                  f"{c._st(vn, 'bv', 'float' if work == 'float' else 'int')};")
        self.emit(f"        {self.tile(acc_i)}[{out}] = base + bi;")
        self.emit("    }")
        self.emit("}")
        self._close(len(shape) - 1)
        self.depth -= 1
        self.emit("}")

    def i_tscan(self, op) -> None:
        dst, src, carry = op.operands
        a = op.attrs
        d, shape = a["dim"], src.type.shape
        sdt, ddt, cdt = src.type.dtype, dst.type.dtype, carry.type.dtype
        work = "float" if sdt.kind == "float" else "int64_t"
        opr = "+" if a["kind"] == "sum" else "*"
        ident = ("0" if a["kind"] == "sum" else "1")
        kind = "float" if work == "float" else "int"
        self.emit("{")
        self.depth += 1
        n = self.fresh("n")
        self.emit(f"const int64_t {n} = pp_max(0, pp_min({shape[d]}, {self.ex(a['valid'][d])}));")
        self.emit(f"const int init = {self.ex(a['init'])};")
        idx, base, stride = self._around_dim(shape, d)
        cst = c._strides(carry.type.shape)
        cpos = " + ".join([f"{idx[k]} * {cst[k]}" for k in range(len(shape)) if k != d] + ["0"])
        self.emit(f"{work} run = init ? ({work}){ident} : "
                  f"{c._ld(cdt, f'{self.tile(carry)}[{cpos}]')};")
        j = self.fresh("j")
        self.emit(f"for (int64_t {j} = 0; {j} < {shape[d]}; {j}++) {{")
        self.emit(f"    if ({j} < {n}) {{")
        self.emit(f"        run = run {opr} {c._ld(sdt, f'{self.tile(src)}[{base} + {j} * {stride}]')};")
        self.emit(f"        {self.tile(dst)}[{base} + {j} * {stride}] = {c._st(ddt, 'run', kind)};")
        self.emit(f"    }} else {self.tile(dst)}[{base} + {j} * {stride}] = 0;")
        self.emit("}")
        self.emit(f"{self.tile(carry)}[{cpos}] = {c._st(cdt, 'run', kind)};")
        self._close(len(shape) - 1)
        self.depth -= 1
        self.emit("}")

    def i_tsort(self, op) -> None:
        vals, idx, src = op.operands
        a = op.attrs
        shape = src.type.shape
        C = shape[-1]
        rows = 1
        for s in shape[:-1]:
            rows *= s
        sdt = src.type.dtype
        helper = "pp_argsort_f" if sdt.kind == "float" else "pp_argsort_i"
        key_t = "float" if sdt.kind == "float" else "int64_t"
        r, j = self.fresh("r"), self.fresh("j")
        self.emit("{")
        self.depth += 1
        self.emit(f"const int64_t n = pp_max(0, pp_min({C}, {self.ex(a['valid'][-1])}));")
        self.emit(f"{key_t} keys[{C}];")
        self.emit(f"for (int64_t {r} = 0; {r} < {rows}; {r}++) {{")
        self.emit(f"    for (int64_t {j} = 0; {j} < n; {j}++) keys[{j}] = "
                  f"{c._ld(sdt, f'{self.tile(src)}[{r} * {C} + {j}]')};")
        self.emit(f"    {helper}(keys, {self.tile(idx)} + {r} * {C}, n, {int(a['descending'])});")
        self.emit(f"    for (int64_t {j} = 0; {j} < {C}; {j}++) {{")
        self.emit(f"        if ({j} < n) {self.tile(vals)}[{r} * {C} + {j}] = "
                  f"{self.tile(src)}[{r} * {C} + {self.tile(idx)}[{r} * {C} + {j}]];")
        self.emit(f"        else {{ {self.tile(vals)}[{r} * {C} + {j}] = 0; "
                  f"{self.tile(idx)}[{r} * {C} + {j}] = 0; }}")
        self.emit("    }")
        self.emit("}")
        self.depth -= 1
        self.emit("}")

    def gm_index(self, gm, coords: list) -> str:
        """Flat element offset of coordinates in a GM tensor (strides from its shape)."""
        st = self.gm_strides(gm.type)
        return " + ".join(f"({x}) * {s}" for x, s in zip(coords, st)) or "0"

    def i_tgather(self, op) -> None:
        dst, gm, index = op.operands
        a = op.attrs
        d = a["dim"]
        shape = dst.type.shape
        ro = [self.ex(o) for o in a["region_offsets"]]
        rs = [self.ex(s) for s in a["region_shape"]]
        oo = [self.ex(o) for o in a["out_offsets"]]
        idx = [self.fresh() for _ in shape]
        self.loops(shape, idx)
        self.emit("{")
        self.depth += 1
        ix = f"{self.tile(index)}[{idx[d]}]" if a["mode"] == "select" else \
            f"{self.tile(index)}[{self.flat(shape, idx)}]"
        coords = []
        for k in range(len(shape)):
            if k == d:
                coords.append(f"{ro[k]} + pp_mod((int64_t){ix}, {rs[k]})")
            else:
                coords.append(f"{ro[k]} + pp_min({oo[k]} + {idx[k]}, {rs[k]} - 1)")
        self.emit(f"{self.tile(dst)}[{self.flat(shape, idx)}] = "
                  f"{self.names[gm]}[{self.gm_index(gm, coords)}];")
        self.depth -= 1
        self.emit("}")

    def i_tscatter(self, op) -> None:
        out, index = op.operands[0], op.operands[1]
        src = op.operands[2] if len(op.operands) > 2 else None
        a = op.attrs
        d = a["dim"]
        dt = out.type.dtype
        work = "float" if dt.kind == "float" else "int64_t"
        kind = "float" if work == "float" else "int"
        if a["mode"] == "index_add":
            self._index_add(out, index, src, a, work, kind)
            return
        orr, ir = a["out_region"], a["index_region"]
        oo = [self.ex(o) for o in orr["region_offsets"]]
        os_ = [self.ex(s) for s in orr["region_shape"]]
        io = [self.ex(o) for o in ir["region_offsets"]]
        ishape = [self.ex(s) for s in ir["region_shape"]]
        idx = [self.fresh() for _ in ishape]
        self.emit("{")
        self.depth += 1
        for k, n in enumerate(ishape):
            self.emit(f"for (int64_t {idx[k]} = 0; {idx[k]} < {n}; {idx[k]}++)")
        self.emit("{")
        self.depth += 1
        iv = f"{self.names[index]}[{self.gm_index(index, [f'{io[k]} + {idx[k]}' for k in range(len(idx))])}]"
        self.emit(f"const int64_t t = pp_mod((int64_t){iv}, {os_[d]});")
        tgt = [f"{oo[k]} + ({'t' if k == d else idx[k]})" for k in range(len(idx))]
        at = self.gm_index(out, tgt)
        if src is not None:
            sr = a["src_region"]
            so = [self.ex(o) for o in sr["region_offsets"]]
            v = c._ld(src.type.dtype, f"{self.names[src]}[{self.gm_index(src, [f'{so[k]} + {idx[k]}' for k in range(len(idx))])}]")
        else:
            v = self.scalar_lit(a["value"], dt)
        cur = c._ld(dt, f"{self.names[out]}[{at}]")
        new = {"add": f"{cur} + ({work})({v})", "multiply": f"{cur} * ({work})({v})"}.get(
            a["reduce"], f"({work})({v})")
        self.emit(f"{self.names[out]}[{at}] = {c._st(dt, new, kind)};")
        self.depth -= 1
        self.emit("}")
        self.depth -= 1
        self.emit("}")

    def _index_add(self, out, index, src, a, work, kind) -> None:
        """Slice j of src is added to slice index[j] of out, in index order."""
        d = a["dim"]
        dt = out.type.dtype
        oo = [self.ex(o) for o in a["out_region"]["region_offsets"]]
        os_ = [self.ex(s) for s in a["out_region"]["region_shape"]]
        io = [self.ex(o) for o in a["index_region"]["region_offsets"]]
        sr = a["src_region"]
        so = [self.ex(o) for o in sr["region_offsets"]]
        n_idx = self.ex(a["index_region"]["region_shape"][0])
        j = self.fresh("j")
        self.emit(f"for (int64_t {j} = 0; {j} < {n_idx}; {j}++) {{")
        self.depth += 1
        iv = f"{self.names[index]}[{self.gm_index(index, [f'{io[0]} + {j}'])}]"
        self.emit(f"const int64_t t = pp_mod((int64_t){iv}, {os_[d]});")
        idx = [self.fresh() for _ in os_]
        for k, n in enumerate(os_):
            if k != d:
                self.emit(f"for (int64_t {idx[k]} = 0; {idx[k]} < {n}; {idx[k]}++)")
        self.emit("{")
        tgt = [f"{oo[k]} + ({'t' if k == d else idx[k]})" for k in range(len(os_))]
        srcc = [f"{so[k]} + ({j if k == d else idx[k]})" for k in range(len(os_))]
        alpha = a.get("alpha", 1)
        v = c._ld(src.type.dtype, f"{self.names[src]}[{self.gm_index(src, srcc)}]")
        if alpha != 1:
            v = c._ld(dt, c._st(dt, f"({v}) * {self.scalar_lit(alpha, dt)}", kind))
        at = self.gm_index(out, tgt)
        cur = c._ld(dt, f"{self.names[out]}[{at}]")
        self.emit(f"    {self.names[out]}[{at}] = {c._st(dt, cur + ' + ' + v, kind)};")
        self.emit("}")
        self.depth -= 1
        self.emit("}")


class RowRuns:
    """Rendering one row at a time: plan_rows picks the runs, row_run renders one, and the
    row_* methods render an instruction for row r of its tiles."""

    def plan_rows(self, body) -> None:
        """Find the runs of instructions to render one row at a time.

        Instructions on (R, C) tiles that work row by row (loads and stores of whole rows,
        elementwise math, reductions along the row; sources may also be (R, 1), (1, C) or
        (C,)) run for row 0, then for row 1, ...: a row of each tile stays in L1 from one
        instruction to the next instead of whole tiles streaming through L2. A tile all of
        whose reads and writes are in the run, written before it is read, gets one row of
        its own on the stack ("local"); other tiles are used in place, and the run is kept
        only if no access moves before an overlapping one it followed (when one of the two
        writes). A load of a tile that every row reads whole ((C,) or (1, C)) moves before
        the loop if nothing before it in the run touches its bytes. A GM tensor stored in
        the run is neither loaded in it nor stored twice (distinct tensors do not overlap, as
        the task graph assumes)."""
        self.row_runs: dict = {}      # first instruction -> _RowRun
        self.row_local: set = set()
        for region in c._regions(body):
            ops = [op for op in region if op.name not in ("tile", "arg")]
            i = 0
            while i < len(ops):
                rows, j = 0, i
                while j < len(ops):                     # instructions that agree on R
                    role = _row_role(ops[j])
                    if role is None or (role[0] == "row" and rows and role[1] != rows):
                        break
                    if role[0] == "row":
                        rows = role[1]
                    j += 1
                run = None
                for end in range(j, i + 1, -1):         # the longest valid run from i
                    run = self.row_run_at(ops[i:end], rows)
                    if run:
                        break
                if run:
                    self.row_runs[ops[i]] = run
                    self.row_local |= run.local
                    i += len(run.span)
                else:
                    i += 1

    def row_run_at(self, span: list, rows: int):
        """A _RowRun over span if one is worth it and keeps every result, else None."""
        hoisted = [op for op in span if _row_role(op)[0] == "inv"]
        body = [op for op in span if op not in hoisted]
        if (not rows or len(body) < 2 or max(_row_role(op)[2] for op in body) < ROW_MIN
                or all(op.name in ("tload", "tstore") for op in body)
                or any(v in self.views for op in span for v in dests(op))):
            return None
        gm_r = [op.operands[1] for op in span if op.name == "tload"]
        gm_w = [op.operands[1] for op in span if op.name == "tstore"]
        if any(v in gm_r or gm_w.count(v) > 1 for v in gm_w):
            return None
        local, seen = set(), set()       # the run's own tiles: all accesses in it, a write first
        for op in body:
            for v in sources(op) + dests(op):
                if v in seen:
                    continue
                seen.add(v)
                t = v.type
                if (v not in sources(op) and v not in self.views and t.rank == 2
                        and t.shape[0] == rows and t.shape[1] * t.dtype.itemsize <= ROW_BYTES
                        and self.reads.get(v, 0) == _count(body, v, sources)
                        and self.writes.get(v, 0) == _count(body, v, dests)):
                    local.add(v)
        if sum(v.type.shape[1] * v.type.dtype.itemsize for v in local) > ROW_STACK:
            return None
        acc = []          # (position, first byte, row pitch (0: every row), bytes, writes, hoisted)
        for pos, op in enumerate(span):
            for v, w in [(v, False) for v in sources(op)] + [(v, True) for v in dests(op)]:
                if v in local:
                    continue
                lo, hi = self.extent[v]
                t = v.type
                if op not in hoisted and t.rank == 2 and t.shape[0] == rows:
                    pitch = t.shape[1] * t.dtype.itemsize
                    acc.append((pos, lo, pitch, pitch, w, False))
                else:
                    acc.append((pos, lo, 0, hi - lo, w, op in hoisted))
        for a in acc:
            for b in acc:
                if a[0] >= b[0] or not (a[4] or b[4]) or a[5]:
                    continue
                if b[5]:       # moves before the loop, so before a
                    if _overlap(a[1], a[1] + max(a[3], a[2] * rows), b[1], b[1] + b[3]):
                        return None
                elif _inverted(a, b, rows):
                    return None
        return _RowRun(span, rows, hoisted, local)

    def row_run(self, run) -> None:
        """for r < R: the run's instructions on row r (its local tiles declared per row)."""
        for op in run.hoisted:
            self.op(op)
        body = [op for op in run.span if op not in run.hoisted]
        r = run.var = self.fresh("r")
        self.emit(f"/* {' '.join(op.name for op in body)}: one row at a time */")
        self.emit("{")
        self.depth += 1
        for op in body:
            if op.name == "tstore" and op.operands[0].type.dtype == op.operands[1].type.dtype:
                run.stream[op] = self.fresh("stream")
                self.emit(f"const int {run.stream[op]} = {self.stream_test(op.operands[1])};")
        self.emit(f"for (int64_t {r} = 0; {r} < {run.rows}; {r}++) {{")
        self.depth += 1
        at = len(self.lines)
        self.row = run
        self.ops(body)
        self.row = None
        decl = []           # the rows the loop body uses, declared at its top
        for v in dict.fromkeys(v for op in body for v in sources(op) + dests(op)):
            if v in run.used:
                t, n = v.type, self.tile(v)
                decl.append(f"{t.dtype.c_type} {n}[{t.shape[1]}];  /* row {r} of {t} */"
                            if v in run.local else
                            f"{t.dtype.c_type} *const {run.ptr[v]} = {n} + {r} * {t.shape[1]};")
        self.lines[at:at] = ["    " * self.depth + line for line in decl]
        self.depth -= 1
        self.emit("}")
        for var in run.stream.values():
            self.emit(f"pp_store_end({var});")
        self.depth -= 1
        self.emit("}")

    def row_ptr(self, v) -> str:
        """Row r of tile v: its row of its own, a pointer to its row in place, or the tile
        itself for tiles without a row dim (the same for every row)."""
        run, t = self.row, v.type
        if t.rank == 2 and t.shape[0] == run.rows:
            run.used.add(v)
            if v not in run.local:
                run.ptr.setdefault(v, f"{self.tile(v)}r")
                return run.ptr[v]
        return self.tile(v)

    def row_at(self, v, j: str) -> str:
        """Element j of row r of tile v (its one element for (R, 1) and (1, 1) tiles)."""
        return f"{self.row_ptr(v)}[{j if v.type.shape[-1] != 1 else 0}]"

    def gm_row(self, op) -> tuple[str, str]:
        """Row r of a row-mode tload/tstore: declares how many of its elements are valid
        (none for rows past the valid region), returns that and the row's GM address."""
        t, gm = op.operands
        R, C = t.type.shape
        offs = [self.ex(o) for o in op.attrs["offsets"]]
        valid = op.attrs["valid"]
        r = self.row.var
        cond = [] if isinstance(valid[-2], int) and valid[-2] >= R else \
            [f"{r} < {self.clamp(R, valid[-2])}"]
        cond += [f"{self.ex(v)} > 0" for v in valid[:-2] if not (isinstance(v, int) and v >= 1)]
        n = self.fresh("n")
        cols = self.clamp(C, valid[-1])
        self.emit(f"const int64_t {n} = {' && '.join(cond)} ? {cols} : 0;  /* valid in row {r} */"
                  if cond else f"const int64_t {n} = {cols};  /* valid in row {r} */")
        gst = self.gm_strides(gm.type)
        row = r if offs[-2] == "0" else f"{offs[-2]} + {r}"
        terms = list(zip(offs[:-2], gst[:-2])) + [(row, gst[-2]), (offs[-1], "1")]
        return n, c._at(self.names[gm], terms)

    def row_tload(self, op) -> None:
        d, gm = op.operands
        C, dt, gdt = d.type.shape[1], d.type.dtype, gm.type.dtype
        dst = self.row_ptr(d)
        self.emit("{")
        self.depth += 1
        n, src = self.gm_row(op)
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
        self.emit(f"for (int64_t {j} = 0; {j} < {d.type.shape[1]}; {j}++) "
                  f"{self.row_at(d, j)} = {self.fill_value(op)};")

    def row_treduce(self, op) -> None:
        dst, src = op.operands
        C = src.type.shape[1]
        kind = op.attrs["kind"]
        ident, comb, work = c._reduce_ops(kind, src.type.dtype)
        self.emit("{")
        self.depth += 1
        n = self.fresh("v")
        self.emit(f"const int64_t {n} = {self.clamp(C, op.attrs['valid'][1])};")
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

    def row_pass(self, instrs: list, rest: list) -> int:
        """Elementwise instructions on row r as one loop over its columns, taking along the
        reductions (along the row) of tiles made in the run that directly follow it, or else
        a store that does: a reduction accumulates each element as it is made, in the lanes
        and the order of treduce; a store writes the values straight to GM (in streamed
        64-byte pieces when the output is big) when the run keeps nothing else. Returns how
        many instructions of rest were taken."""
        made = [op.operands[0] for op in instrs]
        taken, reds, store = 0, [], None
        for op in rest:
            if op.name == "treduce" and op.operands[1] in made and op.attrs["dims"] == [1]:
                reds.append(op)
            elif (op.name == "tstore" and not reds and op.operands[0] in made
                  and self.reads.get(op.operands[0]) == 1):
                store = op
            elif op.name != "tile":
                break
            taken += 1
            if store:
                break
        while taken and rest[taken - 1].name == "tile":
            taken -= 1
        inside: dict = {}
        for op in instrs + reds + ([store] if store else []):
            for v in sources(op):
                inside[v] = inside.get(v, 0) + 1
        if store and any(self.reads.get(op.operands[0], 0) != inside.get(op.operands[0], 0)
                         or op.operands[0] in op.operands[1:] for op in instrs):
            inside[store.operands[0]] -= 1          # the run keeps a tile: store apart
            store, taken = None, taken - 1
        if len(instrs) > 1 and self.fusion_hazard(instrs, inside):
            for op in instrs:
                self.row_pass([op], [])
            return 0
        C = instrs[0].operands[0].type.shape[-1]
        names = " ".join(op.name for op in instrs + reds + ([store] if store else []))
        self.emit(f"{{   /* {names}: one pass over the row */")
        self.depth += 1
        pre: dict = {}          # the per-row scalars the run reads, loaded once
        for op in instrs:
            for v in op.operands[1:]:
                if v not in made and v not in pre and v.type.shape[-1] == 1:
                    pre[v] = self.fresh("s")
                    ct = "float" if v.type.dtype.kind == "float" else "int64_t"
                    self.emit(f"const {ct} {pre[v]} = {c._ld(v.type.dtype, self.row_at(v, '0'))};")
        lanes = [_Lanes(self, red, C) for red in reds]

        def element(j: str, k: str, pad: str) -> str:
            """Emits the run for column j (lane k); returns the value to store, if any."""
            local: dict = {}

            def arg(v):
                if v in local:
                    return local[v]
                return pre[v] if v in pre else c._ld(v.type.dtype, self.row_at(v, j))

            self.chain(instrs, arg, lambda v: self.row_at(v, j), inside, local, pad)
            for ln in lanes:
                ln.step(local[ln.src], j, k, pad)
            if store:
                t, gm = store.operands
                return c._st(gm.type.dtype, local[t], "float" if t.type.dtype.kind == "float"
                           else "int")
            return ""

        if store:
            self.row_sink(store, element)
        elif lanes:
            j, k = self.fresh("j"), self.fresh("k")
            self.emit(f"int64_t {j} = 0;")
            self.emit(f"for (; {j} + {c.ACC_LANES} <= {C}; {j} += {c.ACC_LANES})")
            self.emit(f"    PP_LANES for (int {k} = 0; {k} < {c.ACC_LANES}; {k}++) {{")
            element(f"{j} + {k}", k, "        ")
            self.emit("    }")
            if C % c.ACC_LANES:
                self.emit(f"for (int {k} = 0; {j} + {k} < {C}; {k}++) {{")
                element(f"{j} + {k}", k, "    ")
                self.emit("}")
            for ln in lanes:
                ln.close()
        elif C == 1:          # per-row scalars
            element("0", "0", "")
        else:
            j = self.fresh("j")
            self.emit(f"for (int64_t {j} = 0; {j} < {C}; {j}++) {{")
            element(j, "0", "    ")
            self.emit("}")
        self.depth -= 1
        self.emit("}")
        return taken

    def row_sink(self, store, element) -> None:
        """The loop of a pass that ends in a store: valid elements of row r only, written to
        GM as they are made; a big output in 64-byte pieces, streamed when aligned."""
        gdt = store.operands[1].type.dtype
        n, at = self.gm_row(store)
        g = self.fresh("g")
        self.emit(f"{gdt.c_type} *const {g} = {at};")
        j = self.fresh("j")
        stream = self.row.stream.get(store)
        if stream:
            w, k, o = 64 // gdt.itemsize, self.fresh("k"), self.fresh("o")
            self.emit(f"int64_t {j} = 0;")
            self.emit(f"for (; {j} + {w} <= {n}; {j} += {w}) {{")
            self.emit(f"    {gdt.c_type} {o}[{w}];")
            self.emit(f"    PP_LANES for (int {k} = 0; {k} < {w}; {k}++) {{")
            value = element(f"{j} + {k}", k, "        ")
            self.emit(f"        {o}[{k}] = {value};")
            self.emit("    }")
            self.emit(f"    pp_put64({g} + {j}, {o}, {stream});")
            self.emit("}")
            self.emit(f"for (; {j} < {n}; {j}++) {{")
        else:
            self.emit(f"for (int64_t {j} = 0; {j} < {n}; {j}++) {{")
        value = element(j, "0", "    ")
        self.emit(f"    {g}[{j}] = {value};")
        self.emit("}")


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
        valid = red.attrs["valid"][1]
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
            if self.n:           # only the valid columns count
                e = f"{j} < {self.n} ? {c._paren(e)} : {target}"
            self.p.emit(f"{pad}{target} = {e};")

    def close(self) -> None:
        p, k, lanes = self.p, self.k, self.lanes
        if self.split:
            nans = self.nans
            p.emit(f"for (int {k} = 0; {k} < {c.ACC_LANES}; {k}++) "
                   f"{lanes}[{k}] = {nans}[{k}] != {nans}[{k}] ? {nans}[{k}] : {lanes}[{k}];")
        res = p.lane_tree(lanes, self.comb, k, self.kind if self.split else None)
        kind = "float" if self.work == "float" else "int"
        p.emit(f"{p.row_at(self.dst, '0')} = {c._st(self.dst.type.dtype, res, kind)};")


class _RowRun:
    """Instructions rendered one row at a time (see RowRuns.plan_rows)."""

    def __init__(self, span: list, rows: int, hoisted: list, local: set):
        self.span, self.rows, self.hoisted, self.local = span, rows, hoisted, local
        self.var = ""                 # the row index in C
        self.ptr: dict = {}           # tile used in place -> its row pointer
        self.used: set = set()        # tiles whose row the loop body touches
        self.stream: dict = {}        # tstore -> its streaming flag


def _row_role(op):
    """("row", R, C) for an instruction that works row by row on (R, C) tiles (row r of its
    result needs row r of its sources only), ("inv", 0, C) for a load of a (C,) or (1, C)
    tile (every row reads it whole), else None."""
    n = op.name
    if n in ("tload", "tstore"):
        t, g = op.operands[0].type, op.operands[1].type
        if t.rank == 2 and t.shape[0] > 1 and g.rank >= 2:
            return ("row", t.shape[0], t.shape[1])
        if n == "tload" and (t.rank == 1 or (t.rank == 2 and t.shape[0] == 1)):
            return ("inv", 0, t.shape[-1])
        return None
    if n == "treduce":
        d, s = op.operands
        if s.type.rank == 2 and op.attrs["dims"] == [1] and d.type.shape == (s.type.shape[0], 1) \
                and s.type.shape[0] > 1:
            return ("row", s.type.shape[0], s.type.shape[1])
        return None
    if n == "texpands" or c._fusable(op):
        d = op.operands[0].type
        if d.rank != 2 or d.shape[0] < 2:
            return None
        R, C = d.shape
        ok = {(R, C), (R, 1), (1, C), (C,), (1, 1), (1,)}
        if all(tuple(v.type.shape) in ok for v in op.operands[1:]):
            return ("row", R, C)
    return None


def _overlap(a0: int, a1: int, b0: int, b1: int) -> bool:
    return a0 < b1 and b0 < a1


def _inverted(a, b, rows: int) -> bool:
    """Row by row, does b (after a in program order) touch bytes of a row r' < r before a
    touches them in row r? a, b: (position, first byte, row pitch or 0, bytes per row, ...)."""
    _, la, pa, wa = a[:4]
    _, lb, pb, wb = b[:4]
    for r in range(1, rows):
        s, e = la + r * pa, la + r * pa + wa
        if pb == 0:
            if _overlap(s, e, lb, lb + wb):
                return True
            continue
        lo = max(0, (s - lb - wb) // pb + 1)          # rows r' of b that meet [s, e)
        hi = min(r - 1, -(-(e - lb) // pb) - 1)
        if lo <= hi:
            return True
    return False


def _count(ops: list, v, which) -> int:
    return sum(1 for op in ops for x in which(op) if x is v)
