"""pypto-sched: schedule an Execute Graph onto a target's cores."""
from __future__ import annotations

from libpypto.cli import starting
starting("pypto-sched")     # first: Ctrl-C during the imports below is one line, exit 130

from libpypto.cli import op_options, run_tool, save_doc
from libpypto.cli.options import Bind, Const, Full, Kernel, Out, Src, Target, Text, Version, \
    examples, make_app

app = make_app()

EPILOG = examples(
    "pypto-trace op.py | pypto-lower | pypto-sched -S",
    "pypto-sched --target a2 --bind x_0=4096 op.exec -S    # instances, cores, predicted times",
    "pypto-sched --target a2 --bind x_0=4096 op.exec -S --full    # every instance's row",
    "pypto-sched --target my-chip.toml op.exec -o op.sched")


@app.command(epilog=EPILOG)
def sched(
    src: Src = "-", target: Target = None, bind: Bind = None, out: Out = "-",
    text: Text = False, full: Full = False, kernel: Kernel = None, const: Const = None, version: Version = False,
) -> None:
    """Order the tasks of SRC and, when sizes are bound, place every instance on a core.

    With every symbolic size bound (--bind, or a static graph) the schedule expands every
    task into its instances and gives each a core and a predicted start and end."""
    from libpypto.cli import load_doc, parse_assignments
    from libpypto.cli.progress import progress
    from libpypto.driver import schedule
    with progress("pypto-sched", "scheduling"):
        doc = schedule(load_doc(src, kernel, const, bind, target), target,
                       parse_assignments(bind, "--bind"))
    save_doc(doc, out, text, "pypto-sched", op_options(kernel, const, bind, target), full)


def main() -> None:
    run_tool(app, "pypto-sched")
