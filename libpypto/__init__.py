"""pypto: trace, lower, schedule, emit, run and profile PTO operators (import libpypto as pypto).

Attributes load lazily so that the command-line tools start fast: importing this package
imports neither numpy nor networkx.
"""
from __future__ import annotations

from importlib import import_module

__version__ = "0.1.0"

_TENSOR = "libpypto.frontend.tensor"
_OPS = "libpypto.frontend.ops"
_LAZY = {
    # op-file API (DESIGN.md section 3): declarations and control flow here, ops below
    **{n: _TENSOR for n in (
        "jit", "Tensor", "DYNAMIC", "DYN", "STATIC", "Kernel", "SymScalar",
        "DT_FP32", "DT_FP16", "DT_BF16", "DT_INT8", "DT_INT16", "DT_INT32", "DT_INT64",
        "DT_UINT8", "DT_BOOL", "loop", "loop_unroll", "is_loop_begin", "is_loop_end", "cond")},
    "abs": (_OPS, "abs_"),
    # library (one call per tool)
    "trace": "libpypto.driver", "lower": "libpypto.driver", "schedule": "libpypto.driver",
    "emit": "libpypto.driver", "run": "libpypto.driver", "profile": "libpypto.driver",
    "read_ir": "libpypto.driver", "write_ir": "libpypto.driver",
    "PyptoError": "libpypto.errors", "CompileError": "libpypto.errors",
}


_SUBMODULES = {"errors", "driver", "ir", "frontend", "passes", "sched", "codegen", "runtime",
               "sim", "prof", "targets", "cli"}


def __getattr__(name: str):
    if name in _SUBMODULES:
        return import_module(f"libpypto.{name}")
    target = _LAZY.get(name)
    if target is None:
        if name.startswith("_"):
            raise AttributeError(f"module 'libpypto' has no attribute {name!r}")
        target = _OPS      # the op catalogue: pypto.exp, pypto.matmul, ...
        if not hasattr(import_module(_OPS), name):
            raise AttributeError(f"module 'libpypto' has no attribute {name!r}")
    module, attr = target if isinstance(target, tuple) else (target, name)
    value = getattr(import_module(module), attr)
    globals()[name] = value
    return value


def __dir__():
    return sorted(list(globals()) + list(_LAZY))
