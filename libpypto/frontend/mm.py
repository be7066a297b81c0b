"""matmul as op files call it (pypto.matmul, Tensor.matmul, a @ b): the reference's L0/L1
capacity rule, batch broadcasting, transposes, a bias, split-K (frontend/splitk.py) and fp8
operands (widened to fp16, exact); one tensor-level `matmul` op."""
from __future__ import annotations

from ..ir.types import DTYPES, F16, F32, STORAGE_ONLY, DType, TensorType
from . import splitk
from .ops import _b, _broadcast, _ew, _norm_shape, _result, _tensor, cast, view
from .tensor import SymScalar, fmt_shape, unsupported

def _cube_fits(b, dt: DType, out_dt: DType) -> None:
    """The reference's L0/L1 capacity rule (fractals of 16), against the target traced for."""
    (mL0, mL1), (kL0, kL1), (nL0, nL1) = b.cube_tile
    size = dt.itemsize
    cap = b.target.buffer

    def up(v):
        return -(-v // 16) * 16
    checks = [("L0A", up(mL0) * up(kL0) * size, cap("l0a"), f"m L0 {mL0} x k L0 {kL0}"),
              ("L0B", up(kL0) * up(nL0) * size, cap("l0b"), f"k L0 {kL0} x n L0 {nL0}"),
              ("L0C", up(mL0) * up(nL0) * 4, cap("l0c"), f"m L0 {mL0} x n L0 {nL0} (fp32)"),
              ("L1", (mL1 * kL1 + kL1 * nL1) * size, cap("l1"), f"A {mL1}x{kL1} + B {kL1}x{nL1}")]
    for buf, need, have, what in checks:
        if need > have:
            raise b.error(f"cube tiles do not fit target {b.target.name}: {what} needs "
                          f"{need // 1024} KiB of {buf}, which holds {have // 1024} KiB; use "
                          f"smaller set_cube_tile_shapes")
    for name, v in (("m", mL0), ("k", kL0), ("n", nL0)):
        if v * size % 32 and v > 1:
            raise b.error(f"cube tile {name} L0 size {v} is not 32-byte aligned for {dt}")


def matmul(a, b_, out_dtype: DType, a_trans: bool = False, b_trans: bool = False,
           bias=None, extend_params: dict | None = None, c_matrix_nz: bool = False):
    """a @ b for 2-D to 4-D operands with batch broadcasting; fp32 (int32) accumulation,
    optional transposes and a bias row added before the cast to out_dtype. c_matrix_nz (the
    reference's NZ output layout) is warned about: pypto writes ND."""
    b = _b()
    if c_matrix_nz:
        unsupported("matmul(c_matrix_nz=True)", "pypto writes the result ND (row-major)")
    a = _tensor(a, b, "matmul")
    b_ = _tensor(b_, b, "matmul")
    if extend_params:
        unknown = set(extend_params) - {"bias_tensor"}
        if unknown:
            raise b.error(f"matmul: extend_params {sorted(unknown)} are not supported "
                          f"(supported: bias_tensor)")
        bias = extend_params.get("bias_tensor", bias)
    if not (2 <= a.ndim <= 4 and 2 <= b_.ndim <= 4):
        raise b.error(f"matmul takes 2-D to 4-D operands, got ranks {a.ndim} and {b_.ndim}")
    if {a.dtype.name, b_.dtype.name} & set(STORAGE_ONLY):
        a, b_ = _fp8_operands(b, a, b_)
    if a.dtype != b_.dtype:
        raise b.error(f"matmul: operand dtypes differ ({a.dtype} vs {b_.dtype}); cast one")
    if not isinstance(out_dtype, DType):
        raise b.error(f"matmul: out_dtype must be a pypto dtype, got {out_dtype!r}")
    if b.cube_tile is None:
        raise b.error("matmul needs cube tile shapes: call pypto.set_cube_tile_shapes(m, k, n) "
                      "before it")
    _cube_fits(b, a.dtype, out_dtype)
    sa, sb = list(a.type.shape), list(b_.type.shape)
    m, k = (sa[-1], sa[-2]) if a_trans else (sa[-2], sa[-1])
    k2, n = (sb[-1], sb[-2]) if b_trans else (sb[-2], sb[-1])
    b.same(k, k2, f"matmul: inner dims differ ({fmt_shape(sa)}{'^T' if a_trans else ''} @ "
                  f"{fmt_shape(sb)}{'^T' if b_trans else ''})")
    batch = _broadcast(b, [sa[:-2], sb[:-2]], "matmul batch dims") if \
        (len(sa) > 2 or len(sb) > 2) else []
    acc = DTYPES["i32"] if a.dtype.kind == "int" else F32
    cuts = splitk.parts(b, m, k, n) if b.split_k else []
    if cuts:                       # partial products over K ranges, added in order, then cast
        b.split_k = False
        try:
            out = None
            for k0, k1 in cuts:
                part = matmul(_k_slice(a, k0, k1, -2 if a_trans else -1),
                              _k_slice(b_, k0, k1, -1 if b_trans else -2), acc,
                              a_trans, b_trans)
                out = part if out is None else _ew("add", out, part, strict=False)
        finally:
            b.split_k = True
        return _matmul_tail(b, out, bias, acc, out_dtype)
    mm_dtype = out_dtype if bias is None else acc
    op = b.emit("matmul", [a.value, b_.value],
                [TensorType(mm_dtype, _norm_shape(b, batch + [m, n]))],
                {"out_dtype": mm_dtype.name, "a_trans": bool(a_trans), "b_trans": bool(b_trans),
                 "cube": [list(t) for t in b.cube_tile]})
    return _matmul_tail(b, _result(op), bias, acc, out_dtype)


def _fp8_operands(b, a, b_):
    """fp8 operands (e4m3 and e5m2, mixed as the reference allows) widened to fp16, which
    holds every fp8 value exactly; the products and their fp32 sums are then the fp8 ones."""
    fp8 = ("f8e4m3", "f8e5m2")
    if a.dtype.name not in fp8 or b_.dtype.name not in fp8:
        raise b.error(f"matmul: fp8 operands go with fp8 operands (DT_FP8E4M3, DT_FP8E5M2), "
                      f"not {a.dtype.api} with {b_.dtype.api}")
    if b.cube_tile is None:
        raise b.error("matmul needs cube tile shapes: call pypto.set_cube_tile_shapes(m, k, n) "
                      "before it")
    saved = b.vec_tile
    try:                            # the widening tiles by L1 tiles unless a vec tile is set
        out = []
        for t, rows, cols in ((a, 0, 1), (b_, 1, 2)):
            if saved is None:
                last = -(-b.cube_tile[cols][1] // 32) * 32        # whole 32-byte rows
                if isinstance(t.type.shape[-1], int):
                    last = min(last, t.type.shape[-1])
                b.vec_tile = [1] * (t.ndim - 2) + [b.cube_tile[rows][1], last]
            out.append(cast(t, F16, strict=False))
        return tuple(out)
    finally:
        b.vec_tile = saved


def _k_slice(t, k0: int, k1: int, k_axis: int):
    """The view of matmul operand t over K [k0, k1) (k_axis: -1 or -2), for split-K."""
    shape = [s if isinstance(s, int) else SymScalar(s) for s in t.type.shape]
    offs = [0] * len(shape)
    shape[k_axis], offs[k_axis] = k1 - k0, k0
    return view(t, shape, offs)


def _matmul_tail(b, out, bias, acc, out_dtype):
    """The bias row added to the acc-dtype product, then the cast to out_dtype."""
    if bias is not None:
        bias = _tensor(bias, b, "matmul bias")
        if bias.dtype != acc:
            bias = cast(bias, acc, strict=False)
        out = _ew("add", out, bias, strict=False)
    if out.dtype != out_dtype:
        out = cast(out, out_dtype, strict=False)
    return out
