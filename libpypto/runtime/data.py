"""Kernel data: bind symbolic dims from arrays, generate missing inputs, compare outputs."""
from __future__ import annotations

import numpy as np

from ..errors import UsageError
from ..ir import expr as E
from ..ir.types import TensorType

# (rtol, atol) per output dtype. The absolute part grows with the output's RMS (atol + rtol *
# rms(reference)): sums and matmuls accumulate in a different order than numpy, and an output
# that cancels to near zero carries the error of its large terms, not of its own size.
TOLERANCE = {"f32": (1e-4, 1e-5), "f16": (1e-2, 1e-3), "bf16": (4e-2, 1e-2)}


def param_types(doc) -> dict[str, TensorType]:
    """Kernel parameters in order: name -> tensor type (from the tensor graph or gm ops)."""
    out = {}
    for op in _source_ops(doc):
        if op.name == "param":
            out[op.result.name] = op.result.type
    return out


def param_roles(doc) -> dict[str, str]:
    return {op.result.name: op.attrs.get("role", "input")
            for op in _source_ops(doc) if op.name == "param"}


def _source_ops(doc):
    for op in doc.body:
        if op.name == "source":
            return op.regions[0]
    return doc.body


def bind(doc, arrays: dict, explicit: dict | None = None) -> dict[str, int]:
    """Size of every symbol, from explicit bindings and the given arrays, checked for agreement."""
    symbols = doc.attrs.get("symbols", {})
    env: dict[str, int] = {}
    explicit = dict(explicit or {})
    for name, val in explicit.items():
        if name not in symbols:
            known = ", ".join(sorted(symbols)) or "none"
            raise UsageError(f"--bind {name}: the kernel has no symbol {name!r} (symbols: {known})")
        if int(val) < 0:
            raise UsageError(f"--bind {name}={val}: sizes cannot be negative")
        env[name] = int(val)
    types = param_types(doc)
    for pname, arr in arrays.items():
        t = types.get(pname)
        if t is None:
            continue
        if arr.ndim != t.rank:
            raise UsageError(f"input {pname}: rank {arr.ndim} array for a rank-{t.rank} parameter "
                             f"{t}")
    for name, info in symbols.items():
        for pname, axis in info.get("dims", []):
            if pname in arrays:
                size = int(arrays[pname].shape[axis])
                if name in env and env[name] != size and info.get("kind") != "static":
                    raise UsageError(f"{pname}.shape[{axis}] is {size} but {name} is {env[name]}")
                env.setdefault(name, size)
        if info.get("kind") == "static":
            env.setdefault(name, info["value"])
    for dropped, keep in doc.attrs.get("constraints", []):
        try:
            want = E.evaluate(keep, env)
        except E.UnboundSymbol:
            continue
        if dropped in env and env[dropped] != want:
            dims = symbols.get(dropped, {}).get("dims", [])
            where = f"{dims[0][0]}.shape[{dims[0][1]}]" if dims else dropped
            raise UsageError(f"{where} is {env[dropped]} but must equal {E.to_str(keep)} = {want}")
        env.setdefault(dropped, want)
    for pname, t in types.items():
        for axis, d in enumerate(t.shape):
            try:
                size = E.evaluate(d, env)
            except E.UnboundSymbol as u:
                raise UsageError(f"symbol {u.name} (dim {axis} of {pname}) has no size: pass an "
                                 f"input for {pname} or --bind {u.name}=N") from None
            if pname in arrays and arrays[pname].shape[axis] != size:
                raise UsageError(f"input {pname} has shape {tuple(arrays[pname].shape)}, "
                                 f"expected {_concrete(t, env)}")
    return env


def _concrete(t: TensorType, env) -> tuple:
    return tuple(int(E.evaluate(d, env)) for d in t.shape)


def prepare(doc, given: dict, env: dict, seed: int = 0) -> dict[str, np.ndarray]:
    """All parameter arrays: given ones converted, inputs generated, outputs zeroed."""
    types, roles = param_types(doc), param_roles(doc)
    rng = np.random.default_rng(seed)
    out = {}
    for pname, t in types.items():
        shape = _concrete(t, env)
        if pname in given:
            arr = np.asarray(given[pname])
            if arr.dtype != t.dtype.np:
                raise UsageError(f"input {pname} has dtype {arr.dtype}, expected {t.dtype.np_name}")
            out[pname] = np.ascontiguousarray(arr).copy()
        elif roles[pname] == "output":
            out[pname] = np.zeros(shape, t.dtype.np)
        else:
            out[pname] = random_array(rng, shape, t.dtype)
    return out


def random_array(rng, shape, dt) -> np.ndarray:
    if dt.kind == "float":
        return rng.standard_normal(shape, dtype=np.float32).astype(dt.np)
    if dt.kind == "bool":
        return rng.integers(0, 2, shape).astype(np.bool_)
    lo, hi = (0, 8) if dt.np_name.startswith("u") else (-8, 8)
    return rng.integers(lo, hi, shape).astype(dt.np)


def compare(name: str, got: np.ndarray, want: np.ndarray) -> dict:
    """Verdict for one output: ok, max abs/rel error and the tolerance used."""
    dt = str(got.dtype)
    key = {"float32": "f32", "float16": "f16", "bfloat16": "bf16"}.get(dt)
    if key is None:
        ok = bool(np.array_equal(got, want))
        bad = int(np.count_nonzero(got != want))
        return {"name": name, "ok": ok, "mismatches": bad, "rtol": 0.0, "atol": 0.0,
                "max_abs_err": float(bad), "max_rel_err": float(bad)}
    rtol, atol = TOLERANCE[key]
    g, w = got.astype(np.float64), want.astype(np.float64)
    err = np.abs(g - w)
    same_special = (np.isnan(g) & np.isnan(w)) | (np.isinf(g) & (g == w))
    err = np.where(same_special, 0.0, err)
    finite = w[np.isfinite(w)]
    rms = float(np.sqrt(np.mean(finite * finite))) if finite.size else 0.0
    atol = atol + rtol * rms
    bound = atol + rtol * np.abs(w)
    bad = ~(err <= bound) & ~same_special
    rel = err / np.maximum(np.abs(w), atol)
    return {"name": name, "ok": not bool(bad.any()), "mismatches": int(bad.sum()),
            "rtol": rtol, "atol": atol,
            "max_abs_err": float(np.nanmax(err)) if err.size else 0.0,
            "max_rel_err": float(np.nanmax(rel)) if rel.size else 0.0}


def np_dtype(name: str):
    """numpy dtype from its string name, bfloat16 included."""
    import numpy as np
    if name == "bfloat16":
        import ml_dtypes
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)
