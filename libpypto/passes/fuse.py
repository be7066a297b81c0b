"""fuse: group the kernels of the tile graph into blocks, one program per core task.

Kernels are visited in program order and each tries to join the group of every kernel it
reads data from, latest first, then of every kernel that wrote a tensor it writes (two
assignments into parts of one output, like rope's two halves). Two groups merge when all of
these hold:

- the same grid (instance g of the block runs instance g of every member);
- at most max-kernels kernels together (bounds the work of one merge);
- core kinds the target can run in one program: cube and vector work only together on a
  target with mixed programs; copy-only kernels go with either;
- every tensor one side writes and the other touches is touched at the top level of the
  kernels, and each pair of its accesses across the sides is at one footprint (instance g
  needs only what instance g produced) or at boxes that cannot overlap (constant, disjoint
  ranges of one dim: out[:, 0:64] and out[:, 64:128]);
- no path from one group to the other through a group outside both (the merged block would
  both precede and follow that group);
- the op file's scopes allow it (sg_set_scope: a kernel's `scope`): kernels of different
  scope ids stay apart, and scoped ones join unscoped ones only if their scope says so;
- the fused block fits the core's buffers, measured on the body as forward and cse will
  leave it (a stored tile loaded again stays on chip, duplicate loads share one tile).

On a target with separate cube and vector cores, a vector kernel then moves into the later
vector group that reads what it writes when that keeps more bytes on chip than it loses
(`sink`, _Fuser.sink: flash attention's `acc * alpha` goes next to the add after the PV
matmul, so a step's softmax no longer reads the running output: mix-fuse's pipelining
needs that).

Groups become blocks in dependency order; region ops (loop, if) are fused inside, never
across. The blocks' bodies are the members' bodies one after the other: forward, cse and dce
then keep intermediates on chip and drop what nobody reads.

Footprints are compared in the canonical form of footprint.py, the same that forward and
cse use, so what fuse counts as instance-local is what forward keeps on chip.

The cycle check does not use networkx. The group graph changes with every merge (networkx
would contract nodes, moving edge dicts, on each), and the question is narrower than
reachability: edges run forward in program order, so the search from one group may stop at
any group that starts after the other group's last kernel. nx.has_path has no such bound:
when the answer is no, which is the common case (the merge goes ahead), it explores what
is reachable from the source or what reaches the target, up to the whole rest or start of
the program per query: quadratic in the worst case. Bounding it takes a
subgraph_view with a node filter, i.e. the same search as here behind networkx's views. On
bench/compile_scaling.py the two cost the same (the buffer-fit check dominates), so the
reason is the worst case and one less moving part.
"""
from __future__ import annotations

import heapq

from ..errors import CompileError, UsageError
from ..ir.core import Document, Op, clone_ops, copy_doc
from .alloc import plan
from .cse import share_loads
from .footprint import access_key, grid_key
from .forward import forward_body


def fuse(doc: Document, *, target, enable: bool = True, max_kernels: int = 64,
         sink: bool = True) -> Document:
    """Fuse same-grid kernels into blocks that fit a core's buffers.

    enable: merge kernels at all (enable=false gives one block per kernel).
    max-kernels: most kernels in one block (bounds the work per merge: linear compile time).
    sink: on a target with separate cube and vector cores, move a vector kernel into the
      later group that reads what it writes (_Fuser.sink).
    """
    for op in doc.walk():
        if op.name == "tile" and op.result.type.space == "any":
            raise UsageError("fuse needs every tile in a memory space: run assign-memory "
                             "before it")
    doc = copy_doc(doc)
    rest = [op for op in doc.body if op.name in ("source", "gm")]
    counter = [0]
    body = _fuse_region([op for op in doc.body if op.name not in ("source", "gm")],
                        target, enable, counter, max_kernels, sink)
    doc.body = rest + body
    return doc


def _fuse_region(ops: list, target, enable: bool, counter: list, max_kernels: int,
                 sink: bool = True) -> list:
    """Fuse runs of kernels between region ops; regions are fused inside, never across."""
    out: list = []
    segment: list = []

    def flush():
        if not segment:
            return
        f = _Fuser(list(segment), target, max_kernels)
        if enable:
            f.fuse()
            if sink and not target.mixed_programs:
                f.sink()
        for g in f.ordered_groups():
            out.append(f.make_block(counter[0], g))
            counter[0] += 1
        segment.clear()

    for op in ops:
        if op.name == "kernel":
            segment.append(op)
            continue
        flush()
        op.regions = [_fuse_region(r, target, enable, counter, max_kernels, sink)
                      for r in op.regions]
        out.append(op)
    flush()
    return out


class _Fuser:
    def __init__(self, kernels: list, target, max_kernels: int = 64):
        self.kernels, self.target, self.max_kernels = kernels, target, max_kernels
        n = len(kernels)
        self.group = list(range(n))
        self.members = {i: [i] for i in range(n)}
        self.acc = [self._accesses(k) for k in kernels]
        self.succ = [set() for _ in range(n)]
        self.data_preds = [[] for _ in range(n)]
        self.co_writers = [[] for _ in range(n)]      # earlier writers of what it writes
        self._edges()

    @staticmethod
    def _accesses(k: Op) -> list:
        """(gm tensor, r|w, footprint key, at top level) of every GM access of a kernel;
        GM-direct instructions count as whole-region accesses that never fuse."""
        out, grid = [], grid_key(k.attrs["grid"])
        for top in k.regions[0]:
            for op in top.walk():
                if op.name in ("tload", "tstore"):
                    mode = "r" if op.name == "tload" else "w"
                    out.append((op.operands[1], mode, access_key(op, grid), op in k.regions[0]))
                elif op.name == "tgather":
                    out.append((op.operands[1], "r", ("region", id(op)), False))
                elif op.name == "tscatter":
                    out.append((op.operands[0], "w", ("region", id(op)), False))
                    for v in op.operands[1:]:
                        out.append((v, "r", ("region", id(op)), False))
        return out

    def _edges(self) -> None:
        """Program-order dependences between kernels: read after write, write after read
        or write; data_preds are the kernels each one reads from."""
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
                        if w not in self.co_writers[j]:
                            self.co_writers[j].append(w)
                    last_w[gm] = j

    # -- merging --------------------------------------------------------------------------
    def fuse(self) -> None:
        for j in range(len(self.kernels)):
            for i in sorted(self.data_preds[j], reverse=True) + self.co_writers[j]:
                a, b = self.group[i], self.group[j]
                if a != b and self.can_merge(a, b):
                    self.merge(a, b)

    def sink(self) -> None:
        """Move a vector kernel into the later vector group that reads all it writes (a
        target with separate cube and vector cores). Kernels join the group they read from;
        flash attention's `acc * alpha` so joins the softmax, whose group then reads the
        running output acc that a group after the PV matmul writes: the step's softmax waits
        for the previous step's output, and the product makes a GM round trip to the add.
        Moved next to the add, it reads acc and alpha from GM instead. A kernel moves when
        it writes only workspaces, every kernel that must follow it is in that one group,
        what it writes outweighs what it reads from its own group, and the group still fits."""
        readers: dict = {}
        for j, preds in enumerate(self.data_preds):
            for i in preds:
                readers.setdefault(i, set()).add(j)
        for k in reversed(range(len(self.kernels))):
            a = self.group[k]
            if len(self.members[a]) == 1 or self.core_kind([k]) != "vector" or \
                    not self.succ[k] or not readers.get(k):
                continue
            outs = {gm for gm, mode, _, _ in self.acc[k] if mode == "w"}
            if not outs or not all(v.owner is not None and v.owner.attrs.get("workspace")
                                   for v in outs):
                continue
            targets = {self.group[s] for s in self.succ[k]}
            b = min(targets)
            if targets != {b} or b == a or self.core_kind(self.members[b]) != "vector" or \
                    self.kernels[self.members[b][0]].attrs["grid"] != \
                    self.kernels[k].attrs["grid"]:
                continue
            if self._moved_bytes(k, a) <= 0 or not self._fits(sorted(self.members[b] + [k])):
                continue
            self.members[a].remove(k)
            self.members[b] = sorted(self.members[b] + [k])
            self.group[k] = b

    def _moved_bytes(self, k: int, a: int) -> int:
        """Bytes kernel k stores, less those it loads from what its group a writes."""
        mine = {gm for m in self.members[a] if m != k for gm, mode, _, _ in self.acc[m]
                if mode == "w"}
        out = 0
        for top in self.kernels[k].regions[0]:
            for op in top.walk():
                if op.name == "tstore":
                    out += op.operands[0].type.nbytes
                elif op.name == "tload" and op.operands[1] in mine:
                    out -= op.operands[0].type.nbytes
        return out

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
        if not self._scopes_fit(both):
            return False
        if not self._instance_local(self.members[a], self.members[b]):
            return False
        if self._path_outside(a, b) or self._path_outside(b, a):
            return False
        return self._fits(sorted(both))

    def _scopes_fit(self, members: list) -> bool:
        """The op file's sg_set_scope (a kernel's `scope` [id, cross]): kernels of two scope
        ids never share a block, and a scoped kernel shares one with unscoped kernels only
        when its scope allows cross-scope merging."""
        scopes = [self.kernels[m].attrs.get("scope") for m in members]
        ids = {s[0] for s in scopes if s is not None}
        if not ids:
            return True
        if len(ids) > 1:
            return False
        return None not in scopes or all(s[1] for s in scopes if s is not None)

    def _fits(self, members: list) -> bool:
        """Does the fused block fit the buffers, once forward and cse have run on it?"""
        grid = self.kernels[members[0]].attrs["grid"]
        body = share_loads(forward_body(self.body(members), grid), grid)
        _, peak = plan(body, self.target)
        return all(used <= self.target.buffer(s) for s, used in peak.items())

    def _instance_local(self, ga: list, gb: list) -> bool:
        """Tensors written by one side and touched by the other: top level, and each pair of
        accesses across the sides at one footprint or at boxes that cannot overlap."""
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
            if not all(top for _, _, top in accs):
                return False
            if any(ka != kb and not _disjoint(ka, kb) for _, ka, _ in ia[gm] for _, kb, _ in ib[gm]):
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
        if len(out) != len(groups):     # a cycle: never drop the kernels on it
            raise CompileError("the kernels depend on each other in a cycle")
        return out

    # -- building a block -----------------------------------------------------------------
    def body(self, members: list) -> list:
        """The members' bodies one after the other (fresh copies)."""
        out: list = []
        for m in members:
            out.extend(clone_ops(self.kernels[m].regions[0], {}))
        return out

    def make_block(self, idx: int, members: list) -> Op:
        ks = [self.kernels[m] for m in members]
        kind = self.core_kind(members)
        attrs = {"name": f"b{idx}", "grid": ks[0].attrs["grid"],
                 "core": "vector" if kind == "move" else kind,
                 "kernels": [k.attrs["name"] for k in ks],
                 "ops": [k.attrs["op"] for k in ks]}
        labels = list(dict.fromkeys(k.attrs["label"] for k in ks if "label" in k.attrs))
        if labels:
            attrs["labels"] = labels
        return Op("block", [], [], attrs, [self.body(members)], ks[0].loc)


def _disjoint(ka: tuple, kb: tuple) -> bool:
    """Can two accesses' boxes never overlap (footprint keys: tensor, offsets, valid extents,
    tile shape)? Yes when on some dim both have a constant offset and extent and the ranges
    are apart, whatever the instance."""
    for oa, ob, va, vb in zip(ka[1], kb[1], ka[2], kb[2]):
        if all(type(x) is int for x in (oa, ob, va, vb)) and (oa + va <= ob or ob + vb <= oa):
            return True
    return False
