# Two set-up commands, each self-contained on a fresh machine with Python 3.11.
PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
DEMO   := demo-out

.PHONY: demo test test-compat test-nojit test-slow bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(VENV)/.installed: $(BIN)/python pyproject.toml setup.py
	$(BIN)/python -m pip install -q -e .
	touch $@

$(VENV)/.installed-dev: $(BIN)/python pyproject.toml setup.py
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $(VENV)/.installed $@

demo: $(VENV)/.installed
	@bash examples/demo.sh $(BIN) $(DEMO)

test: $(VENV)/.installed-dev
	$(BIN)/python -m pytest -q -n 2 -p no:cacheprovider tests
	NUMBA_DISABLE_JIT=1 $(BIN)/python -m pytest -q -p no:cacheprovider -m nojit tests
	$(BIN)/python tools/compat.py

# The compatibility subset only, on the other supported interpreters found (3.12, 3.13).
test-compat: $(VENV)/.installed-dev
	$(BIN)/python tools/compat.py

test-slow: $(VENV)/.installed-dev
	$(BIN)/python -m pytest -q -n 2 -m slow tests

clean:
	rm -rf $(VENV) .venv-3.* $(DEMO) build src/*.egg-info
