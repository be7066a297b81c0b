"""Every Pro example (examples/pro/*.py) in process (a launch on numpy arrays, checked against
its numpy reference) and through the CLI pipe; and with any one of its syncs dropped, the
race and sync checker (or the deadlock detector) must refuse it."""
from __future__ import annotations

import importlib.util
import inspect
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest

from libpypto import driver
from libpypto.errors import PyptoError
from libpypto.runtime import data as D

ROOT = pathlib.Path(__file__).resolve().parents[3]
PRO = ROOT / "examples" / "pro"
EXAMPLES = sorted(p.stem for p in PRO.glob("*.py"))
BIN = pathlib.Path(sys.executable).parent


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch):
    """pl.dump_data writes into the current directory (debug_print.py): keep it out of
    the checkout, in process and in the pipes' subprocesses."""
    monkeypatch.chdir(tmp_path)


def load(path: pathlib.Path):
    spec = importlib.util.spec_from_file_location(f"pro_ex_{path.stem}_{abs(hash(str(path)))}",
                                                  path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def launch_args(mod, ex: dict, rng):
    """Arguments for an in-process launch: arrays per the kernel's params and EXAMPLE."""
    k = getattr(mod, ex["kernel"])
    bind, args, named = ex.get("bind", {}), [], {}
    for p in k.params:
        if p.kind == "tensor":
            shape = [d if isinstance(d, int) else bind.get(f"{p.name}_{a}") or
                     next(v for s, v in bind.items() if s.endswith(f"_{a}"))
                     for a, d in enumerate(p.spec.shape)]
            arr = D.random_array(rng, tuple(shape), p.spec.dtype)
            args.append(arr)
            named[p.name] = arr
        elif p.kind == "scalar":
            args.append(bind[p.name])
            named[p.name] = bind[p.name]          # a reference may take it (debug_print)
        else:
            fields = {f: bind[f"{p.name}_{f}"] for f in p.spec.__dataclass_fields__}
            args.append(p.spec(**fields))
            named.update({f"{p.name}_{f}": v for f, v in fields.items()})
    return k, args, named


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_in_process(name):
    mod = load(PRO / f"{name}.py")
    ex = mod.EXAMPLE
    k, args, named = launch_args(mod, ex, np.random.default_rng(1))
    inputs = {n: a.copy() for n, a in named.items() if isinstance(a, np.ndarray)}
    key = ex.get("const") or None
    k[None, ex["block_dim"], key](*args) if key else k[ex["block_dim"]](*args)
    params = inspect.signature(mod.reference).parameters
    pool = {**inputs, **{n: v for n, v in named.items() if not isinstance(v, np.ndarray)},
            **(key or {})}
    want = mod.reference(**{p: pool[p] for p in params})
    for out, w in want.items():
        c = D.compare(out, named[out], np.asarray(w).astype(named[out].dtype))
        assert c["ok"], c


def _cli_args(ex: dict) -> tuple:
    trace = [f"--const={k}={v}" for k, v in (ex.get("const") or {}).items()]
    run = [f"--bind={k}={v}" for k, v in ex.get("bind", {}).items()]
    return trace, run + [f"--block-dim={ex['block_dim']}"]


def _pipe(name: str, *stages) -> subprocess.CompletedProcess:
    ex = load(PRO / f"{name}.py").EXAMPLE
    trace, run = _cli_args(ex)
    tools = [[str(BIN / "pypto-trace"), str(PRO / f"{name}.py"), *trace]] + \
        [[str(BIN / s)] for s in stages] + [[str(BIN / "pypto-run"), *run, "-o", "/dev/null"]]
    cmd = " | ".join(" ".join(t) for t in tools)
    return subprocess.run(["bash", "-o", "pipefail", "-c", cmd], capture_output=True,
                          text=True, timeout=300)


def test_vadd_through_the_whole_pipe():
    """Given IR, pypto-run has no op file to take a reference from (IR is data: it never
    imports the file a document names): it checks the C against the Pro runner, a rerun,
    and --expect when given."""
    r = _pipe("vadd", "pypto-lower", "pypto-sched", "pypto-emit")
    assert r.returncode == 0, r.stderr
    assert "vadd: pass" in r.stderr
    assert "its C, block_dim 4" in r.stderr
    assert "checked against the Pro runner (numpy) and a one-thread rerun" in r.stderr


def test_run_an_op_file_checks_its_reference_and_expect(tmp_path):
    run = [str(BIN / "pypto-run"), str(PRO / "softmax.py"), "--block-dim", "3",
           "--bind", "x_0=50", "--outputs", str(tmp_path / "out.npz"), "-o", "/dev/null"]
    r = subprocess.run(run, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "checked against the Pro runner (numpy) and reference() and a one-thread rerun" \
        in r.stderr
    bad = dict(np.load(tmp_path / "out.npz"))
    bad["y"][3, 4] += 1
    np.savez(tmp_path / "bad.npz", **bad)
    r = subprocess.run(run[:-2] + ["--expect", str(tmp_path / "bad.npz"), "-o", "/dev/null"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1
    assert "first at [3, 4]" in r.stderr and "--expect" in r.stderr


@pytest.mark.slow
@pytest.mark.parametrize("name", EXAMPLES)
def test_example_through_the_pipe(name):
    r = _pipe(name, "pypto-lower", "pypto-sched", "pypto-emit")
    assert r.returncode == 0, r.stderr
    assert ": pass" in r.stderr and "checked against" in r.stderr


SYNC = re.compile(r"^\s+(sync\(|cross_set\(|cross_wait\(|pl\.system\.(sync_src|sync_dst|"
                  r"set_cross_core|wait_cross_core|sync_all))")


def _sync_lines(src: list) -> list:
    """Line numbers of the sync calls in kernel bodies and pipeline stages (not in the
    helpers they call). The events pl.pipeline inserts have no line to drop: test_pipeline
    drops each of them from the traced document instead."""
    out, in_helper = [], False
    for i, line in enumerate(src):
        if line.startswith("def "):
            in_helper = not src[i - 1].startswith(("@pl.jit", "@pl.pipeline.stage"))
        if SYNC.match(line) and not in_helper:
            out.append(i)
    return out


def _variants():
    for name in EXAMPLES:
        src = (PRO / f"{name}.py").read_text().splitlines()
        for i in _sync_lines(src):
            yield name, i
        if any("auto_mutex=True" in ln for ln in src):
            yield name, "auto_mutex"


def test_every_example_has_syncs_to_drop():
    names = {n for n, _ in _variants()}
    assert names == set(EXAMPLES)


@pytest.mark.slow
@pytest.mark.parametrize("name,line", list(_variants()))
def test_dropping_a_sync_is_caught(tmp_path, name, line):
    src = (PRO / f"{name}.py").read_text().splitlines()
    if line == "auto_mutex":
        src = [ln.replace("auto_mutex=True", "auto_mutex=False") for ln in src]
    else:
        indent = src[line][:len(src[line]) - len(src[line].lstrip())]
        src[line] = indent + "pass"
    path = tmp_path / f"{name}.py"
    path.write_text("\n".join(src) + "\n")
    ex = load(PRO / f"{name}.py").EXAMPLE
    with pytest.raises(PyptoError) as e:
        doc = driver.trace(str(path), ex["kernel"], ex.get("const"), ex.get("bind"))
        rec = driver.run(doc, bind=ex.get("bind"), block_dim=ex["block_dim"], check=True)
        if rec.body[0].attrs["verdict"] == "fail":
            raise PyptoError("mismatch")
    assert re.search(r"race|never waited|no sync_src|deadlock|mismatch", str(e.value))


def test_run_options_for_pro(tmp_path):
    base = [str(BIN / "pypto-run"), str(PRO / "vadd.py"), "--block-dim", "2", "--bind",
            "x_0=40", "-o", "/dev/null"]
    r = subprocess.run(base + ["--backend", "numpy", "--repeat", "3"], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "the Pro runner, block_dim 2" in r.stderr and "best of 3" in r.stderr
    r = subprocess.run(base + ["--sanitize"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "--sanitize does not take Pro kernels" in r.stderr
    r = subprocess.run([str(BIN / "pypto-trace"), str(PRO / "vadd.py"), "--target", "950",
                        "-S"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "ub=253952" in r.stdout
    r = subprocess.run(base + ["--no-check", "--block-dim", "0"], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 1 and "block_dim must be a positive int" in r.stderr
