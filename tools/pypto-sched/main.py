"""pypto-sched: schedule an Execute Graph onto a target's cores."""
from __future__ import annotations

from typing import List, Optional

import typer

from libpypto.cli import load_doc, parse_assignments, run_tool, save_doc

app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)

EPILOG = """Examples:\n
  pypto-trace op.py | pypto-lower | pypto-sched -S\n
  pypto-sched --target a2 --bind x_0=4096 op.exec -S    # instances, cores, predicted times\n
  pypto-sched --target my-chip.toml op.exec -o op.sched"""


@app.command(epilog=EPILOG)
def sched(
    src: str = typer.Argument("-", help="input IR or op file ('-' = stdin)"),
    target: Optional[str] = typer.Option(None, "--target", help="a2, a3, 950, host (default) or a .toml file"),
    bind: Optional[List[str]] = typer.Option(None, "--bind", help="SYM=N size of a symbolic dim (repeatable); with every size bound the schedule places each task instance"),
    out: str = typer.Option("-", "-o", help="output file ('-' = stdout)"),
    text: bool = typer.Option(False, "-S", help="write the text form"),
) -> None:
    """Order the tasks of SRC and, when sizes are bound, place every instance on a core."""
    from libpypto.driver import schedule
    binds = parse_assignments(bind, "--bind")
    doc = schedule(load_doc(src, target=target), target, binds)
    save_doc(doc, out, text, "pypto-sched", {"target": target, "bind": binds})


def main() -> None:
    run_tool(app, "pypto-sched")
