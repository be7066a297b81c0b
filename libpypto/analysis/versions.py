"""Bounded versions of a kernel: a named or DYNAMIC size compiled as known to fit one tile.

A row reduction over a symbolic dim H with tile t must loop over cdiv(H, t) column tiles,
and its grid ([rows, 1] plus a loop) then differs from its elementwise neighbours' ([rows,
cdiv(H, t)]), so fusion keeps them apart and every intermediate goes through GM: a softmax
over a named H runs about twice as slow as over a static one. When the document says
`1 <= H <= t` (the symbol's `max`), tensor-to-tile pins every count of tiles over H to
one (passes/grids.py), the reduction has no loop, and the chain fuses as the static one
does, while H stays a run-time size (a document bounded this way refuses a larger H:
analysis/bind.py).

Two ways in: `pypto-trace --assume H<=4096` writes the bound into the document; the JIT
(jit.Compiled) compiles the bounded version of a kernel for calls whose sizes fit the
candidates below (`tile_bounds`) and the unbounded one for any other call: run-time
versioning, two compiles at most.
"""
from __future__ import annotations

from ..errors import UsageError
from ..ir import expr as E
from ..ir.core import Document

# ops whose tiling loops over tiles of a dim they reduce or scan
_REDUCING = {"sum", "prod", "amax", "amin", "argmax", "argmin", "cumsum", "cumprod"}


def tile_bounds(doc: Document) -> dict[str, int]:
    """Symbol -> the tile size a reduction or scan over a dim of that (plain symbol) size
    uses; the smallest where several do. Static sizes never appear."""
    symbols = doc.attrs.get("symbols", {})
    out: dict[str, int] = {}
    for top in doc.body:
        for op in top.walk():
            if op.name not in _REDUCING or "tile" not in op.attrs:
                continue
            dims = op.attrs["dims"] if "dims" in op.attrs else [op.attrs["dim"]]
            shape = op.operands[0].type.shape
            for d in dims:
                s = shape[d]
                if isinstance(s, E.Expr) and s.op == "sym" and \
                        symbols.get(s.args[0], {}).get("kind") in ("named", "dynamic"):
                    name = s.args[0]
                    out[name] = min(out.get(name, op.attrs["tile"][d]), op.attrs["tile"][d])
    return out


def fits(bounds: dict[str, int], env: dict) -> bool:
    """Do the sizes env satisfy 1 <= size <= max for every bounded symbol?"""
    return all(name in env and 1 <= env[name] <= hi for name, hi in bounds.items())


def assume(doc: Document, bounds: dict[str, int]) -> Document:
    """A copy of doc whose symbols carry the given maxima (a source-level document)."""
    symbols = doc.attrs.get("symbols", {})
    new = {name: dict(info) for name, info in symbols.items()}
    for name, hi in bounds.items():
        info = new.get(name)
        if info is None:
            known = ", ".join(sorted(symbols)) or "none"
            raise UsageError(f"--assume {name}<={hi}: the kernel has no symbol {name!r} "
                             f"(symbols: {known})")
        if info.get("kind") == "static":
            raise UsageError(f"--assume {name}<={hi}: {name} is STATIC (its size is fixed "
                             f"when traced)")
        if not isinstance(hi, int) or hi < 1:
            raise UsageError(f"--assume {name}<={hi}: the bound must be a positive integer")
        info["max"] = hi
    return Document(doc.level, body=doc.body, attrs={**doc.attrs, "symbols": new},
                    producer=list(doc.producer), version=doc.version)


def parse_assumption(text: str) -> tuple[str, int]:
    """'H<=4096' -> ('H', 4096)."""
    name, sep, hi = text.partition("<=")
    name, hi = name.strip(), hi.strip()
    if not sep or not name.isidentifier() or not hi.isdigit() or int(hi) < 1:
        raise UsageError(f"--assume {text!r}: expected NAME<=N with N a positive integer, "
                         f"e.g. --assume 'H<=4096'")
    return name, int(hi)
