#!/usr/bin/env bash
# Packs Optimas's Python dependencies (and a Redis server, for the bot's GPU test) for the device
# machine, which has no network: .devpack/site.tar.xz and .devpack/redis.tar.xz, about 20 MB
# together. Wheels are unpacked, their shared objects stripped and the lot compressed with xz,
# because the device call carries at most 64 MiB with the tracked tree (about 47 MiB now: with .devpack
# it passes 64 MiB, so move benchmarks/replay/captures aside for a call that replays nothing) and the
# zip wheels alone are 38 MB. Packages the device image already has (numpy, pandas, pyarrow,
# pytest, jinja2, pyyaml, requests, httpx, ...) are left out.
#
# Usage (on this machine, from the repository root): benchmarks/device/pack_dependencies.sh
# On the device, before Python runs:
#   tar xJf .devpack/site.tar.xz -C /tmp && cp -r /tmp/site/*.data/purelib/* /tmp/site/
#   tar xJf .devpack/redis.tar.xz -C /tmp   # then: LD_LIBRARY_PATH=/tmp/.redis /tmp/.redis/redis-server --daemonize yes
#   export PYTHONPATH=/tmp/site:$PWD
#   dpkg -x .devpack/bubblewrap_*.deb /tmp/bw   # then PATH=/tmp/bw/usr/bin:$PATH
# Carry it with the run tool's carry: [".devpack"] (add /.devpack/ to .git/info/exclude).
set -euo pipefail

here=$(git rev-parse --show-toplevel)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

python3 -m pip download -q --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_17_x86_64 --platform manylinux_2_24_x86_64 --platform manylinux_2_25_x86_64 \
  --platform manylinux_2_27_x86_64 --platform manylinux_2_28_x86_64 --platform manylinux_2_34_x86_64 \
  --platform manylinux2014_x86_64 --platform any -d "$work/wheels" \
  ncu-report==2026.3.1 pydantic==2.14.4 unidiff==1.0.1 flask==3.1.3 gunicorn==27.0.1 pygithub==2.10.0 \
  pyjwt==2.15.1 rq==3.0.0 redis==8.1.0 openai==3.57.0 ollama==0.6.3 ruamel.yaml==0.19.1 cryptography

# On the image already (its dateutil and tzdata are the ones its pandas was built with), or not
# needed by the tests that run there (google-genai: its backend's tests need no GPU).
skip='^(numpy|pandas|pyarrow|scipy|matplotlib|pytest|pluggy|iniconfig|pygments|jinja2|markupsafe|pyyaml|requests|urllib3|charset_normalizer|idna|certifi|httpx|httpcore|h11|anyio|click|werkzeug|typing_extensions|packaging|google_genai|google_auth|pyasn1|pyasn1_modules|websockets|python_dateutil|tzdata|six)-'
for w in "$work"/wheels/*.whl; do
  name=$(basename "$w")
  if [[ "$name" =~ $skip ]]; then continue; fi
  python3 -m zipfile -e "$w" "$work/site"
done
find "$work/site" -name '*.so*' -type f -exec strip --strip-unneeded {} + 2>/dev/null || true

mkdir -p "$here/.devpack" "$work/.redis"
tar -C "$work" -cf - site | xz -9e -T2 > "$here/.devpack/site.tar.xz"
cp "$(command -v redis-server)" "$work/.redis/"
for lib in liblzf.so.1 libjemalloc.so.2 libatomic.so.1; do
  cp -L "/lib/x86_64-linux-gnu/$lib" "$work/.redis/" 2>/dev/null || true
done
tar -C "$work" -cf - .redis | xz -9 > "$here/.devpack/redis.tar.xz"
# bubblewrap, for the GPU job's sandbox (the device image has none): Debian's package, unpacked there
(cd "$here/.devpack" && rm -f bubblewrap_*.deb && apt-get download -q bubblewrap >/dev/null)
du -sh "$here/.devpack"/*
