"""The register namespace `Vf` (`from libpypto.pro import Vf as vf`) and
`@pl.vector_function`: each Vf method checks its operands and records one Reg instruction
(ir/reg_ops.py) on the V pipe. Semantics, choices and the list of what is and is not built:
vf.py's docstring."""
from __future__ import annotations

import ast

from ..errors import CompileError
from . import state
from .dsl import DT_FP32, DT_INT32, Scalar
from .rewrite import _carried, _Rewriter, rewrite
from .state import current
from .tiles import Tile
from .vf import (_FRAMES, CastLayout, DuplicatePos, IndexOrder, MaskPattern, MaskReg,
                 MergeMode,
                 RegTensor, TilePtr,
                 UnalignReg, VFRoundMode, _dtype, _float_only, _Frame, _instr, _int_only,
                 _loc, _mask, _merge, _new, _offset_expr, _ptr, _reg, _refuse, _same,
                 _scalar, _static_check, bind, lanes_of)
from ..ir import expr as E
from ..ir.types import REG_BYTES


# -- @pl.vector_function ----------------------------------------------------------------------

class _VfRewriter(_Rewriter):
    """The kernel rewrite (branches) plus register bindings: `x = e` -> `x = __vf_bind("x",
    e, carried)`; carried: x is read before it is assigned in an enclosing pl.range body."""

    def __init__(self, file: str):
        super().__init__(file)
        self.carried: list = []

    def visit_For(self, node):
        it = node.iter
        ranged = isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute) and \
            it.func.attr == "range"
        self.carried.append(set(_carried(node.body)) if ranged else set())
        self.generic_visit(node)
        self.carried.pop()
        return node

    def visit_Assign(self, node):
        self.generic_visit(node)
        tgt = node.targets[0]
        if len(node.targets) == 1 and isinstance(tgt, ast.Name) and \
                not tgt.id.startswith("__pl_"):
            carried = any(tgt.id in c for c in self.carried)
            call = ast.Call(ast.Name("__vf_bind", ast.Load()),
                            [ast.Constant(tgt.id), node.value, ast.Constant(carried)], [])
            node.value = ast.copy_location(call, node.value)
        return node


class VectorFunction:
    """@pl.vector_function: a function of Vec tiles and scalars whose body is Reg
    computation, called from a vector section (see vf.py)."""

    def __init__(self, fn):
        self.fn, self.name = fn, fn.__name__
        self._code = None

    def __call__(self, *args, **kwargs):
        if not state._STATE:
            raise CompileError(f"vector function {self.name} is called outside a @pl.jit "
                               f"kernel: call it from the kernel's pl.section_vector()")
        t = current()
        core = t.section or ("vector" if not t.sections else None)
        if core != "vector":
            where = "pl.section_cube()" if core == "cube" else "outside any section"
            raise t.error(f"vector function {self.name} runs on a vector core: call it inside "
                          f"pl.section_vector(), not {where}")
        for a in list(args) + list(kwargs.values()):
            if isinstance(a, Tile) and a.type.space != "ub":
                raise t.error(f"vector function {self.name}: tile {a.name} is in "
                              f"{a.type.memory.name}; a vector function takes Vec tiles")
            if not isinstance(a, (Tile, TilePtr, Scalar, int, float)):
                raise t.error(f"vector function {self.name} takes Vec tiles and scalars, not "
                              f"{a!r}")
        if self._code is None:
            helpers = {"__pl_branch": state.branch, "__pl_ifexp": state.ifexp,
                       "__pl_logic": state.logical, "__vf_bind": bind}
            self._code = rewrite(self.fn, t.kernel.file, helpers, {}, _VfRewriter)
        fn, src = self._code
        _FRAMES.append(_Frame(self.name, src))
        hook, t.loc_hook = t.loc_hook, lambda: _loc(t)     # loops and locks: the body's lines
        try:
            fn(*args, **kwargs)
        finally:
            _FRAMES.pop()
            t.loc_hook = hook

    def __repr__(self) -> str:
        return f"vector_function({self.name})"


def vector_function(fn=None, **options):
    """@pl.vector_function (options of the reference's decorator are accepted and unused)."""
    if fn is None:
        return lambda f: VectorFunction(f)
    return VectorFunction(fn)


# -- instruction helpers ----------------------------------------------------------------------

def _unary(name: str, op: str, kind=None):
    def f(src, mask, mode=None, **opts):
        t = current()
        _refuse(t, f"vf.{name}", **{k: v for k, v in opts.items() if k != "precision"})
        src = _reg(t, src, f"vf.{name} src")
        _mask(t, mask, f"vf.{name} mask", src.lanes)
        if kind == "float":
            _float_only(t, f"vf.{name}", src)
        elif kind == "int":
            _int_only(t, f"vf.{name}", src)
        return _new(t, RegTensor, src.dtype, src.lanes, op, [src, mask], _merge(t, mode))
    f.__name__ = name
    f.__doc__ = f"dst = vf.{name}(src, mask, mode=None): {op} on the active lanes."
    return staticmethod(f)


def _binary(name: str, op: str, kind=None):
    def f(src0, src1, mask, mode=None, dtype=None):
        t = current()
        a, b = _reg(t, src0, f"vf.{name} src0"), _reg(t, src1, f"vf.{name} src1")
        _same(t, f"vf.{name}", a, b)
        _mask(t, mask, f"vf.{name} mask", a.lanes)
        if kind == "float":
            _float_only(t, f"vf.{name}", a)
        elif kind == "int":
            _int_only(t, f"vf.{name}", a)
        return _new(t, RegTensor, a.dtype, a.lanes, op, [a, b, mask], _merge(t, mode))
    f.__name__ = name
    f.__doc__ = f"dst = vf.{name}(src0, src1, mask, mode=None): {op} on the active lanes."
    return staticmethod(f)


def _with_scalar(name: str, op: str):
    def f(src, scalar, mask, mode=None):
        t = current()
        src = _reg(t, src, f"vf.{name} src")
        _mask(t, mask, f"vf.{name} mask", src.lanes)
        if name == "leaky_relu":
            _float_only(t, "vf.leaky_relu", src)
        attrs = {"scalar": _scalar(t, scalar, src, f"vf.{name}"), **_merge(t, mode)}
        return _new(t, RegTensor, src.dtype, src.lanes, op, [src, mask], attrs)
    f.__name__ = name
    f.__doc__ = f"dst = vf.{name}(src, scalar, mask, mode=None): {op} on the active lanes."
    return staticmethod(f)


def _compare(name: str):
    def f(a, b, mask, cmp_dtype=None):
        t = current()
        a = _reg(t, a, f"vf.{name} a")
        _mask(t, mask, f"vf.{name} mask", a.lanes)
        if isinstance(b, RegTensor):
            _same(t, f"vf.{name}", a, b)
            return _new(t, MaskReg, a.dtype, a.lanes, "vcmp", [a, b, mask], {"cmp": name})
        attrs = {"cmp": name, "scalar": _scalar(t, b, a, f"vf.{name}")}
        return _new(t, MaskReg, a.dtype, a.lanes, "vcmps", [a, mask], attrs)
    f.__name__ = name
    f.__doc__ = f"mask = vf.{name}(a, b_register_or_scalar, mask): False off the mask."
    return staticmethod(f)


def _reduce(name: str, op: str):
    def f(src, mask, datablock=False, merge_mode=None):
        t = current()
        src = _reg(t, src, f"vf.{name} src")
        _mask(t, mask, f"vf.{name} mask", src.lanes)
        _refuse(t, f"vf.{name}", datablock=datablock)
        if merge_mode not in (None, MergeMode.ZEROING):
            raise t.error(f"vf.{name} merge_mode: only pl.MergeMode.ZEROING (the reference: "
                          f"MERGING is not supported)")
        if src.dtype.itemsize not in (2, 4):
            raise t.error(f"vf.{name} takes 16- and 32-bit registers, not {src.type}")
        return _new(t, RegTensor, src.dtype, src.lanes, op, [src, mask], {})
    f.__name__ = name
    f.__doc__ = (f"dst = vf.{name}(src, mask): lane 0 the result"
                 f"{', lane 1 the index' if name != 'reduce_sum' else ''}, other lanes 0.")
    return staticmethod(f)


def _not_built(name: str):
    def f(*args, **kwargs):
        raise current().error(f"vf.{name} is not built in pypto yet (libpypto/prolang/vf.py "
                              f"lists what is)")
    f.__name__ = name
    return staticmethod(f)


NOT_BUILT = ("de_interleave", "interleave", "pack", "unpack", "unsqueeze", "squeeze",
             "histograms", "shift_left", "shift_right", "gather", "scatter",
             "clear_spr", "get_mask_spr", "get_spr", "mask_gen_with_reg_tensor",
             "pair_reduce_sum", "mull", "addc", "subc", "prelu", "mul_dst_add", "muls_cast",
             "log2", "log10", "truncate", "create_addr_reg", "load", "store")


def _mask_dtype(t, dtype, what: str):
    return _dtype(t, dtype, what, DT_FP32)


def _load(t, src, offset, dtype, op: str, aligned: bool) -> RegTensor:
    ptr = _ptr(t, src, f"vf.{'load_align' if aligned else 'load_unalign'} src")
    tile = ptr.tile
    dt = _dtype(t, dtype, "vf.load_align", tile.type.dtype)
    off = E.add(ptr.offset, _offset_expr(t, offset, tile))
    _static_check(t, "a register load", tile, off, REG_BYTES, aligned)
    return _new(t, RegTensor, dt, lanes_of(dt), op, [tile], {"offset": off})


def _store_tile(t, ptr: TilePtr, src: RegTensor, what: str) -> None:
    if src.dtype.itemsize != ptr.tile.type.dtype.itemsize:
        raise t.error(f"{what}: a {src.type} register into a {ptr.tile.type.dtype} tile (the "
                      f"element widths differ: vf.astype first)")


class Vf:
    """The register namespace (reference `pypto_pro.language.Vf`); see vf.py."""

    # -- masks --------------------------------------------------------------------------------
    @staticmethod
    def create_mask(pattern=None, dtype=None):
        """preg = vf.create_mask(pattern=pl.MaskPattern.ALL, dtype=pl.DT_FP32)."""
        t = current()
        dt = _mask_dtype(t, dtype, "vf.create_mask")
        pattern = MaskPattern.ALL if pattern is None else pattern
        if not isinstance(pattern, MaskPattern):
            raise t.error(f"vf.create_mask pattern= must be a pl.MaskPattern, not {pattern!r}")
        return _new(t, MaskReg, dt, lanes_of(dt), "pset", [], {"pattern": pattern.value})

    @staticmethod
    def update_mask(scalar, dtype=None):
        """preg = vf.update_mask(n, dtype=): the first min(n, lanes) lanes (n <= 0: none)."""
        t = current()
        dt = _mask_dtype(t, dtype, "vf.update_mask")
        n = _offset_expr(t, scalar, None) if not isinstance(scalar, (list, tuple)) else None
        if n is None:
            raise t.error(f"vf.update_mask takes an integer scalar, not {scalar!r}")
        return _new(t, MaskReg, dt, lanes_of(dt), "plt", [], {"n": n})

    # -- movement -----------------------------------------------------------------------------
    @staticmethod
    def full(scalar_or_src, mask=None, dtype=None, mode=None, pos=None):
        """dst = vf.full(2.5, preg, dtype=pl.DT_FP32) (a number or runtime scalar) or
        vf.full(src_reg, preg, pos=pl.DuplicatePos.LOWEST) (one lane to every lane)."""
        t = current()
        if isinstance(scalar_or_src, RegTensor):
            src = scalar_or_src
            _mask(t, mask, "vf.full mask", src.lanes)
            pos = DuplicatePos.LOWEST if pos is None else pos
            if not isinstance(pos, DuplicatePos):
                raise t.error(f"vf.full pos= must be a pl.DuplicatePos, not {pos!r}")
            return _new(t, RegTensor, src.dtype, src.lanes, "vdupl", [src, mask],
                        {"pos": pos.value, **_merge(t, mode)})
        if dtype is None:
            raise t.error("vf.full of a scalar needs dtype=pl.DT_* (the register's dtype)")
        dt = _dtype(t, dtype, "vf.full")
        probe = type("P", (), {"dtype": dt})()
        value = _scalar(t, scalar_or_src, probe, "vf.full")
        operands = [] if mask is None else [_mask(t, mask, "vf.full mask", lanes_of(dt))]
        return _new(t, RegTensor, dt, lanes_of(dt), "vdup", operands,
                    {"value": value, **_merge(t, mode)})

    @staticmethod
    def arange(start, dtype=None, index_order=None):
        """dst = vf.arange(start, dtype=, index_order=pl.IndexOrder.INCREASE_ORDER): lane i
        holds start + i (start - i with DECREASE_ORDER); dtype defaults to pl.DT_INT32 for an
        integer start, pl.DT_FP32 for a float."""
        t = current()
        dt = _dtype(t, dtype, "vf.arange", DT_FP32 if isinstance(start, float) else DT_INT32)
        order = IndexOrder.INCREASE_ORDER if index_order is None else index_order
        if not isinstance(order, IndexOrder):
            raise t.error(f"vf.arange index_order= must be a pl.IndexOrder, not {order!r}")
        probe = type("P", (), {"dtype": dt})()
        return _new(t, RegTensor, dt, lanes_of(dt), "vci", [],
                    {"start": _scalar(t, start, probe, "vf.arange"), "order": order.value})

    @staticmethod
    def load_align(src, offset=None, dtype=None, dist=None, data_copy_mode=None,
                   block_stride=None, post_update=False):
        """dst = vf.load_align(tile, offset, dtype=None): 256 bytes from a 32-byte aligned
        element offset (an int, a runtime scalar, [row, col]; `tile + k` adds k)."""
        t = current()
        _refuse(t, "vf.load_align", dist=dist, data_copy_mode=data_copy_mode,
                block_stride=block_stride, post_update=post_update)
        return _load(t, src, offset, dtype, "vlds", True)

    @staticmethod
    def store_align(dst, src, *args, dist=None, data_copy_mode=None, block_stride=None,
                    repeat_stride=None, post_update=False):
        """vf.store_align(tile, src_reg, mask[, offset]): the mask's lanes into the tile at a
        32-byte aligned element offset; the other elements keep their values."""
        t = current()
        _refuse(t, "vf.store_align", dist=dist, data_copy_mode=data_copy_mode,
                block_stride=block_stride, repeat_stride=repeat_stride,
                post_update=post_update)
        if isinstance(src, MaskReg):
            raise t.error("vf.store_align of a mask register is not built in pypto")
        src = _reg(t, src, "vf.store_align src")
        if not args or len(args) > 2:
            raise t.error("vf.store_align takes (tile, src, mask) or (tile, src, mask, offset)")
        mask = _mask(t, args[0], "vf.store_align mask", src.lanes)
        ptr = _ptr(t, dst, "vf.store_align dst")
        _store_tile(t, ptr, src, "vf.store_align")
        off = E.add(ptr.offset, _offset_expr(t, args[1] if len(args) > 1 else None, ptr.tile))
        _static_check(t, "a register store", ptr.tile, off, REG_BYTES, True)
        _instr(t, "vsts", [ptr.tile, src, mask], {"offset": off})

    @staticmethod
    def load_unalign_init():
        """ureg = vf.load_unalign_init(): the state of a run of unaligned loads."""
        return UnalignReg(current(), "load")

    @staticmethod
    def load_unalign_pre(align_reg, tile):
        """vf.load_unalign_pre(ureg, tile_or_ptr): where load_unalign(post_update=True)
        starts."""
        t = current()
        ptr = _ptr(t, tile, "vf.load_unalign_pre tile")
        if not isinstance(align_reg, UnalignReg) or align_reg.kind != "load":
            raise t.error("vf.load_unalign_pre takes the register of vf.load_unalign_init()")
        align_reg.tile, align_reg.base, align_reg.count = ptr.tile, ptr.offset, 0

    @staticmethod
    def load_unalign(align_reg, src, stride=None, post_update=False):
        """dst = vf.load_unalign(ureg, tile, stride=None, post_update=False): 256 bytes from
        any element offset: the tile pointer's, or with post_update the ureg's address, then
        moved by stride elements (default one register)."""
        t = current()
        if not isinstance(align_reg, UnalignReg) or align_reg.kind != "load":
            raise t.error("vf.load_unalign takes the register of vf.load_unalign_init()")
        ptr = _ptr(t, src, "vf.load_unalign src")
        if not post_update:
            return _load(t, ptr, None, None, "vldus", False)
        if align_reg.tile is None or align_reg.tile.owner is not ptr.tile.owner:
            raise t.error("vf.load_unalign(post_update=True) reads where vf.load_unalign_pre "
                          "started, on the same tile: call load_unalign_pre first")
        reg = _load(t, TilePtr(ptr.tile, E.add(align_reg.base, align_reg.count)), None, None,
                    "vldus", False)
        align_reg.count = E.add(align_reg.count, _step(t, stride, reg.lanes))
        return reg

    @staticmethod
    def unalign_reg_for_store():
        """ureg = vf.unalign_reg_for_store(): the state of a run of unaligned stores."""
        return UnalignReg(current(), "store")

    @staticmethod
    def store_unalign(dst_ptr, src, align_reg, stride=None, post_update=False):
        """vf.store_unalign(tile, src, ureg, stride=None, post_update=False): the first
        `stride` lanes (default all) at any element offset: the tile pointer's, or with
        post_update the ureg's address (from its first store on), then moved by stride."""
        t = current()
        if not isinstance(align_reg, UnalignReg) or align_reg.kind != "store":
            raise t.error("vf.store_unalign takes the register of vf.unalign_reg_for_store()")
        if isinstance(src, MaskReg):
            raise t.error("vf.store_unalign of a mask register is not built in pypto")
        src = _reg(t, src, "vf.store_unalign src")
        ptr = _ptr(t, dst_ptr, "vf.store_unalign dst")
        _store_tile(t, ptr, src, "vf.store_unalign")
        count = _step(t, stride, src.lanes)
        off = ptr.offset
        if post_update:
            if align_reg.tile is None:
                align_reg.tile, align_reg.base = ptr.tile, ptr.offset
            elif align_reg.tile.owner is not ptr.tile.owner:
                raise t.error("vf.store_unalign(post_update=True): one unalign register "
                              "stores into one tile")
            off = E.add(align_reg.base, align_reg.count)
            align_reg.count = E.add(align_reg.count, count)
        if isinstance(count, int):
            _static_check(t, "an unaligned store", ptr.tile, off,
                          count * ptr.tile.type.dtype.itemsize, False)
        _instr(t, "vstus", [ptr.tile, src], {"offset": off, "count": count})

    @staticmethod
    def store_unalign_post(dst_ptr, align_reg, stride=None, post_update=False):
        """vf.store_unalign_post(tile, ureg, ...): the flush; nothing is left to write on the
        host (store_unalign wrote its lanes), so it records nothing."""
        t = current()
        if not isinstance(align_reg, UnalignReg) or align_reg.kind != "store":
            raise t.error("vf.store_unalign_post takes the register of "
                          "vf.unalign_reg_for_store()")
        _ptr(t, dst_ptr, "vf.store_unalign_post dst")

    @staticmethod
    def mem_bar(mode=None):
        """vf.mem_bar(mode=): one core's Reg instructions run in program order on the host,
        so the barrier records nothing."""
        current()

    @staticmethod
    def move(src, mask=None, mode=None):
        """dst = vf.move(src): a register copy (the masked form is not built)."""
        t = current()
        src = _reg(t, src, "vf.move src")
        _refuse(t, "vf.move", mask=mask, mode=mode)
        return _new(t, RegTensor, src.dtype, src.lanes, "vmov", [src], {})

    @staticmethod
    def bit_cast(src, *, dtype):
        """vf.bit_cast(src, dtype=): the register's 256 bytes as another dtype (a copy)."""
        t = current()
        src = _reg(t, src, "vf.bit_cast src")
        dt = _dtype(t, dtype, "vf.bit_cast")
        return _new(t, RegTensor, dt, lanes_of(dt), "vbitcast", [src], {})

    # -- arithmetic ---------------------------------------------------------------------------
    abs = _unary("abs", "vabs")
    neg = _unary("neg", "vneg")
    exp = _unary("exp", "vexp", "float")
    ln = _unary("ln", "vln", "float")
    log = _unary("log", "vln", "float")
    sqrt = _unary("sqrt", "vsqrt", "float")
    relu = _unary("relu", "vrelu")
    not_ = _unary("not_", "vnot", "int")
    add = _binary("add", "vadd")
    sub = _binary("sub", "vsub")
    mul = _binary("mul", "vmul")
    div = _binary("div", "vdiv", "float")
    max = _binary("max", "vmax")
    min = _binary("min", "vmin")
    and_ = _binary("and_", "vand", "int")
    or_ = _binary("or_", "vor", "int")
    xor = _binary("xor", "vxor", "int")
    abs_sub = _binary("abs_sub", "vabsdif")
    adds = _with_scalar("adds", "vadds")
    subs = _with_scalar("subs", "vsubs")
    muls = _with_scalar("muls", "vmuls")
    maxs = _with_scalar("maxs", "vmaxs")
    mins = _with_scalar("mins", "vmins")
    leaky_relu = _with_scalar("leaky_relu", "vlrelu")
    eq, ne, lt, le, gt, ge = (_compare(n) for n in ("eq", "ne", "lt", "le", "gt", "ge"))
    reduce_sum = _reduce("reduce_sum", "vcadd")
    reduce_max = _reduce("reduce_max", "vcmax")
    reduce_min = _reduce("reduce_min", "vcmin")

    @staticmethod
    def exp_sub(src, max_val, mask, layout=None, dtype=None):
        """dst = vf.exp_sub(src, max_val, mask): e^(src - max_val), fp32."""
        t = current()
        a, b = _reg(t, src, "vf.exp_sub src"), _reg(t, max_val, "vf.exp_sub max_val")
        _same(t, "vf.exp_sub", a, b)
        _mask(t, mask, "vf.exp_sub mask", a.lanes)
        if a.dtype.name != "f32" or dtype not in (None, DT_FP32):
            raise t.error(f"vf.exp_sub on {a.type}: only fp32 is built (the fp16 form widens "
                          f"to fp32 through layout=)")
        return _new(t, RegTensor, a.dtype, a.lanes, "vexpsub", [a, b, mask], {})

    @staticmethod
    def axpy(src, scalar, mask, mode=None):
        """dst = vf.axpy(src, scalar, mask): dst + src * scalar, dst the register assigned
        to (read and written; fused: rounded once)."""
        t = current()
        src = _reg(t, src, "vf.axpy src")
        _mask(t, mask, "vf.axpy mask", src.lanes)
        _float_only(t, "vf.axpy", src)
        attrs = {"scalar": _scalar(t, scalar, src, "vf.axpy"), **_merge(t, mode)}
        return _new(t, RegTensor, src.dtype, src.lanes, "vaxpy", [src, mask], attrs)

    @staticmethod
    def mul_add_dst(src0, src1, mask, mode=None):
        """dst = vf.mul_add_dst(src0, src1, mask): dst + src0 * src1 (fused), dst the
        register assigned to."""
        t = current()
        a, b = _reg(t, src0, "vf.mul_add_dst src0"), _reg(t, src1, "vf.mul_add_dst src1")
        _same(t, "vf.mul_add_dst", a, b)
        _mask(t, mask, "vf.mul_add_dst mask", a.lanes)
        _float_only(t, "vf.mul_add_dst", a)
        return _new(t, RegTensor, a.dtype, a.lanes, "vmula", [a, b, mask], _merge(t, mode))

    @staticmethod
    def select(src_true, src_false, mask, mode=None):
        """dst = vf.select(src_true, src_false, mask): src_true on the mask, else src_false
        (every lane is written: mode= changes nothing)."""
        t = current()
        a, b = _reg(t, src_true, "vf.select src_true"), _reg(t, src_false,
                                                              "vf.select src_false")
        _same(t, "vf.select", a, b)
        _mask(t, mask, "vf.select mask", a.lanes)
        return _new(t, RegTensor, a.dtype, a.lanes, "vsel", [a, b, mask], {})

    @staticmethod
    def astype(src, mask, dtype=None, layout=None, round_mode=None, saturate=None, mode=None):
        """dst = vf.astype(src, mask, dtype=, layout=, round_mode=): see vf.py."""
        t = current()
        src = _reg(t, src, "vf.astype src")
        _mask(t, mask, "vf.astype mask", src.lanes)
        if dtype is None:
            raise t.error("vf.astype needs dtype=pl.DT_* (the destination's dtype)")
        dt = _dtype(t, dtype, "vf.astype")
        a, b = src.dtype.itemsize, dt.itemsize
        if a != b and max(a, b) != 2 * min(a, b):
            raise t.error(f"vf.astype {src.dtype} -> {dt}: widths 1:1 and 2:1 are built")
        part = (layout or CastLayout.ZERO).value
        rnd = (round_mode or VFRoundMode.CAST_RINT).value
        if part > 1 or rnd in ("odd", "hybrid"):
            raise t.error(f"vf.astype layout={layout} round_mode={round_mode} is not built")
        if dt.kind == "float" and rnd != "rint":
            raise t.error("vf.astype into a float dtype rounds to nearest even (CAST_RINT)")
        if mode not in (None, MergeMode.ZEROING):
            raise t.error("vf.astype: only pl.MergeMode.ZEROING (as the reference)")
        return _new(t, RegTensor, dt, lanes_of(dt), "vcvt", [src, mask],
                    {"part": part, "round": rnd})


def _step(t, stride, lanes: int):
    if stride is None:
        return lanes
    e = _offset_expr(t, stride, None)
    if isinstance(e, int) and e < 0:
        raise t.error(f"a stride must be >= 0, not {e}")
    return e


for _n in NOT_BUILT:
    setattr(Vf, _n, _not_built(_n))

REG_NAMES = {"Vf": Vf, "vector_function": vector_function, "RegTensor": RegTensor,
             "MaskReg": MaskReg}
