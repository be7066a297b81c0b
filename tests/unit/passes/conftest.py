"""Fixtures for the pass tests: run an op file written by a test, see its blocks and outputs."""
from __future__ import annotations

import numpy as np
import pytest


class OpRunner:
    """Trace an op file (source text), lower it for a target, run it, return what came out."""

    def __init__(self, folder):
        self.folder = folder

    def write(self, name: str, src: str) -> str:
        path = self.folder / f"{name}.py"
        path.write_text(src)
        return str(path)

    def lower(self, name: str, src: str, target: str = "host", pipeline: str | None = None):
        import libpypto as pypto
        return pypto.lower(pypto.trace(self.write(name, src), target=target), pipeline, target)

    @staticmethod
    def blocks(exec_doc) -> list[list[str]]:
        """The ops of each task, in order: which kernels fused."""
        return [t.attrs["ops"] for t in exec_doc.walk() if t.name == "task"]

    def run(self, name: str, src: str, inputs: dict, target: str = "host",
            backend: str = "c", threads: int = 1, pipeline: str | None = None):
        """(blocks, outputs by name) of a run on the host with the given input arrays
        (outputs included: what they hold before the run is what is not written)."""
        import libpypto as pypto
        from libpypto.runtime import data as D
        low = self.lower(name, src, target, pipeline)
        code = pypto.emit(pypto.schedule(low, target), backend)
        rec = pypto.run(code, backend=backend, inputs=inputs, threads=threads, seed=1)
        outs = {o["name"]: np.frombuffer(o["data"], dtype=D.np_dtype(o["dtype"])).reshape(
            o["shape"]) for o in rec.body[0].attrs["outputs"]}
        return self.blocks(low), outs


@pytest.fixture
def op_runner(tmp_path):
    return OpRunner(tmp_path)
