"""Names from a run record as people see them: a task's label, control characters escaped."""
from __future__ import annotations

import re

_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029"
                      "\u202a-\u202e\u2066-\u2069]")


def shown(s) -> str:
    """A name from a file as terminal text: control characters as escapes (\\x1b), so a
    report can be printed and a name never moves the cursor or reorders the line."""
    def esc(m):
        c = ord(m.group(0))
        return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"
    return _CONTROL.sub(esc, str(s))


def label(task: dict) -> str:
    """`p0 (amax+sub+exp)`: a task's program and the ops fused into it."""
    name = f"{task['program']} ({'+'.join(task['ops'])})" if task.get("ops") else \
        str(task["program"])
    return f"[{'+'.join(task['labels'])}] {name}" if task.get("labels") else name
