"""The limits and checks the fuzz suite asked for, each shown once on a small hand-made file:
nesting, expression size, dims, tile bytes and ints out of range are exit 2 with one line
naming the file and what is wrong."""
from __future__ import annotations

import msgpack
import pytest

import harness
import mutate
from libpypto.driver import parse_ir
from libpypto.errors import InputError, LimitError


def seed(seeds, example: str, level: str, form: str = "msgpack"):
    return next(s for s in seeds if (s.example, s.level, s.form) == (example, level, form))


def one_error(o: harness.Outcome, *words: str) -> str:
    assert o.problem() is None and o.code == 2, o.stderr
    line = o.stderr.strip()
    assert line.startswith(f"pypto-{o.tool}: error: ") and "case.ir" in line, line
    for w in words:
        assert w in line, line
    return line


def edit(s, fn) -> bytes:
    m = mutate.decode(s.data)
    fn(m)
    return mutate.encode(m)


def test_deep_msgpack_is_a_limit(seeds, case_dir):
    s = seed(seeds, "softmax", "tensor")
    data = edit(s, lambda m: m["attrs"].update(consts={"c": mutate._nested(400, "list")}))
    one_error(harness.feed("tensor", data, case_dir), "nesting", "PYPTO_MAX_DEPTH")


def test_very_deep_msgpack(case_dir):
    """Deeper than msgpack itself unpacks: still one line, exit 2."""
    one_error(harness.feed("tensor", b"\x81\xa1a" + b"\x91" * 100000 + b"\x00", case_dir))


@pytest.mark.parametrize("bracket", ["[", "{", "("])
def test_deep_text_is_a_limit(seeds, case_dir, bracket):
    s = seed(seeds, "softmax", "tensor", "text")
    lines = s.data.decode().split("\n")
    lines.insert(4, "module {x=" + bracket * 5000)
    one_error(harness.feed("tensor", "\n".join(lines).encode(), case_dir), "line 5",
              "PYPTO_MAX_DEPTH")


def test_deep_regions_are_a_limit(seeds, case_dir):
    s = seed(seeds, "softmax", "tile", "text")
    lines = s.data.decode().split("\n")
    loop = 'loop {var="i", start=0, stop=1, step=1} {'
    lines[4:4] = [loop] * 500 + ["}"] * 500
    one_error(harness.feed("tile", "\n".join(lines).encode(), case_dir), "PYPTO_MAX_DEPTH")


@pytest.mark.parametrize("text, words", [
    (" + ".join(f"N{i}" for i in range(2000)), ("length", "PYPTO_MAX_EXPR")),
    ("(" * 100 + "N" + ")" * 100, ("nesting", "PYPTO_MAX_EXPR_DEPTH")),
    ("N" + " // 2" * 100, ("nesting", "PYPTO_MAX_EXPR_DEPTH")),
    ("-" * 200 + "1", ("nesting",)),
    ("1" * 3000, ("3000 digits",)),
    ("7 // 0", ("division by zero",)),
    ("cdiv(N)", ("cdiv takes 2 arguments",)),
])
def test_expressions_are_limited(seeds, case_dir, text, words):
    s = seed(seeds, "softmax", "tensor")
    data = edit(s, lambda m: m["body"][0]["res"][0][2][2].__setitem__(
        0, msgpack.ExtType(1, text.encode())))
    one_error(harness.feed("tensor", data, case_dir), *words)


def _type(m, i, t):
    m["body"][i]["res"][0][2] = t


@pytest.mark.parametrize("level, at, new, words", [
    ("tensor", 0, ["tensor", "f32", [-1, 1024]], ("dim -1, not an int in 0 .. 2**62",)),
    ("tensor", 0, ["tensor", "f32", [2 ** 63, 1024]], ("dim 9223372036854775808",)),
    ("tensor", 0, ["tensor", "f32", [1] * 20], ("more than 16",)),
])
def test_tensor_types(seeds, case_dir, level, at, new, words):
    data = edit(seed(seeds, "softmax", level), lambda m: _type(m, at, new))
    one_error(harness.feed(level, data, case_dir), *words)


def _tile_op(m):
    """The first tile declaration of the first kernel of a tile-level file."""
    kernel = next(op for op in m["body"] if op["op"] == "kernel")
    return next(op for op in kernel["regions"][0] if op["op"] == "tile")


@pytest.mark.parametrize("shape, words", [
    ([0, 1024], ("tile dim 0, not an int in 1 .. 2**62",)),
    ([-8, 1024], ("tile dim -8",)),
    ([1 << 20, 1024], ("more than the target's ub buffer (1,048,576 B)",)),
])
def test_tile_types(seeds, case_dir, shape, words):
    data = edit(seed(seeds, "softmax", "tile"), lambda m: _tile_op(m)["res"][0][2]
                .__setitem__(3, shape))
    one_error(harness.feed("tile", data, case_dir), *words)


def test_huge_int_in_text(seeds, case_dir):
    s = seed(seeds, "softmax", "tensor", "text")
    data = s.data.replace(b"softmax.py:8", b"softmax.py:" + str(2 ** 70).encode(), 1)
    one_error(harness.feed("tensor", data, case_dir), "bad source location")


def test_limits_can_be_raised(seeds, monkeypatch):
    """Over a limit is a LimitError naming the variable; raising it lets the file through."""
    s = seed(seeds, "softmax", "tensor")
    data = edit(s, lambda m: m["attrs"].update(consts={"c": "x"}, file=mutate._nested(
        150, "list")))
    with pytest.raises(LimitError, match="PYPTO_MAX_DEPTH"):
        parse_ir(data, "x.ir")
    monkeypatch.setenv("PYPTO_MAX_DEPTH", "1000")
    with pytest.raises(InputError, match="module file must be a string"):
        parse_ir(data, "x.ir")
