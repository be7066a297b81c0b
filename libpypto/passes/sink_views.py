"""sink-views: a view of an elementwise result becomes the op on views of its operands.

`xf = cast(x)` read only through `xf[..., 0:32]` and `xf[..., 32:64]` (rope's halves) is a
kernel over xf's tiles, while its readers are kernels over the halves' tiles: a grid of
another shape, so fuse cannot merge them and xf makes a GM round trip (4 bytes written and
read again per element, for an op that reads 2). This tensor-level rewrite moves each view
onto the operands of the op it views:

    view(op(a, b), offsets, shape) -> op(view(a, ...), view(b, ...))

with the op's attributes, so the halves are computed by kernels of the halves' own grid,
which fuse with their readers. A broadcast operand's dim of 1 is viewed whole (offset 0,
size 1), a lower-rank operand right-aligned, as the op broadcasts them; an operand the view
would take whole is used as it is. The views of the operands are rewritten in turn when they
view elementwise results too, so a chain of elementwise ops ending in views moves whole.

Elementwise ops commute with taking a part of their result, so every value is bit for bit
the same. The rewrite is made only where every use of the op's result is such a view in the
op's own region (a view with a valid extent of its own, of a tail, is left alone): the op
then goes, and no element is computed that was not computed before, unless two views
overlap. A view under a loop or a branch of the op's region is left alone too: moving the
op there would repeat it per iteration.
"""
from __future__ import annotations

from collections import defaultdict

from ..ir import expr as E
from ..ir.core import Document, Op, Value, copy_doc
from ..ir.ops import is_elementwise
from ..ir.types import TensorType


def sink_views(doc: Document, *, target, enable: bool = True) -> Document:
    """Move views of elementwise results onto the ops' operands (recomputed per part)."""
    doc = copy_doc(doc)
    if enable:
        uses: dict = defaultdict(list)
        for op in doc.walk():
            for v in op.operands:
                uses[v].append(op)
        _region(doc.body, uses)
    return doc


def _region(ops: list, uses: dict) -> None:
    """Sink the views of ops (one region; nested regions each on their own)."""
    for op in ops:
        for r in op.regions:
            _region(r, uses)
    here = {id(op) for op in ops}
    work = [op for op in ops if op.name == "view"]
    while work:
        view = work.pop()
        src = view.operands[0].owner
        if not _sinkable(src, uses, here):
            continue
        for v in list(uses[src.result]):
            made = _sink(ops, v, src, uses)
            here.update(id(m) for m in made)
            work.extend(m for m in made if m.name == "view")
        ops.remove(src)
        for v in src.operands:
            uses[v].remove(src)
        here.discard(id(src))


def _sinkable(src, uses: dict, here: set) -> bool:
    """Is src an elementwise op of this region whose every use is a view here (no valid)?"""
    if src is None or id(src) not in here or not is_elementwise(src.name) or src.regions \
            or len(src.results) != 1:
        return False
    readers = uses[src.result]
    return bool(readers) and all(u.name == "view" and "valid" not in u.attrs
                                 and id(u) in here for u in readers)


def _sink(ops: list, view: Op, src: Op, uses: dict) -> list:
    """Replace view (of src's result) by src's op on views of src's operands; returns the
    ops made, in program order."""
    offs, shape = view.attrs["offsets"], view.attrs["shape"]
    out = src.result.type.shape
    made, operands = [], []
    for a in src.operands:
        at = a.type
        skip = len(out) - at.rank
        o = [0 if _broadcast(at.shape[k], out[k + skip]) else offs[k + skip]
             for k in range(at.rank)]
        s = [1 if _broadcast(at.shape[k], out[k + skip]) else shape[k + skip]
             for k in range(at.rank)]
        if all(x == 0 for x in o) and all(E.sub(x, y) == 0 for x, y in zip(s, at.shape)):
            operands.append(a)                       # the view takes it whole
            continue
        part = Op("view", [a], [Value(TensorType(at.dtype, tuple(s)))],
                  {"offsets": o, "shape": s}, [], view.loc)
        made.append(part)
        operands.append(part.result)
    attrs = dict(src.attrs)
    if "tile" in attrs:          # a tile no bigger than the part where the part is static
        attrs["tile"] = [min(t, d) if isinstance(d, int) else t
                         for t, d in zip(attrs["tile"], shape)]
    op = Op(src.name, operands, [view.result], attrs, [], src.loc)
    made.append(op)
    at = ops.index(view)
    ops[at:at + 1] = made
    uses[src.result].remove(view)
    for m in made:
        for v in m.operands:
            uses[v].append(m)
    return made


def _broadcast(size, out) -> bool:
    return size == 1 and out != 1
