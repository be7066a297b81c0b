"""pypto-lower: lower a graph through a pass pipeline (default: tensor -> exec)."""
from __future__ import annotations

from typing import List, Optional

import typer

from libpypto.cli import load_doc, run_tool, save_doc

app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)

EPILOG = """Examples:\n
  pypto-trace op.py | pypto-lower -S                     # tensor -> exec, as text\n
  pypto-lower -p tensor-to-tile,assign-memory -S op.ir   # stop at the tile level\n
  pypto-lower --print-after-all --time-passes op.ir -o op.exec\n
  pypto-lower --list-passes"""


@app.command(epilog=EPILOG)
def lower(
    src: str = typer.Argument("-", help="input IR or op file ('-' = stdin)"),
    passes: Optional[str] = typer.Option(None, "-p", help="pipeline, e.g. 'tensor-to-tile,assign-memory,fuse{enable=false}'"),
    target: Optional[str] = typer.Option(None, "--target", help="a2, a3, 950, host (default) or a .toml file"),
    out: str = typer.Option("-", "-o", help="output file ('-' = stdout)"),
    text: bool = typer.Option(False, "-S", help="write the text form"),
    list_passes: bool = typer.Option(False, "--list-passes", help="list the passes and exit"),
    print_pipeline: bool = typer.Option(False, "--print-pipeline", help="print the pipeline that would run and exit"),
    print_after_all: bool = typer.Option(False, "--print-after-all", help="print the IR after every pass to stderr"),
    print_after: Optional[List[str]] = typer.Option(None, "--print-after", help="print the IR after this pass (repeatable)"),
    verify_each: bool = typer.Option(False, "--verify-each", help="verify the IR after every pass"),
    time_passes: bool = typer.Option(False, "--time-passes", help="print a table of pass times to stderr"),
    stop_after: Optional[str] = typer.Option(None, "--stop-after", help="stop after this pass"),
) -> None:
    """Lower SRC through a pass pipeline and write the result."""
    from libpypto.cli.lower import input_for_pipeline, lower_main
    from libpypto.driver import describe_passes
    if list_passes:
        typer.echo(describe_passes())
        return
    doc = input_for_pipeline(src) if print_pipeline else load_doc(src, target=target)
    result = lower_main(doc, passes, target, print_pipeline, print_after_all, print_after or [],
                        verify_each, time_passes, stop_after)
    if result is not None:
        save_doc(result, out, text, "pypto-lower", {"pipeline": passes, "target": target})


def main() -> None:
    run_tool(app, "pypto-lower")
