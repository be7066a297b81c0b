"""The work behind pypto-lower's flags: pass listing, pipeline echo, instrumented lowering."""
from __future__ import annotations

import sys


def describe_passes() -> str:
    from tabulate import tabulate

    from ..passes import PASSES
    from ..passes.pipeline import describe, pass_options
    rows = []
    for name in sorted(PASSES):
        src, dst, _ = PASSES[name]
        opts = ", ".join(f"{k}={str(default).lower() if isinstance(default, bool) else default}"
                         for k, (_, default) in pass_options(name).items())
        rows.append([name, f"{src} -> {dst}", describe(name), opts])
    return tabulate(rows, headers=["pass", "levels", "what it does", "options"], tablefmt="plain")


def input_for_pipeline(src: str):
    """The input --print-pipeline starts from: a file, piped IR, or none (the default)."""
    from . import load_doc
    if src != "-":
        return load_doc(src)
    if sys.stdin.isatty():
        return None
    data = sys.stdin.buffer.read()
    if not data:
        return None
    from ..driver import parse_ir
    return parse_ir(data, "<stdin>")


def lower_main(doc, passes, target, print_pipeline, print_after_all, print_after, verify_each,
               time_passes, stop_after):
    from ..driver import doc_target, lower
    from ..passes import PASSES
    from ..passes.pipeline import Instrument, default_pipeline, parse_pipeline
    from ..errors import UsageError
    from ..ir.core import level_index
    if stop_after is not None and stop_after not in PASSES:
        raise UsageError(f"--stop-after: unknown pass {stop_after!r} "
                         f"(known: {', '.join(sorted(PASSES))})")
    for name in print_after:
        if name not in PASSES:
            raise UsageError(f"--print-after: unknown pass {name!r}")
    if print_pipeline:
        specs = parse_pipeline(passes) if passes else default_pipeline(
            doc.level if doc is not None else "tensor", "exec")
        sys.stdout.write(",".join(str(s) for s in specs) + "\n")
        return None
    if doc is not None and level_index(doc.level) > level_index("exec"):
        lower(doc)   # raises the "past what pypto-lower makes" error
    inst = Instrument(print_after_all=print_after_all, print_after=tuple(print_after),
                      verify_each=verify_each, time_passes=time_passes, stop_after=stop_after)
    result = lower(doc, passes, target or doc_target(doc), inst)
    if time_passes:
        from tabulate import tabulate
        total = sum(t for _, t in inst.timings) or 1.0
        rows = [[n, f"{t * 1e3:.3f}", f"{100 * t / total:.1f}"] for n, t in inst.timings]
        rows.append(["total", f"{total * 1e3:.3f}", "100.0"])
        sys.stderr.write(tabulate(rows, headers=["pass", "ms", "%"], tablefmt="plain",
                                  disable_numparse=True) + "\n")
    return result
