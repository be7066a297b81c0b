"""Limits on the shape of what a file holds, checked while it is read, before anything
recurses over it: how deeply lists, maps, regions and brackets nest, and how long and deep a
symbolic expression is. Like the resource limits (libpypto/analysis/limits.py, which reads
its numbers the same way), each can be raised through the environment (PYPTO_MAX_<NAME>=N).
"""
from __future__ import annotations

import os

from ..errors import LimitError

DEFAULTS = {
    "DEPTH": 100,            # nesting of lists and maps in a file, of brackets in its text
    "EXPR": 4096,            # characters of one symbolic expression
    "EXPR_DEPTH": 64,        # nesting of one symbolic expression
}


def env_limit(name: str, default: int) -> int:
    """PYPTO_MAX_<name> from the environment if it is a whole number, else the default."""
    raw = os.environ.get(f"PYPTO_MAX_{name}")
    try:
        return int(raw) if raw else default
    except ValueError:
        return default


def limit(name: str) -> int:
    return env_limit(name, DEFAULTS[name])


def over(name: str, what: str, amount=None) -> LimitError:
    """The error for `what` going past limit `name` (amount: how far, when known)."""
    cap = limit(name)
    much = f" ({amount:,})" if amount is not None else ""
    return LimitError(f"{what}{much} is over the limit of {cap:,}; set PYPTO_MAX_{name} to "
                      f"allow more")


def nesting_depth(value, cap: int) -> int:
    """How deeply lists, tuples and dicts nest in value (a scalar is 0), counted without
    recursion; stops counting past cap (returns cap + 1)."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict):
            v = list(v.values())
        elif not isinstance(v, (list, tuple)):
            continue
        d += 1
        if d > cap:
            return d
        deepest = max(deepest, d)
        stack.extend((x, d) for x in v)
    return deepest
