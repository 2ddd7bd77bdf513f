# The two commands of the README: `make demo` (set up, profile the example on the CPU, build the
# .vsix) and `make test` (set up, lint, type-check, run every test, the extension's unit tests and
# the end-to-end test in a real VS Code). Both work on a fresh clone.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.oplens-installed

NODE_STAMP := node_modules/.oplens-installed
# Holistic Trace Analysis, which tests/test_exports.py loads an export with: installed without its declared
# requirements (jupyterlab among them); the ones it uses are the [test] extra's
HTA := holistictraceanalysis==0.5.0

# Python 3.12 and 3.13 beside 3.11: TorchNeuron 2.33 supports Python 3.12-3.14 only. Each in its own venv made
# from the project's files; `pip install torch==2.13.0` takes PyPI's build there (CUDA, ~4.7 GB; it runs on the
# CPU), the CPU wheel on this machine's disk being 3.11's. `make test` runs every test on 3.11 and 3.12 and the
# core set (CORE_TESTS) on 3.13.
# pyenv's own interpreters first: its shims refuse a version that `pyenv global` does not name
PY312 ?= $(firstword $(wildcard $(HOME)/.pyenv/versions/3.12*/bin/python3.12) python3.12)
PY313 ?= $(firstword $(wildcard $(HOME)/.pyenv/versions/3.13*/bin/python3.13) python3.13)
VENV312 ?= .venv312
VENV313 ?= .venv313
CORE_TESTS := tests/test_engine.py tests/test_packages.py tests/test_run_capture.py tests/test_lsp_server.py \
	tests/test_notebook.py tests/test_neuron_documented.py tests/test_linemonitor.py tests/test_attribution_real.py

.PHONY: setup demo test lint generate bench package vsix ext-test e2e tunnel-deps slurm-deps

setup: $(STAMP)

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# torch first and pinned: the CPU wheel (2.13, what TorchNeuron needs). A bare `torch`
	# requirement would pull the multi-GB CUDA build.
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e ".[test]"
	$(PY) -m pip install -q --no-deps $(HTA)
	touch $(STAMP)

$(VENV312)/.oplens-installed $(VENV313)/.oplens-installed: pyproject.toml
	@command -v $(if $(findstring 312,$@),$(PY312),$(PY313)) >/dev/null || { echo "make: $(if $(findstring 312,$@),$(PY312),$(PY313)) not found: install that Python (pyenv install 3.12 / 3.13) or name it: make $(if $(findstring 312,$@),PY312,PY313)=/path/to/python"; exit 2; }
	$(if $(findstring 312,$@),$(PY312),$(PY313)) -m venv $(@D)
	$(@D)/bin/python -m pip install -q --upgrade pip
	$(@D)/bin/python -m pip install -q torch==2.13.0
	$(@D)/bin/python -m pip install -q -e ".[test]"
	$(@D)/bin/python -m pip install -q --no-deps $(HTA)
	touch $@

$(NODE_STAMP): package-lock.json
	npm ci --no-audit --no-fund
	touch $(NODE_STAMP)

demo: setup vsix
	$(VENV)/bin/oplens profile examples/rmsnorm.py::rmsnorm_naive --args "make_inputs()"
	$(VENV)/bin/oplens compare examples/rmsnorm.py::rmsnorm_naive examples/rmsnorm.py::rmsnorm_fused \
		examples/rmsnorm.py::rmsnorm_compiled --args "make_inputs()"
	$(VENV)/bin/oplens run --target examples/tinylm/model.py::Block.forward --stop -- examples/tinylm_train.py --steps 30
	@ls -1 oplens-*.vsix

# The VS Code extension, bundled and packaged: oplens-<version>.vsix at the repository root, with the
# OpLens it ships (bundled/build.py, run by `npm run package`: OpLens's wheel and its pure-Python
# libraries' wheels in bundled/wheels/, installed in bundled/libs/; cached while its inputs are unchanged).
package: setup $(NODE_STAMP)
	npm run package

vsix: package

ext-test: $(NODE_STAMP)
	npm run typecheck
	npm test

# A real VS Code (code-server) in headless Chromium, driving the packaged extension.
e2e: setup vsix
	bash e2e/install.sh
	node e2e/run.mjs

# The READMEs' pictures in docs/images/, of the real extension: the whole end-to-end test, which copies the
# screenshots they use (--screenshots), then e2e/pictures.sh crops, scales and quantises them and makes the
# GIF (ImageMagick, pngquant, gifsicle: apt-get install imagemagick pngquant gifsicle). Commit what changed.
.PHONY: screenshots
screenshots: setup vsix
	bash e2e/install.sh
	node e2e/run.mjs --screenshots e2e/artifacts/readme
	bash e2e/pictures.sh e2e/artifacts/readme docs/images

# The extension's TypeScript that is generated from the Python (the records and their readers, the
# shared settings' defaults, the Neuron modes, the error kinds): extension/shared/generated/, by
# server/oplens/codegen/ (generate.py: what is generated; typescript.py: the emitter).
generate: setup
	$(PY) -m oplens.codegen

lint: setup
	$(VENV)/bin/ruff check server tests bench bundled/build.py
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports  # the architecture: pyproject.toml [tool.importlinter]
	$(PY) -m oplens.codegen --check  # the generated TypeScript is fresh (else: make generate)

# The OpenSSH server and client the SSH-tunnel tests start on loopback (tests/test_tunnel.py); nothing is configured
# or left running system-wide.
tunnel-deps:
	bash tests/install_tunnel_deps.sh

# node_modules before pytest: tests/test_bundle.py packages the .vsix (npm run package). The 3.12 and 3.13 venvs
# are made meanwhile (mostly downloading and unpacking torch: minutes that CI's 90 would otherwise wait), their
# output in .venvs.log, shown where they fail.
# Debian's Slurm (slurmctld, slurmd, the client commands) the Slurm tests start as two emulated nodes
# (tests/test_slurm.py, tests/slurmlab.py); nothing is configured or left running system-wide.
slurm-deps:
	bash tests/install_slurm.sh

test: lint tunnel-deps slurm-deps $(NODE_STAMP)
	@$(MAKE) --no-print-directory venvs > .venvs.log 2>&1 & venvs=$$!; \
	$(PY) -m pytest; status=$$?; \
	if ! wait $$venvs; then cat .venvs.log; echo "make: making the 3.12/3.13 venvs failed (above)"; exit 2; fi; \
	exit $$status
	$(MAKE) test-312 test-313
	$(MAKE) ext-test
	$(MAKE) e2e

# Every test on Python 3.12 (the .vsix's bundled server included: tests/test_bundle.py), the core set on 3.13.
.PHONY: test-312 test-313 venvs
venvs: $(VENV312)/.oplens-installed $(VENV313)/.oplens-installed

test-312: $(VENV312)/.oplens-installed tunnel-deps slurm-deps $(NODE_STAMP)
	$(VENV312)/bin/python -m pytest -p no:cacheprovider

test-313: $(VENV313)/.oplens-installed tunnel-deps
	$(VENV313)/bin/python -m pytest -p no:cacheprovider $(CORE_TESTS)

bench: setup
	$(PY) bench/attribution_overhead.py
	$(PY) bench/processing.py
	$(PY) bench/server.py
	$(PY) bench/capture_overhead.py
	$(PY) bench/merge_ranks.py
	$(PY) bench/calibrate.py
	$(PY) bench/systrace.py
	$(PY) bench/overview_overhead.py
	$(PY) bench/processing_scale.py
	$(PY) bench/notebook_overhead.py
	$(PY) bench/pure_python.py
