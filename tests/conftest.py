"""Shared test fixtures: example discovery and a skip marker for tests that need cc."""
from __future__ import annotations

import os
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def pytest_addoption(parser):
    parser.addoption("--update-goldens", action="store_true",
                     help="rewrite the expected files of golden tests instead of comparing")


def pytest_collection_modifyitems(config, items):
    from libpypto.runtime.compiler import find_cc
    if find_cc() is None:
        skip = pytest.mark.skip(reason="no C compiler on this machine")
        for item in items:
            if "needs_cc" in item.keywords:
                item.add_marker(skip)


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    """Compiled kernels go to a per-session cache, not the user's."""
    cache = tmp_path_factory.getbasetemp() / "pypto-cache"
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(cache))
    os.makedirs(cache, exist_ok=True)
