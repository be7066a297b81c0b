"""Shape and index ops: transpose, reshape, unsqueeze, concat, expand_clone, pad, tril,
triu, view + assemble, gather, index_select, scatter, index_add, one_hot
(reference transform_ops)."""
import numpy as np

import libpypto as pypto


@pypto.jit
def transforms(x: pypto.Tensor[[16, 32], pypto.DT_FP32],
               idx: pypto.Tensor[[16, 32], pypto.DT_INT64],
               rows: pypto.Tensor[[8], pypto.DT_INT32],
               labels: pypto.Tensor[[16], pypto.DT_INT32],
               tr: pypto.Tensor[[32, 16], pypto.DT_FP32],
               shaped: pypto.Tensor[[16, 2, 16], pypto.DT_FP32],
               cat: pypto.Tensor[[16, 64], pypto.DT_FP32],
               padded: pypto.Tensor[[18, 40], pypto.DT_FP32],
               tri: pypto.Tensor[[16, 32], pypto.DT_FP32],
               placed: pypto.Tensor[[20, 40], pypto.DT_FP32],
               gathered: pypto.Tensor[[16, 32], pypto.DT_FP32],
               selected: pypto.Tensor[[8, 32], pypto.DT_FP32],
               scattered: pypto.Tensor[[16, 32], pypto.DT_FP32],
               added: pypto.Tensor[[16, 32], pypto.DT_FP32],
               onehot: pypto.Tensor[[16, 10], pypto.DT_INT64]):
    pypto.set_vec_tile_shapes(8, 32)
    tr[:] = pypto.transpose(x, 0, 1)
    pypto.set_vec_tile_shapes(8, 2, 16)
    shaped[:] = pypto.reshape(x, [16, 2, 16]) + pypto.unsqueeze(x[:, 0:16], 1)
    pypto.set_vec_tile_shapes(8, 32)
    cat[:] = pypto.concat([x, x * 2.0], 1)
    padded[:] = pypto.pad(x, (3, 5, 1, 1), value=-1.0)
    tri[:] = pypto.tril(x, 1) + pypto.triu(x, -2) * 2.0 + pypto.expand_clone(x[0:1, :], [16, 32])
    placed[2:18, 4:36] = x * 3.0
    pypto.assemble(x[0:4, :], [0, 0], placed)
    gathered[:] = pypto.gather(x, 1, idx)
    selected[:] = pypto.index_select(x, 0, rows)
    scattered[:] = pypto.scatter(x, 1, idx, 0.5, reduce="add")
    added[:] = pypto.index_add(x, 0, rows, x[0:8, :], alpha=2.0)
    onehot[:] = pypto.one_hot(labels, 10)


def reference(x, idx, rows, labels):
    f = np.float32
    padded = np.full((18, 40), -1, f)
    padded[1:17, 3:35] = x
    placed = np.zeros((20, 40), f)
    placed[2:18, 4:36] = x * f(3)
    placed[0:4, 0:32] = x[0:4]
    ix = np.mod(idx, 32)
    r = np.mod(rows.astype(np.int64), 16)
    scattered = x.copy()
    np.add.at(scattered, (np.arange(16)[:, None].repeat(32, 1), ix), f(0.5))
    added = x.copy()
    for j, t in enumerate(r):
        added[t] += x[j] * f(2)
    return {"tr": x.T.copy(), "shaped": x.reshape(16, 2, 16) + x[:, None, 0:16],
            "cat": np.concatenate([x, x * f(2)], 1), "padded": padded,
            "tri": np.tril(x, 1) + np.triu(x, -2) * f(2) + x[0:1], "placed": placed,
            "gathered": np.take_along_axis(x, ix, 1), "selected": x[r],
            "scattered": scattered, "added": added,
            "onehot": (labels.astype(np.int64)[:, None] == np.arange(10)).astype(np.int64)}


EXAMPLE = {"bind": {}}
