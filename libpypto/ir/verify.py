"""One verifier per level: the invariants a document of that level must keep.

verify(doc) returns a list of Diagnostics (empty = valid). It runs on every read and write
and, under --verify-each, after every pass.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import VerifyError
from . import ops as O
from .types import DTYPES, ScalarType, TensorType, TileType


@dataclass
class Diagnostic:
    message: str
    loc: object = None

    def __str__(self) -> str:
        return f"{self.loc}: {self.message}" if self.loc else self.message


TENSOR_OPS = {"param", "tensor", "view", "assemble", "matmul", "cast", "sum", "prod", "amax",
              "amin", "argmax", "argmin", "cumsum", "cumprod", "topk", "sort", "argsort",
              "reshape", "permute", "tril", "triu", "gather", "index_select", "scatter",
              "index_add", "full", "arange", "loop", "if"} | set(O.ELEMENTWISE)
UNTILED = {"param", "tensor", "view", "loop", "if", "reshape"}
TILE_INSTRS = {"tile", "tload", "tstore", "tmov", "textract", "tmatmul", "treduce", "texpands",
               "tcvt", "treshape", "for", "tiota", "ttri", "targreduce", "tscan", "tsort",
               "ttrans", "tgather", "tscatter"} | {"t" + n for n in O.ELEMENTWISE}
GM_DIRECT = {"tscatter"}          # instructions that work on GM tensors only
REGIONS = {"loop", "if"}
SPACES_OK = {  # instruction -> allowed (dst space, src spaces) once memory is assigned
    "tload": ({"ub", "l1"}, None),
    "textract": ({"l0a", "l0b"}, {"l1"}),
    "tmatmul": ({"l0c"}, {"l0a", "l0b"}),
    "tstore": (None, {"ub", "l0c"}),
}


def verify(doc) -> list[Diagnostic]:
    """Check the invariants of doc's level; an empty list means valid."""
    v = _Verifier()
    fn = getattr(v, "level_" + doc.level)
    fn(doc)
    return v.diags


def verify_or_raise(doc, when: str = "") -> None:
    diags = verify(doc)
    if diags:
        d = diags[0]
        more = f" (and {len(diags) - 1} more)" if len(diags) > 1 else ""
        what = f" {when}" if when else ""
        raise VerifyError(f"invalid {doc.level}-level graph{what}: {d.message}{more}", d.loc)


class _Verifier:
    def __init__(self):
        self.diags: list[Diagnostic] = []

    def err(self, msg: str, loc=None) -> None:
        self.diags.append(Diagnostic(msg, loc))

    # -- tensor ------------------------------------------------------------------------------
    def level_tensor(self, doc) -> None:
        self.tensor_ops(doc.body, doc.attrs)

    def tensor_ops(self, ops, attrs, memory=None) -> None:
        memory = set() if memory is None else memory
        for op in ops:
            if op.name not in TENSOR_OPS:
                self.err(f"unknown tensor-level op {op.name!r}", op.loc)
                continue
            for r in op.results:
                if not isinstance(r.type, (TensorType, ScalarType)):
                    self.err(f"{op.name} result must be a tensor, got {r.type}", op.loc)
            if op.name in ("param", "tensor"):
                memory.add(op.result)
            elif op.name == "assemble":
                if len(op.operands) != 2 or op.operands[1] not in memory:
                    self.err("assemble must write into a kernel parameter or a local tensor",
                             op.loc)
            elif op.name in REGIONS:
                if op.name == "loop" and not all(k in op.attrs for k in ("var", "start", "stop", "step")):
                    self.err("loop without var/start/stop/step", op.loc)
                if op.name == "if" and "cond" not in op.attrs:
                    self.err("if without a cond", op.loc)
                for r in op.regions:
                    self.tensor_ops(r, attrs, memory)
            elif op.name not in UNTILED:
                self.tile_attr(op)
            self.op_attrs(op)

    def op_attrs(self, op) -> None:
        """The attributes each tensor op needs, with the right kinds and ranges."""
        a = op.attrs
        rank = op.operands[0].type.rank if op.operands and \
            isinstance(op.operands[0].type, TensorType) else None

        def need(key, ok, what):
            if key not in a or not ok(a[key]):
                self.err(f"{op.name} needs {key} = {what}", op.loc)
                return False
            return True

        def is_int(v):
            return isinstance(v, int) and not isinstance(v, bool)

        if op.name == "param":
            need("index", is_int, "the parameter's position (an int)")
        elif op.name in ("sum", "prod", "amax", "amin", "argmax", "argmin"):
            need("dims", lambda v: isinstance(v, list) and v and all(
                is_int(d) and 0 <= d < rank for d in v), f"a list of dims in [0, {rank})")
            need("keepdim", lambda v: isinstance(v, bool), "true or false")
        elif op.name in ("cumsum", "cumprod", "topk", "sort", "argsort", "gather",
                         "index_select", "scatter", "index_add"):
            need("dim", lambda v: is_int(v) and 0 <= v < rank, f"a dim in [0, {rank})")
        elif op.name == "view":
            for key in ("offsets", "shape"):
                need(key, lambda v: isinstance(v, list) and len(v) == rank,
                     f"a list of {rank} sizes")
        elif op.name == "assemble":
            dst = op.operands[1].type.rank if len(op.operands) == 2 else None
            need("offsets", lambda v: isinstance(v, list) and len(v) == dst,
                 f"a list of {dst} offsets")
            if len(op.operands) == 2 and op.operands[0].type.rank != dst:
                self.err("assemble source and destination ranks differ", op.loc)
        elif op.name == "matmul":
            need("out_dtype", lambda v: v in DTYPES, "a dtype name")
        elif op.name == "cast":
            need("dtype", lambda v: v in DTYPES, "a dtype name")
        elif op.name == "permute":
            need("perm", lambda v: isinstance(v, list) and sorted(v) == list(range(rank or 0)),
                 "a permutation of the dims")

    def tile_attr(self, op) -> None:
        if op.name == "matmul":
            cube = op.attrs.get("cube")
            if not (isinstance(cube, list) and len(cube) == 3):
                self.err("matmul needs cube tile shapes [[mL0, mL1], [kL0, kL1], [nL0, nL1]]",
                         op.loc)
            return
        if op.name == "assemble" and "tile" not in op.attrs:
            return
        tile = op.attrs.get("tile")
        # the data operand fixes rank and alignment (not a bool mask, not the result)
        data = [v.type for v in op.operands if v.type.dtype.kind != "bool"] or \
            [v.type for v in op.operands] or [r.type for r in op.results]
        src = data[0]
        if op.name in ("permute", "gather"):
            src = op.result.type
        if not isinstance(tile, list) or not all(isinstance(t, int) and t > 0 for t in tile):
            self.err(f"{op.name} has no valid tile shape", op.loc)
            return
        if len(tile) != src.rank:
            self.err(f"tile shape {tuple(tile)} has rank {len(tile)} but the operand has rank "
                     f"{src.rank}", op.loc)
            return
        dt = src.dtype
        if op.name == "cast" and op.results[0].type.dtype.itemsize < dt.itemsize:
            dt = op.results[0].type.dtype
        full = src.shape[-1] if src.shape else None
        if tile and tile[-1] * dt.itemsize % 32 and not (isinstance(full, int) and tile[-1] >= full):
            self.err(f"tile shape {tuple(tile)} is not 32-byte aligned in dim {len(tile) - 1} "
                     f"({tile[-1]} x {dt.itemsize} B)", op.loc)

    # -- tile and block ----------------------------------------------------------------------
    def level_tile(self, doc) -> None:
        self.gm_and_source(doc)
        self.kernels(doc.body, "kernel", False, doc.attrs)

    def level_block(self, doc) -> None:
        self.gm_and_source(doc)
        self.kernels(doc.body, "block", True, doc.attrs)

    def kernels(self, ops, kind: str, block: bool, attrs, top: bool = True) -> None:
        allowed = {kind, "loop", "if"} | ({"gm", "source"} if top else set())
        for op in ops:
            if op.name == kind:
                self.kernel(op, block=block)
                if block:
                    self.buffers(op, attrs.get("target", {}))
            elif op.name in REGIONS:
                for r in op.regions:
                    self.kernels(r, kind, block, attrs, top=False)
            elif op.name not in allowed:
                self.err(f"unexpected op {op.name!r} in a {'block' if block else 'tile'}-level "
                         f"graph", op.loc)

    def gm_and_source(self, doc) -> None:
        sources = [op for op in doc.body if op.name == "source"]
        if len(sources) != 1:
            self.err(f"expected one source (tensor graph) op, found {len(sources)}")
        else:
            self.tensor_ops(sources[0].regions[0], doc.attrs)
        for op in doc.body:
            if op.name == "gm" and not isinstance(op.result.type, TensorType):
                self.err("gm op must define a tensor", op.loc)

    def kernel(self, k, block: bool) -> None:
        grid = k.attrs.get("grid")
        if not isinstance(grid, list):
            self.err(f"{k.name} without a grid", k.loc)
            return
        declared = set()
        for op in k.regions[0]:
            for inner in op.walk():
                if inner.name == "tile":
                    declared.add(inner.result)
        for op in k.regions[0]:
            for inner in op.walk():
                self.instr(inner, declared, block, k.loc)

    def instr(self, op, declared: set, block: bool, kloc) -> None:
        loc = op.loc or kloc
        if op.name not in TILE_INSTRS:
            self.err(f"unknown tile instruction {op.name!r}", loc)
            return
        if op.name == "tile":
            t = op.result.type
            if not isinstance(t, TileType):
                self.err("tile op must define a tile", loc)
            elif block and t.space in ("any", "gm"):
                self.err(f"tile in space {t.space!r} at block level (run assign-memory)", loc)
            elif block and "addr" in op.attrs and op.attrs["addr"] % 32:
                self.err(f"tile address {op.attrs['addr']} is not 32-byte aligned", loc)
            return
        if op.name == "for":
            for key in ("var", "start", "stop", "step"):
                if key not in op.attrs:
                    self.err(f"for loop without {key}", loc)
            return
        tiles = [v for v in op.operands if isinstance(v.type, TileType)]
        for v in tiles:
            if v not in declared:
                self.err(f"{op.name} uses a tile not declared in this kernel", loc)
        if op.name in GM_DIRECT:
            if tiles or not all(isinstance(v.type, TensorType) for v in op.operands):
                self.err(f"{op.name} works on GM tensors only", loc)
            if block and "pipe" not in op.attrs:
                self.err(f"{op.name} has no pipe at block level", loc)
            return
        if not tiles:
            self.err(f"{op.name} needs a destination tile", loc)
            return
        if op.name in ("tload", "tstore"):
            if len(op.operands) != 2 or not isinstance(op.operands[1].type, TensorType):
                self.err(f"{op.name} takes a tile and a GM tensor", loc)
                return
            gm, tile = op.operands[1].type, op.operands[0].type
            for key in ("offsets", "valid"):
                if len(op.attrs.get(key, [])) != gm.rank:
                    self.err(f"{op.name} {key} must have {gm.rank} entries", loc)
            if tile.rank > gm.rank:
                self.err(f"{op.name} of a rank-{tile.rank} tile from a rank-{gm.rank} tensor", loc)
        rule = SPACES_OK.get(op.name)
        if rule and all(v.type.space != "any" for v in tiles):
            dst_ok, src_ok = rule
            if op.name == "tstore":
                if op.operands[0].type.space not in src_ok:
                    self.err(f"tstore from a {op.operands[0].type.space} tile", loc)
            else:
                if dst_ok and tiles[0].type.space not in dst_ok:
                    self.err(f"{op.name} into a {tiles[0].type.space} tile", loc)
                if src_ok and any(v.type.space not in src_ok for v in tiles[1:]):
                    self.err(f"{op.name} from a {'/'.join(v.type.space for v in tiles[1:])} tile",
                             loc)
        if block and "pipe" not in op.attrs:
            self.err(f"{op.name} has no pipe at block level", loc)

    def buffers(self, blk, target: dict) -> None:
        caps = target.get("buffers", {})
        used = blk.attrs.get("buffers")
        if used is None:
            return
        for space, n in used.items():
            if space in caps and n > caps[space]:
                self.err(f"block uses {n} B of {space} but the target has {caps[space]} B",
                         blk.loc)

    # -- exec and later ----------------------------------------------------------------------
    def level_exec(self, doc) -> None:
        self.gm_and_source(doc)
        progs = {}
        for op in doc.body:
            if op.name == "program":
                progs[op.attrs.get("name")] = op
                declared = set()
                for inner in op.regions[0]:
                    for x in inner.walk():
                        if x.name == "tile":
                            declared.add(x.result)
                for inner in op.regions[0]:
                    if inner.name == "arg":
                        continue
                    for x in inner.walk():
                        self.instr(x, declared, True, op.loc)
        self.ntask = 0
        self.tasks(doc.body, progs, top=True)

    def tasks(self, ops, progs, top: bool) -> None:
        for op in ops:
            if op.name in REGIONS:
                for r in op.regions:
                    self.tasks(r, progs, top=False)
                continue
            if op.name != "task":
                if not top or op.name not in ("gm", "source", "program", "schedule", "code"):
                    self.err(f"unexpected op {op.name!r} in an exec-level graph", op.loc)
                continue
            ntask = self.ntask
            self.ntask += 1
            p = progs.get(op.attrs.get("program"))
            if p is None:
                self.err(f"task refers to unknown program {op.attrs.get('program')!r}", op.loc)
                continue
            nargs = sum(1 for x in p.regions[0] if x.name == "arg")
            if len(op.operands) != nargs:
                self.err(f"task passes {len(op.operands)} tensors to {p.attrs['name']}, which "
                         f"takes {nargs}", op.loc)
            if len(op.attrs.get("scalars", [])) != len(p.attrs.get("scalars", [])):
                self.err(f"task passes the wrong number of scalars to {p.attrs['name']}", op.loc)
            for d in op.attrs.get("after", []):
                if not (isinstance(d, int) and 0 <= d < ntask):
                    self.err(f"task depends on {d!r}, which is not an earlier task", op.loc)

    def level_sched(self, doc) -> None:
        self.level_exec(doc)
        scheds = [op for op in doc.body if op.name == "schedule"]
        if len(scheds) != 1:
            self.err(f"expected one schedule op, found {len(scheds)}")
            return
        s = scheds[0].attrs
        ntasks = sum(1 for op in doc.walk() if op.name == "task")
        if len(s.get("order", [])) != ntasks:
            self.err("schedule order must list every task once")
        elif sorted(s["order"]) != list(range(ntasks)):
            self.err("schedule order must be a permutation of the tasks")
        cores = s.get("cores", {})
        for inst in s.get("instances", []) or []:
            if inst[2] not in range(sum(cores.values())):
                self.err(f"instance placed on core {inst[2]}, which the target does not have")
                break

    def level_code(self, doc) -> None:
        self.level_sched(doc)
        codes = [op for op in doc.body if op.name == "code"]
        if len(codes) != 1:
            self.err(f"expected one code op, found {len(codes)}")
            return
        a = codes[0].attrs
        if a.get("backend") not in ("c", "numpy"):
            self.err(f"unknown backend {a.get('backend')!r}")
        if not isinstance(a.get("source"), str):
            self.err("code op without source text")

    def level_run(self, doc) -> None:
        runs = [op for op in doc.body if op.name == "run"]
        if len(runs) != 1:
            self.err(f"expected one run op, found {len(runs)}")
            return
        a = runs[0].attrs
        for key in ("verdict", "events", "outputs", "wall_s"):
            if key not in a:
                self.err(f"run record without {key}")


