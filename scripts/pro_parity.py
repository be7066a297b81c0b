"""Count the reference's documented Pro-mode API items that exist in pypto, per family.

    git -C <hicann/pypto checkout> ls-tree -r --name-only HEAD docs/zh/pypto_pro/api > pages.txt
    python scripts/pro_parity.py pages.txt [--missing]

One item per documentation page of docs/zh/pypto_pro/api/ (index pages and figures left
out), plus the SIMT API, which the reference documents only in its source
(python/pypto_pro/language/_simt_api.py: function, launch, thread_idx, block_idx,
block_dim, grid_dim, linear_thread_idx, warp_size). A page names one API or a pair
(sync_src_sync_dst); an item exists when pypto has every name it documents, in the
namespace the reference puts it: `pl.<name>` for tile, cube, movement, resources, utils;
`pl.system.<name>` for synchronisation; `pl.simt.<name>` for SIMT; `Vf.<name>` (`from
libpypto.pro import Vf`) for Reg computation (its enums are `pl.<name>`; a Vf name that only
raises "not built", prolang/vf_api.NOT_BUILT, does not count); `subview` is tile slicing and
`store_atomic` `pl.store(atomic=)`, as the reference's pages say. Existing does not mean
identical: the parity table of docs/pro.md says where pypto differs.
"""
from __future__ import annotations

import sys

SIMT = ["function", "launch", "thread_idx", "block_idx", "block_dim", "grid_dim",
        "linear_thread_idx", "warp_size"]

# pages whose name is not the API name (or documents several names)
PAGES = {
    "comparison": ["eq", "ne", "lt", "le", "gt", "ge"],
    "section_vector_section_cube": ["section_vector", "section_cube"],
    "sync_src_sync_dst": ["system.sync_src", "system.sync_dst"],
    "set_cross_core_wait_cross_core": ["system.set_cross_core", "system.wait_cross_core"],
    "mutex_lock_mutex_unlock": ["system.mutex_lock", "system.mutex_unlock"],
    "barrier": ["system.bar_all"],
    "sync_all": ["system.sync_all"],
    "set_mm_layout_transform": ["system.set_mm_layout_transform"],
    "phase": ["AccPhase", "STPhase"],
    "DataType": ["DT_FP32"],
    "Tile": ["make_tile"],
    "store_atomic": ["store", "AtomicType"],     # the page: store(atomic=AtomicAdd), no new API
}

FAMILIES = [("basic_data_structures", "types"), ("matrix_computation", "cube"),
            ("memory_data_movement", "data movement"), ("atomic_operations", "data movement"),
            ("cache_control", "data movement"), ("quantization", "cube"),
            ("memory_vector_computation", "tile (vector)"),
            ("resource_management", "resources"), ("synchronization", "sync"),
            ("system_variables", "SPMD"), ("controlflow", "control flow"),
            ("utilities", "utils"), ("vf_computation", "Reg (VF)"),
            ("debugging", "debugging"), ("python_syntax_sugar", "utils")]


def items(lines: list[str]) -> list[tuple[str, str]]:
    """(family, page name) per documented item; then the SIMT API."""
    out = []
    for ln in lines:
        parts = ln.strip().split("/")
        if "figures" in parts or not parts[-1].endswith(".md") or parts[-1] == "index.md":
            continue
        fam = next((f for key, f in FAMILIES if key in parts), None)
        if fam is not None:
            out.append((fam, parts[-1][:-3]))
    return out + [("SIMT", n) for n in SIMT]


def _has(root, dotted: str) -> bool:
    obj = root
    for part in dotted.split("."):
        if not hasattr(obj, part):
            return False
        obj = getattr(obj, part)
    return True


def exists(family: str, name: str) -> bool:
    import libpypto.pro as pl
    if family == "SIMT":
        return _has(pl, f"simt.{name}")
    if family == "Reg (VF)":
        from libpypto.prolang.vf_api import NOT_BUILT
        if name == "reg_tensor":
            return _has(pl, "Vf.RegTensor") or _has(pl, "RegTensor")
        if name in NOT_BUILT:              # a name that only says it is not built
            return False
        return _has(pl, f"Vf.{name}") or _has(pl, name)      # the enums are pl.<name>
    if name == "subview":                  # tile[r0:r1, c0:c1]
        from libpypto.prolang.tiles import Tile
        return hasattr(Tile, "__getitem__")
    names = PAGES.get(name, [name])
    return all(_has(pl, n) or _has(pl, f"system.{n}") for n in names)


def main(argv: list[str]) -> int:
    its = items(open(argv[0]).read().splitlines())
    table: dict = {}
    for fam, name in its:
        have, miss = table.setdefault(fam, ([], []))
        (have if exists(fam, name) else miss).append(name)
    total = sum(len(h) for h, _ in table.values())
    print(f"{total} of {len(its)} documented Pro items exist")
    for fam, (have, miss) in table.items():
        line = f"  {fam}: {len(have)} of {len(have) + len(miss)}"
        print(line + (f"; missing: {', '.join(miss)}" if "--missing" in argv and miss else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
