"""partition: cut the tile graph into block subgraphs, one program per core task.

Kernels over the same grid fuse when every tensor one writes and the other touches is
accessed at the same tile footprint (task g only needs what task g itself produced), the
merge makes no cycle, the core kinds agree (or the target runs mixed programs) and the fused
block fits the core's buffers. Inside a block, a tile stored and then loaded again is
forwarded on chip (a move when the memory space or dtype changes), duplicate loads are shared,
and stores to workspace tensors that nobody reads any more are dropped.
"""
from __future__ import annotations

from ..errors import UsageError
from ..ir.core import Document, Op, clone_ops, copy_doc
from ..ir.instr import dests, sources
from .alloc import plan
from .assign_memory import pipe_of


def partition(doc: Document, *, target, fuse: bool = True, max_kernels: int = 64) -> Document:
    """Fuse same-grid kernels into block subgraphs that fit a core's buffers.

    fuse: merge kernels at all (fuse=false gives one block per kernel).
    max-kernels: most kernels in one block (bounds the work per merge: linear compile time).
    """
    for op in doc.walk():
        if op.name == "tile" and op.result.type.space == "any":
            raise UsageError("partition needs every tile in a memory space: run assign-memory "
                             "before it")
    doc = copy_doc(doc)
    rest = [op for op in doc.body if op.name in ("source", "gm")]
    counter = [0]
    body = _partition_region([op for op in doc.body if op.name not in ("source", "gm")],
                             target, fuse, counter, max_kernels)
    blocks = [op for top in body for op in top.walk() if op.name == "block"]
    _drop_dead_stores(blocks, rest)
    doc.body = [op for op in rest if op.name != "gm" or op.attrs.get("_live", True)] + body
    for op in doc.body:
        op.attrs.pop("_live", None)
    return doc


def _partition_region(ops: list, target, fuse: bool, counter: list, max_kernels: int) -> list:
    """Fuse runs of kernels between region ops; regions are partitioned inside, never across."""
    out: list = []
    segment: list = []

    def flush():
        if not segment:
            return
        p = _Partitioner(list(segment), target, max_kernels)
        if fuse:
            p.fuse()
        for g in p.ordered_groups():
            out.append(p.make_block(counter[0], g))
            counter[0] += 1
        segment.clear()

    for op in ops:
        if op.name == "kernel":
            segment.append(op)
            continue
        flush()
        op.regions = [_partition_region(r, target, fuse, counter, max_kernels) for r in op.regions]
        out.append(op)
    flush()
    return out


def access_key(op: Op) -> tuple:
    """What a tload/tstore touches: its tensor and footprint (offsets, valid, tile shape)."""
    tile = op.operands[0]
    return (op.operands[1], tuple(op.attrs["offsets"]), tuple(op.attrs["valid"]),
            tile.type.shape)


class _Partitioner:
    def __init__(self, kernels: list, target, max_kernels: int = 64):
        self.kernels, self.target, self.max_kernels = kernels, target, max_kernels
        n = len(kernels)
        self.group = list(range(n))
        self.members = {i: [i] for i in range(n)}
        self.acc = [self._accesses(k) for k in kernels]
        self.succ = [set() for _ in range(n)]
        self.data_preds = [[] for _ in range(n)]
        self._edges()

    @staticmethod
    def _accesses(k: Op) -> list:
        """(gm tensor, r|w, footprint key, at top level) of every GM access of a kernel;
        GM-direct instructions count as whole-region accesses that never fuse."""
        out = []
        for top in k.regions[0]:
            for op in top.walk():
                if op.name in ("tload", "tstore"):
                    mode = "r" if op.name == "tload" else "w"
                    out.append((op.operands[1], mode, access_key(op), op in k.regions[0]))
                elif op.name == "tgather":
                    out.append((op.operands[1], "r", ("region", id(op)), False))
                elif op.name == "tscatter":
                    out.append((op.operands[0], "w", ("region", id(op)), False))
                    for v in op.operands[1:]:
                        out.append((v, "r", ("region", id(op)), False))
        return out

    def _edges(self) -> None:
        last_w: dict = {}
        readers: dict = {}
        for j, accs in enumerate(self.acc):
            for gm, mode, _, _ in accs:
                w = last_w.get(gm)
                if mode == "r":
                    if w is not None and w != j:
                        self.succ[w].add(j)
                        if w not in self.data_preds[j]:
                            self.data_preds[j].append(w)
                    readers.setdefault(gm, set()).add(j)
                else:
                    for r in readers.pop(gm, set()):
                        if r != j:
                            self.succ[r].add(j)
                    if w is not None and w != j:
                        self.succ[w].add(j)
                    last_w[gm] = j

    # -- merging --------------------------------------------------------------------------
    def fuse(self) -> None:
        for j in range(len(self.kernels)):
            for i in sorted(self.data_preds[j], reverse=True):
                a, b = self.group[i], self.group[j]
                if a != b and self.can_merge(a, b):
                    self.merge(a, b)

    def merge(self, a: int, b: int) -> None:
        keep, drop = min(a, b), max(a, b)
        for m in self.members[drop]:
            self.group[m] = keep
        self.members[keep] = sorted(self.members[keep] + self.members.pop(drop))

    def core_kind(self, members) -> str:
        """cube, vector, mixed, or move (copies only: at home on either kind of core)."""
        cube = vec = False
        for m in members:
            for top in self.kernels[m].regions[0]:
                for op in top.walk():
                    if op.name in ("tmatmul", "textract"):
                        cube = True
                    elif op.attrs.get("pipe") == "V":
                        vec = True
        return "mixed" if cube and vec else "cube" if cube else "vector" if vec else "move"

    def can_merge(self, a: int, b: int) -> bool:
        ka, kb = self.kernels[self.members[a][0]], self.kernels[self.members[b][0]]
        if ka.attrs["grid"] != kb.attrs["grid"]:
            return False
        both = self.members[a] + self.members[b]
        if len(both) > self.max_kernels:
            return False
        if not self.target.mixed_programs:
            kinds = {self.core_kind(self.members[a]), self.core_kind(self.members[b])} - {"move"}
            if len(kinds) > 1 or "mixed" in kinds:
                return False
        if not self._instance_local(self.members[a], self.members[b]):
            return False
        if self._path_outside(a, b) or self._path_outside(b, a):
            return False
        body = self.build_body(sorted(both))
        _, peak = plan(body, self.target)
        return all(used <= self.target.buffer(s) for s, used in peak.items())

    def _instance_local(self, ga: list, gb: list) -> bool:
        """Tensors written by one side and touched by the other: same footprint, top level."""
        def index(members):
            out: dict = {}
            for m in members:
                for gm, mode, key, top in self.acc[m]:
                    out.setdefault(gm, []).append((mode, key, top))
            return out
        ia, ib = index(ga), index(gb)
        for gm in set(ia) & set(ib):
            accs = ia[gm] + ib[gm]
            if not any(mode == "w" for mode, _, _ in accs):
                continue
            keys = {key for _, key, _ in accs}
            if len(keys) != 1 or not all(top for _, _, top in accs):
                return False
        return True

    def _group_succ(self, g: int) -> set:
        return {self.group[s] for m in self.members[g] for s in self.succ[m]} - {g}

    def _path_outside(self, a: int, b: int) -> bool:
        """Is there a path a -> x -> ... -> b through a group x outside a and b?

        Edges run forward in program order, so a group that starts after b's last kernel
        cannot lead back to b: the search stays between the two."""
        last = self.members[b][-1]
        seen, stack = set(), [x for x in self._group_succ(a) if x != b]
        while stack:
            x = stack.pop()
            if x in seen or self.members[x][0] > last:
                continue
            seen.add(x)
            for y in self._group_succ(x):
                if y == b:
                    return True
                if y != a:
                    stack.append(y)
        return False

    def ordered_groups(self) -> list:
        """Groups in dependency order; ties keep program order (smallest member first)."""
        import heapq
        groups = sorted(self.members)
        indeg = {g: 0 for g in groups}
        succ = {g: self._group_succ(g) for g in groups}
        for g in groups:
            for s in succ[g]:
                indeg[s] += 1
        ready = [g for g in groups if indeg[g] == 0]
        heapq.heapify(ready)
        out = []
        while ready:
            g = heapq.heappop(ready)
            out.append(self.members[g])
            for s in succ[g]:
                indeg[s] -= 1
                if indeg[s] == 0:
                    heapq.heappush(ready, s)
        return out

    # -- building a block -----------------------------------------------------------------
    def build_body(self, members: list) -> list:
        body: list = []
        for m in members:
            body.extend(clone_ops(self.kernels[m].regions[0], {}))
        return _forward(body)

    def make_block(self, idx: int, members: list) -> Op:
        ks = [self.kernels[m] for m in members]
        kind = self.core_kind(members)
        attrs = {"name": f"b{idx}", "grid": ks[0].attrs["grid"],
                 "core": "vector" if kind == "move" else kind,
                 "kernels": [k.attrs["name"] for k in ks],
                 "ops": [k.attrs["op"] for k in ks]}
        return Op("block", [], [], attrs, [self.build_body(members)], ks[0].loc)


def _forward(body: list) -> list:
    """On-chip forwarding of stored tiles, shared duplicate loads (top level only)."""
    stored: dict = {}        # gm -> {footprint key: tile last stored there}
    loaded: dict = {}        # gm -> {footprint key + tile type: tile loaded from there}
    alias: dict = {}
    out: list = []
    dead_tiles: set = set()
    only_stored = _only_stored(body)
    for op in body:
        op.operands = [alias.get(v, v) for v in op.operands]
        if op.name == "tstore":
            gm = op.operands[1]
            key = access_key(op)
            loaded.pop(gm, None)
            stored[gm] = {key: op.operands[0]}
        elif op.name in ("tscatter", "tgather"):
            for v in op.operands:
                loaded.pop(v, None)
                stored.pop(v, None)
        elif op.name == "tload":
            key = access_key(op)
            gm = op.operands[1]
            dst = op.operands[0]
            src = stored.get(gm, {}).get(key)
            if src is not None:
                if src.type == dst.type or (dst in only_stored and src.type.space in
                                            ("ub", "l0c")):
                    # same tile, or one that is only stored again (a store converts the
                    # dtype and stores from L0C directly, through FIX)
                    alias[dst] = src
                    dead_tiles.add(dst)
                    continue
                mov = Op("tmov", [dst, src], [], {}, [], op.loc)
                mov.attrs["pipe"] = pipe_of(mov)
                out.append(mov)
                continue
            lk = key + (dst.type,)
            if lk in loaded.get(gm, {}):
                alias[dst] = loaded[gm][lk]
                dead_tiles.add(dst)
                continue
            loaded.setdefault(gm, {})[lk] = dst
        out.append(op)
    if alias:
        for top in out:
            for op in top.walk():
                op.operands = [_resolve(alias, v) for v in op.operands]
                if "pipe" in op.attrs:        # a store may now leave from L0C (FIX)
                    op.attrs["pipe"] = pipe_of(op)
    return [op for op in out if not (op.name == "tile" and op.result in dead_tiles)]


def _only_stored(body: list) -> set:
    """Tiles whose every use (besides the load that fills them) is as a tstore's source."""
    uses: dict = {}
    for top in body:
        for op in top.walk():
            for i, v in enumerate(op.operands):
                if op.name == "tload" and i == 0:
                    continue
                uses.setdefault(v, []).append(op.name == "tstore" and i == 0)
    return {v for v, u in uses.items() if all(u)}


def _resolve(alias: dict, v):
    while v in alias:
        v = alias[v]
    return v


def _drop_dead_stores(blocks: list, rest: list) -> None:
    """Remove stores into workspaces that no block reads, and the workspaces themselves."""
    read = set()
    for b in blocks:
        for op in b.walk():
            if op.name in ("tload", "tgather"):
                read.add(op.operands[1])
            elif op.name == "tscatter":
                read.update(op.operands)
    for op in rest:
        if op.name == "gm" and op.attrs.get("workspace") and op.result not in read:
            op.attrs["_live"] = False
    dead = {op.result for op in rest if op.name == "gm" and op.attrs.get("_live") is False}
    for b in blocks:
        b.regions[0] = _without_stores(b.regions[0], dead)
        _drop_unused_tiles(b.regions[0])


def _without_stores(ops: list, dead: set) -> list:
    out = []
    for op in ops:
        if op.name == "tstore" and op.operands[1] in dead:
            continue
        op.regions = [_without_stores(r, dead) for r in op.regions]
        out.append(op)
    return out


def _drop_unused_tiles(body: list) -> None:
    """Delete tiles (and the instructions computing them) that nothing reads any more."""
    while True:
        reads: set = set()
        for top in body:
            for op in top.walk():
                if op.name not in ("tile", "for", "if"):
                    reads.update(sources(op))
        n = sum(1 for top in body for _ in top.walk())

        def dead(op):         # an instruction none of whose results is read
            outs = dests(op) if op.name not in ("tile", "for", "if") else None
            return bool(outs) and not any(v in reads for v in outs)

        body[:] = _keep(body, lambda op: not dead(op))
        used = {v for top in body for op in top.walk() for v in op.operands}
        body[:] = _keep(body, lambda op: op.name != "tile" or op.result in used)
        if sum(1 for top in body for _ in top.walk()) == n:
            return


def _keep(ops: list, pred) -> list:
    """ops (and their regions, recursively) without the ops pred rejects."""
    out = []
    for op in ops:
        if pred(op):
            op.regions = [_keep(r, pred) for r in op.regions]
            out.append(op)
    return out
