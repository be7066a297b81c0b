"""pypto-prof: summarise a run record; write a Perfetto trace and an SVG swimlane."""
from __future__ import annotations

from typing import Optional

import typer

from libpypto.cli import load_doc, run_tool

app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)

EPILOG = """Examples:\n
  pypto-trace op.py | pypto-run --bind x_0=4096 | pypto-prof\n
  pypto-prof run.msgpack --chrome trace.json     # open trace.json in ui.perfetto.dev\n
  pypto-prof run.msgpack --svg lanes.svg --fmt github"""


@app.command(epilog=EPILOG)
def prof(
    src: str = typer.Argument("-", help="run record (or anything earlier, which is run first)"),
    chrome: Optional[str] = typer.Option(None, "--chrome", help="write Chrome trace-event JSON here"),
    svg: Optional[str] = typer.Option(None, "--svg", help="write an SVG swimlane here"),
    fmt: str = typer.Option("simple", "--fmt", help="table format: any tabulate format (simple, github, plain, ...)"),
) -> None:
    """Print per-program, per-core and whole-run tables for a run record."""
    from libpypto.driver import profile
    typer.echo(profile(load_doc(src), chrome=chrome, svg=svg, fmt=fmt), nl=False)


def main() -> None:
    run_tool(app, "pypto-prof")
