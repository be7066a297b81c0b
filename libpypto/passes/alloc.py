"""alloc: give every tile a buffer offset in its memory space, reusing space after last use.

Live ranges come from program order; a tile used inside a loop but live across iterations
(an accumulator) stays live for the whole loop. Offsets are first-fit per space and aligned
to the target's buffer alignment; a block that needs more than a core's buffer is an error
that names the op and the space.
"""
from __future__ import annotations

from ..errors import CompileError
from ..ir.core import Document, copy_doc
from ..ir.types import TileType

SPACE_NAMES = {"ub": "UB", "l1": "L1", "l0a": "L0A", "l0b": "L0B", "l0c": "L0C"}


def alloc(doc: Document, *, target) -> Document:
    """Assign tile buffer offsets (first fit over live ranges); check per-core capacity."""
    doc = copy_doc(doc)
    for blk in doc.walk():
        if blk.name != "block":
            continue
        offsets, peak = plan(blk.regions[0], target)
        check_capacity(peak, target, blk)
        for top in blk.regions[0]:
            for op in top.walk():
                if op.name == "tile":
                    op.attrs["addr"] = offsets[op.result]
        blk.attrs["buffers"] = {s: peak[s] for s in sorted(peak)}
    return doc


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


def live_ranges(body: list) -> dict:
    """Tile -> (first, last) position of its uses, accumulators stretched over their loops."""
    pos = 0
    ranges: dict = {}
    loops: list = []

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
                loops.append((start, pos))
                pos += 1

    visit(body)
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


def plan(body: list, target) -> tuple[dict, dict]:
    """Offsets for every tile declared in body, and the peak bytes per memory space.

    First fit over live ranges, tried with two orders (by start, then by start with larger
    tiles first); each space keeps the order that needs less."""
    align = buffer_align(target)
    ranges = live_ranges(body)
    decls = [op.result for top in body for op in top.walk() if op.name == "tile"]
    by_space: dict = {}
    for v in decls:
        lo, hi = ranges.get(v, (0, 0))
        size = -(-v.type.padded_nbytes(target.align) // align) * align
        by_space.setdefault(v.type.space, []).append((lo, hi, size, v))
    offsets: dict = {}
    peak: dict = {}
    for space, items in by_space.items():
        best = None
        for key in (lambda it: (it[0], it[1]), lambda it: (it[0], -it[2], it[1])):
            offs, top = _place(sorted(items, key=key), align)
            if best is None or top < best[1]:
                best = (offs, top)
        offsets.update(best[0])
        peak[space] = best[1]
    return offsets, peak


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
