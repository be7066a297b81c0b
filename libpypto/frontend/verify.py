"""The reference's graph-building and precision-debugging calls that are not ops:
pypto.function, pypto.frontend.function, pass_verify_print, pass_verify_save and
set_verify_golden_data.

function(name, *tensors) -- the reference's way to build a graph outside a kernel. In pypto
every graph is a @pypto.jit kernel's, so inside a kernel `with pypto.function(...)` traces
its body as part of the kernel (name and tensors are checked, nothing else changes), and
outside one it is an error saying to write a kernel.

frontend.function -- a reusable sub-function, called from kernels: called while a kernel
traces, it runs (its ops are traced inline, as the reference inlines it), with the page's
rules: positional arguments only, all of them, no recursion.

pass_verify_print(*values, cond=1), pass_verify_save(tensor, fname, cond=1, **names) --
probes (tensor op `probe`) that pypto's pass verify acts on: when `pypto-run --check-levels`
(or `--dump-tensors DIR`) interprets the tensor graph, a print probe writes its values to
stderr (tensors as numpy prints them, scalars and symbolic values evaluated) and a save probe
writes DIR/<fname>.npy (`$NAME` in fname replaced by names[NAME]; only letters, digits, `_`,
`-` and `.` reach the file name), each time its cond holds (a loop runs it per iteration).
The lowered program ignores them, so a JIT call does not print or save: one warning per
line says so. The reference's enable_pass_verify (verify_options) is pypto's --check-levels.

set_verify_golden_data(in_out_tensors=None, goldens=None) -- golden outputs (by parameter
position; None skips one) that pypto's pass verify (libpypto.driver.check_levels, in the same
process) compares with the tensor-level result, after the level table's first row.
"""
from __future__ import annotations

import functools
import re

from ..errors import CompileError
from ..ir import expr as E
from .tensor import SymScalar, TraceTensor, _current, builder, scalar_expr, unsupported

_GOLDEN: dict = {}
NAME_CHARS = re.compile(r"[^A-Za-z0-9_.\-]")


class function:  # noqa: N801 -- the reference's name
    """`with pypto.function(name, *tensors):` inside a kernel (see the module docstring)."""

    def __init__(self, name: str, *args, **_kwargs):
        if not _current:
            raise CompileError(f"pypto.function({name!r}, ...) builds a graph outside a kernel, "
                               f"which pypto does not do: write the body as a @pypto.jit "
                               f"kernel with the tensors as its parameters")
        b = builder()
        if not isinstance(name, str):
            raise b.error(f"pypto.function takes a name, not {type(name).__name__}")
        for a in args:
            if not isinstance(a, TraceTensor):
                raise b.error(f"pypto.function({name!r}, ...): {type(a).__name__} is not a "
                              f"tensor of the kernel")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _frontend_function(fn):
    """@pypto.frontend.function: a sub-function traced inline when a kernel calls it."""
    active: list = []

    @functools.wraps(fn)
    def call(*args, **kwargs):
        if not _current:
            raise CompileError(f"{fn.__name__} is a pypto.frontend.function: call it from a "
                               f"@pypto.jit kernel")
        b = builder()
        if kwargs:
            raise b.error(f"{fn.__name__}: a frontend.function takes its arguments by position "
                          f"only (the reference's rule), not {', '.join(sorted(kwargs))}=")
        if active:
            raise b.error(f"{fn.__name__}: a frontend.function cannot call itself")
        active.append(True)
        try:
            return fn(*args)
        finally:
            active.pop()
    call._pypto_function = True
    return call


def _cond(b, cond, what: str):
    e = scalar_expr(cond)
    if e is None:
        raise b.error(f"{what}: cond must be 0, 1 or a symbolic condition, not {cond!r}")
    return b.norm(e)


def _probe(b, kind: str, tensors: list, attrs: dict):
    from .. import errors
    from . import tensor
    loc = b.loc()
    msg = (f"pass_verify_{kind} acts when pypto's pass verify interprets the tensor graph "
           f"(pypto-run --check-levels or --dump-tensors DIR); a JIT call does not "
           f"{kind} anything")
    if (msg, str(loc)) not in tensor._WARNED:
        tensor._WARNED.add((msg, str(loc)))
        errors.warn(msg, loc)
    b.emit("probe", [t.value for t in tensors], [], {"kind": kind, **attrs})


def pass_verify_print(*values, cond=1) -> None:
    """Print values (tensors, scalars, anything else as its str) when cond holds, during
    pypto's pass verify."""
    b = builder()
    texts, exprs, order, tensors = [], [], [], []
    for v in values:
        if isinstance(v, TraceTensor):
            order.append(["tensor", len(tensors)])
            tensors.append(v)
        elif isinstance(v, SymScalar) or (isinstance(v, int) and not isinstance(v, bool)):
            order.append(["expr", len(exprs)])
            exprs.append(b.norm(scalar_expr(v)))
        else:
            order.append(["text", len(texts)])
            texts.append(str(v)[:200])
    _probe(b, "print", tensors, {"texts": texts, "exprs": exprs, "order": order,
                                 "cond": _cond(b, cond, "pass_verify_print")})


def pass_verify_save(tensor, fname, cond=1, **names) -> None:
    """Save tensor as <fname>.npy under --dump-tensors DIR when cond holds."""
    b = builder()
    if not isinstance(tensor, TraceTensor):
        raise b.error("pass_verify_save saves a tensor")
    template = fname[:120] if isinstance(fname, str) else "$fname"
    if not isinstance(fname, str):
        names = {**names, "fname": fname}
    subst = {}
    for key, v in names.items():
        e = scalar_expr(v)
        if e is None:
            raise b.error(f"pass_verify_save: {key}= must be an int or a symbolic scalar")
        if not key.isidentifier():
            raise b.error(f"pass_verify_save: bad name {key!r}")
        subst[key] = b.norm(e)
    _probe(b, "save", [tensor], {"texts": [template],
                                 "exprs": [subst[k] for k in sorted(subst)],
                                 "order": [["name", i] for i, _ in enumerate(sorted(subst))],
                                 "names": sorted(subst),
                                 "cond": _cond(b, cond, "pass_verify_save")})


def _save_name(op, env) -> str:
    """A save probe's file name for these sizes: $NAME replaced, only safe characters."""
    name = op.attrs["texts"][0]
    for key, e in zip(op.attrs.get("names", []), op.attrs["exprs"]):
        name = name.replace(f"${key}", str(int(E.evaluate(e, env))))
    name = NAME_CHARS.sub("_", name.replace("$", "_"))
    return name.lstrip(".") or "probe"


def set_verify_golden_data(in_out_tensors=None, goldens=None) -> None:
    """Goldens by parameter position for pypto's pass verify (driver.check_levels)."""
    import numpy as np
    _GOLDEN.clear()
    if goldens is None:
        return
    if not isinstance(goldens, (list, tuple)):
        raise TypeError("set_verify_golden_data: goldens is a list (None where nothing is "
                        "compared)")
    _GOLDEN.update({i: np.asarray(g.detach() if hasattr(g, "detach") else g)
                    for i, g in enumerate(goldens) if g is not None})
    if in_out_tensors is not None:
        unsupported("set_verify_golden_data(in_out_tensors=)",
                    "pypto's pass verify takes the run's inputs from pypto-run or check_levels")


def _golden_data() -> dict:
    """Parameter position -> golden array, as set_verify_golden_data recorded them."""
    return dict(_GOLDEN)
