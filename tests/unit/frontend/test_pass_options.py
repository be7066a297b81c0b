"""The reference's pass knobs (set_pass_options, set_pass_config, jit pass_options=) mapped
onto pypto-lower pass options: recorded in the traced document (text and msgpack round
trip), applied to the named passes when they run (a fake registered pass stands in for the
passes other branches are building), warned about when their pass never runs, an error at
the op file's line when the pass refuses them; sg_set_scope honoured by fuse."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import libpypto as pypto
from libpypto import driver
from libpypto.errors import CompileError, UsageError
from libpypto.ir.serde import dumps, loads
from libpypto.ir.text import parse_doc, print_doc
from libpypto.passes import PASSES, pipeline
from libpypto.passes.pipeline import Instrument, parse_pipeline, run_pipeline
from libpypto.targets import load_target


def chain(**knobs):
    """x*2+1 (two kernels fuse can merge), with knobs set in the kernel."""
    @pypto.jit
    def k(x: pypto.Tensor([8, 32], pypto.DT_FP32), y: pypto.Tensor([8, 32], pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(8, 32)
        if knobs:
            pypto.set_pass_options(**knobs)
        y[:] = x * 2.0 + 1.0
    return k


def blocks(doc) -> int:
    return sum(1 for op in doc.walk() if op.name == "block")


def to_block(doc, text="tensor-to-tile,assign-memory,fuse"):
    return run_pipeline(doc, parse_pipeline(text), load_target("host"))


def test_knobs_map_onto_pass_options_and_round_trip():
    with pytest.warns(UserWarning, match="key 'V1'"):
        doc = chain(vec_nbuffer_setting={"DEFAULT": 2, "V1": 1},
                    cube_nbuffer_setting={-1: 3}, cube_l1_reuse_setting={"DEFAULT": 4},
                    ooo_sched_mode="HLF", auto_mix_partition=1).trace()
    got = {(e["pass"], e["option"]): e["value"] for e in doc.attrs["pass_options"]}
    assert got == {("nbuffer", "vec"): 2, ("nbuffer", "cube"): 3, ("l1-reuse", "factor"): 4,
                   ("ooo-schedule", "mode"): "HLF", ("mix-fuse", "enable"): True}
    e = doc.attrs["pass_options"][0]
    assert e["from"] == "vec_nbuffer_setting" and e["file"] == "test_pass_options.py"
    assert parse_doc(print_doc(doc)).attrs == doc.attrs
    assert loads(dumps(doc)).attrs == doc.attrs
    # {} is the reference's automatic count: the pass's default, nothing recorded
    assert "pass_options" not in chain(vec_nbuffer_setting={}, ooo_sched_mode="").trace().attrs


def test_bad_knob_values_are_errors_at_the_line():
    for knobs, match in (({"vec_nbuffer_setting": {"DEFAULT": 0}}, "merge count"),
                         ({"vec_nbuffer_setting": 2}, "takes a dict"),
                         ({"ooo_sched_mode": "FAST"}, "GAPMIN"),
                         ({"sg_set_scope": (-1, True, False)}, "no merge flags")):
        with pytest.raises(CompileError, match=match) as e:
            chain(**knobs).trace()
        assert e.value.loc.file == "test_pass_options.py"
    with pytest.raises(CompileError, match="unexpected keyword"):
        chain(vec_nbufer_setting={"DEFAULT": 2}).trace()


def test_set_pass_config_sets_a_pypto_pass_option_the_pipeline_text_wins():
    @pypto.jit
    def k(x: pypto.Tensor([8, 32], pypto.DT_FP32), y: pypto.Tensor([8, 32], pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(8, 32)
        pypto.set_pass_config("PVC2_OOO", "GraphPartition", "enable", False)
        y[:] = x * 2.0 + 1.0
    doc = k.trace()
    assert blocks(to_block(chain().trace())) == 1
    out = to_block(doc)
    assert blocks(out) == 3 and "pass_options" not in out.attrs        # applied, consumed
    assert blocks(to_block(doc, "tensor-to-tile,assign-memory,fuse{enable=true}")) == 1
    # a split pipeline: the tile document still carries fuse's option, the next run applies it
    tile = run_pipeline(doc, parse_pipeline("tensor-to-tile"), load_target("host"))
    assert tile.attrs["pass_options"][0]["pass"] == "fuse"
    assert blocks(to_block(tile, "assign-memory,fuse")) == 3
    x = np.arange(256, dtype=np.float32).reshape(8, 32)
    y = np.zeros_like(x)
    k(x, y)                                                       # the JIT lowers it too
    np.testing.assert_array_equal(y, x * 2 + 1)


def test_a_pass_that_is_not_in_the_pipeline_or_not_there_warns():
    @pypto.jit
    def k(x: pypto.Tensor([8, 32], pypto.DT_FP32), y: pypto.Tensor([8, 32], pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(8, 32)
        pypto.set_pass_config("", "fuse", "max-kernels", 4)
        pypto.set_pass_config("", "no-such-pass", "x", 1)
        y[:] = x + 1.0
    doc = k.trace()
    with pytest.warns(UserWarning) as rec:
        out = driver.lower(doc, "tensor-to-tile,assign-memory")
    text = [str(w.message) for w in rec]
    assert any("no pass 'no-such-pass'" in t for t in text)
    assert not any("max-kernels" in t for t in text)              # fuse can still run later
    assert [e["option"] for e in out.attrs["pass_options"]] == ["max-kernels"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run_pipeline(out, [], load_target("host"))                 # nothing ran: nothing said
        assert "pass_options" not in driver.lower(out, "fuse").attrs
    # an option fuse lacks, or of the wrong type: an error at the op file's line
    for opt, v, match in (("max_kernels", True, "expected an integer"),
                          ("fusion", 1, "has no option 'fusion'")):
        @pypto.jit
        def bad(x: pypto.Tensor([8, 32], pypto.DT_FP32), y: pypto.Tensor([8, 32], pypto.DT_FP32)):
            pypto.set_vec_tile_shapes(8, 32)
            pypto.set_pass_config("", "fuse", opt, v)
            y[:] = x + 1.0
        with pytest.raises(CompileError, match=match) as e:
            driver.lower(bad.trace())
        assert e.value.loc.file == "test_pass_options.py"


def fake_nbuffer(seen: list):
    """A stand-in for the sync helper's nbuffer pass (block -> block): records its options
    and refuses vec=7."""
    def nbuffer(doc, *, target, vec: int = 1, cube: int = 1, enable: bool = True):
        """N-buffering (a test double)."""
        if vec == 7:
            raise UsageError("nbuffer: vec=7 does not fit the buffers")
        seen.append({"vec": vec, "cube": cube, "enable": enable})
        return doc
    return nbuffer


@pytest.fixture
def fake_pass(monkeypatch):
    seen: list = []
    fn = fake_nbuffer(seen)
    real = pipeline.get_pass
    monkeypatch.setitem(PASSES, "nbuffer", ("block", "block", "fake:nbuffer"))
    monkeypatch.setattr(pipeline, "get_pass", lambda n: fn if n == "nbuffer" else real(n))
    return seen


def test_the_nbuffer_knobs_reach_a_registered_pass(fake_pass):
    doc = chain(vec_nbuffer_setting={"DEFAULT": 2}, cube_nbuffer_setting={"DEFAULT": 4}).trace()
    text = "tensor-to-tile,assign-memory,fuse,nbuffer,forward,cse,dce,alloc,make-exec"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = driver.lower(doc, text)
    assert fake_pass == [{"vec": 2, "cube": 4, "enable": True}]
    assert "pass_options" not in out.attrs
    driver.lower(doc, text.replace("nbuffer", "nbuffer{vec=3}"))
    assert fake_pass[-1] == {"vec": 3, "cube": 4, "enable": True}
    # a pipeline without nbuffer: the knobs warn once each, naming the pass
    with pytest.warns(UserWarning) as rec:
        driver.lower(doc, text.replace("nbuffer,", ""))
    said = sorted(str(w.message).split(": ", 1)[1] for w in rec)
    assert said == [f"{o} (from {o[0]}{'ube' if o[0] == 'c' else 'ec'}_nbuffer_setting): pass "
                    f"'nbuffer' was not in the pipeline, so this setting did nothing"
                    for o in ("cube=4", "vec=2")]
    # a value the pass refuses: an error at the set_pass_options line
    with pytest.raises(CompileError, match="nbuffer: vec=7 does not fit") as e:
        driver.lower(chain(vec_nbuffer_setting={"DEFAULT": 7}).trace(), text)
    assert e.value.loc.file == "test_pass_options.py" and e.value.loc.line > 0


def test_jit_pass_options_and_options_context(fake_pass):
    @pypto.jit(pass_options={"vec_nbuffer_setting": {"DEFAULT": 5}})
    def k(x: pypto.Tensor([8, 32], pypto.DT_FP32), y: pypto.Tensor([8, 32], pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(8, 32)
        y[:] = x + 1.0
    vals = {(e["pass"], e["option"]): e["value"] for e in k.trace().attrs["pass_options"]}
    assert vals == {("nbuffer", "vec"): 5}
    with pypto.options(pass_options={"cube_nbuffer_setting": {"DEFAULT": 2}}):
        doc = chain().trace()
    assert [e["option"] for e in doc.attrs["pass_options"]] == ["cube"]
    assert "pass_options" not in chain().trace().attrs                  # the context ended


def test_key_dump_graph_prints_the_pass_result():
    @pypto.jit
    def k(x: pypto.Tensor([8, 32], pypto.DT_FP32), y: pypto.Tensor([8, 32], pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(8, 32)
        pypto.set_pass_config("", "ExpandFunction", pypto.PassConfigKey.KEY_DUMP_GRAPH, True)
        y[:] = x + 1.0
    doc = k.trace()
    assert doc.attrs["print_after"] == ["tensor-to-tile"]
    printed: list = []
    run_pipeline(doc, parse_pipeline("tensor-to-tile,assign-memory"), load_target("host"),
                 Instrument(sink=printed.append))
    assert len(printed) == 1 and printed[0].startswith("# ---- IR after tensor-to-tile")
    assert pypto.get_pass_config("", "tensor-to-tile", pypto.PassConfigKey.KEY_DUMP_GRAPH) \
        is False                                              # outside the kernel: not set


def scoped(s1, s2):
    """Two independent chains a*2+1 and b*3-1: scopes s1 on the first, s2 on the second."""
    @pypto.jit
    def k(a: pypto.Tensor([8, 32], pypto.DT_FP32), b: pypto.Tensor([8, 32], pypto.DT_FP32),
          y: pypto.Tensor([8, 32], pypto.DT_FP32), z: pypto.Tensor([8, 32], pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(8, 32)
        pypto.set_pass_options(sg_set_scope=s1)
        t = a * 2.0
        pypto.set_pass_options(sg_set_scope=s2)
        y[:] = t + 1.0
        pypto.set_pass_options(sg_set_scope=-1)
        z[:] = b * 3.0 - 1.0
    return k


@pytest.mark.parametrize("s1,s2,n", [(-1, -1, 2), (1, 1, 2), (1, 2, 3), (1, -1, 3),
                                     ((1, False, True), -1, 2)])
def test_sg_set_scope_keeps_scopes_apart_in_fuse(s1, s2, n):
    k = scoped(s1, s2)
    assert blocks(to_block(k.trace())) == n
    a = np.arange(256, dtype=np.float32).reshape(8, 32)
    y, z = np.zeros_like(a), np.zeros_like(a)
    k(a, -a, y, z)
    np.testing.assert_array_equal(y, a * 2 + 1)
    np.testing.assert_array_equal(z, -a * 3 - 1)


def test_sg_set_scope_rules():
    with pytest.warns(UserWarning, match="allow_parallel_merge"):
        scoped((3, True, False), 4).trace()
    with pytest.raises(CompileError, match="one scope id has one setting"):
        scoped((3, False, True), (3, False, False)).trace()
