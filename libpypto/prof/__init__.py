"""Profiles of a run record: summary tables, Chrome trace-event JSON, SVG swimlane."""
from __future__ import annotations

import json


def profile(doc, chrome: str | None = None, svg: str | None = None, fmt: str = "simple") -> str:
    """The report text; writes the Chrome trace and the SVG swimlane when paths are given."""
    from ..ir.files import atomic_write
    text = tables(doc, fmt)
    if chrome:
        atomic_write(chrome, json.dumps(chrome_trace(doc), indent=1, sort_keys=True).encode())
    if svg:
        atomic_write(svg, swimlane_svg(doc).encode())
    return text


def _label(task: dict) -> str:
    return f"{task['program']} ({'+'.join(task['ops'])})" if task.get("ops") else task["program"]


def tables(doc, fmt: str = "simple") -> str:
    from tabulate import tabulate, tabulate_formats
    if fmt not in tabulate_formats:
        from ..errors import UsageError
        raise UsageError(f"unknown table format {fmt!r} (known: {', '.join(tabulate_formats)})")
    a = doc.body[0].attrs
    events, tasks = a["events"], a["tasks"]
    wall = a["wall_s"]
    per_prog: dict = {}
    for ti, _, core, s, e in events:
        prog = tasks[ti]["program"]
        p = per_prog.setdefault(prog, {"n": 0, "ns": 0, "ops": []})
        p["n"] += 1
        p["ns"] += e - s
        p["ops"] += [o for o in tasks[ti]["ops"] if o not in p["ops"]]
    rows = [[prog, "+".join(p["ops"]), p["n"], f"{p['ns'] / 1e6:.3f}",
             f"{p['ns'] / max(1, p['n']) / 1e3:.1f}"] for prog, p in sorted(per_prog.items())]
    threads = f"{a['threads']} thread{'s' if a['threads'] != 1 else ''}"
    out = [f"kernel {doc.attrs.get('kernel', '?')}: {a['verdict']}, {a['backend']} backend, "
           f"{threads}, wall {wall * 1e3:.3f} ms", "",
           tabulate(rows, headers=["program", "ops", "tasks", "total ms", "mean us"],
                    tablefmt=fmt)]
    span_ns = max((e for *_, e in events), default=0) - min((s for _, _, _, s, _ in events),
                                                             default=0)
    busy: dict = {}
    count: dict = {}
    for _, _, core, s, e in events:
        busy[core] = busy.get(core, 0) + (e - s)
        count[core] = count.get(core, 0) + 1
    crows = [[c, count[c], f"{busy[c] / 1e6:.3f}",
              f"{100 * busy[c] / span_ns:.1f}" if span_ns else "-"] for c in sorted(busy)]
    out += ["", tabulate(crows, headers=["core", "tasks", "busy ms", "util %"], tablefmt=fmt)]
    nbytes = sum(t["bytes"] for t in tasks)
    flops = sum(t["flops"] for t in tasks)
    out += ["", tabulate([["wall time (ms)", f"{wall * 1e3:.3f}"],
                          ["task span (ms)", f"{span_ns / 1e6:.3f}"],
                          ["GM traffic (MB)", f"{nbytes / 1e6:.3f}"],
                          ["achieved GB/s", f"{nbytes / wall / 1e9:.2f}" if wall else "-"],
                          ["achieved GFLOP/s", f"{flops / wall / 1e9:.2f}" if wall else "-"]],
                         headers=["run", "value"], tablefmt=fmt)]
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
        ev.append({"ph": "X", "pid": 0, "tid": core, "name": _label(t), "ts": s / 1e3,
                   "dur": (e - s) / 1e3, "cat": t["program"],
                   "args": {"task": ti, "instance": idx, "block": t.get("block", ""),
                            "loc": t.get("loc", "")}})
    return {"traceEvents": ev, "displayTimeUnit": "ns"}


_COLORS = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1",
           "#ff9da7", "#9c755f", "#bab0ac"]


def swimlane_svg(doc, width: int = 1000, lane: int = 24) -> str:
    a = doc.body[0].attrs
    events, tasks = a["events"], a["tasks"]
    cores = sorted({c for _, _, c, _, _ in events}) or [0]
    t0 = min((s for _, _, _, s, _ in events), default=0)
    t1 = max((e for *_, e in events), default=1)
    scale = (width - 80) / max(1, t1 - t0)
    progs = sorted({t["program"] for t in tasks})
    color = {p: _COLORS[i % len(_COLORS)] for i, p in enumerate(progs)}
    h = lane * len(cores) + 40
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{h}" '
             f'font-family="monospace" font-size="11">',
             f'<text x="4" y="{h - 8}">0 .. {(t1 - t0) / 1e6:.3f} ms</text>']
    for row, c in enumerate(cores):
        y = 10 + row * lane
        parts.append(f'<text x="4" y="{y + lane * 0.65:.1f}">core {c}</text>')
    for ti, idx, core, s, e in events:
        y = 10 + cores.index(core) * lane
        x = 70 + (s - t0) * scale
        w = max(0.5, (e - s) * scale)
        t = tasks[ti]
        parts.append(f'<rect x="{x:.2f}" y="{y + 2}" width="{w:.2f}" height="{lane - 4}" '
                     f'fill="{color[t["program"]]}"><title>{_label(t)} #{idx}: '
                     f'{(e - s) / 1e3:.1f} us</title></rect>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"
