"""Run folders as the dashboard reads them: a summary per run for the list, the details of one run
for its page. Only a run's small files are read (manifest, results, evidence, prompt, answer)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from runner.profiles.model import short_kernel_name

RUN_ID = re.compile(r"^\d{8}T\d{6}Z-[0-9a-f-]{36}$")
ABLATION = re.compile(r"^ablation-\d{8}T\d{6}Z-[0-9a-f-]{36}$")


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


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def run_folder(runs_dir: Path, run_id: str) -> Path | None:
    """The folder of a run named by its id, or None: only a direct child of the runs folder whose
    name is a run id, so that no other path is ever read."""
    if not RUN_ID.match(run_id):
        return None
    folder = runs_dir / run_id
    return folder if (folder / "manifest.json").is_file() else None


def summary(folder: Path) -> RunSummary:
    """A run's row, from its manifest, its candidates' result and its evaluation result."""
    m = _json(folder / "manifest.json") or {}
    stages = m.get("stages") or {}
    s = RunSummary(id=folder.name, created=str(m.get("created", ""))[:19].replace("T", " "),
                   app=(m.get("config") or {}).get("app") or _app_name(folder),
                   gpu=(m.get("device") or {}).get("name", ""),
                   status=next((k for k in ("evaluation", "candidates", "analysis", "profile") if k in stages), ""))
    cand = _json(folder / "candidates" / "result.json") or {}
    _proposal(s, folder, cand)
    ev = _json(folder / "evaluation" / "result.json")
    if ev:
        _evaluation(s, ev)
    elif cand.get("status") == "accepted":
        # proposed where no GPU was (the demo, a laptop): it has no verdict yet
        s.verdict = "not evaluated"
        config = (m.get("config") or {}).get("path") or "<its config>"
        s.evaluate_with = f"optimas evaluate --config {config} --run {folder}"
    elif cand:
        s.verdict = cand.get("status", "")
    return s


def _proposal(s: RunSummary, folder: Path, cand: dict) -> None:
    """The model and diagnostics of the run's proposal, or of the prompt `optimas prompt` wrote."""
    attempts = cand.get("attempts") or []
    if attempts:
        s.model = f"{attempts[-1].get('backend', '')}: {attempts[-1].get('model', '')}"
    prompted = _json(folder / "prompt" / "prompt.json") or {}  # written by `optimas prompt`
    s.diagnostics = cand.get("diagnostics", "") or prompted.get("diagnostics", "")
    if s.status in ("", "analysis") and not cand and (folder / "prompt" / "user.md").is_file():
        s.status = "prompt"


def _evaluation(s: RunSummary, ev: dict) -> None:
    """The verdict, the gain with its interval, each hot kernel's, and the EAR scores."""
    s.verdict = ev.get("verdict", "")
    timing = ev.get("timing") or {}
    r = timing.get("result") or {}
    s.improvement, s.ci_low, s.ci_high = r.get("improvement"), r.get("ci_low"), r.get("ci_high")
    s.per_kernel = timing.get("per_kernel") or {}
    s.ear = {k: v for k, v in (ev.get("ear") or {}).items()
             if k in ("coverage", "localization", "directional", "hallucination_rate", "correct")}


# `name:` under `app:` (lines of the section, blank lines and comments between)
_APP_NAME = re.compile(r"^app:[ \t]*\n(?:[ \t]+.*\n|[ \t]*\n|#.*\n)*?"
                       r"[ \t]+name:[ \t]*[\"']?([^\"'#\n]+?)[\"']?[ \t]*(?:#.*)?$", re.M)


def _app_name(folder: Path) -> str:
    """`app.name` of the config the run copied (config.yml), without parsing the whole YAML: runs
    written before manifests recorded the app's name."""
    m = _APP_NAME.search(_text(folder / "config.yml", limit=20_000))
    return m.group(1).strip() if m else ""


def list_runs(runs_dir: Path) -> list[RunSummary]:
    """Every run under `runs_dir`, newest first."""
    if not runs_dir.is_dir():
        return []
    folders = [p for p in runs_dir.iterdir() if RUN_ID.match(p.name) and (p / "manifest.json").is_file()]
    return [summary(p) for p in sorted(folders, key=lambda p: p.name, reverse=True)]


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


_BLOCK = re.compile(r"^### (Hot kernel [^\n]*?) \(([^,\n]+), lines (\d+)-(\d+)\)\n```cuda\n(.*?)\n```", re.M | re.S)


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
    for m in _BLOCK.finditer(prompt):
        title, file = m.group(1), m.group(2)
        lines = []
        for row in m.group(5).splitlines():
            number, _, text = row.partition("| ")
            if number.strip().isdigit():
                no = int(number)
                lines.append({"no": no, "text": text, **stalls.get((Path(file).name, no), {})})
        blocks.append({"title": title, "file": file, "lines": lines})
    return blocks


def detail(folder: Path) -> RunDetail:
    """The run page's content."""
    d = RunDetail(summary=summary(folder))
    diag = _json(folder / "analysis" / "diagnostics.json") or {}
    d.evidence = [{"id": e["id"], "kind": e["kind"], "text": e.get("text", ""),
                   "kernel": short_kernel_name(e.get("kernel") or "")} for e in diag.get("evidence", [])]
    d.hot_kernels = [k for k in diag.get("kernels", []) if k.get("hot")]
    d.rooflines = rooflines(folder, diag)
    # the proposal stage's first prompt; `optimas prompt` writes the one prompt as user.md
    d.prompt = _text(folder / "prompt" / "user-1.md") or _text(folder / "prompt" / "user.md")
    d.hot_spots = hot_spots(d.prompt, diag.get("evidence", []))
    # compiler feedback (K*) is measured at prompt time: the prompt holds it
    section = d.prompt.split("## Compiler feedback (K)", 1)[1].split("\n## ", 1)[0] if "## Compiler feedback (K)" \
        in d.prompt else ""
    for m in re.finditer(r"^- (K\d+) (.*)$", section, re.M):
        kernel, text = re.match(r"(?:\[([^\]]*)\] )?(.*)", m.group(2)).groups()
        d.evidence.append({"id": m.group(1), "kind": "compiler", "text": text, "kernel": kernel or ""})
    d.answer = _text(folder / "llm" / "answer-1.txt")
    d.diff = _text(folder / "candidates" / "1" / "diff.patch")
    ev = _json(folder / "evaluation" / "result.json") or {}
    d.validation = (ev.get("validation") or {}).get("cases", [])
    d.timing = ev.get("timing") or {}
    d.checks = (ev.get("ear") or {}).get("checks", [])
    loop = _json(folder / "evaluation" / "loop.json") or {}
    d.iterations = loop.get("iterations", [])
    d.loop = {k: loop.get(k) for k in ("best", "cumulative_improvement", "stopped_because")} if loop else {}
    d.candidates = [{**c, "run_id": Path(c.get("run_dir", "")).name}
                    for c in _json(folder / "evaluation" / "candidates.json") or [] if isinstance(c, dict)]
    return d


def rooflines(folder: Path, diag: dict | None = None) -> list[dict]:
    """Each hot kernel's roofline: before (the run's evidence) and after (the re-profile of its
    candidate, the run's first iteration folder, where there is one)."""
    if diag is None:
        diag = _json(folder / "analysis" / "diagnostics.json") or {}
    reprofile = next(iter(sorted(folder.glob("iterations/*/analysis/diagnostics.json"))), None)
    after = {e["kernel"]: e["roofline"] for e in ((_json(reprofile) or {}) if reprofile else {}).get("evidence", [])
             if e.get("roofline")}
    return [{"kernel": e["kernel"], "before": e["roofline"], "after": after.get(e["kernel"])}
            for e in diag.get("evidence", []) if e.get("roofline")]


def evaluation_timing(folder: Path) -> dict:
    """The evaluation's timing (samples of baseline and candidate, the interval), or {}."""
    return (_json(folder / "evaluation" / "result.json") or {}).get("timing") or {}


def _text(path: Path, limit: int = 200_000) -> str:
    try:
        return path.read_text(errors="replace")[:limit]
    except OSError:
        return ""


def ablations(runs_dir: Path, run_ids: set[str]) -> list[dict]:
    """The ablations (`optimas ablate`: every diagnostic configuration side by side) whose runs are
    among `run_ids`, newest first: folder name and rows."""
    out = []
    if not runs_dir.is_dir():
        return out
    for folder in sorted((p for p in runs_dir.iterdir() if ABLATION.match(p.name)), key=lambda p: p.name,
                         reverse=True):
        rows = _json(folder / "ablation.json") or []
        if rows and any(r.get("run_id") in run_ids for r in rows):
            out.append({"name": folder.name, "rows": rows, "svg": (folder / "ablation.svg").is_file()})
    return out


def ablation_svg(runs_dir: Path, name: str) -> str | None:
    """An ablation's plot, by its folder's name (only such folders, directly under the runs folder)."""
    if not ABLATION.match(name):
        return None
    return _text(runs_dir / name / "ablation.svg") or None


def kernel_history(runs: list[RunSummary]) -> dict[str, list[tuple[str, float, float, float]]]:
    """Per hot kernel, the measured improvement of each evaluated run (oldest first): (created,
    improvement, interval low, interval high), from each evaluation's per-kernel timing."""
    history: dict[str, list[tuple[str, float, float, float]]] = {}
    for r in sorted(runs, key=lambda r: r.id):
        for kernel, imp in r.per_kernel.items():
            if imp.get("improvement") is not None:
                history.setdefault(kernel, []).append((r.created or r.id, imp["improvement"], imp["ci_low"],
                                                       imp["ci_high"]))
    return history
