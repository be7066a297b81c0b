"""Textual pass pipelines: parse 'a,b{opt=1}', check levels fit, run with instrumentation.

The runner, not the passes, prints IR between passes, times them and verifies after each.
"""
from __future__ import annotations

import inspect
import os
import time
from dataclasses import dataclass, field

from ..errors import UsageError
from ..ir.core import level_index
from . import DEFAULT_PIPELINE, PASSES, get_pass


@dataclass
class PassSpec:
    name: str
    options: dict = field(default_factory=dict)

    def __str__(self) -> str:
        if not self.options:
            return self.name
        opts = ",".join(f"{k}={str(v).lower() if isinstance(v, bool) else v}"
                        for k, v in self.options.items())
        return f"{self.name}{{{opts}}}"


def parse_pipeline(text: str) -> list[PassSpec]:
    specs, i, text = [], 0, text.strip()
    while i < len(text):
        j = i
        while j < len(text) and text[j] not in ",{":
            j += 1
        name = text[i:j].strip()
        opts: dict = {}
        if j < len(text) and text[j] == "{":
            k = text.find("}", j)
            if k < 0:
                raise UsageError(f"pipeline: unclosed '{{' after {name!r}")
            for item in filter(None, (s.strip() for s in text[j + 1:k].split(","))):
                if "=" not in item:
                    raise UsageError(f"pipeline: option {item!r} of {name!r} needs name=value")
                key, val = (s.strip() for s in item.split("=", 1))
                opts[key] = _parse_value(val)
            j = k + 1
        if not name:
            raise UsageError(f"pipeline: empty pass name in {text!r}")
        if name not in PASSES:
            raise UsageError(f"unknown pass {name!r} (known: {', '.join(sorted(PASSES))})")
        _check_options(name, opts)
        specs.append(PassSpec(name, opts))
        while j < len(text) and text[j] in " ,":
            j += 1
        i = j
    return specs


def _parse_value(v: str):
    low = v.lower()
    if low in ("true", "false"):
        return low == "true"
    for conv in (int, float):
        try:
            return conv(v)
        except ValueError:
            pass
    return v


def pass_options(name: str) -> dict:
    """Option name (dashed) -> (python name, default) of a registered pass."""
    sig = inspect.signature(get_pass(name))
    return {p.name.replace("_", "-"): (p.name, p.default) for p in sig.parameters.values()
            if p.kind == p.KEYWORD_ONLY and p.name != "target"}


def _check_options(name: str, opts: dict) -> None:
    known = pass_options(name)
    for k, v in opts.items():
        if k not in known:
            raise UsageError(f"pass {name!r} has no option {k!r} "
                             f"(options: {', '.join(sorted(known)) or 'none'})")
        default = known[k][1]
        want = type(default)
        if want is bool and not isinstance(v, bool) or \
                want is int and (isinstance(v, bool) or not isinstance(v, int)):
            raise UsageError(f"pass {name!r} option {k}={v!r}: expected "
                             f"{'true or false' if want is bool else 'an integer'}")


def describe(name: str) -> str:
    doc = inspect.getdoc(get_pass(name)) or ""
    return doc.splitlines()[0] if doc else ""


def default_pipeline(from_level: str, to_level: str) -> list[PassSpec]:
    """The default passes that take a document from one level to another."""
    out = []
    for spec in parse_pipeline(DEFAULT_PIPELINE):
        src, dst = PASSES[spec.name][:2]
        if level_index(src) >= level_index(from_level) and level_index(dst) <= level_index(to_level):
            if level_index(dst) > level_index(from_level) or src == from_level == dst:
                out.append(spec)
    return out


def describe_all() -> str:
    """The --list-passes table: name, levels, summary, options with their defaults."""
    from tabulate import tabulate
    rows = []
    for name in sorted(PASSES):
        src, dst, _ = PASSES[name]
        opts = ", ".join(f"{k}={str(default).lower() if isinstance(default, bool) else default}"
                         for k, (_, default) in pass_options(name).items())
        rows.append([name, f"{src} -> {dst}", describe(name), opts])
    return tabulate(rows, headers=["pass", "levels", "what it does", "options"], tablefmt="plain")


@dataclass
class Instrument:
    """What the runner does around each pass (set from the tool's flags)."""

    print_after_all: bool = False
    print_after: tuple = ()
    verify_each: bool = False
    time_passes: bool = False
    stop_after: str | None = None
    sink: object = None              # callable(str) for printed IR, default stderr
    observe: object = None           # callable(pass name, document) after each pass
    timings: list = field(default_factory=list)

    def __post_init__(self):
        if self.stop_after is not None and self.stop_after not in PASSES:
            raise UsageError(f"--stop-after: unknown pass {self.stop_after!r} "
                             f"(known: {', '.join(sorted(PASSES))})")
        for name in self.print_after:
            if name not in PASSES:
                raise UsageError(f"--print-after: unknown pass {name!r}")

    def timing_table(self) -> str:
        """The --time-passes table (ms and share per pass, then the total)."""
        from tabulate import tabulate
        total = sum(t for _, t in self.timings) or 1.0
        rows = [[n, f"{t * 1e3:.3f}", f"{100 * t / total:.1f}"] for n, t in self.timings]
        rows.append(["total", f"{total * 1e3:.3f}", "100.0"])
        return tabulate(rows, headers=["pass", "ms", "%"], tablefmt="plain",
                        disable_numparse=True) + "\n"


def run_pipeline(doc, specs: list[PassSpec], target, inst: Instrument | None = None):
    from ..ir.text import print_doc
    from ..ir.verify import verify_or_raise
    from . import docopts
    inst = inst or Instrument()
    level = doc.level
    dumps, applied = docopts.dumps(doc), []
    for spec in specs:
        src, dst = PASSES[spec.name][:2]
        if src != level:
            raise UsageError(f"pass {spec.name!r} takes a {src}-level graph but gets {level} "
                             f"here; order the pipeline by level (default: {DEFAULT_PIPELINE})")
        fn = get_pass(spec.name)
        known = pass_options(spec.name)
        from_doc, used, overridden = docopts.options_for(doc, spec.name, spec.options, known)
        opts = {known[k][0]: v for k, v in {**from_doc, **spec.options}.items()}
        clock = time.perf_counter if not os.environ.get("PYPTO_FAKE_CLOCK") else _fake_clock()
        t0 = clock()
        try:
            doc = fn(doc, target=target, **opts)
        except (UsageError, ValueError) as exc:      # a value the pass refuses
            err = docopts.refused(spec.name, used, exc)
            if err is None:
                raise
            raise err from None
        applied += used + overridden
        inst.timings.append((spec.name, clock() - t0))
        level = doc.level = dst
        if inst.verify_each:
            verify_or_raise(doc, f"after pass {spec.name}")
        if inst.observe is not None:
            inst.observe(spec.name, doc)
        if inst.print_after_all or spec.name in inst.print_after or spec.name in dumps or \
                "*" in dumps:
            (inst.sink or _stderr)(f"# ---- IR after {spec.name} ---- #\n" + print_doc(doc))
        if inst.stop_after == spec.name:
            break
    if specs:
        docopts.finish(doc, applied)
    return doc


def _stderr(s: str) -> None:
    import sys
    sys.stderr.write(s)


def _fake_clock():
    tick = iter(range(0, 10**9))
    return lambda: next(tick) * 0.001
