"""pypto: trace, lower, schedule, emit, run and profile PTO operators (import libpypto as pypto).

Attributes load lazily so that the command-line tools start fast: importing this package
imports neither numpy nor networkx.
"""
from __future__ import annotations

from importlib import import_module

from .errors import RELEASE as __version__

_TENSOR = "libpypto.frontend.tensor"
_CATALOGUE = "libpypto.frontend.catalogue"
_LAZY = {
    # op-file API (DESIGN.md section 3): declarations and control flow here, ops below
    **{n: _TENSOR for n in (
        "Tensor", "DYNAMIC", "DYN", "STATIC", "SymScalar",
        "DT_FP32", "DT_FP16", "DT_BF16", "DT_INT8", "DT_INT16", "DT_INT32", "DT_INT64",
        "DT_UINT8", "DT_UINT16", "DT_UINT32", "DT_UINT64", "DT_BOOL", "DT_FP8E4M3",
        "DT_FP8E4M3FN", "DT_FP8E5M2", "DT_FP8E8M0", "loop", "loop_unroll", "is_loop_begin", "is_loop_end", "cond")},
    **{n: "libpypto.frontend.enums" for n in (
        "CastMode", "SaturationMode", "PrecisionType", "TileOpFormat", "CachePolicy",
        "LogBaseType", "TopKAlgo", "ScatterMode", "ReduceMode", "ReLuType", "TransMode",
        "OpType", "OutType", "DataType")},
    **{n: "libpypto.frontend.config" for n in (
        "RunMode", "options", "set_options", "set_pass_options", "set_pass_config",
        "set_semantic_label", "set_host_options", "set_codegen_options",
        "set_runtime_options", "set_verify_options", "set_debug_options", "get_pass_options",
        "get_host_options", "get_codegen_options", "get_runtime_options",
        "get_verify_options", "get_debug_options", "reset_options", "set_conv_tile_shapes",
        "get_conv_tile_shapes", "set_pass_default_config", "get_pass_default_config",
        "get_pass_config", "get_pass_configs")},
    "PassConfigKey": "libpypto.frontend.passopts",
    "DT_INT4": "libpypto.frontend.int4",
    "function": "libpypto.frontend.verify",
    "ConvReLuType": "libpypto.frontend.conv",
    **{n: "libpypto.frontend.mx" for n in ("DequantScaleRoundingMode", "ROUND_DOWN",
                                            "ROUND_UP")},
    "Element": "libpypto.frontend.api",
    "experimental": "libpypto.frontend.quant",
    "Kernel": "libpypto.frontend.kernel",
    "jit": "libpypto.jit",
    # library (one call per tool)
    "trace": "libpypto.driver", "lower": "libpypto.driver", "schedule": "libpypto.driver",
    "emit": "libpypto.driver", "run": "libpypto.driver", "profile": "libpypto.driver",
    "read_ir": "libpypto.driver", "write_ir": "libpypto.driver",
    "PyptoError": "libpypto.errors", "CompileError": "libpypto.errors",
}


_SUBMODULES = {"errors", "driver", "ir", "frontend", "prolang", "pro", "passes", "sched",
               "codegen", "runtime",
               "sim", "prof", "targets", "cli", "analysis"}


def _frontend_getattr(name: str):
    # pypto.frontend.jit is pypto.jit (the reference's models spell it so)
    if name == "jit":
        return import_module("libpypto.jit").jit
    if name == "function":
        return import_module("libpypto.frontend.verify")._frontend_function
    raise AttributeError(f"module 'libpypto.frontend' has no attribute {name!r}")


import_module("libpypto.frontend").__getattr__ = _frontend_getattr


def __getattr__(name: str):
    if name in _SUBMODULES:
        return import_module(f"libpypto.{name}")
    target = _LAZY.get(name)
    if target is not None:
        value = getattr(import_module(target), name)
    else:      # the op catalogue: pypto.exp, pypto.matmul, ...
        value = import_module(_CATALOGUE).CATALOGUE.get(name)
        if value is None and name.startswith("DT_"):
            enums = import_module("libpypto.frontend.enums")
            if name in enums.UNSUPPORTED_DTYPES:
                raise enums.unsupported_dtype(name)
        if value is None:
            raise AttributeError(f"module 'libpypto' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__():
    return sorted(list(globals()) + list(_LAZY) + list(import_module(_CATALOGUE).CATALOGUE))
