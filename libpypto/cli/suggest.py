"""A "did you mean ...?" for a misspelt name, added to an error at the CLI boundary.

The library's errors about unknown names follow one convention (STYLE.md section 5): they
quote the name and list the valid ones in brackets,

    unknown pass 'tensor2tile' (known: alloc, assign-memory, ..., tensor-to-tile)
    no kernel 'scal' in two_kernels.py (kernels: scale, shift)
    unknown target 'a22' (built in: a2, a3, 950, host; or a path to a .toml file)

so the boundary can offer the closest valid name (difflib) for every one of them: pass,
target, kernel, backend, symbol, constant, table format. A name an op file looks up and
does not find (`pypto.expp`) is an AttributeError that knows its object; its public names
are the choices, as in Python's own tracebacks. Unknown options come from click.
"""
from __future__ import annotations

import difflib
import re

_LISTED = re.compile(r"'(?P<name>[^']+)'[^'(]*\((?P<label>[a-z][a-z ]*): (?P<choices>[^;)]+)")


def did_you_mean(word: str, choices, prefix: str = "'") -> str:
    """'; did you mean 'x'?' for the closest choice, or '' when none is close."""
    close = difflib.get_close_matches(word, [c for c in choices if c != word], n=1,
                                      cutoff=0.6)
    suffix = "'" if prefix == "'" else ""
    return f"; did you mean {prefix}{close[0]}{suffix}?" if close else ""


def suggestion(message: str, exc: BaseException | None = None) -> str:
    """The did-you-mean to add to an error message ('' when there is none)."""
    m = None
    for m in _LISTED.finditer(message):
        pass
    if m is not None:
        choices = [c.strip() for c in m.group("choices").split(",")]
        return did_you_mean(m.group("name"), choices)
    attr = _attribute_error(exc)
    if attr is not None:
        try:
            names = [n for n in dir(attr.obj) if not n.startswith("_")]
        except Exception:       # a broken __dir__ in an op file's objects
            return ""
        return did_you_mean(attr.name, names)
    return ""


def _attribute_error(exc: BaseException | None):
    """The AttributeError (with its name and object) behind exc, if there is one."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, AttributeError) and getattr(exc, "name", None) and \
                getattr(exc, "obj", None) is not None:
            return exc
        exc = exc.__cause__ or exc.__context__
    return None


def unknown_option(exc) -> str:
    """click's NoSuchOption as one line: the option and the closest the command has."""
    ctx = getattr(exc, "ctx", None)
    opts = [o for p in (ctx.command.params if ctx else []) for o in p.opts + p.secondary_opts
            if o.startswith("-")]
    return f"no such option: {exc.option_name}" + did_you_mean(exc.option_name, opts, "")
