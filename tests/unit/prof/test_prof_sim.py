"""pypto-prof's view of a simulated run (libpypto/prof/sim.py): the Perfetto trace has a track
per pipe per core, an arrow per flag joining the setting and the waiting instruction, and
times that never run backwards; the tables read the record's numbers; errors are clear."""
from __future__ import annotations

import json

import pytest

import libpypto as pypto
from libpypto.driver import trace
from libpypto.errors import UsageError
from libpypto.prof import profile
from libpypto.prof.sim import resolve_view, sim_tables, sim_trace
from libpypto.sim.engine import Engine
from libpypto.sim.flatten import Stream
from libpypto.targets.costs import PIPE_INDEX

from ..sim.test_engine import FakeCosts

_CACHE: dict = {}


def simulated(name: str):
    """A run record of an example made with target a2 (cached: each is run once)."""
    if name not in _CACHE:
        if name == "vadd":
            doc = trace("examples/pro/vadd.py", kernel="vadd", bind={"x_0": 1000}, target="a2")
            _CACHE[name] = pypto.run(doc, bind={"x_0": 1000}, backend="numpy", target="a2",
                                     block_dim=4)
        else:
            bind = {"softmax": {"x_0": 100}, "matmul": {"M": 200}}[name]
            doc = trace(f"examples/{name}.py", target="a2")
            _CACHE[name] = pypto.run(doc, bind=bind, backend="numpy", target="a2")
    return _CACHE[name]


def sim_of(rec) -> dict:
    return rec.body[0].attrs["sim"]


def by_phase(t: dict, ph: str) -> list:
    return [e for e in t["traceEvents"] if e["ph"] == ph]


def enclosing(slices: list, e: dict) -> dict:
    """The one complete event on e's track whose span strictly contains e's time."""
    got = [x for x in slices if (x["pid"], x["tid"]) == (e["pid"], e["tid"]) and
           x["ts"] < e["ts"] < x["ts"] + x["dur"]]
    assert len(got) == 1, (e, got)
    return got[0]


@pytest.mark.parametrize("name", ["softmax", "matmul", "vadd"])
def test_one_track_per_pipe_per_core(name):
    s = sim_of(simulated(name))
    t = json.loads(json.dumps(sim_trace(simulated(name))))
    pipes = [e for e in by_phase(t, "X") if e["cat"] == "pipe"]
    assert len(pipes) == len(s["events"]) > 0
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in by_phase(t, "M")
               if e["name"] == "thread_name"}
    want = {(c, p) for c, p, *_ in s["events"]}
    assert {k for k, v in threads.items() if v not in ("tasks", "clusters")} == want
    for c, p in want:
        assert threads[(c, p)] == s["pipes"][p]
    kinds = {row[0]: row[1] for row in s["busy"]}
    procs = {e["pid"]: e["args"]["name"] for e in by_phase(t, "M") if e["name"] == "process_name"}
    assert procs == {c: f"core {c} ({kinds[c]})" for c, _ in want}
    ops = {e["name"] for e in pipes}
    assert {"tload", "tstore"} <= ops


@pytest.mark.parametrize("name", ["softmax", "matmul", "vadd"])
def test_flow_arrows_are_matched_and_causal(name):
    s = sim_of(simulated(name))
    t = sim_trace(simulated(name))
    slices = [e for e in by_phase(t, "X") if e["cat"] == "pipe"]
    starts, ends = by_phase(t, "s"), by_phase(t, "f")
    assert len(starts) == len(ends) == len(s["flows"]) > 0
    assert sorted(e["id"] for e in starts) == sorted(e["id"] for e in ends) == \
        list(range(len(starts)))
    end_of = {e["id"]: e for e in ends}
    for st in starts:
        f = end_of[st["id"]]
        assert f["bp"] == "e" and st["cat"] == f["cat"] == "flag"
        src, dst = enclosing(slices, st), enclosing(slices, f)
        assert src is not dst
        assert src["args"]["cycles"][1] <= dst["args"]["cycles"][0]   # set before the wait


def test_flags_of_the_pro_example_are_its_sync_pairs():
    """vadd sets MTE2 -> V, V -> MTE3 and MTE3 -> MTE2 (buffers free) once per tile."""
    s = sim_of(simulated("vadd"))
    ev, pipes = s["events"], s["pipes"]
    pairs = {(pipes[ev[a][1]], pipes[ev[b][1]]) for a, b in s["flows"]}
    assert pairs == {("MTE2", "V"), ("V", "MTE3"), ("MTE3", "MTE2")}
    assert all(ev[a][0] == ev[b][0] for a, b in s["flows"])     # all within a core


def test_flags_of_tensor_mode_are_the_cross_pipe_dependences():
    """softmax: loads feed V, V feeds the store; matmul also frees its buffers (WAR)."""
    s = sim_of(simulated("softmax"))
    ev, pipes = s["events"], s["pipes"]
    assert {(pipes[ev[a][1]], pipes[ev[b][1]]) for a, b in s["flows"]} == \
        {("MTE2", "V"), ("V", "MTE3")}
    s = sim_of(simulated("matmul"))
    ev, pipes = s["events"], s["pipes"]
    pairs = {(pipes[ev[a][1]], pipes[ev[b][1]]) for a, b in s["flows"]}
    assert {("MTE2", "MTE1"), ("MTE1", "M"), ("M", "FIX"), ("M", "MTE1")} <= pairs


@pytest.mark.parametrize("name", ["softmax", "matmul", "vadd"])
def test_times_are_monotone_on_every_track(name):
    s = sim_of(simulated(name))
    t = sim_trace(simulated(name))
    per_us = s["clock_ghz"] * 1e3
    launch_us, end_us = s["launch_cycles"] / per_us, s["cycles"] / per_us
    tracks: dict = {}
    for e in by_phase(t, "X"):
        assert e["dur"] >= 0 and e["ts"] >= launch_us - 1e-9
        assert e["ts"] + e["dur"] <= end_us + 1e-9
        tracks.setdefault((e["pid"], e["tid"]), []).append(e)
    for evs in tracks.values():
        evs.sort(key=lambda e: e["ts"])
        for a, b in zip(evs, evs[1:]):
            assert a["ts"] + a["dur"] <= b["ts"] + 1e-9        # a pipe runs one at a time


def test_trace_is_deterministic():
    a = json.dumps(sim_trace(simulated("matmul")), sort_keys=True)
    doc = trace("examples/matmul.py", target="a2")
    again = pypto.run(doc, bind={"M": 200}, backend="numpy", target="a2")
    assert json.dumps(sim_trace(again), sort_keys=True) == a


def test_tables_read_the_record():
    rec = simulated("vadd")
    s = sim_of(rec)
    text = sim_tables(rec)
    assert f"simulated on a2 at 1.8 GHz: {s['us']:.3f} us ({s['cycles']} cycles" in text
    assert f"bound: {s['bound']} ({100 * s['utilisation'][s['bound']]:.1f} % busy)" in text
    rows = {ln.split()[0]: ln.split() for ln in text.splitlines() if ln.strip()}
    assert rows["busiest"][2:] == [f"{100 * s['utilisation'][p]:.1f}" for p in s["pipes"]]
    assert rows["HBM"][1] == f"{100 * s['utilisation']['HBM']:.1f}"
    span = s["cycles"] - s["launch_cycles"]
    mean_mte2 = sum(r[2] for r in s["busy"]) / len(s["busy"]) / span
    assert rows["vector"][3] == f"{100 * mean_mte2:.1f}"


def test_views_and_errors():
    sim_rec = simulated("softmax")
    assert resolve_view(sim_rec, "auto") == "sim" and resolve_view(sim_rec, "host") == "host"
    host = pypto.run(trace("examples/add.py"), backend="numpy")
    assert resolve_view(host, "auto") == "host"
    with pytest.raises(UsageError, match="no simulated run.*pypto-run --target a2"):
        profile(host, view="sim")
    with pytest.raises(UsageError, match="expected one of auto, host, sim"):
        resolve_view(sim_rec, "both")
    assert profile(sim_rec, view="host").startswith("kernel softmax: pass, numpy backend")


def test_hostile_names_are_escaped_in_the_tables():
    rec = simulated("softmax")
    rec.attrs["kernel"] = "\x1b[2J<k>"
    try:
        text = sim_tables(rec)
    finally:
        rec.attrs["kernel"] = "softmax"
    assert "\x1b" not in text and "kernel \\x1b[2J<k>: pass" in text


def test_engine_keeps_flags_between_kept_events(monkeypatch):
    """A flag is kept when both its instructions are; the cap counts what it dropped."""
    mte2, v = PIPE_INDEX["MTE2"], PIPE_INDEX["V"]
    st = Stream(0)
    st.add(mte2, 10.0, None, (), 0)
    st.add(v, 5.0, None, (0,), 1, flag=(0,))
    st.add(mte2, 10.0, None, (0,), 0)
    st.add(v, 5.0, None, (1, 2), 1, flag=(2,))
    eng = Engine(FakeCosts(), 1, 7)
    eng.start(st, 0, 0.0, lambda r: None)
    eng.run()
    span = [e[2:4] for e in eng.events]
    assert sorted((span[a], span[b]) for a, b in eng.flows) == \
        [((0.0, 10.0), (10.0, 15.0)), ((10.0, 20.0), (20.0, 25.0))]
    monkeypatch.setenv("PYPTO_MAX_SIM_EVENTS", "3")
    eng = Engine(FakeCosts(), 1, 7)
    eng.start(st, 0, 0.0, lambda r: None)
    eng.run()
    assert len(eng.events) == 3 and eng.nkept == 4      # the last to finish is not kept
    span = [e[2:4] for e in eng.events]
    assert (20.0, 25.0) not in span
    assert [(span[a], span[b]) for a, b in eng.flows] == [((0.0, 10.0), (10.0, 15.0))]


def test_op_table_accounts_for_every_kept_instruction():
    """softmax has fewer ops than the table's rows: its instruction counts add up to the
    kept events, and each pipe's shares to 100 %."""
    rec = simulated("softmax")
    s = sim_of(rec)
    lines = sim_tables(rec).splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.split()[:2] == ["op", "pipe"])
    rows = [ln.split() for ln in lines[at + 2:] if ln.strip()]
    assert sum(int(r[2]) for r in rows) == len(s["events"])
    share: dict = {}
    for r in rows:
        share[r[1]] = share.get(r[1], 0.0) + float(r[5])
    assert all(abs(v - 100.0) < 0.2 for v in share.values()) and set(share) == \
        {"MTE2", "V", "MTE3"}


def test_pro_runs_have_a_cluster_track_per_core():
    """vadd on 4 blocks: each core of a slot shows the clusters that slot ran, in order."""
    s = sim_of(simulated("vadd"))
    t = sim_trace(simulated("vadd"))
    boxes = [e for e in by_phase(t, "X") if e["cat"] == "cluster"]
    slot_cores = {slot: cores for slot, cores in s["slots"]}
    assert sorted((e["pid"], e["args"]["cluster"]) for e in boxes) == \
        sorted((core, c) for c, slot, *_ in s["clusters"] for core in slot_cores[slot])
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in by_phase(t, "M")
             if e["name"] == "thread_name"}
    assert {names[(e["pid"], e["tid"])] for e in boxes} == {"clusters"}


@pytest.mark.parametrize("name", ["softmax", "matmul", "vadd"])
def test_sim_svg_has_a_lane_per_pipe_per_core(name, tmp_path):
    import re
    rec = simulated(name)
    s = sim_of(rec)
    profile(rec, svg=str(tmp_path / "lanes.svg"))
    svg = (tmp_path / "lanes.svg").read_text()
    labels = re.findall(r'font-size="9">c(\d+) (\w+)</text>', svg)
    assert sorted((int(c), s["pipes"].index(p)) for c, p in labels) == \
        sorted({(e[0], e[1]) for e in s["events"]})
    boxes = re.findall(r"(\d+) instructions?, cycles", svg)
    assert sum(int(n) for n in boxes) == len(s["events"])      # merged boxes count them all
    assert "tload" in svg and svg.rstrip().endswith("</svg>")
    profile(rec, svg=str(tmp_path / "host.svg"), view="host")
    assert "task instances on" in (tmp_path / "host.svg").read_text()
