"""Exceptions the library raises; the CLI boundary (libpypto.cli) turns them into one line.

The ground floor of the library, which is why the release number lives here too.
"""
from __future__ import annotations

RELEASE = "0.1.0"          # libpypto.__version__; pyproject.toml's version


class PyptoError(Exception):
    """A failure to report to the user. exit_code: 1 the work failed, 2 bad usage or input."""

    exit_code = 1

    def __init__(self, message: str, loc=None):
        super().__init__(message)
        self.message = message
        self.loc = loc

    def __str__(self) -> str:
        return f"{self.loc}: {self.message}" if self.loc is not None else self.message


class CompileError(PyptoError):
    """The user's op is wrong (shape mismatch, bad tile shape, writing an input, ...)."""


class VerifyError(PyptoError):
    """A graph breaks its level's invariants (a pass bug, or a hand-edited file)."""


class MismatchError(PyptoError):
    """Results disagree with the numpy reference."""


class InputError(PyptoError):
    """Unreadable or unsuitable input: garbage, truncated, wrong level, future version."""

    exit_code = 2


class LimitError(PyptoError):
    """A request beyond a resource limit (exit 2: change the request or raise the limit);
    the limits are in libpypto/analysis/limits.py and libpypto/ir/limits.py."""

    exit_code = 2


class UsageError(PyptoError):
    """Bad command-line usage: unknown pass, malformed option, missing binding."""

    exit_code = 2


_warn_handler = None


def set_warning_handler(fn) -> None:
    """Route warnings (fn(message, loc)); the CLI prints them as `tool: warning: ...`."""
    global _warn_handler
    _warn_handler = fn


def warn(message: str, loc=None) -> None:
    if _warn_handler is not None:
        _warn_handler(message, loc)
        return
    import warnings
    warnings.warn(f"{loc}: {message}" if loc else message, stacklevel=3)
