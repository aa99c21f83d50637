# Sourced by the device scripts (benchmarks/device/*_check.sh), from the repository root on the
# device machine: unpacks the dependencies carried in .devpack/ (pack_dependencies.sh), puts CUDA,
# them and this checkout on the paths, makes $OUT and records which GPU the call got
# ($OUT/device.txt). Sets `out` to $OUT.
out=${OUT:?set OUT to the folder whose files come back}
tar xJf .devpack/site.tar.xz -C /tmp
cp -r /tmp/site/*.data/purelib/* /tmp/site/ 2>/dev/null
if ls .devpack/bubblewrap_*.deb >/dev/null 2>&1; then dpkg -x .devpack/bubblewrap_*.deb /tmp/bw; fi
export PATH=/tmp/bw/usr/bin:/usr/local/cuda/bin:$PATH PYTHONPATH=/tmp/site:$PWD OPTIMAS_CACHE_DIR=/tmp/oc
mkdir -p "$out"
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$out/device.txt"
