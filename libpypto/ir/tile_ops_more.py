"""More Pro-mode tile instructions (issue 9 item 4): the MX matmul, quant / dequant, the
vector gather / scatter, sort32 / mrgsort, histogram and the fused vector forms.

They exist only in Pro mode (libpypto.prolang.ops_more writes them; the Pro runner,
runtime/pro_exec_more.py, and the Pro C, codegen/pro_c_more.py, run them). Tensor mode never
makes them: its C renderer and numpy backend name them `i_pro_only` / `tpro_only`, which
refuse with a message.
"""
from __future__ import annotations

from .opdef import EXPR, NAT, Bool, Ex, Int, Str, attr, opt
from .tile_ops import PRO_VALID, TL, VALID, _i, _pipe_vector
from .types import TileType

FUSED = {          # kind -> (operands after out, reads out too)
    "add_relu": (2, False), "sub_relu": (2, False), "addc": (3, False),
    "mul_add_dst": (2, True), "fused_mul_add": (2, True), "fused_mul_add_relu": (2, True),
    "axpy": (1, True), "shl": (2, False), "shr": (2, False), "xor": (2, False),
    "add_relu_cast": (2, False), "sub_relu_cast": (2, False), "mul_cast": (2, False)}


def _pro(name, operands, attrs, verify, pipe, pto, writes=(0,), reads_dest=(), optional=0):
    return _i(name, operands, attrs, verify, pipe, pto, numpy="tpro_only", c="i_pro_only",
              writes=writes, reads_dest=reads_dest, optional=optional)


def v_matmul_mx(op, err) -> None:
    acc, a, b, sa, sb = (v.type for v in op.operands)
    if any(not isinstance(t, TileType) for t in (acc, a, b, sa, sb)):
        err("tmatmul_mx takes five tiles")
    elif a.shape[1] != b.shape[0] or acc.shape != (a.shape[0], b.shape[1]):
        err(f"tmatmul_mx of {a} by {b} into {acc}")
    elif sa.shape != (a.shape[0], a.shape[1] // 32) or sb.shape != (b.shape[0] // 32,
                                                                      b.shape[1]):
        err(f"tmatmul_mx scales {sa} and {sb} do not match the groups of 32 of {a} and {b}")


DEFS = [
    # dst (+)= dequant(a, sa) @ dequant(b, sb): fp8 operands, E8M0 scales per 32 of K
    _pro("tmatmul_mx", (TL,) * 5, {"init": attr(EXPR), "k_valid": attr(EXPR), **PRO_VALID},
         v_matmul_mx, "M", "TMATMUL_MX", reads_dest=(0,)),
    # out = sat(rint(src * scale) [+ offset]); scale, offset per row ([R, 1])
    _pro("tquant", (TL, TL, TL, TL), {"mode": attr(Str("sym", "asym")), **PRO_VALID}, None,
         _pipe_vector, "TQUANT", optional=1),
    _pro("tdequant", (TL, TL, TL, TL), dict(PRO_VALID), None, _pipe_vector, "TDEQUANT"),
    # out_flat[i] = src_flat[idx[i] + offset]; tmp: the hardware's workspace (unused)
    _pro("tvgather", (TL, TL, TL, TL), {"offset": attr(Int()), **PRO_VALID}, None,
         _pipe_vector, "TGATHER"),
    # out_flat[idx[i, j]] = src[i, j] (row-major order: the last write wins)
    _pro("tvscatter", (TL, TL, TL), {**VALID}, None, _pipe_vector, "TSCATTER",
         reads_dest=(0,)),
    _pro("tsort32", (TL, TL, TL, TL), {**VALID}, None, _pipe_vector, "TSORT32", optional=1),
    _pro("tmrgsort", (TL, TL), {"block_len": attr(Int(1)), **VALID}, None, _pipe_vector,
         "TMRGSORT"),
    _pro("thistogram", (TL, TL, TL), {"msb": attr(Bool()), **VALID}, None, _pipe_vector,
         "THISTOGRAM"),
    # out = src inside src's valid region, the pad value (TilePad) elsewhere
    _pro("tfillpad", (TL, TL), {"pad": attr(Str("zero", "max", "min")), **VALID}, None,
         _pipe_vector, "TFILLPAD"),
] + [
    # argmax / argmin of each row (dim=0) or column (dim=1) into an index tile
    _pro("t" + k, (TL, TL), {"dim": attr(NAT), **VALID}, None, _pipe_vector, k.upper())
    for k in ("argmax", "argmin")
] + [
    # the fused vector forms (FUSED); alpha: axpy's scalar
    _pro("t" + k, (TL,) * (n + 1), {"alpha": opt(Ex(num=True)), **PRO_VALID},
         None, _pipe_vector, "T" + k.upper().replace("_", ""),
         reads_dest=(0,) if dst else ())
    for k, (n, dst) in FUSED.items()
]
