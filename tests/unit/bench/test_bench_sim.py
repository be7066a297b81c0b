"""bench/sim/scale.py runs with tiny sizes and prints its table (no time is asserted); the
bench/sim op files (GEMM and flash attention at the issue's shapes) run and verify with a
simulated time on their targets at small sizes."""
import os
import subprocess
import sys

import pytest

import libpypto as pypto

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SIM = os.path.join(ROOT, "bench", "sim")


def test_scale_script_prints_its_table():
    p = subprocess.run([sys.executable, os.path.join(SIM, "scale.py"), "--sizes", "64,128"],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert "instances" in lines[-4] and "simulate us/inst" in lines[-4]
    assert [ln.split()[0] for ln in lines[-2:]] == ["64", "128"]


def test_gemm_and_flash_attention_op_files_run_with_a_simulated_time():
    for name, bind, target in (("gemm.py", {"M": 256, "N": 512, "K": 512}, "a3"),
                               ("flash_attention.py", {"S": 256}, "a2"),
                               ("flash_attention_rect.py", {"S0": 256, "S1": 512}, "a2")):
        doc = pypto.trace(os.path.join(SIM, name), target=target)
        a = pypto.run(doc, bind=bind, backend="numpy", target=target).body[0].attrs
        assert a["verdict"] == "pass", a["checks"]
        assert a["sim"]["target"] == target and a["sim"]["cycles"] > a["sim"]["launch_cycles"]


def test_double_buffered_pro_gemm_passes_the_checker_and_overlaps():
    """bench/sim/gemm_pro.py: its syncs satisfy the race checker, and the simulator sees
    its double buffering: the cube core's MTE2 is busier than without overlap could be."""
    from libpypto.driver import trace
    b = {"a_0": 256, "a_1": 512, "b_0": 512, "b_1": 512, "c_0": 256, "c_1": 512}
    doc = trace(os.path.join(SIM, "gemm_pro.py"), bind=b, target="a3")
    a = pypto.run(doc, bind=b, backend="numpy", target="a3", block_dim=3).body[0].attrs
    assert a["verdict"] == "pass", a["checks"]
    u = a["sim"]["utilisation"]
    assert u["MTE2"] + u["M"] > 1.0       # the two pipes overlap in time


@pytest.mark.slow
def test_flash_attention_table_prints_both_forms():
    """bench/sim/flash_attention_table.py: before and after fusion side by side, and one KV
    step's busy time per pipe (S = 256: two steps, two clusters)."""
    p = subprocess.run([sys.executable, os.path.join(SIM, "flash_attention_table.py"),
                        "--sizes", "256"], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert "before us" in out and "after us" in out and "speed-up" in out
    assert "cube 0" in out and "vector 24" in out


@pytest.mark.slow
def test_rectangular_flash_attention_table_prints_each_block_size():
    """bench/sim/fa_rect_table.py: one table per KV block size, a row per S0, a simulated
    time and a bound per S1 (small sizes)."""
    p = subprocess.run([sys.executable, os.path.join(SIM, "fa_rect_table.py"), "--s0", "128",
                        "--s1", "512,1024"], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert "KV blocks of 128" in out and "KV blocks of 512" in out
    rows = [ln.split() for ln in out.splitlines() if ln.startswith("  ") and ln.split()[0] == "128"]
    assert len(rows) == 2 and all(len(r) == 5 for r in rows)       # 128, then 2 x (us, bound)
