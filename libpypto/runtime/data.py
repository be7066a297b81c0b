"""Kernel data: generate missing inputs, compare outputs with the reference."""
from __future__ import annotations

import numpy as np

from ..analysis.bind import concrete_shape, param_roles, param_types
from ..analysis.limits import require
from ..errors import InputError, UsageError

# Verification is per element: got[i] passes when |got[i] - want[i]| <= tolerance[i], with
#
#     tolerance[i] = rtol * |want[i]| + floor[i]
#
# The floor is what an element may carry from the rounding of the values it was computed
# from: a sum or a matmul accumulates in another order than numpy, so an element that
# cancels to near zero carries the error of its large terms, not of its own size. It is
# never a statistic of the whole output (one huge element elsewhere must not widen it):
#
# - FLOOR, a constant per dtype: the largest error that cancelling terms of the examples'
#   and the catalogue's sizes leave (matmuls over K = 512 of standard-normal data; bf16
#   attention whose scores reach several hundred), with room;
# - with magnitudes (magnitudes(): per element, the size of the terms it was computed
#   from), floor[i] = max(FLOOR, atol + mtol * magnitude[i]): an element computed from
#   large terms (a user's data of scale 1e3, one huge input) may carry their rounding, and
#   only that element. pypto-run passes magnitudes; the constant is the least floor, so a
#   magnitude that comes out small (a difference of terms) never makes the check stricter
#   than the dtype allows.
#
#        rtol   atol   mtol   FLOOR
TOLERANCE = {
    "f32": (1e-4, 1e-5, 1e-6, 1e-4),
    "f16": (1e-2, 1e-3, 1e-5, 3e-2),
    "bf16": (4e-2, 1e-2, 3e-5, 0.25),
}

def prepare(doc, given: dict, env: dict, seed: int = 0) -> dict[str, np.ndarray]:
    """All parameter arrays: given ones converted, inputs generated, outputs zeroed."""
    types, roles = param_types(doc), param_roles(doc)
    shapes = {p: concrete_shape(t, env) for p, t in types.items()}
    for p, shape in shapes.items():
        if any(d < 0 for d in shape):
            raise InputError(f"parameter {p} would have the negative shape {list(shape)}")
    # the parameters, their reference copies and the reference's temporaries
    require("BYTES", 3 * sum(int(np.prod(s, dtype=object)) * types[p].dtype.itemsize
                             for p, s in shapes.items()), "the data of this run, in bytes")
    rng = np.random.default_rng(seed)
    out = {}
    for pname, t in types.items():
        shape = shapes[pname]
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
    if dt.name == "e8m0":               # MX block scales: powers of two around 1
        return np.ldexp(1.0, rng.integers(-3, 4, shape)).astype(dt.np)
    if dt.kind == "float":
        return rng.standard_normal(shape, dtype=np.float32).astype(dt.np)
    if dt.kind == "bool":
        return rng.integers(0, 2, shape).astype(np.bool_)
    lo, hi = (0, 8) if dt.np_name.startswith("u") else (-8, 8)
    return rng.integers(lo, hi, shape).astype(dt.np)


def tolerance(want: np.ndarray, magnitude: np.ndarray | None = None) -> np.ndarray:
    """The tolerance of every element of a floating-point output (see TOLERANCE)."""
    key = {"float32": "f32", "float16": "f16", "bfloat16": "bf16"}[str(want.dtype)]
    rtol, atol, mtol, floor = TOLERANCE[key]
    w = np.abs(want.astype(np.float64))
    base = np.where(np.isfinite(w), rtol * w, 0.0)
    if magnitude is None:
        return base + floor
    m = np.abs(np.broadcast_to(magnitude, want.shape).astype(np.float64))
    # an element whose magnitude is not a finite number falls back to the constant floor
    return base + np.where(np.isfinite(m), np.maximum(floor, atol + mtol * m), floor)


def compare(name: str, got: np.ndarray, want: np.ndarray,
            magnitude: np.ndarray | None = None) -> dict:
    """Verdict for one output: ok, the number of mismatches, the first one (index, got,
    want, tolerance), and the largest absolute and relative errors. Integer and bool
    outputs must match exactly; NaN matches NaN and an infinity the same infinity."""
    if str(got.dtype) not in ("float32", "float16", "bfloat16"):
        bad = np.asarray(got != want)
        return _verdict(name, bad, got, want, np.zeros(got.shape), float(bad.sum()),
                        float(bad.sum()))
    g, w = got.astype(np.float64), want.astype(np.float64)
    same_special = (np.isnan(g) & np.isnan(w)) | (np.isinf(g) & (g == w))
    with np.errstate(invalid="ignore"):
        err = np.where(same_special, 0.0, np.abs(g - w))
    tol = tolerance(want, magnitude)
    bad = ~(err <= tol)             # NaN errors are mismatches
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = err / np.maximum(np.abs(w), TOLERANCE[_key(got)][1])
    return _verdict(name, bad, got, want, tol, float(np.nanmax(err)) if err.size else 0.0,
                    float(np.nanmax(rel)) if rel.size else 0.0)


def _key(a: np.ndarray) -> str:
    return {"float32": "f32", "float16": "f16", "bfloat16": "bf16"}[str(a.dtype)]


def _verdict(name, bad, got, want, tol, max_abs, max_rel) -> dict:
    out = {"name": name, "ok": not bool(bad.any()), "mismatches": int(bad.sum()),
           "max_abs_err": max_abs, "max_rel_err": max_rel}
    if bad.any():
        first = np.unravel_index(int(np.argmax(bad.ravel())), bad.shape)
        out.update(first=[int(i) for i in first], got=_scalar(got[first]),
                   want=_scalar(want[first]), tolerance=float(tol[first]))
    return out


def _scalar(v):
    v = np.asarray(v)
    return bool(v) if v.dtype == np.bool_ else int(v) if v.dtype.kind in "iu" else float(v)


def magnitudes(doc, arrays: dict, env: dict) -> dict:
    """Per output element, the size of the terms it was computed from: the reference
    interpretation of the graph run on the absolute values of the inputs. For the sums,
    products and matmuls of a graph that is exactly the sum of |terms| of each element, the
    quantity its rounding error scales with (an element that cancels to zero keeps the
    magnitude of its terms); other ops pass magnitudes on through their numpy meaning, and
    an element whose magnitude comes out NaN or infinite gets the constant floor.

    arrays: the inputs as the run got them (outputs are ignored)."""
    from ..analysis.bind import param_roles
    from .interp import is_float, run_tensor
    roles = param_roles(doc)
    mag = {}
    for name, a in arrays.items():
        if roles.get(name) == "input" and (is_float(a.dtype) or a.dtype.kind == "i"):
            mag[name] = np.abs(a.astype(np.float32)).astype(a.dtype) if is_float(a.dtype) \
                else np.abs(a)
        else:
            mag[name] = np.zeros_like(a) if roles.get(name) == "output" else a.copy()
    with np.errstate(all="ignore"):
        run_tensor(doc, mag, env)
    return {name: mag[name] for name, role in roles.items() if role == "output"}

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
