"""pypto: trace, lower, schedule, emit, run and profile PTO operators (import libpypto as pypto).

Attributes load lazily so that the command-line tools start fast: importing this package
imports neither numpy nor networkx.
"""
from __future__ import annotations

from importlib import import_module

__version__ = "0.1.0"

_FRONTEND = "libpypto.frontend.tensor"
_LAZY = {
    # op-file API (DESIGN.md section 3)
    **{n: _FRONTEND for n in (
        "jit", "Tensor", "DYNAMIC", "DYN", "STATIC", "Kernel",
        "DT_FP32", "DT_FP16", "DT_BF16", "DT_INT8", "DT_INT16", "DT_INT32", "DT_INT64",
        "DT_UINT8", "DT_BOOL",
        "add", "sub", "mul", "div", "maximum", "minimum", "neg", "exp", "log", "sqrt", "rsqrt",
        "tanh", "sigmoid", "relu", "sum", "amax", "amin", "cast", "matmul", "view", "assemble",
        "set_vec_tile_shapes", "get_vec_tile_shapes", "set_cube_tile_shapes")},
    "abs": (_FRONTEND, "abs_"),
    # library (one call per tool)
    "trace": "libpypto.driver", "lower": "libpypto.driver", "schedule": "libpypto.driver",
    "emit": "libpypto.driver", "run": "libpypto.driver", "profile": "libpypto.driver",
    "read_ir": "libpypto.driver", "write_ir": "libpypto.driver",
    "PyptoError": "libpypto.errors", "CompileError": "libpypto.errors",
}


def __getattr__(name: str):
    target = _LAZY.get(name)
    if target is None:
        raise AttributeError(f"module 'libpypto' has no attribute {name!r}")
    module, attr = target if isinstance(target, tuple) else (target, name)
    value = getattr(import_module(module), attr)
    globals()[name] = value
    return value


def __dir__():
    return sorted(list(globals()) + list(_LAZY))
