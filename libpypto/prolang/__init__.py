"""Pro mode's language: the names a Pro kernel body uses (`import libpypto.pro as pl`
re-exports them with `pl.jit`). Tracing only: nothing here runs a kernel.

See dsl.py (types, enums, scalars), state.py (sections, block index, pl.range, branches),
rewrite.py (the AST step), tiles.py (make_tile, make_tile_group, the buffer plan checks),
ops.py (instructions), simt.py (pl.simt: SIMT thread blocks), system.py (pl.system
synchronisation), vf.py and vf_api.py (Reg computation: @pl.vector_function, pl.Vf),
datatype.py (@pl.jit(datatype=)), kernel.py (signature, trace, the block-level document),
pipeline.py (pl.pipeline: automatic cube/vector pipelining, the L0C -> UB move), debug.py
(printf, pto_assert, dump_data, trap), sugar.py (const, struct, make_tuple, Array).
"""
from __future__ import annotations

from . import pipeline, simt, system
from .debug import dump_data, printf, pto_assert, trap
from .pipeline import PipelineConfig
from .sugar import Array, const, make_tuple, struct, struct_array
from .dsl import (DN, DT_BF16, DT_FP16, DT_FP32, DT_INT8, DT_INT32, DT_INT64, DYNAMIC,
                  ND, NZ, STATIC, ZN, AccPhase, AccToVecMode, AtomicType, CrossCoreSyncMode,
                  MemorySpace, PipeType, ReluPreMode, Scalar, STPhase, SyncAllMode,
                  SyncCoreType, SyncMode, Tensor, TileLayout, TileType, TilingKeyField, max,
                  min)
from .dsl import NN, ZZ, FillPadMode, QuantMode, TilePad
from .dsl import DTYPES as _DTYPES
from .kernel import ProKernel  # noqa: F401 -- for libpypto.pro
from .simt import Tile
from .ops import (abs, add, and_, cast, div, eq, exp, expand_add, expand_div, expand_max,
                  expand_min, expand_mul, expand_sub, expands, ge, gt, insert, le, load,
                  load_tile, log,
                  lt, matmul, matmul_acc, maximum, minimum, move, mul, ne, neg, or_, recip,
                  relu, rsqrt, select, sqrt, store, store_tile, sub, sum)
from . import ops_more as _more
from .state import (get_block_idx, get_block_num, get_subblock_idx, get_subblock_num,
                    section_cube, section_vector)
from .state import range_ as range
from .tiles import make_tile, make_tile_group, set_validshape
from .vf import ENUMS as _VF_ENUMS
from .vf_api import REG_NAMES as _REG_NAMES

for _d in _DTYPES.values():
    globals()[_d.api] = _d
globals().update(_VF_ENUMS)          # Reg computation (vf.py, vf_api.py): pl.MaskPattern, ...
globals().update(_REG_NAMES)         # pl.Vf (also pl.vf), pl.vector_function, RegTensor, MaskReg
vf = _REG_NAMES["Vf"]
globals().update({_n: getattr(_more, _n) for _n in _more.__all__})   # ops_more.py

__all__ = ['AccPhase', 'AccToVecMode', 'AtomicType', 'CrossCoreSyncMode', 'ReluPreMode',
           'DN', 'DT_BF16', 'DT_BOOL', 'DT_FP16', 'DT_FP32',
           'DT_INT16', 'DT_INT32', 'DT_INT64', 'DT_INT8', 'DT_UINT8', 'DYNAMIC',
           'MemorySpace', 'ND', 'NZ', 'PipeType', 'ProKernel', 'STATIC', 'STPhase', 'Scalar',
           'SyncAllMode', 'SyncCoreType', 'SyncMode', 'Tensor', 'Tile', 'TileLayout', 'TileType', 'TilingKeyField', 'ZN', 'abs',
           'add', 'and_', 'cast', 'div', 'eq', 'exp', 'expand_add', 'expand_div',
           'expand_max', 'expand_min', 'expand_mul', 'expand_sub', 'expands', 'ge',
           'get_block_idx', 'get_block_num', 'get_subblock_idx', 'get_subblock_num', 'gt',
           'insert', 'le', 'load', 'load_tile', 'log', 'lt', 'make_tile', 'make_tile_group',
           'matmul', 'matmul_acc', 'max', 'maximum', 'min', 'minimum', 'move', 'mul', 'ne',
           'neg', 'or_', 'range', 'recip', 'relu', 'rsqrt', 'section_cube', 'section_vector',
           'select', 'set_validshape', 'simt', 'sqrt', 'store', 'store_tile', 'sub', 'sum', 'system',
           'pipeline', 'PipelineConfig']
__all__ += ['dump_data', 'printf', 'pto_assert', 'trap']   # debug.py
__all__ += ['Array', 'const', 'make_tuple', 'struct', 'struct_array']   # sugar.py
__all__ += sorted(_VF_ENUMS) + sorted(_REG_NAMES) + ['vf', 'DT_UINT16', 'DT_UINT32',
                                                     'DT_UINT64']
__all__ += ['NN', 'ZZ', 'QuantMode', 'DT_FP8E4M3FN', 'DT_FP8E5M2', 'DT_FP8E8M0',   # ops_more.py
            'matmul_mx', 'matmul_mx_acc', 'quant', 'dequant',
            'gather', 'scatter', 'sort32', 'mrgsort', 'histogram', 'argmax', 'argmin',
            'add_relu', 'sub_relu', 'addc', 'mul_add_dst', 'fused_mul_add',
            'fused_mul_add_relu', 'axpy', 'shl', 'shr', 'xor', 'add_relu_cast',
            'sub_relu_cast', 'mul_cast', 'fillpad', 'FillPadMode', 'TilePad']
