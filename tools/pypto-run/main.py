"""pypto-run: compile and run a graph on the host, verify it against numpy."""
from __future__ import annotations

from libpypto.cli import starting
starting("pypto-run")     # first: Ctrl-C during the imports below is one line, exit 130

from typing import Optional

import typer

from libpypto.cli import run_tool
from libpypto.cli.options import Backend, Bind, Const, Full, Input, Inputs, Kernel, Out, Repeat, \
    Seed, Src, Target, Text, Threads, Version, examples, make_app

app = make_app()

EPILOG = examples(
    "pypto-trace examples/softmax.py | pypto-run --bind x_0=4096",
    "pypto-run examples/softmax.py --inputs in.npz --outputs out.npz",
    "pypto-run op.code --input x=x.npy --threads 1 --backend numpy -o run.msgpack",
    "pypto-run op.code --bind x_0=64 | pypto-prof",
    "pypto-run examples/pro/vadd.py --block-dim 8 --bind x_0=1000      # a Pro kernel",
    "pypto-run examples/softmax.py --bind x_0=100 --check-levels --dump-tensors out/t",
    "pypto-run examples/matmul.py --bind M=1024 --target a2 -o run.msgpack    # + simulated time",
    "pypto-run examples/matmul.py --bind M=1024 --target a3 --target-set bandwidth.hbm_total=3200")


@app.command(epilog=EPILOG)
def run(
    src: Src = "-", inputs: Inputs = None, input: Input = None, bind: Bind = None,
    seed: Seed = 0,
    outputs: Optional[str] = typer.Option(None, "--outputs", help="write the outputs to this .npz"),
    threads: Threads = None, backend: Backend = None,
    verify: bool = typer.Option(True, "--verify/--no-verify", help="check outputs against the numpy interpretation"),
    repeat: Repeat = 1, out: Out = "-",
    text: Text = False, full: Full = False, kernel: Kernel = None, const: Const = None, target: Target = None,
    version: Version = False,
    sanitize: bool = typer.Option(False, "--sanitize", help="build with AddressSanitizer and UBSan, run in a child process"),
    trust_code: bool = typer.Option(False, "--trust-code", help="run a code file's C source even where it is not what pypto-emit makes of the file (hand-edited C runs as code: only for files you trust)"),
    block_dim: Optional[int] = typer.Option(None, "--block-dim", help="Pro kernel: the launch's block_dim (default 1)"),
    expect: Optional[str] = typer.Option(None, "--expect", help="Pro kernel: .npz of the expected outputs by name"),
    check: Optional[bool] = typer.Option(None, "--check/--no-check", help="run the race and sync checker (default on): a Pro kernel's launch, or the Tensor-mode programs' own sync (insert-sync) on sampled instances"),
    check_levels: bool = typer.Option(False, "--check-levels", help="run the tensor level and the result of every lowering pass on numpy first, and name the first level, pass and instruction that diverges"),
    dump_tensors: Optional[str] = typer.Option(None, "--dump-tensors", help="write every tensor-level value to this directory as .npy, named by order, op and line"),
    dump_dir: Optional[str] = typer.Option(None, "--dump-dir", help="Pro kernel: the directory pl.dump_data writes its .npy files to (default the current directory)"),
    target_set: Optional[list[str]] = typer.Option(None, "--target-set", help="KEY=VALUE: override one number of the --target (e.g. bandwidth.hbm_total=3000, buffers.ub=98304); repeatable"),
) -> None:
    """Run SRC on the host: bind sizes, prepare data, execute, verify; report on stderr."""
    from libpypto.cli.run import run_main
    from libpypto.runtime.compiler import sanitized_backend, sanitizing
    with sanitizing(sanitize):      # compiler.py: a sanitized build runs in a child process
        run_main(src, inputs, input or [], bind or [], seed, outputs, threads,
                 sanitized_backend(sanitize, backend), verify, out, text, repeat, kernel, const,
                 target, full, {"block_dim": block_dim, "expect": expect, "check": check,
                                   "dump_dir": dump_dir},
                 trust_code=trust_code, levels={"check": check_levels, "dump": dump_tensors},
                 target_set=target_set or [])


def main() -> None:
    run_tool(app, "pypto-run")
