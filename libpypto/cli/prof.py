"""The work behind pypto-prof: run an earlier level first (as pypto-run would), profile,
and put the schedule's prediction beside the measured times."""
from __future__ import annotations

import sys

from ..errors import MismatchError
from . import load_doc, parse_assignments


def prediction(doc, rec) -> dict | None:
    """The makespan the schedule predicted for this run, if the document was scheduled
    for the run's sizes (every instance placed)."""
    sched = next((op for op in doc.body if op.name == "schedule"), None)
    if sched is None or sched.attrs.get("makespan_us") is None:
        return None
    ran = rec.body[0].attrs["bindings"]
    bound = sched.attrs.get("bindings") or {}
    if any(ran.get(k, v) != v for k, v in bound.items()):
        return None
    return {k: sched.attrs[k] for k in ("makespan_us", "lower_bound_us", "critical_path_us",
                                        "target") if k in sched.attrs}


def prof_main(src, out, chrome, svg, fmt, trace_opts: dict, run_opts: dict) -> None:
    """Profile SRC (a run record, or any earlier level, which is run first) to OUT."""
    from ..driver import profile, schedule
    from ..ir.core import level_index
    from .io import write_output
    from .progress import progress
    from .run import report, run_doc
    with progress("pypto-prof", "compiling") as p:
        doc = load_doc(src, **trace_opts)
        predicted = None
        if doc.level != "run":
            if level_index(doc.level) < level_index("sched"):
                doc = schedule(doc, trace_opts["target"],
                               parse_assignments(trace_opts["bind"], "--bind"))
            rec = run_doc(doc, p, bind=trace_opts["bind"], target=trace_opts["target"],
                          verify=True, outputs=None, **run_opts)
            predicted = prediction(doc, rec)
        else:
            rec = doc
    text = profile(rec, chrome=chrome, svg=svg, fmt=fmt, predicted=predicted)
    write_output(out, text.encode(), binary=False)
    a = rec.body[0].attrs
    if rec is not doc and a["verdict"] == "fail":
        sys.stderr.write("".join(ln.replace("pypto-run:", "pypto-prof:", 1)
                                 for ln in report(rec).splitlines(True)[1:2]))
        raise MismatchError("outputs differ from the numpy reference (the profile is of a "
                            "failed run)")
