"""libpypto.ir.text: the -S form round-trips, and lowering a re-parsed graph changes nothing.

STYLE.md section 7: read(write(g)) == g, parse(print(g)) == g, and lower(parse(print(g))) is
byte-identical to lower(g) (compare results, not just parsing).
"""
from __future__ import annotations

import math

import pytest

import libpypto as pypto
from libpypto.ir import expr as E
from libpypto.ir import serde
from libpypto.ir.core import Document, Loc, make
from libpypto.ir.text import TextError, fmt_attr, parse_doc, print_doc
from libpypto.ir.types import F32, TensorType, TileType


def same(a: Document, b: Document) -> bool:
    return serde.dumps(a) == serde.dumps(b)


# -- every example at every level -----------------------------------------------------------

@pytest.mark.slow
def test_text_round_trip(ex, example, level):
    doc = ex.doc(example, level)
    s = print_doc(doc)
    assert s.startswith(f"pypto-ir 1.1 {level}\n")
    back = parse_doc(s)
    assert print_doc(back) == s
    assert same(back, doc)


@pytest.mark.slow
def test_lowering_a_reparsed_graph_is_byte_identical(ex, example, level):
    """What comes after a level is the same from the graph and from its re-parsed text."""
    want = ex.bytes(example)
    again = parse_doc(print_doc(ex.doc(example, level)))
    bind = ex.bind(example)
    if level in ("tensor", "tile", "block", "exec"):
        # the cached exec was lowered pass by pass; this is all the rest at once
        assert serde.dumps(pypto.lower(again)) == want["exec"]
    if level == "exec":
        assert serde.dumps(pypto.schedule(again, None, bind)) == \
            serde.dumps(pypto.schedule(ex.doc(example, "exec"), None, bind))
    if level == "sched":
        assert serde.dumps(pypto.schedule(again, None, bind)) == want["sched"]
    if level in ("sched", "code"):
        assert serde.dumps(pypto.emit(again)) == want["code"]


@pytest.mark.slow
def test_lower_from_every_intermediate_point_gives_the_same_exec(ex, example):
    tensor = ex.doc(example, "tensor")
    want = ex.bytes(example)["exec"]
    mid = pypto.lower(tensor, "fold-scale,sink-views,tensor-to-tile,assign-memory,fuse")   # before forward
    assert serde.dumps(pypto.lower(parse_doc(print_doc(mid)))) == want


def test_tile_level_before_assign_memory_round_trips(ex):
    doc = pypto.lower(ex.doc("softmax", "tensor"), "tensor-to-tile")
    s = print_doc(doc)
    assert "any." in s
    assert print_doc(parse_doc(s)) == s


# -- the grammar -----------------------------------------------------------------------------

def test_comments_blank_lines_and_line_endings(ex):
    doc = ex.doc("softmax", "tile")
    s = print_doc(doc)
    head, *ops = s.splitlines()
    commented = "\n".join(["# a comment before the header", "", "   # indented comment", head]
                          + [op + "   # trailing comment" for op in ops] + ["# the end"]) + "\n"
    variants = {
        "comments": commented,
        "crlf": s.replace("\n", "\r\n"),
        "no final newline": s.rstrip("\n"),
        "blank lines": s.replace("\n", "\n\n"),
        "comment lines between ops": s.replace("\n%", "\n# hello %x = bogus\n%"),
    }
    for what, text in variants.items():
        assert same(parse_doc(text), doc), what


def odd_doc() -> Document:
    n = E.sym("N")
    attrs = {
        "quote": 'a"b', "multi": "line 1\nline 2", "ends_quote": 'ends"', "triple": 'x"""\ny',
        "unicode": "héllo ✓ 日本\u2028", "empty": "", "escapes": "\t\\\x00", "lead": '"\nq',
        "crlf": "x\r\ny", "hash": "# not a comment\n#", "brace": "{}[]@:%=",
        "floats": [math.inf, -math.inf, 1e-06, -0.0, 1e16, 0.1, -2.5, 5e-324, 1.5e300, 3.0],
        "nan": math.nan, "bytes": [b"", b"\x00\xff" * 7, bytes(range(256))],
        "nested": {"a": [1, [2, {"b": None, "c": True, "d": False}]], "weird key": 1,
                   "true": 2, "a.b": 3, "": 4, "and": [[]], "x": {}},
        "neg": -7, "big": 2 ** 62, "exprs": [E.add(n, -1), E.cdiv(n, 8), E.minimum(n, 4)],
        "cmp": E.logical_and(E.lt(n, 4), E.eq(E.mod(n, 8), 0)), "ex": E.sub(1, n),
    }
    p = make("param", [], [TensorType(F32, (n, 4))], {"index": 0}, names=["x"])
    op = make("thing", [p.result], [TensorType(F32, (E.floordiv(n, 2), 4))], attrs,
              loc=Loc("my op-file (1).py", 12))
    u1 = make("use", [op.result, p.result], [], {}, loc=Loc("ö.py", 3))
    u2 = make("use", [op.result], [], {"k": 1}, loc=Loc("1st", 0))
    u3 = make("use", [p.result], [], {}, loc=Loc('a "quoted" name\\.py', 99999))
    return Document("tensor", [p, op, u1, u2, u3], {"kernel": "odd", "m": "multi\nline"},
                    [{"tool": "pypto-trace", "options": {"const": {"eps": 1e-06}}},
                     {"tool": "pypto-lower", "options": {}}])


def test_odd_attributes_and_locations_round_trip():
    doc = odd_doc()
    s = print_doc(doc)
    back = parse_doc(s)
    assert print_doc(back) == s
    assert same(back, doc)
    a = back.body[1].attrs
    assert a["unicode"] == "héllo ✓ 日本\u2028" and a["crlf"] == "x\r\ny"
    assert a["bytes"][2] == bytes(range(256))
    assert math.isnan(a["nan"]) and a["floats"][0] == math.inf and a["floats"][1] == -math.inf
    assert isinstance(a["floats"][9], float) and isinstance(a["neg"], int)
    assert a["exprs"][1] == E.cdiv(E.sym("N"), 8)
    assert [op.loc.file for op in back.body[2:]] == ["ö.py", "1st", 'a "quoted" name\\.py']


@pytest.mark.parametrize("value, text", [
    (True, "true"), (None, "null"), (3, "3"), (-3, "-3"), (2.0, "2.0"), (1e-06, "1e-06"),
    (math.inf, "inf"), (-math.inf, "-inf"), (math.nan, "nan"), ("a\nb", '"""a\nb"""'),
    ('q"', '"q\\""'), (b"hi", 'b64"aGk="'), ([1, [2]], "[1, [2]]"),
    ({"b": 1, "a": 2}, "{a=2, b=1}"), (E.add(E.sym("N"), -1), "N - 1"),
])
def test_attribute_spelling(value, text):
    assert fmt_attr(value) == text


def test_isolated_regions_have_their_own_namespace():
    t = TensorType(F32, (4, 4))
    outer = make("gm", [], [t], {"index": 0}, names=["x"])
    inner_x = make("param", [], [t], {"index": 0}, names=["x"])
    inner_use = make("exp", [inner_x.result], [t], {})
    src = make("source", [], [], {}, regions=[[inner_x, inner_use]])
    prog_arg = make("arg", [], [t], {"index": 0}, names=["x"])
    prog = make("program", [], [], {"name": "p0"}, regions=[[prog_arg, make("tile", [], [
        TileType("ub", F32, (4, 4))])]])
    outer_num = make("exp", [outer.result], [t], {})
    use = make("use", [outer.result, outer_num.result], [], {})
    doc = Document("tile", [src, outer, prog, outer_num, use])
    s = print_doc(doc)
    # the same names inside and outside: no renaming to x_2, numbering restarts inside
    assert s.count("%x = ") == 3 and "x_2" not in s
    assert "  %0 = exp %x" in s and "\n%0 = exp %x" in s
    back = parse_doc(s)
    assert print_doc(back) == s and same(back, doc)
    b_src, b_outer, _, b_num, b_use = back.body
    assert b_src.regions[0][1].operands[0] is b_src.regions[0][0].result
    assert b_num.operands[0] is b_outer.result
    assert b_use.operands == [b_outer.result, b_num.result]


def test_non_isolated_regions_share_names():
    t = TensorType(F32, (4,))
    a = make("gm", [], [t], {}, names=["x"])
    b = make("gm", [], [t], {}, names=["x"])
    loop = make("for", [], [], {"var": "i"}, regions=[[make("use", [a.result, b.result])]])
    s = print_doc(Document("tile", [a, b, loop]))
    assert "%x = gm" in s and "%x_2 = gm" in s and "use %x, %x_2" in s


def test_isolated_region_cannot_see_outer_values():
    s = "pypto-ir 1.1 tile\n%y = gm : f32[4]\nsource {\n  use %y\n}\n"
    with pytest.raises(TextError, match="line 4: use of undefined value %y"):
        parse_doc(s)
    t = TensorType(F32, (4,))
    outer = make("gm", [], [t], {}, names=["y"])
    prog = make("program", [], [], {}, regions=[[make("use", [outer.result])]])
    with pytest.raises(TextError, match="used before it is defined"):
        print_doc(Document("exec", [outer, prog]))


@pytest.mark.parametrize("text, message", [
    ("", "empty input"),
    ("# only a comment\n\n", "empty input"),
    ("pypto-ir tensor\n", "line 1: expected the header"),
    ("\n\npypto-ir 1.0 teapot\n", "line 3: unknown level 'teapot'"),
    ("pypto-ir 1.1 tensor\n%a = param : f32[4]\nexp %b\n", "line 3: use of undefined value %b"),
    ("pypto-ir 1.1 tensor\n%a = param : f32[4]\n%a = param : f32[4]\n",
     "line 3: value %a is defined twice"),
    ("pypto-ir 1.1 tile\nkernel {\n  %0 = tile : ub.f32[4]\n", "region of kernel is not closed"),
    ("pypto-ir 1.1 tensor\n%a = param : f99[4]\n", "line 2: unknown type 'f99'"),
    ("pypto-ir 1.1 tile\n%a = tile : ub.f32[N]\n", "line 2: a tile shape must be static ints"),
    ("pypto-ir 1.1 tensor\n%a, %b = param : f32[4]\n", "line 2: param: 2 results but 1 types"),
    ("pypto-ir 1.1 tensor\n%a = param : f32[4] junk\n", "line 2: unexpected 'junk' after op"),
    ("pypto-ir 1.1 tensor\n%a = param {x=1 y=2} : f32[4]\n", "line 2: expected ',' or '}'"),
    ("pypto-ir 1.1 tensor\n%a = param {x=[1 2]} : f32[4]\n", "line 2: expected ',' or ']'"),
    ("pypto-ir 1.1 tensor\n%a = param {x=1 +} : f32[4]\n", "line 2: "),
    ("pypto-ir 1.1 tensor\nparam @f.py:x\n", "line 2: expected a line number"),
    ("pypto-ir 1.1 tensor\n%a = param : f32[4] $\n", "line 2: unexpected character '$'"),
    ("pypto-ir 1.1 tensor\n= param\n", "line 2: expected an op name"),
])
def test_parse_errors_name_the_line(text, message):
    with pytest.raises(TextError) as exc:
        parse_doc(text)
    assert message in str(exc.value)


def test_header_keeps_version_and_producer_history():
    s = ('pypto-ir 1.4 tensor\nproducer "pypto-trace" {kernel="k"}\nproducer "pypto-lower"\n'
         "module {kernel=\"k\"}\n")
    doc = parse_doc(s)
    assert doc.version == (1, 4) and doc.level == "tensor"
    assert doc.producer == [{"tool": "pypto-trace", "options": {"kernel": "k"}},
                            {"tool": "pypto-lower", "options": {}}]
    assert doc.attrs == {"kernel": "k"}
    assert print_doc(doc).startswith('pypto-ir 1.4 tensor\nproducer "pypto-trace" {kernel="k"}\n'
                                     'producer "pypto-lower" {}\n')
