"""Process replay: write what every example becomes at every stage, to diff before and after.

    python scripts/replay.py OUT_DIR [--no-run]

For each examples/*.py: the text form of the tensor, exec (host and a2) and code levels, the
PTO listing, the C and numpy sources, and the sha256 of every output of a C run and a numpy
run at the example's own sizes. A refactor that must not change behaviour leaves
`diff -r BEFORE AFTER` empty (STYLE.md section 8).
"""
from __future__ import annotations

import argparse
import importlib.util
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]


def example_bind(path: pathlib.Path) -> dict:
    spec = importlib.util.spec_from_file_location(f"replay_{path.stem}", path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return dict(m.EXAMPLE["bind"])


def replay(path: pathlib.Path, out: pathlib.Path, run: bool) -> None:
    import libpypto as pypto
    from libpypto.ir.text import print_doc
    d = out / path.stem
    d.mkdir(parents=True, exist_ok=True)
    tensor = pypto.trace(str(path))
    (d / "tensor.txt").write_text(print_doc(tensor))
    for tgt in ("host", "a2"):
        ex = pypto.lower(tensor, None, tgt)
        (d / f"exec.{tgt}.txt").write_text(print_doc(ex))
    for backend in ("c", "numpy"):
        code = pypto.emit(pypto.schedule(pypto.lower(tensor)), backend)
        c = next(op for op in code.body if op.name == "code")
        (d / f"source.{backend}").write_text(c.attrs["source"])
        (d / "listing.txt").write_text(c.attrs["listing"])
        if run:
            rec = pypto.run(code, bind=example_bind(path), backend=backend, threads=2, seed=1)
            a = rec.body[0].attrs
            lines = [f"{o['name']} {o['dtype']} {o['shape']} {o['sha256']}" for o in a["outputs"]]
            lines.append(f"verdict {a['verdict']}")
            (d / f"outputs.{backend}.txt").write_text("\n".join(lines) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--no-run", action="store_true", help="text only: skip the runs")
    ap.add_argument("-k", default="", help="only examples whose name contains this")
    args = ap.parse_args()
    out = pathlib.Path(args.out)
    for path in sorted((ROOT / "examples").glob("*.py")):
        if args.k in path.stem:
            replay(path, out, not args.no_run)
            sys.stderr.write(f"{path.stem}\n")


if __name__ == "__main__":
    main()
