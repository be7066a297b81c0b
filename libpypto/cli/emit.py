"""The work behind pypto-emit: schedule for bound sizes first, write a part as text."""
from __future__ import annotations

from ..errors import UsageError
from . import parse_assignments


def emit_main(doc, backend: str, target, bind, listing: bool, source: bool, out: str):
    """The code-level document; None when --listing or --source wrote their part."""
    from ..driver import emit, schedule
    from ..ir.core import level_index
    binds = parse_assignments(bind, "--bind")
    if binds and doc.level == "code":
        raise UsageError("--bind: the input is emitted code already; bind sizes at "
                         "pypto-sched or pypto-run")
    if binds and level_index(doc.level) <= level_index("sched"):
        doc = schedule(doc, target, binds)
    doc = emit(doc, backend, target)
    if not (listing or source):
        return doc
    from .io import write_output
    code = next(op for op in doc.body if op.name == "code")
    part = code.attrs["listing"] if listing else code.attrs["source"]
    write_output(out, part.encode(), binary=False)
    return None
