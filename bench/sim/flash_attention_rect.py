"""Flash attention with S0 query rows and S1 key and value rows (one batch and head, D = 128,
fp16 in, fp32 out): bench/sim/flash_attention.py's body (`attend`) on a rectangular
problem, the shapes published kernel timings use (S0 rows over the cores in blocks of 128,
S1 walked in KV blocks of `blk`). `--bind S0=128 --bind S1=8192`, `--const blk=512`."""
import importlib.util
import pathlib

import libpypto as pypto

_spec = importlib.util.spec_from_file_location(
    "_flash_attention_body", pathlib.Path(__file__).with_name("flash_attention.py"))
_fa = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_fa)
D = _fa.D


@pypto.jit
def flash_attention_rect(q: pypto.Tensor[["S0", D], pypto.DT_FP16],
                         k: pypto.Tensor[["S1", D], pypto.DT_FP16],
                         v: pypto.Tensor[["S1", D], pypto.DT_FP16],
                         o: pypto.Tensor[["S0", D], pypto.DT_FP32], blk: int = 128):
    _fa.attend(q, k, v, o, blk)


def reference(q, k, v):
    return _fa.reference(q, k, v)


EXAMPLE = {"bind": {"S0": 256, "S1": 512}}
