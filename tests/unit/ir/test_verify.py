"""libpypto.ir.verify: one verifier per level rejects broken documents with a useful message.

Broken documents are made from the examples: by editing the text form (as a person editing an
-S file would) or, to stay independent of value numbering, by editing the parsed objects.
"""
from __future__ import annotations

import pytest

import libpypto as pypto
from libpypto.errors import InputError, PyptoError, VerifyError
from libpypto.ir.core import Document, Loc, make
from libpypto.ir.text import parse_doc, print_doc
from libpypto.ir.types import TileType
from libpypto.ir.module_ops import RUN
from libpypto.ir.verify import Diagnostic, verify, verify_or_raise

UNFUSED = ("tensor-to-tile,assign-memory,fuse{enable=false},forward,cse,dce,alloc,"
           "make-exec")


def messages(doc: Document) -> list[str]:
    return [d.message for d in verify(doc)]


def assert_rejected(doc: Document, want: str, loc: str | None = None) -> None:
    diags = verify(doc)
    hits = [d for d in diags if want in d.message]
    assert hits, f"no diagnostic containing {want!r}; got {[str(d) for d in diags]}"
    if loc is not None:
        assert str(hits[0].loc) == loc


def ops_named(doc_or_ops, name: str) -> list:
    ops = doc_or_ops.walk() if isinstance(doc_or_ops, Document) else \
        (o for top in doc_or_ops for o in top.walk())
    return [op for op in ops if op.name == name]


def top(doc: Document, name: str) -> list:
    return [op for op in doc.body if op.name == name]


def source_ops(doc: Document) -> list:
    return top(doc, "source")[0].regions[0] if top(doc, "source") else doc.body


# -- valid documents ----------------------------------------------------------------------------

@pytest.mark.slow
def test_examples_are_valid_at_every_level(ex, example, level):
    assert verify(ex.doc(example, level)) == []


@pytest.mark.slow
def test_unfused_exec_is_valid(ex, example):
    assert verify(pypto.lower(ex.doc(example, "tensor"), UNFUSED)) == []


# -- tensor level ----------------------------------------------------------------------------

@pytest.fixture
def softmax_tensor(ex):
    return ex.doc("softmax", "tensor")


def test_tensor_level_rejects_hand_edited_text(softmax_tensor):
    line = ops_named(softmax_tensor, "exp")[0].loc.line
    s = print_doc(softmax_tensor)
    assert s.count(" = exp %") == 1
    bad = parse_doc(s.replace(" = exp %", " = frobnicate %"))
    assert_rejected(bad, "unknown tensor-level op 'frobnicate'", f"softmax.py:{line}")
    bad = parse_doc(s.replace("tile=[8, 1024]", "tile=[8, 100]"))
    assert_rejected(bad, "tile shape (8, 100) is not 32-byte aligned in dim 1")


@pytest.mark.parametrize("op, tile, want", [
    ("exp", [8], "tile shape (8,) has rank 1 but the operand has rank 2"),
    ("exp", [8, 100], "tile shape (8, 100) is not 32-byte aligned in dim 1 (100 x 4 B = 400 "
                        "B); use a multiple of 8 elements for f32"),
    ("exp", None, "exp has no tile shape"),
    ("exp", [0, 1024], "exp tile [0] must be an int >= 1, not 0"),
    ("exp", "8x1024", "exp tile must be a list of an int >= 1, not '8x1024'"),
    ("sum", [8, 2], "tile shape (8, 2) is not 32-byte aligned in dim 1 (2 x 4 B = 8 B)"),
])
def test_tensor_level_tile_shapes(softmax_tensor, op, tile, want):
    target = ops_named(softmax_tensor, op)[0]
    if tile is None:
        del target.attrs["tile"]
    else:
        target.attrs["tile"] = tile
    assert_rejected(softmax_tensor, want, str(target.loc))


def test_tensor_level_assemble_into_a_non_parameter(softmax_tensor):
    asm = ops_named(softmax_tensor, "assemble")[0]
    asm.operands[1] = ops_named(softmax_tensor, "exp")[0].result
    assert_rejected(softmax_tensor, "assemble must write into a kernel parameter", str(asm.loc))
    asm.operands = asm.operands[:1]
    assert_rejected(softmax_tensor, "assemble takes 2 operands, not 1")


def test_tensor_level_unknown_op_and_result_types(softmax_tensor):
    exp = ops_named(softmax_tensor, "exp")[0]
    exp.name = "frobnicate"
    assert_rejected(softmax_tensor, "unknown tensor-level op 'frobnicate'", str(exp.loc))
    sub = ops_named(softmax_tensor, "sub")[0]
    sub.results[0].type = TileType("ub", sub.result.type.dtype, (8, 1024))
    assert_rejected(softmax_tensor, "sub result 0 must be a tensor, not ub.f32[8, 1024]")


def test_tensor_level_matmul_needs_cube_shapes(ex):
    doc = ex.doc("matmul", "tensor")
    mm = ops_named(doc, "matmul")[0]
    mm.attrs.pop("cube")
    assert_rejected(doc, "matmul needs cube (a list of 3 a list of 2 an int >= 1)", str(mm.loc))
    mm.attrs["cube"] = [[128, 128]]
    assert_rejected(doc, "matmul cube must have 3 entries, not 1")


def test_full_width_tile_need_not_be_aligned(ex):
    # a tile as wide as the tensor's last dim is fine even when that width is unaligned
    doc = ex.doc("softmax", "tensor")
    s = print_doc(doc).replace("1024", "1001")
    assert "tile=[8, 1001]" in s
    assert not any("aligned" in m for m in messages(parse_doc(s)))


@pytest.mark.parametrize("edit", [
    pytest.param(lambda d: ops_named(d, "sum")[0].attrs.update(dims=[7]),
                 id="reduce-dim-out-of-range"),
    pytest.param(lambda d: ops_named(d, "sum")[0].attrs.update(dims="q"),
                 id="reduce-dims-not-a-list"),
    pytest.param(lambda d: ops_named(d, "param")[0].attrs.pop("index"),
                 id="param-without-index"),
    pytest.param(lambda d: ops_named(d, "assemble")[0].attrs.update(offsets=[0]),
                 id="assemble-offsets-arity"),
])
def test_tensor_level_rejects_malformed_attributes(softmax_tensor, edit):
    edit(softmax_tensor)
    assert verify(softmax_tensor) != []


# -- tile level ------------------------------------------------------------------------------

@pytest.fixture
def softmax_tile(ex):
    return ex.doc("softmax", "tile")


@pytest.fixture
def matmul_tile(ex):
    return ex.doc("matmul", "tile")


def kernel(doc: Document, i: int):
    return [op for op in doc.body if op.name in ("kernel", "block", "program")][i]


def first(k, name: str):
    return ops_named(k.regions[0], name)[0]


def _undeclared(d):
    first(kernel(d, 1), "tload").operands[0] = first(kernel(d, 0), "tile").result


def _rank(d):
    t = first(kernel(d, 0), "tload").operands[0]
    t.type = TileType(t.type.space, t.type.dtype, (1, 8, 1024))


@pytest.mark.parametrize("edit, want", [
    (_undeclared, "tload uses a tile not declared in this kernel"),
    (lambda d: first(kernel(d, 0), "tload").attrs.update(offsets=[0]),
     "tload offsets must have 2 entries"),
    (lambda d: first(kernel(d, 0), "tload").attrs.pop("offsets"),
     "tload needs offsets (a list of an expression)"),
    (lambda d: first(kernel(d, 0), "tload").attrs.update(valid=[8]),
     "tload valid must have 2 entries"),
    (lambda d: first(kernel(d, 0), "tstore").attrs.update(valid=[8, 1, 1]),
     "tstore valid must have 2 entries"),
    (_rank, "tload of a rank-3 tile from a rank-2 tensor"),
    (lambda d: first(kernel(d, 0), "tload").operands.pop(), "tload takes 2 operands, not 1"),
    (lambda d: first(kernel(d, 0), "tstore").operands.reverse(),
     "tstore operand 0 must be a tile, not f32["),
    (lambda d: setattr(first(kernel(d, 2), "texp"), "name", "tfrob"),
     "unknown tile instruction 'tfrob'"),
    (lambda d: setattr(first(kernel(d, 1), "tsub"), "operands", [top(d, "gm")[0].result]),
     "tsub takes 2 to 3 operands, not 1"),
    (lambda d: kernel(d, 1).attrs.pop("grid"), "kernel needs grid (a list of an expression)"),
])
def test_tile_level_rejects(softmax_tile, edit, want):
    assert verify(softmax_tile) == []
    edit(softmax_tile)
    assert_rejected(softmax_tile, want)


def test_tile_level_hand_edited_text(softmax_tile):
    s = print_doc(softmax_tile)
    bad = parse_doc(s.replace("\nkernel {", "\nfrob\nkernel {", 1))
    assert_rejected(bad, "'frob' in a tile-level graph")
    softmax_tile.body = [op for op in softmax_tile.body if op.name != "source"]
    assert_rejected(softmax_tile, "expected one source (tensor graph) op, found 0")


def test_tile_level_checks_the_source_graph(softmax_tile):
    exp = ops_named(source_ops(softmax_tile), "exp")[0]
    exp.attrs["tile"] = [8, 100]
    assert_rejected(softmax_tile, "is not 32-byte aligned", str(exp.loc))


def set_space(v, space: str) -> None:
    v.type = TileType(space, v.type.dtype, v.type.shape)


@pytest.mark.parametrize("space, wants", [
    ("l0a", ["tstore from a l0a tile", "tmatmul into a l0a tile"]),
    ("ub", ["tmatmul into a ub tile"]),
])
def test_tile_level_matmul_accumulator_space(matmul_tile, space, wants):
    mm = first(kernel(matmul_tile, 0), "tmatmul")
    assert mm.operands[0].type.space == "l0c"
    set_space(mm.operands[0], space)
    for want in wants:
        assert_rejected(matmul_tile, want)


def test_tile_level_matmul_operand_spaces(matmul_tile):
    mm = first(kernel(matmul_tile, 0), "tmatmul")
    set_space(mm.operands[1], "ub")
    assert_rejected(matmul_tile, "tmatmul from a ub/l0b tile")
    assert_rejected(matmul_tile, "textract into a ub tile")
    load = first(kernel(matmul_tile, 0), "tload")
    set_space(load.operands[0], "l0c")
    assert_rejected(matmul_tile, "tload into a l0c tile")
    assert_rejected(matmul_tile, "textract from a l0c tile")


def test_tile_level_loops(matmul_tile):
    loop = first(kernel(matmul_tile, 0), "for")
    loop.attrs = {"start": 0, "stop": 2}
    assert_rejected(matmul_tile, "for needs var")
    loop.attrs = {"var": "k", "start": 0, "stop": 2}
    assert_rejected(matmul_tile, "for needs step")
    loop.attrs = {"var": "k; exit(0)", "start": 0, "stop": 2, "step": 1}
    assert_rejected(matmul_tile, "for var must be a name (letters, digits and _), not 'k; exit(0)'")


# -- block level -----------------------------------------------------------------------------

@pytest.fixture
def softmax_block(ex):
    return ex.doc("softmax", "block")


@pytest.mark.parametrize("space", ["any", "gm"])
def test_block_tile_must_have_a_memory_space(softmax_block, space):
    set_space(ops_named(softmax_block, "tile")[0].result, space)
    assert_rejected(softmax_block, f"tile in space {space!r} at block level (run assign-memory)")


def test_block_level_rejects(ex):
    doc = ex.doc("softmax", "block")
    t = [op for op in ops_named(doc, "tile") if op.attrs["addr"] % 64 == 0][0]
    t.attrs["addr"] += 2
    assert_rejected(doc, f"tile address {t.attrs['addr']} is not 32-byte aligned")
    doc = ex.doc("softmax", "block")
    instr = first(kernel(doc, 0), "tload")
    instr.attrs.pop("pipe")
    assert_rejected(doc, "tload has no pipe at block level")
    doc = ex.doc("softmax", "block")
    kernel(doc, 0).name = "kernel"
    assert_rejected(doc, "'kernel' in a block-level graph")


def test_block_capacity_over_the_target(softmax_block):
    cap = softmax_block.attrs["target"]["buffers"]["ub"]
    blk = kernel(softmax_block, 0)
    s = print_doc(softmax_block)
    used = blk.attrs["buffers"]["ub"]
    bad = parse_doc(s.replace(f"ub={used}}}", f"ub={cap + 1}}}", 1))
    msg = f"block uses {cap + 1} B of ub but the target has {cap} B"
    assert_rejected(bad, msg, str(blk.loc))


# -- exec, sched, code, run ------------------------------------------------------------------

@pytest.fixture
def softmax_exec(ex):
    return ex.doc("softmax", "exec")


def task(doc: Document, i: int = 0):
    return top(doc, "task")[i]


@pytest.mark.parametrize("edit, want", [
    (lambda d: task(d).attrs.update(program="p9"), "task refers to unknown program 'p9'"),
    (lambda d: task(d).operands.pop(), "task passes 1 tensors to p0, which takes 2"),
    (lambda d: task(d).attrs.update(scalars=[]), "task passes the wrong number of scalars to p0"),
    (lambda d: task(d).attrs.update(after=[0]), "task depends on 0, which is not an earlier task"),
    (lambda d: task(d).attrs.update(after=[-1]), "task after [0] must be an int >= 0, not -1"),
    (lambda d: task(d).attrs.update(after=["t0"]), "task after [0] must be an int >= 0, not 't0'"),
    (lambda d: first(kernel(d, 0), "tload").attrs.pop("pipe"), "tload has no pipe at block level"),
    (lambda d: d.body.append(make("frob")), "'frob' in an exec-level graph"),
])
def test_exec_level_rejects(softmax_exec, edit, want):
    assert verify(softmax_exec) == []
    edit(softmax_exec)
    assert_rejected(softmax_exec, want)


@pytest.fixture
def unfused_exec(ex):
    doc = pypto.lower(pypto.trace(ex.path("softmax")), UNFUSED)
    assert len(top(doc, "task")) >= 3
    return doc


def test_exec_dependency_on_a_later_task(unfused_exec):
    tasks = top(unfused_exec, "task")
    assert verify(unfused_exec) == []
    tasks[0].attrs["after"] = [len(tasks) - 1]
    assert_rejected(unfused_exec, f"task depends on {len(tasks) - 1}, which is not an earlier task")


def test_exec_text_edit(softmax_exec):
    s = print_doc(softmax_exec)
    assert 'program="p0"' in s
    bad = parse_doc(s.replace('program="p0"', 'program="p9"'))
    assert_rejected(bad, "task refers to unknown program 'p9'", str(task(softmax_exec).loc))


@pytest.fixture
def unfused_sched(unfused_exec, ex):
    return pypto.schedule(unfused_exec, "a2", ex.bind("softmax"))


def schedule_op(doc):
    return top(doc, "schedule")[0]


def test_sched_order_must_be_a_permutation(unfused_sched):
    s = schedule_op(unfused_sched)
    n = len(s.attrs["order"])
    assert sorted(s.attrs["order"]) == list(range(n)) and verify(unfused_sched) == []
    s.attrs["order"] = [0] * n
    assert_rejected(unfused_sched, "schedule order must be a permutation of the tasks")
    s.attrs["order"] = list(range(n - 1))
    assert_rejected(unfused_sched, "schedule order must list every task once")
    s.attrs["order"] = list(range(1, n + 1))
    assert_rejected(unfused_sched, "schedule order must be a permutation of the tasks")


def test_sched_level_rejects(unfused_sched):
    s = schedule_op(unfused_sched)
    s.attrs["instances"][0][2] = 999
    assert_rejected(unfused_sched, "instance placed on core 999, which the target does not have")
    unfused_sched.body.remove(s)
    assert_rejected(unfused_sched, "expected one schedule op, found 0")
    assert_rejected(unfused_sched, "expected one schedule op")


def test_code_level_rejects(ex):
    doc = ex.doc("softmax", "code")
    code = top(doc, "code")[0]
    code.attrs["backend"] = "fortran"
    assert_rejected(doc, "code backend must be one of 'c', 'numpy', not 'fortran'")
    code.attrs["backend"] = "c"
    del code.attrs["source"]
    assert_rejected(doc, "code needs source (a string)")
    doc = ex.doc("softmax", "code")
    doc.body.append(make("code", attrs={"backend": "c", "source": ""}))
    assert_rejected(doc, "expected one code op, found 2")


def test_code_level_includes_sched_checks(ex):
    doc = ex.doc("softmax", "code")
    schedule_op(doc).attrs["order"] = [5]
    assert_rejected(doc, "schedule order must be a permutation of the tasks")


MODULE = {"kernel": "k", "file": "k.py", "params": [], "symbols": {}, "constraints": [],
          "consts": {}}


def test_module_attributes(softmax_tensor):
    assert verify(softmax_tensor) == []
    softmax_tensor.attrs["kernel"] = "k\nimport os"
    assert_rejected(softmax_tensor, "module kernel must be a name (letters, digits and _), not "
                                    "'k\\nimport os'")
    softmax_tensor.attrs["kernel"] = "k"
    softmax_tensor.attrs["symbols"]["x_0"]["kind"] = "huge"
    assert_rejected(softmax_tensor, "module symbols {'x_0'} kind must be one of")
    del softmax_tensor.attrs["symbols"]
    assert_rejected(softmax_tensor, "module needs symbols")


def test_run_record_keys():
    full = {"verdict": "pass", "backend": "c", "threads": 1, "wall_s": 0.0, "walls_s": [0.0],
            "bindings": {}, "outputs": [], "checks": [], "events": [], "tasks": [],
            "compile": {}, "notice": "", "environment": {}}
    assert verify(Document("run", [make("run", attrs=full)], dict(MODULE))) == []
    for key in full:
        attrs = {k: v for k, v in full.items() if k != key}
        assert messages(Document("run", [make("run", attrs=attrs)], dict(MODULE))) == \
            [f"run needs {key} ({RUN[key][0].what})"]
    bad = dict(full, events=[[0, 0, 0, 1]])
    assert messages(Document("run", [make("run", attrs=bad)], dict(MODULE))) == \
        ["run events [0] must be [an int >= 0, an int >= 0, an int >= 0, an int, an int], "
         "not [0, 0, 0, 1]"]
    assert messages(Document("run", [], dict(MODULE))) == ["expected one run op, found 0"]


def test_real_run_record_is_valid(ex):
    rec = pypto.run(pypto.trace(ex.path("add")), backend="numpy", threads=1, seed=1)
    assert rec.level == "run" and verify(rec) == []


# -- reporting -------------------------------------------------------------------------------

def test_verify_or_raise_message(softmax_tensor):
    verify_or_raise(softmax_tensor, "in x.ir")          # valid: no error
    exp, div = ops_named(softmax_tensor, "exp")[0], ops_named(softmax_tensor, "div")[0]
    exp.name, div.name = "frob", "blah"
    with pytest.raises(VerifyError) as exc:
        verify_or_raise(softmax_tensor, "in x.ir")
    e = exc.value
    assert isinstance(e, PyptoError) and e.exit_code == 1
    assert e.message == "invalid tensor-level graph in x.ir: unknown tensor-level op 'frob' " \
                        "(and 1 more)"
    assert e.loc == exp.loc and e.loc.file == "softmax.py"
    assert str(e) == f"softmax.py:{exp.loc.line}: " + e.message


def test_verify_or_raise_without_location_or_context():
    with pytest.raises(VerifyError) as exc:
        verify_or_raise(Document("run", [], dict(MODULE)))
    assert str(exc.value) == "invalid run-level graph: expected one run op, found 0"


def test_diagnostic_str():
    assert str(Diagnostic("bad")) == "bad"
    assert str(Diagnostic("bad", Loc("a.py", 3))) == "a.py:3: bad"


def test_reading_an_invalid_file_reports_it(softmax_tensor):
    from libpypto.driver import parse_ir
    s = print_doc(softmax_tensor).replace(" = exp %", " = frob %")
    with pytest.raises(InputError, match=r"invalid tensor-level graph in e\.ir: unknown "
                                          r"tensor-level op 'frob'"):
        parse_ir(s.encode(), "e.ir")
