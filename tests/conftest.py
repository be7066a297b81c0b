"""Shared test fixtures: a compile cache for the session, the tool server, a skip marker for
tests that need cc.

- The compile cache: compiled kernels go to one cache per test session, shared by all
  xdist workers (not the user's). The cache is content-hashed, verified before use and
  written by atomic rename (libpypto/runtime/compiler.py), so workers compiling the same C
  at once both succeed and each kernel is compiled about once per session, not per worker.
  Tests that damage or inspect a cache make their own (test_compiler.py, the fuzz harness).
- The tool server (toolserver.py): the golden and CLI tests run the pypto-* tools through
  shims that fork a process which has already imported libpypto, instead of paying Python's
  and the libraries' start-up for every run. `tool_shims` is the folder of shims (None:
  real processes); `PYPTO_TEST_REAL_TOOLS=1` turns it off.
"""
from __future__ import annotations

import importlib.util
import os
import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def _load(name: str):
    """A test-infrastructure module of this folder, importable by name in every test."""
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, pathlib.Path(__file__).with_name(
            f"{name}.py"))
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


toolserver = _load("toolserver")


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


def pytest_sessionfinish(session):
    toolserver.stop()


def session_dir(tmp_path_factory) -> pathlib.Path:
    """The session's temporary folder, the same for every xdist worker (each worker's own
    basetemp is popen-gwN inside it)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="session")
def pypto_cache_dir(tmp_path_factory) -> str:
    """The compile cache of this test session (shared by its workers)."""
    cache = session_dir(tmp_path_factory) / "pypto-cache"
    os.makedirs(cache, exist_ok=True)
    return str(cache)


@pytest.fixture(autouse=True)
def _private_cache(pypto_cache_dir, monkeypatch):
    """Compiled kernels go to the session's cache, not the user's."""
    monkeypatch.setenv("PYPTO_CACHE_DIR", pypto_cache_dir)


@pytest.fixture(scope="session")
def tool_shims() -> str | None:
    """The folder of pypto-X shims served by this worker's tool server (started on first use),
    to put first on PATH; None when $PYPTO_TEST_REAL_TOOLS asks for real processes."""
    return toolserver.shim_dir()
