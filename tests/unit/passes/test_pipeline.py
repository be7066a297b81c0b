"""libpypto.passes: the registry, textual pipelines and the instrumented runner."""
from __future__ import annotations

import pytest

import libpypto as pypto
from libpypto.errors import UsageError
from libpypto.ir import serde
from libpypto.ir.core import level_index
from libpypto.ir.text import parse_doc, print_doc
from libpypto.passes import DEFAULT_PIPELINE, PASSES, get_pass
from libpypto.passes.pipeline import (Instrument, PassSpec, default_pipeline, describe,
                                      parse_pipeline, pass_options, run_pipeline)
from libpypto.targets import load_target


def names(specs) -> list[str]:
    return [s.name for s in specs]


# -- the registry --------------------------------------------------------------------------

def test_registry_is_alphabetical_and_resolves():
    assert list(PASSES) == sorted(PASSES)
    for name, (src, dst, path) in PASSES.items():
        assert level_index(src) <= level_index(dst), name
        fn = get_pass(name)
        assert callable(fn) and path.endswith(":" + fn.__name__)
        assert describe(name), f"{name} has no docstring summary"
        assert not describe(name).endswith(" "), name


def test_default_pipeline_is_registered_and_ordered():
    specs = parse_pipeline(DEFAULT_PIPELINE)
    level = "tensor"
    for s in specs:
        src, dst = PASSES[s.name][:2]
        assert src == level, f"{s.name} takes {src}, gets {level}"
        level = dst
    assert level == "exec"


def test_pass_options_come_from_keyword_parameters():
    assert pass_options("fuse")["enable"] == ("enable", True)
    assert pass_options("fuse")["max-kernels"] == ("max_kernels", 64)
    for name in PASSES:
        for dashed, (py, _) in pass_options(name).items():
            assert dashed == py.replace("_", "-") and py != "target"


# -- parsing ---------------------------------------------------------------------------------

def test_parse_pipeline_with_options():
    specs = parse_pipeline("tensor-to-tile, assign-memory,fuse{enable=false},alloc")
    assert names(specs) == ["tensor-to-tile", "assign-memory", "fuse", "alloc"]
    assert specs[2].options == {"enable": False}
    assert specs[0].options == {}
    assert parse_pipeline("fuse{enable=TRUE}")[0].options == {"enable": True}
    assert parse_pipeline("fuse{ enable = false , }")[0].options == {"enable": False}
    assert parse_pipeline("fuse{}")[0].options == {}
    assert parse_pipeline("") == []
    assert names(parse_pipeline(" alloc ,, make-exec ")) == ["alloc", "make-exec"]


def test_pipeline_text_round_trips():
    text = ("tensor-to-tile,assign-memory,fuse{enable=false,max-kernels=8},forward,cse,dce,"
            "alloc,make-exec")
    specs = parse_pipeline(text)
    again = parse_pipeline(",".join(str(s) for s in specs))
    assert [(s.name, s.options) for s in again] == [(s.name, s.options) for s in specs]
    assert str(PassSpec("alloc")) == "alloc"


@pytest.mark.parametrize("text, message", [
    ("tensor2tile", "unknown pass 'tensor2tile' (known: alloc, assign-memory, cse, dce, "
                    "fold-scale, forward, fuse, gm-reuse, insert-sync, l1-reuse, make-exec, "
                    "mix-fuse, nbuffer, ooo-schedule, sink-views, tensor-to-tile)"),
    ("fuse{enable=false", "pipeline: unclosed '{' after 'fuse'"),
    ("fuse{fuse=false}", "pass 'fuse' has no option 'fuse' (options: enable, max-kernels"),
    ("alloc{x=1}", "pass 'alloc' has no option 'x' (options: reuse)"),
        ("make-exec{x=1}", "pass 'make-exec' has no option 'x' (options: none)"),
    ("fuse{enable}", "pipeline: option 'enable' of 'fuse' needs name=value"),
    ("fuse{max-kernels=many}", "pass 'fuse' option max-kernels='many': expected an integer"),
    ("{fuse=1}", "pipeline: empty pass name"),
])
def test_parse_pipeline_errors(text, message):
    with pytest.raises(UsageError) as exc:
        parse_pipeline(text)
    assert message in str(exc.value)
    assert exc.value.exit_code == 2


# -- default pipelines per level ------------------------------------------------------------

BLOCK = ["mix-fuse", "l1-reuse", "nbuffer", "forward", "cse", "dce", "ooo-schedule", "alloc",
         "insert-sync"]


@pytest.mark.parametrize("level, want", [
    ("tensor", ["fold-scale", "sink-views", "tensor-to-tile", "assign-memory", "fuse"] + BLOCK
     + ["make-exec", "gm-reuse"]),
    ("tile", ["assign-memory", "fuse"] + BLOCK + ["make-exec", "gm-reuse"]),
    ("block", BLOCK + ["make-exec", "gm-reuse"]),
    ("exec", ["gm-reuse"]),
])
def test_default_pipeline_from_each_level(level, want):
    assert names(default_pipeline(level, "exec")) == want


def test_default_pipeline_to_intermediate_levels():
    assert names(default_pipeline("tensor", "tile")) == ["fold-scale", "sink-views",
                                                         "tensor-to-tile", "assign-memory"]
    assert names(default_pipeline("tensor", "block")) == ["fold-scale", "sink-views",
                                                          "tensor-to-tile", "assign-memory",
                                                          "fuse"] + BLOCK
    assert names(default_pipeline("tile", "block")) == ["assign-memory", "fuse"] + BLOCK


# -- running ------------------------------------------------------------------------------

@pytest.fixture
def softmax(ex):
    return ex.doc("softmax", "tensor")


@pytest.fixture
def host():
    return load_target("host")


def test_level_mismatch_is_reported(softmax, host):
    with pytest.raises(UsageError) as exc:
        run_pipeline(softmax, parse_pipeline("fuse,tensor-to-tile"), host)
    msg = str(exc.value)
    assert "pass 'fuse' takes a tile-level graph but gets tensor here" in msg
    assert DEFAULT_PIPELINE in msg
    with pytest.raises(UsageError, match="pass 'make-exec' takes a block-level graph but gets "
                                         "tile"):
        run_pipeline(softmax, parse_pipeline("tensor-to-tile,make-exec"), host)


def test_each_pass_produces_its_level(softmax, host):
    doc = softmax
    for spec in parse_pipeline(DEFAULT_PIPELINE):
        doc = run_pipeline(doc, [spec], host, Instrument(verify_each=True))
        assert doc.level == PASSES[spec.name][1]
    assert serde.dumps(doc) == serde.dumps(pypto.lower(softmax))


def test_print_after_all(softmax, host):
    out = []
    inst = Instrument(print_after_all=True, sink=out.append)
    result = run_pipeline(softmax, parse_pipeline(DEFAULT_PIPELINE), host, inst)
    assert [s.splitlines()[0] for s in out] == [
        f"# ---- IR after {n} ---- #" for n in names(parse_pipeline(DEFAULT_PIPELINE))]
    # each dump is the text form of the graph after that pass, and parses back
    assert out[-1].split("\n", 1)[1] == print_doc(result)
    assert parse_doc(out[2].split("\n", 1)[1]).level == "tile"      # out[0], [1]: tensor


def test_print_after_all_goes_to_stderr_by_default(softmax, host, capsys):
    run_pipeline(softmax, parse_pipeline("tensor-to-tile,assign-memory"), host,
                 Instrument(print_after_all=True))
    err = capsys.readouterr().err
    assert err.count("# ---- IR after ") == 2
    assert "# ---- IR after assign-memory ---- #\npypto-ir 1.1 tile\n" in err


def test_print_after_one_pass(softmax, host):
    out = []
    run_pipeline(softmax, parse_pipeline(DEFAULT_PIPELINE), host,
                 Instrument(print_after=("fuse",), sink=out.append))
    assert len(out) == 1 and out[0].startswith("# ---- IR after fuse ---- #\n"
                                                "pypto-ir 1.1 block\n")


def test_stop_after(softmax, host):
    inst = Instrument(stop_after="assign-memory")
    doc = run_pipeline(softmax, parse_pipeline(DEFAULT_PIPELINE), host, inst)
    assert doc.level == "tile"
    assert [n for n, _ in inst.timings] == ["fold-scale", "sink-views", "tensor-to-tile",
                                            "assign-memory"]
    assert serde.dumps(doc) == serde.dumps(pypto.lower(softmax, "fold-scale,sink-views,"
                                                                "tensor-to-tile,assign-memory"))


def test_time_passes_with_fake_clock(softmax, host, monkeypatch):
    monkeypatch.setenv("PYPTO_FAKE_CLOCK", "1")
    inst = Instrument(time_passes=True)
    run_pipeline(softmax, parse_pipeline(DEFAULT_PIPELINE), host, inst)
    assert inst.timings == [(n, pytest.approx(0.001)) for n in names(parse_pipeline(
        DEFAULT_PIPELINE))]


@pytest.mark.parametrize("example", ["softmax", "rmsnorm", "matmul"])
def test_pass_options_reach_the_pass(ex, example, host):
    doc = ex.doc(example, "tensor")
    tile = pypto.lower(doc, "tensor-to-tile,assign-memory")
    kernels = sum(op.name == "kernel" for op in tile.body)
    unfused = pypto.lower(tile, "fuse{enable=false}")
    fused = pypto.lower(tile, "fuse")
    assert sum(op.name == "block" for op in unfused.body) == kernels
    assert sum(op.name == "block" for op in fused.body) <= kernels


def test_passes_are_pure(softmax, host):
    before = serde.dumps(softmax)
    tile = run_pipeline(softmax, parse_pipeline("tensor-to-tile"), host)
    assert serde.dumps(softmax) == before and softmax.level == "tensor"
    t_before = serde.dumps(tile)
    run_pipeline(tile, parse_pipeline("assign-memory,fuse,forward,cse,dce,alloc,make-exec"),
                 host)
    assert serde.dumps(tile) == t_before


def test_lower_refuses_levels_past_exec(ex):
    from libpypto.errors import InputError
    with pytest.raises(InputError, match="got a 'sched' file, past what pypto-lower makes "
                                         r"\(try pypto-emit\)"):
        pypto.lower(ex.doc("softmax", "sched"))


@pytest.mark.parametrize("example", ["softmax", "sdpa", "flash_attention", "moe_gating"])
def test_block_passes_are_idempotent(ex, example):
    # the default pipeline from a block-level file runs forward, cse and dce again
    block = ex.doc(example, "block")
    assert print_doc(pypto.lower(block, "forward,cse,dce")) == print_doc(block)
