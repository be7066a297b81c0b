"""The SVG swimlane of a run: one lane per core, one box per task instance.

Boxes are coloured by program (the legend under the time axis names each), a box's tooltip
says which instance it is, how long it took and where it came from, and back-to-back
instances keep a visible gap between them. Every name from the record is XML-escaped (and
its control characters, which XML cannot hold, written as \\x1b): a program, an op or a
source location is text in the picture, never markup.
"""
from __future__ import annotations

import math
from xml.sax.saxutils import escape

from .names import label, shown

COLORS = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1",
          "#ff9da7", "#9c755f", "#bab0ac"]
LEFT, RIGHT, TOP = 70, 20, 28      # margins around the lanes (px)
GAP = 1.0                          # px between back-to-back boxes
CHAR = 6.7                         # px per character of the 11 px monospace font


def xml(s) -> str:
    """Text (or an attribute value) for SVG: markup characters and quotes escaped."""
    return escape(shown(s), {'"': "&quot;", "'": "&apos;"})


def ticks(span_ns: float, most: int = 10) -> tuple[float, float, str]:
    """A round tick step (1, 2 or 5 times a power of ten ns) giving at most `most` ticks,
    and the unit to label them in: (step ns, unit ns, unit name)."""
    raw = max(span_ns / most, 1.0)                  # nothing finer than a nanosecond
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    unit, name = (1.0, "ns") if step < 1e3 else (1e3, "us") if step < 1e6 else (1e6, "ms")
    return step, unit, name


def _axis(y: float, t0: int, span: int, scale: float, width: int) -> list[str]:
    step, unit, name = ticks(span)
    parts = [f'<line x1="{LEFT}" y1="{y}" x2="{width - RIGHT}" y2="{y}" stroke="#333"/>']
    k = 0
    while k * step <= span:
        x = LEFT + k * step * scale
        parts.append(f'<line x1="{x:.2f}" y1="{y}" x2="{x:.2f}" y2="{y + 5}" stroke="#333"/>')
        parts.append(f'<text x="{x:.2f}" y="{y + 17}" text-anchor="middle">'
                     f'{k * step / unit:g} {name}</text>')
        k += 1
    return parts


def _legend(progs: list, names: dict, color: dict, y: float, width: int) -> tuple[list, float]:
    parts, x = [], float(LEFT)
    for p in progs:
        w = 16 + CHAR * len(shown(names[p]))
        if x + w > width - RIGHT and x > LEFT:
            x, y = float(LEFT), y + 18
        parts.append(f'<rect class="legend" x="{x:.1f}" y="{y - 10}" width="10" height="10" '
                     f'fill="{color[p]}"/>')
        parts.append(f'<text x="{x + 14:.1f}" y="{y}">{xml(names[p])}</text>')
        x += w + 14
    return parts, y


def _box(t: dict, idx: int, s: int, e: int, x: float, y: float, w: float, h: int,
         fill: str) -> str:
    where = "".join(f", {k} {t[k]}" for k in ("block", "loc") if t.get(k))
    tip = f"{label(t)} #{idx}: {(e - s) / 1e3:.1f} us{where}"
    return (f'<rect class="task" x="{x:.2f}" y="{y + 2}" width="{w:.2f}" height="{h - 4}" '
            f'fill="{fill}"><title>{xml(tip)}</title></rect>')


def swimlane_svg(doc, width: int = 1000, lane: int = 24) -> str:
    a = doc.body[0].attrs
    events, tasks = a["events"], a["tasks"]
    cores = sorted({c for _, _, c, _, _ in events}) or [0]
    t0 = min((s for _, _, _, s, _ in events), default=0)
    span = max(1, max((e for *_, e in events), default=1) - t0)
    scale = (width - LEFT - RIGHT) / span
    progs = sorted({t["program"] for t in tasks})
    color = {p: COLORS[i % len(COLORS)] for i, p in enumerate(progs)}
    names = {}
    for t in tasks:
        names.setdefault(t["program"], label(t))
    body = [f'<text x="4" y="16">kernel {xml(doc.attrs.get("kernel", "?"))} ({xml(a["backend"])}'
            f', {len(events)} task instances on {len(cores)} core{"s" if len(cores) != 1 else ""})'
            f'</text>']
    for row, c in enumerate(cores):
        body.append(f'<text x="4" y="{TOP + row * lane + lane * 0.65:.1f}">core {c}</text>')
    for ti, idx, core, s, e in events:
        w = (e - s) * scale
        w = max(0.5, w - GAP) if w > 2 * GAP else max(0.5, w)
        body.append(_box(tasks[ti], idx, s, e, LEFT + (s - t0) * scale,
                         TOP + cores.index(core) * lane, w, lane, color[tasks[ti]["program"]]))
    axis_y = TOP + lane * len(cores) + 4
    body += _axis(axis_y, t0, span, scale, width)
    legend, bottom = _legend(progs, names, color, axis_y + 40, width)
    height = int(bottom + 12)
    return "\n".join([f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" '
                      f'height="{height}" font-family="monospace" font-size="11">', *body,
                      *legend, "</svg>"]) + "\n"
