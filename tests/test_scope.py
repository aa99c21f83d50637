"""What a pull request touches of a program (runner.flows.scope): one real build through the nvcc
shim, each compiled source's dependencies from nvcc -MM; documentation, other programs' sources and
files outside the workspace are not the program's, its sources, headers, build files and data are."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from runner.base.config import load_config
from runner.flows.scope import program_files, pull_request_scope

pytestmark = pytest.mark.skipif(not (shutil.which("nvcc") and shutil.which("make")), reason="nvcc and make needed")


def repository(tmp_path: Path) -> Path:
    """A repository with two programs sharing a header; the config builds `stencil` with make."""
    root = tmp_path / "repo"
    for folder in ("common", "stencil", "reduce", "docs"):
        (root / folder).mkdir(parents=True)
    (root / "common" / "grid.cuh").write_text("#pragma once\n#define GRID 256\n")
    (root / "common" / "unused.cuh").write_text("#pragma once\n")
    (root / "stencil" / "params.h").write_text('#pragma once\n#include "../common/grid.cuh"\n')
    (root / "stencil" / "stencil.cu").write_text(
        '#include "params.h"\n__global__ void st(float* a) { a[threadIdx.x] = GRID; }\n'
        "int main() { st<<<1, 32>>>(nullptr); return 0; }\n")
    (root / "stencil" / "Makefile").write_text("stencil: stencil.cu\n\tnvcc -O2 -o stencil stencil.cu\n")
    (root / "stencil" / "input.dat").write_text("1 2 3\n")
    (root / "reduce" / "reduce.cu").write_text('#include "../common/grid.cuh"\n__global__ void r() {}\n'
                                               "int main() { return 0; }\n")
    (root / ".optimas.yml").write_text("app:\n  name: stencil\n  workspace: .\n  workdir: stencil\n"
                                       "  sources: [stencil.cu]\n  build: sh -c 'make -B && cp stencil {exe}'\n"
                                       "  run: '{exe}'\n")
    return root


def test_the_build_lists_what_it_compiled_and_included(tmp_path: Path):
    root = repository(tmp_path)
    files = program_files(load_config(root / ".optimas.yml"), "sm_90")
    assert files is not None and set(files) == {"stencil/stencil.cu", "stencil/params.h", "common/grid.cuh"}


@pytest.mark.parametrize("changed, touched", [
    (["docs/guide.md", "README.md", ".github/workflows/ci.yml"], []),  # documentation and CI
    (["reduce/reduce.cu", "common/unused.cuh"], []),  # another program's code, a header nothing includes
    (["common/grid.cuh", "docs/guide.md"], ["common/grid.cuh"]),  # a shared header it includes
    (["stencil/stencil.cu"], ["stencil/stencil.cu"]),
    (["stencil/Makefile", "stencil/input.dat"], ["stencil/Makefile", "stencil/input.dat"]),  # build file, data
    ([".optimas.yml"], [".optimas.yml"]),
])
def test_a_pull_request_touches_the_program_through_its_files(tmp_path: Path, changed: list[str],
                                                             touched: list[str]):
    root = repository(tmp_path)
    scope = pull_request_scope(load_config(root / ".optimas.yml"), changed, "sm_90", root)
    assert scope.touched == touched
    assert ("none of the" in scope.why) == (not touched)


def test_a_build_that_fails_counts_every_change(tmp_path: Path):
    root = repository(tmp_path)
    (root / "stencil" / "stencil.cu").write_text("this does not compile\n")
    scope = pull_request_scope(load_config(root / ".optimas.yml"), ["docs/guide.md"], "sm_90", root)
    assert scope.touched == ["docs/guide.md"] and "could not be told" in scope.why
