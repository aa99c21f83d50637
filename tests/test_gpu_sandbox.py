"""A GPU job's sandbox hands the code its worker's GPU and no other: on a host with two GPUs or
more, a worker pinned to the last one runs a program that, inside the sandbox, finds one GPU, that
one, whether it keeps CUDA_VISIBLE_DEVICES or unsets it. Skipped where there is no GPU or no
bubblewrap (CI); run on the device with `pytest -m gpu`.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from runner.base.gpu import DRIVER_GPUS, _device_minor, detect_gpu, list_gpus, sandbox_devices
from runner.base.processes import run_process
from runner.base.sandbox import sandboxed

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap (bwrap)")]

# Prints the GPUs it can use, each by the UUID nvidia-smi gives it.
PROGRAM = r"""
#include <cstdio>
#include <cuda_runtime.h>
int main() {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) { printf("error %s\n", cudaGetErrorName(e)); return 1; }
  printf("count %d\n", n);
  for (int d = 0; d < n; ++d) {
    cudaDeviceProp p;
    cudaGetDeviceProperties(&p, d);
    const unsigned char *u = (const unsigned char *)p.uuid.bytes;
    printf("GPU-");
    for (int i = 0; i < 16; ++i) printf(i == 4 || i == 6 || i == 8 || i == 10 ? "-%02x" : "%02x", u[i]);
    printf("\n");
  }
  return 0;
}
"""


def test_the_code_finds_only_its_workers_gpu(tmp_path: Path, monkeypatch):
    gpus = list_gpus("nvidia-smi")
    pinned = gpus[-1]
    # the driver's folder names each GPU's node (read here even on a one-GPU host, which needs it not)
    assert Path(f"/dev/nvidia{_device_minor(pinned, DRIVER_GPUS)}").exists()
    (tmp_path / "gpus.cu").write_text(PROGRAM)
    subprocess.run(["nvcc", "-o", str(tmp_path / "gpus"), str(tmp_path / "gpus.cu")], check=True)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", pinned.index)  # as bot.gpu_workers pins a worker
    devices = sandbox_devices("nvidia-smi", pinned.index)
    assert devices.visible == pinned.uuid
    with sandboxed([tmp_path], devices=devices):
        kept = run_process([str(tmp_path / "gpus")], cwd=tmp_path, timeout_s=60, what="gpus")
        unset = run_process(["env", "-u", "CUDA_VISIBLE_DEVICES", str(tmp_path / "gpus")], cwd=tmp_path,
                            timeout_s=60, what="gpus")
        seen = detect_gpu("nvidia-smi")  # nvidia-smi runs in the sandbox too
        listed = run_process(["nvidia-smi", "-L"], timeout_s=60, what="nvidia-smi")
    print(f"{len(gpus)} GPU(s) on the host; pinned to {pinned.index} {pinned.uuid}; nvidia-smi -L in the sandbox:\n"
          f"{listed.output}")
    for r in (kept, unset):
        assert r.returncode == 0, r.output
        assert r.output.split() == ["count", "1", pinned.uuid], r.output
    assert seen.uuid == pinned.uuid
