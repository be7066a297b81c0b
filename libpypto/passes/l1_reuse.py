"""l1-reuse: cube blocks of one grid that load the same GM box into L1 merge around one load.

cse shares duplicate loads inside a block; this pass finds them across blocks. Two cube
blocks whose instance g both load one box of one GM tensor into an L1 tile of one type (the
same canonical footprint, footprint.py), at the top level of both bodies or inside loop
nests with the same headers, become one block: instance g loads the box once and both
matmuls read the one L1 copy (the gate and up projections of a SwiGLU FFN both load x; the
q, k and v projections of attention all load the hidden states). The reference's
L1CopyInReuseMerge (`cube_l1_reuse_setting`).

- Blocks are visited in program order, between region ops (loop, if: blocks in a region
  merge inside it, never across); each joins the earliest group it shares an L1 load with,
  same grid, fewer than `factor` members.
- The later block moves up to the group: no block in between may write a GM tensor it
  touches or read one it writes, and the two may share no tensor that either writes (their
  instances are then independent, in any interleaving).
- The merged body is the group's then the block's, with the loops that hold the shared load
  fused (same start, stop, step and variable): the work before each loop goes before the
  fused loop, the work after it after; in the innermost fused region the duplicate load is
  dropped and its readers take the group's tile.
- It must fit: alloc's plan of the merged body (as forward and cse will leave it) within
  every buffer of the core; otherwise the block stays apart.

Fewer instances then do the same work with fewer L1 loads (MTE2 bytes) and fewer task
dispatches, at the cost of parallelism when the grid is small.
"""
from __future__ import annotations

from ..errors import UsageError
from ..ir import expr as E
from ..ir.core import Document, Op, clone_ops, copy_doc
from ..ir.types import TensorType
from .alloc import plan
from .cse import share_loads
from .footprint import access_key, grid_key
from .forward import forward_body


def l1_reuse(doc: Document, *, target, enable: bool = True, factor: int = 0) -> Document:
    """Merge cube blocks of one grid that load the same GM box into L1 around one copy-in.

    enable: merge at all (enable=false keeps every block).
    factor: most blocks merged around one shared L1 copy-in, the reference's
    cube_l1_reuse_setting: 1 keeps every block, N merges up to N, 0 (automatic) up to 4
    and only where the merged grid still has at least one instance per cube core (its
    fewest instances, every size at least 1), so that no core idles for the reuse.
    """
    if isinstance(factor, bool) or not isinstance(factor, int) or factor < 0:
        raise UsageError(f"l1-reuse factor={factor!r}: expected 0 (automatic) or a positive "
                         f"number of blocks")
    doc = copy_doc(doc)
    if not enable or factor == 1:
        return doc
    rest = [op for op in doc.body if op.name in ("source", "gm")]
    body = _region([op for op in doc.body if op.name not in ("source", "gm")], target, factor)
    doc.body = rest + body
    return doc


AUTO_FACTOR = 4          # factor=0: at most this many blocks around one load
HOST_CORES = 8           # a target whose core count is automatic counts as this many (as
#                          frontend/splitk.py: a lowered document does not depend on the machine)


def cube_cores(target) -> int:
    counts = target.data.get("cores", {})
    n = counts.get("cube", 0) or counts.get("mixed", 0)
    return int(n) if n else HOST_CORES


def fewest_instances(grid: list) -> int:
    """The fewest instances grid can have when every size symbol is at least 1."""
    n = 1
    for d in grid:
        lo, _ = E.bounds(d, {s: (1, None) for s in E.free_symbols(d)}) if \
            isinstance(d, E.Expr) else (d, d)
        n *= max(0, lo or 0)
    return n


def _region(ops: list, target, factor: int) -> list:
    """ops with the blocks of each run between region ops merged; regions done inside."""
    out: list = []
    run: list = []
    for op in ops:
        if op.name == "block":
            run.append(op)
            continue
        out += _merge_run(run, target, factor)
        run = []
        op.regions = [_region(r, target, factor) for r in op.regions]
        out.append(op)
    return out + _merge_run(run, target, factor)


class _Group:
    """A block and the blocks merged into it: its GM accesses and its L1 loads."""

    def __init__(self, blk: Op):
        self.blk, self.size = blk, 1
        self.reads, self.writes = _gm_accesses(blk.regions[0])

    def absorb(self, other: "_Group", body: list) -> None:
        a, b = self.blk.attrs, other.blk.attrs
        for key in ("kernels", "ops"):
            a[key] = a[key] + b[key]
        labels = list(dict.fromkeys(a.get("labels", []) + b.get("labels", [])))
        if labels:
            a["labels"] = labels
        self.blk.regions[0] = body
        self.size += other.size
        self.reads |= other.reads
        self.writes |= other.writes


def _merge_run(blocks: list, target, factor: int) -> list:
    groups: list = []
    for blk in blocks:
        g = _Group(blk)
        for i, h in enumerate(groups):
            body = _mergeable(h, g, groups[i + 1:], target, factor)
            if body is not None:
                h.absorb(g, body)
                break
        else:
            groups.append(g)
    return [g.blk for g in groups]


def _mergeable(h: _Group, g: _Group, between: list, target, factor: int):
    """The merged body of h then g if g may join h (module docstring), else None."""
    a, b = h.blk, g.blk
    limit = factor or AUTO_FACTOR
    if a.attrs["core"] != "cube" or b.attrs["core"] != "cube" or \
            a.attrs["grid"] != b.attrs["grid"] or h.size + g.size > limit:
        return None
    if not factor and fewest_instances(a.attrs["grid"]) < cube_cores(target):
        return None
    if (h.writes & (g.reads | g.writes)) or (g.writes & h.reads):
        return None
    if any((x.writes & (g.reads | g.writes)) or (x.reads & g.writes) for x in between):
        return None
    grid = grid_key(a.attrs["grid"])
    shared = _shared_path(a.regions[0], b.regions[0], grid)
    if shared is None:
        return None
    body = merge_bodies(clone_ops(a.regions[0], {}), clone_ops(b.regions[0], {}), shared,
                        a.attrs["grid"])
    return body if _fits(body, a.attrs["grid"], target) else None


# -- what the bodies load ------------------------------------------------------------------------

def _gm_accesses(body: list) -> tuple[set, set]:
    """The GM tensors a body reads and writes."""
    reads, writes = set(), set()
    for top in body:
        for op in top.walk():
            for i, v in enumerate(op.operands):
                if not isinstance(v.type, TensorType):
                    continue
                if op.name in ("tload", "tgather"):
                    reads.add(v)
                elif op.name == "tstore":
                    writes.add(v)
                else:
                    reads.add(v)
                    writes.add(v)
    return reads, writes


def _header(op) -> tuple:
    a = op.attrs
    return (a["var"], a["start"], a["stop"], a["step"])


def l1_loads(body: list, grid: tuple, path: tuple = ()) -> dict:
    """(loop headers down to the load, footprint key + tile type) -> True for every tload
    into L1 of body: at its top level (no headers) or inside loop nests (not branches)."""
    out: dict = {}
    for op in body:
        if op.name == "tload" and op.operands[0].type.space == "l1":
            out[(path, access_key(op, grid) + (op.operands[0].type,))] = True
        elif op.name == "for":
            out.update(l1_loads(op.regions[0], grid, path + (_header(op),)))
    return out


def _shared_path(a: list, b: list, grid: tuple):
    """The loop headers down to the first L1 load a and b share (() at the top level), or
    None when they share none. The loads' footprints use the bodies' own loop variables,
    so a shared key also means the same variables."""
    la = l1_loads(a, grid)
    for key in l1_loads(b, grid):
        if key in la:
            return key[0]
    return None


# -- merging -------------------------------------------------------------------------------------

def merge_bodies(a: list, b: list, path: tuple, grid) -> list:
    """a then b, the loops on path (headers, outermost first) fused, the duplicate loads of
    the innermost fused region shared (cse's rule)."""
    if not path:
        return share_loads(a + b, grid)
    ia = _loop_at(a, path[0])
    ib = _loop_at(b, path[0])
    la, lb = a[ia], b[ib]
    la.regions[0] = merge_bodies(la.regions[0], lb.regions[0], path[1:], grid)
    return a[:ia] + b[:ib] + [la] + a[ia + 1:] + b[ib + 1:]


def _loop_at(body: list, header: tuple) -> int:
    """The first top-level loop of body with this header (one exists: its load was found
    there)."""
    return next(i for i, op in enumerate(body) if op.name == "for" and _header(op) == header)


def _fits(body: list, grid, target) -> bool:
    """Does the merged body fit the core's buffers, once forward and cse have run on it?"""
    g = grid_key(grid)
    final = share_loads(forward_body(clone_ops(body, {}), g), g)
    _, peak = plan(final, target)
    return all(used <= target.buffer(s) for s, used in peak.items())
