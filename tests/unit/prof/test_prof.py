"""pypto-prof's outputs for people: tables, the Chrome trace and the SVG swimlane.

Names in a run record came from files, so every output is tried with hostile ones: markup
(`<script>`), entities and quotes, control characters, bidi overrides.
"""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from libpypto.ir.core import Document, Op
from libpypto.prof import chrome_trace, profile, tables
from libpypto.prof.svg import swimlane_svg, ticks

SVG = "{http://www.w3.org/2000/svg}"
HOSTILE = ['<script>alert("x")</script>', "a&b", "q'\"", "\x1b[2J\x07", "\u202eevil",
           "]]><![CDATA[", "&amp;"]


def record(events=None, tasks=None, kernel="k", **attrs) -> Document:
    tasks = tasks or [{"program": "p0", "ops": ["add", "assemble"], "block": "b0",
                       "bytes": 1000, "flops": 10, "loc": "op.py:3"},
                      {"program": "p1", "ops": ["exp"], "block": "b1", "bytes": 10,
                       "flops": 10, "loc": "op.py:4"}]
    events = events or [[0, 0, 0, 1000, 5000], [0, 1, 1, 1000, 4000], [1, 0, 0, 5000, 9000]]
    a = {"verdict": "pass", "backend": "c", "threads": 2, "wall_s": 1e-5, "walls_s": [1e-5],
         "bindings": {}, "outputs": [], "checks": [], "events": events, "tasks": tasks,
         "compile": {}, "notice": "", "environment": {}, **attrs}
    return Document("run", [Op("run", [], [], a, [], None)], {"kernel": kernel}, [])


def hostile_record() -> Document:
    tasks = [{"program": name, "ops": [name, "add"], "block": name, "bytes": 8, "flops": 1,
              "loc": f"{name}.py:1"} for name in HOSTILE]
    events = [[i, 0, i % 2, 1000 * i, 1000 * i + 800] for i in range(len(HOSTILE))]
    return record(events, tasks, kernel='</svg><script>k</script>')


def texts(root) -> list[str]:
    return ["".join(e.itertext()) for e in root.iter() if e.tag in (SVG + "text", SVG + "title")]


def test_svg_escapes_every_name():
    svg = swimlane_svg(hostile_record())
    root = ET.fromstring(svg)                       # well-formed XML, whatever the names
    assert {e.tag for e in root.iter()} <= {SVG + t for t in ("svg", "text", "rect", "line",
                                                              "title")}
    assert "<script" not in svg and "\x1b" not in svg and "\u202e" not in svg
    shown = "\n".join(texts(root))
    for name in ('<script>alert("x")</script>', "a&b", "q'\"", "]]><![CDATA[", "&amp;"):
        assert f"{name} ({name}+add)" in shown                   # the legend, as text
    assert "\\x1b[2J\\x07 (" in shown and "\\u202eevil" in shown
    assert "kernel </svg><script>k</script> (c, " in shown


def test_chrome_trace_escapes_by_construction():
    doc = hostile_record()
    events = json.loads(json.dumps(chrome_trace(doc)))["traceEvents"]
    names = [e["name"] for e in events if e["ph"] == "X"]
    assert names == [f"{n} ({n}+add)" for n in HOSTILE]
    assert [e["args"]["loc"] for e in events if e["ph"] == "X"] == [f"{n}.py:1" for n in HOSTILE]


def test_tables_escape_control_characters():
    text = tables(hostile_record(), "plain")
    assert "\x1b" not in text and "\u202e" not in text and "\x07" not in text
    assert "\\x1b[2J\\x07" in text and "\\u202eevil" in text


def test_svg_has_a_time_axis_a_legend_and_gaps():
    root = ET.fromstring(swimlane_svg(record()))
    boxes = [r for r in root.iter(SVG + "rect") if r.get("class") == "task"]
    assert len(boxes) == 3
    legend = [r for r in root.iter(SVG + "rect") if r.get("class") == "legend"]
    assert len(legend) == 2 and {r.get("fill") for r in legend} == {b.get("fill") for b in boxes}
    shown = texts(root)
    assert "p0 (add+assemble)" in shown and "p1 (exp)" in shown
    labels = [t for t in shown if t.endswith(" us")]
    assert labels[:3] == ["0 us", "1 us", "2 us"] and labels[-1] == "8 us"
    # core 0 runs p0 then p1 back to back (1..5 us, 5..9 us): a gap shows between them
    core0 = sorted((float(b.get("x")), float(b.get("width"))) for b in boxes
                   if b.get("y") == boxes[0].get("y"))
    (x0, w0), (x1, _) = core0
    assert x0 + w0 < x1
    tip = next(b.find(SVG + "title").text for b in boxes)
    assert tip == "p0 (add+assemble) #0: 4.0 us, block b0, loc op.py:3"


@pytest.mark.parametrize("span_ns, step, unit", [
    (9000, 1000, "us"), (1, 1, "ns"), (999, 100, "ns"), (2.5e6, 5e5, "us"), (7e7, 1e7, "ms"),
    (1.2e9, 2e8, "ms"),
])
def test_ticks_are_round(span_ns, step, unit):
    s, _, name = ticks(span_ns)
    assert (s, name) == (step, unit)
    assert span_ns / s <= 10


PREDICTED = {"makespan_us": 7.5, "lower_bound_us": 6.0, "critical_path_us": 6.0,
             "target": "a2"}


def test_the_prediction_beside_the_measured_time():
    for doc, kw in ((record(), {"predicted": PREDICTED}), (record(predicted=PREDICTED), {})):
        text = profile(doc, fmt="plain", **kw)
        head = text.splitlines()[0]
        assert head == ("kernel k: pass, c backend, 2 threads, wall 0.010 ms (predicted "
                        "0.007 ms on a2, lower bound 0.006 ms)")
        rows = {ln.rsplit(None, 1)[0]: ln.rsplit(None, 1)[1] for ln in text.splitlines()
                if ln.startswith("predicted ")}
        assert rows == {"predicted makespan (ms)": "0.007", "predicted lower bound (ms)": "0.006"}
    assert "predicted" not in profile(record(), fmt="plain")
