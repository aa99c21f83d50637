"""The evaluated run shipped with the package (runner/data/demo/evaluated): a run recorded on a GPU
from profile to verdict, which a machine without one can read. `optimas demo` prints what it
proved (verdict, gain with its interval, validation, EAR) and copies it into the runs folder, where
`optimas dashboard` opens on it."""

from __future__ import annotations

import json
import shutil
from importlib import resources
from pathlib import Path

from runner.base.errors import OptimasError
from runner.base.runstore import RUN_ID
from runner.evaluation.ear import ear_line
from runner.evaluation.stage import EvaluationResult

# What its manifest cannot say of the shipped run, said wherever it is shown: its answer was not a model's.
PROVENANCE = "reduction of NVIDIA's cuda-samples; its answer was written by hand and replayed in place of a model's"


def shipped_run() -> Path:
    """The shipped evaluated run's folder (OptimasError where the installation lacks it)."""
    folder = Path(str(resources.files("runner").joinpath("data/demo/evaluated")))
    runs = sorted(p for p in folder.iterdir() if p.is_dir() and RUN_ID.fullmatch(p.name)) if folder.is_dir() else []
    if not runs:
        raise OptimasError(f"{folder}: the evaluated demo run is missing from this installation; reinstall optimas")
    return runs[-1]


def evaluated_summary(run: Path) -> str:
    """What an evaluated run proved, in a few lines: verdict, gain with its interval, validation, EAR."""
    try:
        result = EvaluationResult.model_validate(json.loads((run / "evaluation" / "result.json").read_text()))
        manifest = json.loads((run / "manifest.json").read_text())
        device, created = manifest.get("device", {}).get("name", "a GPU"), str(manifest.get("created", ""))
    except (OSError, ValueError) as e:
        raise OptimasError(f"{run}: not an evaluated run ({e})") from None
    lines = [f"recorded on {device} on {created[:10]}", f"verdict: {result.verdict}"]
    if result.timing is not None:
        r = result.timing.result
        lines.append(f"gain: {r.improvement:+.1%} ({r.confidence:.0%} interval {r.ci_low:+.1%} to {r.ci_high:+.1%}; "
                     f"{result.timing.metric}, {r.samples} interleaved runs each, on {device})")
    if result.validation is not None:
        lines.append(f"validation: {result.validation.summary()}")
    if result.ear is not None:
        lines.append(ear_line(result.ear))
    return "\n".join(lines)


def show_evaluated(runs_dir: Path) -> str:
    """Copy the shipped run into `runs_dir` (once) and say what it proved and where to look."""
    run = shipped_run()
    target = runs_dir / run.name
    if not target.exists():
        runs_dir.mkdir(parents=True, exist_ok=True)
        shutil.copytree(run, target)
    shown = "\n".join(f"  {line}" for line in evaluated_summary(target).splitlines())
    return (f"An evaluated run, {PROVENANCE}:\n{shown}"
            + f"\n  its files: {target}\n  see it with the evidence, the diff and each score explained: "
              f"optimas dashboard --runs-dir {runs_dir}")
