"""Shared command-line plumbing: the error boundary, input and output, common options.

Exit codes (DESIGN.md section 7): 0 success; 1 the work failed (an error in the op, a
verification mismatch); 2 bad usage or unreadable input; 130 interrupted; 70 an internal
error, which is a bug: the one-line message asks for a report and names the folder where
the input and the command line were saved (crash.py).
"""
from __future__ import annotations

import contextlib
import os
import signal
import sys

from ..errors import PyptoError, UsageError, set_warning_handler


def _say(prog: str, kind: str, message: str | None = None) -> None:
    """One line on stderr, `prog: kind: message`, with any control character escaped."""
    from . import progress
    from .text import printable
    progress.clear()
    sys.stderr.write(f"{prog}: {kind}: {printable(message)}\n" if message is not None
                     else f"{prog}: {kind}\n")
    sys.stderr.flush()


def _interrupted_while_starting(signum, frame) -> None:
    os.write(2, f"{_starting}: interrupted\n".encode())
    os._exit(130)               # nothing is open or half-written yet: no cleanup to run


_starting = "pypto"


def starting(prog: str) -> None:
    """Called first by a tool's main.py, before its imports (a second or more on a loaded
    machine): Ctrl-C meanwhile is the tool's one `prog: interrupted` line and exit 130, not
    a traceback from inside an import. run_tool puts Python's own handler back, so that
    from then on an interrupt unwinds through the error boundary and its cleanups."""
    global _starting
    _starting = prog
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _interrupted_while_starting)


def run_tool(app, prog: str) -> None:
    """Run a typer app behind the error boundary: every failure is one stderr line and one
    of the exit codes above; a traceback only with PYPTO_DEBUG=1."""
    import typer
    try:
        from click.exceptions import ClickException, NoSuchOption
    except ImportError:       # typer >= 0.28 vendors click
        from typer._click.exceptions import ClickException, NoSuchOption
    from . import crash
    from .suggest import suggestion, unknown_option
    set_warning_handler(lambda msg, loc=None: _say(prog, "warning",
                                                   f"{loc}: {msg}" if loc else msg))
    debug = bool(os.environ.get("PYPTO_DEBUG"))
    crash.forget()
    try:
        # Python's own handler back only here, inside the boundary: an interrupt during
        # the imports above is still the starting handler's one line
        if signal.getsignal(signal.SIGINT) is _interrupted_while_starting:
            signal.signal(signal.SIGINT, signal.default_int_handler)
        with _python_warnings(prog):
            rc = app(prog_name=prog, standalone_mode=False)
        if rc == 130:             # typer reports Ctrl-C as a return value
            raise KeyboardInterrupt
        if isinstance(rc, int) and rc:
            sys.exit(rc)
    except PyptoError as exc:
        if debug:
            raise
        _say(prog, "error", f"{exc}{suggestion(str(exc), exc)}")
        sys.exit(exc.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        _say(prog, "interrupted")
        sys.exit(130)
    except NoSuchOption as exc:
        _say(prog, "error", unknown_option(exc))
        sys.exit(2)
    except ClickException as exc:
        _say(prog, "error", exc.format_message())
        sys.exit(2)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except BrokenPipeError:
        sys.exit(1)
    except Exception as exc:  # a bug: say so in one line, full trace under PYPTO_DEBUG
        if debug:
            raise
        _internal_error(prog, exc)


@contextlib.contextmanager
def _python_warnings(prog: str):
    """A Python warning (numpy's, say) is one `prog: warning: ...` line like ours, not the
    two lines of Python's own format (restored on the way out: tests run tools in process)."""
    import warnings

    def show(message, category, filename, lineno, file=None, line=None):
        _say(prog, "warning", f"{category.__name__}: {message}")
    with warnings.catch_warnings():
        warnings.showwarning = show
        yield


def _internal_error(prog: str, exc: Exception) -> None:
    from . import crash
    try:
        saved = f"saved the input to {crash.save_reproducer(prog, exc)}"
    except OSError as why:
        saved = f"could not save the input ({why})"
    _say(prog, "internal error, please report", f"{type(exc).__name__}: {exc}; {saved}")
    sys.exit(70)


def is_op_file(src: str) -> bool:
    return src != "-" and src.endswith(".py")


def trace_doc(src: str, kernel: str | None = None, const=None, bind=None, target=None,
              assume=None):
    """Trace an op file with --kernel, --const, --bind, --target and --assume as typed
    (NAME=VALUE strings, or dicts; NAME<=N); a --bind of a symbol the kernel does not have is
    an error."""
    from ..driver import trace
    from . import crash
    raw = parse_assignments(bind, "--bind", str) if not isinstance(bind, dict) else \
        {k: str(v) for k, v in bind.items()}
    binds = parse_assignments(bind, "--bind", number)
    try:
        with open(src, "rb") as f:
            crash.remember("op", f.read())
    except OSError:
        pass          # trace() says why it cannot read it
    doc = trace(src, kernel=kernel, consts=parse_assignments(const, "--const", literal),
                bind=binds, target=target)
    if "pro" not in doc.attrs:          # Tensor mode: sizes only
        for k, v in binds.items():
            if not isinstance(v, int):
                raise UsageError(f"--bind '{k}={raw[k]}': bad value '{raw[k]}'")
    _check_symbols(doc, binds)
    if assume:
        from ..analysis.versions import assume as bounded, parse_assumption
        if "pro" in doc.attrs:
            raise UsageError("--assume bounds a Tensor-mode kernel's sizes; a Pro kernel "
                             "has none to bound")
        doc = bounded(doc, dict(parse_assumption(a) for a in assume))
    return doc


def number(v: str):
    """A --bind value: an int, or a float (a Pro kernel's float scalar or TilingData field)."""
    try:
        return int(v)
    except ValueError:
        return float(v)


def load_doc(src: str, kernel: str | None = None, const=None, bind=None, target=None,
             bind_ir: bool = True):
    """The document named on a command line: an op file (.py), traced (trace_doc), an IR
    file, or stdin ('-'). bind_ir=False: the tool has no use for --bind given IR."""
    from ..driver import parse_ir
    from . import crash
    from .io import read_input
    if is_op_file(src):
        return trace_doc(src, kernel, const, bind, target)
    name = "<stdin>" if src == "-" else os.path.basename(src)
    for flag, given in (("--kernel", kernel), ("--const", const), ("--bind", bind)):
        if given and (flag != "--bind" or not bind_ir):
            raise UsageError(f"{flag} applies to an op file (.py), and {name} is IR")
    data, name = read_input(src)
    crash.remember("ir", data)
    return parse_ir(data, name)


def op_options(kernel=None, const=None, bind=None, target=None) -> dict:
    """The options a document records in its producer history, parsed."""
    return {"kernel": kernel, "const": parse_assignments(const, "--const", literal),
            "bind": parse_assignments(bind, "--bind"), "target": target}


def _check_symbols(doc, binds: dict) -> None:
    symbols = doc.attrs.get("symbols") or {}
    for sym in binds:
        if sym not in symbols:
            raise UsageError(f"--bind {sym}: the kernel has no symbol '{sym}' (symbols: "
                             f"{', '.join(sorted(symbols)) or 'none'})")


def save_doc(doc, out: str, text: bool, tool: str, options: dict, full: bool = False) -> None:
    """Record the tool in the producer history and write the document (full: every row of
    the text form's tables; it changes no data, so it is not recorded)."""
    from ..driver import dump_ir
    from .io import write_output
    doc.with_producer(tool, {k: v for k, v in sorted(options.items()) if v not in (None, [], {})})
    write_output(out, dump_ir(doc, text, full), binary=not text)


def parse_assignments(items, what: str, convert=int) -> dict:
    """NAME=VALUE pairs from repeated options (--bind N=64, --const eps=1e-6); a dict is
    taken as already parsed."""
    if isinstance(items, dict):
        return dict(items)
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
