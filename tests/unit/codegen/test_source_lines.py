"""The op file's lines as comments in the PTO listing and the generated C (srclines.py):
carried by the document from trace time, once per line and program, escaped so that nothing
from a file can end the comment; the C stays deterministic and pypto-run's re-emission check
passes with them."""
from __future__ import annotations

import os
import re

import pytest

import libpypto as pypto
from libpypto.driver import _check_source
from libpypto.ir.text import parse_doc, print_doc
from libpypto.runtime import code_op

EX = os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples")
ADD = os.path.join(EX, "add.py")
SOFTMAX = os.path.join(EX, "softmax.py")


def code(path, edit=None):
    doc = pypto.trace(path)
    if edit:
        edit(doc)
    return pypto.emit(pypto.schedule(pypto.lower(doc)))


def test_trace_carries_the_lines_ops_are_at():
    lines = pypto.trace(SOFTMAX).attrs["lines"]
    assert ["softmax.py", 11, "m = pypto.amax(x, dim=-1, keepdim=True)"] in lines
    assert ["softmax.py", 13, "y[:] = e / pypto.sum(e, dim=-1, keepdim=True)"] in lines
    assert all(ln[0] == "softmax.py" for ln in lines)


def test_listing_and_c_carry_each_line_once():
    a = code_op(code(SOFTMAX)).attrs
    for n, text in ((11, "m = pypto.amax(x, dim=-1, keepdim=True)"), (12, "e = pypto.exp(x - m)"),
                    (13, "y[:] = e / pypto.sum(e, dim=-1, keepdim=True)")):
        assert a["listing"].count(f"  ; softmax.py:{n}: {text}\n") == 1
        assert a["source"].count(f"/* softmax.py:{n}: {text} */\n") == 1
    listing = a["listing"].splitlines()
    first = listing.index("  ; softmax.py:11: m = pypto.amax(x, dim=-1, keepdim=True)")
    assert "TLOAD" in listing[first + 1]


def test_without_the_text_the_comment_is_file_and_line():
    a = code_op(code(ADD, lambda d: d.attrs.pop("lines"))).attrs
    assert "/* add.py:11 */\n" in a["source"] and "  ; add.py:11\n" in a["listing"]
    with_text = code_op(code(ADD)).attrs
    assert "/* add.py:11: out[:] = x + y */\n" in with_text["source"]
    assert "  ; add.py:11: out[:] = x + y\n" in with_text["listing"]


EVIL = '*/ __attribute__((constructor)) static void evil(void) { abort(); } /*\n#include <x>'


def hostile(doc):
    doc.attrs["lines"] = [["add.py", 11, EVIL]]


def test_a_line_from_a_file_cannot_end_the_comment():
    doc = code(ADD, hostile)
    a = code_op(doc).attrs
    line = next(ln for ln in a["source"].splitlines() if "add.py:11" in ln)
    assert re.fullmatch(r"\s*/\* [^\n]* \*/", line) and line.count("*/") == 1
    assert "\n#include <x>" not in a["source"] and "?#include <x> */" in line
    note = next(ln for ln in a["listing"].splitlines() if "add.py:11" in ln)
    assert note == "  ; add.py:11: " + EVIL.replace("\n", "?")
    # the text form reads back, and re-emission gives the same C (pypto-run's check)
    again = parse_doc(print_doc(doc))
    _check_source(again)
    assert code_op(pypto.emit(again)).attrs["source"] == a["source"]


@pytest.mark.slow
def test_hostile_line_compiles_and_runs_clean():
    rec = pypto.run(code(ADD, hostile))
    assert rec.body[0].attrs["verdict"] == "pass"


def test_c_with_lines_is_deterministic():
    one, two = code_op(code(SOFTMAX)).attrs, code_op(code(SOFTMAX)).attrs
    assert one == two
