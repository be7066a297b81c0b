"""The debug instructions of Pro mode on the host (ir/debug_ops.py): the Pro runner's rules,
the records both execution paths leave, and what a launch does with them.

- `dbg_printf` formats its arguments (ir/debug_ops.parse_format: the C-compatible subset)
  and leaves a record; `dbg_dump` leaves a copy of the tile's window (default: its valid
  region); `dbg_assert` with a false condition and `dbg_trap` stop the run with
  ProAssertError / ProTrapError (PyptoError subclasses: exit 1 from the tools, an exception
  in process), naming the block, the core, the op file line, the condition's source and the
  formatted message.
- Records are kept per cluster (Debug.record; the C keeps a log per cluster and core,
  read back by NativeLog) and written out by Debug.flush after the launch, clusters in
  order, within a cluster the cube core's records then vector core 0's then vector core
  1's, each core's in program order: the same bytes for any thread count and from both
  paths. When a launch fails, the records of the clusters up to the failing one are
  written (the failing one's up to the failure) before the error is raised.
- Printed text goes to `out` (a callable taking a str; pypto-run: stderr, whose stdout
  is the run record; a pl.jit launch: sys.stdout), one line per printed line, prefixed
  `[block <g0> <cube|vector> S] ` (with the op file line when loc=True); a record that
  does not end in a newline gets one.
- A dump goes to `<dump_dir>/dump_line<L>_block<B>_<n>.npy`: L the op file line, B the
  block index, n counting that line's dumps on that block (0, 1, ...). Nothing in an IR
  file chooses the directory (the user does: pypto-run --dump-dir, pl.jit's dump_dir,
  default the current directory) or any part of the name but the numbers.
"""
from __future__ import annotations

import ctypes
import os
import struct
import threading

import numpy as np

from ..errors import PyptoError
from ..ir.debug_ops import debug_ops, parse_format

MASK64 = (1 << 64) - 1


class ProAssertError(PyptoError):
    """A pl.pto_assert whose condition was false at run time."""


class ProTrapError(PyptoError):
    """A pl.trap reached at run time."""


# -- formatting (the Python half of the C's snprintf) -----------------------------------------

def format_text(fmt: str, args: list) -> str:
    """The text of printf(fmt, *args), as C's snprintf prints it (pro_debug_c.py): integer
    conversions take int64 values (%u %x their uint64 bits), %f an fp32 value."""
    out, it = [], iter(args)
    for piece in parse_format(fmt):
        if isinstance(piece, str):
            out.append(piece)
            continue
        flags, width, prec, conv = piece
        v = next(it)
        if conv == "f":
            v = float(np.float32(v))
            if v != v:
                v = float("nan")        # C prints a negative NaN as "-nan"; both say "nan"
            if v != v or v in (float("inf"), float("-inf")):
                flags = flags.replace("0", "")   # C pads inf and nan with spaces
        else:
            v = int(v) & MASK64
            if conv in "di":
                v = v - (1 << 64) if v >= 1 << 63 else v
            else:
                flags = flags.replace("+", "").replace(" ", "")   # C ignores them unsigned
                if v == 0:
                    flags = flags.replace("#", "")                 # C: %#x of 0 is "0"
        spec = "%" + flags + (str(width) if width else "") + \
            (f".{prec}" if prec is not None else "") + conv
        out.append(spec % v)
    return "".join(out)


# -- the sink ---------------------------------------------------------------------------------

class Debug:
    """Where a launch's debug records go: out (a callable taking text, or None to drop
    printed text) and dump_dir (a directory for .npy dumps, or None to drop dumps)."""

    def __init__(self, out=None, dump_dir: str | None = None):
        self.out, self.dump_dir = out, dump_dir
        self.records: dict = {}          # cluster -> [(core id, seq, op, g0, payload)]
        self.lock = threading.Lock()
        self.printed: list = []          # every line written to out, for tests
        self.dumped: list = []           # every file written

    def record(self, cluster: int, core_id: int, op, g0: int, payload) -> None:
        with self.lock:
            recs = self.records.setdefault(cluster, [])
            recs.append((core_id, len(recs), op, g0, payload))

    def flush(self, upto: int | None = None) -> None:
        """Write the records of clusters <= upto (all when None) in order, then forget all."""
        with self.lock:
            recs, self.records = self.records, {}
        counts: dict = {}
        for c in sorted(recs):
            if upto is not None and c > upto:
                continue
            for core_id, _, op, g0, payload in sorted(recs[c], key=lambda r: r[:2]):
                if op.name == "dbg_printf":
                    self._print(op, core_id, g0, payload)
                elif op.name in ("dbg_dump", "dbg_dump_gm"):
                    self._dump(op, g0, payload, counts)

    def _print(self, op, core_id, g0, text) -> None:
        where = f" {op.loc.file}:{op.loc.line}" if op.attrs.get("show_location") and \
            op.loc else ""
        prefix = f"[block {g0} {'cube' if core_id == 0 else 'vector'} S{where}] "
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        text = "".join(prefix + ln + "\n" for ln in lines) or prefix + "\n"
        self.printed.append(text)
        if self.out is not None:
            self.out(text)

    def _dump(self, op, g0, arr, counts) -> None:
        line = op.loc.line if op.loc else 0
        n = counts[(line, g0)] = counts.get((line, g0), -1) + 1
        name = f"dump_line{int(line)}_block{int(g0)}_{n}.npy"
        if self.dump_dir is None:
            return
        os.makedirs(self.dump_dir, exist_ok=True)
        path = os.path.join(self.dump_dir, name)
        np.save(path, arr)
        self.dumped.append(path)


def flushing(sink, fn, /, *args, **kwargs):
    """fn(*args, **kwargs) with sink's records (a Debug, or None) written out after it, also
    when it fails (then only the clusters up to the failing one's, exc.cluster)."""
    if sink is None:
        return fn(*args, **kwargs)
    try:
        out = fn(*args, **kwargs)
    except PyptoError as exc:
        sink.flush(getattr(exc, "cluster", None))
        raise
    sink.flush()
    return out


def rehearsed(sink, fn, /, *args, **kwargs):
    """fn(*args, debug=<a silent Debug>, **kwargs): a run before the reported one (the
    Pro runner before the C); returns (fn's result, its printed lines). When it fails, its
    lines go to sink's out first, so a failing assert shows what was printed before it."""
    mine = Debug() if sink is not None else None
    try:
        out = flushing(mine, fn, *args, debug=mine, **kwargs)
    except PyptoError:
        for text in (mine.printed if mine is not None else []):
            if sink.out is not None:
                sink.out(text)
        raise
    return out, (mine.printed if mine is not None else None)


# -- the Pro runner's rules -------------------------------------------------------------------

def _kind(core) -> str:
    return "cube" if core.id == 0 else "vector"


def _record(core, op, payload) -> None:
    debug = getattr(core.cluster, "debug", None)
    if debug is not None:
        debug.record(core.cluster.index, core.id, op, int(core.g0), payload)


def _args(core, op, env) -> list:
    return [core.ev(a, env) for a in op.attrs.get("args", [])]


def _printf(core, op, env) -> None:
    _record(core, op, format_text(op.attrs["format"], _args(core, op, env)))


def assert_error(op, g0: int, core_kind: str, text: str) -> ProAssertError:
    msg = f"pto_assert failed on block {g0} ({core_kind} core, S pipe): Assertion " \
          f"failed: {op.attrs['text']}"
    text = text.strip("\n").replace("\n", "; ")
    return ProAssertError(msg + (f"; {text}" if text else ""), op.loc)


def trap_error(op, g0: int, core_kind: str) -> ProTrapError:
    return ProTrapError(f"pl.trap() reached on block {g0} ({core_kind} core, S pipe): the "
                        f"run stops", op.loc)


def _assert(core, op, env) -> None:
    if core.ev(op.attrs["cond"], env):
        return
    text = format_text(op.attrs["format"], _args(core, op, env)) if op.attrs["format"] else ""
    exc = assert_error(op, int(core.g0), _kind(core), text)
    exc.cluster = core.cluster.index
    raise exc


def _trap(core, op, env) -> None:
    exc = trap_error(op, int(core.g0), _kind(core))
    exc.cluster = core.cluster.index
    raise exc


def window(op, evaluate, shape) -> tuple:
    """(row, col, rows, cols) of a dump's window, checked inside the tile."""
    o0, o1 = (int(evaluate(x)) for x in op.attrs["offsets"])
    r, c = (int(evaluate(x)) for x in op.attrs["shape"])
    if o0 < 0 or o1 < 0 or r < 0 or c < 0 or o0 + r > shape[0] or o1 + c > shape[1]:
        raise PyptoError(f"dump_data window [{o0}:{o0 + r}, {o1}:{o1 + c}] is outside the "
                         f"{list(shape)} tile", op.loc)
    return o0, o1, r, c


def _dump(core, op, env) -> None:
    tile = core.vals[op.operands[0]]
    o0, o1, r, c = window(op, lambda x: core.ev(x, env), tile.shape)
    _record(core, op, np.array(tile[o0:o0 + r, o1:o1 + c], copy=True))


def gm_window(op, evaluate, shape) -> tuple:
    """(lo, hi) per dim of a GM dump's window, checked inside the tensor."""
    lo = [int(evaluate(x)) for x in op.attrs["offsets"]]
    hi = [a + int(evaluate(x)) for a, x in zip(lo, op.attrs["shape"])]
    if any(a < 0 or b < a or b > n for a, b, n in zip(lo, hi, shape)):
        box = ", ".join(f"{a}:{b}" for a, b in zip(lo, hi))
        raise PyptoError(f"dump_data of {op.operands[0].name}[{box}] is outside its shape "
                         f"{list(shape)}", op.loc)
    return lo, hi


def _dump_gm(core, op, env) -> None:
    arr = core.vals[op.operands[0]]
    lo, hi = gm_window(op, lambda x: core.ev(x, env), arr.shape)
    name = op.operands[0].name
    if core.chk.enabled:              # the checker: a read of the window on op's pipe
        box = ", ".join(f"{a}:{b}" for a, b in zip(lo, hi))
        core.chk.access((core.key, op.attrs["pipe"]), ("gm", name), lo, hi, False,
                        f"tensor {name}[{box}]", op)
    _record(core, op, np.array(arr[tuple(slice(a, b) for a, b in zip(lo, hi))], copy=True))


KERNELS = {"dbg_printf": _printf, "dbg_assert": _assert, "dbg_dump": _dump,
           "dbg_dump_gm": _dump_gm, "dbg_trap": _trap}


# -- the C's logs -----------------------------------------------------------------------------

HEAD = struct.Struct("<iiqqqq")      # program, op number in it, g0, rows, cols, bytes


class NativeLog:
    """The debug logs of one C launch (codegen/pro_debug_c.py): one per (cluster, core),
    allocated before the launch, read into a Debug after it."""

    def __init__(self, lib, block_dim: int):
        self.lib, self.n = lib, block_dim
        lib.pypto_pro_debug_log.restype = ctypes.c_void_p
        if not lib.pypto_pro_debug_begin(ctypes.c_int64(block_dim)):
            raise PyptoError("C backend: out of memory for the debug logs")

    def take(self, doc, debug: Debug | None) -> list:
        """Every record, into debug (when given); frees the logs. Returns the assert and
        trap records [(cluster, op, g0, core id, text)]."""
        ops = debug_ops(doc)
        stops = []
        try:
            for i in range(3 * self.n):
                size = ctypes.c_int64(0)
                ptr = self.lib.pypto_pro_debug_log(ctypes.c_int64(i), ctypes.byref(size))
                data = ctypes.string_at(ptr, size.value) if ptr and size.value else b""
                for k, g0, rows, cols, payload in _records(data):
                    op = ops.get(k)         # k: (program, number), both from the C
                    if op is None:
                        raise PyptoError(f"C backend: a debug record names no instruction "
                                         f"({k})")
                    c, core_id = divmod(i, 3)
                    if op.name in ("dbg_assert", "dbg_trap"):
                        stops.append((c, op, g0, core_id, payload.decode("utf-8", "replace")))
                    elif debug is not None:
                        debug.record(c, core_id, op, g0, _payload(op, rows, cols, payload))
        finally:
            self.lib.pypto_pro_debug_end()
        return stops


def _records(data: bytes):
    at = 0
    while at + HEAD.size <= len(data):
        p, j, g0, rows, cols, n = HEAD.unpack_from(data, at)
        at += HEAD.size
        yield (p, j), g0, rows, cols, data[at:at + n]
        at += (n + 7) // 8 * 8


def _payload(op, rows: int, cols: int, payload: bytes):
    if op.name == "dbg_printf":
        return payload.decode("utf-8", "replace")
    dt = op.operands[0].type.dtype.np
    if op.name == "dbg_dump_gm":      # the window's dims (int64), then its elements
        rank = op.operands[0].type.rank
        dims = [int(d) for d in np.frombuffer(payload[:8 * rank], np.int64)]
        return np.frombuffer(payload[8 * rank:], dt).reshape(dims).copy()
    return np.frombuffer(payload, dt).reshape(rows, cols).copy()


def native_stop(stops: list, cluster: int) -> PyptoError | None:
    """The error of a C launch stopped by an assert or a trap in `cluster`, or None."""
    for c, op, g0, core_id, text in sorted(stops, key=lambda s: s[0]):
        if c == cluster:
            kind = "cube" if core_id == 0 else "vector"
            exc = assert_error(op, g0, kind, text) if op.name == "dbg_assert" else \
                trap_error(op, g0, kind)
            exc.cluster = c
            return exc
    return None

