"""pypto-emit: emit the PTO instruction listing and program source for a schedule."""
from __future__ import annotations

from libpypto.cli import starting
starting("pypto-emit")     # first: Ctrl-C during the imports below is one line, exit 130

import typer

from libpypto.cli import op_options, run_tool, save_doc
from libpypto.cli.options import Backend, Bind, Const, Kernel, Out, Src, Target, Text, \
    Version, examples, make_app

app = make_app()

EPILOG = examples(
    "pypto-trace op.py | pypto-lower | pypto-sched | pypto-emit -S",
    "pypto-emit --listing op.sched          # only the PTO listing, as text",
    "pypto-emit --source op.sched > op.c    # only the C source",
    "pypto-emit --backend numpy op.sched -o op.code",
    "pypto-emit examples/softmax.py --bind x_0=4096 -o op.code   # scheduled for 4096 rows")


@app.command(epilog=EPILOG)
def emit(
    src: Src = "-", backend: Backend = None, target: Target = None,
    listing: bool = typer.Option(False, "--listing", help="write only the PTO listing (text)"),
    source: bool = typer.Option(False, "--source", help="write only the program source (text)"),
    out: Out = "-", text: Text = False, kernel: Kernel = None, const: Const = None,
    bind: Bind = None, version: Version = False,
) -> None:
    """Emit code for SRC: a code-level document with the PTO listing and the source.

    --bind schedules an earlier level for those sizes first (instances placed on cores)."""
    from libpypto.cli import load_doc
    from libpypto.cli.emit import emit_main
    from libpypto.cli.progress import progress
    with progress("pypto-emit", "emitting"):
        doc = emit_main(load_doc(src, kernel, const, bind, target), backend or "c", target,
                        bind, listing, source, out)
    if doc is not None:
        save_doc(doc, out, text, "pypto-emit", {**op_options(kernel, const, bind, target),
                                                "backend": backend or "c"})


def main() -> None:
    run_tool(app, "pypto-emit")
