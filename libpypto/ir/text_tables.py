"""What the text form shows a person beside the data: tables in comment blocks.

The reader skips comments, so these blocks never change what a text file means; the data
they describe is always written in full after them (see text.py), so parse(print(doc)) is
the same document whether a table is summarised or not.

- before a `schedule` op: its instances as a table (task, instance, core, start us, end us),
  summarised (the first and last rows) unless full=True, and one line per task with its
  count of instances, cores and the range of its start and end times;
- before a `run` op: the verdict, each output by name, dtype, shape and checksum (the data
  itself is a blob at the end of the file), and the timeline events as a table (task,
  instance, core, start ns, end ns), summarised the same way.
"""
from __future__ import annotations

HEAD_ROWS = 5      # rows shown at each end of a summarised table
INSTANCE_COLS = ("task", "instance", "core", "start us", "end us")
EVENT_COLS = ("task", "instance", "core", "start ns", "end ns")

# attributes a person reads in the table above the op: printed last, wrapped (text.py)
TAIL_ATTRS = {"schedule": ("instances",), "run": ("events",)}


def comment_block(op, full: bool = False) -> list[str]:
    """The comment lines (each starting with '#') to print before op; [] for most ops."""
    if op.name == "schedule":
        return _schedule(op.attrs, full)
    if op.name == "run":
        return _run(op.attrs, full)
    return []


def clean(text) -> str:
    """Text from a file as one printable line (a comment cannot be ended or split by it)."""
    return "".join(ch if " " <= ch <= "~" else "?" for ch in str(text))


def _is_rows(rows, width: int) -> bool:
    return isinstance(rows, list) and all(isinstance(r, list) and len(r) == width and
                                          all(_is_num(x) for x in r) for r in rows)


def _is_num(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _cell(x, decimals: int) -> str:
    return f"{x:.{decimals}f}" if isinstance(x, float) else str(x)


def table(header, rows, full: bool, decimals: int = 3) -> list[str]:
    """Right-aligned columns under a header; with full=False and more than 2 * HEAD_ROWS + 1
    rows, the first and last HEAD_ROWS rows around a line saying how many are left out."""
    shown = [[_cell(x, decimals) for x in r] for r in rows]
    skipped = 0
    if not full and len(shown) > 2 * HEAD_ROWS + 1:
        skipped = len(shown) - 2 * HEAD_ROWS
        shown = shown[:HEAD_ROWS] + [None] + shown[-HEAD_ROWS:]
    widths = [max([len(h)] + [len(r[i]) for r in shown if r is not None])
              for i, h in enumerate(header)]
    out = ["  " + "  ".join(h.rjust(w) for h, w in zip(header, widths))]
    for r in shown:
        if r is None:
            out.append(f"  ... {skipped} more rows (--full shows all) ...")
        else:
            out.append("  " + "  ".join(c.rjust(w) for c, w in zip(r, widths)))
    return out


def _span(lo, hi, decimals: int) -> str:
    a, b = _cell(lo, decimals), _cell(hi, decimals)
    return a if a == b else f"{a}..{b}"


def per_task(rows, unit: str, decimals: int = 3) -> list[str]:
    """One line per task: instances, cores, and the range of start and end times."""
    tasks: dict = {}
    for r in rows:
        tasks.setdefault(r[0], []).append(r)
    out = []
    for t in sorted(tasks):
        rs = tasks[t]
        cores = sorted({r[2] for r in rs})
        span = lambda i: _span(min(r[i] for r in rs), max(r[i] for r in rs), decimals)  # noqa
        out.append(f"  task {t}: {_n(len(rs), 'instance')} on {_n(len(cores), 'core')} "
                   f"({_span(cores[0], cores[-1], 0)}), start {span(3)} {unit}, "
                   f"end {span(4)} {unit}")
    return out


def _schedule(a: dict, full: bool) -> list[str]:
    rows = a.get("instances")
    if rows is None and a.get("data_dependent"):
        return [f"# schedule: no instances (data-dependent: loop bounds and offsets come from "
                f"{', '.join(map(clean, a['data_dependent']))} at run time; pypto-run places "
                f"them)"]
    if rows is None:
        return ["# schedule: no instances (sizes not bound; --bind SYM=N places every "
                "instance on a core)"]
    if not _is_rows(rows, 5):
        return []
    cores = len({r[2] for r in rows})
    head = (f"# schedule on {clean(a.get('target', '?'))}: {_n(len(rows), 'instance')} of "
            f"{_n(len({r[0] for r in rows}), 'task')} on {_n(cores, 'core')}")
    if _is_num(a.get("makespan_us")):
        head += f", makespan {a['makespan_us']:.3f} us"
    head = [head]
    terms = [a.get(k) for k in ("lower_bound_us", "critical_path_us", "work_us", "bandwidth_us")]
    if all(_is_num(x) for x in terms):
        head.append(f"# lower bound {terms[0]:.3f} us ({clean(a.get('bound', '?'))} binds): "
                    f"critical path {terms[1]:.3f} us, work per core {terms[2]:.3f} us, "
                    f"GM bytes over HBM bandwidth {terms[3]:.3f} us")
    return head + _comment(table(INSTANCE_COLS, rows, full) + ["per task:"] +
                             per_task(rows, "us"))


def _run(a: dict, full: bool) -> list[str]:
    out = [f"# run: {clean(a.get('verdict', '?'))} on the {clean(a.get('backend', '?'))} backend"]
    if _is_num(a.get("threads")) and _is_num(a.get("wall_s")):
        out[0] += f", {_n(a['threads'], 'thread')}, {a['wall_s'] * 1e3:.3f} ms"
    outputs = a.get("outputs")
    if isinstance(outputs, list) and outputs:
        out.append("# outputs:")
        out += _comment(_outputs(outputs))
    events = a.get("events")
    if _is_rows(events, 5) and events:
        out.append(f"# events: {_n(len(events), 'task instance')} (times in ns)")
        out += _comment(table(EVENT_COLS, events, full) + per_task(events, "ns"))
    return out


def _outputs(outputs: list) -> list[str]:
    rows = []
    for o in outputs:
        if not isinstance(o, dict):
            continue
        shape = o.get("shape")
        shape = "[" + ", ".join(map(str, shape)) + "]" if isinstance(shape, list) else "?"
        data = o.get("data")
        where = f"{len(data)} bytes, at the end" if isinstance(data, bytes) else \
            f"in {o['path']}" if "path" in o else "not kept"
        rows.append([clean(o.get("name", "?")), clean(o.get("dtype", "?")), clean(shape),
                     "sha256:" + clean(o.get("sha256", "?"))[:16], clean(where)])
    header = ("name", "dtype", "shape", "checksum", "data")
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(header)]
    return ["  " + "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip()
            for r in [list(header)] + rows]


def _comment(lines: list[str]) -> list[str]:
    return ["# " + clean(ln) for ln in lines]


def _n(k: int, what: str) -> str:
    return f"{k} {what}{'s' * (k != 1)}"
