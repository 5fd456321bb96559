# The newcomer's commands:
#   make test     set up .venv (if missing or out of date) and run the whole test suite
#   make test-fast   the same without the slow statistical checks
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
PYTEST_ARGS ?=

.PHONY: test test-fast check-python clean

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

test: $(STAMP)
	$(PY) -m pytest $(PYTEST_ARGS)

test-fast: $(STAMP)
	$(PY) -m pytest -m "not slow" $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
