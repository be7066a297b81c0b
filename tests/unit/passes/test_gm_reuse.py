"""gm-reuse: workspaces share arena bytes only where every task touching one is ordered with
every task touching the other; the runtimes use the arena after checking it for the sizes of
the run; naive reuse in program order would race."""
from __future__ import annotations

import functools
import importlib.util
import pathlib
import warnings

import numpy as np
import pytest

import libpypto as pypto
from libpypto.analysis import arena as A
from libpypto.analysis import bind as B
from libpypto.analysis.expand import expand
from libpypto.driver import read_ir
from libpypto.runtime.executable import Plan

ROOT = pathlib.Path(__file__).resolve().parents[3]
EXAMPLES = sorted(p.stem for p in (ROOT / "examples").glob("*.py"))
GOLDEN = ROOT / "tests/golden/lower/pass-gm-reuse.test"


@functools.lru_cache(maxsize=None)
def _bind(name: str) -> dict:
    spec = importlib.util.spec_from_file_location(f"gmr_{name}", ROOT / "examples" / f"{name}.py")
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return dict(m.EXAMPLE["bind"])


def example(name: str):
    return pypto.lower(pypto.trace(str(ROOT / "examples" / f"{name}.py"), target="a2"),
                       target="a2")


# flash attention as fuse left it before mix-fuse (one block per branch arm: the then- and
# else-arm each write a workspace of their own, which can share bytes)
SPLIT = ("tensor-to-tile,assign-memory,fuse{sink=false},l1-reuse,forward,cse,dce,ooo-schedule,"
         "alloc,make-exec,gm-reuse")


def split_flash_attention():
    return pypto.lower(pypto.trace(str(ROOT / "examples" / "flash_attention.py"), target="a2"),
                       SPLIT, target="a2")


def gms(doc) -> dict:
    return {op.result.name: op for op in doc.body if op.name == "gm"}


@pytest.mark.parametrize("name", EXAMPLES)
def test_no_example_races_in_its_arena(name):
    doc = example(name)
    exp = expand(doc, B.bind(doc, {}, _bind(name)))
    lay = A.layout(doc, exp)
    assert lay is None or A.races(exp, lay) == []


@pytest.mark.parametrize("size", [64, 192, 200])
def test_flash_attention_shares_and_does_not_race(size):
    doc = split_flash_attention()
    g = gms(doc)
    assert g["ws13"].attrs["arena"] == g["ws4"].attrs["arena"]       # then- and else-arm
    exp = expand(doc, {"S": size})
    lay = A.layout(doc, exp)
    assert lay is not None and A.races(exp, lay) == []
    ws = Plan(exp, doc).workspaces                                   # one buffer, shared
    assert np.shares_memory(ws[g["ws4"]], ws[g["ws13"]])
    assert not np.shares_memory(ws[g["ws0"]], ws[g["ws13"]])


def test_naive_reuse_in_program_order_would_race_and_is_refused():
    """ws0 is dead (in program order) once the second task of a step has read it, but the
    next step's first task writes ws0 again while this step's tail still runs: giving ws13
    ws0's bytes races. The runtime refuses such a file (hand-edited offsets: no proof)."""
    doc = split_flash_attention()
    g = gms(doc)
    g["ws13"].attrs["arena"] = g["ws0"].attrs["arena"]
    exp = expand(doc, {"S": 192})
    naive = {op: op.attrs["arena"] for op in g.values() if "arena" in op.attrs}
    assert A.races(exp, naive)
    assert A.layout(doc, exp) is None
    ws = Plan(exp, doc).workspaces
    assert not np.shares_memory(ws[g["ws0"]], ws[g["ws13"]])


def test_parallel_branches_get_bytes_of_their_own():
    doc = pypto.lower(read_ir(str(GOLDEN)), "gm-reuse")
    g = gms(doc)
    assert g["ws2"].attrs["arena"] == g["ws0"].attrs["arena"]        # the chain
    assert g["ws4"].attrs["arena"] not in (g["ws0"].attrs["arena"], g["ws1"].attrs["arena"])
    exp = expand(doc, {"N": 40})
    assert A.races(exp, A.layout(doc, exp)) == []
    naive = {op: op.attrs["arena"] for op in g.values() if "arena" in op.attrs}
    naive[g["ws4"]] = naive[g["ws0"]]                                # program-order reuse
    assert A.races(exp, naive)


def test_a_proof_whose_boxes_fail_falls_back_to_private_storage():
    """The chain's order rests on each task reading what the one before wrote: a file
    whose second task reads nothing of ws0 leaves them unordered, and the obligation that
    its box is not empty fails for every size, so the run gets no arena."""
    doc = pypto.lower(read_ir(str(GOLDEN)), "gm-reuse")
    g = gms(doc)
    task = next(t for t in doc.walk() if t.name == "task" and g["ws0"].result in t.operands
                and g["ws1"].result in t.operands)
    task.attrs["reads"][0][2] = [64, 0]
    exp = expand(doc, {"N": 40})
    assert A.layout(doc, exp) is None
    naive = {op: op.attrs["arena"] for op in g.values() if "arena" in op.attrs}
    assert A.races(exp, naive)


def test_arena_is_smaller_for_flash_attention():
    doc = split_flash_attention()
    own = sum(A.aligned(A.nbytes(op)) for op in gms(doc).values() if "param" not in op.attrs)
    assert doc.attrs["arena_bytes"] == own - 16384


@pytest.mark.slow
@pytest.mark.needs_cc
def test_flash_attention_bits_with_and_without_the_arena():
    doc = pypto.trace(str(ROOT / "examples/flash_attention.py"), target="a2")
    shas = []
    for pipe in (None, pypto.passes.DEFAULT_PIPELINE.replace("gm-reuse", "gm-reuse{enable=false}")):
        low = pypto.lower(doc, pipe, target="a2")
        rec = pypto.run(low, bind={"S": 192}, backend="c", threads=2, seed=1)
        shas.append([o["sha256"] for o in rec.body[0].attrs["outputs"]])
    assert shas[0] == shas[1]


@pytest.mark.parametrize("offset", [1 << 40, 32, -64])
def test_offsets_a_file_made_up_give_no_arena(offset):
    """Far past the tensors (the arena would be larger than private storage), unaligned,
    negative: the run gives every tensor bytes of its own."""
    doc = split_flash_attention()
    gms(doc)["ws13"].attrs["arena"] = offset
    assert A.layout(doc, expand(doc, {"S": 192})) is None


def _between_per_pair(r, p, q, base, same):
    """_between as its docstring defines it, one pair at a time: the nodes listed afresh,
    each reached through the lowest earlier reached node ordered with it."""
    n = len(base)

    def near(c, s):
        return c.path[:n] == base and A._prefix(c.path[n:], s.path[n:])
    if same:
        mids = [c for c in r.sites if p.pos < c.pos < q.pos and (near(c, p) or near(c, q))]
    else:
        mids = [c for c in r.sites if c.pos > p.pos and near(c, p)] + \
            [c for c in r.sites if c.pos < q.pos and near(c, q)]
    nodes = [p] + mids + [q]
    reach: list = [set()] + [None] * (len(nodes) - 1)
    for i in range(1, len(nodes)):
        for j in range(i):
            if reach[j] is None or nodes[j] is nodes[i]:
                continue
            got = r.always(nodes[j], nodes[i])
            if got is not None:
                reach[i] = reach[j] | got | ({("instances", nodes[i].index)}
                                              if i < len(nodes) - 1 else set())
                break
    return reach[-1]


def _gated_delta_rule():
    spec = importlib.util.spec_from_file_location(
        "gmr_gdr", ROOT / "examples/models/qwen3_next_gated_delta_rule.py")
    m = importlib.util.module_from_spec(spec)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")    # the reference's device options
        spec.loader.exec_module(m)
    return m


@pytest.mark.parametrize("name", EXAMPLES + ["gated_delta_rule"])
def test_chains_found_in_one_walk_are_those_of_the_definition(name):
    """The chains of every pair of sites, every region depth, both modes, as the one-walk
    search (_chains_from) finds them and as the per-pair definition does: the same
    obligations, or None for both."""
    if name == "gated_delta_rule":         # 150 sites in a loop: the case the walk is for
        m = _gated_delta_rule()
        ins, outs = m.make_inputs()
        k = m.chunk_gated_delta_rule_kernel
        arrays = dict(zip([n for n, _ in k.tensor_params], ins + outs))
        static = {f"{n}_{a}": int(arrays[n].shape[a]) for n, spec in k.tensor_params
                  for a, d in enumerate(spec.shape) if d is pypto.STATIC}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            doc = pypto.lower(pypto.trace(str(ROOT / "examples/models/qwen3_next_gated_delta_rule.py"),
                                          kernel="chunk_gated_delta_rule_kernel", bind=static))
    else:
        doc = example(name)
    r = A.Reuse(doc)
    checked = 0
    for p in r.sites:
        for q in r.sites:
            common = A._common(p.path, q.path)
            for n in range(len(common) + 1):
                for same in ((True, False) if p.pos < q.pos else (False,)):
                    if same and n != len(common):
                        continue
                    assert r._between(p, q, common[:n], same) == \
                        _between_per_pair(r, p, q, common[:n], same), (p.index, q.index, n)
                    checked += 1
    assert checked >= len(r.sites) ** 2
