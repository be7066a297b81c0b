"""Pro mode's debug utilities (prolang/debug.py, ir/debug_ops.py, runtime/pro_debug.py,
codegen/pro_debug_c.py): printf output and its order (1 and 2 threads, the Pro runner and
the C), dump_data files against the tile's numpy values, pto_assert and trap errors, and a
printf format as data (never a C format, never C code)."""
from __future__ import annotations

import ctypes
import ctypes.util

import numpy as np
import pytest

import libpypto.pro as pl
from libpypto.errors import CompileError, PyptoError
from libpypto.ir.debug_ops import debug_ops, parse_format
from libpypto.ir.defs import check_op
from libpypto.runtime.compiler import find_cc
from libpypto.runtime.pro_debug import ProAssertError, ProTrapError, format_text

needs_cc = pytest.mark.skipif(find_cc() is None, reason="no C compiler")
MTE2, MTE3, V = pl.PipeType.MTE2, pl.PipeType.MTE3, pl.PipeType.V
R, C = 8, 32


@pl.jit
def talk(x: pl.Tensor[[pl.DYNAMIC, C], pl.DT_FP32], y: pl.Tensor[[pl.DYNAMIC, C], pl.DT_FP32],
         s: pl.DT_INT32, f: pl.DT_FP32):
    tt = pl.TileType(shape=[R, C], dtype=pl.DT_FP32, target_memory=pl.MemorySpace.Vec)
    a = pl.make_tile(tt, addr=0)
    n = x.shape[0] // R
    with pl.section_vector():
        for t in pl.range(pl.get_block_idx(), n, pl.get_block_num()):
            pl.printf("t=%d s=%+4d u=%u f=%08.3f h=%#06x\n", t, s, s, f, t * 4097)
            pl.pto_assert(t * 10 < s, "t=%d s=%d", t, s)
            pl.load(a, x, [t * R, 0])
            pl.system.sync_src(set_pipe=MTE2, wait_pipe=V, event_id=0)
            pl.system.sync_dst(set_pipe=MTE2, wait_pipe=V, event_id=0)
            pl.dump_data(a)
            pl.dump_data(a, offsets=[t % 2, 3], shapes=[2, 5])
            pl.system.sync_src(set_pipe=V, wait_pipe=MTE3, event_id=0)
            pl.system.sync_dst(set_pipe=V, wait_pipe=MTE3, event_id=0)
            pl.store(y, a, [t * R, 0])
            pl.system.sync_src(set_pipe=MTE3, wait_pipe=MTE2, event_id=0)
            pl.system.sync_dst(set_pipe=MTE3, wait_pipe=MTE2, event_id=0)


def _want_text(n_tiles, block_dim, s, f) -> str:
    """The printf lines, by an independent formula: blocks in order, each its tiles."""
    out = []
    for b in range(block_dim):
        for t in range(b, n_tiles, block_dim):
            h = f"{t * 4097:#06x}" if t else "000000"
            out.append(f"[block {b} vector S] t={t} s={s:+4d} u={s & (2**64 - 1)} "
                       f"f={np.float32(f):08.3f} h={h}\n")
    return "".join(out)


def _launch(k, capsys, tmp_path, args, block_dim, threads, backend="numpy"):
    k.threads, k.backend, k.dump_dir = threads, backend, str(tmp_path)
    try:
        k[block_dim](*args)
    finally:
        k.threads, k.backend, k.dump_dir = None, "numpy", None
    return capsys.readouterr().out


@pytest.mark.parametrize("backend", ["numpy", pytest.param("c", marks=needs_cc)])
def test_printf_text_and_order_for_1_and_2_threads(capsys, tmp_path, backend):
    x = np.random.default_rng(0).standard_normal((7 * R, C)).astype(np.float32)
    outs = []
    for threads in (1, 2):
        y = np.zeros_like(x)
        outs.append(_launch(talk, capsys, tmp_path / str(threads), (x, y, 100, 2.71828),
                            3, threads, backend))
        np.testing.assert_array_equal(y, x)
    assert outs[0] == outs[1] == _want_text(7, 3, 100, 2.71828)


@pytest.mark.parametrize("backend", ["numpy", pytest.param("c", marks=needs_cc)])
def test_dump_data_files_hold_the_tile(capsys, tmp_path, backend):
    x = np.random.default_rng(1).standard_normal((5 * R, C)).astype(np.float32)
    _launch(talk, capsys, tmp_path, (x, np.zeros_like(x), 100, 1.0), 2, 2, backend)
    files = sorted(p.name for p in tmp_path.iterdir())
    want = []
    for b in range(2):
        for i, t in enumerate(range(b, 5, 2)):
            want += [f"dump_line{_line('pl.dump_data(a)')}_block{b}_{i}.npy",
                     f"dump_line{_line('pl.dump_data(a, offsets')}_block{b}_{i}.npy"]
            whole = np.load(tmp_path / want[-2])
            np.testing.assert_array_equal(whole, x[t * R:(t + 1) * R])
            win = np.load(tmp_path / want[-1])
            assert win.dtype == np.float32 and win.shape == (2, 5)
            np.testing.assert_array_equal(win, x[t * R + t % 2:t * R + t % 2 + 2, 3:8])
    assert files == sorted(want)


def _line(text: str) -> int:
    return _line_of(talk, text)


def _line_of(k, text: str) -> int:
    import inspect
    src, first = inspect.getsourcelines(k.fn)
    return first + next(i for i, ln in enumerate(src) if text in ln)


@pytest.mark.parametrize("backend,check", [("numpy", True), pytest.param("c", False,
                                                                         marks=needs_cc),
                                           pytest.param("c", True, marks=needs_cc)])
def test_failing_assert_names_block_line_condition_and_values(capsys, tmp_path, backend,
                                                              check):
    """C with the checker: the Pro runner (run first) fails, and its lines are shown."""
    x = np.zeros((6 * R, C), np.float32)
    talk.check = check
    try:
        with pytest.raises(ProAssertError) as e:
            _launch(talk, capsys, tmp_path, (x, np.zeros_like(x), 25, 1.0), 2, 2, backend)
    finally:
        talk.check = True
    assert str(e.value) == (f"test_debug.py:{_line('pl.pto_assert')}: pto_assert failed on "
                            f"block 0 (vector core, S pipe): Assertion failed: t * 10 < s; "
                            f"t=4 s=25")
    # blocks 0 and 1 both fail (tiles 4 and 3): the lowest block's error, and what the
    # blocks up to it printed, up to the failure (never block 1's: for any thread count)
    out = capsys.readouterr().out
    assert out == "".join(ln for ln in _want_text(6, 2, 25, 1.0).splitlines(True)
                          if ln.startswith("[block 0 "))


@pl.jit
def stop(x: pl.Tensor[[16, 32], pl.DT_FP32], y: pl.Tensor[[64, 32], pl.DT_FP32],
         n: pl.DT_INT32):
    tt = pl.TileType(shape=[16, 32], dtype=pl.DT_FP32, target_memory=pl.MemorySpace.Vec)
    a = pl.make_tile(tt, addr=0)
    with pl.section_vector():
        pl.load(a, x, [0, 0])
        pl.printf("before\n", loc=True)
        if pl.get_block_idx() == n:
            pl.trap()
        pl.printf("after\n")
        _copy_out(a, y)


def _copy_out(a, y):
    pl.system.sync_src(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
    pl.system.sync_dst(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
    pl.store(y, a, [pl.get_block_idx() * 16, 0])


@pytest.mark.parametrize("backend", ["numpy", pytest.param("c", marks=needs_cc)])
def test_trap_stops_the_run_naming_block_and_line(capsys, tmp_path, backend):
    x = np.zeros((16, 32), np.float32)
    stop.check = False
    try:
        with pytest.raises(ProTrapError) as e:
            _launch(stop, capsys, tmp_path, (x, np.zeros((64, 32), np.float32), 2), 4, 2,
                    backend)
        at = f"test_debug.py:{_line_of(stop, 'before')}"       # loc=True
        assert capsys.readouterr().out == "".join(
            f"[block {b} vector S {at}] before\n[block {b} vector S] after\n"
            for b in (0, 1)) + f"[block 2 vector S {at}] before\n"
        _launch(stop, capsys, tmp_path, (x, np.zeros((64, 32), np.float32), 9), 2, 1,
                backend)       # no block traps
    finally:
        stop.check = True
    assert "pl.trap() reached on block 2 (vector core, S pipe)" in str(e.value)
    assert str(e.value).startswith("test_debug.py:")


def test_format_subset_matches_c_snprintf():
    """The Pro runner's Python formatting against the C library's snprintf (what the C
    prints with), over every flag, widths and values at the edges."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    buf = ctypes.create_string_buffer(512)
    ints = [0, 1, -1, 7, -42, 255, 2**31, -2**31, 2**63 - 1, -2**63]
    floats = [0.0, -0.0, 1.5, -2.25, 3.14159, 1e-7, 123456.789, 3.4e38, float("inf"),
              float("-inf"), float("nan")]
    for flags in ["", "-", "+", " ", "0", "-+", "+0", " 0", "#", "#0", "-#"]:
        for width in ["", "1", "8", "20"]:
            for conv, vals in (("d", ints), ("i", ints), ("u", ints), ("x", ints),
                               ("f", floats), (".0f", floats), (".3f", floats)):
                fmt = f"<%{flags}{width}{conv}>"
                try:
                    parse_format(fmt)
                except ValueError:
                    continue
                for v in vals:
                    if conv[-1] == "f":
                        libc.snprintf(buf, 512, fmt.encode(), ctypes.c_double(
                            float(np.float32(v)) if v == v else float("nan")))
                    else:
                        spec = fmt.replace(conv, "ll" + conv)
                        libc.snprintf(buf, 512, spec.encode(), ctypes.c_longlong(v))
                    assert format_text(fmt, [v]) == buf.value.decode(), (fmt, v)


@pytest.mark.parametrize("fmt", ["%n", "%s", "%%", "%p", "%lld", "%c", "%5", "%#d", "%.2d",
                                 "%999d", "bell\x07", "%*d"])
def test_formats_outside_the_subset_are_refused(fmt):
    with pytest.raises(ValueError):
        parse_format(fmt)


HOSTILE = 'q"\\" ); abort(); /* */ ?? \\n %d \n\t\'end\\'


@pl.jit
def hostile(x: pl.Tensor[[16, 32], pl.DT_FP32], y: pl.Tensor[[64, 32], pl.DT_FP32]):
    tt = pl.TileType(shape=[16, 32], dtype=pl.DT_FP32, target_memory=pl.MemorySpace.Vec)
    a = pl.make_tile(tt, addr=0)
    with pl.section_vector():
        pl.load(a, x, [0, 0])
        pl.printf(HOSTILE, pl.get_block_idx())
        pl.pto_assert(True, HOSTILE, 5)
        _copy_out(a, y)


@pytest.mark.parametrize("backend", ["numpy", pytest.param("c", marks=needs_cc)])
def test_a_format_with_quotes_backslashes_and_newlines_is_text(capsys, tmp_path, backend):
    x = np.zeros((16, 32), np.float32)
    out = _launch(hostile, capsys, tmp_path, (x, np.zeros((64, 32), np.float32)), 2,
                  2, backend)
    want = "".join(f"[block {b} vector S] " + ln + "\n" for b in (0, 1)
                   for ln in HOSTILE.replace("%d", str(b)).rstrip("\n").split("\n"))
    assert out == want
    from libpypto.codegen.pro_c import render
    from libpypto.codegen.pro_debug_c import c_string
    src = render(hostile.compile({}, {}))
    lit = c_string(HOSTILE.split("%d")[0])
    assert lit in src and set(lit[1:-1]) <= set("abcdefghijklmnopqrstuvwxyz ,.:;=_-\\0123456789")
    assert "abort" in src and "abort(" not in src and "%n" not in src


def test_a_format_read_from_a_file_is_checked():
    """IR files are data: a dbg_printf whose format holds %n (or a mismatched count) is
    refused by the op's definition before anything runs it."""
    doc = hostile.compile({}, {})
    op = next(iter(debug_ops(doc).values()))
    errs = []
    check_op(op, "tile", errs.append)
    assert errs == []
    op.attrs["format"] = "%n%d"
    check_op(op, "tile", errs.append)
    assert errs and "conversion '%n'" in errs[0]
    errs.clear()
    op.attrs["format"] = "%d %d"
    check_op(op, "tile", errs.append)
    assert errs and "2 conversions and 1 arguments" in errs[0]


def test_trace_errors_for_bad_debug_calls():
    def kernel_with(body):
        src = ("import libpypto.pro as pl\n"
               "def k(x: pl.Tensor[[16, 32], pl.DT_FP32], f: pl.DT_FP32):  # noqa\n"
               "    tt = pl.TileType(shape=[16, 32], dtype=pl.DT_FP32)\n"
               "    a = pl.make_tile(tt, addr=0)\n"
               "    with pl.section_vector():\n"
               f"        {body}\n")
        return src
    cases = {"pl.printf('%d', f)": "must be an integer scalar",
             "pl.printf('%f', 3)": "must be an fp32 value",
             "pl.printf('%d %d', 1)": "2 conversions, and 1 arguments",
             "pl.printf('%s', 1)": "does not support conversion '%s'",
             "pl.pto_assert(3)": "takes a boolean condition",
             "pl.dump_data(x, offsets=[0], shapes=[1])": "2 entries each",
             "pl.dump_data(x, flag='x')": "takes no workspace= or flag=",
             "pl.dump_data(a, offsets=[0, 0])": "offsets and shapes go together",
             "pl.dump_data(a, flag='x')": "flag= is not supported"}
    import importlib.util
    import pathlib
    import tempfile
    for body, msg in cases.items():
        with tempfile.TemporaryDirectory() as d:
            path = pathlib.Path(d) / "bad_debug.py"
            path.write_text(kernel_with(body))
            spec = importlib.util.spec_from_file_location("bad_debug", path)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            k = pl.jit(mod.k)
            with pytest.raises(CompileError) as e:
                k.compile({}, {})
            assert msg in str(e.value), (body, str(e.value))
            assert "bad_debug.py:6" in str(e.value)


def test_errors_are_pyptoerrors():
    assert issubclass(ProAssertError, PyptoError) and issubclass(ProTrapError, PyptoError)


def _mixed_kernel(tmp_path):
    """examples/pro/matmul_bias_relu.py with a printf in each section and a dump of the
    accumulator (FIX pipe, after the M -> FIX sync): a mixed kernel."""
    import importlib.util
    import pathlib
    src = (pathlib.Path(__file__).resolve().parents[3] / "examples" / "pro" /
           "matmul_bias_relu.py").read_text()
    cube = "            sync(MM, FIX)\n"
    vec = "            pl.relu(xt, xt)\n"
    assert cube in src and vec in src
    src = src.replace(cube, cube + '            pl.printf("cube t=%d\\n", t)\n'
                      "            pl.dump_data(acc)\n")
    src = src.replace(vec, vec + '            pl.printf("vec t=%d row=%d\\n", t, row)\n')
    path = tmp_path / "mixed_debug.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("mixed_debug", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod, src.splitlines().index("            pl.dump_data(acc)") + 1


@pytest.mark.parametrize("backend", ["numpy", pytest.param("c", marks=needs_cc)])
def test_mixed_kernel_prints_cube_then_each_vector_core_and_dumps_acc(capsys, tmp_path,
                                                                      backend):
    mod, dump_line = _mixed_kernel(tmp_path)
    k, M, TM, HALF = mod.matmul_bias_relu, mod.M, mod.TM, mod.HALF
    rng = np.random.default_rng(5)
    a = rng.standard_normal((M, mod.K)).astype(np.float16)
    b = rng.standard_normal((mod.K, mod.N)).astype(np.float16)
    bias = rng.standard_normal((1, mod.N)).astype(np.float32)
    outs = []
    for threads in (1, 2):
        args = (a, b, bias, np.zeros((2 * TM, mod.N), np.float32),
                np.zeros((M, mod.N), np.float32))
        outs.append(_launch(k, capsys, tmp_path / f"d{threads}", args, 2, threads, backend))
    want = []
    for c in range(2):
        tiles = range(c, M // TM, 2)
        want += [f"[block {c} cube S] cube t={t}\n" for t in tiles]
        for v in (0, 1):
            want += [f"[block {2 * c + v} vector S] vec t={t} row={v * HALF}\n" for t in tiles]
    assert outs[0] == outs[1] == "".join(want)
    prod = a.astype(np.float64) @ b.astype(np.float64)
    for c in range(2):
        for i, t in enumerate(range(c, M // TM, 2)):
            got = np.load(tmp_path / "d2" / f"dump_line{dump_line}_block{c}_{i}.npy")
            assert got.dtype == np.float32 and got.shape == (TM, mod.N)
            np.testing.assert_allclose(got, prod[t * TM:(t + 1) * TM], rtol=1e-5, atol=1e-5)


@pl.jit
def unsynced(x: pl.Tensor[[16, 32], pl.DT_FP32], y: pl.Tensor[[16, 32], pl.DT_FP32],
             f: pl.DT_FP32):
    tt = pl.TileType(shape=[16, 32], dtype=pl.DT_FP32)
    a = pl.make_tile(tt, addr=0)
    with pl.section_vector():
        pl.load(a, x, [0, 0])
        pl.printf("%f %f %8.2f %f|%-6d|\n", 1.5, float("inf"), f * 2,
                  pl.const(0.1, pl.DT_FP16), -3)
        pl.dump_data(a)                       # V reads what MTE2 writes: no sync
        pl.system.sync_src(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
        pl.store(y, a, [0, 0])


def test_dump_data_reads_its_tile_for_the_checker(capsys, tmp_path):
    from libpypto.runtime.pro_check import SyncError
    x = np.zeros((16, 32), np.float32)
    with pytest.raises(SyncError) as e:
        _launch(unsynced, capsys, tmp_path, (x, x.copy(), 1.25), 1, 1)
    assert "tload on MTE2" in str(e.value) and "dbg_dump on V" in str(e.value)
    assert capsys.readouterr().out == \
        f"[block 0 vector S] 1.500000 inf     2.50 {np.float16(0.1):f}|-3    |\n"
    assert list(tmp_path.iterdir()) == []     # the racing dump never ran


@pytest.mark.parametrize("backend", ["numpy", pytest.param("c", marks=needs_cc)])
def test_grid_wide_kernel_prints_in_block_order(capsys, tmp_path, backend):
    """examples/pro/grid_sum.py (sync_all: every cluster resident, one scheduler / one task
    per worker) with a printf before and after the barrier."""
    import importlib.util
    import pathlib
    src = (pathlib.Path(__file__).resolve().parents[3] / "examples" / "pro" /
           "grid_sum.py").read_text()
    bar = "        pl.system.sync_all(core_type=pl.SyncCoreType.AIV_ONLY)\n"
    assert bar in src
    src = src.replace(bar, '        pl.printf("before %d\\n", b)\n' + bar +
                      '        pl.printf("after %d\\n", b * 10)\n')
    path = tmp_path / "grid_debug.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("grid_debug", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    x = np.random.default_rng(2).standard_normal((300, mod.COLS)).astype(np.float32)
    outs = [_launch(mod.grid_sum, capsys, tmp_path, (x, np.zeros((4, mod.COLS), np.float32),
                                                     np.zeros((1, mod.COLS), np.float32)),
                    4, threads, backend) for threads in (1, 2)]
    assert outs[0] == outs[1] == "".join(f"[block {b} vector S] before {b}\n"
                                         f"[block {b} vector S] after {b * 10}\n"
                                         for b in range(4))


@pl.jit
def gm_dump(x: pl.Tensor[[pl.DYNAMIC, C], pl.DT_FP32], y: pl.Tensor[[pl.DYNAMIC, C], pl.DT_FP32]):
    tt = pl.TileType(shape=[R, C], dtype=pl.DT_FP32, target_memory=pl.MemorySpace.Vec)
    a = pl.make_tile(tt, addr=0)
    n = x.shape[0] // R
    with pl.section_vector():
        b = pl.get_block_idx()
        pl.dump_data(x)                                          # all of an input
        for t in pl.range(b, n, pl.get_block_num()):
            pl.load(a, x, [t * R, 0])
            pl.system.sync_src(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
            pl.system.sync_dst(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
            pl.store(y, a, [t * R, 0])
            pl.system.sync_src(set_pipe=MTE3, wait_pipe=V, event_id=0)
            pl.system.sync_dst(set_pipe=MTE3, wait_pipe=V, event_id=0)
            pl.dump_data(y, offsets=[t * R + 1, 2], shapes=[3, 4])   # a window just stored
            pl.system.sync_src(set_pipe=V, wait_pipe=MTE2, event_id=0)
            pl.system.sync_dst(set_pipe=V, wait_pipe=MTE2, event_id=0)


@pytest.mark.parametrize("backend", ["numpy", pytest.param("c", marks=needs_cc)])
def test_dump_data_of_gm_tensors(capsys, tmp_path, backend):
    x = np.random.default_rng(4).standard_normal((4 * R, C)).astype(np.float32)
    y = np.zeros_like(x)
    _launch(gm_dump, capsys, tmp_path, (x, y), 2, 2, backend)
    whole, win = _line_of(gm_dump, "pl.dump_data(x)"), _line_of(gm_dump, "pl.dump_data(y")
    for b in range(2):
        np.testing.assert_array_equal(np.load(tmp_path / f"dump_line{whole}_block{b}_0.npy"), x)
        for i, t in enumerate(range(b, 4, 2)):
            got = np.load(tmp_path / f"dump_line{win}_block{b}_{i}.npy")
            np.testing.assert_array_equal(got, x[t * R + 1:t * R + 4, 2:6])
    assert len(list(tmp_path.iterdir())) == 6


def test_dump_data_of_gm_is_checked_as_a_read():
    """Drop the MTE3 -> V pair: the dump reads GM the store wrote, unordered."""
    import inspect
    src = inspect.getsource(gm_dump.fn).replace(
        "pl.system.sync_dst(set_pipe=MTE3, wait_pipe=V, event_id=0)", "pass")
    assert "pass" in src
    from libpypto.runtime.pro_check import SyncError
    ns = {"pl": pl, "R": R, "C": C, "MTE2": MTE2, "MTE3": MTE3, "V": V}
    import pathlib
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        path = pathlib.Path(d) / "gm_race.py"
        path.write_text("import libpypto.pro as pl\n" + "".join(
            f"{k} = {v!r}\n" for k, v in {"R": R, "C": C}.items()) +
            "MTE2, MTE3, V = pl.PipeType.MTE2, pl.PipeType.MTE3, pl.PipeType.V\n" +
            src.replace("@pl.jit\n", ""))
        code = compile(path.read_text(), str(path), "exec")
        exec(code, ns)
        k = pl.jit(ns["gm_dump"])
        k.dump_dir = d                        # the whole-x dump runs before the race
        x = np.zeros((2 * R, C), np.float32)
        with pytest.raises(SyncError) as e:
            k.launch((x, x.copy()), 1)
    assert "tstore on MTE3" in str(e.value) and "dbg_dump_gm on V" in str(e.value)
