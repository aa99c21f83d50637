"""The figures of a review of the tree (issue #45): lines per package, the largest modules, functions
over 60 and 80 lines, the most complex function of runner/ and bot/ (radon's cyclomatic complexity),
functions taking 7 or more parameters, signatures taking the configuration (`lc: LoadedConfig`)
against those taking the run's context (`RunContext`), and the call sites that derive the run's
facts again (workspace_dirs, target_arch, read_context, build_compiler).

Usage: python benchmarks/tree_figures.py [--json OUT.json]   (from the repository root; prints a
Markdown table, and writes the figures as JSON with --json)
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from collections import Counter
from pathlib import Path

from radon.complexity import cc_visit

REPO = Path(__file__).resolve().parent.parent
PRODUCT = ("runner", "bot")
# The stages: where the issue asks for no function of more than 6 parameters.
STAGES = ("runner/profiling", "runner/analysis", "runner/proposal", "runner/evaluation", "runner/flows",
          "runner/toolchain", "runner/profiles", "runner/tracing")
DERIVED = ("workspace_dirs", "target_arch", "read_context", "build_compiler")


def _modules(root: Path) -> list[Path]:
    return sorted(p for package in PRODUCT for p in (root / package).rglob("*.py") if "__pycache__" not in p.parts)


def _package(root: Path, path: Path) -> str:
    parts = path.relative_to(root).parts
    return "/".join(parts[:2]) if len(parts) > 2 else parts[0]


def _functions(blocks):
    for b in blocks:
        if hasattr(b, "methods"):
            yield from _functions(b.methods)
            continue
        yield b
        yield from _functions(b.closures)


def _parameters(node: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.arg]:
    a = node.args
    names = [*a.posonlyargs, *a.args, *a.kwonlyargs]
    return [p for p in names if p.arg not in ("self", "cls")]


def _annotation(arg: ast.arg) -> str:
    return ast.unparse(arg.annotation) if arg.annotation is not None else ""


def figures(root: Path) -> dict:
    """Every figure of the review, measured on the tree at `root`."""
    lines: Counter[str] = Counter()
    modules: list[tuple[int, str]] = []
    long60, long80, complexity, many = [], [], [], []
    lc_sigs = ctx_sigs = 0
    derived: Counter[str] = Counter()
    for path in _modules(root):
        text = path.read_text()
        rel = path.relative_to(root).as_posix()
        n = text.count("\n")
        lines[_package(root, path)] += n
        modules.append((n, rel))
        seen = set()
        for f in _functions(cc_visit(text)):
            if (f.lineno, f.name) in seen:
                continue
            seen.add((f.lineno, f.name))
            length = f.endline - f.lineno + 1
            where = f"{rel}:{f.lineno} {f.fullname}"
            long60 += [where] if length > 60 else []
            long80 += [where] if length > 80 else []
            complexity.append((f.complexity, where))
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                params = _parameters(node)
                if len(params) >= 7:
                    many.append(f"{rel}:{node.lineno} {node.name} ({len(params)})")
                kinds = {_annotation(p) for p in params}
                lc_sigs += "LoadedConfig" in kinds
                ctx_sigs += any("RunContext" in k for k in kinds)
            elif isinstance(node, ast.Call):
                name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
                if name in DERIVED:
                    derived[name] += 1
    complexity.sort(reverse=True)
    in_stages = [m for m in many if m.startswith(STAGES)]
    return {
        "lines_per_package": dict(sorted(lines.items())),
        "lines_total": sum(lines.values()),
        "largest_modules": [f"{rel} ({n})" for n, rel in sorted(modules, reverse=True)[:5]],
        "functions_over_60_lines": len(long60),
        "functions_over_80_lines": long80,
        "most_complex": {pkg: next((f"{w} ({c})" for c, w in complexity if w.startswith(pkg)), "")
                         for pkg in PRODUCT},
        "functions_with_7_or_more_parameters": len(many),
        "of_them_in_the_stages": in_stages,
        "signatures_taking_LoadedConfig": lc_sigs,
        "signatures_taking_RunContext": ctx_sigs,
        "call_sites_deriving_run_facts": dict(derived),
    }


def _table(f: dict) -> str:
    rows = [("lines, runner/ and bot/", f["lines_total"]),
            ("largest module", f["largest_modules"][0]),
            ("functions over 60 lines", f["functions_over_60_lines"]),
            ("functions over 80 lines", len(f["functions_over_80_lines"])),
            ("most complex in runner/", f["most_complex"]["runner"]),
            ("most complex in bot/", f["most_complex"]["bot"]),
            ("functions with 7+ parameters (in the stages)",
             f"{f['functions_with_7_or_more_parameters']} ({len(f['of_them_in_the_stages'])})"),
            ("signatures taking LoadedConfig / RunContext",
             f"{f['signatures_taking_LoadedConfig']} / {f['signatures_taking_RunContext']}")]
    rows += [(f"calls of {k}", v) for k, v in sorted(f["call_sites_deriving_run_facts"].items())]
    rows += [(f"lines in {k}", v) for k, v in f["lines_per_package"].items()]
    return "| figure | value |\n|---|---|\n" + "\n".join(f"| {k} | {v} |" for k, v in rows)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", type=Path, help="write the figures here as JSON")
    args = ap.parse_args()
    f = figures(REPO)
    if args.json:
        args.json.write_text(json.dumps(f, indent=2) + "\n")
    sys.stdout.write(_table(f) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
