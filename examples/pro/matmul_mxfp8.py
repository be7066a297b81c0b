"""out = dequant(a, sa) @ dequant(b, sb): an MXFP8 matmul on the 950 (arch="a5"), a cube-only
kernel. a [M, K] and b [K, N] are fp8 e4m3; every 32 consecutive elements along K share one
E8M0 scale 2**(e - 127), given in the reference's packed layout: scale_a [M, K/64, 2]
(scale_a[m, g // 2, g % 2] scales a[m, 32g:32g+32]) and scale_b [K/64, N, 2]. Each cluster
computes a [TM, N] row block over K blocks of KT: the data through Mat into Left / Right, the
scales through ZZ / NN Mat tiles into ScaleLeft / ScaleRight at the data tiles' addresses
>> 4, matmul_mx on the first block and matmul_mx_acc on the rest, then FIX stores fp32."""
import libpypto.pro as pl

M, N, K = 128, 64, 256
TM, KT = 64, 64
MTE1, MTE2, MM, FIX = pl.PipeType.MTE1, pl.PipeType.MTE2, pl.PipeType.M, pl.PipeType.FIX
E4M3, E8M0 = pl.DT_FP8E4M3FN, pl.DT_FP8E8M0


def sync(src, dst, ev=0):
    pl.system.sync_src(set_pipe=src, wait_pipe=dst, event_id=ev)
    pl.system.sync_dst(set_pipe=src, wait_pipe=dst, event_id=ev)


def tile(shape, dtype, space, addr, layout=None):
    return pl.make_tile(pl.TileType(shape, dtype, space, layout=layout), addr=addr)


@pl.jit(arch="a5")
def matmul_mxfp8(a: pl.Tensor[[M, K], E4M3], b: pl.Tensor[[K, N], E4M3],
                 scale_a: pl.Tensor[[M, K // 64, 2], E8M0],
                 scale_b: pl.Tensor[[K // 64, N, 2], E8M0],
                 out: pl.Tensor[[M, N], pl.DT_FP32]):
    Mat, Left, Right = pl.MemorySpace.Mat, pl.MemorySpace.Left, pl.MemorySpace.Right
    a1 = tile([TM, KT], E4M3, Mat, 0x0000)
    b1 = tile([KT, N], E4M3, Mat, 0x1000)
    sa1 = tile([TM, KT // 32], E8M0, Mat, 0x2000, pl.ZZ)
    sb1 = tile([KT // 32, N], E8M0, Mat, 0x2100, pl.NN)
    a0 = tile([TM, KT], E4M3, Left, 0x0400)
    b0 = tile([KT, N], E4M3, Right, 0x0800)
    sa0 = tile([TM, KT // 32], E8M0, pl.MemorySpace.ScaleLeft, 0x0040)      # 0x0400 >> 4
    sb0 = tile([KT // 32, N], E8M0, pl.MemorySpace.ScaleRight, 0x0080)     # 0x0800 >> 4
    acc = tile([TM, N], pl.DT_FP32, pl.MemorySpace.Acc, 0)
    with pl.section_cube():
        row = pl.get_block_idx() * TM
        for kb in pl.range(K // KT):
            pl.load(a1, a, [row, kb * KT])
            pl.load(b1, b, [kb * KT, 0])
            pl.load(sa1, scale_a, [row, kb * (KT // 64), 0], order=[0, 1])
            pl.load(sb1, scale_b, [kb * (KT // 64), 0, 0], order=[0, 1])
            sync(MTE2, MTE1)
            pl.move(a0, a1)
            pl.move(b0, b1)
            pl.move(sa0, sa1)
            pl.move(sb0, sb1)
            sync(MTE1, MTE2, 1)                 # Mat free for the next block's loads
            sync(MTE1, MM)
            if kb == 0:
                pl.matmul_mx(acc, a0, b0, sa0, sb0)
            else:
                pl.matmul_mx_acc(acc, acc, a0, b0, sa0, sb0)
            sync(MM, MTE1, 1)                   # Left / Right free for the next moves
        sync(MM, FIX)
        pl.store(out, acc, [row, 0])


def reference(a, b, scale_a, scale_b):
    """float64 from the dequantised operands: each E8M0 scale repeated over its 32 of K."""
    import numpy as np
    g = K // 32
    sa = scale_a.astype(np.float64).reshape(M, g)
    sb = scale_b.astype(np.float64).transpose(0, 2, 1).reshape(g, N)
    da = a.astype(np.float64) * np.repeat(sa, 32, axis=1)
    db = b.astype(np.float64) * np.repeat(sb, 32, axis=0)
    return {"out": da @ db}


EXAMPLE = {"kernel": "matmul_mxfp8", "block_dim": M // TM, "target": "950"}   # MX: the 950
