"""alloc: give every tile a buffer offset in its memory space, reusing space after last use.

Live ranges come from program order; a tile used inside a loop but live across iterations
(an accumulator) stays live for the whole loop. Offsets are first-fit per space and aligned
to the target's buffer alignment; a block that needs more than a core's buffer is an error
that names the op and the space.

An N-buffered tile (its `slots`, set by nbuffer on copy-ins declared in a loop body) takes N
places side by side for the whole loop, and its address picks the iteration's:
base + (i mod N) * size, i the loop's iteration number. Where the N places do not fit a
space, that space's N-buffered tiles get fewer (N - 1, ..., 1: one is a plain tile); the
block records per space what was asked and given (`nbuffer={l1=[2, 2], l0a=[2, 1]}`), and
a block that fits single-buffered never fails for its buffers.

Reuse (option `reuse`): first fit packs a tile into the lowest free bytes, often those the
tile before it just left. On a target whose pipes run at once (a2, a3, 950: [alloc] reuse =
"spread") that makes the next tile wait for the last reader of the old one: flash
attention's P V matmul, into the L0C bytes of the scores, waits until FIX has stored the
scores. There a tile takes, among the places that fit the core's buffer, the one whose
bytes were last used longest ago (never used first, then the lowest offset); a tile in the
other arm of an `if` does not count as a use (the two do not run in the same step). A
space whose spread placement does not fit the buffer keeps its first fit.

A mixed program for a cluster (mix-fuse) places vector core 1's UB tiles apart from vector
core 0's: each core has a UB of its own, so the same addresses may hold both
(ir/mix_ops.second_ub_tiles; the host's C gives them a region of their own).
"""
from __future__ import annotations

from ..errors import CompileError, UsageError
from ..ir import expr as E
from ..ir.core import Document, copy_doc
from ..ir.mix_ops import second_ub_tiles
from ..ir.types import TileType

SPACE_NAMES = {"ub": "UB", "l1": "L1", "l0a": "L0A", "l0b": "L0B", "l0c": "L0C"}


REUSE = ("auto", "first-fit", "spread")


def alloc(doc: Document, *, target, reuse: str = "auto") -> Document:
    """Assign tile buffer offsets over live ranges; check per-core capacity.

    reuse: first-fit (the lowest free bytes), spread (the bytes used longest ago, where
      the buffer fits it), or auto: the target's [alloc] reuse (first-fit without one).
    """
    if reuse not in REUSE:
        raise UsageError(f"alloc reuse must be one of {', '.join(REUSE)}, not {reuse!r}")
    if reuse == "auto":
        reuse = str(target.data.get("alloc", {}).get("reuse", "first-fit"))
    doc = copy_doc(doc)
    for blk in doc.walk():
        if blk.name != "block":
            continue
        body = blk.regions[0]
        asked = _slotted(body)
        grant = _grant_slots(body, target)
        offsets, peak = plan(body, target, grant, spread=reuse == "spread")
        check_capacity(peak, target, blk)
        loops = _slot_loops(body)
        for top in body:
            for op in top.walk():
                if op.name == "tile":
                    _place_tile(op, offsets[op.result], grant, loops, target)
        blk.attrs["buffers"] = {s: peak[s] for s in sorted(peak)}
        if asked:
            blk.attrs["nbuffer"] = _granted(asked, grant)
    return doc


def _granted(asked: dict, grant: dict) -> dict:
    """Per space: [the most buffers a tile asked, the fewest one got]."""
    out: dict = {}
    for v, n in asked.items():
        a, g = out.get(v.type.space, (1, n))
        out[v.type.space] = (max(a, n), min(g, grant[v]))
    return {s: list(out[s]) for s in sorted(out)}


def _grant_slots(body: list, target) -> dict:
    """N-buffered tile -> the buffers it gets: what it asks where the space fits that,
    else the most k < N that fits (k = 1 gives up)."""
    grant = _slotted(body)
    most: dict = {}
    for v, n in grant.items():
        most[v.type.space] = max(most.get(v.type.space, 1), n)
    for space, top in sorted(most.items()):
        for k in range(top, 0, -1):
            trial = {v: (min(n, k) if v.type.space == space else n) for v, n in grant.items()}
            _, peak = plan(body, target, trial)
            if peak.get(space, 0) <= target.buffer(space) or k == 1:
                grant = trial
                break
    return grant


def _slotted(body: list) -> dict:
    """Tiles declared directly in a loop body with slots > 1 -> their slots (a tile that
    asks for slots outside a loop gets one)."""
    out = {}
    loops = _slot_loops(body)
    for top in body:
        for op in top.walk():
            if op.name == "tile" and op.attrs.get("slots", 1) > 1 and op.result in loops:
                out[op.result] = op.attrs["slots"]
    return out


def _slot_loops(body: list) -> dict:
    """Tile declared directly in a `for` body -> that loop op."""
    out = {}

    def visit(ops, loop):
        for op in ops:
            if op.name == "tile" and loop is not None:
                out[op.result] = loop
            for r in op.regions:
                visit(r, op if op.name == "for" else None)
    visit(body, None)
    return out


def iteration(loop):
    """The iteration number of a loop's current trip, as an expression of its variable."""
    a = loop.attrs
    i = E.sym(a["var"])
    if a["start"] != 0:
        i = E.sub(i, a["start"])
    return i if a["step"] == 1 else E.floordiv(i, a["step"])


def _place_tile(op, base: int, grant: dict, loops: dict, target) -> None:
    n = grant.get(op.result, 1)
    if n <= 1:
        op.attrs.pop("slots", None)
        op.attrs["addr"] = base
        return
    op.attrs["slots"] = n
    size = slot_bytes(op.result.type, target)
    op.attrs["addr"] = E.add(E.mul(E.mod(iteration(loops[op.result]), n), size), base)


def check_capacity(peak: dict, target, blk) -> None:
    for space, used in peak.items():
        cap = target.buffer(space)
        if used > cap:
            ops = ", ".join(blk.attrs.get("ops", [])) or blk.attrs.get("name", "?")
            raise CompileError(f"{ops} needs {_kib(used)} of {SPACE_NAMES[space]} per core but "
                               f"target {target.name} has {_kib(cap)}; use smaller tile shapes",
                               blk.loc)


def _kib(n: int) -> str:
    return f"{n / 1024:.1f} KiB" if n % 1024 else f"{n // 1024} KiB"


def buffer_align(target) -> int:
    return int(target.data.get("buffer_align", target.align))


def slot_bytes(t: TileType, target) -> int:
    """The bytes one buffer of a tile takes (its rows padded, rounded up to the alignment)."""
    align = buffer_align(target)
    return -(-t.padded_nbytes(target.align) // align) * align


def live_ranges(body: list, spans: dict | None = None) -> dict:
    """Tile -> (first, last) position of its uses, accumulators stretched over their loops
    (and tiles in `spans`, tile -> its loop op, over that loop)."""
    ranges, regions = _number(body)
    loops = [(s, e) for _, s, e in regions]
    where = {id(op): (s, e) for op, s, e in regions}
    for v, loop in (spans or {}).items():
        ranges[v] = where.get(id(loop), ranges.get(v, (0, 0)))
    changed = True
    while changed:
        changed = False
        for v, (lo, hi) in ranges.items():
            for s, e in loops:
                overlaps = lo <= e and hi >= s
                inside = lo >= s and hi <= e
                if overlaps and not inside:
                    nlo, nhi = min(lo, s), max(hi, e)
                    if (nlo, nhi) != (lo, hi):
                        lo, hi = nlo, nhi
                        ranges[v] = (lo, hi)
                        changed = True
    return ranges


def plan(body: list, target, grant: dict | None = None,
         spread: bool = False) -> tuple[dict, dict]:
    """Offsets for every tile declared in body, and the peak bytes per memory space.
    grant: N-buffered tile -> its buffers (each takes that many places for its loop).

    First fit over live ranges, tried with two orders (by start, then by start with larger
    tiles first); each space keeps the order that needs less. spread: the bytes used
    longest ago instead, in each space where that fits the target's buffer."""
    align = buffer_align(target)
    grant = grant or {}
    loops = _slot_loops(body) if grant else {}
    spans = {v: loops[v] for v, n in grant.items() if n > 1 and v in loops}
    ranges = live_ranges(body, spans)
    decls = [op.result for top in body for op in top.walk() if op.name == "tile"]
    pipes = _pipes(body) if spread else {}
    arms, fors = (_arms(body), _for_spans(body)) if spread else ({}, [])
    apart = second_ub_tiles(body)
    by_space: dict = {}
    for v in decls:
        lo, hi = ranges.get(v, (0, 0))
        size = slot_bytes(v.type, target) * (grant.get(v, 1) if v in spans else 1)
        by_space.setdefault((v.type.space, v in apart), []).append((lo, hi, size, v))
    offsets: dict = {}
    peak: dict = {}
    for (space, _), items in by_space.items():
        best = None
        for key in (lambda it: (it[0], it[1]), lambda it: (it[0], -it[2], it[1])):
            offs, top = _place(sorted(items, key=key), align)
            if best is None or top < best[1]:
                best = (offs, top)
        if spread:
            got = _spread(sorted(items, key=lambda it: (it[0], it[1])), align,
                          target.buffer(space), arms, fors, pipes)
            best = got or best
        offsets.update(best[0])
        peak[space] = max(peak.get(space, 0), best[1])
    return offsets, peak


def _arms(body: list) -> dict:
    """Tile -> {id of an enclosing `if`: the arm it is declared in}."""
    out: dict = {}

    def visit(ops, path):
        for op in ops:
            if op.name == "tile":
                out[op.result] = path
            for i, r in enumerate(op.regions):
                visit(r, {**path, id(op): i} if op.name == "if" else path)
    visit(body, {})
    return out


def _pipes(body: list) -> dict:
    """Tile -> the pipes of the instructions that touch it."""
    out: dict = {}
    for top in body:
        for op in top.walk():
            if "pipe" in op.attrs and op.name != "tile":
                for v in op.operands:
                    if isinstance(v.type, TileType):
                        out.setdefault(v, set()).add(op.attrs["pipe"])
    return out


def _spread(items: list, align: int, cap: int, arms: dict, loops: list, pipes: dict):
    """(offsets, top) placing each tile where its bytes were used longest ago, or None
    where the buffer cannot hold that (the module docstring). In a loop, bytes a tile
    left early in the body are also those it takes again early in the next iteration:
    the distance to a dead tile is the shorter of the two ways round. Two tiles only one
    and the same pipe touches are no hazard to each other (the pipe runs in order): such
    a tile takes such bytes as first fit would."""
    placed: list = []        # (offset, size, first use, last use, tile)
    offsets, top = {}, 0
    for lo, hi, size, v in items:
        mine, alone = arms.get(v, {}), pipes.get(v, set())
        live = [p for p in placed if p[3] >= lo]
        dead = [p for p in placed if p[3] < lo and
                not any(mine.get(k, a) != a for k, a in arms.get(p[4], {}).items()) and
                not (len(alone) == 1 and pipes.get(p[4], set()) == alone)]
        dist = [(p, _distance(p, lo, hi, loops)) for p in dead]
        best = None
        for off in sorted({0} | {-(-(p[0] + p[1]) // align) * align for p in placed}):
            if off + size > cap or any(off < p[0] + p[1] and p[0] < off + size for p in live):
                continue
            near = min((d for p, d in dist if off < p[0] + p[1] and p[0] < off + size),
                       default=1 << 62)
            if best is None or (-near, off) < best:
                best = (-near, off)
        if best is None:
            return None
        placed.append((best[1], size, lo, hi, v))
        offsets[v] = best[1]
        top = max(top, best[1] + size)
    return offsets, top


def _distance(p: tuple, lo: int, hi: int, loops: list) -> int:
    """Program positions between dead tile p's last use and a new tile's first, and
    (inside a loop around both) between the new tile's last use and p's next first."""
    d = lo - p[3]
    inner = [(s, e) for s, e in loops if s <= p[2] and hi <= e]
    if inner:
        s, e = min(inner, key=lambda se: se[1] - se[0])
        d = min(d, p[2] + (e - s) - hi)
    return d


def _for_spans(body: list) -> list:
    """(first, last) position of every `for` loop, numbered as live_ranges numbers."""
    return [(s, e) for op, s, e in _number(body)[1] if op.name == "for"]


def _number(body: list) -> tuple:
    """Program positions: (tile -> (first, last) position of its uses, [(op, first, last)]
    of every op with regions)."""
    pos = 0
    ranges: dict = {}
    regions: list = []

    def visit(ops):
        nonlocal pos
        for op in ops:
            if op.name == "tile":
                continue
            start = pos
            for v in op.operands:
                if isinstance(v.type, TileType):
                    lo, hi = ranges.get(v, (pos, pos))
                    ranges[v] = (min(lo, pos), max(hi, pos))
            pos += 1
            for region in op.regions:
                visit(region)
            if op.regions:
                regions.append((op, start, pos))
                pos += 1
    visit(body)
    return ranges, regions


def _place(items: list, align: int) -> tuple[dict, int]:
    live: list = []       # (offset, size, end)
    offsets, top = {}, 0
    for lo, hi, size, v in items:
        live = [x for x in live if x[2] >= lo]
        off = _first_fit(live, size, align)
        live.append((off, size, hi))
        offsets[v] = off
        top = max(top, off + size)
    return offsets, top


def _first_fit(live: list, size: int, align: int) -> int:
    cur = 0
    for off, sz, _ in sorted(live):
        if cur + size <= off:
            return cur
        cur = max(cur, -(-(off + sz) // align) * align)
    return cur
