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

    @property
    def event_ids(self) -> int:
        """Intra-core flag event ids per pipe pair ([sync] event_ids; 8, the smallest budget
        of the built-in targets, for a description without the section)."""
        return int(self.data.get("sync", {}).get("event_ids", 8))

    def nbuffer(self, kind: str) -> int:
        """The default buffer count (and grid instances per task) of passes/nbuffer.py for
        vector or cube blocks ([nbuffer] vec / cube; 1, off, without the section)."""
        key = "cube" if kind == "cube" else "vec"
        return max(1, int(self.data.get("nbuffer", {}).get(key, 1)))

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
        """The Target a document's record describes."""
        check(rec, f"target record in {where}", InputError)
        return cls(rec["name"], rec, "record")


def upgrade_record(rec):
    """A record as documents before format 1.1 held it (name, align, buffers and
    mixed_programs only), completed from the built-in target of that name; others as they
    are."""
    if isinstance(rec, dict) and "compute" not in rec and rec.get("name") in BUILTIN:
        full = load_target(rec["name"]).data
        return {**full, **{k: v for k, v in rec.items() if k == "buffers"}}
    return rec


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
    """A target description must follow the record schema (libpypto/ir/module_ops.py TARGET):
    these sections, these numbers, of these kinds."""
    from ..ir.module_ops import BANDWIDTHS, TARGET
    problem = TARGET.problem(data)
    if problem is None:
        missing = [k for k in BANDWIDTHS if k not in data["bandwidth"]]
        problem = f"[bandwidth] needs {', '.join(missing)}" if missing else None
    if problem is None and not data["cores"]:
        problem = "[cores] has no cores (a count of 0 means: as many as this machine has)"
    if problem:
        raise error(f"{what}: {problem}")


def override(target: Target, sets: list) -> Target:
    """The target with `KEY=VALUE` overrides applied (pypto-run --target-set): KEY is a
    dotted path to a number the description has (`bandwidth.hbm_total`, `buffers.ub`,
    `clock_ghz`, `vector.repeat_cycles.transcendental.f16`), VALUE a number of the same kind
    (an integer where the description has one). The result is checked like a target file."""
    data = copy.deepcopy(target.data)
    for item in sets:
        if "=" not in item:
            raise UsageError(f"--target-set {item!r}: expected KEY=VALUE (e.g. "
                             f"bandwidth.hbm_total=3000)")
        key, raw = (s.strip() for s in item.split("=", 1))
        parent, leaf = _lookup(data, key, target.name)
        parent[leaf] = _value(parent[leaf], raw, key)
    check(data, f"target {target.name} with --target-set", UsageError)
    return Target(data["name"], data, target.source)


def number_keys(data: dict, prefix: str = "") -> list:
    """Every dotted key of a description that holds a number."""
    out = []
    for k, v in data.items():
        if isinstance(v, dict):
            out += number_keys(v, f"{prefix}{k}.")
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            out.append(prefix + k)
    return out


def _lookup(data: dict, key: str, name: str):
    node, parts = data, key.split(".")
    for i, part in enumerate(parts):
        if not isinstance(node, dict) or part not in node or \
                (i == len(parts) - 1 and isinstance(node[part], dict)):
            raise UsageError(f"--target-set: unknown key {key!r} (keys: "
                             f"{', '.join(number_keys(data))})")
        if i == len(parts) - 1:
            return node, part
        node = node[part]
    raise UsageError(f"--target-set: empty key (keys: {', '.join(number_keys(data))})")


def _value(old, raw: str, key: str):
    import math
    if isinstance(old, bool) or not isinstance(old, (int, float)):
        raise UsageError(f"--target-set {key}: not a number in the target, cannot be set")
    try:
        v = int(raw) if isinstance(old, int) else float(raw)
    except ValueError:
        kind = "an integer" if isinstance(old, int) else "a number"
        raise UsageError(f"--target-set {key}={raw}: bad value {raw!r} ({key} is {kind})") \
            from None
    if isinstance(v, float) and not math.isfinite(v) or v < 0:
        raise UsageError(f"--target-set {key}={raw}: bad value {raw!r} (must be a finite, "
                         f"non-negative number)")
    return v
