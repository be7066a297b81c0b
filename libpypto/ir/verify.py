"""One verifier per level: the invariants a document of that level must keep.

verify(doc) returns a list of Diagnostics (empty = valid). It runs on every read and write
and, under --verify-each, after every pass. Each op is checked against its own definition
(defs.check_op: operand and result kinds, the grammar of every attribute, the op's type
rule); what is checked here is what spans ops: which ops a level allows where, memory that
assemble may write, tiles declared in their kernel, spaces, pipes and buffer capacity at the
block level, tasks that name their programs, the schedule's permutation.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import VerifyError
from .defs import check_op
from .module_ops import DOC
from .opdef import check_fields, is_int, short
from .scope import check_scopes
from .types import TileType

TOP = {"tile": {"source", "gm", "kernel", "loop", "if", "check", "read"},
       "block": {"source", "gm", "block", "loop", "if", "check", "read"},
       "exec": {"source", "gm", "program", "task", "loop", "if", "check", "read"}}
TOP["sched"] = TOP["exec"] | {"schedule"}
TOP["code"] = TOP["sched"] | {"code"}


@dataclass
class Diagnostic:
    message: str
    loc: object = None

    def __str__(self) -> str:
        return f"{self.loc}: {self.message}" if self.loc else self.message


def verify(doc) -> list[Diagnostic]:
    """Check the invariants of doc's level; an empty list means valid."""
    v = _Verifier(doc.attrs.get("target"))
    problem = check_fields(doc.attrs, DOC)
    if problem:
        v.err(f"module {problem}")
        return v.diags
    if doc.level == "tensor":
        v.tensor_ops(doc.body, set())
    elif doc.level == "run":
        v.run(doc)
    else:
        v.module(doc)
    if not v.diags and doc.level != "run":     # well-formed ops: now names and scopes
        graph = next((op.regions[0] for op in doc.body if op.name == "source"), doc.body)
        v.memory_names(graph, doc.attrs.get("params"))
        v.reads(doc.body, graph)
        if doc.level != "tensor" and not v.diags:
            v.gm_tensors(doc.body, graph)
        check_scopes(doc, v.err)
    return v.diags


def verify_or_raise(doc, when: str = "") -> None:
    diags = verify(doc)
    if diags:
        d = diags[0]
        more = f" (and {len(diags) - 1} more)" if len(diags) > 1 else ""
        what = f" {when}" if when else ""
        raise VerifyError(f"invalid {doc.level}-level graph{what}: {d.message}{more}", d.loc)


NO_TARGET_CAP = 1 << 30      # bytes of one tile when a document carries no target record


class _Verifier:
    def __init__(self, target=None):
        self.diags: list[Diagnostic] = []
        buffers = target.get("buffers") if isinstance(target, dict) else None
        self.caps = {k: n for k, n in buffers.items() if is_int(n)} \
            if isinstance(buffers, dict) else {}

    def err(self, msg: str, loc=None) -> None:
        self.diags.append(Diagnostic(msg, loc))

    def check(self, op, where: str, loc=None) -> bool:
        if not check_op(op, where, lambda m: self.err(m, op.loc or loc)):
            return False
        step = op.attrs.get("step") if op.name in ("loop", "for") else 1
        if isinstance(step, int) and step <= 0:
            self.err(f"{op.name} step {step} is not positive", op.loc or loc)
            return False
        return True

    # -- the tensor graph ----------------------------------------------------------------------
    def tensor_ops(self, ops, memory: set) -> None:
        for op in ops:
            if not self.check(op, "tensor"):
                continue
            if op.name in ("param", "tensor"):
                memory.add(op.result)
            elif op.name == "assemble" and op.operands[1] not in memory:
                self.err("assemble must write into a kernel parameter or a local tensor", op.loc)
            for r in op.regions:
                self.tensor_ops(r, memory)

    def memory_names(self, ops, params) -> None:
        """Parameters are the kernel's params in order (index 0, 1, ...), at the top level;
        parameters and local tensors have names of their own (data is found by name)."""
        top = [op.result.name for op in ops if op.name == "param"]
        if top != params or [op.attrs["index"] for op in ops if op.name == "param"] != \
                list(range(len(top))):
            self.err(f"the param ops ({', '.join(map(str, top))}) must be the module's params "
                     f"({', '.join(map(str, params or []))}), numbered 0, 1, ... in order")
        if top and not any(op.attrs.get("role") == "output" for op in ops if op.name == "param"):
            self.err("the kernel writes no output: no param has role \"output\"")
        names = [op.result.name for top_op in ops for op in top_op.walk()
                 if op.name in ("param", "tensor")]
        if None in names or len(set(names)) != len(names) or \
                sum(1 for op in ops for x in op.walk() if x.name == "param") != len(top):
            self.err("parameters and local tensors need names of their own, and parameters "
                     "belong at the top level")

    def reads(self, body, graph) -> None:
        """A read names an integer input parameter, with one index per dim (the data must be
        on the host before the run: no kernel may write what a read reads)."""
        params = {op.result.name: op for op in graph if op.name == "param"}
        for top in body:
            for op in top.walk():
                if op.name != "read":
                    continue
                p = params.get(op.attrs["param"])
                if p is None:
                    self.err(f"read of {short(op.attrs['param'])}, which is not a parameter",
                             op.loc)
                elif p.result.type.dtype.kind != "int" or \
                        p.attrs.get("role") == "output":
                    self.err(f"read of {p.result.name}: only integer input parameters are read "
                             f"at run time ({p.result.type}, {p.attrs.get('role')})", op.loc)
                elif len(op.attrs["index"]) != p.result.type.rank:
                    self.err(f"read of {p.result.name} takes {p.result.type.rank} indices, "
                             f"not {len(op.attrs['index'])}", op.loc)

    def gm_tensors(self, body, graph) -> None:
        """Each GM tensor is a parameter (same index, role and type as its param op), a local
        tensor of the graph (same type) or a workspace; a parameter or local has one."""
        params = {op.result.name: op for op in graph if op.name == "param"}
        locals_ = {op.result.name: op for top in graph for op in top.walk()
                   if op.name == "tensor"}
        seen = set()
        for op in body:
            if op.name != "gm":
                continue
            a = op.attrs
            key = ("param", a["param"]) if "param" in a else ("local", a["local"]) \
                if "local" in a else None
            if "arena" in a and "param" in a:
                self.err(f"gm for param {a['param']!r} has an arena offset: parameters are "
                         f"the caller's arrays", op.loc)
            if key is None:
                if not a.get("workspace"):
                    self.err("gm must be a param, a local tensor or a workspace", op.loc)
                continue
            src = (params if key[0] == "param" else locals_).get(key[1])
            if src is None or key in seen:
                what = "no" if src is None else "a second"
                self.err(f"gm is {what} GM tensor for {key[0]} {key[1]!r}", op.loc)
            elif src.result.type != op.result.type or key[0] == "param" and \
                    (a.get("index") != src.attrs["index"] or a.get("role") !=
                     src.attrs.get("role", "input")):
                self.err(f"gm for {key[0]} {key[1]!r} differs from it ({op.result.type}, "
                         f"index {a.get('index')}, role {a.get('role')})", op.loc)
            seen.add(key)

    # -- tile level and later ------------------------------------------------------------------
    def module(self, doc) -> None:
        sources = [op for op in doc.body if op.name == "source"]
        if len(sources) != 1:
            self.err(f"expected one source (tensor graph) op, found {len(sources)}")
        self.programs = {}
        self.ntask = 0
        self.top(doc.body, doc, top=True)
        if len(sources) == 1 and not self.diags:
            self.gm_params(doc.body, sources[0].regions[0])
        if doc.level in ("sched", "code") and not self.diags:
            self.schedule(doc)
        if doc.level == "code":
            codes = [op for op in doc.body if op.name == "code"]
            if len(codes) != 1:
                self.err(f"expected one code op, found {len(codes)}")

    def gm_params(self, body, graph) -> None:
        """A parameter's gm is the tensor graph's param: same index, role and type (the data
        is sized by one and checked against the other)."""
        params = {op.result.name: op for op in graph if op.name == "param"}
        seen = set()
        for op in body:
            name = op.attrs.get("param") if op.name == "gm" else None
            if name is None:
                continue
            p = params.get(name)
            if p is None or name in seen or op.result.type != p.result.type or \
                    op.attrs.get("role") != p.attrs.get("role") or \
                    op.attrs.get("index") != p.attrs.get("index"):
                self.err(f"gm {op.result.name} does not match the tensor graph's param "
                         f"{name!r} (each param has one gm of the same index, role and type)",
                         op.loc)
            seen.add(name)
        if not self.diags and seen != set(params):
            missing = ", ".join(sorted(set(params) - seen))
            self.err(f"the params {missing} have no gm")

    def top(self, ops, doc, top: bool) -> None:
        allowed = TOP[doc.level] - (set() if top else {"source", "gm", "program", "schedule",
                                                       "code"})
        for op in ops:
            if op.name not in allowed:
                article = "an" if doc.level[0] in "aeiou" else "a"
                self.err(f"unexpected op {op.name!r} in {article} {doc.level}-level graph",
                         op.loc)
                continue
            if not self.check(op, "module"):
                continue
            if op.name == "source":
                self.tensor_ops(op.regions[0], set())
            elif op.name in ("loop", "if"):
                for r in op.regions:
                    self.top(r, doc, top=False)
            elif op.name in ("kernel", "block", "program"):
                self.body(op, assigned=op.name != "kernel")
                if op.name == "block":
                    self.buffers(op)
                if op.name == "program":
                    self.program(op)
            elif op.name == "task":
                self.task(op)

    def program(self, p) -> None:
        """A program's args come first, numbered 0, 1, ... in order; its name is unique."""
        if p.attrs["name"] in self.programs:
            self.err(f"program {p.attrs['name']!r} is defined twice", p.loc)
        self.programs[p.attrs["name"]] = p
        body = p.regions[0]
        nargs = sum(1 for op in body if op.name == "arg")
        if [op.attrs.get("index") for op in body[:nargs]] != list(range(nargs)) or \
                any(op.name == "arg" for op in body[nargs:]):
            self.err(f"program {p.attrs['name']!r}: its args must come first, numbered 0, 1, "
                     f"... in order", p.loc)

    def body(self, k, assigned: bool) -> None:
        """A kernel, block or program body: tile instructions on tiles it declares; from the
        block level on, every tile in a memory space and every instruction on a pipe."""
        declared = set()
        for top in k.regions[0]:
            for op in top.walk():
                if op.name == "tile" and len(op.results) == 1:
                    declared.add(op.result)
        for top in k.regions[0]:
            for op in top.walk():
                if top.name == "arg" and k.name != "program":
                    self.err("arg outside a program", op.loc or k.loc)
                if self.check(op, "tile", k.loc):
                    self.instr(op, declared, assigned, op.loc or k.loc)

    def instr(self, op, declared: set, assigned: bool, loc) -> None:
        if op.name == "tile":
            t = op.result.type
            cap = self.caps.get(t.space, max(self.caps.values(), default=NO_TARGET_CAP))
            if t.padded_nbytes() > cap:
                where = f"the target's {t.space} buffer" if t.space in self.caps else \
                    "any buffer of the target" if self.caps else "the limit for a tile"
                self.err(f"tile {t} needs {t.padded_nbytes():,} B, more than {where} "
                         f"({cap:,} B)", loc)
            elif assigned and t.space in ("any", "gm"):
                self.err(f"tile in space {t.space!r} at block level (run assign-memory)", loc)
            elif assigned and isinstance(op.attrs.get("addr", 0), int) and op.attrs.get("addr", 0) % 32:
                self.err(f"tile address {op.attrs['addr']} is not 32-byte aligned", loc)
            return
        if op.name in ("for", "arg", "if"):
            return
        for v in op.operands:
            if isinstance(v.type, TileType) and v not in declared:
                self.err(f"{op.name} uses a tile not declared in this kernel", loc)
        if assigned and "pipe" not in op.attrs:
            self.err(f"{op.name} has no pipe at block level", loc)

    def buffers(self, blk) -> None:
        caps = self.caps
        for space, n in (blk.attrs.get("buffers") or {}).items():
            if space in caps and n > caps[space]:
                self.err(f"block uses {n} B of {space} but the target has {caps[space]} B",
                         blk.loc)

    def task(self, op) -> None:
        ntask = self.ntask
        self.ntask += 1
        p = self.programs.get(op.attrs["program"])
        if p is None:
            self.err(f"task refers to unknown program {op.attrs['program']!r}", op.loc)
            return
        nargs = sum(1 for x in p.regions[0] if x.name == "arg")
        if len(op.operands) != nargs:
            self.err(f"task passes {len(op.operands)} tensors to {p.attrs['name']}, which "
                     f"takes {nargs}", op.loc)
        if len(op.attrs["scalars"]) != len(p.attrs["scalars"]):
            self.err(f"task passes the wrong number of scalars to {p.attrs['name']}", op.loc)
        for d in op.attrs["after"]:
            if not d < ntask:
                self.err(f"task depends on {d!r}, which is not an earlier task", op.loc)
        self.footprints(op)

    def footprints(self, op) -> None:
        """A task's tensors are GM tensors; its read and write boxes name one of them by
        position and bound every dim of it."""
        for i, v in enumerate(op.operands):
            if v.owner is None or v.owner.name != "gm":
                self.err(f"task operand {i} is not a GM tensor (a gm op's result)", op.loc)
                return
        for key in ("reads", "writes"):
            for j, (t, lo, hi) in enumerate(op.attrs[key]):
                if t >= len(op.operands):
                    self.err(f"task {key}[{j}] names tensor {t}, but the task has "
                             f"{len(op.operands)}", op.loc)
                elif not len(lo) == len(hi) == op.operands[t].type.rank:
                    self.err(f"task {key}[{j}] has bounds of {len(lo)} and {len(hi)} dims "
                             f"for a tensor of {op.operands[t].type.rank}", op.loc)

    def schedule(self, doc) -> None:
        scheds = [op for op in doc.body if op.name == "schedule"]
        if len(scheds) != 1:
            self.err(f"expected one schedule op, found {len(scheds)}")
            return
        s = scheds[0].attrs
        if sorted(s["order"]) != list(range(self.ntask)):
            self.err("schedule order must list every task once" if len(s["order"]) != self.ntask
                     else "schedule order must be a permutation of the tasks")
        ncores = sum(s["cores"].values())
        for inst in s["instances"] or []:
            if inst[2] not in range(ncores):
                self.err(f"instance placed on core {inst[2]}, which the target does not have")
                break

    # -- the run record ------------------------------------------------------------------------
    def run(self, doc) -> None:
        runs = [op for op in doc.body if op.name == "run"]
        if len(runs) != 1 or len(doc.body) != 1:
            self.err(f"expected one run op, found {len(runs)}")
            return
        if not self.check(runs[0], "module"):
            return
        a = runs[0].attrs
        bad = [e[0] for e in a["events"] if e[0] >= len(a["tasks"])]
        if bad:
            self.err(f"run event of task {bad[0]}, but the record has {len(a['tasks'])} tasks")
