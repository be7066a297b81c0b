"""The simulator's fast paths against its reference, event by event.

- engine.c against engine.py on hand-built streams: pipes, flags for the arrows, a cross-core
  event chain, HBM shared by many cores, L2 hits, misses, evictions and write-back;
- the three engines of simulate (c, python: engine.py on the class templates of classes.py,
  reference: engine.py with every instance flattened on its own) on every example, Tensor
  mode and Pro, and on runs made to stress HBM contention, L2 evictions and write-back,
  mixed cube and vector dispatch: the whole record must be equal;
- the classes of classes.py: tail tiles, per-instance loop bounds, templates shared;
- without the C engine ($PYPTO_NO_NATIVE) the same record, and one warning.
"""
from __future__ import annotations

import importlib.util
import pathlib

import pytest

from libpypto.analysis import bind as B
from libpypto.driver import lower, target_for, trace
from libpypto.sim import native, simulate
from libpypto.sim.engine import Engine
from libpypto.sim.flatten import Stream
from libpypto.targets import override
from libpypto.targets.costs import PIPE_INDEX

ROOT = pathlib.Path(__file__).resolve().parents[3]
EXAMPLES = sorted((ROOT / "examples").glob("*.py")) + sorted((ROOT / "examples/pro").glob("*.py"))
MTE2, MTE3, V, M = (PIPE_INDEX[p] for p in ("MTE2", "MTE3", "V", "M"))

pytestmark = pytest.mark.needs_cc


@pytest.fixture(autouse=True)
def _needs_engine():
    if not native.available():
        pytest.skip("the C engine cannot be built here")


class FakeCosts:
    def __init__(self, hbm=100.0, l2_bw=400.0, l2_bytes=1 << 20, hit=0.0, miss=0.0,
                 write_back=False):
        self.hbm, self.l2_bw, self.l2_bytes = hbm, l2_bw, l2_bytes
        self.l2_hit, self.l2_miss, self.write_back = hit, miss, write_back
        self.launch = self.dispatch = 0.0


def both(streams, costs, ncores=None):
    """engine.py and engine.c on the same (core, stream) pairs, all started at time 0:
    their events, flows, busy cycles, byte counts and stream ends."""
    ncores = ncores or max(c for c, _ in streams) + 1
    eng = Engine(costs, ncores, 7)
    ends = {}
    for k, (core, st) in enumerate(streams):
        eng.start(st, core, 0.0, lambda r, k=k: ends.__setitem__(k, r.end))
    eng.run()
    py = (eng.events, sorted(eng.flows), eng.busy,
          [eng.hbm_read, eng.hbm_write, eng.l2_hit_bytes, eng.l2_write_bytes],
          [ends[k] for k in range(len(streams))])
    res, _, c_end = native.run_waves(costs, ["vector"] * ncores, 7, [st for _, st in streams],
                                     [[(k, core)] for k, (core, _) in enumerate(streams)],
                                     len(streams), 1000)
    ev = [tuple(x) for x in zip(*(a.tolist() for a in res.events))]
    c = (ev, sorted(zip(*(a.tolist() for a in res.flows))), res.busy,
         [res.hbm_read, res.hbm_write, res.l2_hit_bytes, res.l2_write_bytes],
         c_end[:len(streams)].tolist())
    return py, c


def test_pipes_flags_and_a_cross_core_chain():
    a, b = Stream(0), Stream(0)
    x = a.add(V, 100.0, None, (), 0)
    y = a.add(M, 40.0, None, (x,), 1, flag=(x,))
    a.add(V, 30.0, None, (x, y), 2, post=[("ev", 1)], flag=(y,))
    w = b.add(V, 0.0, None, (), 3, need=[("ev", 1)])
    b.add(M, 70.0, None, (w,), 4, xflag=(("ev", 1),))
    b.add(V, 10.0, None, (w,), 5, post=[("back", 1)])
    a.add(M, 5.0, None, (y,), 6, need=[("back", 1)], xflag=(("back", 1),))
    py, c = both([(0, a), (1, b)], FakeCosts())
    assert py == c
    assert py[1]                                # the flags did draw arrows


def test_hbm_shared_by_many_cores_and_l2_reuse():
    streams = []
    for core in range(12):
        st = Stream(0)
        prev = st.add(V, 3000.0 * core, None, (), 9)     # the cores start staggered
        for k in range(6):      # every core loads the same 6 boxes, then stores its own
            prev = st.add(MTE2, 20.0, (("box", k), 30_000 + 1000 * k, 50.0, False, 0),
                          (prev,), k)
        st.add(MTE3, 10.0, (("out", core), 8192, 80.0, True, 1), (prev,), 7)
        streams.append((core, st))
    for costs in (FakeCosts(hit=50.0, miss=200.0), FakeCosts(l2_bytes=0),
                  FakeCosts(l2_bytes=100_000, write_back=True)):
        py, c = both(streams, costs)
        assert py == c
    assert py[3][0] > 6 * 36_000                # evictions: boxes read from HBM again


def test_write_back_evicts_dirty_boxes_to_hbm():
    st = Stream(0)
    prev = None
    for k in range(8):
        prev = st.add(MTE3, 0.0, (("ws", k), 40_000, 500.0, True, 0),
                      (prev,) if prev is not None else (), 0)
        prev = st.add(MTE2, 0.0, (("ws", k // 2), 40_000, 500.0, False, 0), (prev,), 1)
    py, c = both([(0, st)], FakeCosts(l2_bytes=100_000, write_back=True))
    assert py == c
    assert py[3][1] > 0 and py[3][2] > 0        # dirty boxes written back; some hits


def _example(path):
    spec = importlib.util.spec_from_file_location(f"natex_{path.stem}", path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m.EXAMPLE


def _doc(path, target="a2"):
    ex = _example(path)
    if path.parent.name == "pro":
        doc = trace(str(path), kernel=ex.get("kernel"), bind=ex.get("bind", {}),
                    consts=ex.get("const"), target=target)
        return doc, dict(ex.get("bind", {})), {"block_dim": ex.get("block_dim", 1)}
    doc = lower(trace(str(path), target=target), target=target)
    return doc, B.bind(doc, {}, ex["bind"]), {}


def three(doc, target, env, **kw) -> list:
    return [simulate(doc, target, env, engine=e, **kw) for e in ("reference", "python", "c")]


FAST = ("examples/matmul.py", "examples/ffn.py", "examples/conditions.py",
        "examples/pro/matmul.py", "examples/pro/flash_attention.py", "examples/pro/vadd.py")


@pytest.mark.parametrize("path", [pytest.param(p, marks=() if p.relative_to(ROOT).as_posix()
                                               in FAST else pytest.mark.slow)
                                  for p in EXAMPLES], ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_example_has_the_same_record_on_all_engines(path):
    doc, env, kw = _doc(path)
    ref, py, c = three(doc, target_for(doc, "a2"), env, **kw)
    assert ref == py == c
    assert c["events"] and c["busy"]


@pytest.mark.parametrize("name, bind, sets", [
    pytest.param("softmax.py", {"x_0": 4096}, [], marks=pytest.mark.slow),   # HBM contention
    # cube and vector instances, dirty boxes evicted from a small L2
    pytest.param("ffn_relu_dynamic.py", {"h_0": 1024, "out_0": 1024}, ["l2.bytes=262144"],
                 marks=pytest.mark.slow),
    ("rmsnorm.py", {"T": 1024}, ["l2.bytes=131072", "l2.write_back=1"]),  # HBM-bound, evictions
    ("matmul.py", {"M": 1024}, ["l2.write_back=0"]),                      # write-through
])
def test_stressed_runs_have_the_same_record(name, bind, sets, monkeypatch):
    monkeypatch.setenv("PYPTO_MAX_SIM_EVENTS", "3000")        # the cap cuts mid-run
    doc = lower(trace(str(ROOT / "examples" / name), target="a2"), target="a2")
    tgt = override(target_for(doc, "a2"), sets)
    ref, py, c = three(doc, tgt, B.bind(doc, {}, bind))
    assert ref == py == c
    assert c["hbm_bytes"][0] > 0 and c["tasks"]


def test_the_python_path_without_a_compiler_warns_once(monkeypatch):
    doc, env, kw = _doc(ROOT / "examples" / "add.py")
    tgt = target_for(doc, "a2")
    want = simulate(doc, tgt, env, engine="c")
    from libpypto.analysis import native as N
    monkeypatch.setenv("PYPTO_NO_NATIVE", "1")
    monkeypatch.setattr(native, "_lib", [])
    monkeypatch.setattr(N, "_warned", [])
    with pytest.warns(UserWarning, match="run in Python, slower") as got:
        assert simulate(doc, tgt, env) == want
        assert simulate(doc, tgt, env) == want
    assert len(got) == 1


def _plan(name, bind):
    from libpypto.analysis.expand import expand
    from libpypto.sim import classes
    from libpypto.sim.flatten import Flattener
    from libpypto.targets.costs import Costs
    doc = lower(trace(str(ROOT / "examples" / name), target="a2"), target="a2")
    exp = expand(doc, B.bind(doc, {}, bind))
    fl = Flattener(exp.programs, Costs(target_for(doc, "a2")), pro=False)
    pindex = {q.attrs["name"]: i for i, q in enumerate(exp.programs)}
    gm_of = {op.result: i for i, op in enumerate(exp.gms)}
    return doc, exp, classes.plan(exp, fl, [pindex[t.attrs["program"]] for t in exp.tasks],
                                  [[gm_of[v] for v in t.operands] for t in exp.tasks])


def test_a_tail_tile_is_a_class_of_its_own_and_keys_stay_per_instance():
    _, exp, p = _plan("softmax.py", {"x_0": 100})       # rows in tiles of 8: 12 full, 1 tail
    assert len(p.templates) == 2
    assert p.tpl.tolist() == [0] * 12 + [1]
    ids = p.keys
    assert len(set(ids.tolist())) == len(ids)            # every box its own: distinct rows


def test_the_launches_of_a_loop_share_their_templates():
    _, exp, p = _plan("loops.py", {})
    assert len(exp.launches) == 12 and len(p.templates) == 2


def test_a_class_that_flattens_unevenly_falls_back_to_one_stream_each(monkeypatch):
    """A walker blind to a timed value (here: to every difference between instances) would
    merge the tail tile into the full ones; the guard sees that the class's last instance
    flattens differently, warns, and flattens each on its own: the record stays the
    reference's."""
    from libpypto.sim import classes
    doc = lower(trace(str(ROOT / "examples" / "softmax.py"), target="a2"), target="a2")
    env = B.bind(doc, {}, {"x_0": 100})
    tgt = target_for(doc, "a2")
    want = simulate(doc, tgt, env, engine="reference")
    real = classes._Walk.value

    def blind(self, e):             # the first instance's value for all
        try:
            return real(self, e)
        except classes._Split as split:
            self.sig.append(int(split.values[0]))
            return int(split.values[0])

    monkeypatch.setattr(classes._Walk, "value", blind)
    monkeypatch.setattr(classes, "_warned", [])
    with pytest.warns(UserWarning, match="flatten differently"):
        assert simulate(doc, tgt, env, engine="c") == want
