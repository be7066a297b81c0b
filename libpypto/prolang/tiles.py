"""Tiles at user-chosen buffer addresses: pl.make_tile, pl.make_tile_group, valid shapes,
and the compile-time checks of the buffer plan.

A tile is a TileType placed at a byte offset of its memory space (`addr`, checked against
the space's alignment: Vec/Mat 32 B, Left/Right 512 B, Acc 64 B) reserving `size` bytes
(default rows * cols * itemsize; more may be reserved, never less). It must fit the space's
buffer on the target used for capacity (a2 unless the kernel's `arch` names another). Two
tiles whose byte ranges overlap while both are live (between their first and last use in
the traced program, in one section) are an error naming both and their lines.

A tile group holds N slots of one type at `addrs` (a base: slot i at base + i * size, or a
list of N addresses); `.next()` advances the group's slot counter (a runtime value, see
state.py), `.current()` is the slot of the last `.next()` (slot 0 before any), `.previous()`
the one before it, `g[i]` slot i. With `mutex_ids` (one id, or a list of ids, per slot) and
`@pl.jit(auto_mutex=True)` every instruction on a slot is wrapped in mutex_lock /
mutex_unlock of the slot's id on the instruction's pipe (ops.py). With `fwd_ids` and
`bwd_ids` a group is a ring between a cube and a vector stage of a pipelined loop
(pipeline.py); elsewhere they are ignored. Slot counters are per core (state.py).

Subviews: `tile[r0:r1, c0:c1]` (subview below) is a tile over the parent's bytes with the
parent's row stride; it counts as the parent for the live-range overlap check and auto_mutex.

Valid shapes: a tile's valid region starts as its TileType's `valid_shape` (-1 entries
mean "set at run time" and start as the full extent) and is changed by
`pl.set_validshape(tile_or_group, [rows, cols])` (runtime scalars allowed). Every
instruction records the valid region its destination has at that point of the trace.
"""
from __future__ import annotations

from ..errors import CompileError
from ..ir import expr as E
from ..ir.core import make
from ..ir.types import TileType as IRTile
from .dsl import ALIGN, TileLayout, TileType, expr_of
from .state import current

_ALIGN_ROW = 32


def _check_type(t, tt: TileType, what: str) -> None:
    """The 32-byte rule of a non-fractal tile: a row-major (ND) tile's rows, a column-major
    (DN) tile's columns must be whole 32-byte units."""
    r, c = tt.shape
    if tt.layout == TileLayout.DN:
        if (r * tt.dtype.itemsize) % _ALIGN_ROW:
            raise t.error(f"{what}: a DN tile of {r} rows of {tt.dtype} is not 32-byte aligned "
                          f"(rows * itemsize must be a multiple of 32)")
    elif tt.layout == TileLayout.ND and (c * tt.dtype.itemsize) % _ALIGN_ROW:
        hint = " (a column tile [R, 1] takes layout=pl.DN)" if c == 1 else ""
        raise t.error(f"{what}: a row of {c} {tt.dtype} is {c * tt.dtype.itemsize} bytes, not "
                      f"a multiple of 32{hint}")


def _check_place(t, tt: TileType, addr: int, size: int, what: str) -> None:
    if not isinstance(addr, int) or addr < 0:
        raise t.error(f"{what}: addr must be a compile-time byte offset >= 0, not {addr!r}")
    align = ALIGN[tt.space]
    if addr % align:
        raise t.error(f"{what}: address {addr:#x} in {tt.memory.name} is not {align}-byte "
                      f"aligned (use {(addr // align + 1) * align:#x})")
    cap = t.capacity.get(tt.space)
    if cap is not None and addr + size > cap:
        raise t.error(f"{what}: [{addr:#x}, {addr + size:#x}) does not fit the {cap}-byte "
                      f"{tt.memory.name} buffer ({tt.space}) of the target")


class Tile:
    """A tile handle: a type at an address (an int, or an expression for a group slot)."""

    def __init__(self, tt: TileType, addr, name: str, owner, loc, slot=None):
        self.type, self.addr, self.name, self.owner, self.loc = tt, addr, name, owner, loc
        self.slot = slot            # group slot index expression, None for make_tile
        self.values: dict = {}      # core -> tile value (slots: made where next() was called)
        self.stride = None          # a subview's row stride (its parent's columns)

    @property
    def valid(self):
        return self.owner.valid if self.owner is not self else self._valid

    def ir_type(self) -> IRTile:
        return IRTile(self.type.space, self.type.dtype, self.type.shape)

    def value(self, t):
        """The tile value in the current section's program."""
        prog = t.program(f"a use of tile {self.name}")
        v = self.values.get(prog.core)
        if v is None:
            attrs = {"addr": self.addr, "name": self.name}
            if self.stride is not None:
                attrs["stride"] = self.stride
            op = make("tile", (), (self.ir_type(),), attrs, None, self.loc, names=None)
            if self.slot is None:
                prog.hoisted.append(op)
            else:
                prog.emit(op)
            v = self.values[prog.core] = op.result
        t.use(prog.core, self.owner)
        return v

    def __getitem__(self, idx):
        return subview(self, idx)

    def __add__(self, offset):
        """`tile + k`: a pointer k elements into the tile, for Reg loads and stores (vf.py)."""
        return TilePtr(self, _elements(offset))

    def __repr__(self) -> str:
        return f"Tile({self.name}: {self.type!r} @ {self.addr})"


class TilePtr:
    """`tile + offset`: a tile and an element offset (an int or an expression), the address
    of a Reg load or store (vf.py), as the reference writes `out_tile + (base + r * 64)`."""

    def __init__(self, tile: Tile, offset):
        self.tile, self.offset = tile, offset

    def __add__(self, k):
        return TilePtr(self.tile, E.add(self.offset, _elements(k)))

    def __repr__(self) -> str:
        return f"{self.tile!r} + {self.offset}"


def _elements(k):
    e = expr_of(k)
    if e is None:
        raise current().error(f"tile + offset: the offset must be an integer scalar, not {k!r}")
    return e


class SubTile(Tile):
    """A subview: the parent's bytes from [r0, c0] on, with the parent's row stride."""

    @property
    def valid(self):
        return self._valid


def subview(tile: Tile, idx) -> SubTile:
    """tile[r0:r1, c0:c1] (reference subview.md): a tile aliasing the parent's bytes, no new
    memory. Its static shape is the rest of the parent from [r0, c0] ([R - r0, C - c0]) with
    the parent's row stride; its valid shape is the slice clamped to the parent's valid shape
    at the point of slicing ([min(r1, vr) - r0, min(c1, vc) - c0]). Starts are compile-time
    ints (a runtime start is not built); stops may be runtime scalars, or omitted (the end).
    Vec tiles only, as in the reference. Its uses are the parent's: the buffer-plan checks
    and auto_mutex treat it as the parent, and the race checker sees the bytes from its first
    to its last element (the parent's bytes)."""
    t = current()
    if not (isinstance(idx, tuple) and len(idx) == 2 and
            all(isinstance(x, slice) and x.step is None for x in idx)):
        raise t.error(f"a tile subview takes two slices, tile[r0:r1, c0:c1], not {idx!r}")
    if tile.type.space != "ub":
        raise t.error(f"subview of tile {tile.name} in {tile.type.memory.name}: subviews are of "
                      f"Vec tiles")
    starts, valid = [], []
    for x, n, v, axis in zip(idx, tile.type.shape, tile.valid, ("row", "column")):
        a = 0 if x.start is None else x.start
        if not isinstance(a, int) or isinstance(a, bool) or not 0 <= a < n:
            raise t.error(f"subview {axis} start must be a compile-time int in [0, {n}), not "
                          f"{x.start!r} (a runtime start is not built)")
        stop = n if x.stop is None else expr_of(x.stop)
        if stop is None or (isinstance(stop, int) and not a < stop <= n):
            raise t.error(f"subview {axis} stop must be an int in ({a}, {n}] or a runtime "
                          f"scalar, not {x.stop!r}")
        end = E.minimum(E.minimum(stop, n), v) if not (isinstance(stop, int) and
                                                     isinstance(v, int)) else min(stop, v)
        starts.append(a)
        valid.append(E.maximum(0, E.sub(end, a)) if not isinstance(end, int) else max(0, end - a))
    (r0, c0), (R, C) = starts, tile.type.shape
    tt = TileType([R - r0, C - c0], tile.type.dtype, tile.type.memory,
                  layout=tile.type.layout)
    stride = tile.stride or C
    off = (r0 * stride + c0) * tt.dtype.itemsize
    addr = tile.addr + off if isinstance(tile.addr, int) else E.add(tile.addr, off)
    t.nsubviews = getattr(t, "nsubviews", 0) + 1
    sub = SubTile(tt, addr, f"{tile.name}_sv{t.nsubviews}", tile.owner, t.loc(), slot=tile.slot)
    sub._valid, sub.stride = valid, stride
    if sub.slot is not None and (t.section is not None or not t.sections):
        sub.value(t)                 # a group slot's subview is made here, as the slot
    return sub


def _initial_valid(tt: TileType) -> list:
    if tt.valid_shape is None:
        return list(tt.shape)
    return [s if v == -1 else v for v, s in zip(tt.valid_shape, tt.shape)]


def make_tile(tile_type, addr=None, size=None):
    """pl.make_tile(tile_type, addr=, size=): one tile at a byte offset of its space."""
    t = current()
    if not isinstance(tile_type, TileType):
        raise t.error(f"make_tile takes a pl.TileType, not {tile_type!r}")
    if addr is None:
        raise t.error("make_tile needs addr= (a byte offset in the tile's memory space)")
    name = f"t{len(t.tiles)}"
    what = f"tile {name}"
    _check_type(t, tile_type, what)
    size = tile_type.nbytes if size is None else size
    if not isinstance(size, int) or size < tile_type.nbytes:
        raise t.error(f"{what}: size={size!r} is less than the tile's {tile_type.nbytes} bytes")
    _check_place(t, tile_type, addr, size, what)
    tile = Tile(tile_type, addr, name, None, t.loc())
    tile.owner = tile
    tile._valid = _initial_valid(tile_type)
    tile.size, tile.spans = size, [(addr, addr + size)]
    t.tiles.append(tile)
    return tile


class TileGroup:
    """pl.make_tile_group(type=, addrs=, mutex_ids=, depth=, fwd_ids=, bwd_ids=)."""

    def __init__(self, t, tt: TileType, addrs: list, size: int, mutex_ids, name, loc,
                 fwd_ids=None, bwd_ids=None):
        self.type, self.addrs, self.size, self.name, self.loc = tt, addrs, size, name, loc
        self.mutex_ids = mutex_ids
        self.fwd_ids, self.bwd_ids = fwd_ids, bwd_ids
        self.depth = len(addrs)
        self.count = 0                # .next() calls so far (an expression, state.py)
        self.valid = _initial_valid(tt)
        self.spans = [(a, a + size) for a in addrs]
        self.owner = self

    def _slot(self, k) -> Tile:
        t = current()
        k = expr_of(k)
        slot = E.mod(k, self.depth) if not isinstance(k, int) else k % self.depth
        addr = _select(slot, self.addrs)
        name = f"{self.name}_{slot}" if isinstance(slot, int) else self.name
        tile = Tile(self.type, addr, name, self, t.loc(), slot=slot)
        if t.section is not None or not t.sections:
            tile.value(t)            # made here: the slot is the one of this point
        return tile

    def next(self) -> Tile:
        tile = self._slot(self.count)
        self.count = E.add(self.count, 1)
        return tile

    def current(self) -> Tile:
        return self._slot(E.maximum(0, E.sub(self.count, 1)))

    def previous(self) -> Tile:
        return self._slot(E.maximum(0, E.sub(self.count, 2)))

    def __getitem__(self, i) -> Tile:
        if expr_of(i) is None:
            raise current().error(f"tile group index must be an integer, not {i!r}")
        return self._slot(i)

    def __len__(self) -> int:
        return self.depth

    def mutex_of(self, slot) -> list:
        """The mutex id expressions of a slot (empty without mutex ids)."""
        if not self.mutex_ids:
            return []
        return [_select(slot, [ids[j] for ids in self.mutex_ids])
                for j in range(len(self.mutex_ids[0]))]


def _select(slot, values: list):
    """values[slot] for a slot expression: arithmetic when evenly spaced, else selects."""
    if isinstance(slot, int):
        return values[slot]
    if len(values) == 1:
        return values[0]
    step = values[1] - values[0]
    if all(values[i] == values[0] + i * step for i in range(len(values))):
        return E.add(values[0], E.mul(slot, step))
    out = values[-1]
    for i in range(len(values) - 2, -1, -1):
        out = E.select(E.eq(slot, i), values[i], out)
    return out


def make_tile_group(type=None, addrs=None, mutex_ids=None, depth=None, fwd_ids=None,
                    bwd_ids=None, size=None):
    """Tile groups: see the module docstring."""
    t = current()
    tt = type
    if not isinstance(tt, TileType):
        raise t.error(f"make_tile_group takes type=pl.TileType(...), not {tt!r}")
    mids = _mutex_ids(t, mutex_ids)
    n = len(mids) if mids else depth
    if not isinstance(n, int) or n < 1:
        raise t.error("make_tile_group needs mutex_ids=[...] or depth=N (N >= 1)")
    if mids and depth is not None and depth != len(mids):
        raise t.error(f"make_tile_group: depth={depth} but {len(mids)} mutex ids")
    name = f"g{len(t.groups)}"
    _check_type(t, tt, f"tile group {name}")
    size = tt.nbytes if size is None else size
    if isinstance(addrs, int):
        step = -(-size // ALIGN[tt.space]) * ALIGN[tt.space]
        addr_list = [addrs + i * step for i in range(n)]
    elif isinstance(addrs, (list, tuple)) and len(addrs) == n:
        addr_list = list(addrs)
    else:
        raise t.error(f"make_tile_group addrs must be a base address or {n} addresses, not "
                      f"{addrs!r}")
    for i, a in enumerate(addr_list):
        _check_place(t, tt, a, size, f"tile group {name} slot {i}")
    spans = sorted((a, a + size) for a in addr_list)
    if any(spans[i][1] > spans[i + 1][0] for i in range(len(spans) - 1)):
        raise t.error(f"tile group {name}: its slots overlap ({addr_list})")
    g = TileGroup(t, tt, addr_list, size, mids, name, t.loc(), fwd_ids, bwd_ids)
    t.groups.append(g)
    t.tiles.append(g)
    return g


def _mutex_ids(t, ids):
    if ids is None or ids == []:
        return None
    out = []
    for x in ids:
        one = list(x) if isinstance(x, (list, tuple)) else [x]
        if not one or any(not isinstance(i, int) or not 0 <= i <= 31 for i in one):
            raise t.error(f"mutex ids must be ints 0-31, not {x!r}")
        out.append(one)
    if len({len(o) for o in out}) != 1:
        raise t.error("every slot of a tile group needs the same number of mutex ids")
    return out


def set_validshape(tile, shape):
    """pl.set_validshape(tile_or_group, [rows, cols]): the valid region from here on."""
    t = current()
    if not isinstance(tile, (Tile, TileGroup)) or len(shape) != 2:
        raise t.error("set_validshape takes a tile or tile group and [rows, cols]")
    es = [expr_of(v) for v in shape]
    if any(e is None for e in es):
        raise t.error(f"set_validshape: {shape!r} must be integer scalars")
    full = tile.type.shape
    bounded = [e if isinstance(e, int) else E.maximum(0, E.minimum(n, e))
               for e, n in zip(es, full)]
    if any(isinstance(e, int) and not 0 <= e <= n for e, n in zip(es, full)):
        raise t.error(f"set_validshape {shape!r} outside the tile's {list(full)}")
    owner = tile.owner
    if owner is tile and isinstance(tile, Tile):
        tile._valid = bounded
    else:
        owner.valid = bounded


def check_overlaps(t) -> None:
    """Two live tiles (one section, one space) whose byte ranges overlap: an error."""
    by_core: dict = {}
    for (core, obj), span in t.uses.items():
        by_core.setdefault((core, obj.type.space), []).append((obj, span))
    for (core, space), objs in sorted(by_core.items(), key=lambda kv: kv[0]):
        objs.sort(key=lambda o: o[1][0])
        for i, (a, sa) in enumerate(objs):
            for b, sb in objs[i + 1:]:
                if sb[0] > sa[1]:
                    break
                hit = _overlap(a.spans, b.spans)
                if hit:
                    raise _overlap_error(a, b, hit, core)


def _overlap(sa, sb):
    for a0, a1 in sa:
        for b0, b1 in sb:
            if a0 < b1 and b0 < a1:
                return (max(a0, b0), min(a1, b1))
    return None


def _overlap_error(a, b, hit, core) -> CompileError:
    return CompileError(f"tiles {a.name} (line {a.loc.line if a.loc else '?'}) and {b.name} "
                        f"(line {b.loc.line if b.loc else '?'}) overlap in "
                        f"{a.type.memory.name} bytes [{hit[0]:#x}, {hit[1]:#x}) while both are "
                        f"live in the {core} section: move one of them to a free address",
                        b.loc)
