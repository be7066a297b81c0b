"""Symbol scopes: every symbol an expression names is bound where it is used.

A document's symbols (module attribute `symbols`) are bound everywhere outside programs;
a `loop` binds its variable in its region, a `read` its variable for the ops after it in
its region; a kernel or block binds its grid variables g0,
g1, ... in its body; a task's footprints see the grid variables of its grid; a program
binds only its grid variables, its own scalars and the variables of its `for` loops (it is
run with nothing else). So a file cannot make a renderer or the runtime look up a name that
does not exist, or one that means something else in generated code.
"""
from __future__ import annotations

from . import expr as E
from .types import TensorType


def free(v) -> set:
    """The symbols named anywhere in an attribute value."""
    if isinstance(v, E.Expr):
        return E.free_symbols(v)
    if isinstance(v, dict):
        return set().union(*(free(x) for x in v.values())) if v else set()
    if isinstance(v, (list, tuple)):
        return set().union(*(free(x) for x in v)) if v else set()
    return set()


def grid_vars(n: int) -> set:
    return {f"g{i}" for i in range(n)}


def check_scopes(doc, err) -> None:
    """err(message, loc) for every use of a symbol outside its scope."""
    symbols = doc.attrs.get("symbols")
    module = set(symbols) if isinstance(symbols, dict) else set()
    if doc.level == "tensor":
        _tensor(doc.body, module, err)
    elif doc.level != "run":
        _top(doc.body, module, err)


def _uses(op, what, scope: set, err) -> None:
    bad = sorted(free(what) - scope)
    if bad:
        err(f"{op.name} uses symbol {bad[0]!r}, which is not bound there", op.loc)


def _types(op, scope: set, err) -> None:
    for v in op.results:
        if isinstance(v.type, TensorType):
            _uses(op, list(v.type.shape), scope, err)


def _binds(op, var: str, scope: set, err) -> set:
    """The scope inside a loop over var: a loop may not rebind a name already bound."""
    if var in scope:
        err(f"{op.name} variable {var!r} is already bound here", op.loc)
    return scope | {var}


def _tensor(ops, scope: set, err) -> None:
    for op in ops:
        inner = _binds(op, op.attrs["var"], scope, err) if op.name == "loop" else scope
        _uses(op, {k: v for k, v in op.attrs.items() if k != "var"}, scope, err)
        _types(op, inner, err)
        for r in op.regions:
            _tensor(r, inner, err)
        if op.name == "read":          # bound for the ops after it in this region
            scope = _binds(op, op.attrs["var"], scope, err)


def _top(ops, scope: set, err) -> None:
    for op in ops:
        a = op.attrs
        if op.name == "source":
            _tensor(op.regions[0], scope, err)
        elif op.name in ("loop", "if"):
            _uses(op, {k: v for k, v in a.items() if k != "var"}, scope, err)
            inner = _binds(op, a["var"], scope, err) if op.name == "loop" else scope
            for r in op.regions:
                _top(r, inner, err)
        elif op.name == "gm":
            _types(op, scope, err)
        elif op.name == "check":
            _uses(op, a["cond"], scope, err)
        elif op.name == "read":
            _uses(op, a["index"], scope, err)
            scope = _binds(op, a["var"], scope, err)
        elif op.name in ("kernel", "block"):
            _uses(op, a["grid"], scope, err)
            _body(op.regions[0], scope | grid_vars(len(a["grid"])), err)
        elif op.name == "program":
            _body(op.regions[0], grid_vars(a["grid_rank"]) | set(a["scalars"]), err)
        elif op.name == "task":
            _uses(op, [a["grid"], a["scalars"]], scope, err)
            _uses(op, [a["reads"], a["writes"]], scope | grid_vars(len(a["grid"])), err)


def _body(ops, scope: set, err) -> None:
    for op in ops:
        if op.name == "for":
            _uses(op, [op.attrs[k] for k in ("start", "stop", "step")], scope, err)
            _body(op.regions[0], _binds(op, op.attrs["var"], scope, err), err)
            continue
        _uses(op, op.attrs, scope, err)
        _types(op, scope, err)
        for r in op.regions:        # a program's runtime if (Pro mode)
            _body(r, scope, err)
