"""libpypto.ir.serde: the msgpack IR file (DESIGN.md section 5, STYLE.md sections 7 and 8)."""
from __future__ import annotations

import math
import os
import shutil

import msgpack
import pytest

import libpypto as pypto
from libpypto.errors import InputError
from libpypto.ir import expr as E
from libpypto.ir import serde
from libpypto.ir.core import VERSION, Document, Loc, make
from libpypto.ir.types import F32, I32, ScalarType, TensorType, TileType


def raw(b: bytes):
    """The msgpack map of a file, expressions left as ExtType."""
    return msgpack.unpackb(b, raw=False, strict_map_key=False,
                           ext_hook=lambda code, data: msgpack.ExtType(code, data))


def pack(m) -> bytes:
    return msgpack.packb(m, use_bin_type=True)


# -- every example at every level -----------------------------------------------------------

@pytest.mark.slow
def test_round_trip_is_byte_identical(ex, example, level):
    b = ex.bytes(example)[level]
    doc = serde.loads(b)
    assert doc.level == level
    assert serde.dumps(doc) == b
    assert serde.dumps(serde.loads(serde.dumps(doc))) == b


@pytest.mark.slow
def test_header_and_sorted_keys(ex, example, level):
    m = raw(ex.bytes(example)[level])
    assert m["format"] == "pypto-ir"
    assert m["version"] == list(VERSION)
    assert m["level"] == level
    assert isinstance(m["producer"], list)

    def walk(v, path="$"):
        if isinstance(v, dict):
            keys = list(v)
            assert keys == sorted(keys), f"keys of {path} are not sorted: {keys}"
            for k in keys:
                walk(v[k], f"{path}.{k}")
        elif isinstance(v, list):
            for i, x in enumerate(v):
                walk(x, f"{path}[{i}]")
    walk(m)


@pytest.mark.slow
def test_no_paths_or_object_ids_in_files(ex, example, level):
    b = ex.bytes(example)[level]
    assert os.path.dirname(ex.path(example)).encode() not in b
    assert os.getcwd().encode() not in b
    assert b" object at 0x" not in b


@pytest.mark.slow
def test_locations_survive_every_level(ex, example, level):
    doc = ex.doc(example, level)
    locs = {op.loc for op in doc.walk() if op.loc is not None}
    assert locs, "no op keeps a source location"
    assert all(loc.file == f"{example}.py" and loc.line > 0 for loc in locs)


# -- determinism (STYLE section 8) -----------------------------------------------------------

@pytest.mark.slow
def test_trace_is_deterministic(ex, example, tmp_path):
    a = serde.dumps(pypto.trace(ex.path(example)))
    b = serde.dumps(pypto.trace(ex.path(example)))
    assert a == b
    # no path dependence: a copy elsewhere, reached by a relative path, gives the same bytes
    shutil.copy(ex.path(example), tmp_path / f"{example}.py")
    cwd = os.getcwd()
    try:
        os.chdir(tmp_path)
        c = serde.dumps(pypto.trace(f"{example}.py"))
    finally:
        os.chdir(cwd)
    assert c == a


@pytest.mark.slow
def test_lowering_is_deterministic(ex, example):
    again = pypto.trace(ex.path(example))
    want = ex.bytes(example)
    assert serde.dumps(again) == want["tensor"]
    assert serde.dumps(pypto.lower(again, ex.tile_pipeline)) == want["tile"]
    # scheduling and emitting again: test_text.py::test_lowering_a_reparsed_graph_...


def test_lowering_does_not_modify_its_input(ex):
    for name in ("softmax", "matmul"):
        doc = pypto.trace(ex.path(name))
        before = serde.dumps(doc)
        pypto.emit(doc)
        assert serde.dumps(doc) == before


# -- the format ----------------------------------------------------------------------------

def small_doc() -> Document:
    n = E.sym("N")
    p = make("param", [], [TensorType(F32, (n, 64))], {"index": 0, "role": "input"},
             names=["x"])
    s = make("thing", [p.result], [TensorType(F32, (E.cdiv(n, 8), 64)), ScalarType(I32)],
             {"e": E.add(n, -1), "f": [1.5, math.inf, -0.0], "b": b"\x00\xff", "none": None,
              "t": True, "nested": {"k": [1, {"j": "s"}]}},
             loc=Loc("op.py", 7))
    t = make("tile", [], [TileType("ub", F32, (8, 64))], {"addr": 0})
    k = make("kernel", [], [], {"grid": [E.cdiv(n, 8)]}, regions=[[t]], loc=Loc("op.py", 9))
    return Document("tensor", [p, s, k], {"kernel": "k"}, [{"tool": "t", "options": {}}])


def test_format_of_ops_and_values():
    m = raw(serde.dumps(small_doc()))
    assert set(m) == {"attrs", "body", "format", "level", "producer", "version"}
    param, thing, kernel = m["body"]
    assert param == {"op": "param", "args": [], "res": [[0, "x", ["tensor", "f32", [
        msgpack.ExtType(1, b"N"), 64]]]], "attrs": {"index": 0, "role": "input"}}
    assert thing["args"] == [0]
    assert [r[0] for r in thing["res"]] == [1, 2]        # ids count definitions in order
    assert thing["res"][1][2] == ["scalar", "i32"]
    assert thing["loc"] == ["op.py", 7]
    assert thing["attrs"]["e"] == msgpack.ExtType(1, b"N - 1")
    assert thing["attrs"]["b"] == b"\x00\xff"
    assert kernel["regions"][0][0]["res"][0] == [3, None, ["tile", "ub", "f32", [8, 64]]]
    assert "loc" not in param and "regions" not in thing


def test_small_doc_round_trip():
    doc = small_doc()
    b = serde.dumps(doc)
    back = serde.loads(b)
    assert serde.dumps(back) == b
    thing = back.body[1]
    assert thing.operands[0] is back.body[0].result
    assert thing.results[0].type.shape[0] == E.cdiv(E.sym("N"), 8)
    assert thing.attrs["e"] == E.add(E.sym("N"), -1)
    assert thing.attrs["f"][1] == math.inf and math.copysign(1, thing.attrs["f"][2]) == -1
    assert thing.loc == Loc("op.py", 7)
    assert back.body[0].result.name == "x" and thing.results[0].name is None


def test_unserialisable_attr_is_a_clear_type_error():
    doc = small_doc()
    doc.body[0].attrs["bad"] = object()
    with pytest.raises(TypeError, match="cannot serialise object"):
        serde.dumps(doc)


# -- versions -------------------------------------------------------------------------------

def with_version(b: bytes, version) -> bytes:
    m = raw(b)
    m["version"] = version
    return pack(m)


def test_future_major_version_is_refused(ex):
    b = with_version(ex.bytes("softmax")["tensor"], [VERSION[0] + 1, 0])
    with pytest.raises(InputError) as exc:
        serde.loads(b, "f.ir")
    msg = str(exc.value)
    assert msg.startswith("f.ir: IR format version 2.0 is not readable")
    assert f"reads {VERSION[0]}.x" in msg
    assert exc.value.exit_code == 2


def test_newer_minor_version_is_read(ex):
    b = with_version(ex.bytes("softmax")["tensor"], [VERSION[0], VERSION[1] + 3])
    doc = serde.loads(b)
    assert doc.version == (VERSION[0], VERSION[1] + 3)


def test_older_minor_version_is_read(ex, monkeypatch):
    monkeypatch.setattr(serde, "VERSION", (VERSION[0], VERSION[1] + 2))
    b = with_version(ex.bytes("softmax")["tensor"], [VERSION[0], VERSION[1]])
    assert serde.loads(b).level == "tensor"
    with pytest.raises(InputError):
        serde.loads(with_version(b, [VERSION[0] - 1, 9]))


@pytest.mark.parametrize("version", [None, "1.0", [1], [1, 0, 0], ["1", "0"]])
def test_malformed_version(ex, version):
    b = with_version(ex.bytes("softmax")["tensor"], version)
    with pytest.raises(InputError, match="malformed version"):
        serde.loads(b, "v.ir")


# -- unreadable files --------------------------------------------------------------------------

def good_map(ex) -> dict:
    return raw(ex.bytes("softmax")["tensor"])


def test_truncated_anywhere_is_an_input_error(ex):
    b = ex.bytes("softmax")["tensor"]
    for cut in range(1, len(b)):
        with pytest.raises(InputError) as exc:
            serde.loads(b[:cut], "t.ir")
        assert str(exc.value).startswith("t.ir: ")


@pytest.mark.parametrize("data, what", [
    (b"", "not a pypto IR file"),
    (b"\x81\xa1a\x01", "no 'pypto-ir' header"),
    (msgpack.packb([1, 2]), "no 'pypto-ir' header"),
    (msgpack.packb({"format": "other"}), "no 'pypto-ir' header"),
    (msgpack.packb({"a": 1}) + b"\x00", "not a pypto IR file"),
])
def test_not_an_ir_file(data, what):
    with pytest.raises(InputError, match=what):
        serde.loads(data, "x.ir")


@pytest.mark.parametrize("edit, what", [
    (lambda m: m.pop("level"), "malformed IR file"),
    (lambda m: m.update(level="bogus"), "unknown level 'bogus'"),
    (lambda m: m["body"][2].update(args=[99]), "malformed IR file"),
    (lambda m: m["body"][0]["res"][0][2].__setitem__(1, "f128"), "malformed IR file"),
    (lambda m: m["body"][0]["res"][0][2].__setitem__(0, "matrix"), "malformed IR file"),
    (lambda m: m["body"][0].pop("op"), "malformed IR file"),
    (lambda m: m.update(body=None), "malformed IR file"),
])
def test_malformed_body(ex, edit, what):
    m = good_map(ex)
    edit(m)
    with pytest.raises(InputError, match=what):
        serde.loads(pack(m), "x.ir")


def test_bad_expression_extension(ex):
    m = good_map(ex)
    m["body"][0]["res"][0][2][2][0] = msgpack.ExtType(1, b"x_0 +")
    with pytest.raises(InputError, match="x.ir: "):
        serde.loads(pack(m), "x.ir")


def test_unknown_extension_types_pass_through(ex):
    m = good_map(ex)
    m["attrs"]["future"] = msgpack.ExtType(42, b"data")
    doc = serde.loads(pack(m))
    assert doc.attrs["future"] == msgpack.ExtType(42, b"data")
