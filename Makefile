# pypto: every target sets up .venv (and installs the project with its test extras) on first use.
VENV    := .venv
PY      := $(VENV)/bin/python
STAMP   := $(VENV)/.installed-stamp
BIN     := $(abspath $(VENV)/bin)
export PATH := $(BIN):$(PATH)

.PHONY: demo test check golden bench sanitize fuzz setup clean

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[test]"
	touch $(STAMP)

setup: $(STAMP)

# softmax (DYNAMIC rows) through the six-stage pipe, then the profile
demo: $(STAMP)
	mkdir -p out
	pypto-trace examples/softmax.py | pypto-lower | pypto-sched | pypto-emit \
	  | pypto-run --bind x_0=4096 --repeat 5 -o out/softmax.run
	pypto-prof out/softmax.run --chrome out/softmax.trace.json --svg out/softmax.svg
	@echo "demo: Perfetto trace in out/softmax.trace.json, swimlane in out/softmax.svg"

# the suite on every core (pytest-xdist): ~7.5 instead of ~9.5 minutes on 2 cores
test: $(STAMP)
	$(PY) -m pytest -n auto tests

# a fast subset: everything not marked slow, on every core, stopping at the first failure
check: $(STAMP)
	$(PY) -m pytest -n auto tests -m "not slow" -x

# the C runtime and the generated C of the examples under AddressSanitizer and UBSan
sanitize: $(STAMP)
	$(PY) -m pytest tests -m sanitize

# thousands of fuzz cases (make test runs a few hundred)
fuzz: $(STAMP)
	PYPTO_FUZZ_EXAMPLES=5000 $(PY) -m pytest tests/fuzz

golden: $(STAMP)
	$(PY) -m pytest tests/golden --update-goldens

bench: $(STAMP)
	$(PY) bench/bench.py
	$(PY) bench/fused.py --reps 5

clean:
	rm -rf out .pytest_cache
