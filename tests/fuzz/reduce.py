"""Shrink a failing fuzz case and keep it as a regression file.

    .venv/bin/python tests/fuzz/reduce.py CASE.LEVEL.ir [NAME]

CASE is a file a fuzz test kept (its name ends in .<level>.ir, as keep_failure writes it).
The file is shrunk while the tool that reads its level still fails the same way (the same
problem at the same library frame): a msgpack file by dropping list items and map entries of
its decoded value, a text file by dropping lines. The result is written to
regressions/NAME.<level>.ir, which test_regressions.py replays.
"""
from __future__ import annotations

import os
import sys
import tempfile

import msgpack

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import harness  # noqa: E402

MAX_TRIES = 600


def failure(level: str, data: bytes, folder: str) -> str | None:
    """How the reading tool fails on data (problem and site), or None when it behaves."""
    o = harness.feed(level, data, folder)
    bad = o.problem()
    return f"{bad} at {o.crash_site() if o.code == 70 else o.site}" if bad else None


def shrink(level: str, data: bytes, folder: str) -> bytes:
    want = failure(level, data, folder)
    if want is None:
        raise SystemExit("the case does not fail")
    same = (lambda d: failure(level, d, folder) == want)
    if data[:1] and (0x80 <= data[0] <= 0x8F or data[0] in (0xDE, 0xDF)):
        try:
            value = msgpack.unpackb(data, raw=False, strict_map_key=False)
        except Exception:
            return data
        return _shrink_value(value, same)
    return _shrink_lines(data, same)


def _shrink_value(value, same) -> bytes:
    tries = 0
    changed = True
    while changed and tries < MAX_TRIES:
        changed = False
        for container in _containers(value):
            keys = list(container) if isinstance(container, dict) else \
                list(range(len(container)))[::-1]
            for k in keys:
                if tries >= MAX_TRIES:
                    break
                tries += 1
                saved = container[k]
                del container[k]
                if same(msgpack.packb(value, use_bin_type=True)):
                    changed = True
                elif isinstance(container, dict):
                    container[k] = saved
                else:
                    container.insert(k, saved)
    return msgpack.packb(value, use_bin_type=True)


def _containers(v):
    """Lists and dicts in v, outermost first."""
    out, stack = [], [v]
    while stack:
        x = stack.pop(0)
        if isinstance(x, (list, dict)):
            out.append(x)
            stack.extend(x.values() if isinstance(x, dict) else x)
    return out


def _shrink_lines(data: bytes, same) -> bytes:
    lines = data.split(b"\n")
    chunk, tries = max(1, len(lines) // 2), 0
    while chunk >= 1 and tries < MAX_TRIES:
        i = len(lines) - chunk
        while i >= 0 and tries < MAX_TRIES:
            tries += 1
            trial = lines[:i] + lines[i + chunk:]
            if same(b"\n".join(trial)):
                lines = trial
            i -= chunk
        chunk //= 2
    return b"\n".join(lines)


def main(path: str, name: str | None = None) -> None:
    level = path.rsplit(".", 2)[-2]
    if level not in harness.READER:
        raise SystemExit(f"{path}: the name must end in .<level>.ir")
    with open(path, "rb") as f:
        data = f.read()
    with tempfile.TemporaryDirectory() as d:
        os.environ.setdefault("PYPTO_CACHE_DIR", os.path.join(d, "cache"))
        small = shrink(level, data, d)
    name = name or os.path.basename(path).rsplit(".", 2)[0]
    os.makedirs(harness.REGRESSIONS, exist_ok=True)
    out = harness.REGRESSIONS / f"{name}.{level}.ir"
    out.write_bytes(small)
    print(f"{len(data)} -> {len(small)} bytes: {out}")


if __name__ == "__main__":
    main(*sys.argv[1:3])
