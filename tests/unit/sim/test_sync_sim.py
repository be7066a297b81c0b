"""A Tensor-mode program that carries its own sync (insert-sync) is timed by that sync, as a
Pro kernel is: its flags are instructions of the stream and order the pipes, and nothing
else does (the byte-based inference is for programs lowered without insert-sync)."""
from __future__ import annotations

import pathlib

from libpypto.analysis import bind as B
from libpypto.analysis.expand import expand
from libpypto.driver import lower, simulate, trace
from libpypto.sim.flatten import Context, Flattener
from libpypto.targets import load_target
from libpypto.targets.costs import Costs

ROOT = pathlib.Path(__file__).resolve().parents[3]
UNSYNCED = "tensor-to-tile,assign-memory,fuse,nbuffer,forward,cse,dce,alloc,make-exec"


def streams(doc, env):
    exp = expand(doc, env)
    fl = Flattener(exp.programs, Costs(load_target("a2")), pro=False)
    prog = exp.programs[0]
    row = [int(x) for x in exp.launches[0].scalars[0]]
    g = prog.attrs["grid_rank"]
    e = {f"g{d}": row[d] for d in range(g)}
    e.update({s: row[g + k] for k, s in enumerate(prog.attrs["scalars"])})
    st = fl.flatten(0, e, Context(list(range(8))))
    return [fl.ops[0][i].name for i in st.op], st


def test_a_synced_program_is_ordered_by_its_flags():
    src = trace(str(ROOT / "examples" / "add.py"), target="a2")
    doc = lower(src, target="a2")
    names, st = streams(doc, B.bind(doc, {}, {}))
    add = names.index("tadd")
    wait = max(i for i in range(add) if names[i] == "sync_wait")
    assert wait in st.preds[add] and not any(names[p] == "tload" for p in st.preds[add])
    names, st = streams(lower(src, UNSYNCED, target="a2"), B.bind(doc, {}, {}))
    assert "sync_wait" not in names                 # inferred: the add waits for the loads
    assert any(names[p] == "tload" for p in st.preds[names.index("tadd")])


def test_without_a_flag_the_simulated_pipes_overlap_more():
    """Drop rmsnorm's MTE2 -> V flags: V no longer waits for the loads, the same program
    simulates shorter; the inference would have kept that order."""
    src = trace(str(ROOT / "examples" / "rmsnorm.py"), target="a2")
    doc = lower(src, target="a2")
    env = B.bind(doc, {}, {"T": 1024})
    full = simulate(doc, "a2", env)["cycles"]
    for prog in (op for op in doc.body if op.name == "program"):
        prog.regions[0] = _drop(prog.regions[0])
    assert simulate(doc, "a2", env)["cycles"] < full


def _drop(ops):
    out = []
    for op in ops:
        a = op.attrs
        if op.name in ("sync_set", "sync_wait") and \
                (a.get("set_pipe"), a["pipe"], a.get("wait_pipe")) in (("MTE2", "V", None),
                                                                       (None, "MTE2", "V")):
            continue
        op.regions = [_drop(r) for r in op.regions]
        out.append(op)
    return out
