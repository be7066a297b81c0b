"""Targets: machine descriptions as TOML data (built in: a2, a3, 950, host; or a file path)."""
from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from importlib import resources

from ..errors import UsageError

BUILTIN = ("a2", "a3", "950", "host")
_SECTIONS = ("cores", "buffers", "bandwidth", "compute")


@dataclass
class Target:
    name: str
    data: dict
    source: str            # built-in name or the file path given

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

    def summary(self) -> dict:
        """What an IR file records about the target it was built for."""
        return {"name": self.name, "align": self.align, "mixed_programs": self.mixed_programs,
                "buffers": dict(self.data["buffers"])}


def host_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def load_target(spec: str | None) -> Target:
    """A built-in target by name, or a TOML file by path."""
    spec = spec or "host"
    if spec in BUILTIN:
        text = resources.files(__package__).joinpath(f"{spec}.toml").read_text()
        source = spec
    else:
        if not os.path.exists(spec):
            raise UsageError(f"unknown target {spec!r} (built in: {', '.join(BUILTIN)}; or a "
                             f"path to a .toml file)")
        try:
            with open(spec, encoding="utf-8") as f:
                text = f.read()
        except OSError as exc:
            raise UsageError(f"cannot read target {spec}: {exc.strerror}") from None
        except UnicodeDecodeError:
            raise UsageError(f"target {spec}: not a text (TOML) file") from None
        source = spec
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"target {spec}: not valid TOML ({exc})") from None
    missing = [s for s in _SECTIONS if s not in data] + [k for k in ("name",) if k not in data]
    if missing:
        raise UsageError(f"target {spec}: missing {', '.join(missing)}")
    for space in ("ub", "l1", "l0a", "l0b", "l0c"):
        if space not in data["buffers"]:
            raise UsageError(f"target {spec}: [buffers] has no {space}")
    return Target(data["name"], data, source)
