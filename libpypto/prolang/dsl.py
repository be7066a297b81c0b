"""The declarations of Pro mode: dtypes, dims, memory spaces, layouts, pipes, phases, sync
modes, tile types, tensor annotations, TilingKey fields and runtime scalars.

Names and argument orders follow PyPTO Pro (`pypto_pro.language`, reference page section 1).
Choices where the reference is silent (also in the README, "Pro mode"):

- `MemorySpace` maps to the block level's spaces: Vec -> ub, Mat -> l1, Left -> l0a,
  Right -> l0b, Acc -> l0c, Bias -> bias (the bias table: [1, N] fp32/int32 tiles, 32-byte
  aligned, 1 KiB on a2/a3 and 4 KiB on the 950: BIAS_BYTES), ScaleLeft -> scale_left and
  ScaleRight -> scale_right (the 950's MX scale buffers: E8M0 tiles, 4 KiB each,
  SCALE_BYTES; ops_more.py). `Scaling` exists as a name but a tile in it is refused.
- `ReluPreMode`, `AtomicType`, `AccToVecMode`: the options of pl.store / pl.move (ops.py).
- Layouts (ND, DN, NZ, ZN) are recorded and checked, never change the numbers: on the host a
  tile is stored row-major whatever its layout (a fractal layout is an address pattern of the
  hardware, not a value). DN marks a column tile ([R, 1]); the 32-byte alignment rule then
  applies to its rows instead of its columns.
- `AccPhase` / `STPhase` are accepted and recorded: the host accumulator is exact whatever the
  phase.
- A runtime scalar parameter (annotated with a dtype) is a symbol of the program; integer
  scalars take part in index arithmetic, float scalars only as the scalar of a tile-scalar op.
"""
from __future__ import annotations

import enum

from ..errors import CompileError
from ..ir import expr as E
from ..ir.symops import SymOps, int_expr
from ..ir.types import DTYPES, DType

for _d in DTYPES.values():
    globals()[_d.api] = _d
DT_FP32, DT_FP16, DT_BF16 = DTYPES["f32"], DTYPES["f16"], DTYPES["bf16"]
DT_INT8, DT_INT32, DT_INT64 = DTYPES["i8"], DTYPES["i32"], DTYPES["i64"]


class _Dim:
    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"pl.{self.name}"


DYNAMIC = _Dim("DYNAMIC")
STATIC = _Dim("STATIC")


class MemorySpace(enum.Enum):
    DDR = "gm"
    Vec = "ub"
    Mat = "l1"
    Left = "l0a"
    Right = "l0b"
    Acc = "l0c"
    Bias = "bias"
    Scaling = "scaling"
    ScaleLeft = "scale_left"
    ScaleRight = "scale_right"


class TileLayout(enum.Enum):
    ND = "ND"
    DN = "DN"
    NZ = "NZ"
    ZN = "ZN"
    ZZ = "ZZ"       # the MX scale layouts (E8M0 tiles in Mat / ScaleLeft / ScaleRight)
    NN = "NN"


ND, DN, NZ, ZN = TileLayout.ND, TileLayout.DN, TileLayout.NZ, TileLayout.ZN
ZZ, NN = TileLayout.ZZ, TileLayout.NN


class PipeType(enum.Enum):
    MTE1 = "MTE1"
    MTE2 = "MTE2"
    MTE3 = "MTE3"
    M = "M"
    V = "V"
    FIX = "FIX"
    S = "S"
    ALL = "ALL"


class AccPhase(enum.Enum):
    Partial = "Partial"
    Final = "Final"


class STPhase(enum.Enum):
    Partial = "Partial"
    Final = "Final"


class ReluPreMode(enum.Enum):
    """relu_pre_mode= of pl.store / pl.move from Acc (the fixpipe's ReLU)."""
    NormalRelu = "NormalRelu"


class AtomicType(enum.Enum):
    """atomic= of pl.store: overwrite (AtomicNone) or add into GM (AtomicAdd)."""
    AtomicNone = "AtomicNone"
    AtomicAdd = "AtomicAdd"


class TilePad(enum.Enum):
    """pad= of a TileType: what pl.fillpad writes outside the valid region (floats: +-inf for
    max / min, integers: the dtype's extremes)."""
    null = "null"
    zero = "zero"
    max = "max"
    min = "min"


class FillPadMode(enum.Enum):
    """mode= of pl.fillpad."""
    NORMAL = "NORMAL"
    EXPAND = "EXPAND"
    INPLACE = "INPLACE"


class QuantMode(enum.Enum):
    """mode= of pl.quant: symmetric (int8) or asymmetric (uint8, with an offset)."""
    SYM = "SYM"
    ASYM = "ASYM"


class AccToVecMode(enum.Enum):
    """acc_to_vec_mode= of pl.move Acc -> Vec (A5's direct AIC -> AIV path: the cube writes
    its vector cores' UB; pipeline.acc_to_vec)."""
    SingleModeVec0 = "SingleModeVec0"
    SingleModeVec1 = "SingleModeVec1"
    DualModeSplitM = "DualModeSplitM"
    DualModeSplitN = "DualModeSplitN"


class CrossCoreSyncMode(enum.Enum):
    INTER_BLOCK = "INTER_BLOCK"
    INTER_SUBBLOCK = "INTER_SUBBLOCK"
    INTRA_BLOCK = "INTRA_BLOCK"
    UNICAST_BLOCK = "UNICAST_BLOCK"


SyncMode = CrossCoreSyncMode


class SyncCoreType(enum.Enum):
    """pl.system.sync_all(core_type=): which cores a grid-wide barrier joins."""
    MIX = "MIX"
    AIV_ONLY = "AIV_ONLY"
    AIC_ONLY = "AIC_ONLY"


class SyncAllMode(enum.Enum):
    """pl.system.sync_all(mode=): HARD (FFTS signals) or SOFT (GM polling, needs workspaces)."""
    HARD = "HARD"
    SOFT = "SOFT"

# byte alignment of a tile address per space (make_tile.md)
# (Bias: the bias table, 32 B as every on-chip buffer in buffer_limits.hpp; hardware-model.md)
ALIGN = {"ub": 32, "l1": 32, "l0a": 512, "l0b": 512, "l0c": 64, "bias": 32,
         "scale_left": 32, "scale_right": 32}
DEFAULT_LAYOUT = {"ub": TileLayout.ND, "l1": TileLayout.NZ, "l0a": TileLayout.NZ,
                  "l0b": TileLayout.ZN, "l0c": TileLayout.NZ, "bias": TileLayout.ND,
                  "scale_left": TileLayout.ZZ, "scale_right": TileLayout.NN}
# the 950's ScaleLeft / ScaleRight: 4 KiB each beside L0A / L0B (MemorySpace.md), scale
# address = data address >> 4; a5 only (prolang/ops_more.py)
SCALE_BYTES = 4096
# the bias table's bytes per arch (hardware-model.md: 1 KiB on A2/A3, 4 KiB on the 950): the
# target files do not list it (Tensor mode never uses it), so Pro mode adds it
BIAS_BYTES = {"a2": 1024, "a3": 1024, "950": 4096}


class TileType:
    """pl.TileType(shape, dtype, target_memory=pl.MemorySpace.Vec, valid_shape=None,
    layout=None, fractal=None, pad=None, compact=None): a 2-D tile's static shape and type.
    valid_shape: ints, or -1 for a value set at run time by pl.set_validshape."""

    def __init__(self, shape, dtype, target_memory=MemorySpace.Vec, valid_shape=None,
                 layout=None, fractal=None, pad=None, compact=None):
        if not (isinstance(shape, (list, tuple)) and len(shape) == 2 and
                all(isinstance(d, int) and d > 0 for d in shape)):
            raise CompileError(f"TileType shape must be two positive ints, not {shape!r}")
        if not isinstance(dtype, DType):
            raise CompileError(f"TileType dtype must be a pl.DT_* dtype, not {dtype!r}")
        if not isinstance(target_memory, MemorySpace):
            raise CompileError(f"TileType target_memory must be a pl.MemorySpace, not "
                               f"{target_memory!r}")
        if target_memory.value not in ALIGN:
            raise CompileError(f"tiles in MemorySpace.{target_memory.name} are not supported "
                               f"yet (use Vec, Mat, Left, Right, Acc, Bias, ScaleLeft or "
                               f"ScaleRight)")
        if target_memory.value.startswith("scale_") and dtype.name != "e8m0":
            raise CompileError(f"a {target_memory.name} tile holds MX scales: pl.DT_FP8E8M0, "
                               f"not {dtype}")
        if target_memory is MemorySpace.Bias and (shape[0] != 1 or dtype.name not in
                                                   ("f32", "i32")):
            raise CompileError(f"a Bias tile is one row of the accumulator's dtype: [1, N] "
                               f"fp32 or int32, not {list(shape)} {dtype}")
        self.shape, self.dtype, self.space = tuple(shape), dtype, target_memory.value
        self.memory = target_memory
        self.valid_shape = None if valid_shape is None else list(valid_shape)
        if self.valid_shape is not None and (len(self.valid_shape) != 2 or any(
                not isinstance(v, int) or v < -1 or v == 0 or v > s
                for v, s in zip(self.valid_shape, self.shape))):
            raise CompileError(f"TileType valid_shape must be two ints in [1, shape] or -1, not "
                               f"{valid_shape!r}")
        self.layout = layout if layout is not None else DEFAULT_LAYOUT[self.space]
        if not isinstance(self.layout, TileLayout):
            raise CompileError(f"TileType layout must be pl.ND, pl.DN, pl.NZ, pl.ZN, pl.ZZ or "
                               f"pl.NN, not {layout!r}")
        self.fractal, self.pad, self.compact = fractal, pad, compact

    @property
    def nbytes(self) -> int:
        return self.shape[0] * self.shape[1] * self.dtype.itemsize

    def __repr__(self) -> str:
        return (f"pl.TileType({list(self.shape)}, {self.dtype!r}, "
                f"MemorySpace.{self.memory.name}, layout={self.layout.name})")


class DTypeVar:
    """A dtype variable of `@pl.jit(datatype={param: "T"})` in a parameter annotation:
    `pl.Tensor[[dims], "T"]` (or `T` under `from __future__ import annotations`). The launch's
    dtype dict gives its value; in the body the name T is that pl.DT_* dtype."""

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return self.name


def dtype_named(v):
    """A pl.DT_* dtype from a dtype, or a name: "f16", "fp16", "DT_FP16" (None if not one)."""
    if isinstance(v, DType):
        return v
    if not isinstance(v, str):
        return None
    low = v.lower().removeprefix("pl.").removeprefix("dt_")
    for d in DTYPES.values():
        if low in (d.name, d.api.lower().removeprefix("dt_")):
            return d
    return None


class TensorSpec:
    """A GM tensor parameter: pl.Tensor[[dims], dtype]; dims int, pl.DYNAMIC or pl.STATIC;
    dtype a pl.DT_* dtype or a datatype= variable (a name string or a DTypeVar)."""

    def __init__(self, shape, dtype):
        if not isinstance(shape, (list, tuple)) or not shape:
            raise TypeError("pl.Tensor takes a list of dims and a dtype: "
                            "pl.Tensor[[pl.DYNAMIC, 64], pl.DT_FP32]")
        for d in shape:
            if not ((isinstance(d, int) and d > 0) or d is DYNAMIC or d is STATIC):
                raise TypeError(f"bad dim {d!r}: use a positive int, pl.DYNAMIC or pl.STATIC")
        if isinstance(dtype, str) and dtype.isidentifier():
            dtype = DTypeVar(dtype)
        if not isinstance(dtype, (DType, DTypeVar)):
            raise TypeError(f"bad dtype {dtype!r}: use pl.DT_FP32 and friends, or the name of "
                            f"a @pl.jit(datatype=...) variable")
        self.shape, self.dtype = list(shape), dtype

    def __repr__(self) -> str:
        return f"pl.Tensor[{self.shape!r}, {self.dtype!r}]"


class Tensor:
    """Annotation factory: pl.Tensor[[pl.DYNAMIC, 1024], pl.DT_FP32]."""

    def __class_getitem__(cls, item):
        if not (isinstance(item, tuple) and len(item) == 2):
            raise TypeError("pl.Tensor takes a list of dims and a dtype: "
                            "pl.Tensor[[pl.DYNAMIC, 64], pl.DT_FP32]")
        return TensorSpec(*item)


class TilingKeyField:
    """One field of a TilingKey class: `bits` wide, taking one of `values`; the launch dict
    gives the value, the stored bits are its index in values (reference section 2.3)."""

    def __init__(self, bits: int, values):
        values = list(values)
        if not isinstance(bits, int) or bits < 1 or not values or len(values) > (1 << bits):
            raise CompileError(f"TilingKeyField(bits={bits!r}, values={values!r}): values must "
                               f"be a non-empty list of at most 2**bits entries")
        self.bits, self.values = bits, values


class Scalar(SymOps):
    """A runtime scalar at trace time: an expression over the block index, shapes, loop
    variables and scalar parameters, with + - * // % , comparisons, & | ~."""

    __slots__ = ("e",)

    def __init__(self, e):
        self.e = e

    def __repr__(self) -> str:
        return f"Scalar({E.to_str(self.e)})"

    def _operand(self, other):
        return expr_of(other)

    def _result(self, e):
        return wrap(e)

    def __rand__(self, o): return self._bin(o, E.logical_and, True)
    def __ror__(self, o): return self._bin(o, E.logical_or, True)

    def __index__(self):
        raise CompileError(f"runtime value {E.to_str(self.e)} used where a compile-time int is "
                           f"needed (use pl.range for a runtime loop)")

    __int__ = __index__

    def __bool__(self):
        raise CompileError(f"runtime value {E.to_str(self.e)} used as a Python truth value "
                           f"outside an `if` test (use if/elif/else or pl.min/pl.max)")


def expr_of(v):
    """The expression of an int, a bool or a Scalar (None for anything else)."""
    return int_expr(v, Scalar)


def wrap(e):
    """An int stays an int; an expression becomes a Scalar."""
    return e if isinstance(e, int) else Scalar(e)


# simt.py registers itself here (it sits above this module): pl.min / pl.max and pl.range
# consult it while a SIMT function body is traced
SIMT = None


def min(a, b):   # noqa: A001 -- pl.min, as in Pro
    """pl.min(a, b): the smaller of two scalars (runtime or not)."""
    return _minmax(E.minimum, a, b, "min")


def max(a, b):   # noqa: A001 -- pl.max, as in Pro
    """pl.max(a, b): the larger of two scalars."""
    return _minmax(E.maximum, a, b, "max")


def _minmax(fn, a, b, name):
    ea, eb = expr_of(a), expr_of(b)
    if (ea is None or eb is None) and SIMT is not None and SIMT.active():
        return SIMT.minmax(name, a, b)      # per-thread values of a SIMT function
    if ea is None or eb is None:
        raise CompileError(f"pl.{name} takes two integer scalars, not {a!r} and {b!r} (for "
                           f"tiles use pl.maximum / pl.minimum)")
    return wrap(fn(ea, eb))
