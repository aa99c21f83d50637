"""On a GPU: the counter runs of programs configured by `optimas init` (issue #30). A size argument
gives a sweep the GPU confirms; an argument that is only a launch count is found out (one launch's
work does not change) and the kernel's distinct launch configurations are profiled instead; a
program whose size is a constant of its host code is rebuilt at each scale (init names the
constant); a constant that is not the kernel's size is found out on the GPU; a program with none of
these gets one run and says why.

Skipped where there is no GPU (CI); run on the device with `pytest -m gpu`.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

pytestmark = pytest.mark.gpu

# `./prog N LAUNCHES`: N elements; the kernel runs LAUNCHES times over all of them.
SIZED = r"""
#include <cstdio>
#include <cstdlib>
#include <vector>
__global__ void axpy(float *y, const float *x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
int main(int argc, char **argv) {
  int n = atoi(argv[1]), launches = atoi(argv[2]);
  std::vector<float> h(n, 1.0f);
  float *x, *y;
  cudaMalloc(&x, n * sizeof(float)); cudaMalloc(&y, n * sizeof(float));
  cudaMemcpy(x, h.data(), n * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemcpy(y, h.data(), n * sizeof(float), cudaMemcpyHostToDevice);
  for (int r = 0; r < launches; ++r) axpy<<<(n + 255) / 256, 256>>>(y, x, 0.5f, n);
  cudaMemcpy(h.data(), y, n * sizeof(float), cudaMemcpyDeviceToHost);
  printf("%f\n", h[n - 1]);
  return 0;
}
"""

# `./prog LAUNCHES`: the size is fixed; launch r works on 2^(14 + r % 6) elements.
SHAPES = r"""
#include <cstdio>
#include <cstdlib>
__global__ void scale(float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = y[i] * 1.0001f + 1.0f;
}
int main(int argc, char **argv) {
  int launches = atoi(argv[1]);
  const int most = 1 << 19;
  float *y;
  cudaMalloc(&y, most * sizeof(float));
  cudaMemset(y, 0, most * sizeof(float));
  for (int r = 0; r < launches; ++r) {
    int n = 1 << (14 + r % 6);
    scale<<<(n + 127) / 128, 128>>>(y, n);
  }
  float last;
  cudaMemcpy(&last, y, sizeof(float), cudaMemcpyDeviceToHost);
  printf("%f\n", last);
  return 0;
}
"""

# no arguments, one launch configuration; `most` sizes the allocation but not the launches' work
FIXED = SHAPES.replace("int launches = atoi(argv[1]);", "int launches = 24;").replace("r % 6", "0")

# no arguments: the size is the constant N of the host code
CONSTANT = (SIZED.replace("int n = atoi(argv[1]), launches = atoi(argv[2]);", "int launches = 3;")
            .replace("int main(", "#define N_ELEMS (1 << 20)\nint main(")
            .replace("(n,", "(N_ELEMS,").replace("n * sizeof", "N_ELEMS * sizeof")
            .replace("(n + 255)", "(N_ELEMS + 255)")
            .replace("0.5f, n)", "0.5f, N_ELEMS)").replace("h[n - 1]", "h[N_ELEMS - 1]"))


def _cli(*args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "runner.cli", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=timeout)


def _profile(tmp_path: Path, source: str, args: str) -> dict:
    app = tmp_path / "app"
    app.mkdir()
    (app / "prog.cu").write_text(source)
    init = _cli("init", str(app), *(["--args", args] if args else []))
    assert init.returncode == 0, init.stderr[-2000:]
    prof = _cli("profile", "--config", str(app / "optimas.yml"), "--runs-dir", str(tmp_path / "runs"))
    assert prof.returncode == 0, prof.stderr[-3000:]
    run = Path(prof.stdout.strip().splitlines()[-1])
    plan = json.loads((run / "profile" / "counters" / "counter_plan.json").read_text())
    res = _cli("analyze", "--config", str(app / "optimas.yml"), "--run", str(run), "--json")
    assert res.returncode == 0, res.stderr[-3000:]
    return {"plan": plan, "diag": json.loads(res.stdout), "log": prof.stderr}


def test_a_size_argument_gives_a_sweep_the_gpu_confirms(tmp_path: Path):
    got = _profile(tmp_path, SIZED, "1048576 30")
    assert got["plan"]["source"] == "sizes" and got["plan"]["runs"] == 6, got["plan"]
    selection = got["diag"]["counter_selection"]
    assert selection and selection["runs"] == 6 and selection["source"].startswith("problem scales 1, 0.25")
    assert sum(e["kind"] == "counter" for e in got["diag"]["evidence"]) >= 1


def test_a_launch_count_is_not_a_size_and_launch_configurations_stand_in(tmp_path: Path):
    got = _profile(tmp_path, SHAPES, "60")
    plan = got["plan"]
    assert plan["source"] == "launch configurations" and plan["runs"] == 6, (plan, got["log"][-3000:])
    assert "instructions executed did not change with {scale}" in got["log"]
    selection = got["diag"]["counter_selection"]
    assert selection and selection["runs"] == 6
    assert selection["source"] == "launches with different launch configurations in one run of the program"


def test_a_size_constant_gives_a_sweep_of_rebuilt_programs(tmp_path: Path):
    got = _profile(tmp_path, CONSTANT, "")
    plan = got["plan"]
    assert plan["source"] == "sizes" and plan["constants"] == ["N_ELEMS"], (plan, got["log"][-3000:])
    assert plan["runs"] == 6, plan
    assert "build at scale 0.25: N_ELEMS times 0.25" in got["log"]
    selection = got["diag"]["counter_selection"]
    assert selection and selection["runs"] == 6
    assert selection["source"].startswith("problem scales 1, 0.25") and "of N_ELEMS (the program rebuilt" in \
        selection["source"]


def test_a_size_macro_per_dataset_is_scaled_in_the_branch_the_build_takes(tmp_path: Path):
    """PolyBench's shape: the size macro has one definition per dataset, each under #ifndef; every
    definition is scaled in the build's copy, so the one in effect is."""
    guarded = CONSTANT.replace("#define N_ELEMS (1 << 20)\n",
                               "#ifndef N_ELEMS\n#ifdef SMALL\n#define N_ELEMS 4096\n#else\n"
                               "#define N_ELEMS (1 << 20)\n#endif\n#endif\n")
    got = _profile(tmp_path, guarded, "")
    plan = got["plan"]
    assert plan["source"] == "sizes" and plan["constants"] == ["N_ELEMS"], (plan, got["log"][-3000:])
    assert plan["runs"] == 6, plan


def test_a_program_with_nothing_to_vary_gets_one_run_and_says_why(tmp_path: Path):
    got = _profile(tmp_path, FIXED, "")
    assert got["plan"]["source"] == "one run" and got["plan"]["runs"] == 1
    # init proposed `most` (it sizes the allocation); the GPU shows the kernel's work does not follow it
    assert "instructions executed did not change with most" in got["plan"]["why"], got["plan"]
    assert "1 launch configuration" in got["plan"]["why"]
    assert got["diag"]["counter_selection"] is None
    assert any(n.startswith("1 counter run of scale") and "1 launch configuration" in n for n in got["diag"]["notes"])
