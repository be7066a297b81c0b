"""Op definitions (libpypto/ir/defs.py): every defined op has every implementation it needs,
every implementation belongs to a defined op, and the tables others used to hand-list are
derived from the definitions."""
from __future__ import annotations

import inspect

import pytest

from libpypto.codegen import c as C
from libpypto.codegen import numpy_backend
from libpypto.frontend import catalogue
from libpypto.ir import ops as O
from libpypto.ir.defs import OPS, check_op
from libpypto.ir.opdef import IDENT
from libpypto.passes.tensor_to_tile import _Expander
from libpypto.runtime import npkern
from libpypto.runtime.interp import _Interp

TENSOR = sorted(n for n, d in OPS.items() if "tensor" in d.where and n not in ("loop", "if"))
INSTRS = sorted(n for n, d in OPS.items() if d.pipe is not None)
RENDERER = C._Program


def test_every_op_is_defined_once_with_a_valid_name():
    assert all(IDENT.match(n) for n in OPS)
    assert set(O.ELEMENTWISE) <= set(OPS)
    assert {"t" + n for n in O.ELEMENTWISE} <= set(OPS)


@pytest.mark.parametrize("name", TENSOR)
def test_tensor_ops_have_a_tracer_a_tiling_rule_and_a_meaning(name):
    impl = OPS[name].impl
    assert impl["trace"] == "" or impl["trace"] in catalogue.CATALOGUE, impl["trace"]
    assert callable(getattr(_Expander, impl["tile"], None)), impl["tile"]
    assert callable(getattr(_Interp, impl["interp"], None)), impl["interp"]


@pytest.mark.parametrize("name", INSTRS)
def test_tile_instructions_have_c_numpy_and_a_mnemonic(name):
    d = OPS[name]
    assert callable(getattr(RENDERER, d.impl["c"], None)), d.impl["c"]
    assert callable(getattr(npkern, d.impl["numpy"], None)), d.impl["numpy"]
    assert d.pto and d.pto == d.pto.upper()
    assert d.attrs["pipe"][1] is False        # assigned by assign-memory, optional before


def _methods(cls, prefix: str) -> set:
    return {n for n, _ in inspect.getmembers(cls, callable) if n.startswith(prefix)}


def test_no_implementation_without_an_op():
    """An x_, op_ or i_ method (or an npkern function) that no definition names is dead code
    or an op somebody forgot to define."""
    used = {k: {d.impl.get(k) for d in OPS.values()} for k in ("tile", "interp", "c", "numpy")}
    assert _methods(_Expander, "x_") <= used["tile"]
    assert _methods(_Interp, "op_") <= used["interp"]
    assert _methods(RENDERER, "i_") <= used["c"]
    kernels = {n for n, f in vars(npkern).items() if inspect.isfunction(f) and
               f.__module__ == npkern.__name__ and n.startswith("t")}
    assert kernels <= used["numpy"]


def test_the_numpy_programs_import_every_kernel_an_instruction_names():
    header = "".join(numpy_backend._imports())
    for d in OPS.values():
        if "numpy" in d.impl:
            assert d.impl["numpy"] in header


def test_tile_instruction_destinations(ex):
    """writes/reads_dest: dests and sources of real instructions partition their tiles."""
    from libpypto.ir.instr import dests, sources
    from libpypto.ir.types import TileType
    seen = set()
    for name in ("softmax", "matmul", "reductions", "transforms"):
        for op in ex.doc(name, "exec").walk():
            if op.name in INSTRS:
                tiles = [v for v in op.operands if isinstance(v.type, TileType)]
                assert set(dests(op)) | set(sources(op)) == set(tiles), op.name
                seen.add(op.name)
    assert {"tload", "tstore", "tmatmul", "treduce", "texp"} <= seen


def test_check_op_reports_through_err(ex):
    doc = ex.doc("softmax", "tensor")
    exp = next(op for op in doc.body if op.name == "exp")
    got = []
    assert check_op(exp, "tensor", got.append) and got == []
    exp.attrs["tile"] = "wide"
    assert not check_op(exp, "tensor", got.append)
    assert got == ["exp tile must be a list of an int >= 1, not 'wide'"]
    got.clear()
    assert not check_op(exp, "tile", got.append)
    assert got == ["unknown tile instruction 'exp'"]
