"""The reference's option plumbing (pypto.options, set_options, set_pass_options, the jit's
*_options dicts, set_semantic_label, RunMode): what pypto honours, and a one-line warning
naming everything it does not (never silently dropped).

Honoured: vec_tile_shapes / cube_tile_shapes / matrix_size (as set_vec_tile_shapes,
set_cube_tile_shapes, set_matrix_size), runtime_options run_mode (RunMode.NPU and .SIM both
run on the host: the numbers are the same), new_ir (pypto has one IR), and the pass knobs
that map onto pypto-lower's pass options (vec/cube_nbuffer_setting, cube_l1_reuse_setting,
ooo_sched_mode, auto_mix_partition, sg_set_scope; set_pass_config; frontend/passopts.py has
the table). Everything else (device-runtime knobs such as stitch_function_max_num, pass knobs
without a pypto pass such as enable_slice, host, codegen, debug and verify options) is a
warning naming the keys: those settings tune the reference's device compiler and runtime and
change no value.
"""
from __future__ import annotations

import enum

from ..errors import CompileError
from ..ir.core import Loc
from . import passopts, tensor
from .tensor import _current

GROUPS = ("host_options", "codegen_options", "pass_options", "runtime_options",
          "verify_options", "debug_options", "operation_options")
# runtime_options run_mode: both modes run on the host; verify_options enable_pass_verify:
# pypto's pass verify is pypto-run --check-levels, where pass_verify_* probes act
HONOURED = {"runtime_options": {"run_mode"}, "verify_options": {"enable_pass_verify"}}


class RunMode(enum.IntEnum):
    """Where the reference runs a kernel (NPU or its CPU simulator): pypto runs both on the
    host, with the same numbers."""
    NPU = 0
    SIM = 1


_SET: dict = {g: {} for g in GROUPS}       # what set_*_options recorded (get_*_options)


def check_options(where: str, groups: dict, loc: Loc | None = None) -> None:
    """Warn once for every option key pypto does not implement; refuse a non-dict group."""
    for group, value in groups.items():
        if value is None:
            continue
        if not isinstance(value, dict):
            raise CompileError(f"{where}: {group} must be a dict, not {type(value).__name__}",
                               loc)
        if group == "pass_options":
            passopts.set_knobs(dict(value), loc)
            continue
        rest = sorted(str(k) for k in value if k not in HONOURED.get(group, ()))
        if group == "runtime_options" and "run_mode" in value:
            _run_mode(value["run_mode"], where, loc)
        if rest:
            _warn(f"{where}: {group} {', '.join(rest)}",
                  "settings of the reference's device compiler and runtime", loc)


def _run_mode(v, where: str, loc) -> None:
    if not (isinstance(v, RunMode) or v in (0, 1) or
            (isinstance(v, str) and v.upper() in ("NPU", "SIM"))):
        raise CompileError(f"{where}: run_mode must be RunMode.NPU or RunMode.SIM, not {v!r}",
                           loc)


def _warn(what: str, note: str, loc=None) -> None:
    if _current or loc is None:
        tensor.unsupported(what, note)
    else:
        from .. import errors
        key = (what, str(loc))
        if key not in tensor._WARNED:
            tensor._WARNED.add(key)
            errors.warn(f"{what} is not implemented by pypto: {note} (ignored)", loc)


class options:  # noqa: N801 -- the reference's name
    """`@pypto.options(...)` on a function or `with pypto.options(...):`: the options are
    checked (unimplemented ones warn) and the tile-shape ones applied while tracing."""

    def __init__(self, name: str = "", codegen_options=None, host_options=None,
                 pass_options=None, runtime_options=None, verify_options=None,
                 operation_options=None, debug_options=None, vec_tile_shapes=None,
                 cube_tile_shapes=None, conv_tile_shapes=None, matrix_size=None):
        # the reference's parameters, in its order (a positional call means the same)
        groups = {"codegen_options": codegen_options, "host_options": host_options,
                  "pass_options": pass_options, "runtime_options": runtime_options,
                  "verify_options": verify_options, "operation_options": operation_options,
                  "debug_options": debug_options}
        groups = {g: v for g, v in groups.items() if v is not None}
        self.groups = groups
        self.vec, self.cube, self.matrix = vec_tile_shapes, cube_tile_shapes, matrix_size
        self.saved = None
        check_options("pypto.options", {g: v for g, v in groups.items() if g != "pass_options"})
        if groups.get("pass_options"):       # checked now (warnings), recorded on entry
            passopts.jit_options(groups["pass_options"], passopts.caller_loc())
        if conv_tile_shapes is not None:      # recorded: conv picks its own tiles
            set_conv_tile_shapes(*(conv_tile_shapes if isinstance(conv_tile_shapes,
                                                                  (list, tuple)) else
                                   [conv_tile_shapes]))

    def __enter__(self):
        if self.groups.get("pass_options"):      # recorded where they apply: now
            self.saved = passopts.snapshot()
            check_options("pypto.options", self.groups, passopts.caller_loc())
        if _current:
            from . import ops
            if self.vec is not None:
                ops.set_vec_tile_shapes(*self.vec)
            if self.cube is not None:
                ops.set_cube_tile_shapes(*self.cube)
            if self.matrix is not None:
                ops.set_matrix_size(self.matrix)
        return self

    def __exit__(self, *exc):
        if self.saved is not None and not _current:    # settings for later kernels end here
            passopts.restore(self.saved)
        return False

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapped(*a, **k):
            with self:
                return fn(*a, **k)
        return wrapped


def set_options(codegen_options=None, host_options=None, pass_options=None,
                runtime_options=None, verify_options=None, debug_options=None,
                operation_options=None, vec_tile_shapes=None, cube_tile_shapes=None,
                conv_tile_shapes=None, matrix_size=None) -> None:
    """set_options(pass_options=..., runtime_options=..., vec_tile_shapes=..., ...), with
    the reference's parameters in its order."""
    options("", codegen_options, host_options, pass_options, runtime_options, verify_options,
            operation_options, debug_options, vec_tile_shapes, cube_tile_shapes,
            conv_tile_shapes, matrix_size).__enter__()


def set_pass_options(**kv) -> None:
    """The reference's pass knobs, mapped onto pypto-lower pass options (nbuffer, l1-reuse,
    ooo-schedule, mix-fuse; sg_set_scope scopes the ops traced after it for fuse) and
    recorded in the traced document; the rest warn naming them (frontend/passopts.py)."""
    unknown = sorted(set(kv) - set(passopts.KNOBS))
    if unknown:
        raise TypeError(f"set_pass_options() got unexpected keyword(s) {', '.join(unknown)} "
                        f"(the reference's: {', '.join(passopts.KNOBS)})")
    passopts.set_knobs(kv, passopts.caller_loc())
    _SET["pass_options"].update({k: v for k, v in kv.items() if v is not None})


def _setter(group: str):
    def fn(**kv) -> None:
        check_options(f"set_{group}", {group: kv})
        _SET[group].update(kv)
    fn.__name__ = f"set_{group}"
    fn.__doc__ = f"The reference's {group}: a warning naming each key (not implemented)."
    return fn


def _getter(group: str):
    def fn() -> dict:
        return dict(_SET[group])
    fn.__name__ = f"get_{group}"
    fn.__doc__ = f"The {group} set so far (recorded; see set_{group})."
    return fn


get_pass_options = _getter("pass_options")
get_host_options = _getter("host_options")
get_codegen_options = _getter("codegen_options")
get_runtime_options = _getter("runtime_options")
get_verify_options = _getter("verify_options")
get_debug_options = _getter("debug_options")


def reset_options() -> None:
    """Forget every option set with set_*_options (the pass settings for later kernels too)."""
    for g in _SET.values():
        g.clear()
    passopts.reset()


def set_conv_tile_shapes(tile_l1_info=None, tile_l0_info=None) -> None:
    """The reference's conv tiles: recorded; pypto's conv picks its tiles (frontend/conv.py)."""
    from .conv import set_conv_tile_shapes as record
    record(tile_l1_info, tile_l0_info)


def get_conv_tile_shapes():
    from .conv import get_conv_tile_shapes as recorded
    return recorded()


def set_pass_default_config(key, value) -> None:
    """set_pass_default_config(PassConfigKey.KEY_DUMP_GRAPH, True): pypto-lower prints the IR
    after every pass (--print-after-all) for the kernels traced after it."""
    passopts.set_default_config(key, value)


def get_pass_default_config(key, default_value=False):
    """KEY_DUMP_GRAPH: whether set_pass_default_config asked for every pass's result."""
    return passopts.get_default_config(key, default_value)


def get_pass_config(strategy, identifier, key, default_value=False):
    """The value set_pass_config (or a mapped knob) gave this pass option, else default."""
    return passopts.get_configs(identifier).get(key, default_value)


def get_pass_configs(strategy, identifier) -> dict:
    """Every option set for the pass so far (option name -> value)."""
    return passopts.get_configs(identifier)


set_host_options = _setter("host_options")
set_codegen_options = _setter("codegen_options")
set_runtime_options = _setter("runtime_options")
set_verify_options = _setter("verify_options")
set_debug_options = _setter("debug_options")


def set_pass_config(strategy: str, identifier: str, key, value) -> None:
    """A pass option for pypto-lower: identifier is a pypto pass (fuse, tensor-to-tile, ...)
    or the reference's name of one (GraphPartition, NBufferMerge, ...), key an option of it
    (`set_pass_config("", "fuse", "enable", False)` is fuse{enable=false}) or
    PassConfigKey.KEY_DUMP_GRAPH (print its result: --print-after); strategy is not used
    (pypto has one pipeline). Anything else warns naming it."""
    passopts.set_config(strategy, identifier, key, value, passopts.caller_loc())


def set_semantic_label(label: str) -> None:
    """Names the ops traced after it (the reference shows it in its profiles)."""
    if not isinstance(label, str):
        raise CompileError(f"set_semantic_label takes a string, not {type(label).__name__}")
    if _current:
        _current[-1].label = label
