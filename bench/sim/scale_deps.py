"""t = x + 1 in tiles of one row, then y = t * 2 in tiles of two rows, over [R, 8] fp32:
R + R / 2 task instances, each of the second task waiting for two of the first
(bench/sim/scale.py --kernel deps)."""
import libpypto as pypto

R = "R"


@pypto.jit
def scale_deps(x: pypto.Tensor[[R, 8], pypto.DT_FP32], y: pypto.Tensor[[R, 8], pypto.DT_FP32]):
    pypto.set_vec_tile_shapes(1, 8)
    t = x + 1.0
    pypto.set_vec_tile_shapes(2, 8)
    y[:] = t * 2.0


EXAMPLE = {"bind": {"R": 64}}
