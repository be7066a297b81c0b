"""The simulated run of a record (`pypto-run --target a2|a3|950|FILE`): tables and tracks.

The record's run op carries `sim` (libpypto/sim): per-pipe instruction events per core in
cycles, the flags between them (`flows`), busy cycles per core and pipe, HBM and L2
traffic, the bound. From it:

- `sim_tables`: the simulated and the host-measured times side by side (and the schedule's
  prediction when known), pipe utilisation per core kind (the mean busy fraction of the
  cores of that kind that ran anything, and the busiest core, which the bound uses), HBM
  and L2 utilisation and traffic, the bound as the simulator names it, and a note when the
  record keeps only the first events ($PYPTO_MAX_SIM_EVENTS); the ops with the most busy
  time (summed over the cores; their share of their pipe's busy time);
- `sim_trace`: trace-event JSON for Perfetto: a process per core (`core 24 (vector)`), a
  thread (track) per pipe that ran anything on it, one complete event per instruction
  (named by its op, microseconds of the target's clock), a `tasks` track per core with the
  Tensor-mode task instances, or in Pro mode a `clusters` track per core with the clusters
  (blocks) its slot ran, and a flow (arrow) per flag from the setting instruction to
  the waiting one: an `s` event inside the setter's slice, an `f` event with `bp: e` inside
  the waiter's (both bind to their enclosing slice, so the arrow joins exactly those two);
- `sim_svg`: the SVG swimlane of the simulated run, a lane per pipe per core.

Fractions are of the run without the launch (cycles - launch_cycles), as the simulator's
own utilisation is.
"""
from __future__ import annotations

from ..errors import UsageError
from .names import shown

VIEWS = ("auto", "host", "sim")
KIND_ORDER = ("cube", "vector", "mixed")
TOP_OPS = 10                    # rows of the per-op table


def resolve_view(doc, view: str) -> str:
    """host or sim: `auto` is sim when the record has a simulated run."""
    if view not in VIEWS:
        raise UsageError(f"--view {view!r}: expected one of {', '.join(VIEWS)}")
    has = bool(doc.body[0].attrs.get("sim"))
    if view == "sim" and not has:
        raise UsageError("--view sim: the run record has no simulated run (it was made "
                         "without --target, or with --target host); make one with "
                         "pypto-run --target a2 (or a3, 950, a target file)")
    return "sim" if view == "sim" or (view == "auto" and has) else "host"


def _span(s: dict) -> float:
    return max(1, s["cycles"] - s["launch_cycles"])


def _pct(x: float) -> str:
    return f"{100 * x:.1f}"


def bound_line(s: dict) -> str:
    """`bound: MTE2 (72.0 % busy)`, or latency with the busiest resource."""
    u = s["utilisation"]
    if s["bound"] == "latency":
        return (f"bound: latency (no pipe or memory above half busy; the busiest is "
                f"{s['busiest']} at {_pct(u[s['busiest']])} %)")
    return f"bound: {s['bound']} ({_pct(u[s['bound']])} % busy)"


def _times(a: dict, predicted: dict | None, fmt: str) -> str:
    from tabulate import tabulate
    s = a["sim"]
    ghz = s["clock_ghz"]
    events = a["events"]
    host_span = (max((e for *_, e in events), default=0) -
                 min((e[3] for e in events), default=0)) / 1e3
    sim_span = _span(s) / ghz / 1e3
    runs = s.get("tasks", s.get("clusters", []))
    threads = f"{a['threads']} thread{'s' if a['threads'] != 1 else ''}"
    head = ["time (us)", f"host ({a['backend']}, {threads})",
            f"simulated ({shown(s['target'])})", "host / simulated"]
    rows = [["run (wall; launch included)", a["wall_s"] * 1e6, s["us"]],
            ["task span (launch excluded)", host_span, sim_span]]
    out = [[r[0], f"{r[1]:.3f}", f"{r[2]:.3f}", f"{r[1] / r[2]:.2f}" if r[2] else "-"]
           for r in rows]
    out.append(["task instances (clusters)", str(len(events)), str(len(runs)), ""])
    if predicted:
        head.append(f"predicted ({shown(predicted.get('target', '?'))})")
        out[0].append(f"{predicted['makespan_us']:.3f}")
        out[1].append(f"{predicted['lower_bound_us']:.3f} (lower bound)")
        out[2].append("")
    return tabulate(out, headers=head, tablefmt=fmt, disable_numparse=True,
                    colalign=("left",) + ("right",) * (len(head) - 1))


def _pipes(s: dict, fmt: str) -> str:
    from tabulate import tabulate
    span, pipes = _span(s), s["pipes"]
    per: dict = {}
    for row in s["busy"]:
        per.setdefault(row[1], []).append(row[2:])
    rows = []
    for kind in sorted(per, key=lambda k: (KIND_ORDER.index(k) if k in KIND_ORDER else 9, k)):
        cores = per[kind]
        rows.append([f"{shown(kind)} (mean)", len(cores)] +
                    [_pct(sum(c[i] for c in cores) / len(cores) / span)
                     for i in range(len(pipes))])
    rows.append(["busiest core", ""] + [_pct(s["utilisation"][p]) for p in pipes])
    return tabulate(rows, headers=["pipe busy %", "cores"] + list(pipes), tablefmt=fmt,
                    disable_numparse=True, colalign=("left",) + ("right",) * (len(pipes) + 1))


def _memory(s: dict, fmt: str) -> str:
    from tabulate import tabulate
    u = s["utilisation"]
    rd, wr = s["hbm_bytes"]
    rows = [["HBM", _pct(u["HBM"]), f"{rd / 1e6:.3f}", f"{wr / 1e6:.3f}"],
            ["L2", _pct(u["L2"]), f"{s['l2_hit_bytes'] / 1e6:.3f} (hits)",
             f"{s.get('l2_write_bytes', 0) / 1e6:.3f}"]]
    return tabulate(rows, headers=["memory", "busy %", "read MB", "written MB"],
                    tablefmt=fmt, disable_numparse=True, colalign=("left",) + ("right",) * 3)


def _ops(s: dict, fmt: str, top: int = TOP_OPS) -> str:
    """The ops with the most busy time: instructions, busy time summed over the cores, mean
    cycles, and their share of their pipe's busy time (of the kept events)."""
    from tabulate import tabulate
    progs, pipes, per_us = s["programs"], s["pipes"], s["clock_ghz"] * 1e3
    per: dict = {}
    pipe_busy = [0] * len(pipes)
    for c, p, t0, t1, g, o in s["events"]:
        ops = progs[g][1] if g < len(progs) else []
        key = (ops[o] if o < len(ops) else "?", p)
        n, cyc = per.get(key, (0, 0))
        per[key] = (n + 1, cyc + t1 - t0)
        pipe_busy[p] += t1 - t0
    ranked = sorted(per.items(), key=lambda kv: (-kv[1][1], kv[0]))[:top]
    rows = [[shown(op), pipes[p], n, f"{cyc / per_us:.3f}", f"{cyc / n:.0f}",
             _pct(cyc / pipe_busy[p]) if pipe_busy[p] else "-"]
            for (op, p), (n, cyc) in ranked]
    return tabulate(rows, headers=["op", "pipe", "instructions", "busy us", "mean cycles",
                                   "% of pipe"], tablefmt=fmt, disable_numparse=True,
                    colalign=("left", "left") + ("right",) * 4)


def _notes(s: dict) -> list:
    kept, dropped = len(s["events"]), s.get("events_dropped", 0)
    out = []
    if dropped:
        out.append(f"note: the record keeps the first {kept} of {kept + dropped} pipe "
                   f"events (raise $PYPTO_MAX_SIM_EVENTS for more); the trace shows those "
                   f"and the flags between them")
    if s.get("flows") is None:
        out.append("note: the record has no flags (made before pypto-prof drew them)")
    return out


def sim_tables(doc, fmt: str = "simple", predicted: dict | None = None) -> str:
    """The header line and the simulated run's tables (times, pipes, memory), the bound."""
    a = doc.body[0].attrs
    s = a["sim"]
    head = (f"kernel {shown(doc.attrs.get('kernel', '?'))}: {a['verdict']}, simulated on "
            f"{shown(s['target'])} at {s['clock_ghz']:g} GHz: {s['us']:.3f} us "
            f"({s['cycles']} cycles, launch {s['launch_cycles']} cycles included)")
    out = [head, bound_line(s), "", _times(a, predicted, fmt), "", _pipes(s, fmt), "",
           _memory(s, fmt), "", _ops(s, fmt)]
    notes = _notes(s)
    if notes:
        out += [""] + notes
    return "\n".join(out) + "\n"


def _meta(s: dict) -> list:
    kinds = {row[0]: row[1] for row in s["busy"]}
    pipes = s["pipes"]
    ev = []
    for c in sorted({e[0] for e in s["events"]} | {t[2] for t in s.get("tasks", [])}):
        ev.append({"ph": "M", "pid": c, "name": "process_name",
                   "args": {"name": f"core {c} ({kinds.get(c, '?')})"}})
        ev.append({"ph": "M", "pid": c, "name": "process_sort_index", "args": {"sort_index": c}})
    for c, p in sorted({(e[0], e[1]) for e in s["events"]}):
        ev.append({"ph": "M", "pid": c, "tid": p, "name": "thread_name",
                   "args": {"name": pipes[p]}})
        ev.append({"ph": "M", "pid": c, "tid": p, "name": "thread_sort_index",
                   "args": {"sort_index": p}})
    for c in sorted({t[2] for t in s.get("tasks", [])}):
        ev.append({"ph": "M", "pid": c, "tid": len(pipes), "name": "thread_name",
                   "args": {"name": "tasks"}})
    for c in sorted(_slot_of(s)):
        ev.append({"ph": "M", "pid": c, "tid": len(pipes), "name": "thread_name",
                   "args": {"name": "clusters"}})
    return ev


def _slot_of(s: dict) -> dict:
    """Pro runs: core -> the cluster slot it belongs to (the record's `slots`)."""
    return {c: slot for slot, cores in s.get("slots", []) for c in cores}


def sim_trace(doc) -> dict:
    """Trace-event JSON of the simulated run: a process per core, a track per pipe, an
    arrow per flag (module docstring)."""
    s = doc.body[0].attrs["sim"]
    per_us = s["clock_ghz"] * 1e3                   # cycles per microsecond
    progs, pipes, events = s["programs"], s["pipes"], s["events"]
    ev = _meta(s)
    for c, p, t0, t1, g, o in events:
        name, ops = progs[g] if g < len(progs) else ("?", [])
        ev.append({"ph": "X", "pid": c, "tid": p, "cat": "pipe",
                   "name": ops[o] if o < len(ops) else "?", "ts": t0 / per_us,
                   "dur": (t1 - t0) / per_us,
                   "args": {"program": name, "op": o, "cycles": [t0, t1]}})
    for task, inst, core, t0, t1 in s.get("tasks", []):
        ev.append({"ph": "X", "pid": core, "tid": len(pipes), "cat": "task",
                   "name": f"task {task}", "ts": t0 / per_us, "dur": (t1 - t0) / per_us,
                   "args": {"task": task, "instance": inst, "cycles": [t0, t1]}})
    slot_of = _slot_of(s)
    for core in sorted(slot_of):
        for c, slot, t0, t1 in s.get("clusters", []):
            if slot == slot_of[core]:
                ev.append({"ph": "X", "pid": core, "tid": len(pipes), "cat": "cluster",
                           "name": f"cluster {c}", "ts": t0 / per_us,
                           "dur": (t1 - t0) / per_us,
                           "args": {"cluster": c, "slot": slot, "cycles": [t0, t1]}})
    for k, (a, b) in enumerate(s.get("flows", [])):
        src, dst = events[a], events[b]
        ev.append({"ph": "s", "id": k, "pid": src[0], "tid": src[1], "cat": "flag",
                   "name": "flag", "ts": (src[2] + src[3]) / 2 / per_us})
        ev.append({"ph": "f", "bp": "e", "id": k, "pid": dst[0], "tid": dst[1], "cat": "flag",
                   "name": "flag", "ts": (dst[2] + dst[3]) / 2 / per_us})
    return {"traceEvents": ev, "displayTimeUnit": "ns",
            "otherData": {"kernel": doc.attrs.get("kernel", "?"), "target": s["target"],
                          "us": s["us"], "cycles": s["cycles"], "bound": bound_line(s)}}


SVG_COLOURS = 9                 # ops with a colour of their own; the rest grey
OTHERS = "#bab0ac"


def sim_svg(doc, width: int = 1000, lane: int = 12) -> str:
    """The simulated run as an SVG swimlane: a lane per pipe per core that ran anything
    (cores in id order, a rule between cores), a box per instruction of the kept events,
    coloured by op (the SVG_COLOURS ops with the most busy time; the others grey);
    instructions less than a pixel apart on a lane are drawn as one box, coloured by the
    op with the most cycles in it, its tooltip counting them. A time axis in the target's
    time, a legend of the ops. Names are XML-escaped (svg.py)."""
    from .svg import COLORS, LEFT, RIGHT, TOP, _axis, _legend, xml
    s = doc.body[0].attrs["sim"]
    ghz, pipes, events = s["clock_ghz"], s["pipes"], s["events"]
    op_of = _op_names(s)
    busy: dict = {}
    for e in events:
        busy[op_of(e)] = busy.get(op_of(e), 0) + e[3] - e[2]
    ranked = sorted(busy, key=lambda k: (-busy[k], k))
    colour = {k: COLORS[i] if i < SVG_COLOURS else OTHERS for i, k in enumerate(ranked)}
    lanes = sorted({(e[0], e[1]) for e in events})
    row = {k: i for i, k in enumerate(lanes)}
    lo = min((e[2] for e in events), default=s["launch_cycles"])
    span = max(1, max((e[3] for e in events), default=lo + 1) - lo)
    scale = (width - LEFT - RIGHT) / span                    # px per cycle
    body = [f'<text x="4" y="16">kernel {xml(doc.attrs.get("kernel", "?"))} simulated on '
            f'{xml(s["target"])}: {s["us"]:.3f} us, {len(events)} instructions on '
            f'{len({c for c, _ in lanes})} cores; {xml(bound_line(s))}</text>']
    for (c, p), i in row.items():
        y = TOP + i * lane
        body.append(f'<text x="4" y="{y + lane * 0.8:.1f}" font-size="9">c{c} {pipes[p]}</text>')
        if i and lanes[i - 1][0] != c:
            body.append(f'<line x1="0" y1="{y}" x2="{width - RIGHT}" y2="{y}" stroke="#ccc"/>')
    for (c, p), t0, t1, n, ops in _merged(events, scale, op_of):
        top = max(ops, key=lambda k: (ops[k], k))
        tip = (f"core {c} {pipes[p]}: {', '.join(sorted(ops))}; {n} instruction"
               f"{'s' if n != 1 else ''}, cycles {t0}-{t1} ({(t1 - t0) / ghz / 1e3:.3f} us)")
        body.append(f'<rect x="{LEFT + (t0 - lo) * scale:.2f}" y="{TOP + row[(c, p)] * lane + 1}" '
                    f'width="{max(0.5, (t1 - t0) * scale):.2f}" height="{lane - 2}" '
                    f'fill="{colour[top]}"><title>{xml(tip)}</title></rect>')
    axis_y = TOP + lane * len(lanes) + 4
    body += _axis(axis_y, lo / ghz, span / ghz, scale * ghz, width)
    keys = ranked[:SVG_COLOURS] + (["others"] if len(ranked) > SVG_COLOURS else [])
    legend, bottom = _legend(keys, {k: k for k in keys}, {**colour, "others": OTHERS},
                             axis_y + 40, width)
    return "\n".join([f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" '
                      f'height="{int(bottom + 12)}" font-family="monospace" font-size="11">',
                      *body, *legend, "</svg>"]) + "\n"


def _op_names(s: dict):
    """A function giving the op name of an event of the record s."""
    names = [list(ops) for _, ops in s["programs"]]

    def op_of(e) -> str:
        g, o = e[4], e[5]
        return names[g][o] if g < len(names) and o < len(names[g]) else "?"
    return op_of


def _merged(events: list, scale: float, op_of) -> list:
    """Per lane, runs of instructions less than a pixel apart: ((core, pipe), start, end,
    count, {op: busy cycles})."""
    out: list = []
    for e in sorted(events):
        c, p, t0, t1 = e[:4]
        cur = out[-1] if out else None
        if cur is not None and cur[0] == (c, p) and (t0 - cur[2]) * scale < 1.0:
            cur[2] = max(cur[2], t1)
            cur[3] += 1
            cur[4][op_of(e)] = cur[4].get(op_of(e), 0) + t1 - t0
        else:
            out.append([(c, p), t0, t1, 1, {op_of(e): t1 - t0}])
    return out
