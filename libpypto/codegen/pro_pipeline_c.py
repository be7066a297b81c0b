"""C of the direct L0C -> UB move (`tmov_acc2vec`, prolang/pipeline.py), a method of
pro_c._Prog: the cube core writes the Vec tile at the same UB offset of its cluster's
vector cores (cl->co[1], cl->co[2]), split as libpypto.runtime.pro_pipeline.parts says."""
from __future__ import annotations

from .c_text import _ld, _st


def i_tmov_acc2vec(self, op) -> None:
    d, s = op.operands
    r, c = self.valid(op, s.type.shape)
    off = self.fresh("off")
    ct = d.type.dtype.c_type
    self.emit(f"const int64_t {off} = (char *){self.names[d]} - co->buf[0];")
    mode = op.attrs["mode"]
    if mode in ("SingleModeVec0", "SingleModeVec1"):
        split = [(1 if mode.endswith("0") else 2, "0", r, "0", c)]
    else:
        h = self.fresh("h")
        if mode == "DualModeSplitM":
            self.emit(f"const int64_t {h} = ({r} + 1) / 2;")
            split = [(1, "0", h, "0", c), (2, h, r, "0", c)]
        else:
            self.emit(f"const int64_t {h} = pp_min({c}, ({c} + 31) / 32 * 32 / 2);")
            split = [(1, "0", r, "0", h), (2, "0", r, h, c)]
    for co, r0, r1, c0, c1 in split:
        p, i, j = self.fresh("vp"), self.fresh(), self.fresh("j")
        self.emit(f"{ct} *{p} = ({ct} *)(cl->co[{co}].buf[0] + {off});")
        src = f"{self.names[s]}[({r0} + {i}) * {self.rs(s)} + {c0} + {j}]"
        self.emit(f"for (int64_t {i} = 0; {i} < {r1} - {r0}; {i}++) for (int64_t {j} = 0; "
                  f"{j} < {c1} - {c0}; {j}++) {p}[{i} * {self.rs(d)} + {j}] = "
                  f"{_conv(d.type.dtype, s.type.dtype, src)};")


def _conv(dst_dt, src_dt, x: str) -> str:
    """pro_c's conversion of a loaded value (kept here: pro_c imports this module)."""
    if dst_dt == src_dt:
        return x
    return _st(dst_dt, _ld(src_dt, x), "float" if src_dt.kind == "float" else "int")
