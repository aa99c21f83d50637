"""The package layout's import rule, checked as CI checks everything: the stages as ordered layers
(base <- tracing <- build <- profiles <- analysis <- profiling <- proposal <- evaluation <- flows <-
the CLI and the bot), and the corpus store imports no stage (contracts in .importlinter)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO


def _lint(root: Path) -> subprocess.CompletedProcess:
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or "lint-imports"
    env = {**os.environ, "PYTHONPATH": str(root)}  # this tree's packages before the installed ones
    return subprocess.run([exe, "--config", str(root / ".importlinter")], cwd=root, capture_output=True, text=True,
                          env=env)


def test_imports_go_one_way():
    r = _lint(REPO)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert "2 kept, 0 broken" in r.stdout


@pytest.mark.parametrize("module, back", [
    ("runner/profiles/model.py", "runner.analysis.hot"),         # the profile model reaching up into analysis
    ("runner/profiling/agent.py", "runner.proposal.stage"),       # profiling building through the proposal stage
    ("runner/proposal/prompt.py", "runner.evaluation.measure"),   # the prompt reaching forward into evaluation
    ("runner/build/compiler.py", "runner.profiling.agent"),       # the build room depending on a stage
])
def test_an_import_against_the_pipeline_breaks_the_contract(tmp_path: Path, module: str, back: str):
    for name in ("runner", "bot"):
        shutil.copytree(REPO / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__", "native"))
    shutil.copy2(REPO / ".importlinter", tmp_path / ".importlinter")
    planted = tmp_path / module
    planted.write_text(planted.read_text() + f"\nimport {back}  # noqa\n")
    r = _lint(tmp_path)
    assert r.returncode != 0 and "1 broken" in r.stdout, r.stdout[-3000:]
    assert back in r.stdout


MOST_LINES, MOST_COMPLEXITY = 80, 25  # per function in runner/ (issue #31)


def test_no_function_in_runner_is_too_long_or_too_complex():
    """radon's cyclomatic complexity and each function's length, over every module of runner/
    (methods and nested functions included)."""
    from radon.complexity import cc_visit

    def functions(blocks):
        for b in blocks:
            if hasattr(b, "methods"):  # a class: its methods
                yield from functions(b.methods)
                continue
            yield b
            yield from functions(b.closures)

    too: set[str] = set()  # radon lists a method with its class and again on its own
    for path in sorted((REPO / "runner").rglob("*.py")):
        for f in functions(cc_visit(path.read_text())):
            lines = f.endline - f.lineno + 1
            if f.complexity > MOST_COMPLEXITY or lines > MOST_LINES:
                too.add(f"{path.relative_to(REPO)}:{f.lineno} {f.fullname}: complexity {f.complexity}, {lines} lines")
    assert not too, "split these at their seams:\n" + "\n".join(sorted(too))
