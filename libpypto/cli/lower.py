"""The work behind pypto-lower's flags: pass listing, pipeline echo, instrumented lowering."""
from __future__ import annotations

import sys


def input_for_pipeline(src: str):
    """The input --print-pipeline starts from: a file, piped IR, or none (the default)."""
    from ..driver import parse_ir
    from . import load_doc
    if src != "-":
        return load_doc(src)
    if sys.stdin.isatty():
        return None
    data = sys.stdin.buffer.read()
    if not data:
        return None
    from .crash import remember
    remember("ir", data)
    return parse_ir(data, "<stdin>")


def lower_main(doc, passes, target, print_pipeline, print_after_all, print_after, verify_each,
               time_passes, stop_after):
    from ..driver import instrument, lower, pipeline_text
    inst = instrument(print_after_all=print_after_all, print_after=tuple(print_after),
                      verify_each=verify_each, time_passes=time_passes, stop_after=stop_after)
    if print_pipeline:
        sys.stdout.write(pipeline_text(doc, passes) + "\n")
        return None
    result = lower(doc, passes, target, inst)
    if time_passes:
        sys.stderr.write(inst.timing_table())
    return result
