"""Code generation: PTO listing plus program source (C or numpy) for a scheduled graph."""
from __future__ import annotations

from ..ir.core import Document, Op, copy_doc


def emit(doc: Document, backend: str = "c") -> Document:
    """A code-level document: the sched document plus a `code` op with listing and source."""
    from . import c, numpy_backend, pro_c, pto
    out = copy_doc(doc, "code")
    programs = [op for op in out.body if op.name == "program"]
    render = c.render if backend == "c" else numpy_backend.render
    if "pro" in doc.attrs and backend == "c":       # a Pro kernel: its own C (pro_c.py)
        render = pro_c.render
    attrs = {"backend": backend, "listing": pto.listing(programs, out),
             "source": render(out, programs)}
    out.body.append(Op("code", [], [], attrs, [], None))
    return out
