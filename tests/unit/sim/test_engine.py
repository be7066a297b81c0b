"""The simulator's engine on hand-built streams with known answers: one pipe saturated, two
pipes overlapping, a flag chain across pipes, cross-core events, HBM shared by N cores, L2
hit against miss. Costs are a stand-in with round numbers, so every answer is arithmetic."""
from __future__ import annotations

import pytest

from libpypto.sim.engine import BUCKET, Engine
from libpypto.sim.flatten import Stream
from libpypto.targets.costs import PIPE_INDEX

MTE2, V, M = PIPE_INDEX["MTE2"], PIPE_INDEX["V"], PIPE_INDEX["M"]


class FakeCosts:
    """Round numbers: HBM 100 B/cycle for the chip, L2 400 B/cycle, no latencies."""

    def __init__(self, hbm=100.0, l2_bw=400.0, l2_bytes=1 << 20, hit=0.0, miss=0.0,
                 write_back=False):
        self.hbm, self.l2_bw, self.l2_bytes = hbm, l2_bw, l2_bytes
        self.l2_hit, self.l2_miss, self.write_back = hit, miss, write_back
        self.launch = self.dispatch = 0.0


def run(streams, costs=None, ncores=None):
    """Run each (core, stream) from time 0; the engine and the end time of each stream."""
    eng = Engine(costs or FakeCosts(), ncores or len(streams), 7)
    ends = {}
    for k, (core, st) in enumerate(streams):
        eng.start(st, core, 0.0, lambda r, k=k: ends.__setitem__(k, r.end))
    eng.run()
    return eng, [ends[k] for k in range(len(streams))]


def chain(pipe, n, cycles, st=None, after=None):
    """n instructions of `cycles` on one pipe, each after the previous (an in-order pipe)."""
    st = st or Stream(0)
    prev = after
    for _ in range(n):
        prev = st.add(pipe, float(cycles), None, (prev,) if prev is not None else (), 0)
    return st


def load(st, key, nbytes, rate, preds=()):
    return st.add(MTE2, 0.0, (key, nbytes, rate, False, 0), tuple(preds), 0)


def test_one_pipe_saturated():
    eng, (end,) = run([(0, chain(V, 10, 100))])
    assert end == 1000
    assert eng.busy[0][V] == 1000           # busy all the time: 100 % of the makespan


def test_two_pipes_overlap_when_independent():
    st = chain(V, 10, 100)
    chain(M, 10, 60, st)
    eng, (end,) = run([(0, st)])
    assert end == 1000                      # max(1000, 600), not the sum 1600
    assert eng.busy[0][V] == 1000 and eng.busy[0][M] == 600


def test_dependent_pipes_pipeline():
    """M_i needs V_i: M runs one step behind V, so the end is V's work plus one M step."""
    st = Stream(0)
    last_v = last_m = None
    for _ in range(10):
        v = st.add(V, 100.0, None, (last_v,) if last_v is not None else (), 0)
        preds = (v,) + ((last_m,) if last_m is not None else ())
        last_m = st.add(M, 60.0, None, preds, 0)
        last_v = v
    _, (end,) = run([(0, st)])
    assert end == 10 * 100 + 60


def test_flag_chain_serialises_pipes():
    """A ping-pong of flags between V and M (each waits for the other's last) is the sum."""
    st = Stream(0)
    prev = None
    for i in range(6):
        pipe, cycles = (V, 100.0) if i % 2 == 0 else (M, 40.0)
        prev = st.add(pipe, cycles, None, (prev,) if prev is not None else (), 0)
    _, (end,) = run([(0, st)])
    assert end == 3 * 100 + 3 * 40


def test_cross_core_event_orders_cores():
    """Core 1's first instruction needs the event core 0 posts after its 500 cycles."""
    a = Stream(0)
    a.add(V, 500.0, None, (), 0, post=[("ev", 1)])
    b = Stream(0)
    first = b.add(V, 100.0, None, (), 0, need=[("ev", 1)])
    b.add(V, 100.0, None, (first,), 0)
    _, ends = run([(0, a), (1, b)])
    assert ends == [500, 700]


def test_cross_core_wait_for_nth_set():
    """The second wait needs the second set: 2 x 300 on core 0, then 50 on core 1."""
    a = chain(V, 2, 300)
    a.post[0], a.post[1] = [("ev", 1)], [("ev", 2)]
    b = Stream(0)
    b.add(V, 50.0, None, (), 0, need=[("ev", 2)])
    _, ends = run([(0, a), (1, b)])
    assert ends == [600, 650]


@pytest.mark.parametrize("n", [1, 2, 4, 8])
def test_hbm_shared_by_n_cores(n):
    """Each core loads 64 KiB at 50 B/cycle; HBM moves 100 B/cycle for all. Up to two
    cores each get their full rate; beyond, HBM is the limit: n x 64 KiB / 100."""
    nbytes = 64 * 1024
    streams = []
    for core in range(n):
        st = Stream(0)
        load(st, ("t", core), nbytes, 50.0)
        streams.append((core, st))
    eng, ends = run(streams)
    want = nbytes / 50.0 if n <= 2 else n * nbytes / 100.0
    assert max(ends) == pytest.approx(want, abs=BUCKET)
    assert eng.hbm_read == n * nbytes


def test_l2_hit_is_faster_than_miss():
    """The same box twice: a miss at HBM speed, then a hit at the L2's (rate 1000 B/cycle
    per core, HBM 100, L2 400); a box larger than the L2 misses every time."""
    nbytes = 40_000
    st = Stream(0)
    first = load(st, ("t", (0, 0), (100, 100)), nbytes, 1000.0)
    load(st, ("t", (0, 0), (100, 100)), nbytes, 1000.0, (first,))
    eng, (end,) = run([(0, st)])
    assert end == pytest.approx(nbytes / 100.0 + nbytes / 400.0, abs=2 * BUCKET)
    assert eng.l2_hit_bytes == nbytes and eng.hbm_read == nbytes
    small = FakeCosts(l2_bytes=nbytes // 2)
    st = Stream(0)
    first = load(st, ("t", 0), nbytes, 1000.0)
    load(st, ("t", 0), nbytes, 1000.0, (first,))
    eng, (end,) = run([(0, st)], small)
    assert end == pytest.approx(2 * nbytes / 100.0, abs=2 * BUCKET)
    assert eng.l2_hit_bytes == 0 and eng.hbm_read == 2 * nbytes


def test_l2_reuse_across_cores_and_latencies():
    """Core 1 loads the box core 0 brought in: a hit, not before the box has arrived, and
    the hit and miss latencies apply."""
    nbytes = 10_000
    costs = FakeCosts(hit=50.0, miss=200.0)
    a, b = Stream(0), Stream(0)
    load(a, "box", nbytes, 1000.0)
    wait = b.add(V, 10.0, None, (), 0)
    load(b, "box", nbytes, 1000.0, (wait,))
    eng, ends = run([(0, a), (1, b)], costs)
    assert ends[0] == pytest.approx(200 + nbytes / 100.0, abs=BUCKET)
    assert ends[1] >= ends[0]
    assert eng.l2_hit_bytes == nbytes


def test_write_back_store_then_load_stays_on_chip():
    nbytes = 8192
    costs = FakeCosts(write_back=True)
    st = Stream(0)
    s = st.add(PIPE_INDEX["MTE3"], 0.0, ("ws", nbytes, 1000.0, True, 0), (), 0)
    load(st, "ws", nbytes, 1000.0, (s,))
    eng, _ = run([(0, st)], costs)
    assert eng.hbm_write == 0 and eng.hbm_read == 0
    assert eng.l2_write_bytes == nbytes and eng.l2_hit_bytes == nbytes
