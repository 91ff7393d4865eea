# Two set-up commands, each self-contained on a fresh machine with Python 3.11.
PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
DEMO   := demo-out

# Let pytest and Python keep their byte-code caches (a machine that sets this would have every
# pytest process re-compile and re-rewrite all test modules: ~6 s of CPU each).
unexport PYTHONDONTWRITEBYTECODE

.PHONY: demo test test-compat test-nojit test-slow bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

# wholetrace.wpp.aot: the WPP builder's kernels compiled ahead of time (numba.pycc, ~20-60 s once per
# machine and kernel version, plus numba's first compile of them on a fresh machine); the builder
# falls back to the JIT without them, so a failed build does not stop the installation
# (tests/wpp/test_aot.py then fails and says why).
AOT = $(BIN)/python -m wholetrace.wpp.aot || echo "wholetrace.wpp.aot failed: the WPP builder will use numba's JIT"
$(VENV)/.installed: $(BIN)/python pyproject.toml setup.py
	$(BIN)/python -m pip install -q -e .
	$(AOT)
	touch $@

$(VENV)/.installed-dev: $(BIN)/python pyproject.toml setup.py
	$(BIN)/python -m pip install -q -e '.[dev]'
	$(AOT)
	touch $(VENV)/.installed $@

demo: $(VENV)/.installed
	@bash examples/demo.sh $(BIN) $(DEMO)

# The other interpreters' subsets run in the background beside the 3.11 suite (tools/compat.py),
# started before the 3.11 venv is made: they make their own venvs, and `pip install` and the AOT
# build use one core of two.  The nojit subset (one process, no numba) runs in the background
# beside `pytest -n 2` instead of after it, and the xdist workers steal each other's queued tests
# (`--dist worksteal`), so no core idles while the other finishes a long test (docs/design.md,
# "Test suite time, wave 16").
# compileall: the tests' subprocesses run with PYTHONDONTWRITEBYTECODE (no .pyc beside test
# programs), so without it every recording would compile wholetrace itself first.
# The demo runs first, in one process at a time: besides checking `make demo`, it compiles most
# numba kernels once into the cache, which the two pytest workers would otherwise each compile.
NOJIT := .nojit
test:
	$(PYTHON) tools/compat.py --start
	@$(MAKE) --no-print-directory $(VENV)/.installed-dev
	$(BIN)/python -m compileall -q src
	$(AOT)
	status=0; \
	echo "make test: make demo (its output: $(DEMO).log)"; \
	bash examples/demo.sh $(BIN) $(DEMO) > $(DEMO).log 2>&1 || { cat $(DEMO).log; echo "make demo FAILED"; status=1; }; \
	echo "make test: the nojit subset in the background ($(NOJIT).log)"; rm -f $(NOJIT).rc; \
	{ NUMBA_DISABLE_JIT=1 $(BIN)/python -m pytest -q -p no:cacheprovider -m nojit tests > $(NOJIT).log 2>&1; \
	  echo $$? > $(NOJIT).rc; } & nojit=$$!; \
	$(BIN)/python -m pytest -q -n 2 --dist worksteal -p no:cacheprovider tests || status=1; \
	wait $$nojit; echo "----- nojit subset (NUMBA_DISABLE_JIT=1) -----"; cat $(NOJIT).log; \
	[ "$$(cat $(NOJIT).rc 2>/dev/null)" = 0 ] || { echo "nojit subset FAILED"; status=1; }; \
	$(BIN)/python tools/compat.py --wait || status=1; \
	exit $$status

# The compatibility subset only, on the other supported interpreters found (3.12, 3.13).
test-compat: $(VENV)/.installed-dev
	$(BIN)/python tools/compat.py

test-slow: $(VENV)/.installed-dev
	$(BIN)/python -m pytest -q -n 2 -m slow tests

clean:
	rm -rf $(VENV) .venv-3.* .compat $(DEMO) $(DEMO).log $(NOJIT).log $(NOJIT).rc build src/*.egg-info
