"""pypto-run: compile and run a graph on the host, verify it against numpy."""
from __future__ import annotations

from typing import List, Optional

import typer

from libpypto.cli import run_tool

app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)

EPILOG = """Examples:\n
  pypto-trace examples/softmax.py | pypto-run --bind x_0=4096\n
  pypto-run examples/softmax.py --inputs in.npz --outputs out.npz\n
  pypto-run op.code --input x=x.npy --threads 1 --backend numpy -o run.msgpack\n
  pypto-run op.code --bind x_0=64 | pypto-prof"""


@app.command(epilog=EPILOG)
def run(
    src: str = typer.Argument("-", help="input IR or op file ('-' = stdin)"),
    inputs: Optional[str] = typer.Option(None, "--inputs", help=".npz of parameter arrays, by name"),
    input: Optional[List[str]] = typer.Option(None, "--input", help="NAME=file.npy (repeatable)"),
    bind: Optional[List[str]] = typer.Option(None, "--bind", help="SYM=N size of a symbolic dim (repeatable)"),
    seed: int = typer.Option(0, "--seed", help="seed for generated inputs"),
    outputs: Optional[str] = typer.Option(None, "--outputs", help="write the outputs to this .npz"),
    threads: Optional[int] = typer.Option(None, "--threads", help="worker threads (default: usable CPUs)"),
    backend: Optional[str] = typer.Option(None, "--backend", help="c (default) or numpy"),
    verify: bool = typer.Option(True, "--verify/--no-verify", help="check outputs against the numpy interpretation"),
    repeat: int = typer.Option(1, "--repeat", help="run N times (warm caches); report median and best"),
    out: str = typer.Option("-", "-o", help="run record file ('-' = stdout)"),
    text: bool = typer.Option(False, "-S", help="write the run record as text"),
    sanitize: bool = typer.Option(False, "--sanitize", help="build with AddressSanitizer and UBSan, run in a child process"),
) -> None:
    """Run SRC on the host: bind sizes, prepare data, execute, verify; report on stderr."""
    from libpypto.cli.run import run_main
    from libpypto.runtime.compiler import sanitized_backend, sanitizing
    with sanitizing(sanitize):      # compiler.py: a sanitized build runs in a child process
        run_main(src, inputs, input or [], bind or [], seed, outputs, threads,
                 sanitized_backend(sanitize, backend), verify, out, text, repeat)


def main() -> None:
    run_tool(app, "pypto-run")
