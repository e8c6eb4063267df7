# Two entry points for a fresh machine (see README):
#   make evaluate   install, then run `recon-submit evaluate` on the embedded default
#   make test       install with the test and cluster (Ray) extras, then run the test suite
# torch is installed first and pinned: an unpinned torch may pull several GB of CUDA wheels.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
TORCH  := torch==2.14.1 torchvision==0.29.1

.PHONY: install install-test evaluate test site bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q $(TORCH)

install: $(BIN)/python
	$(BIN)/python -m pip install -q -e .

install-test: $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[test,cluster]'

evaluate: install
	$(BIN)/recon-submit evaluate

test: install-test
	$(BIN)/python -m pytest -q

site: install
	$(BIN)/mkdocs build --strict

clean:
	rm -rf $(VENV) public test-output
