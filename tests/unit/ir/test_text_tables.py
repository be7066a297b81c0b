"""The text form's tables for people (text_tables.py): schedule instances and run records are
shown as tables in comment blocks, summarised unless full=True, and the text still reads back
into the same document (the data is written in full after the tables)."""
from __future__ import annotations

import pytest

from libpypto.ir import serde
from libpypto.ir.core import Document, Op
from libpypto.ir.text import TextError, parse_doc, print_doc


def sched_doc(n: int = 30, target: str = "a2") -> Document:
    rows = [[i // 10, i % 10, 24 + i % 7, round(0.5 * (i // 7), 3), round(0.5 * (i // 7) + 0.5, 3)]
            for i in range(n)]
    attrs = {"target": target, "cores": {"vector": 48, "cube": 24}, "order": [0, 1, 2],
             "bindings": {"x_0": n}, "instances": rows, "makespan_us": 2.5}
    return Document("sched", [Op("schedule", attrs=attrs)])


def run_doc(data: bytes) -> Document:
    attrs = {"verdict": "pass", "backend": "c", "threads": 2, "wall_s": 0.001,
             "walls_s": [0.001], "bindings": {}, "checks": [{"name": "y", "ok": True}],
             "outputs": [{"name": "y", "dtype": "float32", "shape": [4, 8],
                          "sha256": "ab" * 32, "data": data}],
             "events": [[0, i, i % 2, 100 * i, 100 * i + 90] for i in range(20)],
             "tasks": [], "compile": {}, "notice": "", "environment": {}}
    return Document("run", [Op("run", attrs=attrs)])


def same(a: Document, b: Document) -> bool:
    return serde.dumps(a) == serde.dumps(b)


def comments(text: str) -> list[str]:
    return [ln for ln in text.splitlines() if ln.startswith("#")]


def test_schedule_instances_are_a_summarised_table():
    doc = sched_doc()
    text = print_doc(doc)
    c = comments(text)
    assert c[0] == "# schedule on a2: 30 instances of 3 tasks on 7 cores, makespan 2.500 us"
    assert c[1] == "#   task  instance  core  start us  end us"
    assert c[2] == "#      0         0    24     0.000   0.500"
    assert "#   ... 20 more rows (--full shows all) ..." in c
    assert c[-1] == "#   task 2: 10 instances on 7 cores (24..30), start 1.000..2.000 us, " \
                    "end 1.500..2.500 us"
    assert same(parse_doc(text), doc)
    assert print_doc(parse_doc(text)) == text


def test_full_lists_every_row_and_changes_no_data():
    doc = sched_doc()
    full = print_doc(doc, full=True)
    assert not any("more rows" in ln for ln in comments(full))
    assert len(comments(full)) == 1 + 1 + 30 + 1 + 3
    assert same(parse_doc(full), doc) and same(parse_doc(print_doc(doc)), doc)


def test_short_tables_are_whole():
    text = print_doc(sched_doc(11))
    assert not any("more rows" in ln for ln in comments(text))
    assert same(parse_doc(text), sched_doc(11))


def test_unbound_schedule_says_so():
    doc = Document("sched", [Op("schedule", attrs={"target": "a2", "cores": {}, "order": [0],
                                                   "bindings": {}, "instances": None})])
    text = print_doc(doc)
    assert "# schedule: no instances (sizes not bound" in text
    assert same(parse_doc(text), doc)


def test_instances_are_written_last_and_wrapped():
    text = print_doc(sched_doc())
    line = next(ln for ln in text.splitlines() if ln.startswith("schedule {"))
    assert "instances" not in line and line.endswith('target="a2",')
    wrapped = [ln for ln in text.splitlines() if ln.startswith("    [")]
    assert len(wrapped) > 5 and max(len(ln) for ln in wrapped) <= 102


def test_a_name_from_a_file_cannot_leave_the_comment():
    doc = sched_doc(target='a2\nschedule {target="evil"}\n#')
    text = print_doc(doc)
    assert comments(text)[0].startswith('# schedule on a2?schedule {target="evil"}?#: 30 ')
    assert same(parse_doc(text), doc)


def test_run_outputs_by_name_shape_checksum_and_events_with_field_names():
    data = bytes(range(128))
    doc = run_doc(data)
    text = print_doc(doc)
    c = comments(text)
    assert c[0] == "# run: pass on the c backend, 2 threads, 1.000 ms"
    assert c[2] == "#   name  dtype    shape   checksum                 data"
    assert c[3] == "#   y     float32  [4, 8]  sha256:abababababababab  128 bytes, at the end"
    assert "#   task  instance  core  start ns  end ns" in c
    assert "#   ... 10 more rows (--full shows all) ..." in c
    run_line = next(ln for ln in text.splitlines() if ln.startswith("run {"))
    assert "data=blob(0)" in run_line and 'b64"' not in run_line
    assert text.splitlines()[-1].startswith('blob 0 b64"')
    back = parse_doc(text)
    assert back.body[0].attrs["outputs"][0]["data"] == data
    assert same(back, doc)


def test_small_bytes_stay_inline():
    doc = run_doc(b"\x00\x01")
    text = print_doc(doc)
    assert 'data=b64"AAE="' in text and "blob" not in text
    assert same(parse_doc(text), doc)


def test_blob_errors():
    text = print_doc(run_doc(bytes(100)))
    head, _, last = text.rstrip("\n").rpartition("\n")
    with pytest.raises(TextError, match=r"blob\(0\) is not defined"):
        parse_doc(head + "\n")
    with pytest.raises(TextError, match="blob 0 is defined twice"):
        parse_doc(text + last + "\n")
    with pytest.raises(TextError, match='expected b64"..." after blob 0'):
        parse_doc(head + '\nblob 0 "x"\n')


def test_attribute_values_may_span_lines():
    text = ('pypto-ir 1.1 sched\nschedule {bindings={},\n  cores={vector=2,\n   cube=0},\n'
            '  instances=[\n    [0, 0, 1, 0.0, 1.5],  # a comment\n\n    [0, 1, 0, 0.0, 1.5]\n'
            '  ], order=[0], target="t"}\n')
    doc = parse_doc(text)
    assert doc.body[0].attrs["instances"] == [[0, 0, 1, 0.0, 1.5], [0, 1, 0, 0.0, 1.5]]
    assert doc.body[0].attrs["cores"] == {"vector": 2, "cube": 0}
    with pytest.raises(TextError):
        parse_doc("pypto-ir 1.1 sched\nschedule {order=[0,\n")


def test_a_real_run_record_reads_back():
    import os

    import libpypto as pypto
    add = os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples", "add.py")
    rec = pypto.run(pypto.trace(add), backend="numpy")
    text = print_doc(rec)
    assert "#   out   float32  [256, 512]  sha256:" in text
    assert 'b64"' not in text.split("\nblob 0 ")[0]
    assert same(parse_doc(text), rec)
