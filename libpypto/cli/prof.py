"""The work behind pypto-prof: run an earlier level first (as pypto-run would), profile,
and put the schedule's prediction beside the measured times."""
from __future__ import annotations

import sys

from ..errors import MismatchError, UsageError
from ..prof.sim import VIEWS
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


def _nothing_to_run(trace_opts: dict, run_opts: dict) -> None:
    """The options of a run given a run record: an error (it has been run)."""
    from ..errors import UsageError
    default = {"seed": 0, "repeat": 1}
    given = [f"--{k}" for k in ("bind", "target") if trace_opts.get(k)] + \
        [{"single": "--input", "pro": "--block-dim"}.get(k, f"--{k}")
         for k, v in run_opts.items() if v != default.get(k) and v not in (None, [])]
    if given:
        raise UsageError(f"{', '.join(given)}: the input is a run record already; these "
                         f"options apply when pypto-prof runs an earlier level")


def prof_main(src, out, chrome, svg, fmt, trace_opts: dict, run_opts: dict,
              view: str = "auto") -> None:
    """Profile SRC (a run record, or any earlier level, which is run first) to OUT."""
    from ..driver import profile, schedule, simulated_target
    from ..ir.core import level_index
    from .io import write_output
    from .progress import progress
    from .run import mismatch_line, run_doc
    from .text import printable
    if view not in VIEWS:
        raise UsageError(f"--view {view!r}: expected one of {', '.join(VIEWS)}")
    with progress("pypto-prof", "compiling") as p:
        doc = load_doc(src, **trace_opts)
        predicted = None
        if doc.level != "run":
            if view == "sim" and simulated_target(trace_opts["target"]) is None:
                raise UsageError("--view sim: pypto-prof runs this input first; give it "
                                 "--target a2 (or a3, 950, a target file) to simulate it")
            if level_index(doc.level) < level_index("sched"):
                doc = schedule(doc, trace_opts["target"],
                               parse_assignments(trace_opts["bind"], "--bind"))
            rec = run_doc(doc, p, bind=trace_opts["bind"], target=trace_opts["target"],
                          verify=True, outputs=None, **run_opts)
            predicted = prediction(doc, rec)
        else:
            _nothing_to_run(trace_opts, run_opts)
            rec = doc
    text = profile(rec, chrome=chrome, svg=svg, fmt=fmt, predicted=predicted, view=view)
    write_output(out, text.encode(), binary=False)
    bad = [c for c in rec.body[0].attrs["checks"] if not c["ok"]]
    if rec is not doc and bad:
        sys.stderr.write("".join(f"pypto-prof: {printable(mismatch_line(c))}\n" for c in bad))
        raise MismatchError(f"outputs differ from the numpy reference "
                            f"({', '.join(c['name'] for c in bad)}); the profile is of that run")
