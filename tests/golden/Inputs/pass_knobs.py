"""An op file that sets pass options the reference's way (tests/golden/lower/op-file-pass-options.test)."""
import libpypto as pypto


@pypto.jit
def knobs(x: pypto.Tensor([8, 32], pypto.DT_FP32), y: pypto.Tensor([8, 32], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(8, 32)
    pypto.set_pass_options(vec_nbuffer_setting={"DEFAULT": 2})
    pypto.set_pass_config("PVC2_OOO", "GraphPartition", "enable", False)
    y[:] = x * 2.0 + 1.0
