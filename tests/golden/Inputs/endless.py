import libpypto as pypto


@pypto.jit
def spin(x: pypto.Tensor[[8, 32], pypto.DT_FP32], y: pypto.Tensor[[8, 32], pypto.DT_FP32]):
    n = 0
    while n >= 0:
        n += 1
