"""gm-reuse: GM workspaces and local tensors share one arena by live range.

Each `gm` op that is not a parameter (the workspaces the lowering makes for intermediates
passed between tasks, the op's local tensors) gets `arena=OFFSET`, its byte offset in one
workspace arena, and the module `arena_bytes`, the arena's size (expressions where sizes are
symbolic). Offsets are first fit in order of first use: a tensor takes the lowest offset
where it overlaps no tensor it may not share bytes with. Two tensors may share bytes when
their live ranges in program order are disjoint and every instance of every task touching
one is ordered with every instance of every task touching the other by the GM boxes the
runtime orders them by (parallel tasks are not ordered: the rules and their obligations are
in libpypto/analysis/arena.py). A tensor that may be read before it is written (its first
task does not only write it) shares nothing.

The runtimes and the simulator use the offsets only after checking the obligations for the
sizes of the run; when one fails, every tensor gets bytes of its own (runtime/executable.py).
"""
from __future__ import annotations

from ..analysis.arena import place
from ..ir.core import Document, copy_doc


def gm_reuse(doc: Document, *, target, enable: bool = True) -> Document:
    """Give workspaces and local tensors offsets in one GM arena, sharing bytes by live range.

    enable: share at all (enable=false leaves every tensor its own storage, no arena).
    """
    doc = copy_doc(doc)
    if not enable:
        return doc
    offsets, total = place(doc)
    if not offsets:
        return doc
    for op in offsets:
        op.attrs["arena"] = offsets[op]
    doc.attrs["arena_bytes"] = total
    return doc
