"""GLM-4.5 paged decode attention (hicann/pypto models/glm_v4_5/glm_attention.py, the kernel
ifa_func_kernel): each query row attends to its sequence's keys and values, which live in
fixed-size blocks of a shared KV cache, found through a block table; each sequence has its own
length (kv_act_seqs). The loop over a sequence's KV tiles runs kv_act_seqs[b] / s2_tile times,
and the K and V tiles are gathered block by block at offsets read from block_table: both are
data-dependent scalars, read from the integer input tensors when the kernel runs.

Written as the reference writes it: pypto.frontend.jit with runtime_options and
pass_options, Tensor([DYNAMIC, ...]) annotations, a tile_config object, inplace reshapes,
loops with name/idx_name (and unroll_list, warned: iterations run in order here), an online
softmax over the s2 loop under is_loop_begin / is_loop_end, and the tail tile's width as a
valid_shape of the score tile, and the reference's scheduling hints (set_operation_options,
set_pass_options(sg_set_scope=...): warned, they tune its device lowering). Differences
from the reference file: the tile configuration is a small dataclass made here; a few local
names of the kernel's first lines are folded (n2_sym, g, the 2-D shape tuples); the sizes are small (check() runs b=3 sequences
of 40, 64 and 17 tokens, 4 query heads sharing 1 KV head, head dim 64, blocks of 16, s2
tiles of 32).
"""
from dataclasses import dataclass

import numpy as np

import libpypto as pypto          # the reference: import pypto


@dataclass
class IfaTileShapeConfig:
    g_tile: int
    s2_tile: int
    c1_tile_shape: list
    v1_tile_shape: list
    c2_tile_shape: list
    v2_tile_shape: list


@pypto.frontend.jit(
    runtime_options={"stitch_function_max_num": 1024,
                     "ready_on_host_tensors": ["block_table", "kv_act_seqs"]},
    pass_options={"cube_l1_reuse_setting": {0: 8}, "cube_nbuffer_setting": {-1: 8}},
)
def ifa_func_kernel(
    q: pypto.Tensor([pypto.DYNAMIC, ...], pypto.DT_BF16),
    k: pypto.Tensor([pypto.DYNAMIC, ...], pypto.DT_BF16),
    v: pypto.Tensor([pypto.DYNAMIC, ...], pypto.DT_BF16),
    block_table: pypto.Tensor([pypto.DYNAMIC, ...], pypto.DT_INT32),
    kv_act_seqs: pypto.Tensor([pypto.DYNAMIC], pypto.DT_INT32),
    atten_out: pypto.Tensor([pypto.DYNAMIC, ...], pypto.DT_BF16),
    softmax_scale,
    tile_config,
):
    pypto.experimental.set_operation_options(combine_axis=True)

    shape_q = q.shape
    shape_k = k.shape
    bs_scalar = shape_q[0]
    nq = shape_q[1]
    block_num_scalar = shape_k[0]
    block_size = shape_k[1]
    nkv = shape_k[2]
    dn = shape_k[3]
    b_scalar = kv_act_seqs.shape[0]

    dtype = q.dtype
    group = nq // nkv
    g_tile = tile_config.g_tile
    s2_tile = tile_config.s2_tile
    c1_tile = tile_config.c1_tile_shape
    v1_tile = tile_config.v1_tile_shape
    c2_tile = tile_config.c2_tile_shape
    v2_tile = tile_config.v2_tile_shape

    s1_scalar = bs_scalar // b_scalar
    g_loop = group // g_tile

    k_2d = pypto.reshape(k, (block_num_scalar * block_size, nkv * dn), inplace=True)
    v_2d = pypto.reshape(v, (block_num_scalar * block_size, nkv * dn), inplace=True)
    q_2d = pypto.reshape(q, (b_scalar * s1_scalar * nq, dn), inplace=True)
    for b_idx in pypto.loop(b_scalar, name="LOOP_b", idx_name="b_idx"):
        for s1_idx in pypto.loop(s1_scalar, name="LOOP_s1", idx_name="s1_idx"):
            cur_seq = kv_act_seqs[b_idx] - (s1_scalar - 1 - s1_idx)
            s2_loop = (cur_seq + s2_tile - 1) // s2_tile
            for n2_idx in pypto.loop(nkv, name="LOOP_n2", idx_name="n2_idx"):
                for g_idx in pypto.loop(g_loop, name="LOOP_g", idx_name="g_idx"):
                    oi_update = pypto.tensor([g_tile, dn], pypto.DT_FP32, "oi_update")
                    sum_update = pypto.tensor([g_tile, 1], pypto.DT_FP32, "sum_update")
                    max_update = pypto.tensor([g_tile, 1], pypto.DT_FP32, "max_update")
                    for s2_idx in pypto.loop(s2_loop, name="LOOP_s2", idx_name="s2_idx",
                                             unroll_list=[8, 4, 2, 1]):
                        block_num = s2_tile // block_size
                        idx = s2_idx * block_num
                        bs_ofs = b_idx * s1_scalar + s1_idx
                        n1g_ofs = n2_idx * group + g_idx * g_tile
                        actual_s2_tile = (cur_seq - s2_idx * s2_tile).min(s2_tile)
                        oi_ofs = [bs_ofs, n1g_ofs, 0]
                        pypto.set_vec_tile_shapes(v1_tile[0], v1_tile[1])
                        qi = pypto.view(q_2d, [g_tile, dn], [bs_ofs * nq + n1g_ofs, 0])

                        kj_assemble = pypto.tensor([s2_tile, dn], k_2d.dtype, "kj_assemble")
                        for i in range(block_num):
                            block_idx = block_table[b_idx, idx + i]
                            block_idx_valid = block_idx.max(0)
                            kj_assemble[i * block_size:(i + 1) * block_size, 0:] = pypto.view(
                                k_2d, [block_size, dn], [block_idx_valid * block_size, n2_idx * dn])
                        kj_assemble = pypto.view(kj_assemble, [s2_tile, dn], [0, 0],
                                                 valid_shape=[s2_tile, dn])

                        pypto.set_cube_tile_shapes(c1_tile[0], c1_tile[1], c1_tile[2])
                        sij = pypto.matmul(qi, kj_assemble, pypto.DT_FP32, a_trans=False,
                                           b_trans=True)
                        sij = pypto.view(sij, [g_tile, s2_tile], [0, 0],
                                         valid_shape=[g_tile, actual_s2_tile])
                        pypto.set_vec_tile_shapes(v1_tile[0], v1_tile[1])
                        if pypto.is_loop_begin(s2_idx):
                            sij_scale = pypto.mul(sij, softmax_scale)
                            tilda_mij = pypto.amax(sij_scale, dim=-1, keepdim=True)
                            tilda_pij = pypto.exp(pypto.sub(sij_scale, tilda_mij))
                            tilda_pij_fp16 = pypto.cast(tilda_pij, dtype)
                            sum_update[:] = pypto.sum(tilda_pij, dim=-1, keepdim=True)
                            max_update[:] = tilda_mij
                            vj_assemble = pypto.tensor([s2_tile, dn], v_2d.dtype, "vj_assemble")
                            for i in range(block_num):
                                block_idx = block_table[b_idx, idx + i]
                                block_idx_valid = block_idx.max(0)
                                vj_assemble[i * block_size:(i + 1) * block_size, 0:] = pypto.view(
                                    v_2d, [block_size, dn], [block_idx_valid * block_size, n2_idx * dn])
                            vj_assemble = pypto.view(vj_assemble, [s2_tile, dn], [0, 0],
                                                     valid_shape=[actual_s2_tile, dn])
                            pypto.set_cube_tile_shapes(c2_tile[0], c2_tile[1], c2_tile[2])
                            oi_tmp = pypto.matmul(tilda_pij_fp16, vj_assemble, pypto.DT_FP32)
                            pypto.set_vec_tile_shapes(v2_tile[0], v2_tile[1])
                            oi_update[:] = oi_tmp
                        else:
                            pypto.set_pass_options(sg_set_scope=1)
                            sij_scale = pypto.mul(sij, softmax_scale)
                            tilda_mij = pypto.amax(sij_scale, dim=-1, keepdim=True)
                            max_new = pypto.maximum(max_update, tilda_mij)
                            tilda_pij = pypto.exp(pypto.sub(sij_scale, max_new))
                            tilda_pij_fp16 = pypto.cast(tilda_pij, dtype)
                            sum_local = pypto.sum(tilda_pij, dim=-1, keepdim=True)
                            pypto.set_pass_options(sg_set_scope=-1)

                            pypto.set_pass_options(sg_set_scope=2)
                            update_mul = pypto.exp(pypto.sub(max_update, max_new))
                            max_update[:] = max_new
                            sum_update[:] = sum_update * update_mul + sum_local
                            pypto.set_pass_options(sg_set_scope=-1)

                            vj_assemble = pypto.tensor([s2_tile, dn], v_2d.dtype, "vj_assemble")
                            for i in range(block_num):
                                block_idx = block_table[b_idx, idx + i]
                                block_idx_valid = block_idx.max(0)
                                vj_assemble[i * block_size:(i + 1) * block_size, 0:] = pypto.view(
                                    v_2d, [block_size, dn], [block_idx_valid * block_size, n2_idx * dn])
                            vj_assemble = pypto.view(vj_assemble, [s2_tile, dn], [0, 0],
                                                     valid_shape=[actual_s2_tile, dn])
                            pypto.set_cube_tile_shapes(c2_tile[0], c2_tile[1], c2_tile[2])
                            oi_tmp = pypto.matmul(tilda_pij_fp16, vj_assemble, pypto.DT_FP32)
                            pypto.set_vec_tile_shapes(v2_tile[0], v2_tile[1])
                            oi_update[:] = oi_update * update_mul + oi_tmp
                        if pypto.is_loop_end(s2_idx):
                            oi_final = pypto.div(oi_update, sum_update,
                                                 precision_type=pypto.PrecisionType.INTRINSIC)
                            pypto.set_vec_tile_shapes(16, v2_tile[0], v2_tile[1])
                            oi_final_3d = pypto.cast(pypto.reshape(oi_final, [1, g_tile, dn]),
                                                     dtype)
                            pypto.assemble(oi_final_3d, oi_ofs, atten_out)


def make_inputs(seqs=(40, 64, 17), nq=4, dn=64, block_size=16, s2_tile=32, seed=0):
    """q [b, nq, dn]; a KV cache of shuffled blocks [blocks, block_size, 1, dn]; each
    sequence's blocks in its block_table row (-1 past its end: the kernel reads whole s2
    tiles of block ids, so a row is padded to a multiple of s2_tile / block_size), its length
    in kv_act_seqs."""
    import ml_dtypes
    rng = np.random.default_rng(seed)
    b = len(seqs)
    per = [(s + block_size - 1) // block_size for s in seqs]
    per_tile = s2_tile // block_size
    max_blocks = (max(per) + per_tile - 1) // per_tile * per_tile
    nblocks = sum(per) + 2                   # two blocks no sequence uses
    order = rng.permutation(nblocks)
    table = np.full((b, max_blocks), -1, np.int32)
    used = 0
    for i, n in enumerate(per):
        table[i, :n] = order[used:used + n]
        used += n
    bf = ml_dtypes.bfloat16
    q = rng.standard_normal((b, nq, dn)).astype(bf)
    k = rng.standard_normal((nblocks, block_size, 1, dn)).astype(bf)
    v = rng.standard_normal((nblocks, block_size, 1, dn)).astype(bf)
    return q, k, v, table, np.array(seqs, np.int32)


def reference(q, k, v, block_table, kv_act_seqs, softmax_scale):
    """Per sequence: softmax(q K^T * scale) V over its first kv_act_seqs[b] cached tokens."""
    b, nq, dn = q.shape
    bsz = k.shape[1]
    out = np.zeros((b, nq, dn), np.float64)
    for i in range(b):
        n = int(kv_act_seqs[i])
        blocks = block_table[i, :(n + bsz - 1) // bsz]
        kk = k[blocks, :, 0, :].reshape(-1, dn)[:n].astype(np.float64)
        vv = v[blocks, :, 0, :].reshape(-1, dn)[:n].astype(np.float64)
        s = q[i].astype(np.float64) @ kk.T * softmax_scale
        e = np.exp(s - s.max(-1, keepdims=True))
        out[i] = (e / e.sum(-1, keepdims=True)) @ vv
    return out


def check(backend="c", seqs=(40, 64, 17), seed=0):
    """Run the kernel on random data and compare with numpy (bf16 output: rtol/atol 2e-2)."""
    import ml_dtypes
    q, k, v, table, seq = make_inputs(seqs, seed=seed)
    cfg = IfaTileShapeConfig(g_tile=4, s2_tile=32,
                             c1_tile_shape=[[16, 16], [64, 64], [32, 32]],
                             v1_tile_shape=[16, 32],
                             c2_tile_shape=[[16, 16], [32, 32], [64, 64]],
                             v2_tile_shape=[16, 64])
    out = np.zeros(q.shape, ml_dtypes.bfloat16)
    scale = 64 ** -0.5
    ifa_func_kernel.options["backend"] = backend
    ifa_func_kernel(q, k, v, table, seq, out, scale, cfg)
    np.testing.assert_allclose(out.astype(np.float64), reference(q, k, v, table, seq, scale),
                               rtol=2e-2, atol=2e-2)
    return out
