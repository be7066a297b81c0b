"""PTO virtual-instruction listing of each program: pipe, instruction, operands, valid region.

Instruction names follow the PTO ISA (TLOAD, TSTORE, TADD, TROWMAX, TMATMUL, ...); tiles are
named by memory space and buffer offset, e.g. UB@0x0400:f32[8, 1024].
"""
from __future__ import annotations

from ..ir import expr as E
from ..ir import ops as O
from ..ir.defs import OPS
from ..ir.reg_ops import REG_OPS, reg_line
from .srclines import LineNotes, printable, source_map

_MOVES = ("tmov", "tcvt", "treshape", "textract", "texpands",
          "tmov_acc2vec")    # listed with their offsets


def _pro_instr(op, names: dict, lines: list, depth: int, notes) -> None:
    """A Pro kernel's runtime branch or synchronisation instruction."""
    ind, a = "  " * depth, op.attrs
    if op.name != "if":
        lines.append(f"{ind}{a.get('pipe', '?'):<5} {OPS[op.name].pto} {_SYNC[op.name](a)}")
        return
    lines.append(f"{ind}IF {E.to_str(a['cond'])}")
    for k, region in enumerate(op.regions):
        if k:
            lines.append(f"{ind}ELSE")
        for inner in region:
            _instr(inner, names, lines, depth + 1, notes)
    lines.append(f"{ind}ENDIF")


def _ev(a) -> str:
    return E.to_str(a["event_id"])


# the synchronisation instructions (ir/pro_ops.py): their operands as the listing shows them
_SYNC = {
    "sync_set": lambda a: f"{a['pipe']} -> {a['wait_pipe']}, #{_ev(a)}",
    "sync_wait": lambda a: f"{a['set_pipe']} -> {a['pipe']}, #{_ev(a)}",
    "barrier": lambda a: a["which"],
    "mutex_lock": lambda a: f"#{E.to_str(a['mutex_id'])}",
    "mutex_unlock": lambda a: f"#{E.to_str(a['mutex_id'])}",
    "cross_set": lambda a: f"#{_ev(a)}, {a['mode']}",
    "cross_wait": lambda a: f"#{_ev(a)}, {a['mode']}",
    "mm_layout": lambda a: "on" if a["enabled"] else "off",
    "sync_all": lambda a: f"{a['core_type']}, {a['mode']}",
    # a mixed program's part marker (ir/mix_ops.py): the core the instructions after it use
    "section": lambda a: a["core"] + (f" {a['sub']}" if "sub" in a else ""),
}


def listing(programs: list, doc=None) -> str:
    """The listing of the programs; with doc, the op file's lines it carries as `;` comments
    before the first instruction of each line (srclines.py)."""
    src = source_map(doc) if doc is not None else {}
    out = []
    for p in programs:
        out.extend(_program(p, LineNotes(src)))
        out.append("")
    return "\n".join(out)


def _program(p, notes: LineNotes) -> list[str]:
    a = p.attrs
    names: dict = {}
    lines = [f".program {a['name']}  ; core={a['core']}  ops={','.join(a.get('ops', []))}",
             f"  .grid g0..g{a['grid_rank'] - 1}" if a["grid_rank"] else "  .grid none",
             f"  .scalars {' '.join(a['scalars']) or 'none'}"]
    for op in p.regions[0]:
        if op.name == "arg":
            names[op.result] = op.result.name
            lines.append(f"  .arg {op.result.name} : gm.{op.result.type}")
    for space, n in sorted(a.get("buffers", {}).items()):
        lines.append(f"  .buffer {space.upper()} {n} B")
    for op in p.regions[0]:
        if op.name != "arg":
            _instr(op, names, lines, 1, notes)
    lines.append(".end")
    return lines


def _tile_name(op, names: dict) -> str:
    t = op.result.type
    addr = op.attrs.get("addr", 0)
    name = f"{t.space.upper()}@0x{addr:05x}" if isinstance(addr, int) else \
        f"{t.space.upper()}@({E.to_str(addr)})"      # a tile group slot chosen at run time
    names[op.result] = name
    return name


def _tile_line(op, names: dict) -> str:
    name, a = _tile_name(op, names), op.attrs
    stride = f" row stride {a['stride']}" if "stride" in a else ""     # a Pro subview
    return f".tile {name} : {op.result.type.dtype}{list(op.result.type.shape)}{stride}"


def _options(a: dict) -> str:
    """Pro mode's options of a load, store or move (order, fixpipe relu and scale, atomic)."""
    out = []
    if "order" in a:
        out.append(f"order {a['order']}")
    if a.get("relu"):
        out.append("relu")
    if "scale" in a:
        s = a["scale"]
        out.append(f"scale {E.to_str(s) if isinstance(s, E.Expr) else s}")
    if a.get("atomic"):
        out.append(f"atomic {a['atomic']}")
    if "mx" in a:                       # an MX scale load (prolang/ops_more.py)
        out.append(f"mx scales {a['mx']}")
    return f"  ; {', '.join(out)}" if out else ""


_NOTED = ("mode", "offset", "block_len", "msb", "dim", "alpha", "init")   # tile_ops_more.py


def _noted(n: str, a: dict) -> str:
    """The attributes of the instructions of ir/tile_ops_more.py, as a comment."""
    if OPS[n].impl.get("numpy") != "tpro_only":
        return ""
    out = [f"{k} {E.to_str(a[k]) if isinstance(a[k], E.Expr) else a[k]}" for k in _NOTED
           if k in a]
    return f"  ; {', '.join(out)}" if out else ""


def _fmt_box(offsets, valid) -> str:
    return "[" + ", ".join(E.to_str(o) for o in offsets) + "] valid [" + \
        ", ".join(E.to_str(v) for v in valid) + "]"


def _move_note(n: str, a: dict) -> str:
    """A move's offsets, transposition, fill value or L0C -> UB mode, as a comment."""
    extra = f"  ; offsets [{', '.join(E.to_str(o) for o in a['offsets'])}]" \
        if "offsets" in a else ""
    if a.get("trans"):
        extra += ", transposed"
    if n == "texpands":
        extra = f"  ; value {a['value']}"
    if n == "tmov_acc2vec":         # L0C -> the vector cores' UB (prolang/pipeline.py)
        extra = f"  ; AccToVecMode::{a['mode']}"
    return extra


def _instr(op, names: dict, lines: list, depth: int, notes: LineNotes) -> None:
    ind = "  " * depth
    n, a = op.name, op.attrs
    lines.extend(f"{ind}; {printable(note)}" for note in notes.notes([op]))
    if n == "tile" or n in REG_OPS:     # a tile; Pro mode's registers and Reg instructions
        lines.append(f"{ind}{_tile_line(op, names) if n == 'tile' else reg_line(op, names)}")
        return
    if n == "for":
        lines.append(f"{ind}LOOP {a['var']} = {E.to_str(a['start'])} .. {E.to_str(a['stop'])} "
                     f"step {E.to_str(a['step'])}")
        for inner in op.regions[0]:
            _instr(inner, names, lines, depth + 1, notes)
        lines.append(f"{ind}ENDLOOP {a['var']}")
        return
    if n == "if" or n in _SYNC:
        _pro_instr(op, names, lines, depth, notes)
        return
    pipe = a.get("pipe", "?")
    ops = [names.get(v, getattr(v, "name", "?")) for v in op.operands]
    if n == "tload":
        text = f"TLOAD {ops[0]}, {ops[1]}{_fmt_box(a['offsets'], a['valid'])}{_options(a)}"
    elif n == "tstore":
        text = f"TSTORE {ops[1]}{_fmt_box(a['offsets'], a['valid'])}, {ops[0]}{_options(a)}"
    elif n == "treduce":
        src = op.operands[1].type
        dims = a["dims"]
        if dims == [src.rank - 1]:
            mnem = O.REDUCE[a["kind"]][3]
        elif dims == [0] and src.rank == 2:
            mnem = O.REDUCE[a["kind"]][4]
        else:
            mnem = f"TREDUCE{a['kind'].upper()}"
        text = f"{mnem} {ops[0]}, {ops[1]}  ; dims {dims}, valid [" + \
            ", ".join(E.to_str(v) for v in a["valid"]) + "]"
    elif n == "tmatmul":
        mnem = "TMATMUL_BIAS" if len(ops) == 4 else "TMATMUL[_ACC]"
        text = f"{mnem} {', '.join(ops)}  ; fresh when {E.to_str(a['init'])}, " \
               f"k valid {E.to_str(a['k_valid'])}"
    elif n in _MOVES:
        text = f"{OPS[n].pto} {', '.join(ops)}{_move_note(n, a)}"
    elif n.startswith("t") and n[1:] in O.ELEMENTWISE:
        base = OPS[n].pto
        if "scalar" in a:
            s = a["scalar"]
            s = E.to_str(s) if isinstance(s, E.Expr) else repr(s)
            text = f"{base}S {', '.join(ops)}, #{s}" + \
                ("  ; scalar on the left" if a.get("scalar_side") == "lhs" else "")
        else:
            shapes = {v.type.shape for v in op.operands}
            suffix = "  ; broadcast" if len(shapes) > 1 else ""
            text = f"{base} {', '.join(ops)}{suffix}"
    else:
        text = _simt_text(op, ops) if n == "simt_launch" else \
            f"{OPS[n].pto} {', '.join(ops)}{_noted(n, a)}"
    lines.append(f"{ind}{pipe:<5} {text}")


def _simt_text(op, ops) -> str:
    """A SIMT launch (ir/simt_ops.py): its function and thread dims (the body is in -S)."""
    a = op.attrs
    return (f"{OPS[op.name].pto} {', '.join(ops)}  ; {a['fn']}, threads "
            f"{'x'.join(str(d) for d in a['threads'])}, {len(a['regs'])} registers")
