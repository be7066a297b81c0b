"""Cost tables of a target for the pipe-level simulator (libpypto.sim): cycles per tile
instruction, bytes per cycle per data path, the shared HBM and L2, and the overheads.

Every number comes from the target description (DESIGN section 6; the TOML files carry
each number's source and confidence tag from reference/hardware-model.md). A table the
target lacks is an error naming the key, never a silent default, except for the sections
a target may leave out: without `[l2]` there is no L2 (every read goes to HBM), without
`launch_overhead_us` a launch costs nothing.

Instruction costs, in cycles of the target's clock:
- vector (pipe V): `startup + repeats x cycles_per_repeat(class, dtype)`, a repeat being
  `repeat_bytes` (256 B) of the largest operand tile as the buffer stores it (rows padded
  to 32 B). The class of an instruction comes from VECTOR_CLASS (below; a binary op with a
  scalar operand, TADDS / TMULS, is "simple"); a reduction adds
  `dependent_cycles` per level of its combining tree (log2 of the repeats per reduced row).
- cube (pipe M): `cube_startup + ceil(m/16) ceil(n/16) ceil(k/base_k) r` with base_k =
  32 B / element size and r = 2 x 16 x 16 x base_k / cube FLOP per cycle of the dtype (1
  for fp16 and int8, 2 for fp32 on A2): the published fractal formula, which is what
  `cube_flops_per_cycle` measures at full fractals.
- data movement: `transfer_setup_cycles` plus bytes (rows padded to 32 B) over the path's
  bytes per cycle; GM paths (MTE2 loads, MTE3 and FIX stores) are also limited by the shared
  HBM or L2 bandwidth (libpypto.sim.engine). MTE1 uses `l1_to_l0` for L0A and `l1_to_l0b`
  (when given) for L0B.
"""
from __future__ import annotations

import math

from ..errors import UsageError

PIPES = ("MTE2", "MTE1", "M", "V", "MTE3", "FIX", "S")
PIPE_INDEX = {p: i for i, p in enumerate(PIPES)}

_SIMPLE = ("tneg", "tabs", "tsign", "tsignbit", "trelu", "tcopy", "tceil", "tfloor", "ttrunc",
           "trint", "tisfinite", "tisnan", "tlogical_not", "tbitwise_not", "tmov", "tcvt",
           "treshape", "tbitcast", "texpands", "tiota", "ttri", "tinsert")
_BINARY = ("tadd", "tsub", "tmul", "tmaximum", "tminimum", "tbitwise_and", "tbitwise_or",
           "tbitwise_xor", "tbitwise_left_shift", "tbitwise_right_shift", "tlogical_and",
           "tlogical_or", "teq", "tne", "tlt", "tle", "tgt", "tge", "twhere", "ttrans")
_TRANSCENDENTAL = ("texp", "texp2", "texpm1", "tlog", "tlog2", "tlog10", "tlog1p", "tsqrt",
                   "trsqrt", "treciprocal", "tdiv", "tsigmoid")
_REDUCE = ("treduce", "targreduce")
# everything else on V (sin, erf, tanh, pow, fmod, sort, scan, random ...) is "composite":
# several dependent vector steps per repeat
VECTOR_CLASS = {**{n: "simple" for n in _SIMPLE}, **{n: "binary" for n in _BINARY},
                **{n: "transcendental" for n in _TRANSCENDENTAL},
                **{n: "reduce" for n in _REDUCE}}


class Costs:
    """The numbers of one target the simulator needs, checked and converted to cycles."""

    def __init__(self, target):
        d = target.data
        self.name = target.name
        self.clock_hz = _num(d, "clock_ghz", target) * 1e9
        comp = _section(d, "compute", target)
        self.setup = float(comp.get("transfer_setup_cycles", 0))
        self.cube_startup = float(comp.get("cube_startup_cycles", 0))
        self.cube_flops = {k: float(v) for k, v in comp["cube_flops_per_cycle"].items()}
        vec = _section(d, "vector", target)
        self.repeat_bytes = _num(vec, "repeat_bytes", target, "vector.")
        self.vec_startup = _num(vec, "startup_cycles", target, "vector.", zero=True)
        self.dependent = _num(vec, "dependent_cycles", target, "vector.", zero=True)
        self.repeat_cycles = _section(vec, "repeat_cycles", target, "vector.")
        for cls in ("simple", "binary", "transcendental", "composite", "reduce"):
            if cls not in self.repeat_cycles:
                raise UsageError(f"target {target.name}: [vector.repeat_cycles] needs {cls}")
        bw = d["bandwidth"]
        self.path = {k: float(v) * 1e9 / self.clock_hz for k, v in bw.items()}
        self.path.setdefault("l1_to_l0b", self.path["l1_to_l0"])
        self.hbm = self.path["hbm_total"] if "hbm_total" in self.path else None
        if self.hbm is None:
            raise UsageError(f"target {target.name}: [bandwidth] needs hbm_total")
        l2 = d.get("l2") or {}
        self.l2_bytes = int(l2.get("bytes", 0))
        self.l2_bw = float(l2["bandwidth"]) * 1e9 / self.clock_hz if l2 else 0.0
        self.l2_hit = float(l2.get("hit_cycles", 0))
        self.l2_miss = float(l2.get("miss_cycles", 0))
        self.write_back = bool(l2.get("write_back", 0))
        self.launch = float(d.get("launch_overhead_us", 0.0)) * 1e-6 * self.clock_hz
        self.dispatch = float(d.get("task_overhead_us", 0.0)) * 1e-6 * self.clock_hz

    # -- per instruction ------------------------------------------------------------------
    def vector(self, name: str, dtype: str, nbytes: int, rows: int = 1,
               scalar: bool = False) -> float:
        """Cycles of a vector instruction over nbytes (padded) of its largest tile; a
        binary op with a scalar operand (TADDS, TMULS) is a simple one."""
        cls = VECTOR_CLASS.get(name, "composite")
        if scalar and cls == "binary":
            cls = "simple"
        per = self.repeat_cycles[cls]
        if isinstance(per, dict):
            per = per.get(dtype, max(per.values()))
        repeats = max(1, -(-nbytes // int(self.repeat_bytes)))
        cycles = self.vec_startup + repeats * float(per)
        if cls == "reduce":
            per_row = max(1, repeats // max(1, rows))
            cycles += self.dependent * max(1, math.ceil(math.log2(per_row)) + 1)
        return cycles

    def cube(self, m: int, n: int, k: int, dtype: str) -> float:
        """Cycles of one mmad of [m, k] x [k, n] in dtype (the fractal formula)."""
        size = {"f32": 4, "i32": 4, "f16": 2, "bf16": 2, "i8": 1, "u8": 1}.get(dtype, 2)
        base_k = 32 // size
        rate = self.cube_flops.get(dtype) or min(self.cube_flops.values())
        r = 2.0 * 16 * 16 * base_k / rate
        return self.cube_startup + (-(-m // 16)) * (-(-n // 16)) * (-(-k // base_k)) * r

    def move(self, path: str, nbytes: int) -> float:
        """Cycles of an on-chip move (no GM): setup plus bytes over the path."""
        return self.setup + nbytes / self.path[path]


def _section(d: dict, key: str, target, prefix: str = "") -> dict:
    v = d.get(key)
    if not isinstance(v, dict):
        raise UsageError(f"target {target.name}: the simulator needs a [{prefix}{key}] table "
                         f"(see libpypto/targets/a2.toml)")
    return v


def _num(d: dict, key: str, target, prefix: str = "", zero: bool = False) -> float:
    v = d.get(key)
    ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and \
        (v >= 0 if zero else v > 0)
    if not ok:
        raise UsageError(f"target {target.name}: {prefix}{key} must be a "
                         f"{'non-negative' if zero else 'positive'} number, not {v!r}")
    return float(v)


def padded_bytes(shape, itemsize: int, align: int = 32) -> int:
    """Bytes of a box of this shape with its rows padded to the alignment (DMA moves 32-B
    blocks; the vector unit works on the buffer's padded rows)."""
    if not shape:
        return itemsize
    row = -(-int(shape[-1]) * itemsize // align) * align
    n = row
    for s in shape[:-1]:
        n *= int(s)
    return max(0, n)
