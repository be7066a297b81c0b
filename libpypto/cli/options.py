"""The command line every tool shares (DESIGN.md section 7), declared once.

A tool's function names these as its parameters' types, so typer builds the same option,
with the same help, in all six tools:

    def lower(src: Src = "-", out: Out = "-", text: Text = False, target: Target = None,
              kernel: Kernel = None, const: Const = None, bind: Bind = None,
              version: Version = False): ...

`-h` and `--help` both print the help; `--version` prints `pypto-<tool> <release>`.
"""
from __future__ import annotations

from typing import Annotated, List, Optional

import typer


def make_app() -> typer.Typer:
    """The typer app of a tool: plain help text (examples stay one line each, copyable),
    -h as well as --help, no shell-completion options, no pretty tracebacks."""
    return typer.Typer(add_completion=False, pretty_exceptions_enable=False,
                       rich_markup_mode=None,
                       context_settings={"help_option_names": ["-h", "--help"],
                                         "max_content_width": 100})


def examples(*lines: str) -> str:
    """A help epilog of example command lines, printed as given (click's \\b: no rewrap)."""
    return "Examples:\n\n\b\n" + "\n".join(f"  {ln}" for ln in lines)


def _version(ctx: typer.Context, value: bool) -> None:
    if value:
        from ..errors import RELEASE
        typer.echo(f"{ctx.find_root().info_name} {RELEASE}")
        raise typer.Exit()


Src = Annotated[str, typer.Argument(
    help="input: an IR file (msgpack or text), an op file (.py), or '-' for stdin",
    show_default=False)]
Out = Annotated[str, typer.Option("-o", help="output file, written atomically ('-' = stdout)")]
Text = Annotated[bool, typer.Option("-S", help="write the text form")]
Full = Annotated[bool, typer.Option(
    "--full", help="with -S: every row of the tables in the comments (schedule instances, "
                   "run events), not the first and last rows; the data is complete either way")]
Target = Annotated[Optional[str], typer.Option(
    "--target", help="a2, a3, 950, host (default) or a .toml file")]
Kernel = Annotated[Optional[str], typer.Option(
    "--kernel", help="op file: the kernel to trace when the file defines several")]
Const = Annotated[Optional[List[str]], typer.Option(
    "--const", help="op file: NAME=VALUE, a constant (non-tensor) parameter; VALUE is a "
                    "Python literal (repeatable)")]
Bind = Annotated[Optional[List[str]], typer.Option(
    "--bind", help="SYM=N, the size of a symbolic dim, named x_0 for dim 0 of parameter x "
                   "(repeatable)")]
Assume = Annotated[Optional[List[str]], typer.Option(
    "--assume", help="NAME<=N: compile for sizes 1..N of a named or DYNAMIC dim, so rows "
                     "that fit one tile reduce without a loop and fuse (repeatable)")]
Version = Annotated[bool, typer.Option(
    "--version", callback=_version, is_eager=True, help="print the version and exit")]
# the data a run needs (pypto-run, and pypto-prof when it runs an earlier level)
Inputs = Annotated[Optional[str], typer.Option("--inputs", help=".npz of parameter arrays, "
                                                                "by name")]
Input = Annotated[Optional[List[str]], typer.Option("--input", help="NAME=file.npy "
                                                                    "(repeatable)")]
Seed = Annotated[int, typer.Option("--seed", help="seed for generated inputs")]
Threads = Annotated[Optional[int], typer.Option("--threads", help="worker threads (default: "
                                                                  "usable CPUs)")]
Backend = Annotated[Optional[str], typer.Option("--backend", help="c (default) or numpy")]
Repeat = Annotated[int, typer.Option("--repeat", help="run N times (warm caches); report "
                                                      "median and best")]
