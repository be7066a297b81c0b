"""Hypothesis over the IR schema: one attribute of an op, a module attribute, a result type
or a field of a run record replaced by a value its grammar accepts (schema.py), in a seed
file, fed to the tool that reads the level. Deterministic: each test runs from a fixed seed
and keeps no example database."""
from __future__ import annotations

import pytest
from conftest import FAST_SHARE, TOTAL, budget
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

import harness
import schema
from libpypto.ir import defs, serde
from libpypto.ir import module_ops as M

SHARE = 0.05               # of the total cases, for each test here
PARTS = [pytest.param("fast", id="fast"), pytest.param("slow", id="slow",
                                                       marks=pytest.mark.slow)]


def examples(part: str) -> int:
    n = budget(SHARE)
    fast = round(n * FAST_SHARE) if TOTAL <= 400 else 0
    return fast if part == "fast" else n - fast


def run(part: str, salt: int, body) -> None:
    """Run body(data) on examples(part) draws, from a seed fixed by salt and part."""
    n = examples(part)
    if n <= 0:
        pytest.skip("no cases in this part")

    @settings(max_examples=n, database=None, deadline=None, print_blob=True,
              suppress_health_check=list(HealthCheck))
    @hypothesis_seed(salt * 2 + (part == "slow"))
    @given(st.data())
    def cases(data):
        body(data)
    cases()


def feed(seed, doc, case_dir: str, what: str) -> None:
    try:
        data = serde.dumps(doc)
    except (OverflowError, TypeError):       # an int that folded past 64 bits: no file
        reject()
    o = harness.feed(seed.level, data, case_dir)
    bad = o.problem()
    if bad:
        kept = harness.keep_failure(seed.level, data, f"schema-{seed.example}")
        raise AssertionError(f"{seed.name} {what}: pypto-{o.tool} gave {bad}\n"
                             f"{o.stderr[-2000:]}\nthe file is kept in {kept}")


def _msgpack(seeds, data, levels=None):
    pool = [s for s in seeds if s.form == "msgpack" and (levels is None or s.level in levels)]
    s = data.draw(st.sampled_from(pool), label="seed")
    return s, serde.loads(s.data)


@pytest.mark.parametrize("part", PARTS)
def test_op_attribute(seeds, case_dir, part):
    def body(data):
        s, doc = _msgpack(seeds, data)
        ops = [op for op in doc.walk() if op.name in defs.OPS and defs.OPS[op.name].attrs]
        op = data.draw(st.sampled_from(ops), label="op")
        kinds = defs.OPS[op.name].attrs
        name = data.draw(st.sampled_from(sorted(kinds)), label="attribute")
        op.attrs[name] = data.draw(schema.value(kinds[name][0]), label="value")
        feed(s, doc, case_dir, f"{op.name}.{name}")
    run(part, 1, body)


@pytest.mark.parametrize("part", PARTS)
def test_module_attribute(seeds, case_dir, part):
    def body(data):
        s, doc = _msgpack(seeds, data)
        name = data.draw(st.sampled_from(sorted(M.DOC)), label="attribute")
        doc.attrs[name] = data.draw(schema.value(M.DOC[name][0]), label="value")
        feed(s, doc, case_dir, f"module.{name}")
    run(part, 2, body)


@pytest.mark.parametrize("part", PARTS)
def test_result_type(seeds, case_dir, part):
    def body(data):
        s, doc = _msgpack(seeds, data, levels=harness.LEVELS[:-1])
        values = [r for op in doc.walk() for r in op.results]
        v = data.draw(st.sampled_from(values), label="value")
        v.type = data.draw(schema.types(), label="type")
        feed(s, doc, case_dir, f"type of {v.name or v.owner.name}")
    run(part, 3, body)


@pytest.mark.parametrize("part", PARTS)
def test_run_record(seeds, case_dir, part):
    def body(data):
        s, doc = _msgpack(seeds, data, levels=("run",))
        name = data.draw(st.sampled_from(sorted(M.RUN)), label="field")
        doc.body[0].attrs[name] = data.draw(schema.value(M.RUN[name][0]), label="value")
        feed(s, doc, case_dir, f"run.{name}")
    run(part, 4, body)
