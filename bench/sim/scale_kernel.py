"""y = x + 1 over [R, 8] fp32 with tiles of one row: R task instances, for measuring how
expanding, scheduling and simulating grow with the instance count (bench/sim/scale.py)."""
import libpypto as pypto

R = "R"


@pypto.jit
def scale(x: pypto.Tensor[[R, 8], pypto.DT_FP32], y: pypto.Tensor[[R, 8], pypto.DT_FP32]):
    pypto.set_vec_tile_shapes(1, 8)
    y[:] = x + 1.0


EXAMPLE = {"bind": {"R": 64}}
