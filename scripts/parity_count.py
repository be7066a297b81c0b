"""Count the reference's documented Tensor-mode API items that exist in pypto.

    git -C <hicann/pypto checkout> ls-tree -r --name-only HEAD docs/zh/api > pages.txt
    python scripts/parity_count.py pages.txt [--missing]

One item per documentation page of docs/zh/api/ (operation, tensor, datatype, config,
controlflow, element, symbolic, others; index pages and figures left out). An item exists
when pypto has the name: pypto.<op>, a traced tensor's method or property, an enum, the
SymbolicScalar method on pypto.SymScalar, an Element attribute. Existing does not mean
identical: docs/parity.md lists the differences.
"""
from __future__ import annotations

import sys


def items(lines: list[str]) -> list[tuple[str, str]]:
    out = []
    for ln in lines:
        parts = ln.strip().split("/")
        if len(parts) < 5 or not parts[-1].endswith(".md") or parts[-1] == "index.md" or \
                parts[-1].startswith("index_"):
            continue
        group, page = parts[3], parts[-1][:-3]
        name = page.removeprefix("pypto-")
        out.append((group, name))
    return out


def exists(group: str, name: str) -> bool:
    import libpypto as pypto
    from libpypto.frontend import catalogue, tensor
    if group == "operation":
        if name.startswith("experimental-"):
            exp = getattr(pypto, "experimental", None)
            return exp is not None and hasattr(exp, name[len("experimental-"):])
        return _has(pypto, name)
    if group == "tensor":
        if name.startswith("Tensor_"):
            return True                         # constructor, introduction
        m = name.removeprefix("Tensor-")
        return m in catalogue.METHODS or hasattr(tensor.TraceTensor, m) or \
            m in ("getitem", "shape", "dtype", "dim")
    if group == "symbolic":
        if name.startswith("SymbolicScalar_"):
            return True
        return hasattr(tensor.SymScalar, name.removeprefix("SymbolicScalar-"))
    if group == "element":
        if name.startswith("Element_"):
            return _has(pypto, "Element")
        return _has(pypto, "Element") and name.removeprefix("Element-") in ("dtype", "value")
    if group == "others" and name == "frontend-function":
        return hasattr(pypto.frontend, "function")
    if group == "config" and name == "frontend-jit":
        return hasattr(pypto.frontend, "jit")
    return _has(pypto, name)


def _has(mod, name: str) -> bool:
    try:
        getattr(mod, name)
        return True
    except AttributeError:
        return False


def main(argv: list[str]) -> int:
    lines = open(argv[0]).read().splitlines()
    its = items(lines)
    missing = [f"{g}/{n}" for g, n in its if not exists(g, n)]
    print(f"{len(its) - len(missing)} of {len(its)} documented items exist")
    if "--missing" in argv:
        print("\n".join(missing))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
