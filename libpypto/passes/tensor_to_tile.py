"""tensor-to-tile: expand every tensor op into a tile kernel by the tile shape recorded on it.

Each compute op becomes a `kernel` over a grid of output tiles (grid variables g0, g1, ...):
copy-in of its operand tiles (`tload`), tile instructions, copy-out (`tstore`) into a GM
workspace tensor. Reductions that span several tiles loop over them into an accumulator;
matmul loops over K in L1-sized steps and L0-sized sub-steps. Writes into parameters
(`assemble`) become copy kernels that later fusion folds into their producers. Grids are
symbolic, so the expansion is linear in the number of ops whatever the tensor sizes.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import CompileError
from ..ir import expr as E
from ..ir import ops as O
from ..ir.core import Document, Op, Value, clone_ops
from ..ir.types import DTYPES, F32, TensorType, TileType


@dataclass
class Home:
    """Where a tensor value lives in GM: a gm tensor, the value's offset in it, valid extents."""

    gm: Value
    offsets: list
    valid: list      # valid extent per dim, measured from the value's origin


def tensor_to_tile(doc: Document, *, target) -> Document:
    """Expand tensor ops into tile kernels (grid of tiles, copy-in, compute, copy-out)."""
    out = Document("tile", attrs={**doc.attrs, "target": target.summary()},
                   producer=list(doc.producer))
    out.body.append(Op("source", regions=[clone_ops(doc.body, {})]))
    x = _Expander(out, target)
    for i, op in enumerate(doc.body):
        x.expand(i, op)
    return out


class _Expander:
    def __init__(self, out: Document, target):
        self.out, self.target = out, target
        self.home: dict[Value, Home] = {}
        self.tile_of: dict[Value, list] = {}
        self.nkernels = 0

    # helpers
    def gm(self, name: str, t: TensorType, attrs: dict, loc=None) -> Value:
        v = Value(t, name)
        self.out.body.append(Op("gm", [], [v], attrs, [], loc))
        return v

    def kernel(self, op: Op, grid: list, body: list, tile) -> None:
        attrs = {"grid": grid, "name": f"k{self.nkernels}", "op": op.name, "tile": tile}
        self.out.body.append(Op("kernel", [], [], attrs, [body], op.loc))
        self.nkernels += 1

    def expand(self, i: int, op: Op) -> None:
        fn = getattr(self, "x_" + op.name, None)
        if fn is None and O.is_elementwise(op.name):
            fn = self.x_elementwise
        if fn is None:
            raise CompileError(f"tensor-to-tile: no tiling rule for op {op.name!r}", op.loc)
        fn(i, op)

    def workspace(self, i: int, op: Op) -> Home:
        v = op.result
        ws = self.gm(f"ws{i}", v.type, {"workspace": True}, op.loc)
        home = Home(ws, [0] * v.type.rank, list(v.type.shape))
        self.home[v] = home
        return home

    # ops
    def x_param(self, i, op):
        v = op.result
        g = self.gm(v.name, v.type, {"param": v.name, "role": op.attrs.get("role", "input"),
                                     "index": op.attrs["index"]}, op.loc)
        self.home[v] = Home(g, [0] * v.type.rank, list(v.type.shape))

    def x_view(self, i, op):
        base = self.home[op.operands[0]]
        offs = op.attrs["offsets"]
        valid = [E.minimum(s, E.sub(lim, o))
                 for s, lim, o in zip(op.attrs["shape"], base.valid, offs)]
        if "valid" in op.attrs:
            valid = [E.minimum(v, a) for v, a in zip(valid, op.attrs["valid"])]
        self.home[op.result] = Home(base.gm, [E.add(b, o) for b, o in zip(base.offsets, offs)],
                                    valid)

    def x_elementwise(self, i, op):
        out_t: TensorType = op.result.type
        tile = _clip(op.attrs["tile"], out_t.shape)
        grid, offs, valid = _grid(out_t.shape, tile, self.valid_of_result(op))
        body = []
        srcs = []
        for v in op.operands:
            srcs.append(self.load_operand(body, v, out_t.shape, tile, offs))
        dst = _tile(body, out_t.dtype, tile)
        attrs = {k: op.attrs[k] for k in ("scalar", "scalar_side") if k in op.attrs}
        body.append(Op("t" + op.name, [dst] + srcs, [], attrs, [], op.loc))
        home = self.workspace(i, op)
        home.valid = list(self.valid_of_result(op))
        _store(body, dst, home, offs, valid, op.loc)
        self.tile_of[op.result] = tile
        self.kernel(op, grid, body, tile)

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
        h = self.home[v]
        r, R = v.type.rank, len(out_shape)
        t_shape, o, val = [], [], []
        for dd in range(r):
            d = dd + R - r
            if v.type.shape[dd] == 1 and out_shape[d] != 1:
                t_shape.append(1)
                o.append(0)
                val.append(1)
            else:
                t_shape.append(tile[d])
                o.append(offs[d])
                val.append(E.minimum(tile[d], E.sub(h.valid[dd], offs[d])))
        t = _tile(body, v.type.dtype, t_shape)
        body.append(Op("tload", [t, h.gm], [], {
            "offsets": [E.add(b, x) for b, x in zip(h.offsets, o)], "valid": val}, [], None))
        return t

    def x_sum(self, i, op):
        self.reduce(i, op)

    x_amax = x_amin = x_sum

    def reduce(self, i, op):
        x = op.operands[0]
        xt: TensorType = x.type
        h = self.home[x]
        dims, keep = op.attrs["dims"], op.attrs["keepdim"]
        tile = _clip(op.attrs["tile"], xt.shape)
        work = F32 if xt.dtype.is_float else xt.dtype
        # grid over the kept dims; reduced dims are walked by loops inside the kernel
        gvars, grid, loops, offs = [], [], [], []
        for d, (s, t) in enumerate(zip(xt.shape, tile)):
            if d in dims:
                n = E.cdiv(s, t)
                if n == 1:
                    offs.append(0)
                else:
                    var = f"r{d}"
                    loops.append((var, n))
                    offs.append(E.mul(E.sym(var), t))
                grid.append(1)
                gvars.append(None)
            else:
                var = f"g{d}"
                n = E.cdiv(s, t)
                grid.append(n)
                gvars.append(var)
                offs.append(E.mul(E.sym(var), t) if n != 1 else 0)
        body: list = []
        red_shape = [1 if d in dims else t for d, t in enumerate(tile)]
        acc = _tile(body, work, red_shape)
        kind = {"sum": "sum", "amax": "max", "amin": "min"}[op.name]
        if loops:
            body.append(Op("texpands", [acc], [], {"value": _identity(kind, work)}, [], op.loc))
        inner: list = []
        xt_tile = _tile(inner, xt.dtype, tile)
        xvalid = [E.minimum(t, E.sub(h.valid[d], offs[d])) for d, t in enumerate(tile)]
        inner.append(Op("tload", [xt_tile, h.gm], [], {
            "offsets": [E.add(b, o) for b, o in zip(h.offsets, offs)], "valid": xvalid}, [], None))
        src = xt_tile
        if work != xt.dtype:
            src = _tile(inner, work, tile)
            inner.append(Op("tcvt", [src, xt_tile], [], {}, [], op.loc))
        red_attrs = {"kind": kind, "dims": list(dims), "valid": xvalid}
        if loops:
            part = _tile(inner, work, red_shape)
            inner.append(Op("treduce", [part, src], [], red_attrs, [], op.loc))
            combine = {"sum": "tadd", "max": "tmaximum", "min": "tminimum"}[kind]
            inner.append(Op(combine, [acc, acc, part], [], {}, [], op.loc))
            for var, n in reversed(loops):
                inner = [Op("for", [], [], {"var": var, "start": 0, "stop": n, "step": 1},
                            [inner], None)]
            body.extend(inner)
        else:
            inner.append(Op("treduce", [acc, src], [], red_attrs, [], op.loc))
            body.extend(inner)
        res = acc
        if work != op.result.type.dtype:
            res = _tile(body, op.result.type.dtype, red_shape)
            body.append(Op("tcvt", [res, acc], [], {}, [], op.loc))
        out_tile = red_shape if keep else [t for d, t in enumerate(red_shape) if d not in dims]
        if not keep:
            sq = _tile(body, op.result.type.dtype, out_tile)
            body.append(Op("treshape", [sq, res], [], {}, [], op.loc))
            res = sq
        home = self.workspace(i, op)
        kept = [d for d in range(xt.rank) if keep or d not in dims]
        home.valid = [1 if d in dims else h.valid[d] for d in kept]
        st_offs = [0 if d in dims else offs[d] for d in kept]
        st_valid = [1 if d in dims else xvalid[d] for d in kept]
        _store(body, res, home, st_offs, st_valid, op.loc)
        self.tile_of[op.result] = out_tile
        grid_out = [g for d, g in enumerate(grid) if keep or d not in dims]
        if not keep:
            body = _rename_grid(body, {f"g{d}": f"g{j}" for j, d in enumerate(kept)})
        self.kernel(op, grid_out, body, out_tile)

    def x_matmul(self, i, op):
        a, b = op.operands
        (M, K), (_, N) = a.type.shape, b.type.shape
        (mL0, _), (kL0, kL1), (nL0, _) = op.attrs["cube"]
        mt, nt = _clip1(mL0, M), _clip1(nL0, N)
        k1t = _clip1(kL1, K)
        k0t = min(kL0, k1t)
        if k1t % k0t:
            raise CompileError(f"matmul: k L0 size {k0t} does not divide the L1 size {k1t}", op.loc)
        ha, hb = self.home[a], self.home[b]
        g0, g1 = E.sym("g0"), E.sym("g1")
        om, on = E.mul(g0, mt), E.mul(g1, nt)
        vm = E.minimum(mt, E.sub(ha.valid[0], om))
        vn = E.minimum(nt, E.sub(hb.valid[1], on))
        kvalid = E.minimum(ha.valid[1], hb.valid[0])
        n1 = E.cdiv(K, k1t)
        k1 = E.sym("k1") if n1 != 1 else 0
        k0 = E.sym("k0") if k1t // k0t != 1 else 0
        work = F32 if a.type.dtype.is_float else DTYPES["i32"]
        body: list = []
        acc = _tile(body, work, [mt, nt])
        l1: list = []
        at = _tile(l1, a.type.dtype, [mt, k1t])
        kv1 = E.minimum(k1t, E.sub(kvalid, E.mul(k1, k1t)))
        l1.append(Op("tload", [at, ha.gm], [], {
            "offsets": [E.add(ha.offsets[0], om), E.add(ha.offsets[1], E.mul(k1, k1t))],
            "valid": [vm, kv1]}, [], None))
        bt = _tile(l1, b.type.dtype, [k1t, nt])
        l1.append(Op("tload", [bt, hb.gm], [], {
            "offsets": [E.add(hb.offsets[0], E.mul(k1, k1t)), E.add(hb.offsets[1], on)],
            "valid": [kv1, vn]}, [], None))
        l0: list = []
        a0 = _tile(l0, a.type.dtype, [mt, k0t])
        l0.append(Op("textract", [a0, at], [], {"offsets": [0, E.mul(k0, k0t)]}, [], None))
        b0 = _tile(l0, b.type.dtype, [k0t, nt])
        l0.append(Op("textract", [b0, bt], [], {"offsets": [E.mul(k0, k0t), 0]}, [], None))
        first = E.logical_and(E.eq(k1, 0), E.eq(k0, 0))
        kv0 = E.minimum(k0t, E.sub(kv1, E.mul(k0, k0t)))
        l0.append(Op("tmatmul", [acc, a0, b0], [], {"init": first, "k_valid": kv0}, [], op.loc))
        if k0 != 0:
            l0 = [Op("for", [], [], {"var": "k0", "start": 0, "stop": k1t // k0t, "step": 1},
                     [l0], None)]
        l1.extend(l0)
        if k1 != 0:
            l1 = [Op("for", [], [], {"var": "k1", "start": 0, "stop": n1, "step": 1}, [l1], None)]
        body.extend(l1)
        home = self.workspace(i, op)
        home.valid = [ha.valid[0], hb.valid[1]]
        _store(body, acc, home, [om, on], [vm, vn], op.loc)
        self.tile_of[op.result] = [mt, nt]
        self.kernel(op, [E.cdiv(M, mt), E.cdiv(N, nt)], body, [mt, nt])

    def x_assemble(self, i, op):
        src, dst = op.operands
        h, hd = self.home[src], self.home[dst]
        tile = self.tile_of.get(src) or op.attrs.get("tile") or _default_tile(src.type, self.target)
        tile = _clip(tile, src.type.shape)
        grid, offs, valid = _grid(src.type.shape, tile, h.valid)
        body: list = []
        t = _tile(body, src.type.dtype, tile)
        body.append(Op("tload", [t, h.gm], [], {
            "offsets": [E.add(b, o) for b, o in zip(h.offsets, offs)], "valid": valid}, [], None))
        dst_offs = [E.add(E.add(b, a), o) for b, a, o in zip(hd.offsets, op.attrs["offsets"], offs)]
        dvalid = [E.minimum(v, E.sub(E.sub(lim, a), o))
                  for v, lim, a, o in zip(valid, hd.valid, op.attrs["offsets"], offs)]
        body.append(Op("tstore", [t, hd.gm], [], {"offsets": dst_offs, "valid": dvalid}, [],
                       op.loc))
        self.kernel(op, grid, body, tile)


def _identity(kind: str, dt) -> float | int:
    if kind == "sum":
        return 0.0 if dt.is_float else 0
    big = float("inf") if dt.is_float else (2 ** (8 * dt.itemsize - 1) - 1)
    return -big if kind == "max" else big


def _clip(tile, shape) -> list:
    return [_clip1(t, s) for t, s in zip(tile, shape)]


def _clip1(t: int, s) -> int:
    return min(t, s) if isinstance(s, int) else t


def _grid(shape, tile, limit) -> tuple[list, list, list]:
    grid = [E.cdiv(s, t) for s, t in zip(shape, tile)]
    offs = [E.mul(E.sym(f"g{d}"), t) if g != 1 else 0 for d, (g, t) in enumerate(zip(grid, tile))]
    valid = [E.minimum(t, E.sub(lim, o)) for t, lim, o in zip(tile, limit, offs)]
    return grid, offs, valid


def _tile(body: list, dt, shape) -> Value:
    v = Value(TileType("any", dt, tuple(int(s) for s in shape)))
    body.append(Op("tile", [], [v], {}, [], None))
    return v


def _store(body, tile, home: Home, offs, valid, loc) -> None:
    body.append(Op("tstore", [tile, home.gm], [], {
        "offsets": [E.add(b, o) for b, o in zip(home.offsets, offs)], "valid": valid}, [], loc))


def _default_tile(t: TensorType, target) -> list:
    """A tile for copies that carry no tile shape: whole rows up to 16 KiB."""
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
            op.attrs = _subst(op.attrs, env)
    return body


def _subst(a, env):
    if isinstance(a, dict):
        return {k: _subst(v, env) for k, v in a.items()}
    if isinstance(a, list):
        return [_subst(v, env) for v in a]
    return E.substitute(a, env) if isinstance(a, E.Expr) else a
