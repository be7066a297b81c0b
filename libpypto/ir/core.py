"""The graph data model shared by every level: documents of ops with values, attrs and regions.

One generic structure serves all levels (as MLIR's generic form does): an op has a name,
operand values, result values with types, a dict of plain-data attributes, nested regions and
a source location. What each level allows is the business of its verifier (verify.py);
printing, parsing and serialisation (text.py, serde.py) never need to know.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

LEVELS = ("tensor", "tile", "block", "exec", "sched", "code", "run")
FORMAT = "pypto-ir"
VERSION = (1, 1)          # 1.1: documents carry the whole target record


def level_index(level: str) -> int:
    return LEVELS.index(level)


@dataclass(frozen=True)
class Loc:
    """A source location in the user's op file (file name without directories, line)."""

    file: str
    line: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


class Value:
    """An SSA value: the result of exactly one op. Identity is object identity."""

    __slots__ = ("type", "name", "owner")

    def __init__(self, type, name: str | None = None):
        self.type = type
        self.name = name      # printed as %name when set (parameters, tensors), else numbered
        self.owner: Op | None = None

    def __repr__(self) -> str:
        return f"Value({self.name or id(self)}: {self.type})"


@dataclass(eq=False)
class Op:
    name: str
    operands: list = field(default_factory=list)
    results: list = field(default_factory=list)
    attrs: dict = field(default_factory=dict)
    regions: list = field(default_factory=list)
    loc: Loc | None = None

    def __post_init__(self):
        for r in self.results:
            r.owner = self

    @property
    def result(self) -> Value:
        assert len(self.results) == 1, f"{self.name} has {len(self.results)} results"
        return self.results[0]

    def walk(self) -> Iterator["Op"]:
        """This op, then every op nested in its regions, in program order."""
        yield self
        for region in self.regions:
            for op in region:
                yield from op.walk()


@dataclass(eq=False)
class Document:
    """One IR file: level, producer history, module attributes and the top-level ops."""

    level: str
    body: list = field(default_factory=list)
    attrs: dict = field(default_factory=dict)
    producer: list = field(default_factory=list)
    version: tuple = VERSION
    source: str | None = field(default=None, compare=False)   # where it was read from

    def walk(self) -> Iterator[Op]:
        for op in self.body:
            yield from op.walk()

    def with_producer(self, tool: str, options: dict) -> "Document":
        """Append one entry to the producer history (tools call this before writing)."""
        self.producer = self.producer + [{"tool": tool, "options": dict(options)}]
        return self


def make(name: str, operands=(), result_types=(), attrs=None, regions=None, loc=None,
         names=None) -> Op:
    """Build an op with fresh result values of the given types."""
    names = names or [None] * len(result_types)
    results = [Value(t, n) for t, n in zip(result_types, names)]
    return Op(name, list(operands), results, dict(attrs or {}), list(regions or []), loc)


def clone_ops(ops: list, vmap: dict) -> list:
    """Deep-copy a list of ops, remapping operands through vmap (extended with new results)."""
    out = []
    for op in ops:
        new_results = [Value(r.type, r.name) for r in op.results]
        for old, new in zip(op.results, new_results):
            vmap[old] = new
        new = Op(op.name, [vmap.get(v, v) for v in op.operands], new_results,
                 _copy_attr(op.attrs), [clone_ops(r, vmap) for r in op.regions], op.loc)
        out.append(new)
    return out


def _copy_attr(a):
    if isinstance(a, dict):
        return {k: _copy_attr(v) for k, v in a.items()}
    if isinstance(a, list):
        return [_copy_attr(v) for v in a]
    return a


def users(ops: list) -> dict:
    """Map each value to the ops (anywhere under ops) that use it, in program order."""
    out: dict = {}
    for top in ops:
        for op in top.walk():
            for v in op.operands:
                out.setdefault(v, []).append(op)
    return out


def copy_doc(doc: Document, level: str | None = None) -> Document:
    """A deep copy (passes are pure: they copy, then edit the copy)."""
    return Document(level or doc.level, clone_ops(doc.body, {}), _copy_attr(doc.attrs),
                    _copy_attr(doc.producer), doc.version)
