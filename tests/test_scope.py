"""What a pull request touches of a program (runner.flows.scope): one real build through the nvcc
shim, each compiled source's dependencies from nvcc -MM; documentation, other programs' sources and
files outside the workspace are not the program's, its sources, headers, build files and data are."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from runner.base.config import load_config
from runner.flows.scope import program_files, pull_request_scope, select_programs

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


def test_a_build_that_fails_counts_every_change_but_documentation(tmp_path: Path):
    root = repository(tmp_path)
    (root / "stencil" / "stencil.cu").write_text("this does not compile\n")
    scope = pull_request_scope(load_config(root / ".optimas.yml"), ["docs/guide.md", "reduce/reduce.cu"], "sm_90",
                               root)
    assert scope.touched == ["reduce/reduce.cu"] and "could not be told" in scope.why


def test_documentation_alone_is_told_without_a_build(tmp_path: Path):
    root = repository(tmp_path)
    (root / "stencil" / "stencil.cu").write_text("this does not compile\n")  # a build would count every change
    scope = pull_request_scope(load_config(root / ".optimas.yml"), ["docs/guide.md", "README.md"], "sm_90", root)
    assert scope.touched == [] and scope.compiled is None and "other than documentation" in scope.why


PROGRAMS = """app:
  workspace: .
  build: sh -c 'make -B && cp $(basename $PWD) {exe}'
  run: '{exe}'
programs:
  - {name: stencil, workdir: stencil, sources: [stencil.cu]}
  - {name: reduce, workdir: reduce, sources: [reduce.cu]}
"""


def _two_programs(tmp_path: Path) -> Path:
    root = repository(tmp_path)
    (root / "reduce" / "Makefile").write_text("reduce: reduce.cu\n\tnvcc -O2 -o reduce reduce.cu\n")
    (root / "reduce" / "input.dat").write_text("4 5\n")
    (root / ".optimas.yml").write_text(PROGRAMS)
    return root


@pytest.mark.parametrize("changed, run, skipped", [
    (["common/grid.cuh"], ["stencil", "reduce"], []),  # the header both include
    (["reduce/reduce.cu", "reduce/input.dat"], ["reduce"], ["stencil"]),  # one program's kernel and data
    (["stencil/params.h"], ["stencil"], ["reduce"]),  # a header only one includes
    (["docs/guide.md"], [], ["stencil", "reduce"]),
])
def test_a_pull_request_runs_the_programs_whose_files_it_changes(tmp_path: Path, changed: list[str],
                                                                  run: list[str], skipped: list[str]):
    root = _two_programs(tmp_path)
    chosen = select_programs(load_config(root / ".optimas.yml").each_program(), changed, "sm_90", root, limit=3)
    assert [lc.config.app.name for lc, _ in chosen.run] == run
    assert [name for name, _ in chosen.skipped] == skipped


def test_past_the_limit_the_most_recently_changed_programs_run_first(tmp_path: Path):
    root = _two_programs(tmp_path)
    programs = load_config(root / ".optimas.yml").each_program()
    changed = ["stencil/stencil.cu", "reduce/reduce.cu"]
    chosen = select_programs(programs, changed, "sm_90", root, limit=1,
                             newest_first=lambda: ["reduce/reduce.cu", "stencil/stencil.cu"])
    assert [lc.config.app.name for lc, _ in chosen.run] == ["reduce"]
    ((name, why),) = chosen.skipped
    assert name == "stencil" and "only 1 program run per pull request" in why
    chosen = select_programs(programs, changed, "sm_90", root, limit=1)  # no order told: the config's
    assert [lc.config.app.name for lc, _ in chosen.run] == ["stencil"]


def test_a_changed_build_file_or_config_is_told_without_a_build(tmp_path: Path):
    root = repository(tmp_path)
    (root / "stencil" / "stencil.cu").write_text("this does not compile\n")  # a build would count every change
    scope = pull_request_scope(load_config(root / ".optimas.yml"), ["stencil/Makefile", "stencil/stencil.cu",
                                                                    "reduce/reduce.cu"], "sm_90", root)
    assert scope.touched == ["stencil/Makefile", "stencil/stencil.cu"] and scope.compiled is None
    assert "told without a build" in scope.why
