"""GM workspaces sharing one arena: which may share bytes, where each lives, and the checks a
run makes before it uses the shared layout.

The tasks of an exec document pass intermediates through GM tensors (`gm` ops without a
param: workspaces and local tensors). gm-reuse (passes/gm_reuse.py) gives each a byte
offset in one arena (`gm {arena=OFFSET}`, the size in the module's `arena_bytes`), two
tensors sharing bytes only when this module proves that their uses never overlap in time.
The runtime (runtime/executable.py) orders task instances by the boxes they touch of each
tensor (analysis/expand.py), not by bytes: two tensors in the same bytes are not ordered
by it, so the proof has to come from the boxes of the tasks.

Live ranges. Tasks have positions in program order (loops and branch arms in line); a
tensor lives from its first to its last touching task, and over a whole loop when it
crosses one's boundary. A tensor whose first touch is not a write (that reads nothing of it)
by a task whose region holds every other touch (so it runs first whenever any of them runs)
may be read before it is written: it lives for the whole program and shares nothing.

Ordering. Tensors U and W with disjoint live ranges may share bytes only if every instance
of every task touching U and every instance of every task touching W run one after the
other in either dynamic order (parallel tasks are not ordered). Two tasks are *always
ordered* when they touch a tensor T, one of them writing it, at boxes that meet in every
pair of their instances, in any launches: both boxes start at T's origin and both tasks
have one instance, or one task's box covers all of T. Two touching tasks A (before) and B
are ordered when they are always ordered, or through a task C always ordered with both that
runs between them: for A and B in one iteration, C in their common region between them; for
instances in different iterations of an enclosing loop, C unconditional in that loop's body
(in the innermost such loop not between A and B, which a second iteration would need).

What the proof cannot see symbolically (that a box is not empty, that a box covers its
tensor, that a task has an instance) becomes an obligation on the boxes of the tasks it
names, checked for the sizes of a run on every launch of those tasks (`layout`). When one
fails, or when two tensors whose bytes meet have no proof (a file written by hand), the run
gives every tensor bytes of its own: sharing never races, at worst it is not used.
"""
from __future__ import annotations

import weakref

import numpy as np

from ..ir import expr as E

ALIGN = 64            # bytes: every tensor of the arena starts on a cache line


class _Site:
    """One task op of the document: its walk index, program position and enclosing regions
    (("loop", op) or ("arm", if op, arm index), outermost first)."""

    __slots__ = ("task", "index", "pos", "path", "key", "boxes", "single")

    def __init__(self, task, index: int, pos: int, path: tuple):
        self.task, self.index, self.pos, self.path = task, index, pos, path
        self.key = tuple((step[0], id(step[1])) + step[2:] for step in path)
        self.single = all(g == 1 for g in task.attrs["grid"])
        # per operand tensor: [(mode, box index in its list, lo, hi)]
        self.boxes: dict = {}
        for mode, key in (("r", "reads"), ("w", "writes")):
            for j, (t, lo, hi) in enumerate(task.attrs[key]):
                self.boxes.setdefault(task.operands[t], []).append((mode, j, lo, hi))


class Reuse:
    """The static analysis of one exec-level document (see the module docstring)."""

    def __init__(self, doc):
        self.sites: list = []
        self.loops: list = []            # (start, end) positions of every loop
        self._pos = 0
        self._walk([op for op in doc.body if op.name not in ("source", "gm", "program")], ())
        self.end = self._pos
        self.by_region: dict = {}        # region key -> its sites directly inside, in order
        for s in self.sites:
            self.by_region.setdefault(s.key, []).append(s)
        self.tensors = [op for op in doc.body if op.name == "gm" and "param" not in op.attrs]
        self.touch = {op.result: [s for s in self.sites if op.result in s.boxes]
                      for op in self.tensors}
        self.live = {op: self._range(op) for op in self.tensors}
        self._proofs: dict = {}
        self._always: dict = {}
        self._ordered: dict = {}
        self._chains: dict = {}

    def _walk(self, ops: list, path: tuple) -> None:
        for op in ops:
            if op.name == "task":
                self.sites.append(_Site(op, len(self.sites), self._pos, path))
                self._pos += 1
            elif op.name == "loop":
                start = self._pos
                self._pos += 1
                self._walk(op.regions[0], path + (("loop", op),))
                self.loops.append((start, self._pos))
                self._pos += 1
            elif op.name == "if":
                for k, region in enumerate(op.regions):
                    self._walk(region, path + (("arm", op, k),))

    def _range(self, op) -> tuple:
        """(first, last) position of a tensor's life; the whole program when it may be read
        before it is written."""
        sites = self.touch[op.result]
        if not sites:
            return (0, -1)
        first = sites[0]
        modes = {m for m, *_ in first.boxes[op.result]}
        if modes != {"w"} or any(s.path[:len(first.path)] != first.path for s in sites):
            return (0, self.end)
        lo, hi = sites[0].pos, sites[-1].pos
        changed = True
        while changed:
            changed = False
            for s, e in self.loops:
                if lo <= e and hi >= s and not (lo >= s and hi <= e) and (lo > s or hi < e):
                    lo, hi, changed = min(lo, s), max(hi, e), True
        return lo, hi

    # -- may two tensors share bytes? ---------------------------------------------------------
    def proof(self, u, w):
        """The obligations under which gm ops u and w may share bytes, or None if they may
        not (their lives overlap, or no order between their tasks is found)."""
        key = (id(u), id(w)) if id(u) < id(w) else (id(w), id(u))
        if key not in self._proofs:
            self._proofs[key] = self._proof(u, w)
        return self._proofs[key]

    def _proof(self, u, w):
        (a0, a1), (b0, b1) = self.live[u], self.live[w]
        if a1 < a0 or b1 < b0:
            return frozenset()                   # untouched: no use to overlap
        if a0 <= b1 and b0 <= a1:
            return None
        if b0 < a0:
            u, w = w, u
        need: set = set()
        for a in self.touch[u.result]:
            for b in self.touch[w.result]:
                got = self.ordered(a, b)
                if got is None:
                    return None
                need |= got
        return frozenset(need)

    # -- ordering between two tasks ------------------------------------------------------------
    def ordered(self, a: _Site, b: _Site):
        """Obligations under which every instance of a and every instance of b (a earlier in
        program order) run one after the other whatever the iterations, or None."""
        key = (a.index, b.index)
        if key not in self._ordered:
            self._ordered[key] = self._ordered_pair(a, b)
        return self._ordered[key]

    def _ordered_pair(self, a: _Site, b: _Site):
        direct = self.always(a, b)
        if direct is not None:
            return direct
        common = _common(a.path, b.path)
        d = len(common)
        exclusive = d < len(a.path) and d < len(b.path) and a.path[d][0] == "arm" and \
            b.path[d][0] == "arm" and a.path[d][1] is b.path[d][1]
        need: set = set()
        if not exclusive:           # one iteration of every common loop: a, then b
            got = self._between(a, b, common, True)
            if got is None:
                return None
            need |= got
        for k, step in enumerate(common):
            if step[0] != "loop":
                continue
            for p, q in ((a, b), (b, a)):       # p in an earlier iteration than q
                if _only(q, step[1], "first") or _only(p, step[1], "last"):
                    continue
                got = self._between(p, q, common[:k + 1], False)
                if got is None:
                    return None
                need |= got
        return need

    def _between(self, p: _Site, q: _Site, base: tuple, same: bool):
        """Obligations of the first chain of always ordered tasks from an instance of p to
        a later one of q, each task of the chain running after the one before it, or None.
        A task runs in the chain when it lies inside base (the common region, or the body
        of the loop whose iterations differ) and runs whenever p does, after it (its region
        encloses p's), or whenever q does, before it; in one iteration (same) between the
        two in program order, else first those after p (p's iteration), then those before
        q (q's). Every task in the middle must have an instance in every launch."""
        n = len(base)
        key = (p.index, n, same, q.key)
        if key not in self._chains:
            self._chains[key] = self._chains_from(p, n, same, q.key)
        return self._chains[key].get(q.index)

    def _chains_from(self, p: _Site, n: int, same: bool, qkey: tuple) -> dict:
        """_between from p to every site q of region qkey at once: {q index: obligations},
        q absent when no chain reaches it. The nodes of the chain to q are a prefix of one
        list (the sites after p that run whenever it does and those that run whenever q
        does, before q), walked once: a node is reached through the first (lowest) reached
        node ordered with it, and q through the first reached node before it, not q itself,
        ordered with q. always() is None unless two tasks share a tensor, so the candidates
        of a node are the reached nodes touching one of its tensors."""
        near_q = self._enclosing(self.by_region[qkey][0], n)
        after_p = [c for c in self._enclosing(p, n) if c.pos > p.pos]
        if same:
            nodes = [p] + sorted(set(after_p) | {c for c in near_q if c.pos > p.pos},
                                 key=lambda c: c.pos)
        else:
            nodes = [p] + after_p + near_q
        by_tensor: dict = {}        # tensor -> indices of the reached nodes touching it
        reach: list = []            # per node: its chain's obligations, or None
        out: dict = {}

        def first(c):
            best = None
            for t in c.boxes:
                for j in by_tensor.get(t, ()):
                    if best is not None and j >= best[0]:
                        break
                    if nodes[j] is not c:
                        got = self.always(nodes[j], c)
                        if got is not None:
                            best = (j, got)
                            break
            return None if best is None else reach[best[0]] | best[1]
        for i, c in enumerate(nodes):
            r = set() if i == 0 else first(c)
            if i and r is not None:
                if c.key == qkey and (same or i > len(after_p)):
                    out[c.index] = r
                r = r | {("instances", c.index)}
            reach.append(r)
            if r is not None:
                for t in c.boxes:
                    by_tensor.setdefault(t, []).append(i)
        return out

    def _enclosing(self, s: _Site, n: int) -> list:
        """The sites in s's region or a region enclosing it at least n deep, in order: the
        tasks that run whenever s runs, in its iteration of those n regions."""
        out: list = []
        for k in range(n, len(s.key) + 1):
            out += self.by_region.get(s.key[:k], ())
        return sorted(out, key=lambda c: c.pos) if len(s.key) > n else out

    def always(self, a: _Site, c: _Site):
        """Obligations under which every instance of any launch of a and of c run one after
        the other (module docstring), or None. Of the pairs of boxes on one tensor, one of
        them a write, the first by rule: both at the origin of single-instance tasks, then
        a box covering its tensor."""
        key = (a.index, c.index) if a.index < c.index else (c.index, a.index)
        if key not in self._always:
            self._always[key] = self._always_pair(a, c)
        return self._always[key]

    def _always_pair(self, a: _Site, c: _Site):
        found: list = []
        for t in a.boxes:
            for ma, ja, lo_a, hi_a in a.boxes[t]:
                for mc, jc, lo_c, hi_c in c.boxes.get(t, ()):
                    if "w" not in (ma, mc):
                        continue
                    za, zc = _at_origin(lo_a), _at_origin(lo_c)
                    if za and zc and a.single and c.single:
                        found.append((0, _nonempty(a, ma, ja, t) | _nonempty(c, mc, jc, t)))
                    for z, s, m, j, hi, o, om, oj in ((zc, c, mc, jc, hi_c, a, ma, ja),
                                                      (za, a, ma, ja, hi_a, c, mc, jc)):
                        if z and (m == "r" or s.single):
                            found.append((1, _cover(s, m, j, t, hi) | _nonempty(o, om, oj, t)))
        return min(found, key=lambda f: (f[0], len(f[1])))[1] if found else None


def _nonempty(s: _Site, mode: str, j: int, t) -> set:
    """The obligation that box j of s on tensor t is not empty (none when it is the whole
    of a tensor of fixed positive size)."""
    lo, hi = s.task.attrs["reads" if mode == "r" else "writes"][j][1:]
    shape = t.type.shape
    if _at_origin(lo) and list(hi) == list(shape) and all(isinstance(d, int) and d > 0
                                                          for d in shape):
        return set()
    return {("nonempty", s.index, mode, j)}


def _cover(s: _Site, mode: str, j: int, t, hi) -> set:
    """The obligation that box j of s (at the origin) covers tensor t: none when its upper
    corner is the tensor's shape as written."""
    return set() if list(hi) == list(t.type.shape) else {("cover", s.index, mode, j)}


def _common(p: tuple, q: tuple) -> tuple:
    n = 0
    while n < len(p) and n < len(q) and p[n][0] == q[n][0] and p[n][1] is q[n][1] and \
            p[n][2:] == q[n][2:]:
        n += 1
    return p[:n]


def _prefix(p: tuple, q: tuple) -> bool:
    return len(_common(p, q)) == len(p)


def _only(s: _Site, loop, which: str) -> bool:
    """Does s run only in the first (last) iteration of loop: inside the then-arm of a
    branch on `var == start` (`var == stop - 1`, step 1) within that loop's body?"""
    a = loop.attrs
    var = E.sym(a["var"])
    want = a["start"] if which == "first" else E.sub(a["stop"], 1)
    if which == "last" and a["step"] != 1:
        return False
    inside = False
    for step in s.path:
        if step[0] == "loop" and step[1] is loop:
            inside = True
        elif inside and step[0] == "arm" and step[2] == 0:
            cond = step[1].attrs.get("cond")
            if isinstance(cond, E.Expr) and cond.op == "eq" and \
                    set(map(_key, cond.args)) == {_key(var), _key(want)}:
                return True
    return False


def _key(e):
    return e if isinstance(e, int) else E.to_str(e)


def _at_origin(lo: list) -> bool:
    return all(isinstance(x, int) and x == 0 for x in lo)


# -- the layout ------------------------------------------------------------------------------

def nbytes(op):
    """A tensor's bytes (an expression when its shape is symbolic)."""
    n = op.result.type.dtype.itemsize
    for d in op.result.type.shape:
        n = E.mul(n, d)
    return n


def aligned(e):
    return E.mul(E.cdiv(e, ALIGN), ALIGN)


def place(doc) -> tuple[dict, object]:
    """Arena offsets for the workspaces and local tensors of an exec document (first fit in
    order of first use; a tensor goes where it overlaps no tensor it may not share bytes
    with, for every size) and the arena's size in bytes."""
    r = Reuse(doc)
    order = sorted(r.tensors, key=lambda op: (r.live[op][0], r.tensors.index(op)))
    offsets: dict = {}
    for op in order:
        size = aligned(nbytes(op))
        clash = [p for p in offsets if r.proof(p, op) is None]
        offsets[op] = _first_fit(size, [(offsets[p], aligned(nbytes(p))) for p in clash])
    ends = [E.add(offsets[op], aligned(nbytes(op))) for op in r.tensors]
    return {op: offsets[op] for op in r.tensors}, _largest(ends)


def _largest(es: list):
    """max(es) without the terms another one is provably at least."""
    keep: list = []
    for e in es:
        if any(_le(e, k) for k in keep):
            continue
        keep = [k for k in keep if not _le(k, e)] + [e]
    return 0 if not keep else keep[0] if len(keep) == 1 else E.maximum(*keep)


def _first_fit(size, taken: list):
    """The lowest candidate offset (0, or the end of a taken span) provably clear of every
    taken span for all sizes, else past the end of all of them."""
    spans = [(o, E.add(o, s)) for o, s in taken]
    cands = [0] + [end for _, end in sorted(spans, key=lambda x: _order_key(x[0]))]
    for c in cands:
        top = E.add(c, size)
        if all(_le(top, o) or _le(end, c) for o, end in spans):
            return c
    return _largest(cands[1:])


def _order_key(e):
    return (0, e, "") if isinstance(e, int) else (1, 0, E.to_str(e))


def _le(x, y) -> bool:
    """x <= y for every size (symbols at least 0)?"""
    d = E.sub(y, x)
    if isinstance(d, int):
        return d >= 0
    lo, _ = E.bounds(d, {})
    return lo is not None and lo >= 0


# -- a run's sizes -----------------------------------------------------------------------------

_ANALYSES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def analysis(doc) -> Reuse:
    """The document's Reuse, made once per document."""
    r = _ANALYSES.get(doc)
    if r is None:
        r = _ANALYSES[doc] = Reuse(doc)
    return r


def layout(doc, exp) -> dict | None:
    """{gm op: byte offset in the arena} for the run exp expands, or None: the document has
    no arena, or for these sizes two tensors whose bytes meet have no proof or an obligation
    fails (then every tensor gets bytes of its own)."""
    ops = [op for op in exp.gms if "arena" in op.attrs and "param" not in op.attrs]
    if not ops:
        return None
    spans = {}
    room = 0
    for op in ops:
        try:
            off = int(E.evaluate(op.attrs["arena"], exp.env))
        except (E.UnboundSymbol, ArithmeticError, TypeError, ValueError):
            return None           # an offset a file made up: no arena
        size = int(np.prod(exp.shapes[op], dtype=np.int64)) * op.result.type.dtype.itemsize
        if off < 0 or off % ALIGN:
            return None
        spans[op] = (off, off + size)
        room += -(-size // ALIGN) * ALIGN
    if max(end for _, end in spans.values()) > room:
        return None               # larger than giving every tensor its own bytes
    r = analysis(doc)
    need: set = set()
    for i, p in enumerate(ops):
        for q in ops[i + 1:]:
            (p0, p1), (q0, q1) = spans[p], spans[q]
            if p0 < q1 and q0 < p1:
                got = r.proof(p, q)
                if got is None:
                    return None
                need |= got
    if need and not holds(exp, r, need):
        return None
    return {op: spans[op][0] for op in ops}


def holds(exp, r: Reuse, need: set) -> bool:
    """Do the obligations hold on every launch of the tasks they name?"""
    by_task: dict = {}
    for ob in need:
        by_task.setdefault(ob[1], []).append(ob)
    index = {id(s.task): s.index for s in r.sites}
    for lc in exp.launches:
        task = exp.tasks[lc.task]
        obs = by_task.get(index.get(id(task)), ())
        if obs and not all(_holds(task, lc, ob, exp) for ob in obs):
            return False
    return True


def _launch_env(exp, task, lc) -> dict:
    """The sizes, and per instance of launch lc the grid index and the task's scalars, as
    arrays (one entry per instance)."""
    env = dict(exp.env)
    rank = lc.grid_index.shape[1]
    env.update({f"g{d}": lc.grid_index[:, d] for d in range(rank)})
    for k, e in enumerate(task.attrs["scalars"]):
        if isinstance(e, E.Expr) and e.op == "sym":
            env[e.args[0]] = lc.scalars[:, rank + k]
    return env


def _holds(task, lc, ob, exp) -> bool:
    if ob[0] == "instances":
        return lc.n >= 1
    _, _, mode, j = ob
    t, lo, hi = task.attrs["reads" if mode == "r" else "writes"][j]
    if lc.n == 0:
        return True
    env = _launch_env(exp, task, lc)
    shape = exp.shapes[task.operands[t].owner]
    try:
        for d, size in enumerate(shape):
            a = np.broadcast_to(np.asarray(E.evaluate(lo[d], env), np.int64), (lc.n,))
            b = np.broadcast_to(np.asarray(E.evaluate(hi[d], env), np.int64), (lc.n,))
            if ob[0] == "cover" and not ((a == 0) & (b >= size)).all():
                return False
            if ob[0] == "nonempty" and not (np.minimum(b, size) > np.maximum(a, 0)).all():
                return False
    except E.UnboundSymbol:
        return False
    return True


def storage_keys(doc, exp) -> list:
    """Per GM tensor of exp (in order), what identifies its bytes for the simulator's L2:
    its index, or for a tensor in the arena its offset, dtype and shape (a tensor taking
    another's bytes then meets it in the L2)."""
    lay = layout(doc, exp) or {}
    return [("arena", lay[op], op.result.type.dtype.name, tuple(exp.shapes[op]))
            if op in lay else i for i, op in enumerate(exp.gms)]


# -- a checker (tests) -------------------------------------------------------------------------

def races(exp, offsets: dict) -> list:
    """The pairs of task instances (earlier, later) that touch the bytes two tensors share
    in the arena (offsets: gm op -> byte offset, an expression of the sizes) with no path between them in the instance
    graph exp orders the run by: what would race. Meant for tests (a bitset per instance)."""
    n = exp.n
    anc = [0] * n
    for i in range(n):
        a = 0
        for p in exp.preds[i]:
            a |= anc[p] | (1 << p)
        anc[i] = a
    ops = list(offsets)
    touch = {op: _touching(exp, op) for op in ops}
    out = []
    for i, p in enumerate(ops):
        for q in ops[i + 1:]:
            p0 = int(E.evaluate(offsets[p], exp.env))
            q0 = int(E.evaluate(offsets[q], exp.env))
            p1 = p0 + int(np.prod(exp.shapes[p], dtype=np.int64)) * p.result.type.dtype.itemsize
            q1 = q0 + int(np.prod(exp.shapes[q], dtype=np.int64)) * q.result.type.dtype.itemsize
            if not (p0 < q1 and q0 < p1):
                continue
            for x in touch[p]:
                for y in touch[q]:
                    lo, hi = min(x, y), max(x, y)
                    if lo != hi and not anc[hi] >> lo & 1:
                        out.append((lo, hi))
    return sorted(set(out))


def _touching(exp, op) -> list:
    """The instances whose boxes on gm op are not empty."""
    out = []
    for lc in exp.launches:
        task = exp.tasks[lc.task]
        idx = [i for i, v in enumerate(task.operands) if v is op.result]
        if not idx or lc.n == 0:
            continue
        env = _launch_env(exp, task, lc)
        hit = np.zeros(lc.n, bool)
        for key in ("reads", "writes"):
            for t, lo, hi in task.attrs[key]:
                if t not in idx:
                    continue
                ok = np.ones(lc.n, bool)
                for d, size in enumerate(exp.shapes[op]):
                    a = np.broadcast_to(np.asarray(E.evaluate(lo[d], env), np.int64), (lc.n,))
                    b = np.broadcast_to(np.asarray(E.evaluate(hi[d], env), np.int64), (lc.n,))
                    ok &= np.minimum(b, size) > np.maximum(a, 0)
                hit |= ok
        out += [lc.first + int(i) for i in np.nonzero(hit)[0]]
    return out
