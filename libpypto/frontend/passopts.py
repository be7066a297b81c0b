"""The reference's pass knobs mapped onto pypto-lower pass options, recorded in the traced
document (module attribute `pass_options`) for pypto-lower to apply (passes/docopts.py).

    reference (set_pass_options, jit pass_options=, options(pass_options=))   pypto-lower
    vec_nbuffer_setting={"DEFAULT": N}                                        nbuffer{vec=N}
    cube_nbuffer_setting={"DEFAULT": N}                                       nbuffer{cube=N}
    cube_l1_reuse_setting={"DEFAULT": N} (or (N, side))                       l1-reuse{factor=N}
    ooo_sched_mode="GAPMIN" / "HLF" ("": the default)                         ooo-schedule{mode=...}
    auto_mix_partition=0 / 1                                                  mix-fuse{enable=...}
    sg_set_scope=id or (id, parallel, cross)      the ops traced after it carry `scope`; fuse
                                                  keeps kernels of different scopes apart
    set_pass_config(strategy, pass, key, value)   pass{key=value} (a pypto pass name, or the
                                                  reference's name of the same pass)
    set_pass_config(..., KEY_DUMP_GRAPH, True)    pypto-lower --print-after pass
    set_pass_default_config(KEY_DUMP_GRAPH, True) pypto-lower --print-after-all

A merge count of `{}` (the reference's "automatic") leaves the pass its default. What pypto
does not implement is a one-line warning naming it: the per-group and per-label keys of the
merge counts (`func8_0`, a semantic label), `cube_l1_reuse_setting`'s side other than "auto",
`sg_set_scope`'s allow_parallel_merge (fuse merges producer-consumer pairs only),
sg_set_ooo_scope, sg_set_tunevf_mode, enable_slice. A value of the wrong type is an error at
the op-file line; a value the pass refuses is an error at that line when pypto-lower runs.

Scope of a setting: inside a kernel, it is the kernel's (the last value set for a pass option
wins, wherever in the kernel it was set: pypto runs one pipeline per kernel); outside any
kernel (or through jit's pass_options=), it applies to the kernels traced after it.
"""
from __future__ import annotations

import enum
import os
import sys

from ..errors import CompileError
from ..ir.core import Loc
from . import tensor

MERGE_COUNTS = {"vec_nbuffer_setting": ("nbuffer", "vec"),
                "cube_nbuffer_setting": ("nbuffer", "cube"),
                "cube_l1_reuse_setting": ("l1-reuse", "factor")}
NOT_MAPPED = {
    "sg_set_ooo_scope": "ooo_scope grouping of the reference's OoO scheduler",
    "sg_set_tunevf_mode": "the reference's vector-function fusion tuning",
    "enable_slice": "the reference's slice processing"}
KNOBS = tuple(MERGE_COUNTS) + ("ooo_sched_mode", "auto_mix_partition", "sg_set_scope") + \
    tuple(NOT_MAPPED)
OOO_MODES = ("", "GAPMIN", "HLF")
# the reference's pass names (set_pass_config's identifier) -> pypto's pass of that work
REFERENCE_PASSES = {"ExpandFunction": "tensor-to-tile", "GraphPartition": "fuse",
                    "NBufferMerge": "nbuffer", "L1CopyInReuseMerge": "l1-reuse",
                    "OoOSchedule": "ooo-schedule", "ReduceCopyMerge": "mix-fuse"}
PASS_NAME_CHARS = set("abcdefghijklmnopqrstuvwxyz0123456789-")
OPTION_CHARS = PASS_NAME_CHARS | set("_")


class PassConfigKey(enum.Enum):
    """The reference's pass configuration keys: KEY_DUMP_GRAPH prints the pass's result
    (pypto-lower --print-after)."""
    KEY_DUMP_GRAPH = "dump_graph"


_GLOBAL: dict = {"entries": [], "print_after": [], "scope": None}    # set outside a kernel


def caller_loc() -> Loc | None:
    """The innermost frame outside libpypto: where an op file called us."""
    b = tensor._current[-1] if tensor._current else None
    if b is not None:
        return b.loc()
    f = sys._getframe(1)
    while f is not None:
        fn = os.path.abspath(f.f_code.co_filename)
        if not fn.startswith(tensor._PKG_DIR + os.sep):
            return Loc(os.path.basename(fn), f.f_lineno)
        f = f.f_back
    return None


def _state() -> dict:
    """Where a setting goes: the kernel being traced, or the settings for later kernels."""
    if tensor._current:
        b = tensor._current[-1]
        return {"entries": b.pass_options, "print_after": b.print_after, "scope": None,
                "builder": b}
    return _GLOBAL


def _error(msg: str, loc) -> CompileError:
    return CompileError(msg, loc)


def _entry(pass_: str, option: str, value, knob: str, loc) -> dict:
    e = {"pass": pass_, "option": option, "value": value, "from": knob}
    if loc is not None:
        e["file"], e["line"] = loc.file, loc.line
    return e


def _merge_count(knob: str, v, loc) -> int | None:
    """The one count of a merge-count dict ({"DEFAULT": N} or {-1: N}), None for {} (the
    pass's own default); other keys warn."""
    if not isinstance(v, dict):
        raise _error(f"set_pass_options: {knob} takes a dict such as {{'DEFAULT': 2}}, not "
                     f"{v!r}", loc)
    count = None
    for key, val in v.items():
        side = "auto"
        if isinstance(val, tuple) and knob == "cube_l1_reuse_setting" and len(val) == 2:
            val, side = val
        if isinstance(val, bool) or not isinstance(val, int) or val < 1:
            raise _error(f"set_pass_options: {knob}[{key!r}] must be a merge count >= 1, not "
                         f"{val!r}", loc)
        if key in ("DEFAULT", -1):
            count = val
        else:
            tensor.unsupported(f"set_pass_options {knob} key {key!r}",
                               "pypto's pass takes one merge count (the DEFAULT one), not "
                               "counts per function group or semantic label")
        if side != "auto":
            tensor.unsupported(f"set_pass_options cube_l1_reuse_setting side {side!r}",
                               "the merge side is the pass's choice")
    return count


def _scope(v, loc) -> list | None:
    """sg_set_scope's (scope_id, allow_parallel_merge, allow_cross_scope_merge) as
    [id, cross] (None for -1)."""
    t = (v, False, False) if isinstance(v, int) and not isinstance(v, bool) else v
    if not (isinstance(t, tuple) and len(t) == 3 and isinstance(t[0], int) and
            not isinstance(t[0], bool) and all(isinstance(x, bool) for x in t[1:]) and
            -1 <= t[0] <= 2147483647):
        raise _error(f"set_pass_options: sg_set_scope takes a scope id (-1 to 2147483647) or "
                     f"(scope_id, allow_parallel_merge, allow_cross_scope_merge), not {v!r}",
                     loc)
    sid, parallel, cross = t
    if sid == -1:
        if parallel or cross:
            raise _error("set_pass_options: sg_set_scope=-1 takes no merge flags (the "
                         "reference's rule)", loc)
        return None
    if parallel:
        tensor.unsupported("set_pass_options sg_set_scope allow_parallel_merge=True",
                           "pypto's fuse merges producers with their consumers only")
    return [sid, bool(cross)]


def set_knobs(kv: dict, loc=None) -> None:
    """set_pass_options(**kv): each knob mapped (see the module docstring)."""
    loc = loc or caller_loc()
    st = _state()
    for knob, v in kv.items():
        if v is None:
            continue
        if knob in MERGE_COUNTS:
            n = _merge_count(knob, v, loc)
            if n is not None:
                st["entries"].append(_entry(*MERGE_COUNTS[knob], n, knob, loc))
        elif knob == "ooo_sched_mode":
            if v not in OOO_MODES:
                raise _error(f"set_pass_options: ooo_sched_mode must be '', 'GAPMIN' or "
                             f"'HLF', not {v!r}", loc)
            if v:
                st["entries"].append(_entry("ooo-schedule", "mode", v, knob, loc))
        elif knob == "auto_mix_partition":
            if v not in (0, 1) or isinstance(v, bool):
                raise _error(f"set_pass_options: auto_mix_partition must be 0 or 1, not "
                             f"{v!r}", loc)
            st["entries"].append(_entry("mix-fuse", "enable", bool(v), knob, loc))
        elif knob == "sg_set_scope":
            scope = _scope(v, loc)
            _set_scope(st, scope, loc)
        elif knob in NOT_MAPPED:
            tensor.unsupported(f"set_pass_options {knob}", NOT_MAPPED[knob])
        else:
            tensor.unsupported(f"pass option {knob}",
                               "a setting of the reference's device compiler")


def _set_scope(st: dict, scope, loc) -> None:
    b = st.get("builder")
    if b is None:
        st["scope"] = scope
        return
    if scope is not None:
        seen = b.scopes.setdefault(scope[0], scope)
        if seen != scope:
            raise _error(f"sg_set_scope: scope {scope[0]} was set with "
                         f"allow_cross_scope_merge={seen[1]} before; one scope id has one "
                         f"setting (the reference's rule)", loc)
    b.scope = scope


def set_config(strategy, identifier, key, value, loc=None) -> None:
    """set_pass_config(strategy, identifier, key, value): identifier is a pypto pass (or the
    reference's name for it); key an option of that pass, or KEY_DUMP_GRAPH."""
    loc = loc or caller_loc()
    where = f"set_pass_config({strategy!r}, {identifier!r}, {_key_text(key)})"
    if not isinstance(identifier, str) or not isinstance(strategy, str):
        raise _error(f"{where}: strategy and identifier are strings", loc)
    name = REFERENCE_PASSES.get(identifier, identifier)
    if not set(name) <= PASS_NAME_CHARS:
        tensor.unsupported(where, f"pypto has no pass {identifier!r} (its passes: "
                                  f"pypto-lower --list-passes; the reference's ExpandFunction, "
                                  f"GraphPartition, NBufferMerge, L1CopyInReuseMerge, "
                                  f"OoOSchedule and ReduceCopyMerge map onto theirs)")
        return
    st = _state()
    if _is_dump(key):
        if value and name not in st["print_after"]:
            st["print_after"].append(name)
        return
    if isinstance(key, enum.Enum) or not isinstance(key, str) or \
            not set(key) <= OPTION_CHARS or not key:
        tensor.unsupported(where, "the key is not a pass option")
        return
    if not (isinstance(value, (bool, int, float, str))):
        raise _error(f"{where}: the value must be a bool, a number or a string, not "
                     f"{type(value).__name__}", loc)
    st["entries"].append(_entry(name, key.replace("_", "-"), value, where, loc))


def set_default_config(key, value) -> None:
    """set_pass_default_config(KEY_DUMP_GRAPH, True): print the IR after every pass."""
    if not _is_dump(key):
        tensor.unsupported(f"set_pass_default_config({_key_text(key)})",
                           "the only pass configuration key is KEY_DUMP_GRAPH")
        return
    st = _state()
    if value and "*" not in st["print_after"]:
        st["print_after"].append("*")
    elif not value and "*" in st["print_after"]:
        st["print_after"].remove("*")


def get_configs(identifier) -> dict:
    """Option -> value of what was set for a pass so far (in the kernel being traced, else
    for later kernels); KEY_DUMP_GRAPH -> True when its result is printed."""
    name = REFERENCE_PASSES.get(identifier, identifier)
    st = _state()
    out = {e["option"]: e["value"] for e in st["entries"] if e["pass"] == name}
    if name in st["print_after"]:
        out[PassConfigKey.KEY_DUMP_GRAPH] = True
    return out


def get_default_config(key, default_value=False):
    if _is_dump(key):
        return "*" in _state()["print_after"] or default_value
    return default_value


def _is_dump(key) -> bool:
    return key is PassConfigKey.KEY_DUMP_GRAPH or key in ("KEY_DUMP_GRAPH",
                                                          "PassConfigKey.KEY_DUMP_GRAPH")


def _key_text(key) -> str:
    return f"PassConfigKey.{key.name}" if isinstance(key, enum.Enum) else repr(key)


def snapshot() -> dict:
    """The settings made outside any kernel (copied into each kernel traced after them)."""
    return {"entries": list(_GLOBAL["entries"]), "print_after": list(_GLOBAL["print_after"]),
            "scope": _GLOBAL["scope"]}


def restore(saved: dict) -> None:
    _GLOBAL.update({k: list(v) if isinstance(v, list) else v for k, v in saved.items()})


def reset() -> None:
    restore({"entries": [], "print_after": [], "scope": None})


def jit_options(kv: dict | None, loc) -> dict:
    """jit(pass_options=kv): the entries it makes, without touching the global settings."""
    saved = snapshot()
    try:
        reset()
        if kv:
            set_knobs(dict(kv), loc)
        return snapshot()
    finally:
        restore(saved)


def module_attrs(first: dict, b) -> dict:
    """The document's `pass_options` and `print_after`: what was set before the kernel
    (first: a snapshot), then in it; for each (pass, option) the last setting wins."""
    last: dict = {}
    for e in first["entries"] + b.pass_options:
        last.pop((e["pass"], e["option"]), None)
        last[(e["pass"], e["option"])] = e
    out: dict = {}
    if last:
        out["pass_options"] = list(last.values())
    dumps = list(dict.fromkeys(first["print_after"] + b.print_after))
    if dumps:
        out["print_after"] = dumps
    return out
