"""Pro kernels for the tests of issue 9 item 4 (test_ops_more.py): the MX matmul, quant /
dequant, gather / scatter, sort32 / mrgsort, histogram, argmax / argmin, fused forms.
Vector kernels take R rows per block (block_dim 2 covers 2R rows)."""
from __future__ import annotations

import libpypto.pro as pl

F32, F16, I32, U32 = pl.DT_FP32, pl.DT_FP16, pl.DT_INT32, pl.DT_UINT32
I8, U8, I16, U16 = pl.DT_INT8, pl.DT_UINT8, pl.DT_INT16, pl.DT_UINT16
E4M3, E5M2, E8M0 = pl.DT_FP8E4M3FN, pl.DT_FP8E5M2, pl.DT_FP8E8M0
MTE1, MTE2, MTE3, V, M, FIX = (pl.PipeType.MTE1, pl.PipeType.MTE2, pl.PipeType.MTE3,
                               pl.PipeType.V, pl.PipeType.M, pl.PipeType.FIX)
Vec, Mat = pl.MemorySpace.Vec, pl.MemorySpace.Mat
R, C = 8, 64


def sync(src, dst, ev=0):
    pl.system.sync_src(set_pipe=src, wait_pipe=dst, event_id=ev)
    pl.system.sync_dst(set_pipe=src, wait_pipe=dst, event_id=ev)


def vt(shape, dtype, addr, layout=None):
    return pl.make_tile(pl.TileType(shape, dtype, Vec, layout=layout), addr=addr)


# -- MX matmul: a [32, 128] e4m3 x b [128, 32] e5m2, one K block ---------------------------

MK = 128


def _mx_tiles(lhs_dt=E4M3, sa_space=pl.MemorySpace.ScaleLeft, sa_addr=0x0020):
    a1 = pl.make_tile(pl.TileType([32, MK], lhs_dt, Mat), addr=0x0000)
    b1 = pl.make_tile(pl.TileType([MK, 32], E5M2, Mat), addr=0x1000)
    sa1 = pl.make_tile(pl.TileType([32, MK // 32], E8M0, Mat, layout=pl.ZZ), addr=0x2000)
    sb1 = pl.make_tile(pl.TileType([MK // 32, 32], E8M0, Mat, layout=pl.NN), addr=0x2100)
    a0 = pl.make_tile(pl.TileType([32, MK], lhs_dt, pl.MemorySpace.Left), addr=0x0200)
    b0 = pl.make_tile(pl.TileType([MK, 32], E5M2, pl.MemorySpace.Right), addr=0x0400)
    sa0 = pl.make_tile(pl.TileType([32, MK // 32], E8M0, sa_space,
                                   layout=pl.ZZ), addr=sa_addr)
    sb0 = pl.make_tile(pl.TileType([MK // 32, 32], E8M0, pl.MemorySpace.ScaleRight),
                       addr=0x0040)
    acc = pl.make_tile(pl.TileType([32, 32], F32, pl.MemorySpace.Acc), addr=0)
    return a1, b1, sa1, sb1, a0, b0, sa0, sb0, acc


def _mx_body(a, b, sa, sb, out, tiles):
    a1, b1, sa1, sb1, a0, b0, sa0, sb0, acc = tiles
    with pl.section_cube():
        pl.load(a1, a, [0, 0])
        pl.load(b1, b, [0, 0])
        pl.load(sa1, sa, [0, 0, 0], order=[0, 1])
        pl.load(sb1, sb, [0, 0, 0], order=[0, 1])
        sync(MTE2, MTE1)
        pl.move(a0, a1)
        pl.move(b0, b1)
        pl.move(sa0, sa1)
        pl.move(sb0, sb1)
        sync(MTE1, M)
        pl.matmul_mx(acc, a0, b0, sa0, sb0)
        sync(M, FIX)
        pl.store(out, acc, [0, 0])


@pl.jit(arch="a5")
def mx_mm(a: pl.Tensor[[32, MK], E4M3], b: pl.Tensor[[MK, 32], E5M2],
          sa: pl.Tensor[[32, MK // 64, 2], E8M0], sb: pl.Tensor[[MK // 64, 32, 2], E8M0],
          out: pl.Tensor[[32, 32], F32]):
    _mx_body(a, b, sa, sb, out, _mx_tiles())


@pl.jit(arch="a5")
def mx_bad_addr(a: pl.Tensor[[32, MK], E4M3], b: pl.Tensor[[MK, 32], E5M2],
                sa: pl.Tensor[[32, MK // 64, 2], E8M0], sb: pl.Tensor[[MK // 64, 32, 2], E8M0],
                out: pl.Tensor[[32, 32], F32]):
    _mx_body(a, b, sa, sb, out, _mx_tiles(sa_addr=0x0040))


@pl.jit(arch="a5")
def mx_bad_space(a: pl.Tensor[[32, MK], E4M3], b: pl.Tensor[[MK, 32], E5M2],
                 sa: pl.Tensor[[32, MK // 64, 2], E8M0], sb: pl.Tensor[[MK // 64, 32, 2], E8M0],
                 out: pl.Tensor[[32, 32], F32]):
    tiles = list(_mx_tiles())
    with pl.section_cube():
        pl.matmul_mx(tiles[8], tiles[4], tiles[5], tiles[2], tiles[7])   # scale_a in Mat


@pl.jit(arch="a5")
def mx_bad_dtype(a: pl.Tensor[[32, MK], F16], b: pl.Tensor[[MK, 32], E5M2],
                 sa: pl.Tensor[[32, MK // 64, 2], E8M0], sb: pl.Tensor[[MK // 64, 32, 2], E8M0],
                 out: pl.Tensor[[32, 32], F32]):
    _mx_body(a, b, sa, sb, out, _mx_tiles(lhs_dt=F16))


@pl.jit
def mx_on_a2(a: pl.Tensor[[32, MK], E4M3], b: pl.Tensor[[MK, 32], E5M2],
             sa: pl.Tensor[[32, MK // 64, 2], E8M0], sb: pl.Tensor[[MK // 64, 32, 2], E8M0],
             out: pl.Tensor[[32, 32], F32]):
    _mx_body(a, b, sa, sb, out, _mx_tiles())


@pl.jit
def fp8_vector(x: pl.Tensor[[R, C], E4M3], y: pl.Tensor[[R, C], E4M3]):
    a = vt([R, C], E4M3, 0)
    with pl.section_vector():
        pl.load(a, x, [0, 0])
        sync(MTE2, V)
        pl.relu(a, a)


# -- quant / dequant --------------------------------------------------------------------------

@pl.jit
def quant_sym(x: pl.Tensor[[2 * R, C], F32], s: pl.Tensor[[2 * R, 1], F32],
              y: pl.Tensor[[2 * R, C], I8]):
    a, sc, q = vt([R, C], F32, 0), vt([R, 1], F32, 0x1000, pl.DN), vt([R, C], I8, 0x2000)
    with pl.section_vector():
        r = pl.get_block_idx() * R
        pl.load(a, x, [r, 0])
        pl.load(sc, s, [r, 0])
        sync(MTE2, V)
        pl.quant(q, a, sc, mode=pl.QuantMode.SYM)
        sync(V, MTE3)
        pl.store(y, q, [r, 0])


@pl.jit
def quant_asym(x: pl.Tensor[[2 * R, C], F32], s: pl.Tensor[[2 * R, 1], F32],
               o: pl.Tensor[[2 * R, 1], F32], y: pl.Tensor[[2 * R, C], U8]):
    a, sc, q = vt([R, C], F32, 0), vt([R, 1], F32, 0x1000, pl.DN), vt([R, C], U8, 0x2000)
    off = vt([R, 1], F32, 0x3000, pl.DN)
    with pl.section_vector():
        r = pl.get_block_idx() * R
        pl.load(a, x, [r, 0])
        pl.load(sc, s, [r, 0])
        pl.load(off, o, [r, 0])
        sync(MTE2, V)
        pl.quant(q, a, sc, mode=pl.QuantMode.ASYM, offset=off)
        sync(V, MTE3)
        pl.store(y, q, [r, 0])


@pl.jit
def dequant(x: pl.Tensor[[2 * R, C], I8], s: pl.Tensor[[2 * R, 1], F32],
            o: pl.Tensor[[2 * R, 1], F32], y: pl.Tensor[[2 * R, C], F32]):
    a, sc, d = vt([R, C], I8, 0), vt([R, 1], F32, 0x1000, pl.DN), vt([R, C], F32, 0x2000)
    off = vt([R, 1], F32, 0x3000, pl.DN)
    with pl.section_vector():
        r = pl.get_block_idx() * R
        pl.load(a, x, [r, 0])
        pl.load(sc, s, [r, 0])
        pl.load(off, o, [r, 0])
        sync(MTE2, V)
        pl.dequant(d, a, sc, off)
        sync(V, MTE3)
        pl.store(y, d, [r, 0])


@pl.jit
def quant_bad(x: pl.Tensor[[R, C], F32], s: pl.Tensor[[R, 1], F32],
              y: pl.Tensor[[R, C], U8]):
    a, sc, q = vt([R, C], F32, 0), vt([R, 1], F32, 0x1000, pl.DN), vt([R, C], U8, 0x2000)
    with pl.section_vector():
        pl.quant(q, a, sc)                  # SYM writes int8


# -- gather / scatter -------------------------------------------------------------------------

@pl.jit
def gather(x: pl.Tensor[[2 * R, C], F32], ix: pl.Tensor[[2 * R, C], I32],
           y: pl.Tensor[[2 * R, C], F32]):
    a, i, t, d = vt([R, C], F32, 0), vt([R, C], I32, 0x1000), vt([R, C], I32, 0x2000), \
        vt([R, C], F32, 0x3000)
    with pl.section_vector():
        r = pl.get_block_idx() * R
        pl.load(a, x, [r, 0])
        pl.load(i, ix, [r, 0])
        sync(MTE2, V)
        pl.gather(d, a, i, t, offset=3)
        sync(V, MTE3)
        pl.store(y, d, [r, 0])


@pl.jit
def scatter(x: pl.Tensor[[2 * R, C], F16], ix: pl.Tensor[[2 * R, C], I16],
            y: pl.Tensor[[2 * R, C], F16]):
    a, i, d = vt([R, C], F16, 0), vt([R, C], I16, 0x1000), vt([R, C], F16, 0x2000)
    with pl.section_vector():
        r = pl.get_block_idx() * R
        pl.load(a, x, [r, 0])
        pl.load(i, ix, [r, 0])
        pl.load(d, y, [r, 0])
        sync(MTE2, V)
        pl.scatter(d, a, i)
        sync(V, MTE3)
        pl.store(y, d, [r, 0])


@pl.jit
def scatter_bad_idx(x: pl.Tensor[[R, C], F16], ix: pl.Tensor[[R, C], I32]):
    a, i, d = vt([R, C], F16, 0), vt([R, C], I32, 0x1000), vt([R, C], F16, 0x2000)
    with pl.section_vector():
        pl.scatter(d, a, i)


# -- sorting ----------------------------------------------------------------------------------

def _sort32_kernel(dt, w, cols, tmp):
    def body(x, ix, y):
        a, i = vt([R, cols], dt, 0), vt([1, cols], U32, 0x1000)
        d = vt([R, cols * w], dt, 0x2000)
        t = vt([R, 32], dt, 0x4000) if tmp else None
        with pl.section_vector():
            r = pl.get_block_idx() * R
            pl.load(a, x, [r, 0])
            pl.load(i, ix, [0, 0])
            sync(MTE2, V)
            pl.sort32(d, a, i, t)
            sync(V, MTE3)
            pl.store(y, d, [r, 0])
    return body


@pl.jit
def sort32_f32(x: pl.Tensor[[2 * R, 64], F32], ix: pl.Tensor[[1, 64], U32],
               y: pl.Tensor[[2 * R, 128], F32]):
    _sort32_kernel(F32, 2, 64, False)(x, ix, y)


@pl.jit
def sort32_f16_tail(x: pl.Tensor[[2 * R, 48], F16], ix: pl.Tensor[[1, 48], U32],
                    y: pl.Tensor[[2 * R, 192], F16]):
    _sort32_kernel(F16, 4, 48, True)(x, ix, y)


@pl.jit
def sort32_no_tmp(x: pl.Tensor[[R, 48], F16], ix: pl.Tensor[[1, 48], U32],
                  y: pl.Tensor[[R, 192], F16]):
    _sort32_kernel(F16, 4, 48, False)(x, ix, y)


@pl.jit
def mrgsort(x: pl.Tensor[[1, 512], F32], y: pl.Tensor[[1, 512], F32]):
    a, d = vt([1, 512], F32, 0), vt([1, 512], F32, 0x1000)
    with pl.section_vector():
        pl.load(a, x, [0, 0])
        sync(MTE2, V)
        pl.mrgsort(d, a, block_len=64)
        sync(V, MTE3)
        pl.store(y, d, [0, 0])


# -- histogram --------------------------------------------------------------------------------

HR = 32     # a DN uint8 [HR, 1] column: 32 bytes


def _hist(x, ix, y, msb):
    a, i, d = vt([HR, C], U16, 0), vt([HR, 1], U8, 0x1000, pl.DN), vt([HR, 256], U32, 0x2000)
    with pl.section_vector():
        r = pl.get_block_idx() * HR
        pl.load(a, x, [r, 0])
        pl.load(i, ix, [r, 0])
        sync(MTE2, V)
        pl.histogram(d, a, i, is_msb=msb)
        sync(V, MTE3)
        pl.store(y, d, [r, 0])


@pl.jit
def hist_msb(x: pl.Tensor[[2 * HR, C], U16], ix: pl.Tensor[[2 * HR, 1], U8],
             y: pl.Tensor[[2 * HR, 256], U32]):
    _hist(x, ix, y, True)


@pl.jit
def hist_lsb(x: pl.Tensor[[2 * HR, C], U16], ix: pl.Tensor[[2 * HR, 1], U8],
             y: pl.Tensor[[2 * HR, 256], U32]):
    _hist(x, ix, y, False)


# -- argmax / argmin --------------------------------------------------------------------------

@pl.jit
def arg_rows(x: pl.Tensor[[2 * R, C], F32], mx: pl.Tensor[[2 * R, 1], I32],
             mn: pl.Tensor[[2 * R, 1], I32]):
    a, t = vt([R, C], F32, 0), vt([R, C], F32, 0x1000)
    o1, o2 = vt([R, 1], I32, 0x2000, pl.DN), vt([R, 1], I32, 0x2100, pl.DN)
    with pl.section_vector():
        r = pl.get_block_idx() * R
        pl.load(a, x, [r, 0])
        sync(MTE2, V)
        pl.argmax(o1, a, t, dim=0)
        pl.argmin(o2, a, t, dim=0)
        sync(V, MTE3)
        pl.store(mx, o1, [r, 0])
        pl.store(mn, o2, [r, 0])


@pl.jit
def arg_cols(x: pl.Tensor[[R, C], F16], mx: pl.Tensor[[1, C], U32]):
    a, t, o = vt([R, C], F16, 0), vt([R, C], F16, 0x1000), vt([1, C], U32, 0x2000)
    with pl.section_vector():
        pl.load(a, x, [0, 0])
        sync(MTE2, V)
        pl.argmax(o, a, t, dim=1)
        sync(V, MTE3)
        pl.store(mx, o, [0, 0])


# -- fused forms: one kernel per dtype, the form chosen by a TilingKey ------------------------

def _fused_body(x, y, z, out, kind):
    a, b, c = vt([R, C], x.dtype, 0), vt([R, C], x.dtype, 0x1000), vt([R, C], x.dtype, 0x2000)
    o = vt([R, C], out.dtype, 0x3000)
    t = vt([R, C], x.dtype, 0x5000)
    with pl.section_vector():
        r = pl.get_block_idx() * R
        pl.load(a, x, [r, 0])
        pl.load(b, y, [r, 0])
        pl.load(c, z, [r, 0])
        pl.load(o, out, [r, 0])
        sync(MTE2, V)
        if kind == "addc":
            pl.addc(o, a, b, c)
        elif kind == "axpy":
            pl.axpy(o, a, 1.5)
        elif kind == "xor":
            pl.xor(o, a, b, t)
        elif kind.endswith("cast"):
            getattr(pl, kind)(o, a, b, target_type=out.dtype)
        else:
            getattr(pl, kind)(o, a, b)
        sync(V, MTE3)
        pl.store(out, o, [r, 0])



@pl.jit
def f_add_relu_f32(x: pl.Tensor[[2 * R, C], F32], y: pl.Tensor[[2 * R, C], F32],
                   z: pl.Tensor[[2 * R, C], F32], out: pl.Tensor[[2 * R, C], F32]):
    _fused_body(x, y, z, out, "add_relu")


@pl.jit
def f_sub_relu_f16(x: pl.Tensor[[2 * R, C], F16], y: pl.Tensor[[2 * R, C], F16],
                   z: pl.Tensor[[2 * R, C], F16], out: pl.Tensor[[2 * R, C], F16]):
    _fused_body(x, y, z, out, "sub_relu")


@pl.jit
def f_addc_f32(x: pl.Tensor[[2 * R, C], F32], y: pl.Tensor[[2 * R, C], F32],
               z: pl.Tensor[[2 * R, C], F32], out: pl.Tensor[[2 * R, C], F32]):
    _fused_body(x, y, z, out, "addc")


@pl.jit
def f_mul_add_dst_f32(x: pl.Tensor[[2 * R, C], F32], y: pl.Tensor[[2 * R, C], F32],
                      z: pl.Tensor[[2 * R, C], F32], out: pl.Tensor[[2 * R, C], F32]):
    _fused_body(x, y, z, out, "mul_add_dst")


@pl.jit
def f_fused_mul_add_f16(x: pl.Tensor[[2 * R, C], F16], y: pl.Tensor[[2 * R, C], F16],
                        z: pl.Tensor[[2 * R, C], F16], out: pl.Tensor[[2 * R, C], F16]):
    _fused_body(x, y, z, out, "fused_mul_add")


@pl.jit
def f_fused_mul_add_relu_f32(x: pl.Tensor[[2 * R, C], F32], y: pl.Tensor[[2 * R, C], F32],
                             z: pl.Tensor[[2 * R, C], F32], out: pl.Tensor[[2 * R, C], F32]):
    _fused_body(x, y, z, out, "fused_mul_add_relu")


@pl.jit
def f_axpy_f32(x: pl.Tensor[[2 * R, C], F32], y: pl.Tensor[[2 * R, C], F32],
               z: pl.Tensor[[2 * R, C], F32], out: pl.Tensor[[2 * R, C], F32]):
    _fused_body(x, y, z, out, "axpy")


@pl.jit
def f_shl_i32(x: pl.Tensor[[2 * R, C], I32], y: pl.Tensor[[2 * R, C], I32],
              z: pl.Tensor[[2 * R, C], I32], out: pl.Tensor[[2 * R, C], I32]):
    _fused_body(x, y, z, out, "shl")


@pl.jit
def f_shr_i16(x: pl.Tensor[[2 * R, C], I16], y: pl.Tensor[[2 * R, C], I16],
              z: pl.Tensor[[2 * R, C], I16], out: pl.Tensor[[2 * R, C], I16]):
    _fused_body(x, y, z, out, "shr")


@pl.jit
def f_xor_i32(x: pl.Tensor[[2 * R, C], I32], y: pl.Tensor[[2 * R, C], I32],
              z: pl.Tensor[[2 * R, C], I32], out: pl.Tensor[[2 * R, C], I32]):
    _fused_body(x, y, z, out, "xor")


@pl.jit
def f_add_relu_cast_f32(x: pl.Tensor[[2 * R, C], F32], y: pl.Tensor[[2 * R, C], F32],
                        z: pl.Tensor[[2 * R, C], F32], out: pl.Tensor[[2 * R, C], F16]):
    _fused_body(x, y, z, out, "add_relu_cast")


@pl.jit
def f_sub_relu_cast_i32(x: pl.Tensor[[2 * R, C], I32], y: pl.Tensor[[2 * R, C], I32],
                        z: pl.Tensor[[2 * R, C], I32], out: pl.Tensor[[2 * R, C], I16]):
    _fused_body(x, y, z, out, "sub_relu_cast")


@pl.jit
def f_mul_cast_f32(x: pl.Tensor[[2 * R, C], F32], y: pl.Tensor[[2 * R, C], F32],
                   z: pl.Tensor[[2 * R, C], F32], out: pl.Tensor[[2 * R, C], F16]):
    _fused_body(x, y, z, out, "mul_cast")


@pl.jit
def f_add_relu_i32(x: pl.Tensor[[2 * R, C], I32], y: pl.Tensor[[2 * R, C], I32],
                   z: pl.Tensor[[2 * R, C], I32], out: pl.Tensor[[2 * R, C], I32]):
    _fused_body(x, y, z, out, "add_relu")


@pl.jit
def f_shr_u16(x: pl.Tensor[[2 * R, C], U16], y: pl.Tensor[[2 * R, C], U16],
              z: pl.Tensor[[2 * R, C], U16], out: pl.Tensor[[2 * R, C], U16]):
    _fused_body(x, y, z, out, "shr")


FUSED_KERNELS = {n: globals()[n] for n in list(globals()) if n.startswith("f_")}


# -- fillpad ----------------------------------------------------------------------------------

@pl.jit
def fillpad_modes(x: pl.Tensor[[R, C], F32], i: pl.Tensor[[R, C], I16],
                  y: pl.Tensor[[R, C], F32], j: pl.Tensor[[R, C], I16],
                  e: pl.Tensor[[2 * R, 2 * C], F32]):
    """NORMAL (pad min: -inf), INPLACE (int16, pad max), EXPAND (into [2R, 2C], pad zero)."""
    src = pl.make_tile(pl.TileType([R, C], F32, Vec, valid_shape=[5, 40]), addr=0)
    out = pl.make_tile(pl.TileType([R, C], F32, Vec, pad=pl.TilePad.min), addr=0x1000)
    it = pl.make_tile(pl.TileType([R, C], I16, Vec, valid_shape=[3, 16],
                                  pad=pl.TilePad.max), addr=0x2000)
    big = pl.make_tile(pl.TileType([2 * R, 2 * C], F32, Vec, pad=pl.TilePad.zero),
                       addr=0x3000)
    with pl.section_vector():
        pl.load(src, x, [0, 0])
        pl.load(it, i, [0, 0])
        sync(MTE2, V)
        pl.fillpad(out, src)
        pl.fillpad(it, it, mode=pl.FillPadMode.INPLACE)
        pl.fillpad(big, src, mode=pl.FillPadMode.EXPAND)
        sync(V, MTE3)
        pl.store(y, out, [0, 0])
        pl.set_validshape(it, [R, C])
        pl.store(j, it, [0, 0])
        pl.store(e, big, [0, 0])


@pl.jit
def fillpad_no_pad(x: pl.Tensor[[R, C], F32]):
    a, b = vt([R, C], F32, 0), vt([R, C], F32, 0x1000)
    with pl.section_vector():
        pl.fillpad(b, a)
