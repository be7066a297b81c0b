"""Fixtures of the fuzz suite: the seed files (every level of a few examples, msgpack and
text), made once per session, and the case budget.

PYPTO_FUZZ_EXAMPLES sets how many cases the suite runs in all (default 400, `make fuzz`
5000); a fixed share of them is left out of `make check` (marked slow). Every case is fixed
by its index: the same index is the same file on every run.
"""
from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import harness  # noqa: E402

TOTAL = int(os.environ.get("PYPTO_FUZZ_EXAMPLES") or 400)
FAST_SHARE = 0.5           # of each kind of case, the share that make check runs too


def budget(share: float) -> int:
    """How many cases a kind of case gets: `share` of the total."""
    return max(1, round(TOTAL * share))


def indices(n: int, fast: int) -> list:
    """Case indices 0 .. n-1, those from `fast` on marked slow."""
    return [i if i < fast else pytest.param(i, marks=pytest.mark.slow) for i in range(n)]


def cases(share: float, fast_share: float = FAST_SHARE) -> list:
    """Case indices for one kind of case, the later ones marked slow (all of them when a
    budget was asked for: `make fuzz` runs everything anyway)."""
    n = budget(share)
    return indices(n, round(n * fast_share) if TOTAL <= 400 else 0)


@pytest.fixture(scope="session")
def seeds(tmp_path_factory) -> list:
    d = tmp_path_factory.mktemp("fuzz-seeds")
    old = os.environ.get("PYPTO_CACHE_DIR")
    os.environ["PYPTO_CACHE_DIR"] = str(d / "cache")
    try:
        return harness.make_seeds(str(d))
    finally:
        if old is None:
            os.environ.pop("PYPTO_CACHE_DIR", None)
        else:
            os.environ["PYPTO_CACHE_DIR"] = old


@pytest.fixture
def case_dir(tmp_path) -> str:
    return str(tmp_path)
