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

    def on_chip(self, op, tiles) -> float:
        """Cycles of an instruction that moves no GM data and whose cost no size changes
        (vector work, on-chip moves, a matmul at its full k): the one formula the
        simulator's flattener and pypto-sched's program costs both use."""
        n = op.name
        if n == "tscatter":
            return self.setup
        if n == "tmatmul":
            acc, a, b = tiles[:3]
            return self.cube(a.shape[0], b.shape[1], a.shape[1], a.dtype.name)
        if n in ("textract", "tmov", "tinsert") and op.attrs.get("pipe") != "V":
            return self._on_chip_move(tiles)
        big = max(tiles, key=lambda t: t.padded_nbytes(), default=None)
        if big is None:
            return self.vec_startup
        rows = big.shape[0] if big.shape else 1
        return self.vector(n, big.dtype.name, big.padded_nbytes(), rows,
                           scalar="scalar" in op.attrs)

    def _on_chip_move(self, tiles) -> float:
        dst, src = tiles[0], tiles[1]
        nbytes = min(dst.padded_nbytes(), src.padded_nbytes())
        if src.space == "l0c":
            return self.move("l0c_to_ub", nbytes)
        if dst.space in ("l0a", "bias"):
            return self.move("l1_to_l0", nbytes)
        if dst.space == "l0b":
            return self.move("l1_to_l0b", nbytes)
        return self.move("ub_to_gm", nbytes)          # UB -> L1 (no published rate: MTE3's)

    def gm_alone(self, path: str, nbytes: int, store: bool) -> float:
        """Cycles of a GM transfer with the chip to itself and a cold L2: set-up, the L2's
        miss latency for a load (its hit latency for a store the L2 takes, write-back),
        then the bytes at the path's per-core rate (the simulator adds HBM sharing)."""
        if store:
            lat = self.l2_hit if self.l2_bytes and self.l2_bw and self.write_back else 0.0
        else:
            lat = self.l2_miss if self.l2_bytes and self.l2_bw else 0.0
        return self.setup + lat + nbytes / self.path[path]


def gm_path(name: str, tile) -> str:
    """The data path of a GM load or store of this tile (tload, tgather, tstore)."""
    if name == "tstore":
        return "l0c_to_gm" if tile.space == "l0c" else "ub_to_gm"
    return "gm_to_l1" if tile.space == "l1" else "gm_to_ub"


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


# -- a program's cost for bound sizes (pypto-sched's per-task duration) ---------------------

class ProgramCost:
    """What one instance of a program costs alone on its core: busy cycles per pipe
    (PIPES order), GM bytes moved (loads and stores, rows padded), and the cycles of
    those GM transfers."""

    __slots__ = ("busy", "gm_bytes", "gm_cycles")

    def __init__(self):
        self.busy = [0.0] * len(PIPES)
        self.gm_bytes = 0.0
        self.gm_cycles = 0.0

    @property
    def cycles(self) -> float:
        """The instance's duration: the sum of its pipes' busy time (see program_cost)."""
        return sum(self.busy)


def program_cost(prog, env: dict, costs: Costs) -> ProgramCost:
    """The cost of one instance of prog under env (its scalars; a grid index or loop
    variable left out makes what depends on it full-size): every instruction costed by the
    simulator's formulas (Costs.on_chip, Costs.cube, Costs.gm_alone), loops multiplied by
    their trip counts (1 when unbound), a branch the arm its condition picks (the costlier
    arm when unbound), a GM transfer its valid box (the whole tile when unbound).

    The duration is the sum of the pipes' busy time, not their maximum: the programs as
    lowered in Tensor mode are single-buffered, so a load, the work on it and its store
    follow one another and the simulator overlaps little inside one instance; the sum is
    then the instance's simulated makespan alone on the chip (an overestimate where pipes
    do overlap)."""
    out = ProgramCost()
    _cost_region(prog.regions[0], env, costs, 1.0, out)
    return out


def _cost_region(ops, env: dict, costs: Costs, mult: float, out: ProgramCost) -> None:
    from ..ir import expr as E
    for op in ops:
        n = op.name
        if n in ("tile", "arg"):
            continue
        if n == "for":
            a = op.attrs
            trips = _maybe(lambda: max(0, -(-(E.evaluate(a["stop"], env) -
                                              E.evaluate(a["start"], env)) //
                                            E.evaluate(a["step"], env))), 1)
            _cost_region(op.regions[0], env, costs, mult * trips, out)
        elif n == "if":
            cond = _maybe(lambda: bool(E.evaluate(op.attrs["cond"], env)), None)
            if cond is not None:
                _cost_region(op.regions[0 if cond else 1], env, costs, mult, out)
                continue
            arms = [ProgramCost(), ProgramCost()]
            for arm, region in zip(arms, op.regions):
                _cost_region(region, env, costs, mult, arm)
            best = max(arms, key=lambda c: c.cycles)
            out.busy = [x + y for x, y in zip(out.busy, best.busy)]
            out.gm_bytes += best.gm_bytes
            out.gm_cycles += best.gm_cycles
        else:
            _cost_instr(op, env, costs, mult, out)


def _cost_instr(op, env: dict, costs: Costs, mult: float, out: ProgramCost) -> None:
    from ..ir import expr as E
    from ..ir.types import TileType
    tiles = [v.type for v in op.operands if isinstance(v.type, TileType)]
    pipe = PIPE_INDEX.get(op.attrs.get("pipe", "S"), PIPE_INDEX["S"])
    n = op.name
    if n in ("tload", "tstore", "tgather"):
        t = tiles[0]
        valid = op.attrs.get("valid")
        shape = tuple(t.shape) if valid is None else tuple(
            max(0, min(int(_maybe(lambda x=x: E.evaluate(x, env), d)), d))
            for x, d in zip(valid, t.shape))
        nbytes = padded_bytes(shape, t.dtype.itemsize)
        cyc = costs.gm_alone(gm_path(n, t), nbytes, n == "tstore")
        out.gm_bytes += mult * nbytes
        out.gm_cycles += mult * cyc
    elif n == "tmatmul" and "k_valid" in op.attrs:
        a, b = tiles[1], tiles[2]
        k = max(0, min(a.shape[1], int(_maybe(lambda: E.evaluate(op.attrs["k_valid"], env),
                                              a.shape[1]))))
        cyc = costs.cube(a.shape[0], b.shape[1], k, a.dtype.name)
    else:
        cyc = costs.on_chip(op, tiles)
    out.busy[pipe] += mult * cyc


def _maybe(fn, default):
    """fn() or, when it needs a symbol env does not bind, default."""
    from ..ir import expr as E
    try:
        return fn()
    except E.UnboundSymbol:
        return default


def schedule_costs(target) -> Costs:
    """The target's cost tables for pypto-sched. A target without the simulator's
    `[vector]` table (the host) gets one derived from its first-order `[compute]` numbers:
    every vector instruction `vector_op_cycles` plus its bytes over
    `vector_bytes_per_cycle`, whatever its class (the simulator itself still refuses such
    a target: its vector costs would be guesses)."""
    if isinstance(target.data.get("vector"), dict):
        return Costs(target)
    from . import Target
    comp = _section(target.data, "compute", target)
    per = float(_num(comp, "vector_bytes_per_cycle", target, "compute."))
    vec = {"repeat_bytes": per, "startup_cycles": float(comp.get("vector_op_cycles", 0)),
           "dependent_cycles": 0,
           "repeat_cycles": {k: 1 for k in ("simple", "binary", "transcendental",
                                            "composite", "reduce")}}
    return Costs(Target(target.name, {**target.data, "vector": vec}, target.source))
