"""Kernel parameters and the binding of symbolic sizes: the one place sizes are decided.

A size comes, in order of precedence, from `--bind SYM=N` (explicit), from an array given
for a parameter whose shape holds the symbol, from the bindings a schedule was made with,
or from a STATIC dim's traced value; named symbols that must agree are checked.
"""
from __future__ import annotations

from ..errors import UsageError
from ..ir import expr as E
from ..ir.types import TensorType


def source_ops(doc) -> list:
    """The tensor graph of a document (the `source` region below the tensor level)."""
    for op in doc.body:
        if op.name == "source":
            return op.regions[0]
    return doc.body


def check_array(kernel: str, name: str, arr, dtype, rank: int) -> None:
    """A call's array for parameter `name` has the declared dtype and number of dims."""
    if arr.dtype != dtype.np:
        raise UsageError(f"{kernel}(): {name} has dtype {arr.dtype}, the kernel declares "
                         f"{dtype.np_name}")
    if arr.ndim != rank:
        raise UsageError(f"{kernel}(): {name} has {arr.ndim} dims, the kernel declares {rank}")


def param_types(doc) -> dict[str, TensorType]:
    """Kernel parameters in order: name -> tensor type."""
    return {op.result.name: op.result.type for op in source_ops(doc) if op.name == "param"}


def param_roles(doc) -> dict[str, str]:
    """Kernel parameters in order: name -> "input" or "output"."""
    return {op.result.name: op.attrs.get("role", "input")
            for op in source_ops(doc) if op.name == "param"}


def concrete_shape(t: TensorType, env: dict) -> tuple:
    return tuple(int(E.evaluate(d, env)) for d in t.shape)


def run_sizes(doc, arrays: dict | None = None, explicit: dict | None = None) -> dict[str, int]:
    """Every symbol's size for a run: explicit bindings, then the arrays given, then the
    bindings the document was scheduled with (unless an array fixes that symbol)."""
    arrays = arrays or {}
    sched = next((op for op in doc.body if op.name == "schedule"), None)
    defaults = dict(sched.attrs.get("bindings") or {}) if sched is not None else {}
    symbols = doc.attrs.get("symbols", {})
    fixed = {s for s, info in symbols.items()
             if any(p in arrays for p, _ in info.get("dims", []))}
    merged = {**{k: v for k, v in defaults.items() if k not in fixed}, **(explicit or {})}
    return bind(doc, arrays, merged)


def schedule_sizes(doc, explicit: dict | None) -> dict[str, int] | None:
    """The sizes to place a schedule's instances with, or None when there are none to place
    (no --bind, and some symbol is not STATIC)."""
    symbols = doc.attrs.get("symbols", {})
    if not explicit and not all(i.get("kind") == "static" for i in symbols.values()):
        return None
    return bind(doc, {}, explicit or {})


def bind(doc, arrays: dict, explicit: dict | None = None) -> dict[str, int]:
    """Size of every symbol, from explicit bindings and the given arrays, checked for agreement."""
    symbols = doc.attrs.get("symbols", {})
    env = _explicit(symbols, explicit or {})
    types = param_types(doc)
    for pname, arr in arrays.items():
        t = types.get(pname)
        if t is not None and arr.ndim != t.rank:
            raise UsageError(f"input {pname}: rank {arr.ndim} array for a rank-{t.rank} parameter "
                             f"{t}")
    for name, info in symbols.items():
        for pname, axis in info.get("dims", []):
            if pname in arrays:
                size = int(arrays[pname].shape[axis])
                if name in env and env[name] != size and info.get("kind") != "static":
                    raise UsageError(f"{pname}.shape[{axis}] is {size} but {name} is {env[name]}")
                env.setdefault(name, size)
        if info.get("kind") == "static":
            env.setdefault(name, info["value"])
    _constraints(doc, symbols, env)
    for pname, t in types.items():
        for axis, d in enumerate(t.shape):
            try:
                size = E.evaluate(d, env)
            except E.UnboundSymbol as u:
                raise UsageError(f"symbol {u.name} (dim {axis} of {pname}) has no size: pass an "
                                 f"input for {pname} or --bind {u.name}=N") from None
            if pname in arrays and arrays[pname].shape[axis] != size:
                raise UsageError(f"input {pname} has shape {tuple(arrays[pname].shape)}, "
                                 f"expected {concrete_shape(t, env)}")
    _bounds(symbols, env)
    return env


def _bounds(symbols: dict, env: dict) -> None:
    """A document compiled for bounded sizes (a symbol's max: analysis/versions.py) runs only
    on sizes in 1..max."""
    for name, info in symbols.items():
        hi = info.get("max")
        if hi is not None and name in env and not 1 <= env[name] <= hi:
            raise UsageError(f"{name} is {env[name]} but this document was compiled for "
                             f"1 <= {name} <= {hi} (pypto-trace --assume); trace it without "
                             f"that assumption to run this size")


def _explicit(symbols: dict, explicit: dict) -> dict[str, int]:
    env: dict[str, int] = {}
    for name, val in explicit.items():
        if name not in symbols:
            known = ", ".join(sorted(symbols)) or "none"
            raise UsageError(f"--bind {name}: the kernel has no symbol {name!r} (symbols: {known})")
        if int(val) < 0:
            raise UsageError(f"--bind {name}={val}: sizes cannot be negative")
        env[name] = int(val)
    return env


def _constraints(doc, symbols: dict, env: dict) -> None:
    """Symbols unified at trace time: each dropped one equals an expression of the others."""
    for dropped, keep in doc.attrs.get("constraints", []):
        try:
            want = E.evaluate(keep, env)
        except E.UnboundSymbol:
            continue
        if dropped in env and env[dropped] != want:
            dims = symbols.get(dropped, {}).get("dims", [])
            where = f"{dims[0][0]}.shape[{dims[0][1]}]" if dims else dropped
            raise UsageError(f"{where} is {env[dropped]} but must equal {E.to_str(keep)} = {want}")
        env.setdefault(dropped, want)
