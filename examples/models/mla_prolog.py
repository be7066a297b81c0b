"""DeepSeek MLA prolog in bf16 (the reference's models/deepseek_v4/mla_prolog_v4_impl.py,
kernel mla_prolog_v4), written here from its mathematics in the reference's Tensor-mode API:
the low-rank query path, the shared key-value path, RMSNorm and interleaved RoPE. Per token:

    qr = bf16(rms(bf16(x @ wq_a)) * gamma_cq)                  -> qr_out  [t, q_lora]
    qh = bf16(rms(bf16(qr @ wq_b)))       per head (no weight) [t, heads, head_dim]
    kv = bf16(rms(bf16(x @ wkv)) * gamma_ckv)                  [t, head_dim]
    q_out, kv_out: the last rope_dim columns of each head (and of kv) rotated, the others
    as they are

with rms(y) = y / sqrt(mean(y^2) + eps) over the last dim, and RoPE on adjacent pairs:
(a, b) at columns (2i, 2i+1) becomes (a cos_2i - b sin_2i, b cos_2i+1 + a sin_2i+1), cos and
sin given per token and column [t, rope_dim]. The pairs are split and merged with
pypto.deinterleave / pypto.interleave (the reference reshapes to [..., rope/2, 2] and
transposes, which its comments tie to heads == rope_dim).

Tokens run in tiles of T_TILE under pypto.loop with a valid_shape tail (DYNAMIC t; the
reference unrolls over tile sizes 128 ... 1 with loop_unroll). The reference's sizes are
hidden 4096, q_lora 1024, 64 heads of 512, rope 64; check() runs hidden 256, q_lora 128,
4 heads of 128, rope 64.
"""
import numpy as np

import libpypto as pypto          # the reference: import pypto

T_TILE = 4
D, S = pypto.DYNAMIC, pypto.STATIC
BF16, F32 = pypto.DT_BF16, pypto.DT_FP32


def _rms(y, eps):
    """y / sqrt(mean(y^2) + eps) over the last dim, in fp32 (y of any float dtype)."""
    yf = pypto.cast(y, F32)
    ms = pypto.sum(yf * yf, -1, keepdim=True) * (1.0 / y.shape[-1])
    return yf * pypto.rsqrt(ms + eps)


def _rope_pairs(y, cos, sin):
    """Interleaved RoPE of y (bf16, last dim rope_dim) with cos, sin (fp32, broadcast to
    y's shape); bf16 out."""
    a, b = pypto.deinterleave(pypto.cast(y, F32))
    ca, cb = pypto.deinterleave(cos)
    sa, sb = pypto.deinterleave(sin)
    lo, hi = pypto.interleave(a * ca - b * sa, b * cb + a * sb)
    return pypto.cast(pypto.concat([lo, hi], -1), BF16)


@pypto.frontend.jit(runtime_options={"stitch_function_max_num": 128})
def mla_prolog_kernel(
    x: pypto.Tensor([D, S], BF16),
    wq_a: pypto.Tensor([S, S], BF16),
    wq_b: pypto.Tensor([S, S], BF16),
    wkv: pypto.Tensor([S, S], BF16),
    rmsnorm_gamma_cq: pypto.Tensor([S], BF16),
    rmsnorm_gamma_ckv: pypto.Tensor([S], BF16),
    cos: pypto.Tensor([D, S], BF16),
    sin: pypto.Tensor([D, S], BF16),
    q_out: pypto.Tensor([D, S, S], BF16),
    kv_out: pypto.Tensor([D, S], BF16),
    qr_out: pypto.Tensor([D, S], BF16),
    eps=1e-6,
):
    t, hidden = x.shape[0], x.shape[1]
    q_lora = rmsnorm_gamma_cq.shape[0]
    head_dim = rmsnorm_gamma_ckv.shape[0]
    heads = q_out.shape[1]
    rope = cos.shape[1]
    nope = head_dim - rope

    pypto.set_vec_tile_shapes(1, q_lora)
    g_cq = pypto.cast(pypto.reshape(rmsnorm_gamma_cq, [1, q_lora], inplace=True), F32)
    pypto.set_vec_tile_shapes(1, head_dim)
    g_ckv = pypto.cast(pypto.reshape(rmsnorm_gamma_ckv, [1, head_dim], inplace=True), F32)

    for t_idx in pypto.loop((t + T_TILE - 1) // T_TILE, name="MLA_BS_LOOP", idx_name="t_idx"):
        t0 = t_idx * T_TILE
        rows = (t - t0).min(T_TILE)
        x_tile = pypto.view(x, [T_TILE, hidden], [t0, 0], valid_shape=[rows, hidden])
        pypto.set_vec_tile_shapes(T_TILE, rope)
        cos_t = pypto.cast(pypto.view(cos, [T_TILE, rope], [t0, 0], valid_shape=[rows, rope]),
                           F32)
        sin_t = pypto.cast(pypto.view(sin, [T_TILE, rope], [t0, 0], valid_shape=[rows, rope]),
                           F32)

        # query: down-projection, RMSNorm with weight (kept as qr), up-projection per head
        pypto.set_semantic_label("q-lora")
        pypto.set_cube_tile_shapes([16, 16], [256, 256], [128, 128])
        qa = pypto.matmul(x_tile, wq_a, BF16)
        pypto.set_vec_tile_shapes(T_TILE, q_lora)
        qr = pypto.cast(_rms(qa, eps) * g_cq, BF16)
        qr_out[t0:, 0:] = qr
        pypto.set_semantic_label("q-heads")
        qb = pypto.matmul(qr, wq_b, BF16)
        pypto.set_vec_tile_shapes(T_TILE, heads, head_dim)
        qh = pypto.cast(_rms(pypto.reshape(qb, [T_TILE, heads, head_dim],
                                           valid_shape=[rows, heads, head_dim]), eps), BF16)
        q_nope = pypto.view(qh, [T_TILE, heads, nope], [0, 0, 0])
        q_pe = _rope_pairs(pypto.view(qh, [T_TILE, heads, rope], [0, 0, nope]),
                           pypto.reshape(cos_t, [T_TILE, 1, rope]),
                           pypto.reshape(sin_t, [T_TILE, 1, rope]))
        q_all = pypto.concat([q_nope, q_pe], -1)
        q_out[t0:, 0:, 0:] = pypto.view(q_all, [T_TILE, heads, head_dim], [0, 0, 0],
                                        valid_shape=[rows, heads, head_dim])

        # key-value: projection, RMSNorm with weight, RoPE on its last rope columns
        pypto.set_semantic_label("kv")
        kv = pypto.matmul(x_tile, wkv, BF16)
        pypto.set_vec_tile_shapes(T_TILE, head_dim)
        kvn = pypto.cast(_rms(kv, eps) * g_ckv, BF16)
        kv_pe = _rope_pairs(pypto.view(kvn, [T_TILE, rope], [0, nope]), cos_t, sin_t)
        kv_all = pypto.concat([pypto.view(kvn, [T_TILE, nope], [0, 0]), kv_pe], -1)
        kv_out[t0:, 0:] = pypto.view(kv_all, [T_TILE, head_dim], [0, 0],
                                     valid_shape=[rows, head_dim])


# ---- numpy reference, from the formulas in the docstring (float64 between the roundings) ----

def _bf16(a):
    import ml_dtypes
    return np.asarray(a).astype(np.float32).astype(ml_dtypes.bfloat16)


def _f(a):
    return np.asarray(a).astype(np.float64)


def _rms_np(y, eps):
    return y / np.sqrt((y * y).mean(-1, keepdims=True) + eps)


def _rope_np(y, c, s):
    rot = np.empty_like(y)
    rot[..., 0::2], rot[..., 1::2] = -y[..., 1::2], y[..., 0::2]
    return y * c + rot * s


def reference(x, wq_a, wq_b, wkv, gamma_cq, gamma_ckv, cos, sin, heads, eps=1e-6):
    """q [t, heads, head_dim], kv [t, head_dim], qr [t, q_lora] as bf16 arrays."""
    t, hd, r = x.shape[0], gamma_ckv.shape[0], cos.shape[1]
    qr = _bf16(_rms_np(_f(_bf16(_f(x) @ _f(wq_a))), eps) * _f(gamma_cq))
    qh = _f(_bf16(_rms_np(_f(_bf16(_f(qr) @ _f(wq_b))).reshape(t, heads, hd), eps)))
    c, s = _f(cos), _f(sin)
    q = np.concatenate([qh[..., :hd - r],
                        _f(_bf16(_rope_np(qh[..., hd - r:], c[:, None], s[:, None])))], -1)
    kvn = _f(_bf16(_rms_np(_f(_bf16(_f(x) @ _f(wkv))), eps) * _f(gamma_ckv)))
    kv = np.concatenate([kvn[:, :hd - r], _f(_bf16(_rope_np(kvn[:, hd - r:], c, s)))], -1)
    return {"q_out": _bf16(q), "kv_out": _bf16(kv), "qr_out": qr}


def make_inputs(t=7, hidden=256, q_lora=128, heads=4, head_dim=128, rope=64, seed=0):
    """Inputs in the kernel's parameter order and zeroed outputs. Weights scaled by
    1/sqrt(fan-in); cos/sin of one angle per column pair, as a model's rotary table is."""
    rng = np.random.default_rng(seed)
    g = lambda *shape, m=0.0, sd=1.0: _bf16(m + sd * rng.standard_normal(shape))  # noqa: E731
    ang = np.repeat(rng.uniform(0, 2 * np.pi, (t, rope // 2)), 2, -1)
    ins = [g(t, hidden), g(hidden, q_lora, sd=hidden ** -0.5),
           g(q_lora, heads * head_dim, sd=q_lora ** -0.5), g(hidden, head_dim, sd=hidden ** -0.5),
           g(q_lora, m=1.0, sd=0.1), g(head_dim, m=1.0, sd=0.1),
           _bf16(np.cos(ang)), _bf16(np.sin(ang))]
    outs = [_bf16(np.zeros((t, heads, head_dim))), _bf16(np.zeros((t, head_dim))),
            _bf16(np.zeros((t, q_lora)))]
    return ins, outs


OUTPUTS = ("q_out", "kv_out", "qr_out")


def compare(outs, want):
    """bf16 outputs of unit scale: rtol/atol 2e-2 (a few bf16 steps)."""
    for name, got in zip(OUTPUTS, outs):
        np.testing.assert_allclose(_f(got), _f(want[name]), rtol=2e-2, atol=2e-2, err_msg=name)


def check(backend="c", t=7, seed=0):
    """Run the kernel on random data and compare with numpy."""
    ins, outs = make_inputs(t=t, seed=seed)
    mla_prolog_kernel.options["backend"] = backend
    mla_prolog_kernel(*ins, *outs)
    compare(outs, reference(*ins, heads=outs[0].shape[1]))
    return outs
