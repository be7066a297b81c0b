"""Resource limits, checked before the work they bound: what a file or a binding asks for
never hangs the machine or allocates past its memory. Each can be raised through the
environment (PYPTO_MAX_<NAME>=N) by whoever runs the tools."""
from __future__ import annotations

import os

from ..errors import PyptoError


class LimitError(PyptoError):
    """A request beyond a resource limit (exit 2: change the request or raise the limit)."""

    exit_code = 2


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
    raw = os.environ.get(f"PYPTO_MAX_{name}")
    try:
        return int(raw) if raw else DEFAULTS[name]
    except ValueError:
        return DEFAULTS[name]


def require(name: str, amount: int, what: str) -> None:
    """Refuse `amount` of resource `name` when it is over its limit."""
    cap = limit(name)
    if amount > cap:
        raise LimitError(f"{what} ({amount:,}) is over the limit of {cap:,}; set "
                         f"PYPTO_MAX_{name} to allow more")
