"""The work behind pypto-run: load data files, run, report, keep the record."""
from __future__ import annotations

import sys

from ..errors import MismatchError, UsageError
from . import load_doc, number, parse_assignments, save_doc
from .text import printable


def _num(v: float) -> str:
    return f"{v:.7g}"


def mismatch_line(c: dict) -> str:
    """`y: 3 mismatches; first at [12, 40]: got 1.5, want 2.5 (tolerance 0.0001)`."""
    n = c["mismatches"]
    line = f"{c['name']}: {n} mismatch{'es' if n != 1 else ''}"
    if "first" in c:
        line += (f"; first at [{', '.join(map(str, c['first']))}]: got {_num(c['got'])}, "
                 f"want {_num(c['want'])} (tolerance {c['tolerance']:.3g})")
    return line


def report(rec) -> str:
    a = rec.body[0].attrs
    k = rec.attrs.get("kernel", "?")
    ntasks = len(a["events"])
    nprog = len({t["program"] for t in a["tasks"]})
    lines = []
    if a.get("notice"):
        lines.append(a["notice"])
    checks = "; ".join(f"{c['name']}" + (f" vs {c['against']}" if c.get("against") else "") +
                       f": max abs err {c['max_abs_err']:.3g}"
                       + (f", {c['mismatches']} mismatches" if not c["ok"] else "")
                       for c in a["checks"])
    lines.append(f"{k}: {a['verdict']}" + (f" ({checks})" if checks else ""))
    lines += [mismatch_line(c) for c in a["checks"] if not c["ok"]]
    comp = a.get("compile") or {}
    how = f"{a['backend']}, {a['threads']} thread{'s' if a['threads'] != 1 else ''}"
    if comp:
        how += ", compile cached" if comp.get("cached") else f", compiled in {comp['seconds']:.2f} s"
    sizes = ", ".join(f"{s}={v}" for s, v in a["bindings"].items())
    walls = a.get("walls_s") or [a["wall_s"]]
    took = f"{a['wall_s'] * 1e3:.3f} ms" if len(walls) == 1 else \
        f"{sorted(walls)[len(walls) // 2] * 1e3:.3f} ms median, {min(walls) * 1e3:.3f} ms best " \
        f"of {len(walls)}"
    if "pro" in rec.attrs:
        runner = "C" if a["backend"] == "c" else "the Pro runner"
        lines.append(f"block_dim {a['bindings'].get('block_num', '?')} in {took} ({runner}, "
                     f"{a['threads']} thread{'s' if a['threads'] != 1 else ''})"
                     + (f" [{sizes}]" if sizes else ""))
    else:
        lines.append(f"{ntasks} task{'s' if ntasks != 1 else ''} of {nprog} program"
                     f"{'s' if nprog != 1 else ''} in {took} ({how})"
                     + (f" [{sizes}]" if sizes else ""))
    if a.get("sync_check"):
        lines.append(sync_line(a["sync_check"]))
    if a.get("sim"):
        lines += sim_lines(a["sim"])
    return "".join(f"pypto-run: {printable(ln)}\n" for ln in lines)


def sync_line(c: dict) -> str:
    """What the race and sync checker saw of a Tensor-mode run (runtime/tensor_check.py)."""
    n, i, u = c["programs"], c["instances"], c["unsynced"]
    parts = [f"{n} program{'s' if n != 1 else ''} ({i} instance{'s' if i != 1 else ''}), no "
             f"race"] if n else []
    if u:
        parts.append(f"{u} program{'s' if u != 1 else ''} without sync of "
                     f"{'their' if u != 1 else 'its'} own (lowered without insert-sync) not "
                     f"checked")
    return "sync checked: " + "; ".join(parts) if n else "sync not checked: " + parts[0]


def sim_lines(sim: dict) -> list:
    """The simulated run in two lines: time and bound; utilisation and traffic."""
    u = sim["utilisation"]
    bound = sim["bound"]
    why = f"{bound} at {100 * u[bound]:.0f} %" if bound in u else \
        f"latency: no pipe or memory above half busy, the busiest {sim['busiest']} at " \
        f"{100 * u[sim['busiest']]:.0f} %"
    head = (f"simulated on {sim['target']}: {sim['us']:.3f} us ({sim['cycles']} cycles at "
            f"{sim['clock_ghz']:g} GHz, launch {sim['launch_cycles'] / sim['clock_ghz'] / 1e3:.3f}"
            f" us included); bound: {why}")
    busy = ", ".join(f"{k} {100 * v:.0f} %" for k, v in u.items() if v >= 0.005)
    rd, wr = sim["hbm_bytes"]
    traffic = (f"HBM {rd / 1e6:.3f} MB read, {wr / 1e6:.3f} MB written; L2 "
               f"{sim['l2_hit_bytes'] / 1e6:.3f} MB read hits, "
               f"{sim.get('l2_write_bytes', 0) / 1e6:.3f} MB written")
    return [head, f"utilisation (busiest core per pipe): {busy or 'none'}; {traffic}"]


def check_run_options(threads, repeat, backend) -> None:
    if threads is not None and threads < 1:
        raise UsageError("--threads must be at least 1")
    if repeat < 1:
        raise UsageError("--repeat must be at least 1")
    if backend not in (None, "c", "numpy"):
        raise UsageError(f"unknown backend {backend!r} (known: c, numpy)")


def run_doc(doc, progress, inputs, single, bind, seed, outputs, threads, backend, verify,
            repeat, target, pro=None, trust_code=False, levels=None):
    """Bring doc to the code level (the compiling phase), then run it; the run record.
    pro: the Pro options (block_dim, expect, check), for a Pro kernel. levels: the
    --check-levels and --dump-tensors options (check, dump)."""
    from ..driver import emit, is_pro, read_arrays, run
    check_run_options(threads, repeat, backend)
    arrays = read_arrays(doc, inputs, parse_assignments(single, "--input", str))
    if levels and (levels.get("check") or levels.get("dump")):
        check_levels_main(doc, arrays, bind, seed, target, levels)
    if is_pro(doc):
        return run(doc, inputs=arrays, bind=parse_assignments(bind, "--bind", number),
                   seed=seed, threads=threads, verify=verify, outputs_path=outputs,
                   repeat=repeat, backend=backend, target=target,
                   **_pro_options(doc, pro or {}))
    check = (pro or {}).get("check")
    if pro and any(v is not None for k, v in pro.items() if k != "check"):
        raise UsageError("--block-dim, --expect and --dump-dir apply to Pro kernels")
    if doc.level not in ("code", "run"):
        doc = emit(doc, backend or "c", target)
    from .progress import RUN_AFTER
    progress.phase("running", RUN_AFTER)
    return run(doc, inputs=arrays, bind=parse_assignments(bind, "--bind"), seed=seed,
               threads=threads, backend=backend, verify=verify, outputs_path=outputs,
               repeat=repeat, trust_code=trust_code, target=target,
               check=True if check is None else check)


def check_levels_main(doc, arrays, bind, seed, target, levels: dict) -> None:
    """--check-levels (the table on stderr; a divergence is exit 1 naming the level, the
    pass and the instruction) and --dump-tensors DIR."""
    from tabulate import tabulate

    from ..driver import check_levels
    rows = check_levels(doc, inputs=arrays, bind=parse_assignments(bind, "--bind"),
                        seed=seed, target=target, dump=levels.get("dump"))
    dumped = rows[0].get("dumped")
    if dumped is not None:
        from ..runtime.levels import MAX_DUMPS
        kept = min(dumped, MAX_DUMPS)
        sys.stderr.write(f"pypto-run: wrote {kept} tensor{'s' if kept != 1 else ''} to "
                         f"{printable(levels['dump'])}"
                         + (f" (the first {MAX_DUMPS} of {dumped})" if dumped > kept else "")
                         + "\n")
    if not levels.get("check"):
        return
    table = tabulate([[r["level"], r["after"], r["verdict"], f"{r['max_abs_err']:.3g}",
                       r["mismatches"]] for r in rows],
                     headers=["level", "after", "verdict", "max abs err", "mismatches"],
                     tablefmt="plain", disable_numparse=True)
    sys.stderr.write("".join(f"pypto-run: {printable(ln)}\n" for ln in table.splitlines()))
    bad = rows[-1] if rows[-1]["verdict"] == "fail" else None
    if bad is not None:
        where = f"; {bad['where']}" if bad.get("where") else ""
        raise MismatchError(f"the {bad['level']} level after {bad['after']} diverges from the "
                            f"tensor level: {mismatch_line(bad['check'])}{where}")


def _pro_options(doc, pro: dict) -> dict:
    import numpy as np
    from ..ir.debug_ops import debug_ops
    from ..runtime.pro_debug import Debug
    out = {"block_dim": 1 if pro.get("block_dim") is None else pro["block_dim"],
           "check": True if pro.get("check") is None else pro["check"]}
    if debug_ops(doc):      # printf to stderr (stdout is the run record), dumps to --dump-dir
        out["debug"] = Debug(sys.stderr.write, pro.get("dump_dir") or ".")
    if pro.get("expect"):
        try:
            with np.load(pro["expect"]) as z:
                out["expect"] = {k: z[k] for k in z.files}
        except (OSError, ValueError) as exc:
            raise UsageError(f"--expect {pro['expect']}: {exc}") from None
    return out


def run_target(target, sets):
    """--target with its --target-set overrides: a name or path, or the Target made."""
    if not sets:
        return target
    if target is None:
        raise UsageError("--target-set changes a number of the --target, and there is none "
                         "(e.g. --target a2 --target-set bandwidth.hbm_total=3000)")
    from ..targets import load_target, override
    return override(load_target(target), sets)


def run_main(src, inputs, single, bind, seed, outputs, threads, backend, verify, out, text,
             repeat=1, kernel=None, const=None, target=None, full=False, pro=None,
             trust_code=False, levels=None, target_set=None):
    from .progress import progress
    check_run_options(threads, repeat, backend)
    target = run_target(target, target_set)
    with progress("pypto-run", "compiling") as p:
        doc = load_doc(src, kernel, const, bind, target)
        rec = run_doc(doc, p, inputs, single, bind, seed, outputs, threads, backend, verify,
                      repeat, target, pro, trust_code, levels)
    sys.stderr.write(report(rec))
    keep = out != "-" or not sys.stdout.isatty()
    if keep:
        save_doc(rec, out, text, "pypto-run", {"backend": backend, "threads": threads}, full)
    else:
        sys.stderr.write("pypto-run: run record not kept (stdout is a terminal); keep it with "
                         "-o run.msgpack or a pipe into pypto-prof\n")
    a = rec.body[0].attrs
    if a["verdict"] == "fail":
        bad = ", ".join(c["name"] for c in a["checks"] if not c["ok"])
        raise MismatchError(f"outputs differ from the numpy reference ({bad})" if "pro" not in
                            rec.attrs else f"outputs differ ({bad}): {a['notice']}")
