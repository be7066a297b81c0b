"""GLM-4.5 MoE gate (hicann/pypto models/glm_v4_5/glm_gate.py, the kernel
select_experts_mm_kernel): router logits = hidden_states @ weight^T over DYNAMIC token rows in
blocks of 32 with a valid_shape tail.

Ported by changing only the import line: the kernel below is written as the reference's is
(pypto.frontend.jit with new_ir and runtime_options, Tensor([DYNAMIC, ...]) and Tensor([])
annotations that take their shape from the arguments, loop name/idx_name, open-ended slice
assignment). The reference's sizes are hidden 5120 and 160 experts; check() runs smaller
ones by default (the kernel takes any).
"""
import numpy as np

import libpypto as pypto          # the reference: import pypto


@pypto.frontend.jit(new_ir=True, runtime_options={})
def select_experts_mm_kernel(
    hidden_states: pypto.Tensor([pypto.DYNAMIC, ...], pypto.DT_FP32),
    mm_weight: pypto.Tensor([], pypto.DT_FP32),
    router_logits_out: pypto.Tensor([pypto.DYNAMIC, ...], pypto.DT_FP32),
):
    bs = hidden_states.shape[0]
    _ne = mm_weight.shape[0]
    h_num = hidden_states.shape[1]

    view_shape = (32, h_num)

    bs_loop = (bs + view_shape[0] - 1) // view_shape[0]

    for bs_idx in pypto.loop(bs_loop, name="LOOP_MOE_MM_L0", idx_name="bs_idx"):
        tile_hidden_states = pypto.view(
            hidden_states,
            view_shape,
            [bs_idx * view_shape[0], 0],
            valid_shape=[(bs - bs_idx * view_shape[0]).min(view_shape[0]), h_num],
        )

        pypto.set_cube_tile_shapes([32, 32], [512, 1024], [16, 16])

        res = pypto.matmul(tile_hidden_states, mm_weight, tile_hidden_states.dtype, b_trans=True)

        router_logits_out[bs_idx * view_shape[0]:, 0:] = res


def reference(hidden_states, mm_weight):
    return hidden_states.astype(np.float64) @ mm_weight.astype(np.float64).T


def check(backend="c", bs=70, ne=160, h_num=1024, seed=0):
    """Run the kernel on random data and compare with numpy (rtol/atol 1e-4, fp32)."""
    rng = np.random.default_rng(seed)
    hidden_states = rng.random((bs, h_num), dtype=np.float32)
    mm_weight = rng.random((ne, h_num), dtype=np.float32)
    out = np.zeros((bs, ne), np.float32)
    select_experts_mm_kernel.options["backend"] = backend
    select_experts_mm_kernel(hidden_states, mm_weight, out)
    np.testing.assert_allclose(out, reference(hidden_states, mm_weight), rtol=1e-4, atol=1e-3)
    return out

