"""fold-scale: a multiplication by a constant goes into its consumers.

`s = matmul(q, k^T) * c` followed by a softmax under `is_loop_begin` / `else` arms (flash
attention) is a kernel of its own in front of the arms: fuse never merges across a region,
so s makes a GM round trip and a pass of its own. This tensor-level rewrite takes the
multiplication `y = mul(x, c)` (a float tensor x, a scalar constant c) into its consumers:

- a max or min reduction of y inside an `if` arm below y's region (only `if` regions
  between) becomes one of x, scaled after the reduction:
  amax(c x) = c amax(x) and amin(c x) = c amin(x) for c > 0; for c < 0 the two swap
  (amax(c x) = c amin(x)). This is exact in floating point, not only within rounding:
  rounding is monotone (x <= y gives fl(c x) <= fl(c y) for c > 0), so the largest c x_i
  is c times the largest x_i, correctly rounded once either way; infinities and NaNs
  propagate the same way (c is finite and not 0);
- an elementwise consumer there (never through a loop, which would repeat the
  multiplication per iteration) gets its own `mul(x, c)` right before it, in its region:
  the product is then computed in the consumer's program (exp(c s - m) as one fused
  chain), bit for bit the same values.

Other uses (a matmul, an assemble, a reshape, consumers in y's own region, which fuse with
it anyway) keep y; y goes when nothing uses it any more. Integer tensors are left alone
(c x can wrap), as are symbolic scalars (their sign is not known) and c = 0.
"""
from __future__ import annotations

import math

from ..ir import ops as O
from ..ir.core import Document, Op, Value, copy_doc

SWAP = {"amax": "amin", "amin": "amax"}


def fold_scale(doc: Document, *, target) -> Document:
    """Fold constant scalar multiplications into reductions and branch consumers."""
    doc = copy_doc(doc)
    _Folder().region(doc.body, ())
    return doc


def _scale(op) -> float | None:
    """c for a multiplication by a nonzero finite constant of a float tensor, else None."""
    if op.name != "mul" or len(op.operands) != 1 or len(op.results) != 1:
        return None
    c = op.attrs.get("scalar")
    if isinstance(c, bool) or not isinstance(c, (int, float)) or c == 0 or \
            not math.isfinite(c):
        return None
    return float(c) if op.result.type.dtype.kind == "float" else None


class _Folder:
    """One pass over the tensor graph: regions innermost-last, ops in program order."""

    def region(self, ops: list, path: tuple) -> None:
        """Fold the multiplications defined in ops (path: the region ops above ops)."""
        i = 0
        while i < len(ops):
            op = ops[i]
            for k, r in enumerate(op.regions):
                self.region(r, path + ((op, k),))
            c = _scale(op)
            if c is not None:
                self.fold(ops, op, c, path)
            i = ops.index(op) + 1 if op in ops else i

    def fold(self, ops: list, mul: Op, c: float, path: tuple) -> None:
        y, x = mul.result, mul.operands[0]
        for region, u, under in self.uses(ops, y, path):
            if not under or any(p.name != "if" for p in under):
                continue                # y's own region (it fuses there), or in a loop
            if u.name in SWAP and u.operands == [y]:
                self.commute(region, u, x, mul, c)
            elif u.name in O.ELEMENTWISE:
                fresh = Op("mul", [x], [Value(y.type)], dict(mul.attrs), [], u.loc)
                fresh.attrs["tile"] = list(u.attrs.get("tile", mul.attrs.get("tile", [])))
                if not fresh.attrs["tile"]:
                    del fresh.attrs["tile"]
                region.insert(region.index(u), fresh)
                u.operands = [fresh.result if v is y else v for v in u.operands]
        if not any(True for _ in self.uses(ops, y, path)):
            ops.remove(mul)

    @staticmethod
    def commute(region: list, red: Op, x: Value, mul: Op, c: float) -> None:
        """red = amax(c x) -> r = amax(x) (amin for c < 0); red's value = c r."""
        out = red.result
        r = Value(out.type)
        red.name = red.name if c > 0 else SWAP[red.name]
        red.operands = [x]
        red.results = [r]
        r.owner = red
        after = Op("mul", [r], [out], {k: v for k, v in mul.attrs.items() if k != "tile"},
                   [], red.loc)
        if "tile" in red.attrs:
            after.attrs["tile"] = list(red.attrs["tile"])
        region.insert(region.index(red) + 1, after)

    def uses(self, ops: list, v: Value, path: tuple):
        """(region, op, region ops between ops and the op's region) of every use of v in ops
        after its definition, nested regions included."""
        def walk(region: list, under: tuple):
            for op in list(region):
                if v in op.operands:
                    yield region, op, under
                for r in op.regions:
                    yield from walk(r, under + (op,))
        yield from walk(ops, ())
