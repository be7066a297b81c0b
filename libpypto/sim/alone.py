"""Each task instance alone on the chip, as the simulator times it: pypto-sched's costs.

`instance_costs(exp, target)` gives per instance of an expansion (arrays, instance order):
- `cycles`: the dispatch overhead plus the simulated time of its stream alone on one core
  (engine.py, pipes overlapping as they do in the simulation), with the boxes the L2
  estimate below counts as hits already in the L2 and the others not; worked out once per
  class of instances (classes.py: the instances whose streams are the same but for the
  L2 keys; a tail tile is a class of its own) and pattern of hits, so it stays linear;
- `gm_bytes`: the bytes of its GM transfers, `gm_cycles`: their cycles in that run;
- `hbm_bytes`: the bytes of them that reach HBM by an estimate of the L2 over the
  instances in order: a load hits when an earlier instance (or the same one) loaded or
  stored the same box and at most the L2's capacity of bytes moved in between (an upper
  bound of the distinct bytes an LRU cache sees); a store reaches HBM unless the L2 takes
  it (write-back and a box that fits);
- `hbm_floor` (one number): bytes that must cross HBM in any order the dependences allow:
  the first load of every box and the stores the L2 does not take (the simulator moves at
  least these, as it matches boxes exactly).
"""
from __future__ import annotations

import numpy as np

from ..errors import UsageError
from ..targets.costs import PIPES, Costs
from . import _kind, classes, lanes, native
from .engine import Engine
from .flatten import Context, Flattener, instance_env


def instance_costs(exp, target) -> dict:
    costs = Costs(target)
    programs = exp.programs
    pindex = {p.attrs["name"]: i for i, p in enumerate(programs)}
    gm_of = {op.result: i for i, op in enumerate(exp.gms)}
    prog_of = [pindex[t.attrs["program"]] for t in exp.tasks]
    tensors = [[gm_of[v] for v in t.operands] for t in exp.tasks]
    fl = Flattener(programs, costs, pro=False)
    p = classes.plan(exp, fl, prog_of, tensors, native.intern if native.available() else None)
    acc = _accesses(p, costs)
    hbm, floor = _hbm_bytes(acc, len(p.tpl), costs)
    group, first = _groups(p, acc)
    make = classes.instance_streams(p, p.keys)
    kinds = lanes(target.cores())
    cluster = [_kind(programs[pi], kinds) == "cluster" for pi in prog_of]
    task_of = [lc.task for lc in exp.launches]
    alone = np.array([_alone_cluster(exp, fl, prog_of, tensors, costs, i)
                      if cluster[task_of[int(exp.launch_of[i])]] else
                      _alone(make(i), costs, _warm(p, acc, i)) for i in first.tolist()]
                     ).reshape(-1, 3)
    per = alone[group] if exp.n else np.zeros((0, 3))
    return {"cycles": costs.dispatch + per[:, 0], "gm_cycles": per[:, 1],
            "gm_bytes": per[:, 2], "hbm_bytes": hbm, "hbm_floor": floor}


def _alone(st, costs, warm: list) -> tuple:
    """(cycles, cycles of its GM transfers, GM bytes) of a stream run alone from time 0,
    the L2 holding the boxes warm [(key, bytes)] from the start."""
    eng = Engine(costs, 1, len(PIPES))
    eng.max_events = max(eng.max_events, len(st))
    for key, nbytes in warm:
        eng._cache(key, nbytes, 0.0)
    got = []
    eng.start(st, 0, 0.0, got.append)
    eng.run()
    r = got[0]
    return (r.end,) + _gm_work(eng, r)


def _gm_work(eng, r) -> tuple:
    """(cycles, bytes) of the GM transfers of run r."""
    st = r.st
    gm = [k for k, g in enumerate(st.gm) if g is not None]
    busy = sum(eng.events[r.evid[k]][3] - eng.events[r.evid[k]][2] for k in gm if r.evid[k] >= 0)
    return busy, float(sum(st.gm[k][1] for k in gm))


def _alone_cluster(exp, fl, prog_of, tensors, costs, i: int) -> tuple:
    """_alone for an instance of a mixed program on a cluster: its three parts (the cube's
    sections and each vector core's) on three cores from time 0, the cross-core events
    between them; the L2 starts cold."""
    lc = exp.launches[int(exp.launch_of[i])]
    pi = prog_of[lc.task]
    prog = fl.programs[pi]
    env = instance_env(prog, lc, i)
    eng = Engine(costs, 3, len(PIPES))
    got, streams = [], []
    for cid, kind in enumerate(("cube", "vector", "vector")):
        ctx = Context(tensors[lc.task], i, cid, kind, part=True)
        fl.flags = eng.room()
        st = fl.flatten(pi, env, ctx)
        eng.max_events = max(eng.max_events, 3 * len(st))
        streams.append(st)
    for cid, st in enumerate(streams):
        eng.start(st, cid, 0.0, got.append)
    eng.run()
    if len(got) != 3:
        raise UsageError(f"program {prog.attrs['name']}: its cluster parts do not finish "
                         f"when run alone (a cross-core event nobody sets)")
    work = [_gm_work(eng, r) for r in got]
    return max(r.end for r in got), sum(w[0] for w in work), sum(w[1] for w in work)


class _Acc:
    """The GM accesses of a plan, one per key (instances in order): instance, bytes,
    store, key, and whether the L2 estimate counts it a hit."""

    def __init__(self, inst, nb, store, key, hit, to_hbm, first):
        self.inst, self.nb, self.store, self.key, self.hit = inst, nb, store, key, hit
        self.to_hbm, self.first = to_hbm, first


def _accesses(p, costs) -> _Acc:
    n, ngm, key = len(p.tpl), p.ngm, p.keys
    slot_off = np.concatenate([[0], np.cumsum(ngm)])
    info = [(g[1], bool(g[3])) for st in p.templates for g in st.gm if g is not None]
    nb_t = np.array([x[0] for x in info], np.float64)
    store_t = np.array([x[1] for x in info], bool)
    inst = np.repeat(np.arange(n, dtype=np.int64), ngm[p.tpl]) if n else np.zeros(0, np.int64)
    slot = slot_off[p.tpl[inst]] + np.arange(inst.size) - p.kbase[inst]
    nb, store = nb_t[slot], store_t[slot]
    if not (costs.l2_bytes and costs.l2_bw):
        none = np.zeros(key.size, bool)
        return _Acc(inst, nb, store, key, none, store, ~store)
    fits = (nb <= costs.l2_bytes) & (key >= 0)
    order = np.lexsort((np.arange(key.size), key))
    ks = key[order]
    same = (ks[1:] == ks[:-1]) & (ks[1:] >= 0)
    prev = np.full(key.size, -1, np.int64)
    prev[order[1:][same]] = order[:-1][same]
    cum = np.concatenate([[0.0], np.cumsum(nb)])
    between = cum[np.arange(key.size)] - cum[np.maximum(prev, 0) + 1]
    hit = ~store & fits & (prev >= 0) & (between + nb <= costs.l2_bytes)
    return _Acc(inst, nb, store, key, hit, store & ~(fits & bool(costs.write_back)),
                ~store & (prev < 0))


def _hbm_bytes(a: _Acc, n: int, costs) -> tuple:
    """Per instance the bytes of its transfers that reach HBM, and the run's floor (module
    docstring)."""
    moved = np.where((~a.store & ~a.hit) | a.to_hbm, a.nb, 0.0)
    return np.bincount(a.inst, moved, n), float(a.nb[a.first | a.to_hbm].sum())


def _groups(p, a: _Acc) -> tuple:
    """Each instance's group (its template and which of its loads hit; the first 52) and
    the first instance of each group."""
    n = len(p.tpl)
    if not n:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    if not a.hit.any():                 # one group per template
        _, first, group = np.unique(p.tpl, return_index=True, return_inverse=True)
        return group.reshape(-1), first
    k = np.arange(a.inst.size) - p.kbase[a.inst]
    bits = np.where(a.hit & (k < 52), np.exp2(np.minimum(k, 52)), 0.0)
    pattern = np.bincount(a.inst, bits, n).astype(np.int64)
    _, first, group = np.unique(np.stack([p.tpl.astype(np.int64), pattern], 1), axis=0,
                                return_index=True, return_inverse=True)
    return group.reshape(-1), first


def _warm(p, a: _Acc, i: int) -> list:
    """The (key, bytes) of instance i's loads the estimate counts as hits (the first 52)."""
    lo = int(p.kbase[i])
    hi = lo + int(p.ngm[p.tpl[i]])
    return [(int(a.key[j]), float(a.nb[j])) for j in range(lo, min(hi, lo + 52)) if a.hit[j]]
