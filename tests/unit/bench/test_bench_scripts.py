"""The benchmark scripts run (make bench, bench/calls.py) in their --quick mode and print
their tables; a case suite plugs in through cases(quick). No time is asserted: the numbers
are measured on a shared machine and only the tables' shape is checked."""
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__)))))

pytestmark = [pytest.mark.needs_cc, pytest.mark.slow]


def run(*args, env=None) -> str:
    p = subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True,
                       timeout=600, env=env)
    assert p.returncode == 0, p.stderr[-2000:]
    return p.stdout


def test_calls_quick_prints_both_tables():
    out = run("bench/calls.py", "--quick")
    assert "overhead us" in out and "dispatch/task us (mean)" in out
    assert out.count("8x256 f32 add") == 2 and out.count("tasks of 8x256 add") == 2


def test_bench_quick_prints_every_case_and_says_what_it_skipped():
    out = run("bench/bench.py", "--quick", "--reps", "1")
    for op in ("softmax", "rmsnorm", "matmul"):                # one row per thread count
        assert len(re.findall(rf"^{op}  +\S", out, re.M)) == 2, out
    for row in ("matmul f32 + bias + silu", "flash attention"):     # rows of the suites
        assert len(re.findall(rf"^{re.escape(row)}  +\S", out, re.M)) == 2, out
    assert "MISMATCH" not in out
    assert "STREAM triad GB/s" in out and "overhead us" in out
    assert "skipped torch.compile: --quick" in out or "skipped torch eager" in out
    for suite in ("fused", "matmul"):
        assert f"bench/{suite}.py" in out or os.path.exists(os.path.join(ROOT, "bench",
                                                                          f"{suite}.py"))


def test_a_suite_module_plugs_in(tmp_path):
    """A suite is a module with cases(quick); bench.py takes its rows (here a stand-in for
    bench/fused.py, loaded through the same code by pointing SUITES at a copy)."""
    suite = tmp_path / "extra.py"
    suite.write_text(
        "import numpy as np\n"
        "def cases(quick):\n"
        "    x = np.arange(12, dtype=np.float32)\n"
        "    y = np.zeros_like(x)\n"
        "    yield {'op': 'standin', 'shape': '12 f32', 'pypto': lambda: np.add(x, 1, out=y),\n"
        "           'result': lambda: y, 'numpy': lambda: x + 1, 'bytes': 2 * x.nbytes}\n")
    code = ("import sys; sys.path.insert(0, 'bench'); import bench; "
            f"bench.HERE = {str(tmp_path)!r}; bench.SUITES = ('extra', 'absent'); "
            "bench.cases = lambda quick: iter(()); "
            "sys.exit(bench.main(['--quick', '--reps', '1', '--no-calls']))")
    out = run("-c", code)
    assert out.count("\nstandin ") == 2 and "bench/absent.py: not present" in out
