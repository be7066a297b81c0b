"""The elementwise math catalogue on fp32: exponentials, logs, rounding, trig, binary ops,
comparisons with where, clip with tensor bounds (reference compute/elementwise_ops)."""
import math

import numpy as np

import libpypto as pypto


@pypto.jit
def elementwise(x: pypto.Tensor[[32, 64], pypto.DT_FP32],
                y: pypto.Tensor[[32, 64], pypto.DT_FP32],
                exps: pypto.Tensor[[32, 64], pypto.DT_FP32],
                rounding: pypto.Tensor[[32, 64], pypto.DT_FP32],
                trig: pypto.Tensor[[32, 64], pypto.DT_FP32],
                binary: pypto.Tensor[[32, 64], pypto.DT_FP32],
                select: pypto.Tensor[[32, 64], pypto.DT_FP32],
                flags: pypto.Tensor[[32, 64], pypto.DT_BOOL]):
    pypto.set_vec_tile_shapes(16, 64)
    ax = pypto.abs(x)
    exps[:] = pypto.exp2(x) + pypto.expm1(x * 0.5) + pypto.log1p(ax) + pypto.log2(ax + 1.0) \
        + pypto.log10(ax + 1.0) + pypto.sqrt(ax) + pypto.rsqrt(ax + 1.0) + pypto.cbrt(x) \
        + pypto.reciprocal(ax + 2.0)
    rounding[:] = pypto.round(x * 10.0, 1) + pypto.trunc(x * 3.0) + pypto.ceil(x) \
        - pypto.floor(x) + pypto.sign(x) + pypto.neg(x)
    t = pypto.tanh(x) * 0.5
    trig[:] = pypto.sin(x) + pypto.cos(x) + pypto.tan(t) + pypto.asin(t) + pypto.acos(t) \
        + pypto.atan(x) + pypto.sinh(t) + pypto.cosh(t) + pypto.asinh(x) \
        + pypto.acosh(ax + 1.0) + pypto.atanh(t) + pypto.erf(x) + pypto.erfc(x) \
        + pypto.sigmoid(x) + pypto.relu(x)
    binary[:] = pypto.pow(ax + 0.5, y) + pypto.atan2(x, y) + pypto.hypot(x, y) \
        + pypto.fmod(x, y + 3.0) + pypto.remainder(x, y + 3.0) + pypto.floor_div(x, y + 3.0) \
        + pypto.maximum(x, y) - pypto.minimum(x, y) + pypto.add(x, y, alpha=2.0) \
        + pypto.sub(x, y, alpha=0.5) + x / (ax + 1.0)
    select[:] = pypto.where(x > y, x, y * 2.0) + pypto.clip(x, -0.5, 0.5) + pypto.clip(x, y) \
        + pypto.where(pypto.logical_and(x >= 0, y < 0), 1.0, 0.0)
    flags[:] = pypto.logical_or(pypto.isnan(pypto.log(x)), pypto.ne(x, y)) & \
        pypto.logical_not(pypto.le(x, -1.5)) & pypto.isfinite(x) & ~pypto.signbit(y) \
        | pypto.eq(x, x)


def reference(x, y):
    f = np.float32
    ax = np.abs(x)
    with np.errstate(all="ignore"):
        exps = np.exp2(x) + np.expm1(x * f(0.5)) + np.log1p(ax) + np.log2(ax + f(1)) \
            + np.log10(ax + f(1)) + np.sqrt(ax) + f(1) / np.sqrt(ax + f(1)) + np.cbrt(x) \
            + f(1) / (ax + f(2))
        rounding = np.round(x * f(10), 1) + np.trunc(x * f(3)) + np.ceil(x) - np.floor(x) \
            + np.sign(x) - x
        t = np.tanh(x) * f(0.5)
        erf = np.vectorize(math.erf)(x).astype(f)
        trig = np.sin(x) + np.cos(x) + np.tan(t) + np.arcsin(t) + np.arccos(t) + np.arctan(x) \
            + np.sinh(t) + np.cosh(t) + np.arcsinh(x) + np.arccosh(ax + f(1)) + np.arctanh(t) \
            + erf + (f(1) - erf) + f(1) / (f(1) + np.exp(-x)) + np.maximum(x, 0)
        binary = np.power(ax + f(0.5), y) + np.arctan2(x, y) + np.hypot(x, y) \
            + np.fmod(x, y + f(3)) + np.remainder(x, y + f(3)) + np.floor_divide(x, y + f(3)) \
            + np.maximum(x, y) - np.minimum(x, y) + (x + y * f(2)) + (x - y * f(0.5)) \
            + x / (ax + f(1))
        select = np.where(x > y, x, y * f(2)) + np.clip(x, f(-0.5), f(0.5)) + np.maximum(x, y) \
            + np.where((x >= 0) & (y < 0), f(1), f(0))
        flags = (np.isnan(np.log(x)) | (x != y)) & ~(x <= f(-1.5)) & np.isfinite(x) \
            & ~np.signbit(y) | (x == x)
    return {"exps": exps, "rounding": rounding, "trig": trig, "binary": binary,
            "select": select, "flags": flags}


EXAMPLE = {"bind": {}}
