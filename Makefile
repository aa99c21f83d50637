# Set-up and everyday commands. Everything runs from a local virtual environment (.venv).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python

.PHONY: venv demo test bench clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@

venv: $(VENV)/.installed

# The main job on the embedded default: recorded H200 profiles, no GPU, no network.
demo: venv
	$(PY) run.py --config config.yml

# Tests run on every core (pytest-xdist), then the timing tests alone (their verdicts need a quiet
# CPU); `$(PY) -m pytest -q` runs everything one at a time.
test: venv
	$(PY) -m pytest -q -n auto -m "not timing"
	$(PY) -m pytest -q -m timing

bench: venv
	$(PY) benchmarks/bench_analysis.py

clean:
	rm -rf $(VENV) runs .pytest_cache
