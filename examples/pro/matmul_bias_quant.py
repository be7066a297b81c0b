"""Matmul with a bias tile and the fixpipe's options, int8 x int8 -> int32: A and B go GM ->
L1 (MTE2) -> L0A / L0B (MTE1), the bias row GM -> L1 -> the bias table (MTE1, MemorySpace.Bias),
`pl.matmul(acc, a0, b0, bias)` adds it to every row (M), and two stores through FIX: q, the
result quantised to int8 (relu, then x * SCALE, rounded and saturated), and s, the
result dequantised to fp16 with a runtime scale (the `dequant` scalar, DEQUANT in the
example). Each block takes every block_num-th [32, 64] output tile."""
import libpypto.pro as pl

M, N, K = 128, 128, 64            # the whole problem
TM, TN = 32, 64                   # one output tile
SCALE = 0.01
DEQUANT = 0.25                    # the runtime scale the example launches with
MTE1, MTE2, MM, FIX = pl.PipeType.MTE1, pl.PipeType.MTE2, pl.PipeType.M, pl.PipeType.FIX
I8, I32 = pl.DT_INT8, pl.DT_INT32


def sync(src, dst, ev=0):
    pl.system.sync_src(set_pipe=src, wait_pipe=dst, event_id=ev)
    pl.system.sync_dst(set_pipe=src, wait_pipe=dst, event_id=ev)


@pl.jit
def matmul_bias_quant(a: pl.Tensor[[M, K], I8], b: pl.Tensor[[K, N], I8],
                      bias: pl.Tensor[[1, N], I32], q: pl.Tensor[[M, N], I8],
                      s: pl.Tensor[[M, N], pl.DT_FP16], dequant: pl.DT_FP32):
    a1 = pl.make_tile(pl.TileType([TM, K], I8, pl.MemorySpace.Mat), addr=0x0000)
    b1 = pl.make_tile(pl.TileType([K, TN], I8, pl.MemorySpace.Mat), addr=0x1000)
    c1 = pl.make_tile(pl.TileType([1, TN], I32, pl.MemorySpace.Mat), addr=0x2000)
    a0 = pl.make_tile(pl.TileType([TM, K], I8, pl.MemorySpace.Left), addr=0)
    b0 = pl.make_tile(pl.TileType([K, TN], I8, pl.MemorySpace.Right), addr=0)
    c0 = pl.make_tile(pl.TileType([1, TN], I32, pl.MemorySpace.Bias), addr=0)
    acc = pl.make_tile(pl.TileType([TM, TN], I32, pl.MemorySpace.Acc), addr=0)
    tn = N // TN
    with pl.section_cube():
        for t in pl.range(pl.get_block_idx(), (M // TM) * tn, pl.get_block_num()):
            pl.load_tile(a1, a, [t // tn, 0])
            pl.load_tile(b1, b, [0, t % tn])
            pl.load_tile(c1, bias, [0, t % tn])
            sync(MTE2, MTE1)
            pl.move(a0, a1)
            pl.move(b0, b1)
            pl.move(c0, c1)                    # Mat -> Bias
            sync(MTE1, MTE2, 1)                # L1 tiles free for the next tile's loads
            sync(MTE1, MM)
            pl.matmul(acc, a0, b0, c0)
            sync(MM, MTE1)                     # L0 and bias tiles free for the next moves
            sync(MM, FIX)
            pl.store_tile(q, acc, [t // tn, t % tn], relu_pre_mode=pl.ReluPreMode.NormalRelu,
                          scale=SCALE)
            pl.store_tile(s, acc, [t // tn, t % tn], scale=dequant)
            sync(FIX, MM)                      # the accumulator is free again


def reference(a, b, bias):
    import numpy as np
    acc = a.astype(np.int64) @ b.astype(np.int64) + bias.astype(np.int64)
    w = np.maximum(acc, 0).astype(np.float32) * np.float32(SCALE)
    q = np.clip(np.rint(w), -128, 127).astype(np.int8)
    s = (acc.astype(np.float32) * np.float32(DEQUANT)).astype(np.float16)
    return {"q": q, "s": s}


EXAMPLE = {"kernel": "matmul_bias_quant", "block_dim": 3, "bind": {"dequant": DEQUANT}}
