"""Mutators: byte-level edits of a file, structural edits of its decoded msgpack value, token
edits of its text form. Each takes a random.Random, so a case is fixed by its seed."""
from __future__ import annotations

import re

import msgpack

INTS = [-1, 0, 1, 2, 7, 31, 33, -(2 ** 31), 2 ** 31, 2 ** 32 + 1, 2 ** 62, 2 ** 63 - 1,
        -(2 ** 63), 2 ** 64 - 1]
HUGE = [2 ** 64, 2 ** 70, -(2 ** 70), 10 ** 30]        # past msgpack: expressions or text
STRINGS = ["", "x", "f32", "f16", "i8", "bool", "ub", "gm", "l1", "vector", "cube", "any",
           "tensor", "tile", "scalar", "add", "param", "loop", "N", "x_0", "%0", "a\nb",
           "\x00", "\x1b[31m", "é", "../../etc/passwd", "/dev/zero", "N // 0", "N % 0",
           "(" * 50, "x" * 5000, "1e400", "nan", "-inf", "\"", "'", "}", "\u202e"]


# -- bytes ------------------------------------------------------------------------------------

def _flip(b: bytearray, rng) -> str:
    i = rng.randrange(len(b))
    b[i] ^= 1 << rng.randrange(8)
    return f"flip@{i}"


def _set(b: bytearray, rng) -> str:
    i = rng.randrange(len(b))
    b[i] = rng.choice([0, 0xFF, 0x7F, 0x80, 0xC0, 0xC1, 0xD9, 0xDC, 0xDD, 0xDE, 0xDF,
                       rng.randrange(256)])
    return f"set@{i}"


def _delete(b: bytearray, rng) -> str:
    i = rng.randrange(len(b))
    n = rng.choice([1, 1, 2, 4, 16, 64])
    del b[i:i + n]
    return f"delete@{i}+{n}"


def _insert(b: bytearray, rng) -> str:
    i = rng.randrange(len(b) + 1)
    n = rng.choice([1, 1, 2, 4, 16])
    b[i:i] = bytes(rng.randrange(256) for _ in range(n))
    return f"insert@{i}+{n}"


def _truncate(b: bytearray, rng) -> str:
    i = rng.randrange(len(b))
    del b[i:]
    return f"truncate@{i}"


def _duplicate(b: bytearray, rng) -> str:
    i = rng.randrange(len(b))
    n = rng.choice([1, 4, 16, 64, 256])
    b[i:i] = b[i:i + n]
    return f"duplicate@{i}+{n}"


BYTE_MUTATORS = [_flip, _set, _delete, _insert, _truncate, _duplicate]


def mutate_bytes(data: bytes, rng, count: int | None = None) -> tuple[str, bytes]:
    b = bytearray(data)
    kinds = []
    for _ in range(count or rng.choice([1, 1, 1, 2, 3])):
        if not b:
            break
        kinds.append(rng.choice(BYTE_MUTATORS)(b, rng))
    return "bytes:" + ",".join(kinds), bytes(b)


# -- msgpack values ---------------------------------------------------------------------------

def decode(data: bytes):
    return msgpack.unpackb(data, raw=False, strict_map_key=False)


def encode(value) -> bytes:
    return msgpack.packb(value, use_bin_type=True)


def _nodes(v, path=()):
    """Every (path, value) in v, containers first."""
    yield path, v
    if isinstance(v, dict):
        for k, x in v.items():
            yield from _nodes(x, path + (k,))
    elif isinstance(v, list):
        for i, x in enumerate(v):
            yield from _nodes(x, path + (i,))


def _get(v, path):
    for p in path:
        v = v[p]
    return v


def _nested(depth: int, kind: str):
    v = 0
    for _ in range(depth):
        v = [v] if kind == "list" else {"a": v}
    return v


def _expr(text: str):
    return msgpack.ExtType(1, text.encode())


def random_value(rng, like=None):
    """A value of another type, an edge int, a long or odd string, deep nesting, or an
    expression (msgpack extension 1) that is huge, deep or malformed."""
    pick = rng.randrange(12)
    if pick <= 2:
        return rng.choice(INTS)
    if pick == 3:
        return rng.choice(STRINGS)
    if pick == 4:
        return rng.choice([None, True, False, 1.5, -0.0, float("nan"), float("inf"), b"\x00\xff",
                           msgpack.ExtType(42, b"data")])
    if pick == 5:
        return rng.choice([[], {}, [0], {"": 0}, [None], [[1, 2], [3]], ["x", 1, None]])
    if pick == 6:
        return _nested(rng.choice([100, 1000, 5000, 100000]), rng.choice(["list", "dict"]))
    if pick == 7:
        return _expr(rng.choice([str(rng.choice(HUGE)), "(" * 2000 + "N" + ")" * 2000,
                                 " + ".join(["N"] * 20000), "N // 0", "N % 0", "N +", "",
                                 "-" * 5000 + "1", "N * " * 3000 + "N", "\x00", "2 ** 70",
                                 "max(N, 1)", "N < 1 ? 2 : 3", "x" * 10000]))
    if pick == 8 and isinstance(like, int) and not isinstance(like, bool):
        return rng.choice([like - 1, like + 1, -like, like * 2 ** 20, like or -1])
    if pick == 9 and isinstance(like, str):
        return rng.choice([like + "\n", like * 2, like.upper(), like[:-1], like + "x"])
    if pick == 10 and isinstance(like, list) and like:
        return like[:-1] if rng.random() < 0.5 else like + [like[-1]]
    return rng.choice(INTS + STRINGS[:8] + [None, [], {}])


def mutate_value(data: bytes, rng) -> tuple[str, bytes]:
    """One structural edit of the decoded file: delete a field or an element, replace a value,
    swap two siblings, duplicate a map entry under another key."""
    doc = decode(data)
    nodes = list(_nodes(doc))
    path, v = rng.choice(nodes[1:])
    parent = _get(doc, path[:-1])
    key = path[-1]
    how = rng.randrange(10)
    if how <= 1:
        del parent[key]
        kind = "delete"
    elif how <= 7:
        parent[key] = random_value(rng, v)
        kind = f"replace={_short(parent[key])}"
    elif how == 8 and isinstance(parent, list) and len(parent) > 1:
        j = rng.randrange(len(parent))
        parent[key], parent[j] = parent[j], parent[key]
        kind = f"swap<->{j}"
    else:
        other, ov = rng.choice(nodes)
        parent[key] = _copy(ov) if len(other) >= len(path) or rng.random() < 0.3 else 0
        kind = f"graft{'/'.join(map(str, other))[:40]}"
    where = "/".join(map(str, path))
    try:
        return f"value:{where}:{kind}", encode(doc)
    except (OverflowError, ValueError, TypeError):      # not packable: say so with bytes
        return f"value:{where}:{kind}:unpackable", data


def _copy(v):
    return decode(encode(v))


def _short(v) -> str:
    if isinstance(v, (list, dict)) and v:
        return f"{type(v).__name__}[{len(v)}]"
    r = repr(v)
    return r if len(r) <= 30 else r[:27] + "..."


# -- text -------------------------------------------------------------------------------------

_NUM = re.compile(r"(?<![\w.])-?\d+(?![\w.])")
_STR = re.compile(r'"(?:[^"\\\n]|\\.)*"')
_NAME = re.compile(r"%[\w.]+|\b[a-z_][a-z0-9_]*\b")


def mutate_text(data: bytes, rng) -> tuple[str, bytes]:
    """A token edit of the text form: a number, string or name replaced, a line deleted or
    repeated, deep brackets or a long line inserted."""
    text = data.decode("utf-8")
    how = rng.randrange(8)
    if how <= 2:
        pat, repl = _NUM, lambda: str(rng.choice(INTS + HUGE))
    elif how == 3:
        pat, repl = _STR, lambda: '"' + rng.choice(STRINGS).replace('"', "") + '"'
    elif how == 4:
        pat, repl = _NAME, lambda: rng.choice(["%nope", "f64", "zz", "loop", "tile", "%0",
                                               "gm", "N", "1", "", "[", "{", "@"])
    else:
        return _text_lines(text, rng)
    hits = list(pat.finditer(text))
    if not hits:
        return _text_lines(text, rng)
    m = rng.choice(hits)
    new = repl()
    return f"text:{m.start()}:{m.group()[:20]!r}->{new[:20]!r}", \
        (text[:m.start()] + new + text[m.end():]).encode()


def _text_lines(text: str, rng) -> tuple[str, bytes]:
    lines = text.split("\n")
    i = rng.randrange(len(lines))
    how = rng.randrange(5)
    if how == 0:
        del lines[i]
        kind = "delete-line"
    elif how == 1:
        lines.insert(i, lines[rng.randrange(len(lines))])
        kind = "repeat-line"
    elif how == 2:
        n = rng.choice([200, 2000, 50000])
        col = rng.randrange(len(lines[i]) + 1)
        bracket = rng.choice(["[", "{", "(", "- "])
        lines[i] = lines[i][:col] + bracket * n + lines[i][col:]
        kind = f"brackets{bracket.strip()}x{n}"
    elif how == 3:
        lines[i] = lines[i] + " + N" * rng.choice([10, 5000, 50000])
        kind = "long-expression"
    else:
        lines[i:i] = ["loop {var=\"i\", start=0, stop=1, step=1} {"] * 3000 + ["}"] * 3000
        kind = "deep-regions"
    return f"text:{i}:{kind}", "\n".join(lines).encode()


def mutate_case(seed, rng) -> tuple[str, bytes]:
    """One mutation of a seed file: bytes, or structure of its form."""
    if rng.random() < 0.5:
        return mutate_bytes(seed.data, rng)
    if seed.form == "msgpack":
        return mutate_value(seed.data, rng)
    return mutate_text(seed.data, rng)
