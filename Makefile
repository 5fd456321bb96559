# The newcomer's commands:
#   make report   set up .venv (if missing or out of date), run the quick studies, write reports/index.html
#   make test     set up .venv (if missing or out of date) and run the whole test suite
#   make test-fast   the same without the slow statistical checks
#   make readme-figure  redraw docs/accuracy_w1_vs_cost.png (the README's figure) from the current code
#   make check-pages load every report page in headless Chromium at 1,280 and 800 px: nothing may run off the screen
#   make clean-cache drop Numba's compiled caches (after editing the library)
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
PYTEST_ARGS ?=
# the studies `make report` runs (quick mode), in report order
REPORT_STUDIES ?= accuracy calibration performance frontier marginalization dimension_scaling nn4post_ablation mixture_vi theorem1 minibatch evidence
REPORT_ARGS ?= --quick

.PHONY: report readme-figure test test-fast check-pages check-python clean clean-cache

check-python:
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' || { \
	  echo "workbench needs Python >= 3.12 (ArviZ 1.x requires it); '$(PYTHON)' is $$($(PYTHON) --version 2>&1)."; \
	  echo "With pyenv, the repository's .python-version selects 3.12 (run 'pyenv install 3.12' if missing);"; \
	  echo "otherwise run: make test PYTHON=/path/to/python3.12"; \
	  exit 1; }

$(PY): | check-python
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e ".[test]"
	@touch $(STAMP)

report: $(STAMP)
	$(PY) -m workbench study $(REPORT_STUDIES) $(REPORT_ARGS)
	@echo "open reports/index.html"

# the README's figure, redrawn from the current code (the quick accuracy grid; cached cells are reused)
readme-figure: $(STAMP)
	$(PY) -m workbench study accuracy --quick
	cp reports/quick/accuracy/w1_vs_cost.png docs/accuracy_w1_vs_cost.png

# On every core (pytest-xdist): each test file runs on one worker, so no fixture is made twice
# (the quick studies are one file's); tests/conftest.py compiles the kernels once beforehand
test: $(STAMP)
	$(PY) -m pytest -n auto --dist loadfile --durations=15 $(PYTEST_ARGS)

check-pages: $(STAMP)
	$(PY) scripts/check_pages.py reports

test-fast: $(STAMP)
	$(PY) -m pytest -m "not slow" $(PYTEST_ARGS)

# Numba's on-disk caches live in __pycache__; they go stale when a helper in another file changes
clean-cache:
	find . -path ./$(VENV) -prune -o -name __pycache__ -type d -prune -exec rm -rf {} +

clean: clean-cache
	rm -rf $(VENV) .pytest_cache build *.egg-info
