# The two commands of the README: `make demo` (set up, profile the example on the CPU, build the
# .vsix) and `make test` (set up, lint, type-check, run every test, the extension's unit tests and
# the end-to-end test in a real VS Code). Both work on a fresh clone.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.oplens-installed

NODE_STAMP := node_modules/.oplens-installed
# Holistic Trace Analysis, which tests/system/test_exports.py loads an export with: installed without its declared
# requirements (jupyterlab among them); the ones it uses are the [test] extra's
HTA := holistictraceanalysis==0.5.0

# Python 3.12 and 3.13 beside 3.11: TorchNeuron 2.33 supports Python 3.12-3.14 only. Each in its own venv made
# from the project's files; `pip install torch==2.13.0` takes PyPI's build there (CUDA, ~4.7 GB; it runs on the
# CPU), the CPU wheel on this machine's disk being 3.11's. `make test` runs every tier on 3.12 (the Python
# TorchNeuron's users have) and the tiers that depend on the Python version (worker, lsp) on 3.11 and 3.13.
# pyenv's own interpreters first: its shims refuse a version that `pyenv global` does not name
PY312 ?= $(firstword $(wildcard $(HOME)/.pyenv/versions/3.12*/bin/python3.12) python3.12)
PY313 ?= $(firstword $(wildcard $(HOME)/.pyenv/versions/3.13*/bin/python3.13) python3.13)
VENV312 ?= .venv312
VENV313 ?= .venv313

# pytest as every suite runs it: no cache in the checkout, the 25 slowest tests printed (the next slow test shows in
# CI's log). A suite runs in two passes: its tests in two xdist workers, a file's tests in one of them (its module
# fixtures shared; they mostly wait on the processes they start, so two keep both cores busy), then its `timing`
# tests alone (a figure or verdict from measured time: beside a neighbour whose load comes and goes, no tolerance
# holds, where a steady busy core beside them is what they must pass with).
PYTEST := -m pytest -p no:cacheprovider --durations=25
# $(call parallel,PYTHON,SELECTION) and $(call alone,PYTHON,SELECTION): the two passes of the tests SELECTION names
# (a pytest -m expression); $(call suite,PYTHON,SELECTION) both
parallel = $(1) $(PYTEST) -n 2 --dist loadfile -m "($(2)) and not timing"
alone = $(1) $(PYTEST) -m "($(2)) and timing"
suite = $(call parallel,$(1),$(2)) && $(call alone,$(1),$(2))
# The tiers that depend on the Python version (tests/conftest.py names the tiers); on 3.11 without the Neuron
# backend's tests (TorchNeuron supports Python 3.12-3.14: no Trainium user runs the Neuron path on 3.11)
VERSIONED := worker or lsp
VERSIONED_311 := (worker or lsp) and not neuron
# Each part of `make test` appends its wall time here, printed at the end
TIMES := .test-times.log
# $(call timed,PART,COMMAND): COMMAND, its wall time appended to $(TIMES) and said, its exit status the last
timed = start=$$(date +%s); $(2); status=$$?; \
	printf '%-34s %5s s%s\n' "$(1)" "$$(( $$(date +%s) - start ))" "$$([ $$status = 0 ] || echo "  (failed: exit $$status)")" \
	| tee -a $(TIMES); (exit $$status)

.PHONY: setup demo check test test-unit lint generate bench package vsix ext-test e2e e2e-deps tunnel-deps slurm-deps

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
e2e: setup vsix e2e-deps
	node e2e/run.mjs

e2e-deps:
	bash e2e/install.sh

# The READMEs' pictures in docs/images/, of the real extension: the whole end-to-end test, which copies the
# screenshots they use (--screenshots), then e2e/pictures.sh crops, scales and quantises them and makes the
# GIF (ImageMagick, pngquant, gifsicle: apt-get install imagemagick pngquant gifsicle). Commit what changed.
.PHONY: screenshots
screenshots: setup vsix e2e-deps
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

# The OpenSSH server and client the SSH-tunnel tests start on loopback (tests/system/test_tunnel.py); nothing is configured
# or left running system-wide.
tunnel-deps:
	bash tests/install_tunnel_deps.sh

# Debian's Slurm (slurmctld, slurmd, the client commands) the Slurm tests start as two emulated nodes
# (tests/system/test_slurm.py, tests/support/slurmlab.py); nothing is configured or left running system-wide.
slurm-deps:
	bash tests/install_slurm.sh

# The quick check before each commit: lint beside the unit tier (no process started), on both cores.
check: setup
	@$(MAKE) --no-print-directory -j2 --output-sync=target lint test-unit

test-unit: setup
	$(PY) -m pytest -p no:cacheprovider -q -m unit

# Everything CI runs. node_modules before pytest: tests/system/test_bundle.py packages the .vsix (npm run package).
# The 3.12 and 3.13 venvs and the e2e's code-server are installed while 3.11 runs its parallel pass (mostly
# downloading and unpacking: minutes the run would otherwise wait), their output in .venvs.log, shown where they
# fail; the timing tests wait for them to end. Each part's wall time is printed at the end.
test: lint tunnel-deps slurm-deps $(NODE_STAMP)
	@rm -f $(TIMES)
	@$(MAKE) --no-print-directory venvs e2e-deps > .venvs.log 2>&1 & venvs=$$!; \
	$(call timed,pytest 3.11 (worker and lsp),$(call parallel,$(PY),$(VERSIONED_311))); tests=$$?; \
	if ! wait $$venvs; then cat .venvs.log; echo "make: making the 3.12/3.13 venvs or the e2e's install failed (above)"; exit 2; fi; \
	exit $$tests
	@$(call timed,pytest 3.11 (timing alone),$(call alone,$(PY),$(VERSIONED_311)))
	@$(call timed,pytest 3.12 (every tier),$(MAKE) --no-print-directory test-312)
	@$(call timed,pytest 3.13 (worker and lsp),$(MAKE) --no-print-directory test-313)
	@$(call timed,extension (types and unit tests),$(MAKE) --no-print-directory ext-test)
	@$(call timed,e2e (code-server in Chromium),$(MAKE) --no-print-directory e2e)
	@echo "make test: the parts' wall times"; cat $(TIMES)

# Every tier on Python 3.12 (the .vsix's bundled server included: tests/system/test_bundle.py), the tiers that
# depend on the Python version on 3.13.
.PHONY: test-312 test-313 venvs
venvs: $(VENV312)/.oplens-installed $(VENV313)/.oplens-installed

test-312: $(VENV312)/.oplens-installed tunnel-deps slurm-deps $(NODE_STAMP)
	$(call suite,$(VENV312)/bin/python,unit or worker or lsp or system)

test-313: $(VENV313)/.oplens-installed tunnel-deps
	$(call suite,$(VENV313)/bin/python,$(VERSIONED))

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
