"""Ablation over diagnostic configurations, like the paper's Table 2: for one app and one backend,
propose (and, where the app can run here, evaluate) with each of the seven diagnostic
configurations and a code-only baseline, then tabulate (Markdown, CSV) and plot (SVG)."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel

from runner.analysis.evidence import Diagnostics
from runner.analysis.stage import write_analysis
from runner.base.config import DIAGNOSTICS, LoadedConfig
from runner.base.context import RunContext
from runner.base.progress import progress_for
from runner.base.runstore import atomic_write_text, create_run
from runner.proposal.prompt import DIAGNOSTIC_KINDS
from runner.proposal.stage import propose

progress = progress_for("flows")

class AblationRow(BaseModel):
    diagnostics: str
    run_id: str
    candidate: str  # accepted / failed
    compiled: bool | None
    verdict: str | None = None  # evaluation verdict, when the app could run here
    improvement: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    coverage: float | None = None
    localization: float | None = None
    hallucinations: int | None = None
    correct: bool | None = None
    applied: int = 0
    withheld: int = 0
    attempts: int = 0


def ablate(lc: LoadedConfig, diag: Diagnostics, runs_dir: Path, evaluate_here: bool,
           configurations: Sequence[str] = DIAGNOSTICS) -> tuple[list[AblationRow], Path]:
    """One run per diagnostic configuration; returns the rows and the folder with the table and plot."""
    from runner.base.workspace import read_sources
    from runner.evaluation.ear import scores
    from runner.evaluation.stage import evaluate

    unknown = [c for c in configurations if c not in DIAGNOSTIC_KINDS]
    if unknown:
        raise ValueError(f"unknown diagnostic configurations {unknown}")
    rows = []
    _, workdir = lc.dirs
    files = read_sources(workdir, lc.config.app.sources)
    for kinds in configurations:
        run = create_run(runs_dir)
        write_analysis(run, lc, {}, diag)  # the same evidence in each configuration's run
        progress(f"{kinds}: run {run.id}")
        ctx = RunContext(lc, run, diagnostics=kinds)
        result = propose(ctx, diag)
        row = AblationRow(diagnostics=kinds, run_id=run.id, candidate=result.status, compiled=result.compiled,
                          attempts=len(result.attempts))
        if result.status == "accepted" and result.proposal:
            ear = scores(result.proposal, diag, result.evidence_ids, files)
            row.coverage, row.localization = ear.coverage, ear.localization
            row.hallucinations, row.applied, row.withheld = ear.hallucinations.count, ear.applied, ear.withheld
            if evaluate_here:
                ev = evaluate(ctx, diag, result)
                row.verdict, row.correct = ev.verdict, ev.ear.correct if ev.ear else None
                if ev.timing:
                    r = ev.timing.result
                    row.improvement, row.ci_low, row.ci_high = r.improvement, r.ci_low, r.ci_high
        rows.append(row)
    out = runs_dir / f"ablation-{rows[0].run_id}"
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "ablation.md", to_markdown(lc.config.app.name, lc.config.llm.backend, rows))
    atomic_write_text(out / "ablation.csv", to_csv(rows))
    atomic_write_text(out / "ablation.svg", to_svg(rows))
    atomic_write_text(out / "ablation.json", json.dumps([r.model_dump() for r in rows], indent=2) + "\n")
    return rows, out


def _pct(x: float | None) -> str:
    return "" if x is None else f"{x:+.1%}"


def _num(x: float | None) -> str:
    return "" if x is None else f"{x:.2f}"


def to_markdown(app: str, backend: str, rows: list[AblationRow]) -> str:
    lines = [f"# Ablation of diagnostic configurations: {app}, backend {backend}", "",
             "| diagnostics | candidate | compiled | verdict | improvement | 95% CI | coverage | localization | "
             "hallucinations | applied | withheld | attempts |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        ci = f"{_pct(r.ci_low)} to {_pct(r.ci_high)}" if r.ci_low is not None else ""
        lines.append(f"| {r.diagnostics} | {r.candidate} | {'' if r.compiled is None else r.compiled} | "
                     f"{r.verdict or ''} | {_pct(r.improvement)} | {ci} | {_num(r.coverage)} | "
                     f"{_num(r.localization)} | {'' if r.hallucinations is None else r.hallucinations} | "
                     f"{r.applied} | {r.withheld} | {r.attempts} |")
    return "\n".join(lines) + "\n"


def to_csv(rows: list[AblationRow]) -> str:
    buf = io.StringIO()
    fields = list(AblationRow.model_fields)
    w = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow(r.model_dump())
    return buf.getvalue()


def to_svg(rows: list[AblationRow]) -> str:
    """Bars of the improvement per configuration (or of evidence coverage when nothing was timed)."""
    timed = any(r.improvement is not None for r in rows)
    values = [(r.improvement if timed else r.coverage) or 0.0 for r in rows]
    label = "median improvement" if timed else "evidence coverage"
    w, h, left, top, bar = 760, 320, 60, 30, 60
    scale = max(0.05, max(abs(v) for v in values)) if values else 1.0
    zero = top + (h - top - 70) / 2 if timed else h - 70
    span = (h - top - 70) / 2 if timed else h - top - 70
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" '
             f'font-size="11">', f'<text x="{left}" y="18" font-size="13">{label} by diagnostic configuration</text>',
             f'<line x1="{left}" y1="{zero}" x2="{w - 10}" y2="{zero}" stroke="#444"/>']
    for i, (r, v) in enumerate(zip(rows, values, strict=True)):
        x = left + 10 + i * (bar + 25)
        height = abs(v) / scale * span
        y = zero - height if v >= 0 else zero
        color = "#3a7" if v >= 0 else "#c44"
        parts.append(f'<rect x="{x}" y="{y:.1f}" width="{bar}" height="{height:.1f}" fill="{color}"/>')
        text = f"{v:+.1%}" if timed else f"{v:.2f}"
        parts.append(f'<text x="{x}" y="{(y - 4) if v >= 0 else (y + height + 12):.1f}">{text}</text>')
        parts.append(f'<text x="{x}" y="{h - 40}" transform="rotate(30 {x} {h - 40})">{r.diagnostics}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"
