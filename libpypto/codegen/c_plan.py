"""Codegen analysis for the C backend: what the C of each program does, decided before any C
is written. `plan_program(prog, base) -> ProgramPlan` is a pure function of an exec-level
`program`; the renderer (c.py with c_more.py and c_rows.py) walks the plan and prints it.

What is decided here (the conditions of each rule are in the docstring of the method that
applies it):

- Tiles: a C name for every arg and tile, each tile's bytes in the arena (`extent`), how often
  each tile is read and written in the program.
- Views: copies the host need not make (plan_views). A textract, or a tload into a tile, whose
  destination only feeds tmatmul operands (a tload's also through such textracts) becomes a
  pointer with a row stride into the L1 tile or the GM tensor; tmatmul then takes the valid
  rows and columns instead of zero-filled tails. A tmov of the same dtype and shape becomes an
  alias of its source (and shares its extent).
- Row runs (plan_rows). Instructions that work row by row on (R, C) tiles (row loads and
  stores, elementwise math, reductions along the row) run for row 0, then row 1, ...; tiles
  used only inside the run get one row on the stack (`local`), so a row stays in L1 from one
  instruction to the next; loads of a row every row reads whole move before the loop
  (`hoisted`); same-dtype stores of the run stream (`streams`); a row tile written only by a
  same-dtype row load reads a fully valid row in place in GM (`in_place`).
- Render units of every region, in order (`units` for the body, `bodies` for each `for`):
  an instruction on its own (Single), a run of elementwise instructions over one shape
  in one loop (Fused; a tile read only inside the run stays a register), a row run (RowRun),
  and inside a row run, a pass over the row (RowPass) that takes along the reductions along
  the row of tiles it makes, or else a store of its only kept result.
- Fusion hazards: where one pass would store into a reused buffer before a later element of
  it is read, a Fused unit is marked `hazard` (its instructions render one by one) and a row
  pass is split into one pass per instruction (`split`).
- The per-core workspace of the register-blocked tmatmul kernel: b's packed panels, and a's
  k chunk widened to fp32 when a is fp16/bf16.

Nothing here writes C: the renderer decides only how a decided unit is spelled.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..ir import expr as E
from ..ir import ops as O
from ..ir.core import Op
from ..ir.instr import dests, sources
from ..ir.mix_ops import second_ub_tiles
from .c_rows import row_group as _row_group, stores_meet as _stores_meet
from .c_text import _MM_DT

SPACE_ORDER = ("ub", "l1", "l0a", "l0b", "l0c")
ROW_MIN = 64           # row runs need a row of at least this many elements ...
ROW_BYTES = 65536      # ... give a tile a row of its own on the stack up to this size ...
ROW_STACK = 262144     # ... and up to this much in all


@dataclass(frozen=True)
class View:
    """A copy read in place: kind "extract" (textract), "load" (tload; source the GM tensor)
    or "alias" (tmov), and what the destination points into."""

    kind: str
    source: object
    trans: bool = False      # a textract with trans: the destination is the source's transpose


@dataclass(eq=False)
class Single:
    """One instruction rendered on its own (i_<name>, or row_<name> inside a row run); for a
    `for`, the units of its body are ProgramPlan.bodies[op]."""

    op: object


@dataclass(eq=False)
class Fused:
    """Elementwise instructions over one shape as one loop nest. `stored`: the instructions
    whose result goes to its tile (read outside the run, or by its own instruction); the
    others stay registers. With `hazard` one pass would clobber a reused buffer: the
    instructions render one by one."""

    instrs: list
    stored: list
    hazard: bool = False


@dataclass(eq=False)
class RowPass:
    """Elementwise instructions on row r as one loop over its columns, with the reductions
    along the row (`reductions`) or the store (`store`) it takes along. `split`: one of the
    passes a run was split into over a fusion hazard; `stored` as in Fused."""

    instrs: list
    stored: list
    reductions: list = field(default_factory=list)
    store: object = None
    split: bool = False


@dataclass(eq=False)
class RowRun:
    """Instructions rendered one row at a time: `span` in program order, of which `hoisted`
    (loads every row reads whole) go before the loop and `body` into it, over `rows` rows,
    the points of the tiles' leading dims `lead` (a row is the last dim);
    `local` tiles get one row on the stack; `in_place` are the local tiles whose only write is
    a same-dtype row load: a fully valid row is read where it lies in GM (no copy), the row
    on the stack takes only rows with a tail; `own` hoisted tiles loaded into storage of
    their own; `streams` are the stores whose output may stream; `tiles` every tile the body
    touches, in order; `units` the body's units; `group` how many rows go through each unit
    in turn (c_rows.row_group)."""

    span: list
    rows: int
    hoisted: list
    local: set
    lead: tuple = ()
    in_place: set = field(default_factory=set)
    body: list = field(default_factory=list)
    streams: list = field(default_factory=list)
    tiles: list = field(default_factory=list)
    units: list = field(default_factory=list)
    own: set = field(default_factory=set)
    group: int = 1


@dataclass(eq=False)
class ProgramPlan:
    """Every decision about one program's C (see the module docstring)."""

    prog: object = field(repr=False)
    tiles: list            # tile ops, program order
    names: dict            # arg or tile -> its C name
    extent: dict           # tile -> [first byte, last byte + 1) in the arena (alias: its source's)
    reads: dict            # tile -> how often instructions read it
    writes: dict           # tile -> how often instructions write it
    views: dict = field(default_factory=dict)      # tile -> View
    row_runs: list = field(default_factory=list)   # every RowRun, program order per region
    row_local: set = field(default_factory=set)    # tiles declared per row inside a row run
    gm_in_place: set = field(default_factory=set)  # one-row loads of a row run read in GM
    units: list = field(default_factory=list)      # the body's units
    bodies: dict = field(default_factory=dict)     # `for` op -> the units of its body; `if`:
    #                                                 the units of each arm
    workspace_bytes: int = 0                       # tmatmul's packed/widened operands
    # N-buffered tiles -> (their space's base in the arena, address expression): declared
    # at the top of their loop's body, at the iteration's place (extent: all N places)
    moving: dict = field(default_factory=dict)

    def declared(self, v) -> bool:
        """Is tile v declared at the top, at its place in the arena (not a view or a row)?"""
        return v not in self.views and v not in self.row_local


UB2_REGION = "ub2"    # the arena region of a mixed program's vector core 1 UB tiles


def arena_layout(target_buffers: dict, align: int = 64,
                 second_ub: bool = False) -> tuple[dict, int]:
    """Base offset of each memory space inside a core's scratch arena, and its total size;
    second_ub: one more UB region, for a mixed program's vector core 1 (its tiles share
    addresses with vector core 0's, which has a UB of its own on the target: here one
    thread runs both parts)."""
    base, off = {}, 0
    for s in SPACE_ORDER + ((UB2_REGION,) if second_ub else ()):
        base[s] = off
        off += -(-int(target_buffers.get("ub" if s == UB2_REGION else s, 0)) // align) * align
    return base, off


def plan_program(prog, base: dict) -> ProgramPlan:
    """Every decision about the C of one exec-level `program` op (base: arena_layout's).
    Its sync instructions are left out: a task's instructions run in order on one thread,
    which honours every flag and barrier, so a program plans the same with or without them
    (and its C computes the same bits)."""
    body = without_sync(prog.regions[0])
    names, extent = {}, {}
    for op in body:
        if op.name == "arg":                 # a0, a1, ... by position, whatever the file says
            names[op.result] = f"a{op.attrs['index']}"
    tiles = [op for top in body for op in top.walk() if op.name == "tile"]
    loops = _tile_loops(body)
    apart = second_ub_tiles(body)
    moving = {}
    for op in tiles:
        v, t = op.result, op.result.type
        names[v] = f"t{len(names)}"
        lo, hi = _span(op, loops.get(v))
        at = base[UB2_REGION] if v in apart else base[t.space]
        extent[v] = (at + lo, at + hi)
        if not isinstance(op.attrs.get("addr", 0), int):
            moving[v] = (at, op.attrs["addr"])
    plan = ProgramPlan(prog, tiles, names, extent, _counts(body, sources), _counts(body, dests))
    plan.moving = moving
    p = _Planner(plan)
    p.plan_views(body)
    p.plan_rows(body)
    plan.units = p.units([op for op in body if op.name not in ("arg", "tile")])
    plan.workspace_bytes = max([4 * _workspace_floats(op) for op in _instrs(body)
                                if op.name == "tmatmul" and matmul_kernel(op)] + [0])
    return plan


def _tile_loops(body: list) -> dict:
    """Tile declared directly in a `for` body -> that loop op."""
    out = {}
    for region in _regions(body):
        for op in region:
            if op.name == "for":
                out.update({t.result: op for t in op.regions[0] if t.name == "tile"})
    return out


def _span(op, loop) -> tuple:
    """The bytes a tile takes from its space's base: [addr, addr + size), or for an
    N-buffered tile (its addr an expression of its loop's variable) the hull of its N
    places, each iteration's address evaluated."""
    addr, size = op.attrs.get("addr", 0), op.result.type.nbytes
    if isinstance(addr, int):
        return addr, addr + size
    a = loop.attrs if loop is not None else {"var": "", "start": 0, "step": 1}
    places = [int(E.evaluate(addr, {a["var"]: a["start"] + i * a["step"]}))
              for i in range(max(1, op.attrs.get("slots", 1)))]
    return min(places), max(places) + size


INTRA_CORE_SYNC = ("sync_set", "sync_wait", "barrier", "mutex_lock", "mutex_unlock")


def without_sync(ops: list) -> list:
    """ops without the sync between one core's pipes (ir/pro_ops.py), loops and branches
    copied with their regions likewise (the tiles and instructions are the same objects).
    Cross-core events stay: the renderer refuses them (they need the Pro runner)."""
    out = []
    for op in ops:
        if op.name in INTRA_CORE_SYNC:
            continue
        if op.regions:
            op = Op(op.name, op.operands, [], op.attrs, [without_sync(r) for r in op.regions],
                    op.loc)
        out.append(op)
    return out


def matmul_kernel(op) -> bool:
    """Does a tmatmul run the prelude's register-blocked kernel (fp32 accumulator, operands
    the kernel reads), rather than plain loops?"""
    acc, a, b = op.operands
    return acc.type.dtype.name == "f32" and all(x.type.dtype.name in _MM_DT for x in (a, b))


# the prelude's pp_matmul blocking (c_prelude.h, the same numbers): k chunks of PP_KC steps,
# b packed in panels of up to PP_NR_MAX columns
PP_KC, PP_NR_MAX = 256, 32


def _workspace_floats(op) -> int:
    """Floats of workspace pp_matmul needs for op: b's packed panels (N rounded up to whole
    panels, one k chunk), and a's chunk widened to fp32 when a is fp16/bf16."""
    _, a, b = op.operands
    (M, K), (_, N) = a.type.shape, b.type.shape
    kc = min(K, PP_KC)
    panels = -(-N // PP_NR_MAX) * PP_NR_MAX
    return (panels + (M if a.type.dtype.name != "f32" else 0)) * kc


def _fusable(op) -> bool:
    """Elementwise instructions whose element i depends only on their sources' element i."""
    return op.name == "tcvt" or (op.name.startswith("t") and op.name[1:] in O.ELEMENTWISE)


def _instrs(ops: list):
    """The tile instructions among ops and inside their regions, in program order."""
    for top in ops:
        for op in top.walk():
            if op.name not in ("tile", "for", "if", "arg"):
                yield op


def _regions(body: list):
    """Every op list of the program: the body, then each region nested in it."""
    yield body
    for top in body:
        for op in top.walk():
            for region in op.regions:
                yield region


def _counts(body: list, which) -> dict:
    """How often each tile is read (which=sources) or written (which=dests) in the program."""
    out: dict = {}
    for op in _instrs(body):
        for v in which(op):
            out[v] = out.get(v, 0) + 1
    return out


def _count(ops: list, v, which) -> int:
    return sum(1 for op in ops for x in which(op) if x is v)


def _clobbers(ops: list, mem, extent: dict) -> bool:
    """Does an instruction among ops write mem: arena bytes (lo, hi), or "gm" (any tensor)?"""
    for op in _instrs(ops):
        if mem == "gm":
            if op.name in ("tstore", "tscatter"):
                return True
            continue
        for w in dests(op):
            lo, hi = extent[w]
            if lo < mem[1] and mem[0] < hi:
                return True
    return False


def _is_mm_operand(op, v) -> bool:
    return op.name == "tmatmul" and op.operands[0] is not v


def _is_kernel_operand(op, v) -> bool:
    return _is_mm_operand(op, v) and matmul_kernel(op)


def _any_reader(op, v) -> bool:
    return True


def _loadable_in_place(op) -> bool:
    """A tload whose destination could be a pointer into GM: same dtype, a matrix (leading
    tile dims 1) of a tensor of rank 2 or more."""
    d, gm = op.operands
    t, g = d.type, gm.type
    return (t.dtype == g.dtype and t.rank >= 2 and g.rank >= t.rank
            and all(x == 1 for x in t.shape[:-2]))


def _overlap(a0: int, a1: int, b0: int, b1: int) -> bool:
    return a0 < b1 and b0 < a1


def _row_role(op):
    """The part an instruction can take in a row run over tiles of shape (*lead, C), whose
    rows are the points of the leading dims: ("row", lead, C) for one that works row by row
    (row r of its result needs row r of its sources only, sources of its shape or broadcast
    along leading dims or the last: (*lead, 1), (1, .., C), (C,), ...), ("load", lead, C)
    for a load (a row load in a run of its own lead, else a load every row reads, moved
    before the loop: a (C,) tile has the lead ()), else None."""
    n = op.name
    if n in ("tload", "tstore"):
        t, g = op.operands[0].type, op.operands[1].type
        if t.rank > g.rank:
            return None
        if n == "tload":
            return ("load", tuple(t.shape[:-1]), t.shape[-1])
        return ("row", tuple(t.shape[:-1]), t.shape[-1]) if t.rank >= 2 else None
    if n == "treduce":
        d, s = op.operands
        r = s.type.rank
        if r >= 2 and op.attrs["dims"] == [r - 1] and d.type.shape == (*s.type.shape[:-1], 1):
            return ("row", tuple(s.type.shape[:-1]), s.type.shape[-1])
        return None
    if n == "texpands" or _fusable(op):
        d = op.operands[0].type
        if d.rank < 2:
            return None
        lead, C = tuple(d.shape[:-1]), d.shape[-1]
        if all(_broadcasts(tuple(v.type.shape), lead, C) for v in op.operands[1:]):
            return ("row", lead, C)
    return None


def _broadcasts(shape: tuple, lead: tuple, C: int) -> bool:
    """Can a source of this shape be read row by row in a run over (*lead, C) tiles?"""
    if shape in ((C,), (1,)):
        return True
    return (len(shape) == len(lead) + 1 and shape[-1] in (1, C)
            and all(a in (1, b) for a, b in zip(shape[:-1], lead)))


def _fits_lead(load_lead: tuple, lead: tuple) -> bool:
    """Can a load of a tile with this lead take part in a run over lead (as a row load, or
    moved before the loop when every row reads it)?"""
    return load_lead == () or (len(load_lead) == len(lead)
                               and all(a in (1, b) for a, b in zip(load_lead, lead)))


def _prod(xs) -> int:
    out = 1
    for x in xs:
        out *= x
    return out


def _inverted(a, b, rows: int) -> bool:
    """Row by row, does b (after a in program order) touch bytes of a row r' < r before a
    touches them in row r? a, b: (position, first byte, row pitch or 0, bytes per row, ...)."""
    _, la, pa, wa = a[:4]
    _, lb, pb, wb = b[:4]
    for r in range(1, rows):
        s, e = la + r * pa, la + r * pa + wa
        if pb == 0:
            if _overlap(s, e, lb, lb + wb):
                return True
            continue
        lo = max(0, (s - lb - wb) // pb + 1)          # rows r' of b that meet [s, e)
        hi = min(r - 1, -(-(e - lb) // pb) - 1)
        if lo <= hi:
            return True
    return False


class _Planner:
    """Fills a ProgramPlan: views first, then row runs, then the units of every region."""

    def __init__(self, plan: ProgramPlan):
        self.plan = plan
        self.extent, self.reads, self.writes = plan.extent, plan.reads, plan.writes
        self.views = plan.views
        self.row_runs: dict = {}      # first instruction -> RowRun

    # copies the host need not make: the destination is read where the source lies
    def plan_views(self, body) -> None:
        """Which textract, tload and tmov destinations become views of their source.

        A view is a pointer (with a row stride, and for a GM source the valid rows and
        columns) declared where the copy was; nothing is copied. It needs: the copy is the
        only write of its destination; every read of the destination follows the copy in the
        same region; no instruction from the copy to the last of those reads writes the
        source's memory (an overlapping tile, or any GM tensor for a GM source); and every
        reader can take a view: a textract or tload destination is read by tmatmul operands
        only (a tload's through textract views too); a tmov destination, a contiguous alias
        of the same dtype and shape, by anything."""
        regions = list(_regions(body))
        for region in regions:
            for i, op in enumerate(region):
                if op.name in ("textract", "tmov"):
                    self.copy_view(region, i, op)
        for region in regions:
            for i, op in enumerate(region):
                if op.name == "tload" and _loadable_in_place(op):
                    d = op.operands[0]
                    if self.view_ok(region, i, d, "gm", self.load_reader_ok):
                        self.views[d] = View("load", op.operands[1])

    def copy_view(self, region, i, op) -> None:
        """A textract (into tmatmul operands) or a tmov (same dtype and shape) as a view."""
        d, src = op.operands
        trans = op.name == "textract" and bool(op.attrs.get("trans"))
        if op.name == "textract":
            # transposed: only into the fp32 kernel (it reads a transposed operand), and
            # not of a view that is transposed itself
            ok = _is_kernel_operand if trans else _is_mm_operand
            if trans and getattr(self.views.get(src), "trans", False):
                return
        elif d.type.dtype == src.type.dtype and d.type.shape == src.type.shape:
            ok = _any_reader
        else:
            return
        if self.view_ok(region, i, d, self.memory(src), ok):
            self.views[d] = View("extract" if op.name == "textract" else "alias", src, trans)
            if op.name == "tmov":
                self.extent[d] = self.extent[src]

    def load_reader_ok(self, r, v) -> bool:
        """May r read a tload view v: as a tmatmul operand, or as a textract view's source?"""
        return _is_mm_operand(r, v) or (r.name == "textract" and
                                        getattr(self.views.get(r.operands[0]), "kind", "")
                                        == "extract")

    def memory(self, v):
        """What a tile's content depends on: its arena bytes, or "gm" for a view of GM."""
        while v in self.views:
            view = self.views[v]
            if view.kind == "load":
                return "gm"
            v = view.source
        return self.extent[v]

    def view_ok(self, region, i, d, mem, reader_ok) -> bool:
        """May d, written by region[i] from memory mem, be read in place (see plan_views)?"""
        if self.writes.get(d, 0) != 1:
            return False
        readers, last = 0, -1
        for p, top in enumerate(region[i + 1:]):
            for op in _instrs([top]):
                for v in sources(op):
                    if v is d:
                        if not reader_ok(op, d):
                            return False
                        readers += 1
                        last = p
                        if op.name == "textract":   # a view of the view: its reads count too
                            last = max(last, _last_read(region[i + 1:], op.operands[0]))
        if readers == 0 or readers != self.reads.get(d, 0):
            return False
        return not _clobbers(region[i + 1:i + 2 + last], mem, self.extent)

    # render units
    def units(self, ops: list, row: RowRun | None = None) -> list:
        """The units of a region (or of a row run's body, row): a planned row run; a run of
        elementwise instructions over one tile shape (a row pass inside a row run); else
        one instruction."""
        out, i = [], 0
        while i < len(ops):
            if row is None and ops[i] in self.row_runs:
                run = self.row_runs[ops[i]]
                out.append(run)
                i = ops.index(run.span[-1], i) + 1
                continue
            run = _same_shape_run(ops, i)
            instrs = [op for op in run if op.name != "tile"]
            if row is not None and instrs and _fusable(instrs[0]):
                passes, taken = self.row_pass(instrs, ops[i + len(run):], row)
                out += passes
                i += len(run) + taken
                continue
            if len(instrs) > 1:
                out.append(self.fused(instrs))
            else:
                for op in instrs:
                    if op.name == "for":
                        self.plan.bodies[op] = self.units(op.regions[0], row)
                    elif op.name == "if":       # a branch of a mixed program (mix-fuse)
                        self.plan.bodies[op] = [self.units(r, row) for r in op.regions]
                    out.append(Single(op))
            i += len(run)
        return out

    def fused(self, instrs: list) -> Fused:
        inside: dict = {}
        for op in instrs:
            for v in op.operands[1:]:
                inside[v] = inside.get(v, 0) + 1
        return Fused(instrs, self.stored(instrs, inside),
                     self.fusion_hazard(instrs, inside, ()))

    def row_pass(self, instrs: list, rest: list, row: RowRun) -> tuple[list, int]:
        """The passes over the row for instrs, and how many instructions of rest they take
        along: the reductions along the row of tiles made in the run that directly follow
        it, or else a store that does, when the run keeps nothing else."""
        reds, store, taken = self.taken_along(instrs, rest)
        inside: dict = {}
        for op in instrs + reds + ([store] if store else []):
            for v in sources(op):
                inside[v] = inside.get(v, 0) + 1
        if store and self.stored(instrs, inside):
            inside[store.operands[0]] -= 1          # the run keeps a tile: store apart
            store, taken = None, taken - 1
        if len(instrs) > 1 and self.fusion_hazard(instrs, inside, row.local):
            passes = [self.row_pass([op], [], row)[0][0] for op in instrs]
            for p in passes:
                p.split = True
            return passes, 0
        return [RowPass(instrs, self.stored(instrs, inside), reds, store)], taken

    def taken_along(self, instrs: list, rest: list) -> tuple[list, object, int]:
        """(reductions, store, how many of rest) a pass over instrs may take along."""
        made = [op.operands[0] for op in instrs]
        taken, reds, store = 0, [], None
        for op in rest:
            if (op.name == "treduce" and op.operands[1] in made
                    and op.attrs["dims"] == [op.operands[1].type.rank - 1]):
                reds.append(op)
            elif (op.name == "tstore" and not reds and op.operands[0] in made
                  and self.reads.get(op.operands[0]) == 1):
                store = op
            elif op.name != "tile":
                break
            taken += 1
            if store:
                break
        while taken and rest[taken - 1].name == "tile":
            taken -= 1
        return reds, store, taken

    def stored(self, instrs: list, inside: dict) -> list:
        """The instructions of a run whose result goes to memory: read outside the run, or by
        its own instruction."""
        return [op for op in instrs if self.reads.get(op.operands[0], 0) !=
                inside.get(op.operands[0], 0) or op.operands[0] in op.operands[1:]]

    def fusion_hazard(self, instrs: list, inside: dict, private) -> bool:
        """Would one pass store into a tile's bytes before a later element of it is read?
        (Buffers are reused after a tile's last use, which a single pass no longer respects
        for tiles read from memory at other positions.) private: tiles with rows of their
        own."""
        produced: set = set()
        reads = []
        for op in instrs:
            reads += [v for v in op.operands[1:] if v not in produced]
            produced.add(op.operands[0])
        stores = [op.operands[0] for op in self.stored(instrs, inside)]
        for s in reads:
            for d in stores:
                if s is d or s in private or d in private:
                    continue
                (a0, a1), (b0, b1) = self.extent[s], self.extent[d]
                if a0 < b1 and b0 < a1:
                    return True
        return False

    # row runs
    def plan_rows(self, body) -> None:
        """Find the runs of instructions to render one row at a time.

        Instructions on (R, C) tiles that work row by row (loads and stores of whole rows,
        elementwise math, reductions along the row; sources may also be (R, 1), (1, C) or
        (C,)) run for row 0, then for row 1, ...: a row of each tile stays in L1 from one
        instruction to the next instead of whole tiles streaming through L2. A tile all of
        whose reads and writes are in the run, written before it is read, gets one row of
        its own on the stack ("local"); other tiles are used in place, and the run is kept
        only if no access moves before an overlapping one it followed (when one of the two
        writes). A load of a tile that every row reads whole ((C,) or (1, C)) moves before
        the loop if nothing before it in the run touches its bytes. A GM tensor stored in
        the run is neither loaded in it nor stored twice (distinct tensors do not overlap, as
        the task graph assumes)."""
        for region in _regions(body):
            ops = [op for op in region if op.name not in ("tile", "arg")]
            i = 0
            while i < len(ops):
                lead, j = self.run_extent(ops, i)
                run = None
                for end in range(j, i + 1, -1):         # the longest valid run from i
                    run = self.row_run_at(ops[i:end], lead)
                    if run:
                        break
                if run:
                    self.accept(run)
                    i += len(run.span)
                else:
                    i += 1

    @staticmethod
    def run_extent(ops: list, i: int) -> tuple:
        """(lead, j): the lead of the instructions from ops[i] that agree on one (the first
        row instruction's), and where they stop; loads must fit it."""
        lead, loads, j = None, [], i
        while j < len(ops):
            role = _row_role(ops[j])
            if role is None:
                break
            kind, lp, _ = role
            if kind == "row":
                if lead is None:
                    if not all(_fits_lead(x, lp) for x in loads):
                        break
                    lead = lp
                elif lp != lead:
                    break
            elif lead is None:
                loads.append(lp)
            elif not _fits_lead(lp, lead):
                break
            j += 1
        return lead, j

    def accept(self, run: RowRun) -> None:
        """Record a row run, with what it streams, the tiles it touches and its units."""
        self.row_runs[run.span[0]] = run
        self.plan.row_runs.append(run)
        self.plan.row_local |= run.local
        run.body = [op for op in run.span if op not in run.hoisted]
        self.plan.gm_in_place |= self.one_rows(run.span, run.local)
        run.in_place = {op.operands[0] for op in run.body if op.name == "tload"
                        and op.operands[0] in run.local
                        and op.operands[0].type.dtype == op.operands[1].type.dtype
                        and _count(run.body, op.operands[0], dests) == 1}
        run.streams = [op for op in run.body if op.name == "tstore"
                       and op.operands[0].type.dtype == op.operands[1].type.dtype]
        run.tiles = list(dict.fromkeys(v for op in run.body for v in sources(op) + dests(op)))
        run.units = self.units(run.body, run)
        run.group = _row_group(run, ROW_STACK)

    def one_rows(self, span: list, local: set) -> set:
        """The tiles of one row (a (C,) or (1, ..., 1, C) tile, contiguous in GM) loaded in a
        run that read their row in place in GM: same dtype, the load their only write, every
        read of them in the run (whose GM tensors loaded are not stored in it), a row small
        enough for the stack (where a row with a tail goes). They touch no arena bytes."""
        out = set()
        for op in span:
            if op.name != "tload" or op.operands[0] in local:
                continue
            d, gm = op.operands
            t = d.type
            if (t.dtype == gm.type.dtype and all(x == 1 for x in t.shape[:-1])
                    and t.nbytes <= ROW_BYTES and d not in self.views
                    and self.writes.get(d, 0) == 1
                    and self.reads.get(d, 0) == _count(span, d, sources)):
                out.add(d)
        return out

    def row_run_at(self, span: list, lead) -> RowRun | None:
        """A RowRun over span if one is worth it and keeps every result, else None. Loads of
        a tile with another lead than the run's move before the loop (every row reads
        them); a run of one row whose loads cannot move keeps them where they are (nothing
        moves past another row: there is none)."""
        if lead is None:
            return None
        hoisted = [op for op in span if op.name == "tload" and _row_role(op)[1] != lead]
        run = self.row_run_with(span, lead, hoisted)
        if run is None and _prod(lead) == 1 and hoisted:
            run = self.row_run_with(span, lead, [])
        return run

    def row_run_with(self, span: list, lead: tuple, hoisted: list) -> RowRun | None:
        body = [op for op in span if op not in hoisted]
        rows = _prod(lead)
        if (len(body) < 2 or max(_row_role(op)[2] for op in body) < ROW_MIN
                or all(op.name in ("tload", "tstore") for op in body)
                or any(v in self.views for op in span for v in dests(op))):
            return None
        gm_r = [op.operands[1] for op in span if op.name == "tload"]
        stores = [op for op in span if op.name == "tstore"]
        if any(op.operands[1] in gm_r for op in stores) or _stores_meet(stores):
            return None
        local = self.row_locals(body, lead)
        ones = self.one_rows(span, local)           # their row with a tail: on the stack too
        room = ROW_STACK - sum(v.type.shape[-1] * v.type.dtype.itemsize for v in local) - \
            sum(v.type.nbytes for v in ones)
        if room < 0:
            return None
        private, own = local | ones, set()
        if _reordered(self.accesses(span, lead, hoisted, private), rows):
            # hoisted loads whose arena bytes alloc shared (rope's cos and sin in a full
            # UB) take storage of their own: the load their only write, every read here
            own = {op.operands[0] for op in hoisted if op.operands[0] not in self.views and
                   self.writes.get(op.operands[0], 0) == 1 and
                   self.reads.get(op.operands[0], 0) == _count(span, op.operands[0], sources)}
            if not own or sum(v.type.nbytes for v in own) > room or \
                    _reordered(self.accesses(span, lead, hoisted, private | own), rows):
                return None
        return RowRun(span, rows, hoisted, local, lead=lead, own=own)

    def row_locals(self, body: list, lead: tuple) -> set:
        """The run's own tiles: all their accesses in it, a write first, a row small enough."""
        local, seen = set(), set()
        for op in body:
            for v in sources(op) + dests(op):
                if v in seen:
                    continue
                seen.add(v)
                t = v.type
                if (v not in sources(op) and v not in self.views and t.rank == len(lead) + 1
                        and tuple(t.shape[:-1]) == lead
                        and t.shape[-1] * t.dtype.itemsize <= ROW_BYTES
                        and self.reads.get(v, 0) == _count(body, v, sources)
                        and self.writes.get(v, 0) == _count(body, v, dests)):
                    local.add(v)
        return local

    def accesses(self, span: list, lead: tuple, hoisted: list, local: set) -> list:
        """The run's accesses to tiles in place: (position, first byte, row pitch (0: every
        row, or rows that do not follow the run's: tiles broadcast along a leading dim),
        bytes, writes, hoisted)."""
        acc = []
        for pos, op in enumerate(span):
            for v, w in [(v, False) for v in sources(op)] + [(v, True) for v in dests(op)]:
                if v in local:
                    continue
                lo, hi = self.extent[v]
                t = v.type
                if op not in hoisted and tuple(t.shape[:-1]) == lead:
                    pitch = t.shape[-1] * t.dtype.itemsize
                    acc.append((pos, lo, pitch, pitch, w, False))
                else:
                    acc.append((pos, lo, 0, hi - lo, w, op in hoisted))
        return acc


def _reordered(acc: list, rows: int) -> bool:
    """Would running row by row move an access before an overlapping one it followed (one of
    the two a write), or a hoisted load before a write of its bytes?"""
    for a in acc:
        for b in acc:
            if a[0] >= b[0] or not (a[4] or b[4]) or a[5]:
                continue
            if b[5]:       # moves before the loop, so before a
                if _overlap(a[1], a[1] + max(a[3], a[2] * rows), b[1], b[1] + b[3]):
                    return True
            elif _inverted(a, b, rows):
                return True
    return False


def _same_shape_run(ops: list, i: int) -> list:
    """ops[i], and if it is elementwise, the elementwise instructions over its shape (and the
    tile declarations between them) that follow it."""
    run = [ops[i]]
    if _fusable(ops[i]):
        shape = ops[i].operands[0].type.shape
        while i + len(run) < len(ops):
            nxt = ops[i + len(run)]
            if nxt.name == "tile" or (_fusable(nxt) and nxt.operands[0].type.shape == shape):
                run.append(nxt)
            else:
                break
        while run[-1].name == "tile":
            run.pop()
    return run


def _last_read(ops: list, v) -> int:
    last = -1
    for p, top in enumerate(ops):
        if any(v is x for op in _instrs([top]) for x in sources(op)):
            last = p
    return last
