"""nbuffer: N buffers for copy-ins, so that the next load overlaps this step's work.

Two parts, one number N per block kind (vec for vector blocks, cube for cube blocks and
for host blocks that hold a matmul; the reference's vec_nbuffer_setting and
cube_nbuffer_setting):

- Merge (the reference's NBufferMerge, a breadth merge of isomorphic instances): f
  consecutive grid instances of a block along one grid dim (the innermost whose extent is
  not 1, or `dim`) become one task that runs the body for instances g*f + n, n < f, in a
  loop over n whose trip count stops at the tail: `for nb1 = 0 .. min(N, f, G - g1*f)` with
  g1 replaced by g1*f + nb1 in the body, and the grid dim divided by f (rounded up). f is
  N, or 1 where merging would leave fewer tasks than the target has cores of the block's
  kind or cost more than an eighth more waves of instances (merge_factor): a number for a
  static grid (1: the block stays as it is), an expression of the sizes for a symbolic one,
  so one program serves small sizes unmerged and large ones merged. The loads every
  instance makes alike (a weight row) move before the loop. forward and cse see the loop's
  body as the body of one instance (merge_loop).
- Buffers: a copy-in tile declared in a loop body (a tload into UB or L1, a tgather into
  UB, a textract into L0A or L0B, and no other writer) gets `slots=N`: alloc gives it N
  places and the address of the iteration's, base + (i mod N) * size, so MTE2 (MTE1) fills
  the next iteration's buffer while V (M) works on this one; where N places do not fit,
  alloc gives fewer and records it. The loops are the block's own (K steps, reduction
  steps) and the merge loop, whose copy-ins are the merged instances' loads.

The block records the merge (`merge=[dim, N]`); the buffers show on the tiles (`slots`)
and, after alloc, on the block (`nbuffer`). On the host (no pipes: a task's instructions run
in order, so there is nothing to overlap) both default to off ([nbuffer] in host.toml).
"""
from __future__ import annotations

from ..errors import CompileError, UsageError
from ..ir import expr as E
from ..ir.core import Document, Op, copy_doc
from ..ir.defs import dests
from ..ir.tile_ops import MAX_SLOTS

COPY_IN = {"tload": ("ub", "l1"), "tgather": ("ub",), "textract": ("l0a", "l0b")}
MERGE = ("auto", "always", "never", "persistent")
HOST_CORES = 8            # a host target counts this many cores (documents stay machine-free)


def nbuffer(doc: Document, *, target, vec: int = 0, cube: int = 0, enable: bool = True,
            dim: int = -1, merge: str = "auto") -> Document:
    """N-buffer copy-ins in loops and merge N consecutive grid instances per task.

    vec: buffers (and instances per task) for vector blocks; 0: the target's [nbuffer] vec;
    1: off. cube: the same for cube blocks (and host blocks with a matmul). enable: false
    leaves every block as it is. dim: the grid dim to merge along (-1: the innermost whose
    extent is not 1). merge: auto (N instances a task unless that leaves cores idle or
    costs waves: decided on the sizes, at run time for a symbolic grid), always (N),
    persistent (one wave of tasks: ceil(tasks / cores) instances each, the loads of each
    overlapping the work of the one before), or never (one instance per task; the loops'
    copy-ins are still N-buffered).
    """
    for name, n in (("vec", vec), ("cube", cube)):
        if not 0 <= n <= MAX_SLOTS:
            raise UsageError(f"nbuffer: {name} must be from 0 to {MAX_SLOTS}, not {n}")
    if merge not in MERGE:
        raise UsageError(f"nbuffer: merge must be one of {', '.join(MERGE)}, not {merge!r}")
    doc = copy_doc(doc)
    if not enable:
        return doc
    for blk in [op for op in doc.walk() if op.name == "block"]:
        kind = _kind(blk)
        n = (cube if kind == "cube" else vec) or target.nbuffer(kind)
        if n <= 1:
            continue
        if merge != "never":
            _merge(blk, n, dim, target, merge)
        _mark_slots(blk.regions[0], n)
    return doc


def _kind(blk) -> str:
    if blk.attrs["core"] == "cube":
        return "cube"
    if blk.attrs["core"] == "mixed" and any(op.name == "tmatmul" for op in blk.walk()):
        return "cube"
    return "vector"


def merge_loop(blk):
    """The op whose first region is the body of one instance: the merge loop of a merged
    block, else the block."""
    body = blk.regions[0]
    if blk.attrs.get("merge") and body and body[-1].name == "for":
        return body[-1]                 # after the loads the instances share (hoisted)
    return blk


def _merge(blk, n: int, dim: int, target, mode: str) -> None:
    grid = list(blk.attrs["grid"])
    d = _merge_dim(grid, dim, blk)
    if d is None or (isinstance(grid[d], int) and grid[d] < 2):
        return
    cores = _cores(target, blk.attrs["core"])
    if mode == "always":
        f = n
    elif mode == "persistent":
        f = persistent_factor(grid, cores)
    else:
        f = merge_factor(grid, d, n, cores)
    if f == 1:
        return
    var = _fresh(blk, f"nb{d}")
    g = E.sym(f"g{d}")
    inst = {f"g{d}": E.add(E.mul(g, f), E.sym(var))}
    body = blk.regions[0]
    for top in body:
        for op in top.walk():
            op.attrs = E.substitute_attrs(op.attrs, inst)
    left = E.sub(grid[d], E.mul(g, f))
    # at most n (a bound the sync model sees) when f is an expression that is at most n
    stop = E.minimum(n, f, left) if mode == "auto" and not isinstance(f, int) else \
        E.minimum(f, left)
    loop = Op("for", [], [], {"var": var, "start": 0, "stop": stop, "step": 1}, [body],
              blk.loc)
    blk.regions[0] = _hoist_invariant(body, var) + [loop]
    grid[d] = E.cdiv(grid[d], f)
    blk.attrs["grid"] = grid
    blk.attrs["merge"] = [d, n]


def persistent_factor(grid: list, cores: int):
    """Instances per task for one wave of tasks: ceil(T / cores), T the grid's tasks."""
    tasks = 1
    for g in grid:
        tasks = E.mul(tasks, g)
    return E.maximum(1, E.cdiv(tasks, cores))


def _hoist_invariant(body: list, var: str) -> list:
    """Take out of the merged body (edited in place) the loads every instance makes alike
    (a weight row: offsets and extents free of the instance, from a tensor the block never
    writes, into a tile nothing else writes), with their tiles: the ops to put before the
    loop, so the merged instances share one copy."""
    written = {op.operands[i] for top in body for op in top.walk()
               for i in {"tstore": (1,), "tscatter": (0,)}.get(op.name, ())}
    writers: dict = {}
    for top in body:
        for op in top.walk():
            if op.name not in ("tile", "for", "if"):
                for v in dests(op):
                    writers[v] = writers.get(v, 0) + 1
    decl = {op.result: op for op in body if op.name == "tile"}
    out = []
    for op in list(body):
        if op.name != "tload" or op.operands[1] in written or op.operands[0] not in decl or \
                writers.get(op.operands[0]) != 1:
            continue
        if any(var in E.free_symbols(x) for x in op.attrs["offsets"] + op.attrs["valid"]
               if isinstance(x, E.Expr)):
            continue
        tile = decl[op.operands[0]]
        body.remove(tile)
        body.remove(op)
        out += [tile, op]
    return out


def merge_factor(grid: list, d: int, n: int, cores: int):
    """Instances per task: n, unless merging n along dim d leaves fewer tasks than cores or
    costs more than an eighth more waves of instances over the cores
    (8 n ceil(ceil(T / n) / cores) > 9 ceil(T / cores), T the grid's task count: 72 GEMM
    tiles on 24 cores would take 4 waves' time merged by 2 against 3), then 1. A merged
    task overlaps its instances' loads with their work and is dispatched once, which pays
    for a few percent more waves (softmax over 4096 rows on a2: 12 against 11, 20 % less
    time simulated) but not for a third. An expression where the grid is symbolic: the
    choice is made at run time, on the sizes."""
    tasks = merged = 1
    for i, g in enumerate(grid):
        tasks = E.mul(tasks, g)
        merged = E.mul(merged, E.cdiv(g, n) if i == d else g)
    waves = E.le(E.mul(8 * n, E.cdiv(merged, cores)), E.mul(9, E.cdiv(tasks, cores)))
    fits = E.logical_and(E.le(cores, merged), waves)
    return E.select(fits, n, 1)


def _merge_dim(grid: list, dim: int, blk):
    if dim >= 0:
        if dim >= len(grid):
            raise CompileError(f"nbuffer: dim {dim} is past the grid of block "
                               f"{blk.attrs['name']} (rank {len(grid)})", blk.loc)
        return dim
    for d in range(len(grid) - 1, -1, -1):
        if grid[d] != 1:
            return d
    return None


def _cores(target, core: str) -> int:
    cores = target.data.get("cores", {})
    kinds = {"cube": ("cube", "mixed"), "vector": ("vector", "mixed"), "mixed": ("mixed",)}
    total = sum(int(cores.get(k, 0)) or HOST_CORES for k in kinds[core] if k in cores)
    return total or HOST_CORES


def _fresh(blk, name: str) -> str:
    used = set()
    for op in blk.walk():
        if op.name == "for":
            used.add(op.attrs["var"])
        for v in op.attrs.values():
            if isinstance(v, E.Expr):
                used |= E.free_symbols(v)
    while name in used:
        name += "_"
    return name


def _mark_slots(body: list, n: int) -> None:
    """slots=n on the copy-in tiles declared directly in a loop body (see the module
    docstring)."""
    writers: dict = {}
    for top in body:
        for op in top.walk():
            if op.name not in ("tile", "for", "if"):
                for v in dests(op):
                    writers.setdefault(v, []).append(op)

    def visit(ops, in_loop: bool):
        for op in ops:
            if op.name == "tile" and in_loop and _copy_in(writers.get(op.result, [])):
                op.attrs["slots"] = n
            for r in op.regions:
                visit(r, op.name == "for" and _plain_loop(op))
    visit(body, False)


def _copy_in(ws: list) -> bool:
    return bool(ws) and all(w.name in COPY_IN and w.operands[0].type.space in COPY_IN[w.name]
                            for w in ws)


def _plain_loop(op) -> bool:
    """A loop whose iterations alloc can number (int start and step)."""
    return isinstance(op.attrs["start"], int) and isinstance(op.attrs["step"], int) and \
        op.attrs["step"] > 0
