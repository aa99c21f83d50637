# Set-up and everyday commands. Everything runs from a local virtual environment (.venv).
PYTHON ?= python3
VENV   := .venv
# One more test worker than cores: some tests wait (timeouts, workers, servers) while others compile.
WORKERS ?= $(shell echo $$(( $$(nproc) + 1 )))
PY     := $(VENV)/bin/python

.PHONY: venv browser sandbox demo test bench clean

$(VENV)/.installed: pyproject.toml
	@echo "make: creating $(VENV) and installing Optimas with its pinned dependencies (about a minute)"
	@$(PYTHON) -m venv $(VENV)
	@$(PY) -m pip install --quiet --upgrade pip
	@# setuptools notes that an editable install reads the working tree: that is what it is for
	@PYTHONWARNINGS="ignore:Editable installation" $(PY) -m pip install --quiet -e '.[test]'
	@touch $@
	@echo "make: $(VENV) is ready"

venv: $(VENV)/.installed

# The main job on the embedded default: recorded H200 profiles, no GPU, no network.
demo: venv
	@echo "make: the pipeline on the bundled H200 profiles (python run.py --config config.yml)"
	@$(PY) run.py --config config.yml

# The dashboard's tests drive a real browser: Debian's Chromium and its driver, installed when missing.
browser:
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null || { \
	  echo "make: installing Chromium and its driver for the dashboard's browser tests (apt-get)"; \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver \
	    >/dev/null; } || { echo "make: install Debian's chromium and chromium-driver to run the tests"; exit 1; }; }

# The GitHub App's GPU jobs run a pull request's code in a bubblewrap sandbox; its tests need bwrap.
sandbox:
	@command -v bwrap >/dev/null || { \
	  echo "make: installing bubblewrap for the GPU job's sandbox tests (apt-get)"; \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null; } || \
	  { echo "make: install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap) to run the tests"; exit 1; }; }

# Tests run on every core (pytest-xdist), then the timing tests alone (their verdicts need a quiet
# CPU), sharing one build cache; `$(PY) -m pytest -q` runs everything one at a time.
test: venv browser sandbox
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
