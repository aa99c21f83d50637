"""Run folders as the dashboard reads them: a summary per run for the list, the details of one run
for its page. Only a run's small files are read (manifest, results, evidence, prompt, answer)."""

from __future__ import annotations

import json
import logging
import math
import re
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel

from runner.base.workspace import FileTooLargeError, read_capped
from runner.profiles.model import short_kernel_name

log = logging.getLogger(__name__)

RUN_ID = re.compile(r"\d{8}T\d{6}Z-[0-9a-f-]{36}")
ABLATION = re.compile(r"ablation-\d{8}T\d{6}Z-[0-9a-f-]{36}")
# A run's files are the code under test's to write (a job keeps files of up to 64 MiB): the pages
# read this much of a JSON file at most, and count a run they cannot read as unreadable, alone.
JSON_LIMIT = 4 << 20
UNREADABLE = (TypeError, ValueError, AttributeError, KeyError, IndexError, RecursionError, OverflowError)


class RunSummary(BaseModel):
    """One row of the runs page."""

    id: str
    created: str = ""
    app: str = ""
    gpu: str = ""
    model: str = ""
    diagnostics: str = ""
    status: str = ""  # the last stage the run finished
    verdict: str = ""
    improvement: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    ear: dict[str, Any] = {}
    per_kernel: dict[str, dict] = {}  # each hot kernel's improvement with its interval
    # a candidate was proposed but never validated nor timed: the command that evaluates it
    evaluate_with: str = ""
    failed_stage: str = ""  # the stage that stopped the run with an error
    error: str = ""  # that error, as the run recorded it
    remedy: str = ""  # what usually resolves it


# What usually resolves a stage's error, by what the error says (the first that matches).
REMEDIES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"(?i)\bncu\b|nsight compute"), "install Nsight Compute (ncu) on the GPU machine and put it on PATH, "
     "or name it in profiling.ncu"),
    (re.compile(r"(?i)nvidia-smi|no (nvidia )?gpu|needs a gpu|driver"), "run on a machine with an NVIDIA GPU and its "
     "driver; without one, `optimas prompt` builds the prompt and `optimas demo` shows an evaluated run"),
    (re.compile(r"(?i)\bnvcc\b.*(not found|missing)|cuda toolkit"), "install the CUDA toolkit (nvcc), or name it in "
     "profiling.nvcc"),
    (re.compile(r"(?i)permission|ERR_NVGPUCTRPERM"), "allow profiling counters for this user (NVIDIA's "
     "ERR_NVGPUCTRPERM page), or profile as root"),
    (re.compile(r"(?i)timed out|timeout"), "raise app.timeout_s, or give the run a smaller problem size"),
    (re.compile(r"(?i)build|compil"), "run `optimas check-config --build` to see the build's log"),
)
ERROR_CHARS = 2000  # of a stage's recorded error shown at most


def remedy_for(error: str) -> str:
    """What usually resolves `error` (REMEDIES), or where to look."""
    return next((fix for pattern, fix in REMEDIES if pattern.search(error)),
                "see the run folder's manifest.json and the stage's own files")


def _json(path: Path) -> Any:
    """A JSON file's value; None when it is missing, larger than JSON_LIMIT or not JSON."""
    try:
        return json.loads(read_capped(path, JSON_LIMIT, "a run's record").decode("utf-8", errors="replace"))
    except FileTooLargeError as e:
        log.warning("%s; not read", e)
    except (OSError, ValueError, RecursionError):
        pass
    return None


def _object(path: Path) -> dict:
    """A JSON file's object, or {} (missing, unreadable or of another type)."""
    value = _json(path)
    return value if isinstance(value, dict) else {}


def number(value: Any) -> float | None:
    """`value` as a finite number, or None (a run's files are not always the shape Optimas writes)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        x = float(value)
    except OverflowError:
        return None
    return x if math.isfinite(x) else None


def _dicts(value: Any) -> list[dict]:
    """The objects of a list, or [] (a run's files are not always the shape Optimas writes)."""
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def run_folder(runs_dir: Path, run_id: str) -> Path | None:
    """The folder of a run named by its id, or None: only a direct child of the runs folder whose
    name is a run id, so that no other path is ever read."""
    if not RUN_ID.fullmatch(run_id):
        return None
    folder = runs_dir / run_id
    return folder if (folder / "manifest.json").is_file() else None


def summary(folder: Path) -> RunSummary:
    """A run's row, from its manifest, its candidates' result and its evaluation result."""
    m = _object(folder / "manifest.json")
    stages, config = _dict(m.get("stages")), _dict(m.get("config"))
    s = RunSummary(id=folder.name, created=str(m.get("created", ""))[:19].replace("T", " "),
                   app=str(config.get("app") or "") or _app_name(folder),
                   gpu=str(_dict(m.get("device")).get("name") or ""),
                   status=next((k for k in ("evaluation", "candidates", "analysis", "profile") if k in stages), ""))
    _failure(s, stages)
    cand = _object(folder / "candidates" / "result.json")
    _proposal(s, folder, cand)
    ev = _object(folder / "evaluation" / "result.json")
    if ev:
        _evaluation(s, ev)
    elif cand.get("status") == "accepted":
        # proposed where no GPU was (the demo, a laptop): it has no verdict yet
        s.verdict = "not evaluated"
        # a command the reader will paste into a shell: the manifest's words quoted, and only a plain path
        config = str(config.get("path") or "")
        config = shlex.quote(config) if re.fullmatch(r"[\w.][\w./-]*", config) else "<its config>"
        s.evaluate_with = f"optimas evaluate --config {config} --run {shlex.quote(str(folder))}"
    elif cand:
        s.verdict = str(cand.get("status") or "")
    elif s.failed_stage:
        s.verdict = "failed"
    return s


def _failure(s: RunSummary, stages: dict) -> None:
    """The stage that stopped the run, its error and the remedy, where one did."""
    failed = next(((name, v) for name, v in stages.items() if isinstance(v, dict) and v.get("failed")), None)
    if failed is None:
        return
    s.failed_stage, s.status = failed[0], f"{failed[0]} failed"
    s.error = str(failed[1].get("error") or "no error was recorded")[:ERROR_CHARS]
    s.remedy = remedy_for(s.error)


def _proposal(s: RunSummary, folder: Path, cand: dict) -> None:
    """The model and diagnostics of the run's proposal, or of the prompt `optimas prompt` wrote."""
    attempts = _dicts(cand.get("attempts"))
    if attempts:
        s.model = f"{attempts[-1].get('backend', '')}: {attempts[-1].get('model', '')}"
    prompted = _object(folder / "prompt" / "prompt.json")  # written by `optimas prompt`
    s.diagnostics = str(cand.get("diagnostics") or prompted.get("diagnostics") or "")
    if s.status in ("", "analysis") and not cand and (folder / "prompt" / "user.md").is_file():
        s.status = "prompt"


def _evaluation(s: RunSummary, ev: dict) -> None:
    """The verdict, the gain with its interval, each hot kernel's, and the EAR scores."""
    s.verdict = str(ev.get("verdict") or "")
    timing = _dict(ev.get("timing"))
    r = _dict(timing.get("result"))
    s.improvement, s.ci_low, s.ci_high = (number(r.get(k)) for k in ("improvement", "ci_low", "ci_high"))
    s.per_kernel = {str(k): v for k, v in _dict(timing.get("per_kernel")).items() if isinstance(v, dict)}
    s.ear = {k: v for k, v in _dict(ev.get("ear")).items()
             if k in ("coverage", "localization", "directional", "hallucination_rate", "correct")}


def _app_name(folder: Path) -> str:
    """`app.name` of the config the run copied (config.yml): runs written before manifests recorded
    the app's name. (YAML's own reader: a pattern over the text took exponential time on a config
    of blank lines, and held the App's process with it.)"""
    try:
        config = yaml.safe_load(_text(folder / "config.yml", limit=20_000))
    except (yaml.YAMLError, RecursionError, ValueError):
        return ""
    app = config.get("app") if isinstance(config, dict) else None
    name = app.get("name") if isinstance(app, dict) else None
    return name.strip() if isinstance(name, str) else ""


def list_runs(runs_dir: Path) -> list[RunSummary]:
    """Every run under `runs_dir`, newest first."""
    if not runs_dir.is_dir():
        return []
    folders = [p for p in runs_dir.iterdir() if RUN_ID.fullmatch(p.name) and (p / "manifest.json").is_file()]
    return [_readable_summary(p) for p in sorted(folders, key=lambda p: p.name, reverse=True)]


def _readable_summary(folder: Path) -> RunSummary:
    """A run's row, or a row that says it could not be read (its files are not the shape Optimas
    writes): one such run never takes the pages listing every run with it."""
    try:
        return summary(folder)
    except UNREADABLE as e:
        log.warning("%s: unreadable run (%s)", folder.name, type(e).__name__)
        return RunSummary(id=folder.name, verdict="unreadable")


class RunDetail(BaseModel):
    """What the run page shows."""

    summary: RunSummary
    evidence: list[dict] = []
    hot_kernels: list[dict] = []
    rooflines: list[dict] = []  # per kernel: before (and after, from the re-profile of the candidate)
    prompt: str = ""
    answer: str = ""
    diff: str = ""
    validation: list[dict] = []
    timing: dict = {}
    checks: list[dict] = []
    iterations: list[dict] = []
    hot_spots: list[dict] = []  # the prompt's hot-kernel source, each line with its salient stall
    loop: dict = {}  # the closed loop's outcome: kept iteration, cumulative improvement, why it stopped
    candidates: list[dict] = []  # this iteration's candidates (llm.candidates > 1): the kept one and the runners-up
    unreadable: list[str] = []  # the parts of the run whose files are not the shape Optimas writes, left out


# `### Hot kernel <name> (<file>, lines <a>-<b>)`, then a ```cuda block of numbered lines
_BLOCK_TITLE = re.compile(r"### (Hot kernel .*) \(([^,()\n]+), lines (\d+)-(\d+)\)")
_TITLE_LIMIT = 2000  # characters of a heading line read at most


def hot_spots(prompt: str, evidence: list[dict]) -> list[dict]:
    """The hot kernels' source as the prompt showed it, each line with the share of the kernel's
    PC samples it holds and its dominant stall reason where the evidence names it (S*)."""
    stalls = {}
    for e in evidence:
        s = e.get("stall")
        if s:
            stalls[(Path(s["file"]).name, s["line"])] = {"id": e["id"], "share": s["line_share"],
                                                        "reason": s["reason"]}
    blocks = []
    for title, file, body in _prompt_blocks(prompt):
        lines = []
        for row in body:
            number, _, text = row.partition("| ")
            if number.strip().isdigit():
                no = int(number)
                lines.append({"no": no, "text": text, **stalls.get((Path(file).name, no), {})})
        blocks.append({"title": title, "file": file, "lines": lines})
    return blocks


def _prompt_blocks(prompt: str) -> list[tuple[str, str, list[str]]]:
    """(title, file, lines) of each hot kernel's block in a prompt, read line by line."""
    out = []
    lines = prompt.splitlines()
    for i, line in enumerate(lines):
        m = _BLOCK_TITLE.fullmatch(line) if line.startswith("### Hot kernel ") and len(line) < _TITLE_LIMIT else None
        if m is None or i + 1 >= len(lines) or lines[i + 1] != "```cuda":
            continue
        end = next((j for j in range(i + 2, len(lines)) if lines[j] == "```"), None)
        if end is not None:
            out.append((m.group(1), m.group(2), lines[i + 2:end]))
    return out


def detail(folder: Path) -> RunDetail:
    """The run page's content; a run whose files are not the shape Optimas writes is shown as
    unreadable."""
    try:
        return _detail(folder)
    except UNREADABLE as e:
        log.warning("%s: unreadable run (%s)", folder.name, type(e).__name__)
        return RunDetail(summary=RunSummary(id=folder.name, verdict="unreadable"))


def _detail(folder: Path) -> RunDetail:
    """The run page's content, part by part: a part whose files are not the shape Optimas writes is
    left out and named in `unreadable`; the others are shown."""
    d = RunDetail(summary=summary(folder))
    diag = _object(folder / "analysis" / "diagnostics.json")
    ev = _object(folder / "evaluation" / "result.json")
    parts: dict[str, Callable[[], None]] = {
        "evidence": lambda: _evidence(d, folder, diag), "rooflines": lambda: setattr(d, "rooflines", rooflines(
            folder, diag)),
        "the answer and diff": lambda: _answer(d, folder), "evaluation": lambda: _evaluated(d, ev),
        "closed loop": lambda: _loop(d, folder), "candidates": lambda: _candidates(d, folder)}
    for name, fill in parts.items():
        try:
            fill()
        except UNREADABLE as e:
            log.warning("%s: %s unreadable (%s)", folder.name, name, type(e).__name__)
            d.unreadable.append(name)
    return d


def _evidence(d: RunDetail, folder: Path, diag: dict) -> None:
    """The evidence, hot kernels, prompt and its hot spots, and the compiler feedback."""
    evidence = _dicts(diag.get("evidence"))
    d.evidence = [{"id": e["id"], "kind": e["kind"], "text": e.get("text", ""),
                   "kernel": short_kernel_name(str(e.get("kernel") or ""))} for e in evidence]
    d.hot_kernels = [k for k in _dicts(diag.get("kernels")) if k.get("hot")]
    # the proposal stage's first prompt; `optimas prompt` writes the one prompt as user.md
    d.prompt = _text(folder / "prompt" / "user-1.md") or _text(folder / "prompt" / "user.md")
    d.hot_spots = hot_spots(d.prompt, evidence)
    # compiler feedback (K*) is measured at prompt time: the prompt holds it
    section = d.prompt.split("## Compiler feedback (K)", 1)[1].split("\n## ", 1)[0] if "## Compiler feedback (K)" \
        in d.prompt else ""
    for m in re.finditer(r"^- (K\d+) (.*)$", section, re.M):
        kernel, text = re.match(r"(?:\[([^\]]*)\] )?(.*)", m.group(2)).groups()
        d.evidence.append({"id": m.group(1), "kind": "compiler", "text": text, "kernel": kernel or ""})


def _answer(d: RunDetail, folder: Path) -> None:
    d.answer = _text(folder / "llm" / "answer-1.txt")
    d.diff = _text(folder / "candidates" / "1" / "diff.patch")


def _evaluated(d: RunDetail, ev: dict) -> None:
    d.validation = _dicts(_dict(ev.get("validation")).get("cases"))
    d.timing = _dict(ev.get("timing"))
    d.checks = _dicts(_dict(ev.get("ear")).get("checks"))


def _loop(d: RunDetail, folder: Path) -> None:
    loop = _object(folder / "evaluation" / "loop.json")
    d.iterations = _dicts(loop.get("iterations"))
    d.loop = {k: loop.get(k) for k in ("best", "cumulative_improvement", "stopped_because")} if loop else {}


def _candidates(d: RunDetail, folder: Path) -> None:
    d.candidates = [{**c, "run_id": Path(str(c.get("run_dir") or "")).name}
                    for c in _dicts(_json(folder / "evaluation" / "candidates.json"))]


def rooflines(folder: Path, diag: dict | None = None) -> list[dict]:
    """Each hot kernel's roofline: before (the run's evidence) and after (the re-profile of its
    candidate, the run's first iteration folder, where there is one)."""
    if diag is None:
        diag = _object(folder / "analysis" / "diagnostics.json")
    reprofile = next(iter(sorted(folder.glob("iterations/*/analysis/diagnostics.json"))), None)
    measured = _dicts((_object(reprofile) if reprofile else {}).get("evidence"))
    after = {str(e.get("kernel")): e["roofline"] for e in measured if isinstance(e.get("roofline"), dict)}
    return [{"kernel": str(e.get("kernel") or ""), "before": e["roofline"], "after": after.get(str(e.get("kernel")))}
            for e in _dicts(diag.get("evidence")) if isinstance(e.get("roofline"), dict)]


def evaluation_timing(folder: Path) -> dict:
    """The evaluation's timing (samples of baseline and candidate, the interval), or {}."""
    return _dict(_object(folder / "evaluation" / "result.json").get("timing"))


def _text(path: Path, limit: int = 200_000) -> str:
    """The first `limit` characters of a text file (no more is read), or ""."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read(limit)
    except OSError:
        return ""


def ablations(runs_dir: Path, run_ids: set[str]) -> list[dict]:
    """The ablations (`optimas ablate`: every diagnostic configuration side by side) whose runs are
    among `run_ids`, newest first: folder name and rows."""
    out = []
    if not runs_dir.is_dir():
        return out
    for folder in sorted((p for p in runs_dir.iterdir() if ABLATION.fullmatch(p.name)), key=lambda p: p.name,
                         reverse=True):
        rows = _json(folder / "ablation.json")
        rows = [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []
        if rows and any(r.get("run_id") in run_ids for r in rows):
            out.append({"name": folder.name, "rows": rows, "svg": (folder / "ablation.svg").is_file()})
    return out


def ablation_svg(runs_dir: Path, name: str) -> str | None:
    """An ablation's plot, by its folder's name (only such folders, directly under the runs folder)."""
    if not ABLATION.fullmatch(name):
        return None
    return _text(runs_dir / name / "ablation.svg") or None


def kernel_history(runs: list[RunSummary]) -> dict[str, list[tuple[str, float, float, float]]]:
    """Per hot kernel, the measured improvement of each evaluated run (oldest first): (created,
    improvement, interval low, interval high), from each evaluation's per-kernel timing."""
    history: dict[str, list[tuple[str, float, float, float]]] = {}
    for r in sorted(runs, key=lambda r: r.id):
        for kernel, imp in r.per_kernel.items():
            values = [number(_dict(imp).get(k)) for k in ("improvement", "ci_low", "ci_high")]
            if all(v is not None for v in values):
                history.setdefault(kernel, []).append((r.created or r.id, *values))
    return history
