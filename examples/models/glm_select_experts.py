"""GLM-4.5 MoE expert selection (hicann/pypto models/glm_v4_5/glm_select_experts.py, the
kernel select_experts_kernel): sigmoid of the router logits plus a bf16 score bias, group
maxima, top-k groups (scatter_ of a zero mask), the masked top-k experts and their
renormalised weights, one token row per loop iteration.

Ported by changing only the import line (and the helper's name, kept): topk indices are
DT_INT32 as in the reference, full/reshape/expand_clone take valid_shape=, scatter_ works
in place on a computed value, `if pypto.symbolic_scalar(flag):` is a runtime branch.
"""
import numpy as np

import libpypto as pypto          # the reference: import pypto


def process_main_loop_interation(bs_idx, logits_input, e_score_bias_2d, weight_k, ids_k, bs, ne,
                                 view_shape, view_first, topk, topk_group, num_expert_group,
                                 renormalize_flag):
    tile_logits = pypto.view(
        logits_input,
        view_shape,
        [bs_idx * view_shape[0], 0],
        valid_shape=[(bs - bs_idx * view_shape[0]).min(view_shape[0]), ne],
    )
    pypto.set_vec_tile_shapes(view_first, ne)
    tile_logits_fp32 = pypto.cast(tile_logits, pypto.DT_FP32)
    e_score_bias_2d_cast = pypto.cast(e_score_bias_2d, tile_logits_fp32.dtype)
    topk_weights = pypto.sigmoid(tile_logits_fp32)
    topk_weights_add = pypto.add(topk_weights, e_score_bias_2d_cast)
    group_unit = ne // num_expert_group
    r1 = pypto.reshape(
        topk_weights_add,
        [view_shape[0], num_expert_group, group_unit],
        valid_shape=[(bs - bs_idx * view_shape[0]).min(view_shape[0]), num_expert_group, group_unit],
    )
    pypto.set_vec_tile_shapes(view_first, num_expert_group, group_unit)
    max1 = pypto.amax(r1, -1, False)
    group_weight = max1
    pypto.set_vec_tile_shapes(view_first, num_expert_group)
    _, topk_group_indices = pypto.topk(group_weight, topk_group, -1, True)
    topk_group_mask = pypto.full(
        [view_shape[0], num_expert_group],
        0.0,
        group_weight.dtype,
        valid_shape=[(bs - bs_idx * view_shape[0]).min(view_shape[0]), num_expert_group],
    )
    topk_group_mask_scatter_trans = pypto.scatter_(topk_group_mask, 1, topk_group_indices, 1.0)
    twm_unsqueeze = pypto.unsqueeze(topk_group_mask_scatter_trans, -1)
    pypto.set_vec_tile_shapes(view_first, num_expert_group, ne)
    twm_expand = pypto.expand_clone(
        twm_unsqueeze,
        [view_shape[0], num_expert_group, group_unit],
        valid_shape=[(bs - bs_idx * view_shape[0]).min(view_shape[0]), num_expert_group, group_unit],
    )
    pypto.set_vec_tile_shapes(view_first, num_expert_group, group_unit)
    twm_reshape = pypto.reshape(
        twm_expand, [view_shape[0], ne], valid_shape=[(bs - bs_idx * view_shape[0]).min(view_shape[0]), ne]
    )
    pypto.set_vec_tile_shapes(view_first, ne)
    twm_not = pypto.logical_not(twm_reshape)
    topk_weights_maskfill = pypto.where(twm_not, 0.0, topk_weights_add)
    _, topk_ids = pypto.topk(topk_weights_maskfill, topk, -1, True)
    tw_gather = pypto.gather(topk_weights, 1, topk_ids)
    pypto.set_vec_tile_shapes(view_first, topk)
    if pypto.symbolic_scalar(renormalize_flag):
        denominator = pypto.sum(tw_gather, -1, True)
        topk_weight_out = pypto.div(tw_gather, denominator)
    else:
        denominator = tw_gather
        topk_weight_out = denominator
    weight_k[bs_idx * view_shape[0]:, 0:] = topk_weight_out
    ids_k[bs_idx * view_shape[0]:, 0:] = topk_ids


@pypto.frontend.jit(runtime_options={"stitch_function_max_num": 128})
def select_experts_kernel(
    logits: pypto.Tensor([pypto.DYNAMIC, ...], pypto.DT_FP32),
    e_score_bias_input: pypto.Tensor([], pypto.DT_BF16),
    weight_k: pypto.Tensor([pypto.DYNAMIC, ...], pypto.DT_FP32),
    index_k: pypto.Tensor([pypto.DYNAMIC, ...], pypto.DT_INT32),
    renormalize=True,
    topk_group=1,
    num_expert_group=1,
):
    batch_size = logits.shape[0]
    number_experts = logits.shape[1]
    topk = index_k.shape[1]
    view_shape = (1, number_experts)
    view_first = 1
    bs_loop = (batch_size + view_shape[0] - 1) // view_shape[0]

    pypto.set_vec_tile_shapes(number_experts)
    e_score_bias_2d = pypto.reshape(e_score_bias_input, [1, number_experts], inplace=True)

    for bs_index in pypto.loop(bs_loop, name="LOOP_MOEGATE_L0", idx_name="bs_idx"):
        process_main_loop_interation(bs_index, logits, e_score_bias_2d, weight_k, index_k,
                                     batch_size, number_experts, view_shape, view_first, topk,
                                     topk_group, num_expert_group, renormalize)


def reference(logits, bias, top_k, renormalize=True, topk_group=1, num_expert_group=1):
    """The reference's torch golden in numpy (stable top-k: ties keep the lower index)."""
    w = 1 / (1 + np.exp(-logits.astype(np.float32)))
    add = w + bias.astype(np.float32)[None, :]
    bs, ne = logits.shape
    groups = add.reshape(bs, num_expert_group, -1).max(-1)
    gidx = np.argsort(-groups, -1, kind="stable")[:, :topk_group]
    mask = np.zeros_like(groups)
    np.put_along_axis(mask, gidx, 1.0, 1)
    keep = np.repeat(mask, ne // num_expert_group, -1) != 0
    filled = np.where(keep, add, 0.0)
    ids = np.argsort(-filled, -1, kind="stable")[:, :top_k]
    g = np.take_along_axis(w, ids, 1)
    return (g / g.sum(-1, keepdims=True) if renormalize else g), ids.astype(np.int32)


def check(backend="c", bs=19, ne=160, top_k=8, topk_group=1, num_expert_group=1, seed=0):
    import ml_dtypes
    rng = np.random.default_rng(seed)
    logits = rng.random((bs, ne), dtype=np.float32)
    bias = rng.random(ne, dtype=np.float32).astype(ml_dtypes.bfloat16)
    weights, ids = np.zeros((bs, top_k), np.float32), np.zeros((bs, top_k), np.int32)
    select_experts_kernel.options["backend"] = backend
    select_experts_kernel(logits, bias, weights, ids, True, topk_group, num_expert_group)
    want_w, want_ids = reference(logits, bias, top_k, True, topk_group, num_expert_group)
    np.testing.assert_array_equal(ids, want_ids)
    np.testing.assert_allclose(weights, want_w, rtol=1e-5, atol=1e-6)
    return weights, ids
