"""pypto-prof: summarise a run record; write a Perfetto trace and an SVG swimlane."""
from __future__ import annotations

from libpypto.cli import starting
starting("pypto-prof")     # first: Ctrl-C during the imports below is one line, exit 130

from typing import Optional

import typer

from libpypto.cli import run_tool
from libpypto.cli.options import Backend, Bind, Const, Input, Inputs, Kernel, Out, Repeat, \
    Seed, Src, Target, Threads, Version, examples, make_app

app = make_app()

EPILOG = examples(
    "pypto-trace op.py | pypto-run --bind x_0=4096 | pypto-prof",
    "pypto-prof run.msgpack --chrome trace.json     # open trace.json in ui.perfetto.dev",
    "pypto-prof run.msgpack --svg lanes.svg --fmt github -o profile.md",
    "pypto-prof examples/softmax.py --bind x_0=4096   # run it first: predicted and measured",
    "pypto-prof examples/pro/vadd.py --block-dim 8 --bind x_0=4096   # a Pro kernel",
    "pypto-run examples/softmax.py --bind x_0=4096 --target a2 | pypto-prof --chrome sim.json",
    "pypto-prof run.msgpack --view host   # the host-measured run of a simulated record")


@app.command(epilog=EPILOG)
def prof(
    src: Src = "-",
    chrome: Optional[str] = typer.Option(None, "--chrome", help="write Chrome trace-event JSON here"),
    svg: Optional[str] = typer.Option(None, "--svg", help="write an SVG swimlane here"),
    fmt: str = typer.Option("simple", "--fmt", help="table format: any tabulate format (simple, github, plain, ...)"),
    view: str = typer.Option("auto", "--view", help="auto, host or sim: the simulated run of pypto-run --target (auto: when the record has one)"),
    out: Out = "-", kernel: Kernel = None, const: Const = None, bind: Bind = None,
    target: Target = None, inputs: Inputs = None, input: Input = None, seed: Seed = 0,
    threads: Threads = None, backend: Backend = None, repeat: Repeat = 1,
    block_dim: Optional[int] = typer.Option(None, "--block-dim", help="Pro kernel: the launch's block_dim (default 1)"),
    version: Version = False,
) -> None:
    """Print per-program, per-core and whole-run tables for a run record.

    Given an earlier level (an op file, IR) it schedules it (placing every instance when
    the sizes are bound), runs it as pypto-run would, and shows the schedule's predicted
    makespan beside the measured times."""
    from libpypto.cli.prof import prof_main
    prof_main(src, out, chrome, svg, fmt,
              {"kernel": kernel, "const": const, "bind": bind, "target": target},
              {"inputs": inputs, "single": input, "seed": seed, "threads": threads,
               "backend": backend, "repeat": repeat,
               "pro": None if block_dim is None else {"block_dim": block_dim}}, view)


def main() -> None:
    run_tool(app, "pypto-prof")
