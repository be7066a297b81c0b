"""Split-K matmul: `set_cube_tile_shapes(m, k, n, enable_split_k=True)` (the reference's
switch for "multi-core K split": a convenience, not tuned).

A matmul whose M x N output takes fewer cube tiles than the target has cube cores leaves
cores idle; with the switch on, its static K is cut into parts (whole L1 K tiles each), each
part is a matmul of its own (its own grid, so the parts run on different cores), and the
fp32 (int32) partial products are added in part order, then cast: a deterministic sum, in
a different order from one K loop (results agree within the dtype's rounding, not bit for
bit). Parts: enough for the output tiles times the parts to reach the cube cores, at most
one per L1 K tile. A host target whose core count is automatic splits as for 8 cores, so a
traced document does not depend on the machine that traced it. Symbolic sizes count as one
tile; a symbolic K is not split.
"""
from __future__ import annotations

HOST_CORES = 8


def parts(b, m, k, n) -> list[tuple[int, int]]:
    """[(k0, k1), ...] K ranges of the parts, or [] when nothing is split."""
    if not isinstance(k, int):
        return []
    (mL0, _), (_, kL1), (nL0, _) = b.cube_tile
    nk = -(-k // kL1)
    tiles = (-(-m // mL0) if isinstance(m, int) else 1) * \
        (-(-n // nL0) if isinstance(n, int) else 1)
    cores = _cube_cores(b.target)
    want = min(nk, max(1, -(-cores // tiles)))
    if want < 2:
        return []
    cut = [i * nk // want * kL1 for i in range(want)] + [k]
    return [(cut[i], min(cut[i + 1], k)) for i in range(want)]


def _cube_cores(target) -> int:
    if target is None:
        return HOST_CORES
    counts = target.data.get("cores", {})
    n = counts.get("cube", 0) or counts.get("mixed", 0)
    return int(n) if n else HOST_CORES
