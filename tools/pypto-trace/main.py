"""pypto-trace: trace a @pypto.jit kernel of an op file into its Tensor Graph."""
from __future__ import annotations

from typing import List, Optional

import typer

from libpypto.cli import literal, parse_assignments, run_tool, save_doc

app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)

EPILOG = """Examples:\n
  pypto-trace examples/softmax.py -S                    # the Tensor Graph as text\n
  pypto-trace examples/rmsnorm.py --const eps=1e-5 -o rmsnorm.ir\n
  pypto-trace examples/softmax.py | pypto-lower | pypto-run"""


@app.command(epilog=EPILOG)
def trace(
    file: str = typer.Argument(..., help="op file (.py) defining a @pypto.jit kernel"),
    kernel: Optional[str] = typer.Option(None, "--kernel", help="kernel to trace when the file has several"),
    const: Optional[List[str]] = typer.Option(None, "--const", help="NAME=VALUE for a constant parameter (repeatable)"),
    bind: Optional[List[str]] = typer.Option(None, "--bind", help="SYM=N size of a STATIC dim (repeatable)"),
    target: Optional[str] = typer.Option(None, "--target", help="check tiles against this target and record it: a2, a3, 950, host (default) or a .toml file"),
    out: str = typer.Option("-", "-o", help="output file ('-' = stdout)"),
    text: bool = typer.Option(False, "-S", help="write the text form"),
) -> None:
    """Trace FILE's kernel and write its Tensor Graph (msgpack, or text with -S)."""
    from libpypto.driver import trace as trace_file
    consts = parse_assignments(const, "--const", literal)
    binds = parse_assignments(bind, "--bind")
    doc = trace_file(file, kernel=kernel, consts=consts, bind=binds, target=target)
    save_doc(doc, out, text, "pypto-trace", {"kernel": kernel, "const": consts, "bind": binds,
                                             "target": target})


def main() -> None:
    run_tool(app, "pypto-trace")
