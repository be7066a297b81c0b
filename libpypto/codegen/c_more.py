"""More of the C renderer, mixed into c._Program (shared helpers from c_text): the `i_<name>`
rules for tile instructions beyond copies, elementwise math, reductions and matmul: iota,
triangle masks, tile transposes, arg-reductions, scans, row sorts, GM gathers and the
sequential GM scatters. Each method prints one instruction; none of them decides anything
about the program (c_plan.py does).
"""
from __future__ import annotations

from ..errors import PyptoError
from ..ir import expr as E
from ..ir import ops as O
from ..ir.mix_ops import clustered
from . import c_text as c


class MoreInstrs:
    """The rarer tile instructions, one `i_<instruction>` method each."""

    def loops(self, shape, idx) -> None:
        for k, n in enumerate(shape):
            self.emit(f"for (int64_t {idx[k]} = 0; {idx[k]} < {n}; {idx[k]}++)")

    @staticmethod
    def flat(shape, idx) -> str:
        st = c._strides(shape)
        return " + ".join([f"{i} * {s}" for i, s in zip(idx, st)] + ["0"])

    def scalar_lit(self, v, dt) -> str:
        if dt.kind == "float":
            return c._flit(v, self.ex)
        return f"(int64_t)({self.ex(v)})" if isinstance(v, E.Expr) else f"(int64_t){int(v)}"

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

    def i_tuniform(self, op) -> None:
        """Philox4x32 [0, 1) floats (c_ops.h pp_philox; runtime/philox.py is the same in
        numpy): element at global flat index g gets word g % 4 of block g / 4."""
        d, a = op.operands[0], op.attrs
        dt, shape = d.type.dtype, d.type.shape
        idx = [self.fresh() for _ in shape]
        g = " + ".join(f"(uint64_t)(({self.ex(o)}) + {i}) * {s}ull"
                       for o, i, s in zip(a["offsets"], idx, c._strides(a["shape"])))
        n = O.UNIFORM_BITS[dt.name]
        word = (f"pp_philox({g}, {a['key'][0]}u, {a['key'][1]}u, {a['counter'][0]}u, "
                f"{a['counter'][1]}u, {a['rounds']})")
        value = c._st(dt, f"(float)({word} & {(1 << n) - 1}u) * 0x1p-{n}f", "float")
        self.loops(shape, idx)
        self.emit(f"    {self.tile(d)}[{self.flat(shape, idx)}] = {value};")

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

    def _bitonic_swap(self, v, i, a: str, b: str, vdt, n: int, desc: bool) -> None:
        """Exchange elements a and b of tiles v (values) and i (positions) when b comes
        before a."""
        helper = "pp_before_f" if vdt.kind == "float" else "pp_before_i"
        vn, inn = self.tile(v), self.tile(i)
        self.emit(f"    if ({helper}({c._ld(vdt, f'{vn}[{b}]')}, {inn}[{b}], "
                  f"{c._ld(vdt, f'{vn}[{a}]')}, {inn}[{a}], {n}, {int(desc)})) {{")
        self.emit(f"        const {vdt.c_type} tv = {vn}[{a}]; {vn}[{a}] = {vn}[{b}]; "
                  f"{vn}[{b}] = tv;")
        self.emit(f"        const int32_t ti = {inn}[{a}]; {inn}[{a}] = {inn}[{b}]; "
                  f"{inn}[{b}] = ti;")
        self.emit("    }")

    def _copy_tiles(self, pairs) -> None:
        for d, s_ in pairs:
            self.emit(f"memcpy({self.tile(d)}, {self.tile(s_)}, "
                      f"{c._numel(d.type.shape) * d.type.dtype.itemsize});")

    def i_tbitonic(self, op) -> None:
        """Bitonic steps [block, distance, mirrored] inside each row of the tiles."""
        dv, di, sv, si = op.operands
        a = op.attrs
        t = dv.type.shape[-1]
        n = c._numel(dv.type.shape)
        self._copy_tiles([(dv, sv), (di, si)])
        for blk, dist, flip in a["steps"]:
            u = self.fresh("u")
            self.emit(f"for (int64_t {u} = 0; {u} < {n}; {u}++) {{")
            if flip:
                self.emit(f"    const int64_t j = {u} % {t} % {blk};")
                self.emit(f"    if (j >= {blk // 2}) continue;")
                partner = f"{u} - j + {blk - 1} - j"
            else:
                self.emit(f"    if ({u} % {t} & {dist}) continue;")
                partner = f"{u} + {dist}"
            self._bitonic_swap(dv, di, u, partner, dv.type.dtype, a["n"], a["descending"])
            self.emit("}")

    def i_tbitonic2(self, op) -> None:
        """The compare-exchange of a low and a high tile (the high one reversed: mirror)."""
        lv, li, hv, hi, slv, sli, shv, shi = op.operands
        a = op.attrs
        t = lv.type.shape[-1]
        n = c._numel(lv.type.shape)
        self._copy_tiles([(lv, slv), (li, sli), (hv, shv), (hi, shi)])
        u = self.fresh("u")
        p = f"{u} - {u} % {t} + {t - 1} - {u} % {t}" if a["mirror"] else u
        vdt = lv.type.dtype
        helper = "pp_before_f" if vdt.kind == "float" else "pp_before_i"
        self.emit(f"for (int64_t {u} = 0; {u} < {n}; {u}++) {{")
        self.emit(f"    const int64_t p = {p};")
        self.emit(f"    if ({helper}({c._ld(vdt, f'{self.tile(hv)}[p]')}, {self.tile(hi)}[p], "
                  f"{c._ld(vdt, f'{self.tile(lv)}[{u}]')}, {self.tile(li)}[{u}], {a['n']}, "
                  f"{int(a['descending'])})) {{")
        self.emit(f"        const {vdt.c_type} tv = {self.tile(lv)}[{u}]; {self.tile(lv)}[{u}] = "
                  f"{self.tile(hv)}[p]; {self.tile(hv)}[p] = tv;")
        self.emit(f"        const int32_t ti = {self.tile(li)}[{u}]; {self.tile(li)}[{u}] = "
                  f"{self.tile(hi)}[p]; {self.tile(hi)}[p] = ti;")
        self.emit("    }")
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

    def i_tinsert(self, op) -> None:
        """dst[o0 + i][o1 + j] = src[i][j] over the source's valid region (default: all)."""
        d, src = op.operands
        (r, c_), C = src.type.shape, d.type.shape[1]
        o0, o1 = (self.ex(o) for o in op.attrs["offsets"])
        valid = op.attrs.get("valid") or [r, c_]
        vr, vc = (f"pp_max(0, pp_min({n}, {self.ex(v)}))" for n, v in zip((r, c_), valid))
        i, j = self.fresh(), self.fresh("j")
        self.emit(f"for (int64_t {i} = 0; {i} < {vr}; {i}++) for (int64_t {j} = 0; {j} < {vc}; "
                  f"{j}++) {self.names[d]}[({o0} + {i}) * {C} + {o1} + {j}] = "
                  f"{self.names[src]}[{i} * {c_} + {j}];")

    def i_pro_only(self, op) -> None:
        """Pro-only instructions (libpypto/ir/tile_ops_more.py): codegen/pro_c_more.py."""
        raise PyptoError(f"C backend: {op.name} is a Pro-mode instruction (its C is the Pro "
                         f"kernel's, codegen/pro_c_more.py)", op.loc)

    def i_sync(self, op) -> None:
        """Synchronisation (libpypto/ir/pro_ops.py): a program run in order on one thread
        already honours it, so it prints as a comment; cross-core events need the Pro runner,
        except in a mixed program for a cluster (ir/mix_ops.py), whose program order is a
        valid order of all its cores' parts."""
        if op.name == "simt_launch":
            raise PyptoError("C backend: a SIMT launch runs only in Pro mode (the Pro runner "
                             "or the Pro C)", op.loc)
        if op.name in ("cross_set", "cross_wait") and not clustered(self.prog):
            raise PyptoError(f"C backend: {op.name} (a cross-core event) runs only on the Pro "
                             f"runner", op.loc)
        self.emit(f"/* {op.name}: ordered by program order */")

    def i_vf(self, op) -> None:
        """Reg instructions (libpypto/ir/reg_ops.py) belong to Pro kernels, whose C is
        codegen/pro_c.py (with pro_vf_c.py); a Tensor-mode program never has one."""
        raise PyptoError(f"C backend: {op.name} (a Reg instruction) runs only in a Pro kernel",
                         op.loc)
