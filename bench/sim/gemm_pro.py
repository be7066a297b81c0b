"""GEMM c = a @ b, fp16 in, fp32 out, as a Pro kernel written the way a tuned kernel is:
output tiles [128, 256], K in L1 steps of 256 (stepK 4 x 64), double-buffered in L1 (A and
B) and in L0A / L0B, so MTE2 loads the next step while MTE1 and the cube work on this one.
The programs a lowering with N-buffering would make (issue 10 item 1), written by hand: a
check that the simulator times a pipelined program as such. Each block takes every
block_num-th output tile. K must be a multiple of 512 (two L1 steps per loop trip), M of
128 and N of 256 (STATIC sizes: `--bind a_0=M --bind a_1=K --bind b_0=K --bind b_1=N --bind c_0=M --bind c_1=N`)."""
import libpypto.pro as pl

TM, TN, TK, TK1 = 128, 256, 64, 256
F16, F32 = pl.DT_FP16, pl.DT_FP32
MTE1, MTE2, MM, FIX = pl.PipeType.MTE1, pl.PipeType.MTE2, pl.PipeType.M, pl.PipeType.FIX
Mat, Left, Right, Acc = (pl.MemorySpace.Mat, pl.MemorySpace.Left, pl.MemorySpace.Right,
                         pl.MemorySpace.Acc)


def src(a, b, ev):
    pl.system.sync_src(set_pipe=a, wait_pipe=b, event_id=ev)


def dst(a, b, ev):
    pl.system.sync_dst(set_pipe=a, wait_pipe=b, event_id=ev)


@pl.jit
def gemm(a: pl.Tensor[[pl.STATIC, pl.STATIC], F16], b: pl.Tensor[[pl.STATIC, pl.STATIC], F16],
         c: pl.Tensor[[pl.STATIC, pl.STATIC], F32]):
    a1 = [pl.make_tile(pl.TileType([TM, TK1], F16, Mat), addr=x) for x in (0x00000, 0x10000)]
    b1 = [pl.make_tile(pl.TileType([TK1, TN], F16, Mat), addr=x) for x in (0x20000, 0x40000)]
    a0 = [pl.make_tile(pl.TileType([TM, TK], F16, Left), addr=x) for x in (0x0000, 0x4000)]
    b0 = [pl.make_tile(pl.TileType([TK, TN], F16, Right), addr=x) for x in (0x0000, 0x8000)]
    acc = pl.make_tile(pl.TileType([TM, TN], F32, Acc), addr=0)
    m, n, k = a.shape[0], b.shape[1], a.shape[1]
    tn, steps = n // TN, k // TK1
    with pl.section_cube():
        for e in (0, 1):
            src(MTE1, MTE2, e)              # both L1 buffers start free
            src(MM, MTE1, e)                # both L0 buffers start free
        src(FIX, MM, 0)                     # the accumulator starts free
        for t in pl.range(pl.get_block_idx(), (m // TM) * tn, pl.get_block_num()):
            row, col = t // tn, t % tn
            dst(FIX, MM, 0)                 # the last tile's result has left the accumulator
            for s2 in pl.range(0, steps, 2):
                for h in (0, 1):            # L1 buffer h holds step s2 + h
                    s = s2 + h
                    dst(MTE1, MTE2, h)
                    pl.load(a1[h], a, [row * TM, s * TK1])
                    pl.load(b1[h], b, [s * TK1, col * TN])
                    src(MTE2, MTE1, h)
                    dst(MTE2, MTE1, h)
                    for k0 in range(TK1 // TK):
                        e = k0 % 2          # L0 buffers alternate
                        dst(MM, MTE1, e)
                        pl.move(a0[e], a1[h], offset=[0, k0 * TK])
                        pl.move(b0[e], b1[h], offset=[k0 * TK, 0])
                        src(MTE1, MM, e)
                        dst(MTE1, MM, e)
                        if h == 0 and k0 == 0:
                            if s2 == 0:
                                pl.matmul(acc, a0[e], b0[e])
                            else:
                                pl.matmul_acc(acc, acc, a0[e], b0[e])
                        else:
                            pl.matmul_acc(acc, acc, a0[e], b0[e])
                        src(MM, MTE1, e)
                    src(MTE1, MTE2, h)
            src(MM, FIX, 0)
            dst(MM, FIX, 0)
            pl.store(c, acc, [row * TM, col * TN])
            src(FIX, MM, 0)
        for e in (0, 1):
            dst(MTE1, MTE2, e)
            dst(MM, MTE1, e)
        dst(FIX, MM, 0)


def reference(a, b):
    import numpy as np
    return {"c": a.astype(np.float32) @ b.astype(np.float32)}


EXAMPLE = {"kernel": "gemm", "block_dim": 3, "bind": {"a_0": 256, "a_1": 512, "b_0": 512, "b_1": 512, "c_0": 256, "c_1": 512}}
