"""MoE gating (DeepSeek / GLM select_experts): sigmoid scores plus a bias, experts in 8
groups of 8, the 2 groups with the best expert kept, top-8 experts among them, weights
gathered from the scores and renormalised to sum to one."""
import numpy as np

import libpypto as pypto


@pypto.jit
def moe_gating(logits: pypto.Tensor[["T", 64], pypto.DT_FP32],
               bias: pypto.Tensor[[64], pypto.DT_FP32],
               weights: pypto.Tensor[["T", 8], pypto.DT_FP32],
               ids: pypto.Tensor[["T", 8], pypto.DT_INT32], topk_group: int = 2):
    t = logits.shape[0]
    pypto.set_vec_tile_shapes(8, 64)
    s = pypto.sigmoid(logits)
    sb = s + bias
    pypto.set_vec_tile_shapes(8, 8, 8)
    gmax = pypto.amax(pypto.reshape(sb, [t, 8, 8]), -1)
    pypto.set_vec_tile_shapes(8, 8)
    _, groups = pypto.topk(gmax, topk_group)
    pypto.set_vec_tile_shapes(8, topk_group, 8)
    keep = pypto.sum(pypto.one_hot(groups, 8), 1)                 # (T, 8): 1 for kept groups
    pypto.set_vec_tile_shapes(8, 8, 8)
    per_expert = pypto.expand_clone(pypto.unsqueeze(keep, -1), [t, 8, 8])
    pypto.set_vec_tile_shapes(8, 64)
    masked = pypto.where(pypto.reshape(per_expert, [t, 64]) > 0, sb, float("-inf"))
    _, top = pypto.topk(masked, 8)
    pypto.set_vec_tile_shapes(8, 8)
    w = pypto.gather(s, 1, top)
    weights[:] = w / pypto.sum(w, -1, keepdim=True)
    ids[:] = top


def reference(logits, bias, topk_group=2):
    s = 1 / (1 + np.exp(-logits))
    sb = s + bias
    gmax = sb.reshape(-1, 8, 8).max(-1)
    groups = np.argsort(-gmax, -1, kind="stable")[:, :topk_group]
    keep = np.zeros_like(gmax, dtype=bool)
    np.put_along_axis(keep, groups, True, -1)
    masked = np.where(np.repeat(keep, 8, -1), sb, -np.inf)
    top = np.argsort(-masked, -1, kind="stable")[:, :8]
    w = np.take_along_axis(s, top, -1)
    return {"weights": (w / w.sum(-1, keepdims=True)).astype(np.float32), "ids": top.astype(np.int32)}


EXAMPLE = {"bind": {"T": 19}}
