"""insert-sync and the checker on Tensor-mode programs: every example's lowered programs (a2
and the 950; the host's run through the checker in test_examples.py) carry their own sync
and the race and sync checker (runtime/tensor_check.py over runtime/pro_check.py) accepts
them; with any one inserted sync op dropped, or every op of one flag (pipe pair and event
id), the checker refuses them. The sizes of the dropping cases make every loop, merged
instance and buffer slot run at least twice, so that every flag orders something."""
from __future__ import annotations

import hashlib
import importlib.util
import pathlib
import warnings

import pytest

from libpypto import driver
from libpypto.analysis import bind as B
from libpypto.analysis.expand import expand
from libpypto.ir import expr as E
from libpypto.ir.core import copy_doc
from libpypto.runtime import executable
from libpypto.runtime.pro_check import SyncError
from libpypto.runtime.tensor_check import check_expansion

ROOT = pathlib.Path(__file__).resolve().parents[3]
EXAMPLES = sorted(p.stem for p in (ROOT / "examples").glob("*.py"))
MODELS = sorted(p.stem for p in (ROOT / "examples" / "models").glob("*.py"))
FAST = {"softmax", "matmul", "flash_attention", "rmsnorm"}        # in make check
SYNC = ("sync_set", "sync_wait", "barrier")


def example(name: str) -> dict:
    spec = importlib.util.spec_from_file_location(f"isx_{name}", ROOT / "examples" / f"{name}.py")
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m.EXAMPLE


def lowered(path: pathlib.Path, target: str, consts=None):
    return driver.lower(driver.trace(str(path), consts=consts), target=target)


def programs(doc) -> list:
    return [op for op in doc.body if op.name == "program"]


def check(doc, env: dict, data: dict | None = None) -> dict:
    return check_expansion(expand(doc, env, data), driver.target_for(doc).align)


@pytest.mark.parametrize("target", ["a2", "950"])
@pytest.mark.parametrize("name", [pytest.param(n, marks=[] if n in FAST else pytest.mark.slow)
                                  for n in EXAMPLES])
def test_every_example_carries_sync_the_checker_accepts(name, target):
    ex = example(name)
    doc = lowered(ROOT / "examples" / f"{name}.py", target, ex.get("const"))
    assert all("sync" in p.attrs for p in programs(doc))
    got = check(doc, B.bind(doc, {}, ex["bind"]))
    assert got["unsynced"] == 0 and got["programs"] >= 1 and got["instances"] >= 1


def _model_runs(name: str):
    """(traced document, sizes, data read at run time) of every kernel call a model
    example's check() made."""
    spec = importlib.util.spec_from_file_location(f"ism_{name}",
                                                  ROOT / "examples" / "models" / f"{name}.py")
    m = importlib.util.module_from_spec(spec)
    seen = {}                       # content digest -> array the JIT planned from

    def recording(doc, env, data=None):
        for a in (data or {}).values():
            seen[hashlib.blake2b(a.tobytes()).digest()] = a
        return expand(doc, env, data)

    with warnings.catch_warnings(), pytest.MonkeyPatch.context() as mp:
        warnings.simplefilter("ignore")
        mp.setattr(executable, "expand", recording)
        spec.loader.exec_module(m)
        m.check("numpy")
    for k in vars(m).values():
        for comp in getattr(k, "_cache", {}).values():
            for doc, exe in comp.versions.values():
                for key in exe.plans:
                    env = dict(kv for kv in key if isinstance(kv[1], int))
                    data = {kv[0]: seen[kv[2]] for kv in key if len(kv) == 3}
                    yield comp.source, env, data or None


@pytest.mark.slow
@pytest.mark.parametrize("name", MODELS)
def test_model_examples_carry_sync_the_checker_accepts(name):
    runs = list(_model_runs(name))
    assert runs
    for source, env, data in runs:
        for target in ("host", "a2", "950"):
            doc = driver.lower(source, target=target)
            got = check(doc, env, data)
            assert got["unsynced"] == 0 and got["programs"] >= 1


def _without(ops: list, drop) -> list:
    out = []
    for op in ops:
        if drop(op):
            continue
        op.regions = [_without(r, drop) for r in op.regions]
        out.append(op)
    return out


def _flag(op) -> tuple:
    """A sync op's flag: (set pipe, wait pipe, event id), or ("barrier",)."""
    a = op.attrs
    if op.name == "barrier":
        return ("barrier",)
    e = a["event_id"] if isinstance(a["event_id"], int) else E.to_str(a["event_id"])
    return (a["pipe"], a["wait_pipe"], e) if op.name == "sync_set" else \
        (a["set_pipe"], a["pipe"], e)


def _refused(exps, prog_index, body, align) -> bool:
    """Does the checker refuse the program with this body at one of the sizes?"""
    for exp in exps:
        prog = exp.programs[prog_index]
        keep = prog.regions[0]
        prog.regions[0] = body
        try:
            check_expansion(exp, align)
        except SyncError:
            return True
        finally:
            prog.regions[0] = keep
    return False


# a list of sizes where one alone cannot make every arm live: flash attention's first step
# is its last only when it has one step
DROPS = [("examples/softmax.py", "a2", [{"x_0": 1525}]),          # merged by 2, a tail
         ("examples/rmsnorm.py", "a2", [{"T": 4096}]),
         ("examples/matmul.py", "a2", [{"M": 12288}]),             # merged, L1 in 2 buffers
         ("examples/flash_attention.py", "950", [{"S": 512}, {"S": 64}]),
         ("examples/layernorm.py", "a2", [{"T": 3067}]),           # merged: 192 row blocks
         ("bench/sim/gemm.py", "a3", [{"M": 3072, "N": 3072, "K": 1024}])]


@pytest.mark.parametrize("path,target,binds", DROPS, ids=[f"{p.split('/')[-1]}-{t}"
                                                          for p, t, _ in DROPS])
def test_dropping_any_inserted_sync_is_caught(path, target, binds):
    doc = lowered(ROOT / path, target)
    exps = [expand(doc, B.bind(doc, {}, bind)) for bind in binds]
    align = driver.target_for(doc).align
    assert all(check_expansion(exp, align)["unsynced"] == 0 for exp in exps)
    dropped = 0
    for k, prog in enumerate(exps[0].programs):
        ops = [op for top in prog.regions[0] for op in top.walk() if op.name in SYNC]
        for one in ops:
            body = _without(copy_doc_body(prog), lambda op, one=one: op.attrs is one.attrs)
            assert _refused(exps, k, body, align), f"{prog.attrs['name']}: {one}"
            dropped += 1
        for flag in sorted({_flag(op) for op in ops}, key=str):
            body = _without(copy_doc_body(prog), lambda op, f=flag: op.name in SYNC and
                            _flag(op) == f)
            assert _refused(exps, k, body, align), f"{prog.attrs['name']}: flag {flag}"
    assert dropped > 0


def copy_doc_body(prog) -> list:
    """A copy of a program's body whose ops share their attribute dicts with the original
    (so an op of the original picks out its copy)."""
    from libpypto.ir.core import Op

    def clone(ops):
        return [Op(op.name, op.operands, op.results, op.attrs, [clone(r) for r in op.regions],
                   op.loc) for op in ops]
    return clone(prog.regions[0])


def test_insert_sync_is_idempotent_and_skips_hand_synced_blocks():
    src = driver.trace(str(ROOT / "examples" / "softmax.py"))
    once = driver.lower(src, "tensor-to-tile,assign-memory,fuse,alloc,insert-sync",
                        target="a2")
    twice = driver.lower(copy_doc(once), "insert-sync", target="a2")
    text = driver.dump_ir(once, text=True)
    assert driver.dump_ir(twice, text=True) == text
    blk = next(op for op in once.walk() if op.name == "block")
    del blk.attrs["sync"]                      # hand-synced now: its flags stay as they are
    again = driver.lower(once, "insert-sync", target="a2")
    blk2 = next(op for op in again.walk() if op.name == "block")
    assert "sync" not in blk2.attrs
    assert sum(op.name in SYNC for op in blk2.walk()) == sum(op.name in SYNC for op in blk.walk())


def test_walks_reach_the_late_phases_of_a_pipelined_loop(monkeypatch):
    """mix-fuse's flash attention loop starts its phase of delay d under `d <= i` and that
    phase's first step under `i - d == 0`: walking the symbolic loop 3 times would never
    see the last phases (delays 3 and 4), leaving them unsynced, which the checker refuses.
    The walks run it past the largest such constant, at sizes that make its conditions
    exact, and the program passes."""
    from libpypto.passes import insert_sync, sync_model
    path = ROOT / "examples" / "flash_attention.py"
    doc = lowered(path, "a2")
    assert [p.attrs["core"] for p in programs(doc)] == ["mixed"]
    loop = next(op for op in programs(doc)[0].walk() if op.name == "for")
    assert sync_model._reach(loop) == 4
    assert check(doc, {"S": 192})["unsynced"] == 0
    monkeypatch.setattr(sync_model, "_reach", lambda loop: 0)
    monkeypatch.setattr(insert_sync, "sizes", lambda roots, trips, most=False: {})
    with pytest.raises(SyncError, match="race"):
        check(lowered(path, "a2"), {"S": 192})


def test_walk_sizes_make_a_pipelined_loops_conditions_exact():
    """The sizes a scenario gives the one symbol of a symbolic stop: no step, one step, and
    U = 2 + 1 + reach steps, each at the least and the largest value of the symbol."""
    from libpypto.ir.core import Op
    from libpypto.passes import sync_model
    i, s = E.sym("i"), E.sym("s")
    cond = E.eq(E.add(i, -4), E.sub(E.floordiv(s, 64), 1))
    body = [Op("if", [], [], {"cond": cond}, [[], []], None)]
    loop = Op("for", [], [], {"var": "i", "start": 0, "stop": E.add(E.floordiv(s, 64), 4),
                              "step": 1}, [body], None)
    roots = sync_model.build([loop], 32)
    assert roots[0].reach == 4
    got = {(t, most): sync_model.sizes(roots, t, most)["s"] for t in ("U", 1, 0)
           for most in (False, True)}
    assert got == {("U", False): 7 * 64, ("U", True): 8 * 64 - 1, (1, False): 64,
                   (1, True): 127, (0, False): 0, (0, True): 63}


def _mixed_case():
    """The golden case's mixed program (tests/golden/lower/pass-insert-sync-mixed.test)
    with its sync inserted, as an exec-level document and an expansion at N = 2."""
    doc = driver.read_ir(str(ROOT / "tests" / "golden" / "lower" /
                             "pass-insert-sync-mixed.test"))
    doc = driver.lower(doc, "insert-sync,make-exec", target="a2")
    return doc, expand(doc, {"N": 2})


def test_the_checker_needs_the_flags_around_cross_core_events():
    """In a mixed program, vector core 0 sets its event on V after an MTE3 store, and the
    cube loads on MTE2 after waiting on MTE1: insert-sync's MTE3 -> V and MTE1 -> MTE2 flags
    are what orders them; without either the checker refuses the program, naming the event."""
    doc, exp = _mixed_case()
    assert check_expansion(exp, 32)["unsynced"] == 0
    (prog,) = exp.programs
    for pair, what in ((("MTE3", "V"), "cross_set on V"), (("MTE1", "MTE2"), "cross_wait on MTE1")):
        body = _without(copy_doc_body(prog), lambda op, p=pair: op.name in SYNC and
                        _flag(op)[:2] == p)
        keep, prog.regions[0] = prog.regions[0], body
        try:
            with pytest.raises(SyncError, match=what):
                check_expansion(exp, 32)
        finally:
            prog.regions[0] = keep


def test_each_core_of_a_mixed_program_has_its_own_flags():
    """Every sync op of the mixed program runs on the core of the last section marker before
    it, and no flag pairs a set on one core with a wait on another: the two vector cores
    load into the same UB bytes with no flag between them."""
    from libpypto.ir.mix_ops import part
    doc, _ = _mixed_case()
    (prog,) = programs(doc)
    sets, waits = {}, {}

    def walk(ops, core):
        """The core after ops ("?" where the arms of an if end on different cores)."""
        for op in ops:
            if op.name == "section":
                core = part(op)[0]
            elif op.name == "sync_set":
                sets.setdefault(_flag(op), set()).add(core)
            elif op.name == "sync_wait":
                waits.setdefault(_flag(op), set()).add(core)
            elif op.name == "if":
                ends = {walk(r, core) for r in op.regions}
                core = ends.pop() if len(ends) == 1 else "?"
            elif op.name == "for":
                core = walk(op.regions[0], core)
        return core
    walk(prog.regions[0], None)
    assert sets and sets.keys() == waits.keys()
    assert all(sets[f] == waits[f] and not sets[f] & {None, "?"} for f in sets)
    assert sets[("MTE3", "V", 0)] == {1}            # vector core 0 only: core 1 sets on MTE3
