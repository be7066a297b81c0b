"""Resource limits, checked before the work they bound: what a file or a binding asks for
never hangs the machine or allocates past its memory. Each can be raised through the
environment (PYPTO_MAX_<NAME>=N) by whoever runs the tools. The limits on what a file may
hold (nesting, expression size) are checked while it is read: libpypto/ir/limits.py."""
from __future__ import annotations

import os

from ..errors import LimitError  # noqa: F401  (raised here; defined on the ground floor)
from ..ir.limits import env_limit


def _memory() -> int:
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2
    except (ValueError, OSError, AttributeError):
        return 8 << 30


DEFAULTS = {
    "BYTES": _memory(),          # all the tensors of a run together (half the machine's RAM)
    "INSTANCES": 1 << 26,        # task instances of a run
    "LAUNCHES": 1 << 22,         # task launches (a launch per loop iteration)
}


def limit(name: str) -> int:
    return env_limit(name, DEFAULTS[name])


def require(name: str, amount: int, what: str) -> None:
    """Refuse `amount` of resource `name` when it is over its limit."""
    cap = limit(name)
    if amount > cap:
        raise LimitError(f"{what} ({amount:,}) is over the limit of {cap:,}; set "
                         f"PYPTO_MAX_{name} to allow more")
