"""Targets: machine descriptions as TOML data (built in: a2, a3, 950, host; or a file path).

A document lowered for a target carries the target's whole record (module attribute
`target`), so every later stage builds the same Target from the document alone:
`pypto-lower --target my.toml | pypto-sched | pypto-run` needs the file only once. A path
is only ever taken from the command line, never from a document.
"""
from __future__ import annotations

import copy
import os
import tomllib
from dataclasses import dataclass
from importlib import resources

from ..errors import InputError, UsageError

BUILTIN = ("a2", "a3", "950", "host")
SECTIONS = ("cores", "buffers", "bandwidth", "compute")
SPACES = ("ub", "l1", "l0a", "l0b", "l0c")
BANDWIDTHS = ("gm_to_ub", "gm_to_l1", "ub_to_gm", "l0c_to_gm", "l1_to_l0", "l0c_to_ub")
COMPUTE = ("vector_bytes_per_cycle", "vector_op_cycles", "cube_flops_per_cycle")
MAX_TARGET_BYTES = 1 << 20      # a target file is a page of numbers


@dataclass
class Target:
    name: str
    data: dict
    source: str            # built-in name, the file path given, or "record" (from a document)

    def __getitem__(self, key):
        return self.data[key]

    @property
    def align(self) -> int:
        return int(self.data.get("align_bytes", 32))

    @property
    def mixed_programs(self) -> bool:
        return bool(self.data.get("mixed_programs", False))

    def buffer(self, space: str) -> int:
        return int(self.data["buffers"][space])

    def cores(self) -> dict[str, int]:
        """Core kind -> count, with 0 (auto) resolved to this machine's usable CPUs."""
        out = {}
        for kind, n in self.data["cores"].items():
            out[kind] = int(n) if n else host_cpus()
        return out

    def bw(self, path: str) -> float:
        return float(self.data["bandwidth"][path]) * 1e9

    def record(self) -> dict:
        """The whole description, as a document carries it (module attribute `target`)."""
        return copy.deepcopy(self.data)

    @classmethod
    def from_record(cls, rec, where: str = "the document") -> "Target":
        """The Target a document's record describes. A record from before 1.1 held only
        name, align, buffers and mixed_programs; for a built-in name the rest is filled in."""
        if isinstance(rec, dict) and "compute" not in rec and rec.get("name") in BUILTIN:
            full = load_target(rec["name"]).data
            rec = {**full, **{k: v for k, v in rec.items() if k in ("buffers",)}}
        check(rec, f"target record in {where}", InputError)
        return cls(rec["name"], rec, "record")


def host_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def load_target(spec: str | None) -> Target:
    """A built-in target by name, or a TOML file by path (given on a command line)."""
    spec = spec or "host"
    if spec in BUILTIN:
        text = resources.files(__package__).joinpath(f"{spec}.toml").read_text()
    else:
        text = _read_file(spec)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"target {spec}: not valid TOML ({exc})") from None
    check(data, f"target {spec}", UsageError)
    return Target(data["name"], data, spec)


def _read_file(spec: str) -> str:
    if not os.path.exists(spec):
        raise UsageError(f"unknown target {spec!r} (built in: {', '.join(BUILTIN)}; or a path "
                         f"to a .toml file)")
    if not os.path.isfile(spec):
        raise UsageError(f"target {spec}: not a regular file")
    try:
        with open(spec, "rb") as f:
            raw = f.read(MAX_TARGET_BYTES + 1)
    except OSError as exc:
        raise UsageError(f"cannot read target {spec}: {exc.strerror}") from None
    if len(raw) > MAX_TARGET_BYTES:
        raise UsageError(f"target {spec}: larger than {MAX_TARGET_BYTES} bytes, not a target "
                         f"description")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"target {spec}: not a text (TOML) file") from None


def check(data, what: str, error=UsageError) -> None:
    """A target description must have these sections and these numbers, of these kinds."""
    def fail(msg):
        raise error(f"{what}: {msg}")

    if not isinstance(data, dict):
        fail("not a table")
    missing = [s for s in SECTIONS if not isinstance(data.get(s), dict)]
    if not isinstance(data.get("name"), str) or not data.get("name"):
        missing.insert(0, "name")
    if missing:
        fail(f"missing {', '.join(missing)}")
    for space in SPACES:
        v = data["buffers"].get(space)
        if not _is_int(v) or v < 0:
            fail(f"[buffers] has no {space}" if v is None else
                 f"[buffers] {space} must be a byte count, not {v!r}")
    for kind, n in data["cores"].items():
        if kind not in ("cube", "vector", "mixed") or not _is_int(n) or n < 0:
            fail(f"[cores] {kind} = {n!r}: core kinds are cube, vector and mixed, counts ints >= 0")
    for key in BANDWIDTHS:
        v = data["bandwidth"].get(key)
        if not _is_num(v) or v <= 0:
            fail(f"[bandwidth] {key} must be a positive number (GB/s), not {v!r}")
    for key in COMPUTE:
        v = data["compute"].get(key)
        ok = all(_is_num(x) and x > 0 for x in v.values()) if isinstance(v, dict) and v \
            else _is_num(v) and v >= 0
        if not ok:
            fail(f"[compute] {key} must be a non-negative number, not {v!r}")
    for key in ("clock_ghz",):
        if not _is_num(data.get(key)) or data[key] <= 0:
            fail(f"{key} must be a positive number, not {data.get(key)!r}")
    align = data.get("align_bytes", 32)
    if not _is_int(align) or align <= 0 or align & (align - 1):
        fail(f"align_bytes must be a power of two, not {align!r}")


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and v == v
