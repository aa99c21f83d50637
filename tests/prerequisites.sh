#!/usr/bin/env bash
# What `make test` needs besides the virtual environment, checked before anything runs, so that a
# machine lacking something stops here with one message naming all of it:
#   - a Redis at 127.0.0.1:6379 for the bot's tests: started here when redis-server is installed
#     (no persistence, this machine only), else OPTIMAS_TESTS_WITHOUT_REDIS=1 skips those tests;
#   - Chromium and its driver for the dashboard's browser tests, and bubblewrap for the sandbox's:
#     installed with apt-get where this user may (root), else OPTIMAS_TESTS_WITHOUT_BROWSER=1
#     skips the browser tests (the sandbox's skip themselves without bwrap, and say so).
set -uo pipefail
missing=()

if ! { command -v redis-cli >/dev/null && redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; }; then
  if [[ "${OPTIMAS_TESTS_WITHOUT_REDIS:-}" == 1 ]]; then
    echo "make: no Redis at 127.0.0.1:6379: the bot's tests are skipped (OPTIMAS_TESTS_WITHOUT_REDIS=1)"
  elif command -v redis-server >/dev/null; then
    echo "make: starting a Redis for the tests at 127.0.0.1:6379 (no persistence; stop it with redis-cli shutdown)"
    redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no >/dev/null
    for _ in $(seq 1 50); do redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 && break; sleep 0.1; done
  else
    missing+=("a Redis at 127.0.0.1:6379 (install redis-server, e.g. apt-get install redis-server, and make test starts it; or make test OPTIMAS_TESTS_WITHOUT_REDIS=1 to skip the bot's tests)")
  fi
fi

can_install() { [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null; }

install() {  # install() PACKAGE... : apt-get as root, quietly
  echo "make: installing $* for the tests (apt-get)"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null; }
}

if ! { command -v chromium >/dev/null && command -v chromedriver >/dev/null; }; then
  if [[ "${OPTIMAS_TESTS_WITHOUT_BROWSER:-}" == 1 ]]; then
    echo "make: no Chromium: the dashboard's browser tests are skipped (OPTIMAS_TESTS_WITHOUT_BROWSER=1)"
  elif ! { can_install && install chromium chromium-driver; }; then
    missing+=("Chromium and its driver for the dashboard's browser tests (as root: apt-get install chromium chromium-driver; or make test OPTIMAS_TESTS_WITHOUT_BROWSER=1 to skip them)")
  fi
fi

if ! command -v bwrap >/dev/null; then
  if ! { can_install && install bubblewrap; }; then
    echo "make: no bubblewrap (bwrap): the GPU job's sandbox tests are skipped (as root: apt-get install bubblewrap)"
  fi
fi

if (( ${#missing[@]} )); then
  echo "make: the tests need what this machine lacks:" >&2
  for m in "${missing[@]}"; do echo "  - $m" >&2; done
  exit 1
fi
echo "make: running the tests on $(nproc) cores (collecting them takes about a minute; 6.5 minutes on 2 idle cores, about 20 on busy ones; the dots pause while CUDA programs compile)"
