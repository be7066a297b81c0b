"""The op file's pass options (the document's `pass_options`, set by set_pass_options,
set_pass_config or jit(pass_options=); frontend/passopts.py maps the reference's knobs)
applied to the passes of a pipeline run (passes/pipeline.py run_pipeline).

- An entry {pass, option, value} is that pass's option `pass{option=value}` wherever the pass
  runs; an option written in the pipeline text (-p 'fuse{enable=true}') wins over it.
- Options applied leave the document, so the next tool of a split pipeline does not see
  them again. An entry whose pass is not registered, or has not run by the time the
  document is past the pass's input level, is a one-line warning naming the knob and the
  pass, and leaves the document too.
- An option the pass does not have, a value of the wrong type, and a value the pass refuses
  (an error while it runs) are errors at the op file's line of the setting.
"""
from __future__ import annotations

from ..errors import CompileError, PyptoError, warn
from ..ir.core import Loc, level_index
from . import PASSES


def _loc(e: dict) -> Loc | None:
    return Loc(e["file"], e["line"]) if "file" in e and "line" in e else None


def _what(e: dict) -> str:
    return f"{e['option']}={_fmt(e['value'])} (from {e['from']})"


def _fmt(v) -> str:
    return str(v).lower() if isinstance(v, bool) else str(v)


def entries(doc) -> list:
    return list(doc.attrs.get("pass_options") or ())


def options_for(doc, name: str, given: dict, known: dict) -> tuple[dict, list, list]:
    """(options, entries used, entries the pipeline text overrides): the document's options
    of pass `name` under the pipeline text's (given, dashed names), checked against the
    pass's options (known: dashed -> (python name, default))."""
    out, used, overridden = {}, [], []
    for e in entries(doc):
        if e["pass"] != name:
            continue
        if e["option"] in given:
            overridden.append(e)
            continue
        if e["option"] not in known:
            raise CompileError(f"pass {name!r} has no option {e['option']!r}, set by "
                               f"{e['from']} (its options: {', '.join(sorted(known)) or 'none'})",
                               _loc(e))
        problem = _type_problem(known[e["option"]][1], e["value"])
        if problem:
            raise CompileError(f"pass {name!r} option {_what(e)}: expected {problem}", _loc(e))
        out[e["option"]] = e["value"]
        used.append(e)
    return out, used, overridden


def _type_problem(default, v) -> str | None:
    if isinstance(default, bool):
        return None if isinstance(v, bool) else "true or false"
    if isinstance(default, int):
        return None if isinstance(v, int) and not isinstance(v, bool) else "an integer"
    if isinstance(default, float):
        return None if isinstance(v, (int, float)) and not isinstance(v, bool) else "a number"
    if isinstance(default, str):
        return None if isinstance(v, str) else "a string"
    return None


def refused(name: str, used: list, exc: Exception) -> PyptoError | None:
    """The error of a pass that failed (a UsageError or ValueError without a location) while
    it had options from the op file: at the line of the first of them, naming them (a pass
    refuses a value it cannot honour). None: not such a failure."""
    if not used or getattr(exc, "loc", None) is not None:
        return None
    settings = ", ".join(_what(e) for e in used)
    return CompileError(f"pass {name!r} with the op file's {settings}: "
                        f"{getattr(exc, 'message', str(exc))}", _loc(used[0]))


def finish(doc, applied: list) -> None:
    """Drop the applied entries from doc; warn about and drop those that can no longer
    apply (pass unknown, or the document already past the pass's input level)."""
    keep = []
    for e in entries(doc):
        if any(e is a or e == a for a in applied):
            continue
        name = e["pass"]
        if name not in PASSES:
            warn(f"{_what(e)}: pypto has no pass {name!r} (yet), so this setting does "
                 f"nothing", _loc(e))
            continue
        src = PASSES[name][0]
        if level_index(doc.level) > level_index(src):
            warn(f"{_what(e)}: pass {name!r} was not in the pipeline, so this setting did "
                 f"nothing", _loc(e))
            continue
        keep.append(e)
    if keep:
        doc.attrs["pass_options"] = keep
    else:
        doc.attrs.pop("pass_options", None)


def dumps(doc) -> set:
    """The passes whose result to print (the op file's KEY_DUMP_GRAPH; * = all)."""
    return set(doc.attrs.get("print_after") or ())
