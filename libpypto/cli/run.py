"""The work behind pypto-run: load data files, run, report, keep the record."""
from __future__ import annotations

import sys

from ..errors import MismatchError, UsageError
from . import load_doc, parse_assignments, save_doc


def report(rec) -> str:
    a = rec.body[0].attrs
    k = rec.attrs.get("kernel", "?")
    ntasks = len(a["events"])
    nprog = len({t["program"] for t in a["tasks"]})
    lines = []
    if a.get("notice"):
        lines.append(a["notice"])
    checks = "; ".join(f"{c['name']}: max abs err {c['max_abs_err']:.3g}"
                       + (f", {c['mismatches']} mismatches" if not c["ok"] else "")
                       for c in a["checks"])
    lines.append(f"{k}: {a['verdict']}" + (f" ({checks})" if checks else ""))
    comp = a.get("compile") or {}
    how = f"{a['backend']}, {a['threads']} thread{'s' if a['threads'] != 1 else ''}"
    if comp:
        how += ", compile cached" if comp.get("cached") else f", compiled in {comp['seconds']:.2f} s"
    sizes = ", ".join(f"{s}={v}" for s, v in a["bindings"].items())
    walls = a.get("walls_s") or [a["wall_s"]]
    took = f"{a['wall_s'] * 1e3:.3f} ms" if len(walls) == 1 else \
        f"{sorted(walls)[len(walls) // 2] * 1e3:.3f} ms median, {min(walls) * 1e3:.3f} ms best " \
        f"of {len(walls)}"
    lines.append(f"{ntasks} task{'s' if ntasks != 1 else ''} of {nprog} program"
                 f"{'s' if nprog != 1 else ''} in {took} ({how})"
                 + (f" [{sizes}]" if sizes else ""))
    return "".join(f"pypto-run: {ln}\n" for ln in lines)


def run_main(src, inputs, single, bind, seed, outputs, threads, backend, verify, out, text,
             repeat=1):
    from ..driver import run
    if threads is not None and threads < 1:
        raise UsageError("--threads must be at least 1")
    if repeat < 1:
        raise UsageError("--repeat must be at least 1")
    if backend not in (None, "c", "numpy"):
        raise UsageError(f"unknown backend {backend!r} (known: c, numpy)")
    from ..driver import read_arrays
    doc = load_doc(src)
    arrays = read_arrays(doc, inputs, parse_assignments(single, "--input", str))
    rec = run(doc, inputs=arrays, bind=parse_assignments(bind, "--bind"), seed=seed,
              threads=threads, backend=backend, verify=verify, outputs_path=outputs,
              repeat=repeat)
    sys.stderr.write(report(rec))
    keep = out != "-" or not sys.stdout.isatty()
    if keep:
        save_doc(rec, out, text, "pypto-run", {"backend": backend, "threads": threads})
    else:
        sys.stderr.write("pypto-run: run record not kept (stdout is a terminal); keep it with "
                         "-o run.msgpack or a pipe into pypto-prof\n")
    if rec.body[0].attrs["verdict"] == "fail":
        raise MismatchError("outputs differ from the numpy reference")
