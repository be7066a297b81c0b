"""A matmul with only vector tile shapes set: it needs cube tile shapes."""
import libpypto as pypto


@pypto.jit
def matmul_no_cube(a: pypto.Tensor[[128, 256], pypto.DT_FP32],
                   b: pypto.Tensor[[256, 128], pypto.DT_FP32],
                   c: pypto.Tensor[[128, 128], pypto.DT_FP32]):
    pypto.set_vec_tile_shapes(16, 128)
    c[:] = pypto.matmul(a, b, pypto.DT_FP32)
