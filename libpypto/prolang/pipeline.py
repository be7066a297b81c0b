"""Automatic cube/vector pipelining (`pl.pipeline`, the reference's pypto_pro.runtime.pipeline)
and the direct L0C -> UB move it hands data over with (`pl.move(..., acc_to_vec_mode=)`).

    @pl.pipeline.stage
    def mm(j, ...):                       # cube: writes a slot of a ring
        ...; pl.move(ring.next(), acc, acc_to_vec_mode=pl.AccToVecMode.DualModeSplitM)

    @pl.pipeline.stage
    def epi(j, ...):                      # vector: reads the same ring
        x = ring.next(); ...

    @pl.jit(pipeline=pl.pipeline.PipelineConfig(preload=2))
    def k(...):
        ring = pl.make_tile_group(type=..., addrs=..., depth=2, fwd_ids=[0, 1], bwd_ids=[2, 3])
        for j in pl.range(lo, hi, step):          # outside the sections
            with pl.section_cube():
                mm(j, ...)
            with pl.section_vector():
                epi(j, ...)

The direct move (acc_to_vec_mode=, in the cube section of a mixed kernel) writes an Acc tile
into the Vec tile at the same UB address of the cluster's vector cores, on FIX: the whole
tile into vector core 0 or 1 (SingleModeVec0/1, destination [M, N]), or split by rows
(DualModeSplitM, destination [M/2, N]: rows [0, h) to subblock 0 and [h, m) to subblock 1,
h = ceil(m / 2) of the valid rows m) or by columns (DualModeSplitN, destination [M, N/2]:
h = ceil(n / 32) * 32 / 2 columns to subblock 0, the rest to 1), converting the dtype as a
move does. The instruction is `tmov_acc2vec` (PTO TMOV with the mode); the Pro runner, the C
and the race checker write the vector cores' UB bytes (libpypto.runtime.pro_pipeline).

The pipeline (`@pl.jit(pipeline=pl.pipeline.PipelineConfig(preload=N))`): a `pl.range` loop
outside the sections whose sections only call `@pl.pipeline.stage` functions. Stage calls
are recorded, then each core's program is generated:
- Schedule: the first stage (in body order) runs `preload` iterations ahead of the others
  (the reference's C1 C1 C1 C2 C1 C2 ... for preload=2). A core whose stages all have the
  same delay gets one loop in body order; a core with both (the first stage and later ones)
  gets a prologue (the first stage alone for the first N iterations), a steady loop (first
  stage of iteration i, then the others of iteration i - N) and an epilogue.
- Rings: a tile group with `fwd_ids` and `bwd_ids` (one event id 0-15 per slot) that one
  stage writes on one core and one stage reads on the other (one `.next()` per stage call)
  is a cross-core ring. With K = max(1, preload) credits (sync_only: 1), iteration j (the
  ring's slot counter) gets, all INTRA_BLOCK, on the pipe of the instruction they guard:
  the producer waits bwd[j % D] before its first write of the slot and sets fwd[j % D] after
  its last; the consumer waits fwd[j % D] before its first read and sets bwd[(j + K) % D]
  after its last; the consumer sets bwd[0..K-1] before its loop (the first K slots start
  free) and the producer waits the K credits left after its loop (every set is waited).
  So the producer runs at most K iterations ahead, and K slots are in flight: a ring with
  fewer than K slots is an error at trace time (raise its depth or lower preload). With
  K = D this is the reference's handshake (the consumer releases the slot it read).
- `PipelineConfig(sync_only=True)` keeps the serial order and inserts only the events.
- A stage's body gets the kernel body's rewrite (rewrite.py): `if` on a runtime scalar
  (`if j == 0:`) records a branch, as in the reference's stages.
Differences from the reference (an AST transform that also writes pipeline_generated.py):
pypto transforms the trace; a ring needs both fwd_ids and bwd_ids (the reference also takes
fwd_ids alone when the order is guaranteed otherwise); ring slots rotate by `.next()` only;
a pipelined loop does not nest in another loop. Outside the sections of a pipelined kernel,
pl.get_subblock_num() and pl.get_subblock_idx() are per core (1 and 0 on the cube, 2 and the
subblock on a vector core) in the loop bounds and the stage arguments, so the reference's
`pl.get_block_idx() // pl.get_subblock_num()` is the cluster index on both.
"""
from __future__ import annotations

import dataclasses
import functools
import re
import types

from ..errors import CompileError
from ..ir import expr as E
from ..ir.core import make
from ..ir.defs import OPS, dests
from . import state
from .dsl import AccToVecMode, Scalar, wrap
from .rewrite import rewrite
from .tiles import _select

__all__ = ["PipelineConfig", "stage"]


@dataclasses.dataclass(frozen=True)
class PipelineConfig:
    """preload: iterations the first stage runs ahead (and the ring credits); sync_only:
    keep the serial order, insert only the cross-core events."""
    preload: int = 2
    sync_only: bool = False


def check_config(cfg) -> None:
    if not isinstance(cfg, PipelineConfig):
        raise CompileError(f"@pl.jit pipeline= takes a pl.pipeline.PipelineConfig, not {cfg!r}")
    if not isinstance(cfg.preload, int) or isinstance(cfg.preload, bool) or cfg.preload < 0:
        raise CompileError(f"PipelineConfig preload must be an int >= 0, not {cfg.preload!r}")


def stage(fn):
    """@pl.pipeline.stage: marks a pipeline stage. Called outside a pipelined loop it runs
    as the plain function; inside one the call is recorded and scheduled (module doc)."""
    @functools.wraps(fn)
    def call(*args, **kwargs):
        t = state._STATE[-1] if state._STATE else None
        cap = getattr(t, "pipe_capture", None)
        if cap is None:
            return fn(*args, **kwargs)
        if t.section is None:
            raise t.error(f"pipeline stage {fn.__name__} is called outside the sections: call "
                          f"it inside pl.section_cube() or pl.section_vector()")
        cap.calls.append(_Call(t.section, fn, args, kwargs, t.loc()))
        return None
    call.pipeline_stage = True
    return call


# -- L0C -> UB -------------------------------------------------------------------------------

def acc_to_vec(t, dst, src, mode):
    """pl.move(vec_tile, acc_tile, acc_to_vec_mode=mode) in the cube section."""
    if not isinstance(mode, AccToVecMode):
        raise t.error(f"acc_to_vec_mode must be a pl.AccToVecMode, not {mode!r}")
    if (src.type.space, dst.type.space) != ("l0c", "ub"):
        raise t.error("acc_to_vec_mode= moves an Acc tile into a Vec tile")
    if not t.mixed or t.section != "cube":
        raise t.error("acc_to_vec_mode= is the cube core's move into its vector cores' UB: "
                      "use it in pl.section_cube() of a kernel with both sections")
    (m, n), m_ = src.type.shape, mode.value
    want = {"DualModeSplitM": [m // 2, n], "DualModeSplitN": [m, n // 2]}.get(m_, [m, n])
    if (m_ == "DualModeSplitM" and m % 2) or (m_ == "DualModeSplitN" and n % 2):
        raise t.error(f"{m_} splits the Acc tile [{m}, {n}] in halves: its "
                      f"{'rows' if m_.endswith('M') else 'columns'} must be even")
    if list(dst.type.shape) != want:
        raise t.error(f"acc_to_vec_mode={m_} of an Acc tile [{m}, {n}] writes a Vec tile of "
                      f"shape {want} on each vector core it reaches, not {list(dst.type.shape)}")
    if (src.type.dtype.kind == "float") != (dst.type.dtype.kind == "float"):
        raise t.error(f"move of {src.type.dtype} Acc into a {dst.type.dtype} Vec tile")
    from .ops import emit
    return emit("tmov_acc2vec", [dst, src], {"mode": m_, "valid": list(src.valid)})


# -- the pipelined loop ----------------------------------------------------------------------

class _Call:
    def __init__(self, core, fn, args, kwargs, loc):
        self.core, self.fn, self.args, self.kwargs, self.loc = core, fn, args, kwargs, loc


class _Capture:
    def __init__(self, loc):
        self.loc, self.calls = loc, []


def _marks(t) -> dict:
    return {c: len(p.body) for c, p in t.programs.items()}


def _stray(t, marks: dict, cap):
    """The first op a section of the pipelined loop emitted outside a stage, if any."""
    for c, p in sorted(t.programs.items()):
        extra = p.body[marks.get(c, 0):]
        if extra:
            return extra[0].loc or cap.loc
    return None


def loop(t, start, stop, step):
    """pl.range outside the sections of a pipelined kernel (state.range_): the body's stage
    calls are recorded, then scheduled on each core (module docstring)."""
    if getattr(t, "pipe_capture", None) is not None:
        raise t.error("pipelined loops do not nest: one pl.range loop outside the sections")
    if not t.mixed:
        raise t.error("a pipelined loop needs a kernel with both pl.section_cube() and "
                      "pl.section_vector()")
    cap = t.pipe_capture = _Capture(t.loc())
    var = t.fresh("pipe_i")
    marks = _marks(t)
    try:
        yield Scalar(E.sym(var))
    finally:
        t.pipe_capture = None
    stray = _stray(t, marks, cap)
    if stray is not None:
        raise CompileError("in a pipelined loop (@pl.jit(pipeline=...)) the sections only call "
                           "@pl.pipeline.stage functions: move this work into a stage", stray)
    if not cap.calls:
        raise CompileError("a pipelined loop calls no @pl.pipeline.stage function", cap.loc)
    _Replay(t, cap, var, (start, stop, step)).run()


class _Replay:
    """One pipelined loop's code generation, core by core."""

    def __init__(self, t, cap, var, bounds):
        self.t, self.cap, self.var, self.bounds = t, cap, var, bounds
        cfg = t.pipeline
        self.n = 0 if cfg.sync_only else cfg.preload
        self.credits = max(1, self.n)
        self.delays = [0] + [self.n] * (len(cap.calls) - 1)
        self.roles: dict = {}        # group -> {"write"|"read": (core, stage name)}
        self.pipes: dict = {}        # (group, role) -> (first pipe, last pipe)

    def run(self) -> None:
        t = self.t
        for core in ("cube", "vector"):
            mine = [i for i, c in enumerate(self.cap.calls) if c.core == core]
            if not mine:
                continue
            shared = state.enter_counts(t, core)          # this core's slot counters
            try:
                self.core_loops(core, mine, {g: g.count for g in t.groups})
            finally:
                state.exit_counts(t, core, shared)
        for g, r in self.roles.items():
            if len(r) != 2:
                raise CompileError(f"tile group {g.name} has fwd_ids/bwd_ids but the pipelined "
                                   f"loop only {next(iter(r))}s it: a ring is written by a "
                                   f"stage on one core and read by a stage on the other",
                                   g.loc)

    def core_loops(self, core, mine, saved) -> None:
        t, (start, stop, step) = self.t, self.bounds
        t.section = core
        self.env = {"pipe_sbn": 2 if core == "vector" else 1,
                    "pipe_sbi": E.mod(E.sym("g0"), 2) if core == "vector" else 0}
        start, stop, step = (E.substitute(x, self.env) for x in (start, stop, step))
        try:
            prog = t.program("a pipelined loop")
            region, at = prog.stack[-1], len(prog.stack[-1])
            if len({self.delays[i] for i in mine}) == 1:
                self.one_loop(start, stop, step, [(i, 0) for i in mine])
            else:
                first, rest = [(i, 0) for i in mine if self.delays[i] == 0], \
                    [i for i in mine if self.delays[i]]
                n, p = E.maximum(0, E.cdiv(E.sub(stop, start), step)), self.n
                self.one_loop(start, E.minimum(stop, E.add(start, E.mul(p, step))), step,
                              first)
                self.one_loop(E.add(start, E.mul(p, step)), stop, step,
                              first + [(i, p) for i in rest])
                self.one_loop(E.add(start, E.mul(E.maximum(0, E.sub(n, p)), step)), stop,
                              step, [(i, 0) for i in rest])
            self.ends(core, region, at, saved)
        finally:
            t.section = None

    def one_loop(self, start, stop, step, calls) -> None:
        for k in state._loop(self.t, start, stop, step):
            for i, shift in calls:
                j = E.sub(k.e, E.mul(shift, step)) if shift else k.e
                self.call(self.cap.calls[i], {**self.env, self.var: j})

    def call(self, c, env) -> None:
        """Trace one stage call for one iteration and put the ring events around it."""
        t = self.t
        prog = t.program("a pipeline stage")
        region, n0 = prog.stack[-1], len(prog.stack[-1])
        before = {g: g.count for g in t.groups if g.fwd_ids or g.bwd_ids}
        kernel = t.kernel
        fn = self.rewritten(c.fn)
        t.kernel = _Named(kernel, c.fn.__name__)
        try:
            fn(*_subst(c.args, env), **{k: _subst(v, env) for k, v in c.kwargs.items()})
        finally:
            t.kernel = kernel
        touched = _ring_uses(region[n0:], {g.name: g for g in before})
        adds: list = []
        for g, uses in sorted(touched.items(), key=lambda kv: kv[0].name):
            adds += self.guard(g, uses, c, before[g])
        # from the back, so the indices hold; at one place the sets end before the waits
        for pos, kind, _, op in sorted(adds, key=lambda a: (-a[0], a[1] == "set", a[2])):
            region.insert(n0 + pos, op)

    def rewritten(self, fn):
        """The stage with the kernel body's AST rewrite (rewrite.py): `if` on a runtime
        scalar records a branch, TilingKey fields are constants; once per stage."""
        cache = self.t.__dict__.setdefault("stage_fns", {})
        if fn not in cache:
            helpers, consts = self.t.rewrite_env
            cache[fn] = rewrite(fn, self.t.kernel.file, helpers, consts)[0]
        return cache[fn]

    def guard(self, g, uses, c, j) -> list:
        """The events of one ring around one stage call (uses: [(top index, pipe, role)]),
        as [(index in the call's ops, kind, ring name, op)]."""
        role = uses[0][2]            # the producer writes a fresh slot first
        self.check_ring(g, role, c)
        if E.sub(g.count, j) != 1:
            raise CompileError(f"pipeline stage {c.fn.__name__} must take exactly one slot "
                               f"of ring tile group {g.name} (one .next() per call)", c.loc)
        first, last = uses[0], uses[-1]
        self.pipes.setdefault((g, role), (first[1], last[1]))
        d = g.depth
        if role == "write":
            wait_id, set_id = _select(E.mod(j, d), g.bwd_ids), _select(E.mod(j, d), g.fwd_ids)
        else:
            wait_id = _select(E.mod(j, d), g.fwd_ids)
            set_id = _select(E.mod(E.add(j, self.credits), d), g.bwd_ids)
        return [(last[0] + 1, "set", g.name, _event("cross_set", last[1], set_id, c.loc)),
                (first[0], "wait", g.name, _event("cross_wait", first[1], wait_id, c.loc))]

    def check_ring(self, g, role, c) -> None:
        for ids, what in ((g.fwd_ids, "fwd_ids"), (g.bwd_ids, "bwd_ids")):
            if not isinstance(ids, (list, tuple)) or len(ids) != g.depth or any(
                    not isinstance(i, int) or not 0 <= i <= 15 for i in ids):
                raise CompileError(f"tile group {g.name} ring: {what} must list {g.depth} event "
                                   f"ids 0-15 (one per slot), not {ids!r} (a pipelined ring "
                                   f"needs both fwd_ids and bwd_ids)", g.loc)
        if g.depth < self.credits:
            raise CompileError(f"pipeline preload={self.n}: the producer of ring tile group "
                               f"{g.name} runs {self.credits} iterations ahead, so "
                               f"{self.credits} slots are in flight, but the group has "
                               f"{g.depth}: give it at least {self.credits} slots (depth, "
                               f"fwd_ids, bwd_ids) or lower preload", g.loc)
        mine = self.roles.setdefault(g, {})
        other = mine.get(role)
        if other is not None and other != (c.core, c.fn.__name__):
            raise CompileError(f"ring tile group {g.name} is {role}-first in two stages "
                               f"({other[1]} and {c.fn.__name__}): one stage writes a ring, "
                               f"one reads it", c.loc)
        if other is None and any(core == c.core for core, _ in mine.values()):
            raise CompileError(f"ring tile group {g.name} is written and read on the {c.core} "
                               f"core: fwd_ids/bwd_ids are for a cube <-> vector hand-over",
                               c.loc)
        mine[role] = (c.core, c.fn.__name__)

    def ends(self, core, region, at, saved) -> None:
        """The consumer's first credits before its loops, the producer's drain after."""
        loc = self.cap.loc
        for g in sorted((g for g in self.roles), key=lambda g: g.name):
            for role, (cr, _) in self.roles[g].items():
                if cr != core:
                    continue
                first, last = self.pipes[(g, role)]
                if role == "read":
                    for k in range(self.credits):
                        sid = _select(E.mod(E.add(saved[g], k), g.depth), g.bwd_ids)
                        region.insert(at + k, _event("cross_set", last, sid, loc))
                else:
                    for k in range(self.credits):
                        wid = _select(E.mod(E.add(g.count, k), g.depth), g.bwd_ids)
                        region.append(_event("cross_wait", first, wid, loc))


class _Named:
    """The kernel as Trace.loc sees it, named after a stage: ops traced in the stage get the
    stage's lines."""

    def __init__(self, kernel, name):
        self.file = kernel.file
        self.fn = types.SimpleNamespace(__name__=name)


def _subst(x, env):
    if isinstance(x, Scalar):
        return wrap(E.substitute(x.e, env))
    if isinstance(x, (list, tuple)):
        return type(x)(_subst(y, env) for y in x)
    return x


def _event(name, pipe, event_id, loc):
    return make(name, (), (), {"pipe": pipe, "event_id": event_id, "mode": "INTRA_BLOCK"},
                None, loc)


_SLOT = re.compile(r"^(g\d+)(_|$)")


def _ring_uses(ops, rings: dict) -> dict:
    """ring group -> [(top-level index, pipe, "write"|"read")] of the instructions of ops
    (nested regions included) that touch one of its slots."""
    out: dict = {}
    for k, top in enumerate(ops):
        for op in top.walk():
            if not op.operands or "pipe" not in op.attrs or op.name in ("tile", "arg"):
                continue
            ws = OPS[op.name].writes        # a read of the destination (insert) is no read
            rs = [v for i, v in enumerate(op.operands) if i not in ws]
            for v in rs + [w for w in dests(op) if not any(v is w for v in rs)]:
                name = v.owner.attrs.get("name", "") if v.owner is not None else ""
                m = _SLOT.match(name)
                g = rings.get(m.group(1)) if m else None
                if g is not None:      # an instruction that reads the slot reads it first
                    role = "read" if any(v is r for r in rs) else "write"
                    out.setdefault(g, []).append((k, op.attrs["pipe"], role))
    return out
