"""The C backend's codegen analysis on its own (libpypto/codegen/c_plan.py): what plan_program
decides for small exec-level programs, read off the plan, never off C text.

Programs are written in the text form; `%N` tiles are numbered in declaration order, so
`tiles(prog)[N]` is `%N`. Each test states the planning rule it protects.
"""
from __future__ import annotations

import textwrap

import numpy as np
import pytest

import libpypto as pypto
from libpypto.codegen import c_plan as P
from libpypto.driver import parse_ir
from libpypto.ir.text import fmt_attr, print_doc
from libpypto.targets import load_target

BUFFERS = {"ub": 4194304, "l1": 1048576, "l0a": 262144, "l0b": 262144, "l0c": 262144}
TARGET = fmt_attr({**load_target("host").record(), "buffers": BUFFERS})


def exec_doc(body: str, tensors: list, core: str = "vector"):
    """An exec-level document around one program p0 over tensors [(name, type, role)]."""
    params = ", ".join(f'"{n}"' for n, _, _ in tensors)
    lines = ["pypto-ir 1.1 exec",
             f'module {{constraints=[], consts={{}}, file="k.py", kernel="k", '
             f'params=[{params}], symbols={{}}, target={TARGET}}}',
             "source {"]
    lines += [f'  %{n} = param {{index={i}, role="{r}"}} : {t}'
              for i, (n, t, r) in enumerate(tensors)]
    lines += ["}"]
    lines += [f'%{n} = gm {{index={i}, param="{n}", role="{r}"}} : {t}'
              for i, (n, t, r) in enumerate(tensors)]
    lines += [f'program {{buffers={{}}, core="{core}", grid_rank=1, name="p0", ops=[], '
              f'scalars=[]}} {{']
    lines += [f"  %a{i} = arg {{index={i}}} : {t}" for i, (_, t, _) in enumerate(tensors)]
    lines += ["  " + line for line in textwrap.dedent(body).strip().splitlines()]
    lines += ["}"]
    args = ", ".join(f"%{n}" for n, _, _ in tensors)
    lines += [f'task {args} {{after=[], block="b0", grid=[1], ops=[], program="p0", '
              f'scalars=[], reads=[], writes=[]}}']
    return parse_ir("\n".join(lines).encode(), "test")


def plan_of(doc):
    prog = next(op for op in doc.body if op.name == "program")
    base, _ = P.arena_layout(doc.attrs["target"]["buffers"])
    return P.plan_program(prog, base), prog


def tiles(prog) -> list:
    return [op.result for op in prog.walk() if op.name == "tile"]


def units(plan) -> list:
    """Every unit of the plan, nested ones (loop bodies, row runs) after their parent."""
    out, todo = [], list(plan.units)
    while todo:
        u = todo.pop(0)
        out.append(u)
        inner = plan.bodies.get(u.op, []) if isinstance(u, P.Single) else getattr(u, "units", [])
        todo[:0] = inner
    return out


def kinds(unit_list) -> list:
    return [type(u).__name__ + (":" + u.op.name if isinstance(u, P.Single) else "")
            for u in unit_list]


# -- views ------------------------------------------------------------------------------------

MATMUL = [("a", "f32[64, 64]", "input"), ("b", "f32[64, 64]", "input"),
          ("c", "f32[64, 64]", "output")]
MATMUL_BODY = """
%0 = tile {addr=0} : l0c.f32[64, 64]
%1 = tile {addr=0} : l1.f32[64, 64]
tload %1, %a0 {offsets=[0, 0], pipe="MTE2", valid=[64, 64]}
%2 = tile {addr=16384} : l1.f32[64, 64]
tload %2, %a1 {offsets=[0, 0], pipe="MTE2", valid=[64, 64]}
%3 = tile {addr=0} : l0a.f32[64, 64]
textract %3, %1 {offsets=[0, 0], pipe="MTE1", trans=false}
%4 = tile {addr=0} : l0b.f32[64, 64]
textract %4, %2 {offsets=[0, 0], pipe="MTE1", trans=false}
CLOBBER
tmatmul %0, %3, %4 {init=1, k_valid=64, pipe="M"}
tstore %0, %a2 {offsets=[0, 0], pipe="FIX", valid=[64, 64]}
"""


def test_textract_feeding_only_tmatmul_is_a_view():
    # rule: a textract read only by tmatmul operands is a pointer into its L1 source, and a
    # tload read only through such views is a pointer into GM; neither is declared in the arena
    plan, prog = plan_of(exec_doc(MATMUL_BODY.replace("CLOBBER", ""), MATMUL, "cube"))
    t = tiles(prog)
    args = [op.result for op in prog.regions[0] if op.name == "arg"]
    assert plan.views[t[3]] == P.View("extract", t[1])
    assert plan.views[t[4]] == P.View("extract", t[2])
    assert plan.views[t[1]] == P.View("load", args[0])
    assert plan.views[t[2]] == P.View("load", args[1])
    assert t[0] not in plan.views                 # the accumulator is a real tile
    assert not plan.declared(t[3]) and plan.declared(t[0])


def test_textract_whose_source_is_overwritten_is_a_copy():
    # rule: no instruction between the copy and its last read may write the source's bytes
    # (%5 reuses %1's L1 bytes before tmatmul reads %3)
    clobber = ('%5 = tile {addr=0} : l1.f32[64, 64]\n'
               'tload %5, %a1 {offsets=[0, 0], pipe="MTE2", valid=[64, 64]}')
    plan, prog = plan_of(exec_doc(MATMUL_BODY.replace("CLOBBER", clobber), MATMUL, "cube"))
    t = tiles(prog)
    assert t[3] not in plan.views
    assert plan.views[t[4]] == P.View("extract", t[2])     # %2 is left alone: still a view
    assert plan.declared(t[3])


ALIAS = [("x", "f32[8, 32]", "input"), ("y", "f32[8, 32]", "output")]
ALIAS_BODY = """
%0 = tile {addr=0} : ub.f32[8, 32]
tload %0, %a0 {offsets=[0, 0], pipe="MTE2", valid=[8, 32]}
%1 = tile {addr=1024} : ub.f32[8, 32]
tmov %1, %0 {pipe="V"}
BETWEEN
%2 = tile {addr=2048} : ub.f32[8, 32]
texp %2, %1 {pipe="V"}
tstore %2, %a1 {offsets=[0, 0], pipe="MTE3", valid=[8, 32]}
"""


def test_tmov_of_same_shape_and_dtype_is_an_alias():
    # rule: a tmov of the same dtype and shape is its source under another name, in the
    # source's bytes
    plan, prog = plan_of(exec_doc(ALIAS_BODY.replace("BETWEEN", ""), ALIAS))
    t = tiles(prog)
    assert plan.views[t[1]] == P.View("alias", t[0])
    assert plan.extent[t[1]] == plan.extent[t[0]]
    assert not plan.declared(t[1])


def test_tmov_whose_source_changes_is_a_copy():
    # rule: the source must keep its bytes until the alias's last read (texpands rewrites %0)
    between = 'texpands %0 {pipe="V", value=0.0}'
    plan, prog = plan_of(exec_doc(ALIAS_BODY.replace("BETWEEN", between), ALIAS))
    t = tiles(prog)
    assert t[1] not in plan.views
    assert plan.extent[t[1]] == (1024, 1024 + 8 * 32 * 4)


def test_tmov_into_another_shape_is_a_copy():
    # rule: only a tmov of the same dtype and shape is an alias ((8, 32) into (4, 64) is a
    # reshaping copy)
    body = ALIAS_BODY.replace("BETWEEN", "").replace(
        "%1 = tile {addr=1024} : ub.f32[8, 32]", "%1 = tile {addr=1024} : ub.f32[4, 64]").replace(
        "%2 = tile {addr=2048} : ub.f32[8, 32]", "%2 = tile {addr=2048} : ub.f32[4, 64]").replace(
        'MTE3", valid=[8, 32]', 'MTE3", valid=[4, 64]')
    plan, prog = plan_of(exec_doc(body, [("x", "f32[8, 32]", "input"),
                                         ("y", "f32[4, 64]", "output")]))
    assert tiles(prog)[1] not in plan.views and plan.declared(tiles(prog)[1])


# -- fused runs and fusion hazards ------------------------------------------------------------

FUSE = [("x", "f32[8, 32]", "input"), ("b", "f32[1, 32]", "input"),
        ("y", "f32[8, 32]", "output")]
FUSE_BODY = """
%0 = tile {addr=0} : ub.f32[8, 32]
tload %0, %a0 {offsets=[0, 0], pipe="MTE2", valid=[8, 32]}
%1 = tile {addr=1024} : ub.f32[1, 32]
tload %1, %a1 {offsets=[0, 0], pipe="MTE2", valid=[1, 32]}
%2 = tile {addr=2048} : ub.f32[8, 32]
texp %2, %0 {pipe="V"}
%3 = tile {addr=ADDR} : ub.f32[8, 32]
tadd %3, %2, %1 {pipe="V"}
tstore %3, %a2 {offsets=[0, 0], pipe="MTE3", valid=[8, 32]}
"""


def test_same_shape_elementwise_run_is_one_fused_unit():
    # rule: consecutive elementwise instructions over one shape are one unit; a result read
    # only inside the run (%2) is not stored, one read after it (%3) is
    plan, prog = plan_of(exec_doc(FUSE_BODY.replace("ADDR", "4096"), FUSE))
    assert kinds(plan.units) == ["Single:tload", "Single:tload", "Fused", "Single:tstore"]
    fused = plan.units[2]
    assert [op.name for op in fused.instrs] == ["texp", "tadd"]
    assert [op.name for op in fused.stored] == ["tadd"]
    assert not fused.hazard


def test_elementwise_over_another_shape_starts_a_new_unit():
    # rule: only instructions over the run's shape join it
    body = FUSE_BODY.replace("ADDR", "4096").replace(
        "tstore %3", '%4 = tile {addr=8192} : ub.f32[1, 32]\n'
                     'tneg %4, %1 {pipe="V"}\n'
                     'tstore %3')
    plan, _ = plan_of(exec_doc(body, FUSE))
    assert kinds(plan.units) == ["Single:tload", "Single:tload", "Fused", "Single:tneg",
                                 "Single:tstore"]


def test_overlapping_buffer_reuse_falls_back():
    # rule: a run whose store (%3, reusing %1's bytes after its last use) overlaps a tile it
    # still reads from memory (%1 is broadcast to every row) is marked hazard: one pass would
    # overwrite %1 while later rows read it
    plan, _ = plan_of(exec_doc(FUSE_BODY.replace("ADDR", "1024"), FUSE))
    assert kinds(plan.units) == ["Single:tload", "Single:tload", "Fused", "Single:tstore"]
    assert plan.units[2].hazard


# -- row runs ---------------------------------------------------------------------------------

SOFTMAX = '''
import libpypto as pypto

@pypto.jit
def softmax_w(x: pypto.Tensor[[64, COLS], pypto.DT_FP32],
              w: pypto.Tensor[[1, COLS], pypto.DT_FP32],
              y: pypto.Tensor[[64, COLS], pypto.DT_FP32]):
    pypto.set_vec_tile_shapes(8, COLS)
    m = pypto.amax(x, dim=-1, keepdim=True)
    e = pypto.exp(x - m)
    y[:] = e / pypto.sum(e, dim=-1, keepdim=True) * w
'''


def softmax_plan(tmp_path, cols: int):
    src = tmp_path / "softmax_w.py"
    src.write_text(SOFTMAX.replace("COLS", str(cols)))
    doc = pypto.lower(pypto.trace(str(src)))
    progs = [op for op in doc.body if op.name == "program"]
    assert len(progs) == 1
    base, _ = P.arena_layout(doc.attrs["target"]["buffers"])
    return P.plan_program(progs[0], base), progs[0]


def test_softmax_rows_run_one_at_a_time_on_the_stack(tmp_path):
    # rules: row-wise instructions on (8, 1024) tiles become one row run; tiles made and used
    # only in it get a row on the stack; the (1, 1024) weight load moves before the loop; a
    # pass takes along the sum of the tile it makes and the last pass the store; the store
    # of the same dtype streams
    plan, prog = softmax_plan(tmp_path, 1024)
    runs = [u for u in plan.units if isinstance(u, P.RowRun)]
    assert len(runs) == 1 and plan.row_runs == runs
    run = runs[0]
    assert run.rows == 8
    assert [op.name for op in run.hoisted] == ["tload"]
    assert run.hoisted[0].operands[0].type.shape == (1, 1024)
    assert [op.name for op in run.body] == ["tload", "treduce", "tsub", "texp", "treduce",
                                            "tdiv", "tmul", "tstore"]
    assert run.local and run.local == plan.row_local
    assert all(v.type.shape[0] == 8 and not plan.declared(v) for v in run.local)
    made = {op.operands[0] for op in run.body if op.name != "tstore"}
    assert made <= run.local            # every tile the run writes lives only in it
    assert run.streams == [run.body[-1]]
    assert kinds(run.units) == ["Single:tload", "Single:treduce", "RowPass", "RowPass"]
    exp_pass, out_pass = run.units[2], run.units[3]
    assert [op.name for op in exp_pass.instrs] == ["tsub", "texp"]
    assert [op.attrs["kind"] for op in exp_pass.reductions] == ["sum"]
    assert exp_pass.store is None
    assert [op.name for op in out_pass.instrs] == ["tdiv", "tmul"]
    assert out_pass.store is run.body[-1] and not out_pass.reductions
    assert not any(p.split for p in (exp_pass, out_pass))


def test_short_rows_are_not_a_row_run(tmp_path):
    # rule: rows shorter than ROW_MIN elements are not worth a row run
    plan, _ = softmax_plan(tmp_path, 32)
    assert not plan.row_runs and not plan.row_local
    assert not any(isinstance(u, (P.RowRun, P.RowPass)) for u in units(plan))


def test_tensor_loaded_and_stored_in_one_run_stays_apart():
    # rule: a GM tensor stored in a row run is not loaded in it (row r's store could reach a
    # row a later iteration still loads): the run stops before the store
    body = """
    %0 = tile {addr=0} : ub.f32[8, 128]
    tload %0, %a0 {offsets=[0, 0], pipe="MTE2", valid=[8, 128]}
    %1 = tile {addr=4096} : ub.f32[8, 128]
    texp %1, %0 {pipe="V"}
    tstore %1, %a0 {offsets=[1, 0], pipe="MTE3", valid=[8, 128]}
    """
    plan, _ = plan_of(exec_doc(body, [("x", "f32[64, 128]", "output")]))
    (run,) = plan.row_runs
    assert [op.name for op in run.span] == ["tload", "texp"]
    assert kinds(plan.units) == ["RowRun", "Single:tstore"]
    other = body.replace("tstore %1, %a0", "tstore %1, %a1")
    plan, _ = plan_of(exec_doc(other, [("x", "f32[64, 128]", "input"),
                                       ("y", "f32[64, 128]", "output")]))
    (run,) = plan.row_runs               # the control: another tensor joins the run
    assert [op.name for op in run.span] == ["tload", "texp", "tstore"]


WIDE = [("x", "f32[8, 16392]", "input"), ("y", "f32[8, 16392]", "output"),
        ("z", "f32[8, 16392]", "output")]
WIDE_BODY = """
%0 = tile {addr=0} : ub.f32[8, 16392]
tload %0, %a0 {offsets=[0, 0], pipe="MTE2", valid=[8, 16392]}
%1 = tile {addr=524544} : ub.f32[8, 16392]
texp %1, %0 {pipe="V"}
%2 = tile {addr=ADDR} : ub.f32[8, 16392]
tadd %2, %1, %0 {pipe="V"}
tstore %2, %a1 {offsets=[0, 0], pipe="MTE3", valid=[8, 16392]}
tstore %1, %a2 {offsets=[0, 0], pipe="MTE3", valid=[8, 16392]}
"""


def test_row_pass_over_a_hazard_is_split():
    # rules: rows over ROW_BYTES are used in place (not local); a pass whose store (%2, in
    # %0's bytes) overlaps a tile it reads from memory (%0) is split into one pass per
    # instruction, and takes nothing along
    plan, prog = plan_of(exec_doc(WIDE_BODY.replace("ADDR", "0"), WIDE))
    (run,) = plan.row_runs
    assert not run.local
    assert kinds(run.units) == ["Single:tload", "RowPass", "RowPass", "Single:tstore",
                                "Single:tstore"]
    assert [[op.name for op in u.instrs] for u in run.units[1:3]] == [["texp"], ["tadd"]]
    assert all(u.split and u.store is None for u in run.units[1:3])
    plan, _ = plan_of(exec_doc(WIDE_BODY.replace("ADDR", "1049088"), WIDE))
    (run,) = plan.row_runs                   # the control: no overlap, one pass
    assert kinds(run.units) == ["Single:tload", "RowPass", "Single:tstore", "Single:tstore"]
    assert not run.units[1].split


SHIFT_BODY = """
%0 = tile {addr=0} : ub.f32[8, 16392]
tload %0, %a0 {offsets=[0, 0], pipe="MTE2", valid=[8, 16392]}
%1 = tile {addr=1049088} : ub.f32[8, 16392]
texp %1, %0 {pipe="V"}
%2 = tile {addr=ADDR} : ub.f32[8, 16392]
tadd %2, %1, %1 {pipe="V"}
tstore %2, %a1 {offsets=[0, 0], pipe="MTE3", valid=[8, 16392]}
"""


def test_row_run_stops_where_rows_would_reorder_accesses():
    # rule: no access may move before an overlapping one it followed. %2 starts one row into
    # %0 (both in place: rows over ROW_BYTES), so row r of tadd would write %0's row r + 1
    # before row r + 1 is loaded: tadd cannot join the run of the load
    plan, _ = plan_of(exec_doc(SHIFT_BODY.replace("ADDR", str(16392 * 4)), WIDE[:2]))
    assert [[op.name for op in run.span] for run in plan.row_runs] == [
        ["tload", "texp"], ["tadd", "tstore"]]
    plan, _ = plan_of(exec_doc(SHIFT_BODY.replace("ADDR", "2098176"), WIDE[:2]))
    assert [[op.name for op in run.span] for run in plan.row_runs] == [
        ["tload", "texp", "tadd", "tstore"]]        # the control: apart, one run


# -- the plan as a whole ----------------------------------------------------------------------

def test_matmul_plans_its_workspace():
    # rule: the register-blocked kernel packs b into panels of whole PP_NR_MAX columns, one k
    # chunk of at most PP_KC steps (here 64 columns x 64 k), and widens a bf16 a chunk into
    # the workspace after them (64 rows x 64 k); fp32 a is read in place
    bf16 = [(n, t.replace("f32", "bf16") if r == "input" else t, r) for n, t, r in MATMUL]
    body = MATMUL_BODY.replace("CLOBBER", "").replace("l1.f32", "l1.bf16").replace(
        "l0a.f32", "l0a.bf16").replace("l0b.f32", "l0b.bf16")
    plan, _ = plan_of(exec_doc(body, bf16, "cube"))
    assert plan.workspace_bytes == 4 * (64 * 64 + 64 * 64)
    plan, _ = plan_of(exec_doc(MATMUL_BODY.replace("CLOBBER", ""), MATMUL, "cube"))
    assert plan.workspace_bytes == 4 * 64 * 64


def test_matmul_workspace_rounds_to_whole_panels_and_one_k_chunk():
    # rule: N rounds up to whole panels of PP_NR_MAX (32) columns; K counts at most PP_KC
    from libpypto.codegen.c_plan import PP_KC, PP_NR_MAX, _workspace_floats
    from types import SimpleNamespace as NS

    def operand(shape, dt):
        return NS(type=NS(shape=shape, dtype=NS(name=dt)))
    op = NS(operands=[None, operand((48, 1000), "f32"), operand((1000, 40), "f32")])
    assert (PP_KC, PP_NR_MAX) == (256, 32)
    assert _workspace_floats(op) == 64 * 256
    op.operands[1] = operand((48, 100), "f16")
    op.operands[2] = operand((100, 40), "f16")
    assert _workspace_floats(op) == (64 + 48) * 100


def test_loops_hold_the_units_of_their_body():
    # rule: a for is one unit; the units of its region are planned like the body's
    body = """
    for {start=0, step=1, stop=4, var="k0"} {
    """ + FUSE_BODY.replace("ADDR", "4096") + "}"
    plan, _ = plan_of(exec_doc(body, FUSE))
    assert kinds(plan.units) == ["Single:for"]
    assert kinds(plan.bodies[plan.units[0].op]) == ["Single:tload", "Single:tload", "Fused",
                                                   "Single:tstore"]


def test_names_and_extents_follow_the_program(tmp_path):
    # rule: args keep their names, tiles are t<N> after them, extents are the arena places
    plan, prog = softmax_plan(tmp_path, 1024)
    args = [op.result for op in prog.regions[0] if op.name == "arg"]
    assert [plan.names[a] for a in args] == ["a0", "a1", "a2"]
    t = tiles(prog)
    assert [plan.names[v] for v in t] == [f"t{len(args) + i}" for i in range(len(t))]
    for op in prog.walk():
        if op.name == "tile" and op.result not in plan.views:
            lo = op.attrs.get("addr", 0)           # ub is the arena's first space
            assert plan.extent[op.result] == (lo, lo + op.result.type.nbytes)


def test_planning_leaves_the_program_alone(tmp_path):
    src = tmp_path / "softmax_w.py"
    src.write_text(SOFTMAX.replace("COLS", "1024"))
    doc = pypto.lower(pypto.trace(str(src)))
    before = print_doc(doc)
    prog = next(op for op in doc.body if op.name == "program")
    base, _ = P.arena_layout(doc.attrs["target"]["buffers"])
    a, b = P.plan_program(prog, base), P.plan_program(prog, base)
    assert print_doc(doc) == before
    assert kinds(units(a)) == kinds(units(b)) and a.views == b.views


ROPE = '''
import libpypto as pypto
F32 = pypto.DT_FP32

@pypto.jit
def rope(x: pypto.Tensor[["T", 32, 128], F32], cos: pypto.Tensor[["T", 1, 64], F32],
         sin: pypto.Tensor[["T", 1, 64], F32], out: pypto.Tensor[["T", 32, 128], F32]):
    pypto.set_vec_tile_shapes(ROWS, 32, 64)
    x1, x2 = x[:, :, 0:64], x[:, :, 64:128]
    out[:, :, 0:64] = x1 * cos - x2 * sin
    out[:, :, 64:128] = x2 * cos + x1 * sin
'''


def _rope(tmp_path, rows: int):
    src = tmp_path / f"rope{rows}.py"
    src.write_text(ROPE.replace("ROWS", str(rows)))
    return src


def test_hoisted_loads_sharing_arena_bytes_take_storage_of_their_own(tmp_path):
    # rule: with 32-row tiles rope's tiles fill the host's UB and alloc gives cos and sin
    # one buffer; loading both before the row loop would overwrite cos with sin, so the
    # run split into passes over whole-tile intermediates (4.9x the 16-row time in
    # bench/fused.py). Loads every row reads whole, whose only write is the load and whose
    # reads are all in the run, take storage of their own and the run stays whole
    doc = pypto.lower(pypto.trace(str(_rope(tmp_path, 32))))
    base, _ = P.arena_layout(doc.attrs["target"]["buffers"])
    for prog in [op for op in doc.body if op.name == "program"]:
        plan = P.plan_program(prog, base)
        (run,) = plan.row_runs
        hoisted = {op.operands[0] for op in run.hoisted}
        assert len(hoisted) == 2 and run.own == hoisted
        assert len({v.type.shape for v in hoisted}) == 1
        addrs = {op.attrs["addr"] for op in prog.walk() if op.name == "tile"
                 and op.result in hoisted}
        assert len(addrs) == 1                      # alloc shared their bytes
        assert [op.name for op in run.body].count("tstore") >= 1


@pytest.mark.needs_cc
def test_own_storage_computes_rope(tmp_path):
    """rope with 32-row tiles (its runs load cos and sin into storage of their own), 100
    rows (a tail in the last tile), against numpy."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((100, 32, 128), dtype=np.float32)
    c = rng.standard_normal((100, 1, 64), dtype=np.float32)
    s = rng.standard_normal((100, 1, 64), dtype=np.float32)
    o = np.zeros_like(x)
    _kernel(_rope(tmp_path, 32))(x, c, s, o)
    x1, x2 = x[..., :64], x[..., 64:]
    want = np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], -1)
    np.testing.assert_allclose(o, want, rtol=1e-5, atol=1e-5)


def _kernel(path):
    import importlib.util
    spec = importlib.util.spec_from_file_location(path.stem, path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m.rope
