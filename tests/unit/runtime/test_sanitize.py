"""Native code under AddressSanitizer and UndefinedBehaviorSanitizer (`make sanitize`).

Every example runs sanitized through `pypto-run --sanitize` and through the library, the C
runtime runs alone on random task graphs with many thread counts, and kernels edited to
misbehave prove that a report is caught and becomes one error line (the Python process that
asked survives: the sanitized kernel runs in a child process).

The examples are compiled twice over with sanitizers (a minute or more), so those tests run
under `make sanitize` (pytest -m sanitize) only; the rest also runs in `make test`.
"""
from __future__ import annotations

import os
import pathlib
import random
import re
import subprocess
import sys

import numpy as np
import pytest

import libpypto as pypto
from libpypto.errors import PyptoError
from libpypto.runtime import code_op, compiler

pytestmark = [pytest.mark.needs_cc, pytest.mark.sanitize, pytest.mark.slow]
ROOT = pathlib.Path(__file__).resolve().parents[3]
BIN = pathlib.Path(sys.executable).parent
EXAMPLES = sorted(p.stem for p in (ROOT / "examples").glob("*.py"))


@pytest.fixture
def make_sanitize_only(request):
    if "sanitize" not in (request.config.getoption("markexpr") or ""):
        pytest.skip("every example under the sanitizers: make sanitize")


def pypto_run(*args, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "pypto-run"), *map(str, args)], capture_output=True,
                          timeout=900, **kw)


def bind_args(ex, name: str) -> list:
    return [a for k, v in ex.bind(name).items() for a in ("--bind", f"{k}={v}")]


# -- every example -----------------------------------------------------------------------------

@pytest.mark.parametrize("name", EXAMPLES)
def test_example_under_sanitizers_through_the_cli(name, ex, make_sanitize_only):
    p = pypto_run(ex.path(name), "--sanitize", *bind_args(ex, name), "-o", os.devnull)
    err = p.stderr.decode()
    assert p.returncode == 0, err
    assert f"pypto-run: {name}: pass" in err, err


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_under_sanitizers_through_the_library(name, ex, make_sanitize_only):
    doc = pypto.emit(pypto.trace(ex.path(name)))
    with compiler.sanitizing():
        rec = pypto.run(doc, bind=ex.bind(name), seed=1, threads=2)
    a = rec.body[0].attrs
    assert a["verdict"] == "pass", a["checks"]
    key = compiler.cache_key(code_op(doc).attrs["source"] + "\n" + compiler.runtime_source(),
                             sanitize=True)
    assert os.path.exists(os.path.join(compiler.cache_dir(), f"k_{key[:32]}.asan"))
    assert "libasan" not in pathlib.Path("/proc/self/maps").read_text()    # ran in a child


# -- the sanitizers catch what they should -----------------------------------------------------

ANCHOR = "float *const a2 = (float *)T[2];"      # add.py: out, f32[256, 512]
OUT_OF_BOUNDS = " a2[256 * 512] = 1.0f;"        # one element past the end of out
OVERFLOW = (" { volatile int pp_big = 2147483647; int pp_v = pp_big + (int)g0 + 1;"
            " a2[0] = (float)pp_v; }")


def edited_add(edit: str):
    doc = pypto.emit(pypto.trace(str(ROOT / "examples" / "add.py")))
    code = code_op(doc)
    assert ANCHOR in code.attrs["source"]
    code.attrs["source"] = code.attrs["source"].replace(ANCHOR, ANCHOR + edit, 1)
    return doc


WANT = {"oob": r"AddressSanitizer: heap-buffer-overflow in p0 \(kernel\.c:\d+",
        "overflow": r"UndefinedBehaviorSanitizer: signed integer overflow.* in p0 "
                    r"\(kernel\.c:\d+"}
EDITS = {"oob": OUT_OF_BOUNDS, "overflow": OVERFLOW}


@pytest.mark.parametrize("bug", ["oob", "overflow"])
def test_a_bad_kernel_is_one_error_line_from_the_cli(tmp_path, bug):
    from libpypto.driver import dump_ir
    f = tmp_path / "bad.code"
    f.write_bytes(dump_ir(edited_add(EDITS[bug]), False))
    p = pypto_run(f, "--sanitize", "--trust-code", "-o", os.devnull)
    err = p.stderr.decode()
    assert p.returncode == 1, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert re.match(r"pypto-run: error: " + WANT[bug], lines[0]), lines[0]


@pytest.mark.parametrize("bug", ["oob", "overflow"])
def test_a_bad_kernel_raises_from_the_library(bug):
    doc = edited_add(EDITS[bug])
    with compiler.sanitizing(), pytest.raises(PyptoError) as exc:
        pypto.run(doc, seed=1, threads=2, trust_code=True)
    assert re.match(WANT[bug], str(exc.value)), str(exc.value)
    assert exc.value.exit_code == 1
    report = re.search(r"report in (\S+)\)", str(exc.value))
    assert report, str(exc.value)
    text = pathlib.Path(report.group(1)).read_text()
    assert "ERROR: AddressSanitizer" in text or "runtime error" in text, text


def test_the_same_bad_kernel_unsanitized_is_not_caught():
    """The sanitizers, not something else, catch the bug above: without them it runs."""
    rec = pypto.run(edited_add(OUT_OF_BOUNDS), seed=1, threads=1, verify=False,
                    trust_code=True)
    assert rec.body[0].attrs["verdict"] == "unchecked"


def test_sanitize_is_refused_with_the_numpy_backend():
    p = pypto_run(ROOT / "examples" / "add.py", "--sanitize", "--backend", "numpy")
    assert p.returncode == 2
    assert "--sanitize needs the c backend" in p.stderr.decode(), p.stderr.decode()


# -- the C runtime on its own ------------------------------------------------------------------

RUNTIME_PROGRAMS = r"""
#include <stdint.h>
#include <string.h>
typedef void (*pp_prog)(void *const *T, const int64_t *S, char *B);
extern const int64_t pypto_arena_bytes;

/* T[0]: int64 runs-done per task; T[1]: flat predecessor lists. S: task, first pred, count.
   A task counts itself done only if every predecessor is done as often as it is, plus one. */
static void p0(void *const *T, const int64_t *S, char *B) {
    int64_t *done = (int64_t *)T[0];
    const int64_t *pred = (const int64_t *)T[1];
    int64_t mine = __atomic_load_n(&done[S[0]], __ATOMIC_ACQUIRE), ok = 1;
    for (int64_t k = 0; k < S[2]; k++)
        ok &= __atomic_load_n(&done[pred[S[1] + k]], __ATOMIC_ACQUIRE) == mine + 1;
    memset(B, (int)(S[0] & 0x7f), (size_t)pypto_arena_bytes);
    __atomic_store_n(&done[S[0]], mine + (ok ? 1 : 1000), __ATOMIC_RELEASE);
}
static void p1(void *const *T, const int64_t *S, char *B) {
    B[pypto_arena_bytes - 1] = 1;
    p0(T, S, B);
}
const pp_prog pypto_programs[] = {p0, p1};
const int pypto_num_programs = 2;
const int64_t pypto_arena_bytes = 4096;
"""


def random_graph(n: int, seed: int) -> tuple:
    """The runtime's tables for n tasks with up to 3 random earlier predecessors each."""
    rng = random.Random(seed)
    preds = [sorted(rng.sample(range(t), min(t, rng.randint(0, 3)))) for t in range(n)]
    flat, first = [], []
    for ps in preds:
        first.append(len(flat))
        flat.extend(ps)
    succ = [[] for _ in range(n)]
    for t, ps in enumerate(preds):
        for q in ps:
            succ[q].append(t)
    i64 = lambda xs: np.asarray(list(xs) or [0], np.int64)   # noqa: E731 -- as Plan pads
    tables = {
        "prog": np.asarray([rng.randint(0, 1) for _ in range(n)] or [0], np.int32),
        "tensor_off": i64(2 * t for t in range(n)),
        "scalars": i64(x for t in range(n) for x in (t, first[t], len(preds[t]))),
        "scalar_off": i64(3 * t for t in range(n)),
        "npred": np.asarray([len(ps) for ps in preds] or [0], np.int32),
        "succ_off": np.cumsum([0] + [len(s) for s in succ]).astype(np.int64),
        "succ": i64(x for s in succ for x in s),
    }
    done = np.zeros(max(1, n), np.int64)
    slots = [k for _ in range(n) for k in (0, 1)]
    return n, tables, [(done, True), (i64(flat), False)], slots


@pytest.mark.parametrize("n", [0, 1, 700])
def test_the_runtime_alone_under_sanitizers(n):
    from libpypto.runtime.executable import run_standalone
    path, _ = compiler.compile_shared(RUNTIME_PROGRAMS + compiler.runtime_source(),
                                      sanitize=True)
    threads = [1, 2, 8, 3, 300, 1, 2]       # the pool grows, is reused, and caps at 256
    ntasks, tables, buffers, slots = random_graph(n, seed=n)
    out = run_standalone(path, ntasks, tables, slots, buffers, threads)
    assert out["rc"] == 0
    done = buffers[0][0]
    assert (done[:n] == len(threads)).all(), done[:n][done[:n] != len(threads)]
    assert len(out["walls_ns"]) == len(threads)
    assert set(out["core"][:n].tolist()) <= set(range(threads[-1]))     # the last run's


def test_the_runtime_alone_under_threadsanitizer(tmp_path):
    """The runtime's locking, under ThreadSanitizer (which cannot be combined with ASan)."""
    from libpypto.runtime.executable import run_standalone
    (tmp_path / "rt.c").write_text(RUNTIME_PROGRAMS + compiler.runtime_source())
    exe = tmp_path / "rt.tsan"
    cc = subprocess.run([compiler.find_cc(), "-O1", "-g", "-fsanitize=thread", "-std=gnu11",
                         "-pthread", "-DPYPTO_STANDALONE", str(tmp_path / "rt.c"), "-o", str(exe)],
                        capture_output=True, text=True)
    assert cc.returncode == 0, cc.stderr
    probe = subprocess.run([str(exe)], capture_output=True, text=True)
    if "FATAL: ThreadSanitizer" in probe.stderr:        # e.g. an address layout it cannot use
        pytest.skip(f"ThreadSanitizer cannot run here: {probe.stderr.strip()[:200]}")
    threads = [1, 2, 8, 3, 300, 1, 2]
    ntasks, tables, buffers, slots = random_graph(2000, seed=5)
    out = run_standalone(str(exe), ntasks, tables, slots, buffers, threads)
    assert out["rc"] == 0
    assert (buffers[0][0][:ntasks] == len(threads)).all()


def test_sanitizer_reports_become_one_line():
    from libpypto.runtime.executable import sanitizer_error
    asan = """==1==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x6 at pc 0x5 bp 0x7
WRITE of size 4 at 0x602000000014 thread T1
    #0 0x7f3c in __interceptor_memcpy ../../../../src/libsanitizer/sanitizer_common/x.inc:827
    #1 0x55d1 in p3 kernel.c:41
    #2 0x55d2 in pp_work kernel.c:300
"""
    assert sanitizer_error(asan) == ("AddressSanitizer: heap-buffer-overflow in p3",
                                     ["kernel.c:41", "WRITE of size 4"])
    ubsan = """kernel.c:12:5: runtime error: shift exponent 40 is too large for 32-bit type 'int'
    #0 0x55d1 in p0 kernel.c:12
"""
    assert sanitizer_error(ubsan) == (
        "UndefinedBehaviorSanitizer: shift exponent 40 is too large for 32-bit type 'int' in p0",
        ["kernel.c:12:5"])
    tsan = """WARNING: ThreadSanitizer: data race (pid=12)
  Write of size 8 at 0x7b04 by thread T2:
    #0 pp_work kernel.c:88 (rt.tsan+0x1234)
"""
    assert sanitizer_error(tsan) == ("ThreadSanitizer: data race in pp_work", ["kernel.c:88"])
    leak = """==9==ERROR: LeakSanitizer: detected memory leaks
Direct leak of 100 byte(s) in 1 object(s) allocated from:
    #0 0x7f3c in __interceptor_malloc ../../../../src/libsanitizer/asan/asan_malloc_linux.cpp:69
    #1 0x5584 in pp_new_arena kernel.c:3
"""
    assert sanitizer_error(leak) == ("LeakSanitizer: detected memory leaks in pp_new_arena",
                                     ["kernel.c:3"])
    assert sanitizer_error("all fine\n") is None
