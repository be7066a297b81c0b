"""GLM-4.5 attention pre-quant (the reference's models/glm_v4_5/glm_attention_pre_quant.py,
kernel quant_attention_pre_kernel), written here from its mathematics in the reference's
Tensor-mode API. Per token row:

    h        = x + residual_in                       (fp32)        -> residual_out (bf16)
    xn       = bf16(h / sqrt(mean(h^2) + eps) * gamma + beta)
    xq       = int8(saturate(rint(xn * x_scale + x_offset)))       (static per-channel quant)
    qkv      = bf16((xq @ W + quant_bias) * deq_scale)             (int8 x int8 -> int32)
    q, k, v  = split(qkv, [q_size, kv_size, kv_size])
    q, k     = per head: bf16(y / sqrt(mean(y^2) + eps) * g + b)   (head_size columns)
    q, k     = RoPE on the first 2*half columns of each head (half-rotate form:
               [x1 cos - x2 sin, x2 cos + x1 sin]); the other columns pass through

Tokens run in blocks of 8 under pypto.loop with a valid_shape tail, so one compiled kernel
serves any token count (DYNAMIC); the model sizes are STATIC (the reference: hidden 5120,
12 query heads and 1 KV head of 128, rotary 64; check() runs hidden 256, 4 + 1 heads of 64,
rotary 32). The whole block is quantised at once (the reference loops over its rows).
"""
import numpy as np

import libpypto as pypto          # the reference: import pypto

BS_TILE = 8
D, S = pypto.DYNAMIC, pypto.STATIC


def _rms_scale(y, eps):
    """1 / sqrt(mean(y^2) + eps) over the last dim (keepdim), fp32."""
    ms = pypto.sum(y * y, -1, keepdim=True) * (1.0 / y.shape[-1])
    return pypto.rsqrt(ms + eps)


def _head_norm(y, gamma, beta, eps):
    """bf16 per-head RMSNorm with weight and bias: y [rows, heads, head_size] fp32."""
    return pypto.cast(y * _rms_scale(y, eps) * gamma + beta, pypto.DT_BF16)


def _rope_half(y, cos, sin, half):
    """Half-rotate RoPE on the first 2*half columns of y [rows, heads, head_size] (bf16);
    cos, sin [rows, 1, half] fp32 broadcast over the heads."""
    rows, heads, hd = y.shape
    yf = pypto.cast(y, pypto.DT_FP32)
    x1 = pypto.view(yf, [rows, heads, half], [0, 0, 0])
    x2 = pypto.view(yf, [rows, heads, half], [0, 0, half])
    rest = pypto.view(y, [rows, heads, hd - 2 * half], [0, 0, 2 * half])
    o1 = pypto.cast(x1 * cos - x2 * sin, pypto.DT_BF16)
    o2 = pypto.cast(x2 * cos + x1 * sin, pypto.DT_BF16)
    return pypto.concat([o1, o2, rest], -1)


@pypto.frontend.jit(runtime_options={"stitch_function_max_num": 128})
def quant_attention_pre_kernel(
    x: pypto.Tensor([D, S], pypto.DT_BF16),
    residual_input: pypto.Tensor([D, S], pypto.DT_BF16),
    x_gamma: pypto.Tensor([S], pypto.DT_BF16),
    x_bias: pypto.Tensor([S], pypto.DT_BF16),
    x_scale: pypto.Tensor([S], pypto.DT_BF16),
    x_offset: pypto.Tensor([S], pypto.DT_BF16),
    weight: pypto.Tensor([S, S], pypto.DT_INT8),
    quant_bias: pypto.Tensor([S], pypto.DT_INT32),
    deq_scale: pypto.Tensor([S], pypto.DT_FP32),
    q_gamma: pypto.Tensor([S], pypto.DT_BF16),
    q_bias: pypto.Tensor([S], pypto.DT_BF16),
    k_gamma: pypto.Tensor([S], pypto.DT_BF16),
    k_bias: pypto.Tensor([S], pypto.DT_BF16),
    cos: pypto.Tensor([D, 1, S], pypto.DT_BF16),
    sin: pypto.Tensor([D, 1, S], pypto.DT_BF16),
    q: pypto.Tensor([D, S], pypto.DT_BF16),
    k: pypto.Tensor([D, S], pypto.DT_BF16),
    v: pypto.Tensor([D, S], pypto.DT_BF16),
    residual: pypto.Tensor([D, S], pypto.DT_BF16),
    eps=1e-5,
):
    bs, hidden = x.shape[0], x.shape[1]
    n_qkv = weight.shape[1]
    head_size = q_gamma.shape[0]
    half = cos.shape[2]
    q_heads, kv_heads = q.shape[1] // head_size, k.shape[1] // head_size
    f32 = pypto.DT_FP32

    # per-channel parameters as fp32 rows, broadcast over the tokens of a block
    pypto.set_vec_tile_shapes(1, hidden)
    ln = [pypto.cast(pypto.reshape(t, [1, hidden], inplace=True), f32)
          for t in (x_gamma, x_bias, x_scale, x_offset)]
    pypto.set_vec_tile_shapes(1, n_qkv)
    mm_bias = pypto.reshape(quant_bias, [1, n_qkv], inplace=True)
    mm_scale = pypto.reshape(deq_scale, [1, n_qkv], inplace=True)
    pypto.set_vec_tile_shapes(1, 1, head_size)
    qk_norm = [pypto.cast(pypto.reshape(t, [1, 1, head_size], inplace=True), f32)
               for t in (q_gamma, q_bias, k_gamma, k_bias)]

    for bs_idx in pypto.loop((bs + BS_TILE - 1) // BS_TILE, name="LOOP_ATT_PRE_L0",
                             idx_name="bs_idx"):
        row0 = bs_idx * BS_TILE
        rows = (bs - row0).min(BS_TILE)
        pypto.set_vec_tile_shapes(BS_TILE, hidden)
        xt = pypto.view(x, [BS_TILE, hidden], [row0, 0], valid_shape=[rows, hidden])
        rt = pypto.view(residual_input, [BS_TILE, hidden], [row0, 0],
                        valid_shape=[rows, hidden])
        h = pypto.cast(xt, f32) + pypto.cast(rt, f32)
        residual[row0:, 0:] = pypto.cast(h, pypto.DT_BF16)

        # input RMSNorm with bias, then static int8 quantisation
        xn = pypto.cast(h * _rms_scale(h, eps) * ln[0] + ln[1], pypto.DT_BF16)
        xs = pypto.cast(xn, f32) * ln[2] + ln[3]
        xq = pypto.cast(xs, pypto.DT_INT8, pypto.CastMode.CAST_RINT,
                        satmode=pypto.SaturationMode.ON)

        # int8 matmul, int32 bias, dequantisation
        pypto.set_cube_tile_shapes([32, 32], [hidden, hidden], [128, 128])
        acc = pypto.matmul(xq, weight, pypto.DT_INT32)
        pypto.set_vec_tile_shapes(BS_TILE, n_qkv)
        qkv = pypto.cast(pypto.cast(acc + mm_bias, f32) * mm_scale, pypto.DT_BF16)

        # heads: per-head norm and RoPE of q and k; v as it is
        pypto.set_vec_tile_shapes(BS_TILE, q_heads, head_size)
        heads = pypto.reshape(qkv, [BS_TILE, n_qkv // head_size, head_size],
                              valid_shape=[rows, n_qkv // head_size, head_size])
        qh = pypto.cast(pypto.view(heads, [BS_TILE, q_heads, head_size], [0, 0, 0]), f32)
        kh = pypto.cast(pypto.view(heads, [BS_TILE, kv_heads, head_size], [0, q_heads, 0]),
                        f32)
        vh = pypto.view(heads, [BS_TILE, kv_heads, head_size], [0, q_heads + kv_heads, 0])
        ct = pypto.cast(pypto.view(cos, [BS_TILE, 1, half], [row0, 0, 0],
                                   valid_shape=[rows, 1, half]), f32)
        st = pypto.cast(pypto.view(sin, [BS_TILE, 1, half], [row0, 0, 0],
                                   valid_shape=[rows, 1, half]), f32)
        q_out = _rope_half(_head_norm(qh, qk_norm[0], qk_norm[1], eps), ct, st, half)
        k_out = _rope_half(_head_norm(kh, qk_norm[2], qk_norm[3], eps), ct, st, half)

        q[row0:, 0:] = pypto.reshape(q_out, [BS_TILE, q_heads * head_size],
                                     valid_shape=[rows, q_heads * head_size])
        k[row0:, 0:] = pypto.reshape(k_out, [BS_TILE, kv_heads * head_size],
                                     valid_shape=[rows, kv_heads * head_size])
        v[row0:, 0:] = pypto.reshape(vh, [BS_TILE, kv_heads * head_size],
                                     valid_shape=[rows, kv_heads * head_size])


# ---- numpy reference, from the formulas in the docstring (float64 between the roundings) ----

def _bf16(a):
    import ml_dtypes
    return np.asarray(a).astype(np.float32).astype(ml_dtypes.bfloat16)


def _f(a):
    return np.asarray(a).astype(np.float64)


def _norm(y, g, b, eps):
    return y / np.sqrt((y * y).mean(-1, keepdims=True) + eps) * _f(g) + _f(b)


def reference(x, residual_input, x_gamma, x_bias, x_scale, x_offset, weight, quant_bias,
              deq_scale, q_gamma, q_bias, k_gamma, k_bias, cos, sin, q_size, kv_size,
              eps=1e-5):
    """q, k, v, residual as bf16 arrays, and xq (the int8 activations) for inspection."""
    h = _f(x) + _f(residual_input)
    xn = _bf16(_norm(h, x_gamma, x_bias, eps))
    xq = np.clip(np.rint(_f(xn) * _f(x_scale) + _f(x_offset)), -128, 127)
    acc = xq.astype(np.int64) @ weight.astype(np.int64) + quant_bias.astype(np.int64)
    qkv = _f(_bf16(acc * _f(deq_scale)))
    hd, half = q_gamma.shape[0], cos.shape[-1]
    c, s = _f(cos), _f(sin)                       # [bs, 1, half]: broadcast over heads

    def heads(cols, g, b):
        y = _f(_bf16(_norm(cols.reshape(len(cols), -1, hd), g, b, eps)))
        x1, x2 = y[..., :half], y[..., half:2 * half]
        rot = np.concatenate([_f(_bf16(x1 * c - x2 * s)), _f(_bf16(x2 * c + x1 * s)),
                              y[..., 2 * half:]], -1)
        return _bf16(rot.reshape(len(cols), -1))

    q = heads(qkv[:, :q_size], q_gamma, q_bias)
    k = heads(qkv[:, q_size:q_size + kv_size], k_gamma, k_bias)
    v = _bf16(qkv[:, q_size + kv_size:])
    return {"q": q, "k": k, "v": v, "residual": _bf16(h), "xq": xq.astype(np.int8)}


def make_inputs(bs=11, hidden=256, head_size=64, q_heads=4, kv_heads=1, half=16, seed=0):
    """Inputs in the kernel's parameter order (outputs zeroed). Activations ~N(0, 1); the
    quant scale maps them to about +-100 (a few saturate); weights int8; dequant scales
    bring the int32 sums back to about 1."""
    rng = np.random.default_rng(seed)
    n = (q_heads + 2 * kv_heads) * head_size
    g = lambda *shape, m=0.0, sd=1.0: _bf16(m + sd * rng.standard_normal(shape))  # noqa: E731
    ins = [g(bs, hidden), g(bs, hidden), g(hidden, m=1.0, sd=0.1), g(hidden, sd=0.1),
           _bf16(rng.uniform(20, 40, hidden)), _bf16(rng.integers(-3, 4, hidden)),
           rng.integers(-127, 128, (hidden, n)).astype(np.int8),
           rng.integers(-2000, 2000, n).astype(np.int32),
           rng.uniform(0.5e-5, 1.5e-5, n).astype(np.float32),
           g(head_size, m=1.0, sd=0.1), g(head_size, sd=0.1),
           g(head_size, m=1.0, sd=0.1), g(head_size, sd=0.1)]
    ang = rng.uniform(0, 2 * np.pi, (bs, 1, half))
    ins += [_bf16(np.cos(ang)), _bf16(np.sin(ang))]
    outs = [_bf16(np.zeros((bs, c))) for c in (q_heads * head_size, kv_heads * head_size,
                                               kv_heads * head_size, hidden)]
    return ins, outs


OUTPUTS = ("q", "k", "v", "residual")


def compare(outs, want):
    """bf16 outputs: rtol/atol 2e-2 (a bf16 step is 2^-8 relative; an int8 activation that
    rounds the other way moves a dot product by one weight times its scale)."""
    for name, got in zip(OUTPUTS, outs):
        np.testing.assert_allclose(_f(got), _f(want[name]), rtol=2e-2, atol=2e-2, err_msg=name)
    np.testing.assert_array_equal(_f(outs[3]), _f(want["residual"]))


def check(backend="c", bs=11, seed=0):
    """Run the kernel on random data and compare with numpy."""
    ins, outs = make_inputs(bs=bs, seed=seed)
    quant_attention_pre_kernel.options["backend"] = backend
    quant_attention_pre_kernel(*ins, *outs)
    compare(outs, reference(*ins, q_size=outs[0].shape[1], kv_size=outs[1].shape[1]))
    return outs
