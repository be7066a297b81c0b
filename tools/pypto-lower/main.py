"""pypto-lower: lower a graph through a pass pipeline (default: tensor -> exec)."""
from __future__ import annotations

from libpypto.cli import starting
starting("pypto-lower")     # first: Ctrl-C during the imports below is one line, exit 130

from typing import List, Optional

import typer

from libpypto.cli import op_options, run_tool, save_doc
from libpypto.cli.options import Bind, Const, Kernel, Out, Src, Target, Text, Version, \
    examples, make_app

app = make_app()

EPILOG = examples(
    "pypto-trace op.py | pypto-lower -S                     # tensor -> exec, as text",
    "pypto-lower -p tensor-to-tile,assign-memory -S op.ir   # stop at the tile level",
    "pypto-lower --print-after-all --time-passes op.ir -o op.exec",
    "pypto-lower --target a2 examples/rmsnorm.py -S         # an op file, for an A2",
    "pypto-lower --list-passes")


@app.command(epilog=EPILOG)
def lower(
    src: Src = "-",
    passes: Optional[str] = typer.Option(None, "-p", help="pipeline, e.g. 'tensor-to-tile,assign-memory,fuse{enable=false}'"),
    target: Target = None, out: Out = "-", text: Text = False,
    kernel: Kernel = None, const: Const = None, bind: Bind = None,
    list_passes: bool = typer.Option(False, "--list-passes", help="list the passes and exit"),
    print_pipeline: bool = typer.Option(False, "--print-pipeline", help="print the pipeline that would run and exit"),
    print_after_all: bool = typer.Option(False, "--print-after-all", help="print the IR after every pass to stderr"),
    print_after: Optional[List[str]] = typer.Option(None, "--print-after", help="print the IR after this pass (repeatable)"),
    verify_each: bool = typer.Option(False, "--verify-each", help="verify the IR after every pass"),
    time_passes: bool = typer.Option(False, "--time-passes", help="print a table of pass times to stderr"),
    stop_after: Optional[str] = typer.Option(None, "--stop-after", help="stop after this pass"),
    version: Version = False,
) -> None:
    """Lower SRC through a pass pipeline and write the result."""
    from libpypto.cli import load_doc
    from libpypto.cli.lower import input_for_pipeline, lower_main
    from libpypto.cli.progress import progress
    from libpypto.driver import describe_passes
    if list_passes:
        typer.echo(describe_passes())
        return
    with progress("pypto-lower", "" if print_after_all or print_after else "lowering"):
        doc = input_for_pipeline(src) if print_pipeline else \
            load_doc(src, kernel, const, bind, target, bind_ir=False)
        result = lower_main(doc, passes, target, print_pipeline, print_after_all,
                            print_after or [], verify_each, time_passes, stop_after)
    if result is not None:
        save_doc(result, out, text, "pypto-lower",
                 {**op_options(kernel, const, bind, target), "pipeline": passes})


def main() -> None:
    run_tool(app, "pypto-lower")
