"""pypto-emit: emit the PTO instruction listing and program source for a schedule."""
from __future__ import annotations

from typing import Optional

import typer

from libpypto.cli import load_doc, run_tool, save_doc

app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)

EPILOG = """Examples:\n
  pypto-trace op.py | pypto-lower | pypto-sched | pypto-emit -S\n
  pypto-emit --listing op.sched          # only the PTO listing, as text\n
  pypto-emit --source op.sched > op.c    # only the C source\n
  pypto-emit --backend numpy op.sched -o op.code"""


@app.command(epilog=EPILOG)
def emit(
    src: str = typer.Argument("-", help="input IR or op file ('-' = stdin)"),
    backend: str = typer.Option("c", "--backend", help="c or numpy"),
    target: Optional[str] = typer.Option(None, "--target", help="target when SRC still needs lowering"),
    listing: bool = typer.Option(False, "--listing", help="write only the PTO listing (text)"),
    source: bool = typer.Option(False, "--source", help="write only the program source (text)"),
    out: str = typer.Option("-", "-o", help="output file ('-' = stdout)"),
    text: bool = typer.Option(False, "-S", help="write the text form"),
) -> None:
    """Emit code for SRC: a code-level document with the PTO listing and the source."""
    from libpypto.cli.io import write_output
    from libpypto.driver import emit as emit_code
    doc = emit_code(load_doc(src, target=target), backend, target)
    if listing or source:
        code = next(op for op in doc.body if op.name == "code")
        part = code.attrs["listing"] if listing else code.attrs["source"]
        write_output(out, part.encode(), binary=False)
        return
    save_doc(doc, out, text, "pypto-emit", {"backend": backend})


def main() -> None:
    run_tool(app, "pypto-emit")
