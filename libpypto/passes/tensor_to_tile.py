"""tensor-to-tile: expand every tensor op into a tile kernel by the tile shape recorded on it.

Each compute op becomes a `kernel` over a grid of output tiles (grid variables g0, g1, ...):
copy-in of its operand tiles (`tload`), tile instructions, copy-out (`tstore`) into a GM
workspace tensor. Reductions and scans that span several tiles loop over them with an
accumulator (a carry); matmul loops over K in L1-sized steps and L0-sized sub-steps; sorts
work on whole rows. Writes into parameters and locals (`assemble`) become copy kernels that
later fusion folds into their producers. `loop` and `if` regions stay regions, with kernels
inside. Grids are symbolic, so the expansion is linear in the number of ops whatever the
tensor sizes.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import CompileError
from ..ir import expr as E
from ..ir.core import Document, Op, Value, clone_ops
from ..ir.defs import OPS
from ..ir.types import DTYPES, F32, I64, TensorType, TileType
from .grids import _clip, _clip1, _count, _grid
from .reshape_rows import merges_leading, reshape_blocks
from .sort_tiles import bitonic_kernel


@dataclass
class Home:
    """Where a tensor value lives in GM: a gm tensor, the value's offset in it, valid extents."""

    gm: Value
    offsets: list
    valid: list      # valid extent per dim, measured from the value's origin


def tensor_to_tile(doc: Document, *, target) -> Document:
    """Expand tensor ops into tile kernels (grid of tiles, copy-in, compute, copy-out)."""
    out = Document("tile", attrs={**doc.attrs, "target": target.record()},
                   producer=list(doc.producer))
    out.body.append(Op("source", regions=[clone_ops(doc.body, {})]))
    x = _Expander(out, target)
    for name, info in doc.attrs.get("symbols", {}).items():
        if "max" in info:             # compiled for 1 <= name <= max (analysis/versions.py)
            x.ranges[name] = (1, info["max"])
    x.region(doc.body, out.body)
    out.body[1:1] = x.gms              # GM tensors after the source, in order of creation
    return out


class _Expander:
    def __init__(self, out: Document, target):
        self.out, self.target = out, target
        self.home: dict[Value, Home] = {}
        self.tile_of: dict[Value, list] = {}
        self.nkernels = 0
        self.nws = 0
        self.dest: list = out.body
        self.gms: list = []           # the gm ops, placed after the source at the end
        self.checks_at = 0            # where the current region's checks go (its start)
        self.ranges: dict = {}        # loop var -> (first, last) where both are ints; a
        #                               bounded size symbol -> (1, max)
        self.loc = None               # location of the op being expanded

    # helpers
    def gm(self, name: str, t: TensorType, attrs: dict, loc=None) -> Value:
        v = Value(t, name)
        self.gms.append(Op("gm", [], [v], attrs, [], loc))
        return v

    def kernel(self, op: Op, grid: list, body: list, tile) -> None:
        attrs = {"grid": grid, "name": f"k{self.nkernels}", "op": op.name, "tile": tile}
        if op.attrs.get("label") is not None:
            attrs["label"] = op.attrs["label"]
        if op.attrs.get("scope") is not None:        # sg_set_scope: fuse keeps scopes apart
            attrs["scope"] = list(op.attrs["scope"])
        self.dest.append(Op("kernel", [], [], attrs, [body], op.loc))
        self.nkernels += 1

    def region(self, ops: list, dest: list) -> None:
        saved, self.dest = (self.dest, self.checks_at), dest
        self.checks_at = len(dest)
        for op in ops:
            self.expand(op)
        self.dest, self.checks_at = saved

    def expand(self, op: Op) -> None:
        """Expand op by the tiling rule its definition names (libpypto/ir/tensor_ops.py)."""
        self.loc = op.loc
        d = OPS.get(op.name)
        if d is None or "tile" not in d.impl:
            raise CompileError(f"tensor-to-tile: no tiling rule for op {op.name!r}", op.loc)
        getattr(self, d.impl["tile"])(op)

    def workspace(self, op: Op, i: int = 0) -> Home:
        v = op.results[i]
        ws = self.gm(f"ws{self.nws}", v.type, {"workspace": True}, op.loc)
        self.nws += 1
        home = Home(ws, [0] * v.type.rank, list(v.type.shape))
        self.home[v] = home
        return home

    def load(self, body: list, v: Value, t_shape: list, offs: list, valid: list,
             dtype=None) -> Value:
        """tload of value v's tile at offsets offs (relative to v) with valid extents."""
        h = self.home[v]
        t = _tile(body, dtype or v.type.dtype, t_shape)
        body.append(Op("tload", [t, h.gm], [], {
            "offsets": [E.add(b, o) for b, o in zip(h.offsets, offs)], "valid": valid}, [],
            self.loc))
        return t

    def store(self, body: list, tile: Value, home: Home, offs: list, valid: list, loc) -> None:
        body.append(Op("tstore", [tile, home.gm], [], {
            "offsets": [E.add(b, o) for b, o in zip(home.offsets, offs)], "valid": valid}, [],
            loc))

    def valid_in(self, v: Value, offs: list, tile: list) -> list:
        h = self.home[v]
        return [E.minimum(t, E.sub(lim, o)) for t, lim, o in zip(tile, h.valid, offs)]

    # memory and control flow
    def x_param(self, op):
        v = op.result
        g = self.gm(v.name, v.type, {"param": v.name, "role": op.attrs.get("role", "input"),
                                     "index": op.attrs["index"]}, op.loc)
        self.home[v] = Home(g, [0] * v.type.rank, list(v.type.shape))

    def x_tensor(self, op):
        v = op.result
        g = self.gm(v.name, v.type, {"local": v.name}, op.loc)
        self.home[v] = Home(g, [0] * v.type.rank, list(v.type.shape))

    def x_check(self, op):
        """A size check stays a check, at the start of its region (it depends on sizes and
        loop indices only, not on data, so it can go first: it never splits fusion)."""
        self.dest.insert(self.checks_at, Op("check", [], [], dict(op.attrs), [], op.loc))
        self.checks_at += 1

    def x_read(self, op):
        """A read goes with the checks, to the start of its region (it reads an input no
        kernel writes, so it can go first and never splits fusion)."""
        self.dest.insert(self.checks_at, Op("read", [], [], dict(op.attrs), [], op.loc))
        self.checks_at += 1

    def x_probe(self, op):
        """pass_verify_print / _save act on the tensor level only (frontend/verify.py)."""

    def x_loop(self, op):
        new = Op("loop", [], [], dict(op.attrs), [[]], op.loc)
        self.dest.append(new)
        a = op.attrs
        if all(isinstance(a[k], int) for k in ("start", "stop", "step")) and a["stop"] > a["start"]:
            last = a["start"] + (a["stop"] - a["start"] - 1) // a["step"] * a["step"]
            self.ranges[a["var"]] = (a["start"], last)
        self.region(op.regions[0], new.regions[0])
        self.ranges.pop(a["var"], None)

    def x_if(self, op):
        new = Op("if", [], [], dict(op.attrs), [[], []], op.loc)
        self.dest.append(new)
        self.region(op.regions[0], new.regions[0])
        self.region(op.regions[1], new.regions[1])

    def x_view(self, op):
        base = self.home[op.operands[0]]
        offs = op.attrs["offsets"]
        valid = [E.minimum(s, E.sub(lim, o))
                 for s, lim, o in zip(op.attrs["shape"], base.valid, offs)]
        if "valid" in op.attrs:
            valid = [E.minimum(v, a) for v, a in zip(valid, op.attrs["valid"])]
        valid = [E.simplify_in(v, self.ranges) for v in valid]
        self.home[op.result] = Home(base.gm, [E.add(b, o) for b, o in zip(base.offsets, offs)],
                                    valid)

    # elementwise
    def x_elementwise(self, op):
        out_t: TensorType = op.result.type
        tile = _clip(op.attrs["tile"], out_t.shape)
        limit = self.valid_of_result(op)
        grid, offs, valid = _grid(out_t.shape, tile, limit, self.ranges)
        body: list = []
        srcs = [self.load_operand(body, v, out_t.shape, tile, offs) for v in op.operands]
        dst = _tile(body, out_t.dtype, tile)
        attrs = {k: op.attrs[k] for k in ("scalar", "scalar_side", "mode", "sat")
                 if k in op.attrs}
        name = "tcvt" if op.name == "cast" else "t" + op.name
        body.append(Op(name, [dst] + srcs, [], attrs, [], op.loc))
        self.finish(op, body, dst, grid, tile, offs, valid, limit)

    def valid_of_result(self, op) -> list:
        """Valid extents of an elementwise result: the smallest of its non-broadcast operands."""
        shape = list(op.result.type.shape)
        valid = list(shape)
        for v in op.operands:
            h = self.home[v]
            r = len(h.valid)
            for d in range(len(shape)):
                dd = d - (len(shape) - r)
                if dd >= 0 and not (v.type.shape[dd] == 1 and shape[d] != 1):
                    valid[d] = E.minimum(valid[d], h.valid[dd])
        return valid

    def load_operand(self, body, v: Value, out_shape, tile, offs) -> Value:
        """Load the operand tile matching the output tile at offs (broadcast dims collapse)."""
        r, R = v.type.rank, len(out_shape)
        t_shape, o = [], []
        for dd in range(r):
            d = dd + R - r
            if v.type.shape[dd] == 1 and out_shape[d] != 1:
                t_shape.append(1)
                o.append(0)
            else:
                t_shape.append(tile[d])
                o.append(offs[d])
        return self.load(body, v, t_shape, o, self.valid_in(v, o, t_shape))

    def finish(self, op, body, dst, grid, tile, offs, valid, limit) -> None:
        """Store the result tile into the op's workspace (valid up to limit) and emit the
        kernel: the common end of kernels whose output tile sits at offs."""
        home = self.workspace(op)
        home.valid = limit
        self.store(body, dst, home, offs, valid, op.loc)
        self.tile_of[op.result] = tile
        self.kernel(op, grid, body, tile)

    def map_kernel(self, op, limit: list, make, src: Value | None = None) -> None:
        """A kernel whose output tile at offs needs only the same tile of src (if any):
        load it, make(dst, src tile, offs) the instruction, store into a workspace."""
        t = op.result.type
        tile = _clip(op.attrs["tile"], t.shape)
        grid, offs, valid = _grid(t.shape, tile, limit, self.ranges)
        body: list = []
        loaded = self.load(body, src, tile, offs, valid) if src is not None else None
        dst = _tile(body, t.dtype, tile)
        body.append(make(dst, loaded, offs))
        self.finish(op, body, dst, grid, tile, offs, valid, limit)

    def x_full(self, op):
        self.map_kernel(op, list(op.result.type.shape), lambda dst, _, offs: Op(
            "texpands", [dst], [], {"value": op.attrs["value"]}, [], op.loc))

    def x_arange(self, op):
        self.map_kernel(op, list(op.result.type.shape), lambda dst, _, offs: Op(
            "tiota", [dst], [], {"start": op.attrs["start"], "step": op.attrs["step"],
                                 "offset": offs[0]}, [], op.loc))

    def x_uniform(self, op):
        a = op.attrs
        self.map_kernel(op, list(op.result.type.shape), lambda dst, _, offs: Op(
            "tuniform", [dst], [], {"offsets": list(offs), "shape": list(op.result.type.shape),
                                    "key": a["key"], "counter": a["counter"],
                                    "rounds": a["rounds"]}, [], op.loc))

    def x_bitcast(self, op):
        """Output tiles of t elements in the last dim, each the bytes of t * out / in source
        elements (the other dims tile alike)."""
        x, t = op.operands[0], op.result.type
        tile = _clip(op.attrs["tile"], t.shape)
        k = tile[-1] * t.dtype.itemsize // x.type.dtype.itemsize
        grid, offs, valid = _grid(t.shape, tile, list(t.shape), self.ranges)
        s_tile = tile[:-1] + [k]
        s_offs = offs[:-1] + [E.floordiv(E.mul(offs[-1], t.dtype.itemsize),
                                         x.type.dtype.itemsize)]
        body: list = []
        src = self.load(body, x, s_tile, s_offs, self.valid_in(x, s_offs, s_tile))
        dst = _tile(body, t.dtype, tile)
        body.append(Op("tbitcast", [dst, src], [], {}, [], op.loc))
        self.finish(op, body, dst, grid, tile, offs, valid, list(t.shape))

    def x_tril(self, op):
        x = op.operands[0]
        self.map_kernel(op, list(self.home[x].valid), lambda dst, src, offs: Op(
            "ttri", [dst, src], [], {"lower": op.name == "tril", "diagonal": op.attrs["diagonal"],
                                     "row0": offs[-2], "col0": offs[-1]}, [], op.loc), x)

    x_triu = x_tril

    # reductions
    def _reduce_frame(self, op, dims):
        """Grid over the kept dims, loops over tiles of the reduced dims."""
        x = op.operands[0]
        xt: TensorType = x.type
        tile = _clip(op.attrs["tile"], xt.shape)
        grid, loops, offs = [], [], []
        for d, (s, t) in enumerate(zip(xt.shape, tile)):
            n = _count(s, t, self.ranges)
            if d in dims:
                grid.append(1)
                if n == 1:
                    offs.append(0)
                else:
                    loops.append((f"r{d}", n))
                    offs.append(E.mul(E.sym(f"r{d}"), t))
            else:
                grid.append(n)
                offs.append(E.mul(E.sym(f"g{d}"), t) if n != 1 else 0)
        return x, xt, tile, grid, loops, offs

    def _finish_reduce(self, op, body, res, dims, keep, grid, offs, xvalid, red_shape):
        x = op.operands[0]
        h = self.home[x]
        out_dt = op.result.type.dtype
        if res.type.dtype != out_dt:
            cv = _tile(body, out_dt, red_shape)
            body.append(Op("tcvt", [cv, res], [], {}, [], op.loc))
            res = cv
        out_tile = red_shape if keep else [t for d, t in enumerate(red_shape) if d not in dims]
        if not keep:
            sq = _tile(body, out_dt, out_tile)
            body.append(Op("treshape", [sq, res], [], {}, [], op.loc))
            res = sq
        home = self.workspace(op)
        kept = [d for d in range(x.type.rank) if keep or d not in dims]
        home.valid = [1 if d in dims else h.valid[d] for d in kept]
        st_offs = [0 if d in dims else offs[d] for d in kept]
        st_valid = [1 if d in dims else xvalid[d] for d in kept]
        self.store(body, res, home, st_offs, st_valid, op.loc)
        self.tile_of[op.result] = out_tile
        grid_out = [g for d, g in enumerate(grid) if keep or d not in dims]
        if not keep:
            body = _rename_grid(body, {f"g{d}": f"g{j}" for j, d in enumerate(kept)})
        self.kernel(op, grid_out, body, out_tile)

    def reduce(self, op, kind: str):
        dims, keep = op.attrs["dims"], op.attrs["keepdim"]
        x, xt, tile, grid, loops, offs = self._reduce_frame(op, dims)
        work = F32 if xt.dtype.is_float else I64
        body: list = []
        red_shape = [1 if d in dims else t for d, t in enumerate(tile)]
        acc = _tile(body, work, red_shape)
        if loops:
            body.append(Op("texpands", [acc], [], {"value": _identity(kind, work)}, [], op.loc))
        inner: list = []
        xvalid = self.valid_in(x, offs, tile)
        src = self.load(inner, x, tile, offs, xvalid)
        if work != xt.dtype:
            cv = _tile(inner, work, tile)
            inner.append(Op("tcvt", [cv, src], [], {}, [], op.loc))
            src = cv
        red_attrs = {"kind": kind, "dims": list(dims), "valid": xvalid}
        if loops:
            part = _tile(inner, work, red_shape)
            inner.append(Op("treduce", [part, src], [], red_attrs, [], op.loc))
            combine = {"sum": "tadd", "prod": "tmul", "max": "tmaximum", "min": "tminimum"}[kind]
            inner.append(Op(combine, [acc, acc, part], [], {}, [], op.loc))
            body.extend(_nest(inner, loops))
        else:
            inner.append(Op("treduce", [acc, src], [], red_attrs, [], op.loc))
            body.extend(inner)
        self._finish_reduce(op, body, acc, dims, keep, grid, offs, xvalid, red_shape)

    def x_sum(self, op):
        self.reduce(op, "sum")

    def x_prod(self, op):
        self.reduce(op, "prod")

    def x_amax(self, op):
        self.reduce(op, "max")

    def x_amin(self, op):
        self.reduce(op, "min")

    def x_argmax(self, op):
        dims, keep = op.attrs["dims"], op.attrs["keepdim"]
        x, xt, tile, grid, loops, offs = self._reduce_frame(op, dims)
        d = dims[0]
        body: list = []
        red_shape = [1 if i == d else t for i, t in enumerate(tile)]
        work = F32 if xt.dtype.is_float else I64
        acc_v = _tile(body, work, red_shape)
        acc_i = _tile(body, I64, red_shape)
        inner: list = []
        xvalid = self.valid_in(x, offs, tile)
        src = self.load(inner, x, tile, offs, xvalid)
        first = E.eq(E.sym(loops[0][0]), 0) if loops else 1
        inner.append(Op("targreduce", [acc_v, acc_i, src], [], {
            "kind": "max" if op.name == "argmax" else "min", "dim": d, "valid": xvalid,
            "base": offs[d], "init": first}, [], op.loc))
        body.extend(_nest(inner, loops))
        self._finish_reduce(op, body, acc_i, dims, keep, grid, offs, xvalid, red_shape)

    x_argmin = x_argmax

    def x_cumsum(self, op):
        d = op.attrs["dim"]
        x, xt, tile, grid, loops, offs = self._reduce_frame(op, [d])
        grid[d] = 1
        body: list = []
        work = F32 if xt.dtype.is_float else I64
        carry = _tile(body, work, [1 if i == d else t for i, t in enumerate(tile)])
        inner: list = []
        xvalid = self.valid_in(x, offs, tile)
        src = self.load(inner, x, tile, offs, xvalid)
        dst = _tile(inner, xt.dtype, tile)
        first = E.eq(E.sym(loops[0][0]), 0) if loops else 1
        inner.append(Op("tscan", [dst, src, carry], [], {
            "kind": "sum" if op.name == "cumsum" else "prod", "dim": d, "valid": xvalid,
            "init": first}, [], op.loc))
        home = self.workspace(op)
        home.valid = list(self.home[x].valid)
        self.store(inner, dst, home, offs, xvalid, op.loc)
        body.extend(_nest(inner, loops))
        self.tile_of[op.result] = tile
        self.kernel(op, grid, body, tile)

    x_cumprod = x_cumsum

    # sorts
    def x_sort(self, op):
        x = op.operands[0]
        xt = x.type
        tile = _clip(op.attrs["tile"], xt.shape)
        tile[-1] = xt.shape[-1]
        grid, offs, _ = _grid(list(xt.shape[:-1]) + [1], tile[:-1] + [1],
                              list(xt.shape[:-1]) + [1], self.ranges)
        body: list = []
        xvalid = self.valid_in(x, offs, tile)
        src = self.load(body, x, tile, offs, xvalid)
        vals = _tile(body, xt.dtype, tile)
        idx = _tile(body, I64, tile)
        desc = op.attrs.get("largest", op.attrs.get("descending", False))
        body.append(Op("tsort", [vals, idx, src], [], {"descending": bool(desc),
                                                       "valid": xvalid}, [], op.loc))
        k = op.attrs.get("k", xt.shape[-1])
        out_idx = op.results[-1].type.dtype
        if out_idx != I64:                # the sort's i64 indices in the output's dtype
            cv = _tile(body, out_idx, tile)
            body.append(Op("tcvt", [cv, idx], [], {}, [], op.loc))
            idx = cv
        outs = [vals, idx] if op.name != "argsort" else [idx]
        for i, t in enumerate(outs):
            home = self.workspace(op, i)
            st_valid = xvalid[:-1] + [k]
            self.store(body, t, home, offs, st_valid, op.loc)
            self.tile_of[op.results[i]] = tile[:-1] + [k]
        self.kernel(op, grid, body, tile)

    x_topk = x_argsort = x_sort

    def x_bitonic(self, op):        # a sort longer than a tile (passes/sort_tiles.py)
        bitonic_kernel(self, op)

    # matmul
    def x_matmul(self, op):
        a, b = op.operands
        m = self._mm_frame(op)
        work = F32 if a.type.dtype.is_float else DTYPES["i32"]
        body: list = []
        acc = _tile(body, work, [m.mt, m.nt])
        body.extend(self._mm_k_steps(op, m, acc))
        out_t: TensorType = op.result.type
        hb = self.home[b]
        home = self.workspace(op)
        home.valid = list(out_t.shape[:m.nb]) + [m.a_valid[-1] if m.at else m.a_valid[-2],
                                                 hb.valid[-2] if m.bt else hb.valid[-1]]
        st_offs = m.gvar[:m.nb] + [m.om, m.on]
        st_valid = [1] * m.nb + [m.vm, m.vn]
        self.store(body, acc, home, st_offs, st_valid, op.loc)
        self.tile_of[op.result] = [1] * m.nb + [m.mt, m.nt]
        self.kernel(op, m.grid, body, [1] * m.nb + [m.mt, m.nt])

    def _mm_frame(self, op) -> "_Matmul":
        """Tile sizes, grid, offsets and valid extents of a matmul kernel (M, N tiles; K in
        L1 steps k1 of k1t and L0 sub-steps k0 of k0t)."""
        a, b = op.operands
        out_t: TensorType = op.result.type
        at, bt = op.attrs.get("a_trans", False), op.attrs.get("b_trans", False)
        sa, sb = list(a.type.shape), list(b.type.shape)
        M, K = (sa[-1], sa[-2]) if at else (sa[-2], sa[-1])
        N = sb[-2] if bt else sb[-1]
        (mL0, _), (kL0, kL1), (nL0, _) = op.attrs["cube"]
        mt, nt = _clip1(mL0, M), _clip1(nL0, N)
        k1t = _clip1(kL1, K)
        k0t = min(kL0, k1t)
        if k1t % k0t:
            raise CompileError(f"matmul: k L0 size {k0t} does not divide the L1 size {k1t}", op.loc)
        nb = out_t.rank - 2
        gvar = [E.sym(f"g{i}") for i in range(out_t.rank)]
        grid = list(out_t.shape[:nb]) + [_count(M, mt, self.ranges), _count(N, nt, self.ranges)]
        a_valid, hb = self.home[a].valid, self.home[b]
        # a dim covered by one tile has offset 0, as elementwise kernels number it (fusion
        # compares footprints)
        om = E.mul(gvar[nb], mt) if grid[nb] != 1 else 0
        on = E.mul(gvar[nb + 1], nt) if grid[nb + 1] != 1 else 0
        n1 = _count(K, k1t, self.ranges)
        k1 = E.sym("k1") if n1 != 1 else 0
        k0 = E.sym("k0") if k1t // k0t != 1 else 0
        ko = E.mul(k1, k1t)
        vm = E.minimum(mt, E.sub(a_valid[-1] if at else a_valid[-2], om))
        vn = E.minimum(nt, E.sub(hb.valid[-2] if bt else hb.valid[-1], on))
        kvalid = E.minimum(a_valid[-2] if at else a_valid[-1], hb.valid[-1] if bt else hb.valid[-2])
        kv1 = E.minimum(k1t, E.sub(kvalid, ko))
        return _Matmul(at, bt, nb, gvar, grid, mt, nt, k1t, k0t, n1, k1, k0, ko, om, on, vm, vn,
                       kv1, a_valid)

    def _mm_k_steps(self, op, m: "_Matmul", acc: Value) -> list:
        """The walk over K: load A and B into L1 per k1 step, extract into L0A / L0B and
        accumulate per k0 sub-step (each a loop when it has more than one step)."""
        a, b = op.operands
        out_t: TensorType = op.result.type
        l1: list = []
        ba = _batch_offs(a, out_t, m.gvar)
        a_offs = ba + ([m.ko, m.om] if m.at else [m.om, m.ko])
        a_shape = [1] * len(ba) + ([m.k1t, m.mt] if m.at else [m.mt, m.k1t])
        a_val = [1] * len(ba) + ([m.kv1, m.vm] if m.at else [m.vm, m.kv1])
        a_l1 = self.load(l1, a, a_shape, a_offs, a_val)
        bb = _batch_offs(b, out_t, m.gvar)
        b_offs = bb + ([m.on, m.ko] if m.bt else [m.ko, m.on])
        b_shape = [1] * len(bb) + ([m.nt, m.k1t] if m.bt else [m.k1t, m.nt])
        b_val = [1] * len(bb) + ([m.vn, m.kv1] if m.bt else [m.kv1, m.vn])
        b_l1 = self.load(l1, b, b_shape, b_offs, b_val)
        l0: list = []
        kk = E.mul(m.k0, m.k0t)
        a0 = _tile(l0, a.type.dtype, [m.mt, m.k0t])
        l0.append(Op("textract", [a0, a_l1], [], {"offsets": [kk, 0] if m.at else [0, kk],
                                                   "trans": bool(m.at)}, [], op.loc))
        b0 = _tile(l0, b.type.dtype, [m.k0t, m.nt])
        l0.append(Op("textract", [b0, b_l1], [], {"offsets": [0, kk] if m.bt else [kk, 0],
                                                   "trans": bool(m.bt)}, [], op.loc))
        first = E.logical_and(E.eq(m.k1, 0), E.eq(m.k0, 0))
        kv0 = E.minimum(m.k0t, E.sub(m.kv1, kk))
        l0.append(Op("tmatmul", [acc, a0, b0], [], {"init": first, "k_valid": kv0}, [], op.loc))
        if m.k0 != 0:
            l0 = [Op("for", [], [], {"var": "k0", "start": 0, "stop": m.k1t // m.k0t, "step": 1},
                     [l0])]
        l1.extend(l0)
        if m.k1 != 0:
            l1 = [Op("for", [], [], {"var": "k1", "start": 0, "stop": m.n1, "step": 1}, [l1])]
        return l1

    # shapes
    def x_assemble(self, op):
        src, dst = op.operands
        h, hd = self.home[src], self.home[dst]
        tile = self.tile_of.get(src) or op.attrs.get("tile") or _default_tile(src.type)
        tile = _clip(tile, src.type.shape)
        grid, offs, valid = _grid(src.type.shape, tile, h.valid, self.ranges)
        body: list = []
        t = self.load(body, src, tile, offs, valid)
        dst_offs = [E.add(a, o) for a, o in zip(op.attrs["offsets"], offs)]
        dvalid = [E.minimum(v, E.sub(E.sub(lim, a), o))
                  for v, lim, a, o in zip(valid, hd.valid, op.attrs["offsets"], offs)]
        self.store(body, t, hd, dst_offs, dvalid, op.loc)
        self.kernel(op, grid, body, tile)
        for d, (a, v, lim) in enumerate(zip(op.attrs["offsets"], h.valid, hd.valid)):
            end = E.add(a, v)
            what = f"assemble writes [{E.to_str(a)}:{E.to_str(end)}] in dim {d} of {dst.name}, " \
                   f"which has size {E.to_str(lim)}"
            self.require(a, 0, what, op.loc)            # 0 <= offset
            self.require(lim, end, what, op.loc)        # offset + valid extent <= size

    def require(self, big, small, what: str, loc) -> None:
        """small <= big for every size: refused now if it never holds, checked when the sizes
        are bound (a `check` op) unless it always holds. The store clips to the destination,
        so without this the data past its end would be dropped silently."""
        slack = E.sub(big, small)
        if isinstance(slack, int) and slack < 0:
            raise CompileError(what, loc)
        # big - (a + min(x, y)) = max(big - a - x, big - a - y): holds if either part does
        lows = [E.bounds(E.sub(big, alt), self.ranges)[0] for alt in _min_parts(small)]
        low = max((x for x in lows if x is not None), default=None)
        if low is None or low < 0:
            self.x_check(Op("check", [], [], {"cond": E.le(small, big), "what": what}, [], loc))

    def x_permute(self, op):
        x = op.operands[0]
        perm = op.attrs["perm"]
        out_t = op.result.type
        tile = _clip(op.attrs["tile"], out_t.shape)
        limit = [self.home[x].valid[p] for p in perm]
        grid, offs, valid = _grid(out_t.shape, tile, limit, self.ranges)
        body: list = []
        s_shape, s_offs = [0] * len(perm), [0] * len(perm)
        for i, p in enumerate(perm):
            s_shape[p], s_offs[p] = tile[i], offs[i]
        src = self.load(body, x, s_shape, s_offs, self.valid_in(x, s_offs, s_shape))
        dst = _tile(body, out_t.dtype, tile)
        body.append(Op("ttrans", [dst, src], [], {"perm": list(perm)}, [], op.loc))
        self.finish(op, body, dst, grid, tile, offs, valid, limit)

    def x_reshape(self, op):
        x = op.operands[0]
        sin, sout = list(x.type.shape), list(op.result.type.shape)
        p = 0
        while p < min(len(sin), len(sout)) - 1 and sin[p] == sout[p]:
            p += 1
        rest_in, rest_out = sin[p:], sout[p:]
        if p == 0 and merges_leading(self, op, sin, sout):
            return
        cap = self.target.buffer("ub") // 8            # else by blocks (reshape_rows.py)
        static = all(isinstance(d, int) for d in rest_in + rest_out)
        if (not static or _prod(rest_in) * x.type.dtype.itemsize > cap) and \
                reshape_blocks(self, op, cap):
            return
        if not static:
            raise CompileError(f"reshape {_fmt(sin)} -> {_fmt(sout)}: the reshaped trailing dims "
                               f"must be static (only the leading dims may be symbolic)", op.loc)
        grid = [sin[d] for d in range(p)]
        gv = [E.sym(f"g{d}") for d in range(p)]
        body: list = []
        t_in = [1] * p + rest_in
        # kept leading dims: only rows of x's valid region (a view with a tail) are copied
        hv = self.home[x].valid
        lead = [1 if hv[d] == sin[d] else E.minimum(1, E.sub(hv[d], gv[d])) for d in range(p)]
        src = self.load(body, x, t_in, gv + [0] * len(rest_in), lead + list(rest_in))
        dst = _tile(body, op.result.type.dtype, [1] * p + rest_out)
        body.append(Op("treshape", [dst, src], [], {}, [], op.loc))
        home = self.workspace(op)
        home.valid = list(self.home[x].valid[:p]) + list(rest_out)
        self.store(body, dst, home, gv + [0] * len(rest_out), lead + list(rest_out), op.loc)
        self.tile_of[op.result] = [1] * p + rest_out
        self.kernel(op, grid, body, [1] * p + rest_out)

    # indexing: GM-direct reads and sequential GM-direct writes
    def _region_of(self, v: Value) -> dict:
        h = self.home[v]
        return {"region_offsets": list(h.offsets), "region_shape": list(v.type.shape)}

    def x_gather(self, op):
        x, idx = op.operands
        self.map_kernel(op, list(self.home[idx].valid), lambda dst, it, offs: Op(
            "tgather", [dst, self.home[x].gm, it], [], {
                "dim": op.attrs["dim"], "mode": "gather", "out_offsets": offs,
                **self._region_of(x)}, [], op.loc), idx)

    def x_index_select(self, op):
        x, idx = op.operands
        d = op.attrs["dim"]
        out_t = op.result.type
        tile = _clip(op.attrs["tile"], out_t.shape)
        grid, offs, valid = _grid(out_t.shape, tile, list(out_t.shape), self.ranges)
        body: list = []
        it = self.load(body, idx, [tile[d]], [offs[d]], [valid[d]])
        dst = _tile(body, out_t.dtype, tile)
        body.append(Op("tgather", [dst, self.home[x].gm, it], [], {
            "dim": d, "mode": "select", "out_offsets": offs, **self._region_of(x)}, [], op.loc))
        self.store(body, dst, self.workspace(op), offs, valid, op.loc)
        self.tile_of[op.result] = tile
        self.kernel(op, grid, body, tile)

    def _copy_into_new(self, op, src: Value) -> Home:
        """A parallel copy of src into the op's fresh workspace (the base of scatters)."""
        tile = _clip(op.attrs.get("tile") or _default_tile(src.type), src.type.shape)
        grid, offs, valid = _grid(src.type.shape, tile, self.home[src].valid, self.ranges)
        body: list = []
        t = self.load(body, src, tile, offs, valid)
        home = self.workspace(op)
        self.store(body, t, home, offs, valid, op.loc)
        self.kernel(Op("copy", loc=op.loc), grid, body, tile)
        return home

    def x_scatter(self, op):
        x, idx = op.operands[0], op.operands[1]
        home = self._copy_into_new(op, x)
        operands = [home.gm, self.home[idx].gm]
        attrs = {"dim": op.attrs["dim"], "reduce": op.attrs["reduce"], "mode": "scatter",
                 "out_region": {"region_offsets": home.offsets,
                                "region_shape": list(x.type.shape)},
                 "index_region": self._region_of(idx)}
        if len(op.operands) > 2:
            operands.append(self.home[op.operands[2]].gm)
            attrs["src_region"] = self._region_of(op.operands[2])
        else:
            attrs["value"] = op.attrs["value"]
        self.kernel(op, [], [Op("tscatter", operands, [], attrs, [], op.loc)], [])

    def x_index_add(self, op):
        x, idx, src = op.operands
        home = self._copy_into_new(op, x)
        attrs = {"dim": op.attrs["dim"], "reduce": "add", "mode": "index_add",
                 "alpha": op.attrs["alpha"],
                 "out_region": {"region_offsets": home.offsets,
                                "region_shape": list(x.type.shape)},
                 "index_region": self._region_of(idx), "src_region": self._region_of(src)}
        self.kernel(op, [], [Op("tscatter", [home.gm, self.home[idx].gm, self.home[src].gm], [],
                                attrs, [], op.loc)], [])


@dataclass
class _Matmul:
    """The frame of a matmul kernel (see _Expander._mm_frame)."""

    at: bool
    bt: bool
    nb: int              # batch dims of the output
    gvar: list
    grid: list
    mt: int
    nt: int
    k1t: int
    k0t: int
    n1: object           # number of L1 steps over K
    k1: object           # L1 step variable (0 when one step)
    k0: object           # L0 sub-step variable (0 when one sub-step)
    ko: object           # K offset of the L1 step
    om: object
    on: object
    vm: object
    vn: object
    kv1: object          # valid K extent of the L1 step
    a_valid: list


def _batch_offs(v: Value, out_t: TensorType, gvar: list) -> list:
    """Batch offsets of a matmul operand: the output's grid variable, 0 where broadcast."""
    nb = out_t.rank - 2
    offs = []
    for j in range(v.type.rank - 2):
        d = j + nb - (v.type.rank - 2)
        offs.append(0 if v.type.shape[j] == 1 and out_t.shape[d] != 1 else gvar[d])
    return offs


def _min_parts(e) -> list:
    """e as the min of these: a + min(x, y) is min(a + x, a + y); anything else is itself."""
    if isinstance(e, E.Expr) and e.op == "min":
        return list(e.args)
    if isinstance(e, E.Expr) and e.op == "add":
        mins = [t for t in e.args if isinstance(t, E.Expr) and t.op == "min"]
        if len(mins) == 1:
            rest = E.add(*[t for t in e.args if t is not mins[0]])
            return [E.add(rest, x) for x in mins[0].args]
    return [e]


def _nest(inner: list, loops: list) -> list:
    for var, n in reversed(loops):
        inner = [Op("for", [], [], {"var": var, "start": 0, "stop": n, "step": 1}, [inner])]
    return inner


def _fmt(shape) -> str:
    return "[" + ", ".join(E.to_str(d) for d in shape) + "]"


def _identity(kind: str, dt) -> float | int:
    if kind == "sum":
        return 0.0 if dt.is_float else 0
    if kind == "prod":
        return 1.0 if dt.is_float else 1
    big = float("inf") if dt.is_float else (2 ** (8 * dt.itemsize - 1) - 1)
    return -big if kind == "max" else big


def _tile(body: list, dt, shape) -> Value:
    v = Value(TileType("any", dt, tuple(int(s) for s in shape)))
    body.append(Op("tile", [], [v], {}, [], None))
    return v


def _default_tile(t: TensorType) -> list:
    """A tile for copies that carry no tile shape: whole rows up to 16 KiB."""
    if not t.shape:
        return []
    last = t.shape[-1]
    per_row = 16384 // t.dtype.itemsize
    cols = min(last, per_row) if isinstance(last, int) else per_row
    return [1] * (t.rank - 1) + [cols]


def _rename_grid(body: list, names: dict) -> list:
    env = {k: E.sym(v) for k, v in names.items() if k != v}
    if not env:
        return body
    for top in body:
        for op in top.walk():
            op.attrs = E.substitute_attrs(op.attrs, env)
    return body



def _prod(dims) -> int:
    out = 1
    for d in dims:
        out *= d
    return out
