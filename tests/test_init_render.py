"""init's config text, rendered through ruamel.yaml: comments kept, every value read back as written."""

from __future__ import annotations

from pathlib import Path

from runner.base.config import load_config
from runner.init.project import Project
from runner.init.render import ProgramSpec, render_config
from runner.scan.size_constants import SizeConstant

AWKWARD = "sh -c 'make -B \"a b\" X=#1 && cp out: {exe}'"  # quotes, a `#`, a colon, braces


def _project(kernel: str, build: str, constant: str | None = None) -> Project:
    p = Project([f"{kernel}.cu"], [kernel], build, "make", notes=[f"Makefile: note for {kernel}: 'x' # y"])
    if constant:
        p.size_constants = [SizeConstant(constant, f"{kernel}.cu", 0, 4, "4096", 3)]
    return p


def test_one_program_is_app_alone_with_its_comments_and_reads_back(tmp_path: Path):
    (tmp_path / "saxpy.cu").write_text("#define N 4096\n__global__ void saxpy() {}\nint main() {}\n")
    text = render_config([ProgramSpec(_project("saxpy", AWKWARD, "N"), "saxpy", run_args="7")])
    (tmp_path / "optimas.yml").write_text(text)
    app = load_config(tmp_path / "optimas.yml").config.app
    assert app.build == AWKWARD and app.run == "{exe} 7" and app.size_constants == ["N"]
    assert "programs:" not in text
    assert "# build (make): Makefile: note for saxpy: 'x' # y" in text
    assert "# The run takes no size argument; these constants of the host code size its allocations: N = 4096" in text


def test_several_programs_share_app_and_list_what_differs(tmp_path: Path):
    for k in ("a", "b", "c"):
        (tmp_path / f"{k}.cu").write_text("#define N 4096\n__global__ void k() {}\nint main() {}\n")
    specs = [ProgramSpec(_project(k, f"make {k} && cp {k} {{exe}}", "N"), k) for k in ("a", "b", "c")]
    text = render_config(specs)
    (tmp_path / "optimas.yml").write_text(text)
    lc = load_config(tmp_path / "optimas.yml")
    assert lc.program_names() == ["a", "b", "c"]
    # shared keys are written once, under app; each program keeps its own
    assert text.count("timeout_s:") == 1 and text.count("  size_constants:") == 3 and text.count("  build:") == 3
    for k in ("a", "b", "c"):
        app = lc.for_program(k).config.app
        assert app.build == f"make {k} && cp {k} {{exe}}" and app.sources == [f"{k}.cu"] and app.size_constants == ["N"]
        assert f"# {k}: 1 kernel ({k}), built by make" in text and f"Makefile: note for {k}" in text
    # what a key means is said once, not per program
    assert text.count("Placeholders: {exe}") == 1
