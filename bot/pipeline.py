"""One Optimas run as the App's GPU job and the Action make it: runner.flows.optimize on a program's
config, and what to publish of its result (bot/outcome.py)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from bot.outcome import ProgramOutcome, loop_outcome, recorded_outcome
from runner.base.config import LoadedConfig
from runner.toolchain.compat_record import CompatRecord

if TYPE_CHECKING:
    from runner.flows.optimize import Optimization


def pipeline(lc: LoadedConfig, runs: Path, diagnostics: str | None = None,
             corpus: Path | None = None) -> tuple[Optimization, ProgramOutcome]:
    """One Optimas run (runner.flows.optimize: recorded profiles in the config, else the closed loop
    on this GPU): its result, and what to publish of it. `corpus`: where its corpus records go."""
    from runner.analysis.stage import profile_inputs
    from runner.flows.optimize import optimize

    result = optimize(lc, runs, profile_inputs(lc), diagnostics, corpus=corpus)
    outcome = (loop_outcome if result.loop is not None else recorded_outcome)(result, lc, lc.path.parent)
    compat = tuple(filter(None, map(CompatRecord.from_json, result.run.manifest.get("compat_headers", []))))
    return result, replace(outcome, compat=compat)
