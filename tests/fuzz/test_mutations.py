"""Mutated seed files, fed to the tool that reads their level: byte edits (flip, set,
delete, insert, truncate, duplicate), structural edits of the decoded msgpack value (a field
deleted, a value of another type, edge ints, deep nesting, long or odd strings, expressions
that are huge, deep or malformed) and token edits of the text form. Every case must end in
exit 0, 1 or 2 with one error line (harness.Outcome.problem)."""
from __future__ import annotations

import random

import pytest
from conftest import cases

import harness
import mutate


def check(seed, kind: str, data: bytes, case_dir: str, index: int) -> None:
    o = harness.feed(seed.level, data, case_dir)
    bad = o.problem()
    if bad:
        kept = harness.keep_failure(seed.level, data, f"{seed.name}-{index}")
        pytest.fail(f"{seed.name} {kind}: pypto-{o.tool} gave {bad}\n{o.stderr[-2000:]}\n"
                    f"the file is kept in {kept}", pytrace=False)


@pytest.mark.parametrize("index", cases(0.35))
def test_bytes(seeds, case_dir, index):
    seed = seeds[index % len(seeds)]
    kind, data = mutate.mutate_bytes(seed.data, random.Random(f"bytes-{index}"))
    check(seed, kind, data, case_dir, index)


@pytest.mark.parametrize("index", cases(0.25))
def test_values(seeds, case_dir, index):
    msgpack_seeds = [s for s in seeds if s.form == "msgpack"]
    seed = msgpack_seeds[index % len(msgpack_seeds)]
    kind, data = mutate.mutate_value(seed.data, random.Random(f"values-{index}"))
    check(seed, kind, data, case_dir, index)


@pytest.mark.parametrize("index", cases(0.15))
def test_text(seeds, case_dir, index):
    text_seeds = [s for s in seeds if s.form == "text"]
    seed = text_seeds[index % len(text_seeds)]
    kind, data = mutate.mutate_text(seed.data, random.Random(f"text-{index}"))
    check(seed, kind, data, case_dir, index)


def test_seeds_are_valid(seeds, case_dir):
    """Unmutated, every seed is read and worked on (exit 0): the cases start from files the
    tools accept, so what the mutations reach is past the readers."""
    for seed in seeds:
        o = harness.feed(seed.level, seed.data, case_dir)
        assert o.code == 0, f"{seed.name}: {o.stderr}"
