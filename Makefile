# Set-up and everyday commands. Everything runs from a local virtual environment (.venv).
PYTHON ?= python3
VENV   := .venv
# One more test worker than cores: some tests wait (timeouts, workers, servers) while others compile.
WORKERS ?= $(shell echo $$(( $$(nproc) + 1 )))
PY     := $(VENV)/bin/python

.PHONY: venv prerequisites demo test bench clean

$(VENV)/.installed: pyproject.toml
	@echo "make: creating $(VENV) and installing Optimas with its pinned dependencies (about a minute; pip lists each package)"
	@start=$$(date +%s); $(PYTHON) -m venv $(VENV) && \
	$(PY) -m pip install --quiet --upgrade pip && \
	{ PYTHONWARNINGS="ignore:Editable installation" $(PY) -m pip install --progress-bar off -e '.[test]' 2>&1; \
	  echo $$? > $(VENV)/.pip-status; } | grep --line-buffered -E '^(Collecting|Successfully installed|ERROR)' \
	  | sed -u 's/^/  pip: /'; \
	test "$$(cat $(VENV)/.pip-status)" = 0 || { echo "make: pip could not install Optimas into $(VENV) (its errors above)"; exit 1; }; \
	touch $@; echo "make: $(VENV) is ready ($$(( $$(date +%s) - start )) s)"

venv: $(VENV)/.installed

# The main job on the embedded default: recorded H200 profiles, no GPU, no network.
demo: venv
	@echo "make: the pipeline on the bundled H200 profiles, then the evaluated run shipped with it (optimas demo)"
	@$(PY) -m runner.cli demo

# What the tests need besides the venv (Redis, Chromium, bubblewrap): started or installed where it
# can be, else one message naming all that is missing and how to skip what needs it.
prerequisites:
	@tests/prerequisites.sh

# Tests run on every core (pytest-xdist), then the timing tests alone (their verdicts need a quiet
# CPU), sharing one build cache; `$(PY) -m pytest -q` runs everything one at a time.
test: venv prerequisites
	cache=$$(mktemp -d) && export OPTIMAS_TEST_BUILD_CACHE=$$cache && \
	$(PY) -m pytest -q -n $(WORKERS) -m "not timing" && $(PY) -m pytest -q -m timing; \
	rc=$$?; rm -rf $$cache; exit $$rc

# The analysis benchmark; its result goes to BENCH_OUT (ignored scratch by default: a run here is not
# the recorded result, benchmarks/results/analysis.json, which only a deliberate `make bench
# BENCH_OUT=benchmarks/results` replaces).
BENCH_OUT ?= benchmarks/.work
bench: venv
	$(PY) benchmarks/bench_analysis.py --out $(BENCH_OUT)
	@echo "make: wrote $(BENCH_OUT)/analysis.json"

clean:
	rm -rf $(VENV) runs .pytest_cache
