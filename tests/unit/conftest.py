"""Fixtures for the unit tests: every example at every level, built once per session.

Documents are mutable, so the cache keeps msgpack bytes and every request gets fresh copies.
Tests that use the `ex` fixture and take an `example` argument are parametrized over
examples/*.py, and those taking a `level` argument over the levels tensor .. code.
"""
from __future__ import annotations

import functools
import importlib.util
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES_DIR = ROOT / "examples"
EXAMPLES = sorted(p.stem for p in EXAMPLES_DIR.glob("*.py"))

# how each level is reached from the tensor graph (DESIGN.md section 1); tile, block and exec
# are lowered for the default (host) target, sched and code for a2
TILE_PIPELINE = "fold-scale,sink-views,tensor-to-tile,assign-memory"  # then block: fuse,mix-fuse,...


def _stage(after: str, upto: str) -> str:
    """The default pipeline's passes after pass `after` up to and including `upto`."""
    from libpypto.passes import DEFAULT_PIPELINE
    names = DEFAULT_PIPELINE.split(",")
    return ",".join(names[names.index(after) + 1:names.index(upto) + 1])
LEVELS = ("tensor", "tile", "block", "exec", "sched", "code")


def pytest_generate_tests(metafunc):
    if "ex" not in metafunc.fixturenames:
        return          # only tests that ask for the examples fixture
    explicit = set()
    for mark in metafunc.definition.iter_markers("parametrize"):
        argnames = mark.args[0]
        explicit |= {a.strip() for a in (argnames.split(",") if isinstance(argnames, str)
                                         else argnames)}
    for name, values in (("example", EXAMPLES), ("level", LEVELS)):
        if name in metafunc.fixturenames and name not in explicit:
            metafunc.parametrize(name, values)


def example_path(name: str) -> str:
    return str(EXAMPLES_DIR / f"{name}.py")


@functools.lru_cache(maxsize=None)
def example_bind(name: str) -> dict:
    """The EXAMPLE["bind"] sizes an example declares for itself."""
    spec = importlib.util.spec_from_file_location(f"unit_ex_{name}", example_path(name))
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return dict(m.EXAMPLE["bind"])


@functools.lru_cache(maxsize=None)
def _level_bytes(name: str) -> dict:
    import libpypto as pypto
    from libpypto.ir import serde
    doc = pypto.trace(example_path(name))
    docs = {"tensor": doc}
    docs["tile"] = pypto.lower(doc, TILE_PIPELINE)
    docs["block"] = pypto.lower(docs["tile"], _stage("assign-memory", "insert-sync"))
    docs["exec"] = pypto.lower(docs["block"], _stage("insert-sync", "gm-reuse"))
    # scheduled for a2 from the tensor graph, i.e. lowered for a2 (a graph lowered for the
    # host may use mixed cube+vector programs, which a2 cannot run)
    docs["sched"] = pypto.schedule(doc, "a2", example_bind(name))
    docs["code"] = pypto.emit(docs["sched"])
    return {k: serde.dumps(v) for k, v in docs.items()}


class Examples:
    """What tests need to know about examples/: paths, bindings, every level."""

    tile_pipeline = TILE_PIPELINE

    @staticmethod
    def path(name: str) -> str:
        return example_path(name)

    @staticmethod
    def bind(name: str) -> dict:
        return dict(example_bind(name))

    @staticmethod
    def bytes(name: str) -> dict:
        """{level: msgpack bytes} of the example at every level."""
        return dict(_level_bytes(name))

    @staticmethod
    def doc(name: str, level: str):
        """A fresh copy of the example at one level."""
        from libpypto.ir import serde
        return serde.loads(_level_bytes(name)[level])

    @staticmethod
    def docs(name: str) -> dict:
        """{level: Document}, fresh copies of the example at every level."""
        from libpypto.ir import serde
        return {k: serde.loads(b) for k, b in _level_bytes(name).items()}


@pytest.fixture
def ex() -> Examples:
    return Examples()
