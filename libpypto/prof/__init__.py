"""Profiles of a run record: summary tables, Chrome trace-event JSON, SVG swimlane (svg.py);
of a simulated run (`pypto-run --target`), its tables and per-pipe tracks (sim.py).

Names in a record (programs, ops, source locations, the kernel) came from a file; the tables
show their control characters escaped (a report is terminal text), the Chrome trace escapes
by construction (json), and the swimlane escapes them as XML text (svg.py).
"""
from __future__ import annotations

import json

from .names import label, shown


def profile(doc, chrome: str | None = None, svg: str | None = None, fmt: str = "simple",
            predicted: dict | None = None, view: str = "auto") -> str:
    """The report text; writes the Chrome trace and the SVG swimlane when paths are given.

    predicted: the schedule's prediction for this run ({makespan_us, lower_bound_us,
    critical_path_us, target}), shown beside the measured times; by default the record's
    own (its run op's `predicted` attribute), if it has one.
    view: host (the measured run), sim (the simulated run of `pypto-run --target`: its
    tables and per-pipe tracks, sim.py; an error for a record without one) or auto (sim
    when the record has one). The SVG swimlane draws the view's run: a lane per core (host)
    or per pipe per core (sim)."""
    from ..ir.files import atomic_write
    from .sim import resolve_view
    from .svg import swimlane_svg
    view = resolve_view(doc, view)
    predicted = predicted or doc.body[0].attrs.get("predicted")
    if view == "host":
        text = tables(doc, fmt, predicted)
        trace = chrome_trace(doc) if chrome else None
        lanes = swimlane_svg(doc) if svg else None
    else:
        text, trace, lanes = _sim_views(doc, fmt, predicted, chrome, svg)
    if chrome:
        atomic_write(chrome, json.dumps(trace, indent=1, sort_keys=True).encode())
    if svg:
        atomic_write(svg, lanes.encode())
    return text


def _sim_views(doc, fmt, predicted, chrome, svg) -> tuple:
    """The simulated run's tables, trace and swimlane. The schema checks the `sim` section's
    head only (it is open: pipes, programs, events, per-core rows), so a section a file
    made up that lacks or garbles what they read is an input error, not a crash."""
    from ..errors import InputError
    from .sim import sim_svg, sim_tables, sim_trace
    try:
        return (sim_tables(doc, fmt, predicted), sim_trace(doc) if chrome else None,
                sim_svg(doc) if svg else None)
    except (KeyError, IndexError, TypeError, ValueError, AttributeError,
            ZeroDivisionError) as e:
        raise InputError(f"the run record's simulated section (sim) is malformed "
                         f"({type(e).__name__}: {e}); run pypto-run --target again to "
                         f"make it") from None


def _per_program(events, tasks, fmt):
    from tabulate import tabulate
    per_prog: dict = {}
    for ti, _, core, s, e in events:
        prog = tasks[ti]["program"]
        p = per_prog.setdefault(prog, {"n": 0, "ns": 0, "ops": []})
        p["n"] += 1
        p["ns"] += e - s
        p["ops"] += [o for o in tasks[ti]["ops"] if o not in p["ops"]]
    rows = [[shown(prog), shown("+".join(p["ops"])), p["n"], f"{p['ns'] / 1e6:.3f}",
             f"{p['ns'] / max(1, p['n']) / 1e3:.1f}"] for prog, p in sorted(per_prog.items())]
    return tabulate(rows, headers=["program", "ops", "tasks", "total ms", "mean us"],
                    tablefmt=fmt)


def _per_label(events, tasks, fmt) -> str | None:
    """Time per set_semantic_label label (a task fused from ops of several labels counts for
    each: the label column names them joined); None when no task has a label."""
    from tabulate import tabulate
    per: dict = {}
    for ti, _, _, s, e in events:
        labels = tasks[ti].get("labels")
        if not labels:
            continue
        p = per.setdefault("+".join(labels), {"n": 0, "ns": 0})
        p["n"] += 1
        p["ns"] += e - s
    if not per:
        return None
    rows = [[shown(k), p["n"], f"{p['ns'] / 1e6:.3f}", f"{p['ns'] / max(1, p['n']) / 1e3:.1f}"]
            for k, p in sorted(per.items())]
    return tabulate(rows, headers=["label", "tasks", "total ms", "mean us"], tablefmt=fmt)


def _per_core(events, span_ns, fmt):
    from tabulate import tabulate
    busy: dict = {}
    count: dict = {}
    for _, _, core, s, e in events:
        busy[core] = busy.get(core, 0) + (e - s)
        count[core] = count.get(core, 0) + 1
    rows = [[c, count[c], f"{busy[c] / 1e6:.3f}",
             f"{100 * busy[c] / span_ns:.1f}" if span_ns else "-"] for c in sorted(busy)]
    return tabulate(rows, headers=["core", "tasks", "busy ms", "util %"], tablefmt=fmt)


def _whole_run(a, span_ns, predicted, fmt):
    from tabulate import tabulate
    wall, tasks = a["wall_s"], a["tasks"]
    nbytes = sum(t["bytes"] for t in tasks)
    flops = sum(t["flops"] for t in tasks)
    rows = [["wall time (ms)", f"{wall * 1e3:.3f}"],
            ["task span (ms)", f"{span_ns / 1e6:.3f}"]]
    if predicted:
        rows += [["predicted makespan (ms)", f"{predicted['makespan_us'] / 1e3:.3f}"],
                 ["predicted lower bound (ms)", f"{predicted['lower_bound_us'] / 1e3:.3f}"]]
    rows += [["GM traffic (MB)", f"{nbytes / 1e6:.3f}"],
             ["achieved GB/s", f"{nbytes / wall / 1e9:.2f}" if wall else "-"],
             ["achieved GFLOP/s", f"{flops / wall / 1e9:.2f}" if wall else "-"]]
    return tabulate(rows, headers=["run", "value"], tablefmt=fmt)


def tables(doc, fmt: str = "simple", predicted: dict | None = None) -> str:
    """The header line and the per-program, per-core and whole-run tables."""
    from tabulate import tabulate_formats
    if fmt not in tabulate_formats:
        from ..errors import UsageError
        raise UsageError(f"unknown table format {fmt!r} (known: {', '.join(tabulate_formats)})")
    a = doc.body[0].attrs
    events = a["events"]
    span_ns = max((e for *_, e in events), default=0) - min((s for _, _, _, s, _ in events),
                                                             default=0)
    threads = f"{a['threads']} thread{'s' if a['threads'] != 1 else ''}"
    head = (f"kernel {shown(doc.attrs.get('kernel', '?'))}: {a['verdict']}, {a['backend']} "
            f"backend, {threads}, wall {a['wall_s'] * 1e3:.3f} ms")
    if predicted:
        head += (f" (predicted {predicted['makespan_us'] / 1e3:.3f} ms on "
                 f"{shown(predicted.get('target', '?'))}, lower bound "
                 f"{predicted['lower_bound_us'] / 1e3:.3f} ms)")
    out = [head, "", _per_program(events, a["tasks"], fmt)]
    by_label = _per_label(events, a["tasks"], fmt)
    if by_label is not None:
        out += ["", by_label]
    out += ["", _per_core(events, span_ns, fmt), "", _whole_run(a, span_ns, predicted, fmt)]
    return "\n".join(out) + "\n"


def chrome_trace(doc) -> dict:
    """Trace-event JSON (opens in Perfetto): one process, one thread lane per core."""
    a = doc.body[0].attrs
    tasks = a["tasks"]
    ev = [{"ph": "M", "pid": 0, "name": "process_name",
           "args": {"name": f"pypto {doc.attrs.get('kernel', '?')} ({a['backend']})"}}]
    cores = sorted({c for _, _, c, _, _ in a["events"]})
    for c in cores:
        ev.append({"ph": "M", "pid": 0, "tid": c, "name": "thread_name",
                   "args": {"name": f"core {c}"}})
    for ti, idx, core, s, e in a["events"]:
        t = tasks[ti]
        ev.append({"ph": "X", "pid": 0, "tid": core, "name": label(t), "ts": s / 1e3,
                   "dur": (e - s) / 1e3, "cat": t["program"],
                   "args": {"task": ti, "instance": idx, "block": t.get("block", ""),
                            "loc": t.get("loc", ""), "labels": t.get("labels", [])}})
    return {"traceEvents": ev, "displayTimeUnit": "ns"}
