"""Kernel data: generate missing inputs, compare outputs with the reference."""
from __future__ import annotations

import numpy as np

from ..analysis.bind import concrete_shape, param_roles, param_types
from ..errors import InputError, UsageError

# (rtol, atol) per output dtype. The absolute part grows with the output's RMS (atol + rtol *
# rms(reference)): sums and matmuls accumulate in a different order than numpy, and an output
# that cancels to near zero carries the error of its large terms, not of its own size.
TOLERANCE = {"f32": (1e-4, 1e-5), "f16": (1e-2, 1e-3), "bf16": (4e-2, 1e-2)}


def prepare(doc, given: dict, env: dict, seed: int = 0) -> dict[str, np.ndarray]:
    """All parameter arrays: given ones converted, inputs generated, outputs zeroed."""
    types, roles = param_types(doc), param_roles(doc)
    rng = np.random.default_rng(seed)
    out = {}
    for pname, t in types.items():
        shape = concrete_shape(t, env)
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


def read_arrays(doc, npz: str | None, npy: dict) -> dict:
    """Parameter arrays from an .npz (by name) and .npy files (name -> path); bf16 arrays,
    which come back from numpy files as 2-byte void or uint16, are viewed as bf16."""
    out = {}
    if npz:
        try:
            with np.load(npz, allow_pickle=False) as z:
                out.update({k: z[k] for k in z.files})
        except FileNotFoundError:
            raise InputError(f"{npz}: no such file") from None
        except (OSError, ValueError) as exc:
            raise InputError(f"{npz}: not a readable .npz ({exc})") from None
    for name, path in npy.items():
        try:
            out[name] = np.load(path, allow_pickle=False)
        except FileNotFoundError:
            raise InputError(f"{path}: no such file") from None
        except (OSError, ValueError) as exc:
            raise InputError(f"{path}: not a readable .npy ({exc})") from None
    types = param_types(doc)
    for k, a in out.items():
        t = types.get(k)
        if t is not None and t.dtype.name == "bf16" and a.dtype.itemsize == 2 and \
                a.dtype.kind in "Vu":
            out[k] = a.view(t.dtype.np)
    return out
