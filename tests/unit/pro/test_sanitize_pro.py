"""The Pro C (codegen/pro_c.py with pro_rt.h, pro_launch.h and rt.c's worker pool) under
AddressSanitizer and UBSan (make sanitize). `pypto-run --sanitize` refuses Pro kernels (the
sanitized build is a standalone program of Tensor mode's task tables), so this builds the
kernel's source as a sanitized shared library and loads it into a Python started with the
sanitizer runtimes preloaded: cluster memory carved from the arenas, grid shares and their
coroutine stacks, the per-task tables, for 1, 2 and 3 threads. ASan warns that it does
not fully support swapcontext; that warning is allowed, no report is."""
from __future__ import annotations

import pathlib
import shutil
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.needs_cc, pytest.mark.sanitize, pytest.mark.slow]
ROOT = pathlib.Path(__file__).resolve().parents[3]

SCRIPT = r"""
import subprocess, sys
import numpy as np
from libpypto import driver
from libpypto.runtime import code_op, data as D
from libpypto.runtime import pro_native as PN
from libpypto.runtime.compiler import runtime_source
from libpypto.runtime.pro_run import _sizes
path, kernel, bind, bd, so = sys.argv[1], sys.argv[2], eval(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
doc = driver.pro_code(driver.trace(path, kernel, None, bind))
open(so + ".c", "w").write(code_op(doc).attrs["source"] + "\n" + runtime_source())
subprocess.run(["gcc", "-O1", "-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all",
                "-fPIC", "-shared", "-std=gnu11", "-Wno-unused-variable",
                "-Wno-unused-but-set-variable", so + ".c", "-o", so, "-lm", "-lpthread"],
               check=True)
PN.compile_shared = lambda source, sanitize=False: (so, False)
native = PN.ProNative(doc, "")
env = _sizes(doc, {}, bind)
start = D.prepare(doc, {}, env, 0)
outs = []
for threads in (1, 2, 3):
    arrays = {k: v.copy() for k, v in start.items()}
    native(arrays, dict(env), bd, threads)
    outs.append(b"".join(arrays[k].tobytes() for k in sorted(arrays)))
assert outs[0] == outs[1] == outs[2]
print("clean")
"""

CASES = [("grid_sum", "{'x_0': 1000, 'part_0': 4}", 4), ("vadd", "{'x_0': 1000}", 5),
         ("matmul_bias_relu", "{'ws_0': 64}", 2), ("histogram", "{'x_0': 300}", 3)]


def _runtime(name: str) -> str:
    out = subprocess.run(["gcc", f"-print-file-name={name}"], capture_output=True,
                         text=True).stdout.strip()
    return out if out and pathlib.Path(out).is_absolute() and pathlib.Path(out).exists() else ""


@pytest.mark.parametrize("name,bind,bd", CASES)
def test_pro_c_is_clean_under_asan_and_ubsan(tmp_path, name, bind, bd):
    asan, ubsan = _runtime("libasan.so"), _runtime("libubsan.so")
    if not (shutil.which("gcc") and asan and ubsan):
        pytest.skip("gcc's libasan and libubsan are not installed")
    env = {"LD_PRELOAD": f"{asan} {ubsan}", "ASAN_OPTIONS": "detect_leaks=0",
           "PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    r = subprocess.run([sys.executable, "-c", SCRIPT, str(ROOT / "examples" / "pro" /
                        f"{name}.py"), name, bind, str(bd), str(tmp_path / "k.so")],
                       capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    reports = [ln for ln in r.stderr.splitlines() if "ERROR: AddressSanitizer" in ln or
               "runtime error:" in ln]
    assert r.returncode == 0 and not reports and "clean" in r.stdout, r.stderr[-3000:]
