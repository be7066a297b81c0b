"""Qwen3-Next chunked gated delta rule (the reference's models/qwen3_next/, kernels
chunk_gated_delta_rule and chunk_gated_delta_rule_unaligned), written here from its
mathematics in the reference's Tensor-mode API.

The recurrence it computes, per sequence and value head, with a state S [Dv, Dk] and, per
token t, q, k l2-normalised (q also scaled by Dk^-1/2), a log-decay g_t and a rate beta_t:

    S <- exp(g_t) S;  S <- S + beta_t (v_t - S k_t) k_t^T;  o_t = S q_t

The kernel computes it a chunk of L tokens at a time (the WY form of the delta rule). Within
a chunk, with c = cumsum(g), D[i, j] = exp(c_i - c_j) for j <= i (else 0), kb = beta * k:

    N  = strictly_lower(kb k^T * D)            T = (I + N)^-1   (forward substitution)
    u  = T (beta * v)                          w = T (kb * exp(c))
    v' = u - w S^T                             (the new values the state has not seen)
    o  = (q * exp(c)) S^T + ((q k^T) * D) v'
    S  = exp(c_last) S + v'^T (k * exp(c_last - c))

Sequences are packed along T and delimited by act_seq_len [B+1] (cumulative starts), read
from the integer tensor while the kernel runs (data-dependent loop bounds and offsets); a
sequence's last chunk may be shorter than L: its views carry the valid rows and fillpad
zeroes the rest (a zero gate keeps c_last, a zero key adds nothing). Query/key heads are
shared by groups of value heads. states / last_state_data are [B, Nv, Dv, Dk].

The reference hard-wires L = 128 and inverts T in 16-row blocks merged 2x2; here T comes
from row-by-row forward substitution (row i = e_i - N[i, :i] T[:i]), so any L works, at L
small matmuls per chunk. check() runs L = 16, D = 32, 1 key head shared by 2 value heads,
two sequences of 37 and 20 tokens.
"""
import numpy as np

import libpypto as pypto          # the reference: import pypto

D_, S_ = pypto.DYNAMIC, pypto.STATIC
F32 = pypto.DT_FP32


def _l2norm(x, eps=1e-6):
    return x * pypto.rsqrt(pypto.sum(x * x, -1, keepdim=True) + eps)


def _unit_lower_inverse(n, eye, size):
    """(I + n)^-1 for n strictly lower triangular [size, size], by forward substitution."""
    inv = pypto.tensor([size, size], F32, "t_inv")
    inv[0:1, 0:] = pypto.view(eye, [1, size], [0, 0])
    for i in range(1, size):
        done = pypto.view(inv, [i, size], [0, 0])
        row = pypto.matmul(pypto.view(n, [1, i], [i, 0]), done, F32)
        inv[i:i + 1, 0:] = pypto.view(eye, [1, size], [i, 0]) - row
    return pypto.view(inv, [size, size], [0, 0])


def _chunk(q, k, v, beta, g, state, masks, size):
    """One chunk (all [L, .] fp32, padded rows zero): its output [L, Dv] and the new state."""
    tril, strict, eye = masks
    c = pypto.cumsum(g, 0)                                            # [L, 1]
    decay = pypto.exp((c - pypto.transpose(c, 0, 1)) * tril) * tril    # [L, L]
    kb = k * beta
    n = pypto.matmul(kb, k, F32, b_trans=True) * decay * strict
    t_inv = _unit_lower_inverse(n, eye, size)
    u = pypto.matmul(t_inv, v * beta, F32)
    w = pypto.matmul(t_inv, kb * pypto.exp(c), F32)
    v_new = u - pypto.matmul(w, state, F32, b_trans=True)              # [L, Dv]
    qk = pypto.matmul(q, k, F32, b_trans=True) * decay
    out = pypto.matmul(q * pypto.exp(c), state, F32, b_trans=True) + pypto.matmul(qk, v_new, F32)
    c_last = pypto.view(c, [1, 1], [size - 1, 0])
    k_decay = k * pypto.exp(c_last - c)                                # [L, Dk]
    new_state = state * pypto.exp(c_last) + pypto.matmul(v_new, k_decay, F32, a_trans=True)
    return out, new_state


@pypto.frontend.jit(runtime_options={"stitch_function_max_num": 2},
                    pass_options={"vec_nbuffer_setting": {-1: 4}})
def chunk_gated_delta_rule_kernel(
    query: pypto.Tensor([D_, S_, S_], F32),
    key: pypto.Tensor([D_, S_, S_], F32),
    value: pypto.Tensor([D_, S_, S_], F32),
    beta: pypto.Tensor([D_, S_], F32),
    gate: pypto.Tensor([D_, S_], F32),
    states: pypto.Tensor([D_, S_, S_, S_], F32),
    act_seq_len: pypto.Tensor([D_], pypto.DT_INT32),
    core_attn_out: pypto.Tensor([D_, S_, S_], F32),
    last_state_data: pypto.Tensor([D_, S_, S_, S_], F32),
    chunk_size=16,
):
    nqk, dk = query.shape[1], query.shape[2]
    nv, dv = value.shape[1], value.shape[2]
    group = nv // nqk
    size = chunk_size
    pypto.set_vec_tile_shapes(size, size)
    pypto.set_cube_tile_shapes([16, 16], [128, 128], [128, 128])
    ones = pypto.full([size, size], 1.0, F32)
    tril, strict = pypto.tril(ones), pypto.tril(ones, -1)
    masks = (tril, strict, tril - strict)

    for b_idx in pypto.loop(states.shape[0], name="LOOP_B", idx_name="b_idx"):
        seq = act_seq_len[b_idx + 1] - act_seq_len[b_idx]
        start = act_seq_len[b_idx]
        for h in pypto.loop(nv, name="LOOP_NV", idx_name="nv_idx"):
            hk = h // group
            pypto.set_vec_tile_shapes(dv, dk)
            state = states[b_idx, h] + 0.0                       # [Dv, Dk], carried below
            for s_idx in pypto.loop(0, seq, size, name="LOOP_S", idx_name="s_idx"):
                r0 = start + s_idx
                rows = (seq - s_idx).min(size)

                def rows_of(t, head, width):
                    v3 = pypto.view(t, [size, 1, width], [r0, head, 0],
                                    valid_shape=[rows, 1, width])
                    return pypto.fillpad(pypto.reshape(v3, [size, width],
                                                       valid_shape=[rows, width]))

                def col_of(t):
                    return pypto.fillpad(pypto.view(t, [size, 1], [r0, h],
                                                    valid_shape=[rows, 1]))

                pypto.set_vec_tile_shapes(size, max(dk, dv, size))
                q = _l2norm(rows_of(query, hk, dk)) * (dk ** -0.5)
                k = _l2norm(rows_of(key, hk, dk))
                out, new_state = _chunk(q, k, rows_of(value, h, dv), col_of(beta),
                                        col_of(gate), state, masks, size)
                state[:] = new_state
                core_attn_out[r0:, h] = pypto.view(out, [size, dv], [0, 0],
                                                   valid_shape=[rows, dv])
            last_state_data[b_idx, h] = state


# ---- numpy reference: the token-by-token recurrence in float64 ----

def reference(query, key, value, beta, gate, states, act_seq_len):
    """core_attn_out [T, Nv, Dv] and last_state_data [B, Nv, Dv, Dk], float64."""
    f = lambda a: np.asarray(a, np.float64)                                   # noqa: E731
    q, k, v, bt, g = f(query), f(key), f(value), f(beta), f(gate)
    q = q / np.sqrt((q * q).sum(-1, keepdims=True) + 1e-6) / np.sqrt(q.shape[-1])
    k = k / np.sqrt((k * k).sum(-1, keepdims=True) + 1e-6)
    nqk, nv = q.shape[1], v.shape[1]
    out = np.zeros(v.shape)
    last = f(states).copy()
    for b in range(len(act_seq_len) - 1):
        for h in range(nv):
            hk = h // (nv // nqk)
            s = last[b, h]
            for t in range(int(act_seq_len[b]), int(act_seq_len[b + 1])):
                s = np.exp(g[t, h]) * s
                s = s + bt[t, h] * np.outer(v[t, h] - s @ k[t, hk], k[t, hk])
                out[t, h] = s @ q[t, hk]
            last[b, h] = s
    return out, last


def make_inputs(seqs=(37, 20), nqk=1, nv=2, d=32, seed=0):
    """Packed sequences: q, k, v ~ N(0, 1); beta in (0, 1) as a sigmoid gives; log-decays
    g in (-0.7, -0.01) (decays 0.5 .. 0.99 per token, so state crosses chunks); a random
    initial state. Outputs zeroed. Returns (inputs, outputs) in the kernel's order."""
    rng = np.random.default_rng(seed)
    t, b = sum(seqs), len(seqs)
    r = lambda *s: rng.standard_normal(s).astype(np.float32)                  # noqa: E731
    ins = [r(t, nqk, d), r(t, nqk, d), r(t, nv, d),
           rng.uniform(0.05, 0.95, (t, nv)).astype(np.float32),
           rng.uniform(-0.7, -0.01, (t, nv)).astype(np.float32),
           (0.1 * rng.standard_normal((b, nv, d, d))).astype(np.float32),
           np.concatenate([[0], np.cumsum(seqs)]).astype(np.int32)]
    outs = [np.zeros((t, nv, d), np.float32), np.zeros((b, nv, d, d), np.float32)]
    return ins, outs


def compare(outs, want):
    """fp32 against float64: rtol 1e-3, atol 1e-4 (the reference's own test: 1e-3, 1e-3)."""
    for name, got, w in zip(("core_attn_out", "last_state_data"), outs, want):
        np.testing.assert_allclose(got, w, rtol=1e-3, atol=1e-4, err_msg=name)


def check(backend="c", seqs=(37, 20), chunk_size=16, seed=0):
    """Run the kernel on random data and compare with the recurrence."""
    ins, outs = make_inputs(seqs, seed=seed)
    chunk_gated_delta_rule_kernel.options["backend"] = backend
    chunk_gated_delta_rule_kernel(*ins, *outs, chunk_size)
    compare(outs, reference(*ins))
    return outs
