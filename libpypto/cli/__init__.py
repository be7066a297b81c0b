"""Shared command-line plumbing: the error boundary, input and output, common options."""
from __future__ import annotations

import os
import sys

from ..errors import PyptoError, set_warning_handler


def run_tool(app, prog: str) -> None:
    """Run a typer app: PyptoError -> `prog: error: ...` and its exit code; no traceback."""
    import typer
    try:
        from click import ClickException
    except ImportError:       # typer >= 0.28 vendors click
        from typer._click.exceptions import ClickException
    set_warning_handler(lambda msg, loc=None: sys.stderr.write(
        f"{prog}: warning: {loc}: {msg}\n" if loc else f"{prog}: warning: {msg}\n"))
    debug = bool(os.environ.get("PYPTO_DEBUG"))
    try:
        rc = app(prog_name=prog, standalone_mode=False)
        if rc == 130:             # typer reports Ctrl-C as a return value
            raise KeyboardInterrupt
        if isinstance(rc, int) and rc:
            sys.exit(rc)
    except PyptoError as exc:
        if debug:
            raise
        sys.stderr.write(f"{prog}: error: {exc}\n")
        sys.exit(exc.exit_code)
    except typer.Abort:
        sys.stderr.write(f"{prog}: interrupted\n")
        sys.exit(130)
    except ClickException as exc:
        sys.stderr.write(f"{prog}: error: {exc.format_message()}\n")
        sys.exit(2)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        sys.stderr.write(f"{prog}: interrupted\n")
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(1)
    except Exception as exc:  # a bug: say so in one line, full trace under PYPTO_DEBUG
        if debug:
            raise
        sys.stderr.write(f"{prog}: internal error: {type(exc).__name__}: {exc} "
                         f"(rerun with PYPTO_DEBUG=1 for a traceback)\n")
        sys.exit(70)


def load_doc(src: str, **trace_opts):
    """The document named on a command line: an op file (.py), an IR file, or stdin."""
    from ..driver import parse_ir, trace
    from .io import read_input
    if src != "-" and src.endswith(".py"):
        return trace(src, **trace_opts)
    data, name = read_input(src)
    return parse_ir(data, name)


def save_doc(doc, out: str, text: bool, tool: str, options: dict) -> None:
    from ..driver import dump_ir
    from .io import write_output
    doc.with_producer(tool, {k: v for k, v in sorted(options.items()) if v not in (None, [], {})})
    write_output(out, dump_ir(doc, text), binary=not text)


def parse_assignments(items: list[str] | None, what: str, convert=int) -> dict:
    """NAME=VALUE pairs from repeated options (--bind N=64, --const eps=1e-6)."""
    from ..errors import UsageError
    out = {}
    for it in items or []:
        if "=" not in it:
            raise UsageError(f"{what} {it!r}: expected NAME=VALUE")
        k, v = it.split("=", 1)
        k = k.strip()
        try:
            out[k] = convert(v.strip())
        except (ValueError, SyntaxError):
            raise UsageError(f"{what} {it!r}: bad value {v!r}") from None
    return out


def literal(v: str):
    """A --const value: a Python literal (int, float, bool, str), else the raw string."""
    import ast
    try:
        return ast.literal_eval(v)
    except (ValueError, SyntaxError):
        low = v.lower()
        if low in ("true", "false"):
            return low == "true"
        return v
