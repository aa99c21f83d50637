"""The gates over the product, checked as CI checks everything: the import rules (contracts in
.importlinter: the stages as ordered layers, base <- tracing <- build <- profiles <- analysis <-
profiling <- proposal <- evaluation <- flows <- the CLI and the bot; the corpus store imports no
stage; the Action loads neither the web app nor the jobs; the App never loads the local try-out),
each function's size and complexity in runner/ and bot/, and ruff over the code, its tests and the
benchmarks."""

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
    assert "5 kept, 0 broken" in r.stdout


@pytest.mark.parametrize("module, back", [
    ("runner/profiles/model.py", "runner.analysis.hot"),         # the profile model reaching up into analysis
    ("runner/profiling/agent.py", "runner.proposal.stage"),       # profiling building through the proposal stage
    ("runner/proposal/prompt.py", "runner.evaluation.measure"),   # the prompt reaching forward into evaluation
    ("runner/toolchain/compiler.py", "runner.profiling.agent"),       # the build room depending on a stage
    ("bot/outcome.py", "bot.jobs"),                               # the Action reaching the control jobs
    ("bot/publish.py", "bot.app"),                                # the Action loading the web app
    ("bot/jobs.py", "bot.tryout.loopback_github"),               # the App loading the local try-out
    ("bot/__init__.py", "bot.tryout.loopback_github"),           # the package every App module loads
])
def test_a_planted_import_breaks_a_contract(tmp_path: Path, module: str, back: str):
    for name in ("runner", "bot"):
        shutil.copytree(REPO / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__", "native"))
    shutil.copy2(REPO / ".importlinter", tmp_path / ".importlinter")
    planted = tmp_path / module
    planted.write_text(planted.read_text() + f"\nimport {back}  # noqa\n")
    r = _lint(tmp_path)
    assert r.returncode != 0 and "1 broken" in r.stdout, r.stdout[-3000:]
    assert back in r.stdout



def test_the_package_modules_contract_names_every_module_of_the_tryout():
    """The contract for bot/__init__.py names modules, not packages: each of the try-out's."""
    contract = (REPO / ".importlinter").read_text().split("[importlinter:contract:tryout-package]")[1]
    named = set(contract.split("forbidden_modules =")[1].split())
    modules = {"bot.tryout"} | {f"bot.tryout.{p.stem}" for p in (REPO / "bot" / "tryout").glob("*.py")
                                if p.stem not in ("__init__", "__main__")}
    assert modules <= named, modules - named

MOST_LINES, MOST_COMPLEXITY = 80, 25  # per function in runner/ and bot/ (issues #31, #45)


def _functions(blocks):
    """radon's blocks as functions: a class's methods, and nested functions after their parent."""
    for b in blocks:
        if hasattr(b, "methods"):  # a class: its methods
            yield from _functions(b.methods)
            continue
        yield b
        yield from _functions(b.closures)


def too_long_or_complex(root: Path, packages: tuple[str, ...]) -> list[str]:
    """The functions of `packages` (under `root`) over MOST_LINES lines or above cyclomatic
    complexity MOST_COMPLEXITY (radon's), methods and nested functions included."""
    from radon.complexity import cc_visit

    too: set[str] = set()  # radon lists a method with its class and again on its own
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            for f in _functions(cc_visit(path.read_text())):
                lines = f.endline - f.lineno + 1
                if f.complexity > MOST_COMPLEXITY or lines > MOST_LINES:
                    too.add(f"{path.relative_to(root)}:{f.lineno} {f.fullname}: complexity {f.complexity}, "
                            f"{lines} lines")
    return sorted(too)


def test_no_function_in_runner_or_bot_is_too_long_or_too_complex():
    too = too_long_or_complex(REPO, ("runner", "bot"))
    assert not too, "split these at their seams:\n" + "\n".join(too)


def test_a_long_or_complex_function_is_caught(tmp_path: Path):
    (tmp_path / "bot").mkdir()
    branches = "".join(f"    if x == {i}:\n        return {i}\n" for i in range(MOST_COMPLEXITY))
    (tmp_path / "bot" / "planted.py").write_text(f"def branchy(x):\n{branches}    return -1\n\n\n"
                                                 "def long():\n" + "    y = 1\n" * MOST_LINES)
    assert [t.split(" ")[1].rstrip(":") for t in too_long_or_complex(tmp_path, ("bot",))] == ["branchy", "long"]


LINTED = ("runner", "bot", "tests", "benchmarks")  # ruff's rules and line length: pyproject.toml


def _ruff(root: Path, *paths: str) -> subprocess.CompletedProcess:
    exe = shutil.which("ruff", path=str(Path(sys.executable).parent)) or "ruff"
    return subprocess.run([exe, "check", "--no-cache", "--config", str(REPO / "pyproject.toml"), *paths], cwd=root,
                          capture_output=True, text=True)


def test_ruff_finds_nothing_in_the_product_its_tests_and_benchmarks():
    r = _ruff(REPO, *LINTED)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]


def test_ruff_catches_a_planted_unused_import(tmp_path: Path):
    (tmp_path / "planted.py").write_text("import os\n")
    r = _ruff(tmp_path, "planted.py")
    assert r.returncode == 1 and "F401" in r.stdout, r.stdout + r.stderr
