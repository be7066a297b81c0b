"""Run the reference PyPTO's real model kernels here with only their import line changed.

    python scripts/port_check.py REF [--kernel NAME]... [--backend c|numpy] [--list] [-v]

REF is a local checkout of hicann/pypto (its models/ and examples/ are read). The script
fetches nothing and holds none of the reference's code: for each kernel it reads the
reference's own file, changes `import pypto` to `import libpypto as pypto` (and
`from pypto... import` the same way), executes it as a module and calls the kernel with
numpy arrays. torch and torch_npu, and whatever else the file imports that is not installed
here (the reference's test utilities), are stand-in objects that absorb use at import time
(decorators, annotations, module-level registration), so only the kernel itself has to
work; a file of the same directory that the kernel file imports is loaded the same way,
import swapped. The inputs are made here, shaped as the reference's own tests make them, at small sizes, and the
outputs are compared with the numpy formulas of examples/models/ (the reference's goldens
are written in torch, which this machine does not have).

Per kernel it prints one line: `pass` (ran with only the import changed, results match),
`mismatch` (ran, results differ: the largest error is printed), or `error` (the first error,
one line; -v prints the traceback). Exit 0 when every selected kernel passed, else 1; 2 when
REF is not a checkout.
"""
from __future__ import annotations

import argparse
import ast
import importlib.abc
import importlib.util
import pathlib
import re
import sys
import traceback
import types

ROOT = pathlib.Path(__file__).resolve().parents[1]

# `import pypto` and its submodules -> libpypto, keeping the name `pypto` bound as before
_RULES = [
    (re.compile(r"^(\s*)import pypto\s*$"), r"\1import libpypto as pypto"),
    (re.compile(r"^(\s*)import pypto\.([\w.]+) as (\w+)\s*$"), r"\1import libpypto.\2 as \3"),
    (re.compile(r"^(\s*)from pypto(\.[\w.]+)? import "), r"\1from libpypto\2 import "),
]


def swap_imports(src: str) -> tuple[str, list[int]]:
    """The source with every pypto import line rewritten; the 1-based numbers of the lines
    changed."""
    out, changed = [], []
    for no, line in enumerate(src.splitlines(keepends=True), 1):
        body = line.rstrip("\r\n")
        for pat, rep in _RULES:
            new = pat.sub(rep, body)
            if new != body:
                line = new + line[len(body):]
                changed.append(no)
                break
        out.append(line)
    return "".join(out), changed


class Absent:
    """A stand-in for anything of a module that is not installed: every attribute, call,
    index and decoration gives another stand-in, so import-time uses (decorators, type
    annotations, torch.library registration) pass. Using it as data fails at once."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attr):
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)
        return Absent(f"{self._name}.{attr}")

    def __call__(self, *args, **kwargs):
        return Absent(f"{self._name}(...)")

    def __getitem__(self, key):
        return Absent(f"{self._name}[...]")

    def __mro_entries__(self, bases):
        return (object,)

    def __repr__(self):
        return f"<absent {self._name}>"

    def __array__(self, *a, **k):
        raise TypeError(f"{self._name} is not installed here (a stand-in of port_check)")


class _AbsentModule(types.ModuleType):
    def __getattr__(self, attr):
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)
        return Absent(f"{self.__name__}.{attr}")


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Last on sys.meta_path while a reference file runs: a module of the kernel's own
    directory is loaded with its import swapped; any other module that no installed finder
    found becomes an _AbsentModule."""

    def __init__(self, here: pathlib.Path, names: set[str]):
        self.here = here
        self.names = names              # top-level modules the reference files import
        self.made: list[str] = []

    def find_spec(self, name, path=None, target=None):
        top = name.split(".")[0]
        if top in ("pypto", "libpypto") or top not in self.names:
            return None
        local = self.here / f"{name}.py"
        if "." not in name and local.is_file():
            self.names |= imported_names(local.read_text())
            return importlib.util.spec_from_loader(name, self, origin=str(local))
        return importlib.util.spec_from_loader(name, self, is_package=True)

    def create_module(self, spec):
        self.made.append(spec.name)
        if spec.origin and spec.origin.endswith(".py"):
            return None
        m = _AbsentModule(spec.name)
        m.__path__ = []
        return m

    def exec_module(self, module):
        origin = getattr(module.__spec__, "origin", None)
        if origin and origin.endswith(".py"):
            src, _ = swap_imports(pathlib.Path(origin).read_text())
            exec(compile(src, origin, "exec", dont_inherit=True), module.__dict__)


def imported_names(src: str) -> set[str]:
    """The top-level module names a source's import statements name."""
    names = set()
    for node in ast.walk(ast.parse(src)):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return names


# the device stack: stand-ins even where installed (a CPU torch would refuse the files'
# torch.library registrations for the NPU dispatch key)
DEVICE = {"torch", "torch_npu"}


class _DeviceFinder(_Finder):
    """First on sys.meta_path while a reference file runs: torch and torch_npu are always
    stand-ins."""

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] not in DEVICE:
            return None
        return importlib.util.spec_from_loader(name, self, is_package=True)


def load(path: pathlib.Path) -> tuple[dict, list[int]]:
    """Execute a reference file with its imports swapped (not as __main__); its namespace and
    the lines changed."""
    src, changed = swap_imports(path.read_text())
    finder = _Finder(path.parent, imported_names(src))
    device = _DeviceFinder(path.parent, set(DEVICE))
    hidden = {k: sys.modules.pop(k) for k in list(sys.modules) if k.split(".")[0] in DEVICE}
    before = set(sys.modules)
    sys.meta_path.insert(0, device)
    sys.meta_path.append(finder)
    module = types.ModuleType(f"port_check_{path.stem}")
    module.__file__ = str(path)
    sys.modules[module.__name__] = module       # dataclasses look their module up
    ns = module.__dict__
    try:
        exec(compile(src, str(path), "exec", dont_inherit=True), ns)
    finally:
        sys.meta_path.remove(finder)
        sys.meta_path.remove(device)
        for name in set(sys.modules) - before:
            if name in finder.made or name in device.made:
                del sys.modules[name]
        sys.modules.update(hidden)
    return ns, changed


# ---- the kernels: the reference's file, its kernel, inputs made here, a numpy formula ----

def _example(name: str):
    """examples/models/<name>.py (pypto's own ports, for their numpy formulas and inputs)."""
    spec = importlib.util.spec_from_file_location(f"port_check_ex_{name}",
                                                  ROOT / "examples" / "models" / f"{name}.py")
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def _call(kernel, backend: str, *args):
    kernel.options["backend"] = backend
    kernel(*args)


def _err(got, want, rtol: float, atol: float) -> tuple[bool, float]:
    import numpy as np
    g, w = np.asarray(got, np.float64), np.asarray(want, np.float64)
    if g.shape != w.shape:
        return False, float("inf")
    d = np.abs(g - w)
    return bool((d <= atol + rtol * np.abs(w)).all()), float(d.max(initial=0.0))


CASES: dict[str, tuple[str, object]] = {}


def case(name: str, path: str):
    def reg(fn):
        CASES[name] = (path, fn)
        return fn
    return reg


@case("glm_gate", "models/glm_v4_5/glm_gate.py")
def _glm_gate(ns, backend):
    import numpy as np
    m = _example("glm_gate")
    rng = np.random.default_rng(0)
    hs = rng.random((70, 1024), dtype=np.float32)
    w = rng.random((160, 1024), dtype=np.float32)
    out = np.zeros((70, 160), np.float32)
    _call(ns["select_experts_mm_kernel"], backend, hs, w, out)
    return [("router_logits_out", *_err(out, m.reference(hs, w), 1e-4, 1e-3))]


@case("glm_select_experts", "models/glm_v4_5/glm_select_experts.py")
def _glm_select_experts(ns, backend):
    import ml_dtypes
    import numpy as np
    m = _example("glm_select_experts")
    rng = np.random.default_rng(0)
    res = []
    for bs, groups, top_group in ((19, 1, 1), (7, 8, 4)):
        logits = rng.random((bs, 160), dtype=np.float32)
        bias = rng.random(160, dtype=np.float32).astype(ml_dtypes.bfloat16)
        wk, ik = np.zeros((bs, 8), np.float32), np.zeros((bs, 8), np.int32)
        _call(ns["select_experts_kernel"], backend, logits, bias, wk, ik, True, top_group,
              groups)
        want_w, want_i = m.reference(logits, bias, 8, True, top_group, groups)
        res += [(f"weight_k (groups {groups})", *_err(wk, want_w, 1e-5, 1e-6)),
                (f"index_k (groups {groups})", *_err(ik, want_i, 0, 0))]
    return res


@case("glm_paged_attention", "models/glm_v4_5/glm_attention.py")
def _glm_paged_attention(ns, backend):
    import ml_dtypes
    import numpy as np
    m = _example("glm_paged_attention")
    q, k, v, table, seqs = m.make_inputs((40, 64, 17))
    cfg = ns["IfaTileShapeConfig"](g_tile=4, s2_tile=32,
                                   c1_tile_shape=[[16, 16], [64, 64], [32, 32]],
                                   v1_tile_shape=[16, 32],
                                   c2_tile_shape=[[16, 16], [32, 32], [64, 64]],
                                   v2_tile_shape=[16, 64])
    out = np.zeros(q.shape, ml_dtypes.bfloat16)
    scale = q.shape[-1] ** -0.5
    _call(ns["ifa_func_kernel"], backend, q, k, v, table, seqs, out, scale, cfg)
    return [("atten_out", *_err(out, m.reference(q, k, v, table, seqs, scale), 2e-2, 2e-2))]


@case("glm_attention_pre_quant", "models/glm_v4_5/glm_attention_pre_quant.py")
def _glm_attention_pre_quant(ns, backend):
    m = _example("glm_attention_pre_quant")
    ins, outs = m.make_inputs(bs=11)
    _call(ns["quant_attention_pre_kernel"], backend, *ins, *outs)
    want = m.reference(*ins, q_size=outs[0].shape[1], kv_size=outs[1].shape[1])
    return [(n, *_err(o, want[n], 2e-2, 2e-2)) for n, o in zip(m.OUTPUTS, outs)]


@case("mla_prolog", "models/deepseek_v4/mla_prolog_v4_impl.py")
def _mla_prolog(ns, backend):
    # the reference's rope_3d reshapes [t, heads, rope] as if it were [t, rope, heads]
    # (its comments: [1, 64, 64]): its kernel needs heads == rope_dim, as its model has
    m = _example("mla_prolog")
    ins, outs = m.make_inputs(t=5, heads=64, head_dim=128, rope=64)
    attrs = ns["MlaPrologV4Attrs"](eps=1e-6, layout_query="TND", layout_key="PA_BSND")
    cfg = ns["MlaPrologV4Configs"](unroll_list=[128, 64, 32, 16, 1],
                                   cube_l1_reuse_setting={2: 4},
                                   mg_copyin_upper_bound=2 * 1024 * 1024, pg_upper_bound=8192,
                                   block_size=128, t_sub_tile=1, chunk_size=2)
    _call(ns["mla_prolog_v4"], backend, *ins, *outs, attrs, cfg)
    want = m.reference(*ins, heads=64)
    return [(n, *_err(o, want[n], 2e-2, 2e-2)) for n, o in zip(m.OUTPUTS, outs)]


def _gdr(ns, backend, seqs, factory):
    import numpy as np
    m = _example("qwen3_next_gated_delta_rule")
    ins, outs = m.make_inputs(seqs, nqk=1, nv=2, d=128)
    q, k, v, beta, g, states, cu = ins
    size = 128                            # the reference's chunk, its eye input [16, 128]
    helpers = [np.tril(-np.ones((size, size), np.float32), -1),
               np.tril(np.ones((size, size), np.float32)),
               np.tile(np.eye(16, dtype=np.float32), (1, 8))]
    kernel = ns[factory](len(seqs), 1, 2, 128, size)
    _call(kernel, backend, q, k, v, beta, g, states, *helpers, cu, *outs)
    want = m.reference(*ins)
    return [(n, *_err(o, w, 1e-3, 1e-4))
            for n, o, w in zip(("core_attn_out", "last_state_data"), outs, want)]


@case("gated_delta_rule", "models/qwen3_next/gated_delta_rule_impl.py")
def _gdr_aligned(ns, backend):
    return _gdr(ns, backend, (128, 256), "chunk_gated_delta_rule")


@case("gated_delta_rule_unaligned", "models/qwen3_next/gated_delta_rule_impl.py")
def _gdr_unaligned(ns, backend):
    return _gdr(ns, backend, (100, 150), "chunk_gated_delta_rule_unaligned")


def _attention_np(q, k, v, scale):
    import numpy as np
    s = q @ np.swapaxes(k, -1, -2) * scale
    e = np.exp(s - s.max(-1, keepdims=True))
    return (e / e.sum(-1, keepdims=True)) @ v


@case("sdpa", "examples/03_advanced/advanced_nn/attention/attention.py")
def _sdpa(ns, backend):
    import ml_dtypes
    import numpy as np
    rng = np.random.default_rng(0)
    shape = (ns["BATCH_SIZE"], ns["NUM_HEADS"], ns["SEQ_LEN_Q"], ns["HEAD_DIM"])
    q, k, v = (rng.standard_normal(shape).astype(ml_dtypes.bfloat16) for _ in range(3))
    out = np.zeros(shape, ml_dtypes.bfloat16)
    _call(ns["scaled_dot_product_attention_kernel"], backend, q, k, v, out)
    f = lambda a: np.asarray(a, np.float64)                                   # noqa: E731
    want = _attention_np(f(q), f(k), f(v), ns["HEAD_DIM"] ** -0.5)
    return [("output", *_err(out, want, 3e-2, 3e-2))]


@case("attention_projection", "examples/03_advanced/advanced_nn/attention/attention.py")
def _attention_projection(ns, backend):
    import ml_dtypes
    import numpy as np
    rng = np.random.default_rng(0)
    b, s, hid = ns["BATCH_SIZE"], ns["SEQ_LEN"], ns["HIDDEN_SIZE"]
    n, d = ns["NUM_HEADS"], ns["HEAD_DIM"]
    bf = ml_dtypes.bfloat16
    hs = rng.standard_normal((b, s, hid)).astype(bf)
    ws = [(rng.standard_normal((1, hid, n * d)) * hid ** -0.5).astype(bf) for _ in range(3)]
    wo = (rng.standard_normal((1, n * d, hid)) * (n * d) ** -0.5).astype(bf)
    out = np.zeros((b, s, hid), bf)
    _call(ns["attention_with_projection_kernel"], backend, hs, *ws, wo, out)
    f = lambda a: np.asarray(a, np.float64)                                   # noqa: E731
    q, k, v = ((f(hs) @ f(w[0])).reshape(b, s, n, d).transpose(0, 2, 1, 3) for w in ws)
    ctx = _attention_np(q, k, v, d ** -0.5).transpose(0, 2, 1, 3).reshape(b, s, n * d)
    return [("output_tensor", *_err(out, ctx @ f(wo[0]), 5e-2, 5e-2))]


# ---- driver ----

def check(ref: pathlib.Path, name: str, backend: str = "c", verbose: bool = False) -> dict:
    """Run one kernel; {"kernel", "file", "changed", "verdict", "detail"}."""
    import warnings
    rel, fn = CASES[name]
    row = {"kernel": name, "file": rel, "changed": [], "verdict": "error", "detail": ""}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")     # the reference's device options are warned
            ns, row["changed"] = load(ref / rel)
            results = fn(ns, backend)
    except Exception as exc:                    # noqa: BLE001 -- reported per kernel
        if verbose:
            traceback.print_exc()
        row["detail"] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        return row
    bad = [r for r in results if not r[1]]
    row["verdict"] = "mismatch" if bad else "pass"
    row["detail"] = ", ".join(f"{n} max err {e:.3g}" for n, _, e in (bad or results))
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("ref", nargs="?", help="a local checkout of hicann/pypto")
    ap.add_argument("--kernel", action="append", choices=sorted(CASES),
                    help="run only this kernel (repeatable)")
    ap.add_argument("--backend", default="c", choices=["c", "numpy"])
    ap.add_argument("--list", action="store_true", help="list the kernels and their files")
    ap.add_argument("-v", "--verbose", action="store_true", help="tracebacks of errors")
    args = ap.parse_args(argv)
    if args.list:
        for name, (rel, _) in CASES.items():
            print(f"{name:28} {rel}")
        return 0
    ref = pathlib.Path(args.ref or "")
    if not args.ref or not (ref / "models").is_dir():
        print(f"port_check: {args.ref!r} is not a checkout of the reference (no models/)",
              file=sys.stderr)
        return 2
    rows = [check(ref, n, args.backend, args.verbose) for n in args.kernel or CASES]
    for r in rows:
        lines = ",".join(map(str, r["changed"])) or "-"
        print(f"{r['kernel']:28} {r['verdict']:8} import line(s) {lines:6} {r['detail']}")
    return 0 if all(r["verdict"] == "pass" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
