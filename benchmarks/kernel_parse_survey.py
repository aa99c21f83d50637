"""How many of the kernels defined in a set of CUDA program folders the source parser finds
(`runner.scan.cuda_source.functions`, which the prompt and the guard rely on to show and protect a
hot kernel). An independent, cruder scan is the reference: each `__global__` followed by a name, a
parameter list and `{` (after comments, strings and preprocessor lines are blanked, and launch-bound
attributes or macros taken out). A kernel the scan sees and the parser misses is listed with its file.

`--prompts` also builds, per folder, the prompt for each kernel as if it were the one hot kernel
(the sources `optimas init` would name, their local headers, no profiler evidence), and reports
how many were built, the errors, and the prompts' sizes.

Usage: python benchmarks/kernel_parse_survey.py FOLDER... [--prompts] [--out FILE.md]
No GPU, no build.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))

from runner.analysis.evidence import Diagnostics, GpuInfo  # noqa: E402
from runner.analysis.hot import KernelTime  # noqa: E402
from runner.base.errors import OptimasError  # noqa: E402
from runner.base.workspace import read_included, read_sources  # noqa: E402
from runner.init.sources import scan  # noqa: E402
from runner.proposal.prompt import build_prompt  # noqa: E402
from runner.scan.cuda_source import code_text, functions  # noqa: E402

SUFFIXES = (".cu", ".cuh", ".h", ".hpp", ".cpp", ".cc", ".cxx", ".inl")
_BOUNDS = re.compile(r"\w*(?:__launch_bounds__|LAUNCH_BOUNDS)\w*\s*\((?:[^()]|\([^()]*\))*\)")


def scanned_kernels(text: str) -> set[str]:
    """Names of the kernels the crude scan sees defined in `text`."""
    clean = code_text(text)
    names = set()
    for m in re.finditer(r"\b__global__\b", clean):
        tail = clean[m.end():m.end() + 3000]
        ends = [i for i in (tail.find("{"), tail.find(";")) if i >= 0]
        if not ends or tail[min(ends)] != "{":
            continue  # a declaration
        head = _BOUNDS.sub(" ", tail[:min(ends)])
        paren = head.find("(")
        name = re.search(r"([A-Za-z_]\w*)\s*(?:<[^()]*>)?\s*$", head[:paren]) if paren >= 0 else None
        if name:
            names.add(name.group(1))
    return names


def survey(folders: list[Path]) -> tuple[int, int, int, list[tuple[str, list[str]]]]:
    """(files with a kernel, kernels scanned, of them found by the parser, misses per file)."""
    files = scanned = found = 0
    misses = []
    for folder in folders:
        for path in sorted(folder.rglob("*")):
            if path.suffix not in SUFFIXES or not path.is_file():
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
            if "__global__" not in text:
                continue
            want = scanned_kernels(text)
            got = {f.name.split("::")[-1] for f in functions(text) if f.is_kernel}
            files += 1
            scanned += len(want)
            found += len(want & got)
            if want - got:
                misses.append((f"{folder.name}/{path.relative_to(folder).as_posix()}", sorted(want - got)))
    return files, scanned, found, misses


def prompts(folders: list[Path]) -> tuple[list[int], list[str]]:
    """The size of each prompt built (one per kernel and folder), and what failed."""
    sizes, errors = [], []
    for folder in folders:
        try:
            files, _, _ = scan(folder)
            sources = read_sources(folder, files)
            sources.update(read_included(folder, folder, sources))
        except (OSError, OptimasError) as e:
            errors.append(f"{folder.name}: reading its sources: {e}")
            continue
        kernels = sorted({f.name.split("::")[-1] for text in sources.values() for f in functions(text) if f.is_kernel})
        for k in kernels:
            diag = Diagnostics(gpu=GpuInfo(name="NVIDIA H200"), alpha=0.8, kernels=[
                KernelTime(kernel=k, total_ns=1e6, launches=1, share=1.0, cumulative_share=1.0, hot=True)])
            try:
                sizes.append(len(build_prompt(folder.name, diag, sources).user.encode()))
            except OptimasError as e:
                errors.append(f"{folder.name}: {k}: {e}")
    return sizes, errors


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folders", nargs="+", type=Path)
    ap.add_argument("--prompts", action="store_true", help="also build a prompt per kernel")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    files, scanned, found, misses = survey(args.folders)
    lines = [f"{len(args.folders)} folders, {files} files defining kernels: the parser finds {found} of the "
             f"{scanned} kernel definitions the scan sees.", ""]
    if args.prompts:
        sizes, errors = prompts(args.folders)
        sizes.sort()
        median = sizes[len(sizes) // 2] if sizes else 0
        lines += [f"Prompts: {len(sizes)} built, {len(errors)} failed; user prompt median {median:,} bytes, "
                  f"largest {max(sizes, default=0):,}.", ""] + [f"- {e}" for e in errors] + ([""] if errors else [])
    if misses:
        lines += ["| file | kernels the parser misses |", "|---|---|"]
        lines += [f"| {f} | {', '.join(names)} |" for f, names in misses]
    text = "\n".join(lines) + "\n"
    if args.out:
        args.out.write_text(text)
    print(text, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
