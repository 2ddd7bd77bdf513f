# The two commands of the README: `make demo` (set up, profile the example on the CPU) and
# `make test` (set up, lint, type-check, run every test). Both work on a fresh clone.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.oplens-installed

.PHONY: setup demo test lint bench

setup: $(STAMP)

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# torch first and pinned: the CPU wheel (2.13, what TorchNeuron needs). A bare `torch`
	# requirement would pull the multi-GB CUDA build.
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e ".[test]"
	touch $(STAMP)

demo: setup
	$(VENV)/bin/oplens profile examples/rmsnorm.py::rmsnorm_naive --args "make_inputs()"
	$(VENV)/bin/oplens compare examples/rmsnorm.py::rmsnorm_naive examples/rmsnorm.py::rmsnorm_fused \
		examples/rmsnorm.py::rmsnorm_compiled --args "make_inputs()"

lint: setup
	$(VENV)/bin/ruff check server tests bench
	$(VENV)/bin/mypy

test: lint
	$(PY) -m pytest

bench: setup
	$(PY) bench/attribution_overhead.py
	$(PY) bench/processing.py
