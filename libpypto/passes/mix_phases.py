"""The phases of a loop body for mix-fuse: its blocks as alternating cube and vector work.

A loop body of blocks and `if` regions (flash attention: the scores on the cube, then under
is_loop_begin / else the softmax on the vector cores, the PV matmul on the cube, the
rescale and the last step's division on the vector cores) becomes a list of phases, each the
work of one core kind, consecutive phases of different kinds. A block is one phase. An `if`
is distributed over its arms' phases: arms [V, C, V] and [V, C, V, V] (merged: [V, C, V])
give three phases, each holding `if cond {then part} else {else part}`, so every phase runs
in every step, whichever arm the condition takes, and cross-core events at phase boundaries
are set and waited equally often on every path. Arms whose kinds do not line up are padded
with empty phases: [V, C] against [C, V, C] aligns as [-, V, C] against [C, V, C].
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..ir.core import Op


class NotMixable(Exception):
    """The loop's shape is not one mix-fuse handles (it stays as it is)."""


@dataclass
class Phase:
    """The work of one core kind: items are tile instructions and `if` ops whose arms hold
    items; blocks are the blocks it came from (their accesses and names)."""

    core: str
    items: list = field(default_factory=list)
    blocks: list = field(default_factory=list)


def phases(ops: list, bodies: dict) -> list:
    """The phases of a region of blocks and ifs (bodies: block -> its cleaned body)."""
    out: list = []
    for op in ops:
        if op.name == "block":
            kind = op.attrs["core"]
            if kind not in ("cube", "vector"):
                raise NotMixable(f"a {kind} block")
            got = [Phase(kind, list(bodies[op]), [op])]
        elif op.name == "if":
            a, b = _align(phases(op.regions[0], bodies), phases(op.regions[1], bodies))
            got = [Phase(pa.core, [Op("if", [], [], dict(op.attrs), [pa.items, pb.items],
                                      op.loc)], pa.blocks + pb.blocks)
                   for pa, pb in zip(a, b)]
        else:
            raise NotMixable(f"a {op.name} inside the loop")
        for p in got:
            if out and out[-1].core == p.core:
                out[-1].items += p.items
                out[-1].blocks += p.blocks
            else:
                out.append(p)
    return out


def _align(a: list, b: list) -> tuple:
    """Two alternating phase lists padded with empty phases to the same kinds."""
    if not a and not b:
        return [], []
    if not a or not b:
        full = a or b
        empty = [Phase(p.core) for p in full]
        return (full, empty) if a else (empty, full)
    if a[0].core != b[0].core:
        if len(a) >= len(b):
            b = [Phase(a[0].core)] + b
        else:
            a = [Phase(b[0].core)] + a
    while len(a) < len(b):
        a.append(Phase(b[len(a)].core))
    while len(b) < len(a):
        b.append(Phase(a[len(b)].core))
    return a, b


def accesses(items: list):
    """(gm value, "r" | "w", op) of every GM access under items."""
    for top in items:
        for op in top.walk():
            if op.name == "tload":
                yield op.operands[1], "r", op
            elif op.name == "tstore":
                yield op.operands[1], "w", op
            elif op.name in ("tgather", "tscatter"):
                raise NotMixable(f"a {op.name}")


def touched(items: list) -> tuple:
    """The GM tensors items read and write: (read set, written set)."""
    r, w = set(), set()
    for v, mode, _ in accesses(items):
        (r if mode == "r" else w).add(v)
    return r, w
