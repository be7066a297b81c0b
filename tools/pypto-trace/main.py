"""pypto-trace: trace a @pypto.jit kernel of an op file into its Tensor Graph."""
from __future__ import annotations

from libpypto.cli import starting
starting("pypto-trace")     # first: Ctrl-C during the imports below is one line, exit 130

import typer

from libpypto.cli import op_options, run_tool, save_doc
from libpypto.cli.options import Assume, Bind, Const, Kernel, Out, Target, Text, Version, \
    examples, make_app

app = make_app()

EPILOG = examples(
    "pypto-trace examples/softmax.py -S                     # the Tensor Graph as text",
    "pypto-trace examples/rmsnorm.py --const eps=1e-5 -o rmsnorm.ir",
    "pypto-trace examples/softmax.py | pypto-lower | pypto-run --bind x_0=4096",
    "pypto-trace examples/softmax.py --assume 'x_0<=8192' -o sm.ir   # at most 8192 rows")


@app.command(epilog=EPILOG)
def trace(
    file: str = typer.Argument(..., help="op file (.py) defining a @pypto.jit kernel",
                               show_default=False),
    kernel: Kernel = None, const: Const = None, bind: Bind = None, target: Target = None,
    assume: Assume = None, out: Out = "-", text: Text = False, version: Version = False,
) -> None:
    """Trace FILE's kernel and write its Tensor Graph (msgpack, or text with -S).

    --bind gives the size of a STATIC dim; --target checks tile shapes against that
    target and records it for the later tools; --assume NAME<=N compiles for sizes up to N
    (the run refuses larger ones)."""
    from libpypto.cli import trace_doc
    from libpypto.cli.progress import progress
    with progress("pypto-trace", "tracing"):
        doc = trace_doc(file, kernel, const, bind, target, assume)
    save_doc(doc, out, text, "pypto-trace",
             {**op_options(kernel, const, bind, target), **({"assume": assume} if assume else {})})


def main() -> None:
    run_tool(app, "pypto-trace")
