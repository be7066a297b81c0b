"""alloc's spread reuse (passes/alloc.py): on targets whose pipes run at once a tile takes
the bytes used longest ago instead of the lowest free ones, so that a pipe does not wait
for another's last read of the bytes it writes; it never puts two live tiles in the same
bytes of one core's buffer and never passes the buffer."""
import pathlib

import pytest

import libpypto as pypto
from libpypto import driver
from libpypto.ir.mix_ops import second_ub_tiles
from libpypto.passes.alloc import live_ranges
from libpypto.passes import DEFAULT_PIPELINE

ROOT = pathlib.Path(__file__).resolve().parents[3]
FA = str(ROOT / "bench" / "sim" / "flash_attention.py")
EXAMPLES = sorted(str(p) for p in (ROOT / "examples").glob("*.py"))


def _lower(path, reuse=None, target="a2"):
    pipe = DEFAULT_PIPELINE if reuse is None else \
        DEFAULT_PIPELINE.replace("alloc", f"alloc{{reuse={reuse}}}")
    return pypto.lower(pypto.trace(path, target=target), pipe, target=target)


def _l0c(doc):
    """(address, 'QK' or 'PV') of the cube's L0C tiles of the mixed program, in order."""
    (prog,) = [op for op in doc.body if op.name == "program" and op.attrs["core"] == "mixed"]
    return [op.attrs["addr"] for op in prog.walk()
            if op.name == "tile" and op.result.type.space == "l0c"]


def test_the_pv_matmul_does_not_write_the_bytes_fix_is_storing_the_scores_from():
    """Flash attention on a2: first fit gives the scores and the P V product the same L0C
    bytes (the P V matmul then waits for FIX to store the scores); spread gives them
    different ones, both arms of is_loop_begin alike."""
    first = _l0c(_lower(FA, "first-fit"))
    spread = _l0c(_lower(FA))                           # the target's default: spread
    assert len(set(first)) == 1
    assert spread[0] not in spread[1:] and len(set(spread[1:])) == 1


def _bytes(op, target):
    from libpypto.passes.alloc import slot_bytes
    n = op.attrs.get("slots", 1)
    return slot_bytes(op.result.type, target) * n


@pytest.mark.parametrize("path", [FA] + EXAMPLES, ids=lambda p: pathlib.Path(p).stem)
def test_spread_tiles_never_share_bytes_while_live_and_fit_the_buffers(path):
    doc = _lower(path)
    target = driver.target_for(doc)
    for prog in (op for op in doc.body if op.name == "program"):
        body = prog.regions[0]
        ranges, apart = live_ranges(body), second_ub_tiles(body)
        tiles = [op for top in body for op in top.walk() if op.name == "tile"]
        for op in tiles:
            base = op.attrs["addr"] if isinstance(op.attrs["addr"], int) else None
            if base is not None:
                assert base + _bytes(op, target) <= target.buffer(op.result.type.space)
        fixed = [op for op in tiles if isinstance(op.attrs["addr"], int)]
        for i, a in enumerate(fixed):
            for b in fixed[i + 1:]:
                va, vb = a.result, b.result
                if va.type.space != vb.type.space or (va in apart) != (vb in apart):
                    continue            # another space, or the other vector core's UB
                (la, ha), (lb, hb) = ranges.get(va, (0, 0)), ranges.get(vb, (0, 0))
                if not (la <= hb and lb <= ha):
                    continue
                x, y = a.attrs["addr"], b.attrs["addr"]
                assert x + _bytes(a, target) <= y or y + _bytes(b, target) <= x, \
                    f"{prog.attrs['name']}: {va} and {vb} share bytes while both live"


def test_the_two_vector_cores_are_planned_apart():
    """Each vector core has a UB of its own: the mixed program's tiles of vector core 1 may
    take the addresses of vector core 0's (the peak is one core's, not the two together);
    the host's C, which runs both parts on one thread, gives them a UB region of their
    own (test_mix.py runs that C and checks its result)."""
    from libpypto.codegen.c_plan import UB2_REGION, arena_layout, plan_program
    doc = _lower(FA)
    (prog,) = [op for op in doc.body if op.name == "program" and op.attrs["core"] == "mixed"]
    apart = second_ub_tiles(prog.regions[0])
    ub = [op for op in prog.walk() if op.name == "tile" and op.result.type.space == "ub"]
    mine = {op.attrs["addr"] for op in ub if op.result in apart}
    other = {op.attrs["addr"] for op in ub if op.result not in apart}
    assert apart and mine & other
    assert prog.attrs["buffers"]["ub"] <= 196608
    base, _ = arena_layout(doc.attrs["target"]["buffers"], second_ub=True)
    plan = plan_program(prog, base)
    for op in ub:
        lo, hi = plan.extent[op.result]
        region = base[UB2_REGION] if op.result in apart else base["ub"]
        assert region <= lo and hi <= region + 196608


def test_reuse_is_checked_and_the_host_keeps_first_fit():
    from libpypto.errors import UsageError
    with pytest.raises(UsageError, match="alloc reuse must be one of"):
        _lower(FA, "lowest")
    host = pypto.lower(pypto.trace(FA))
    plain = pypto.lower(pypto.trace(FA),
                        DEFAULT_PIPELINE.replace("alloc", "alloc{reuse=first-fit}"))
    assert driver.dump_ir(host, text=True) == driver.dump_ir(plain, text=True)
