"""Stages wired together over a run directory (the CLI, the RQ job and the Action all call these)."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from runner.analysis.counters import load_metric_dictionary
from runner.analysis.evidence import Diagnostics, diagnose, render_markdown
from runner.config import LoadedConfig
from runner.profile import Profile, merge
from runner.readers import read_any, read_profiles
from runner.runstore import Run, atomic_write_text

Progress = Callable[[str], None]


def _size(p: Path) -> str:
    n = p.stat().st_size
    return f"{n / 1e6:.1f} MB" if n >= 1e5 else f"{n / 1e3:.1f} KB"


def analyze_into_run(run: Run, lc: LoadedConfig, inputs: dict[str, list[Path]],
                     progress: Progress = lambda _m: None) -> tuple[Diagnostics, Path, Path]:
    """Read the profiles, run the Analysis Agent, write analysis/diagnostics.{json,md}."""
    cfg = lc.config.analysis
    atomic_write_text(run.path / "config.yml", lc.path.read_text(encoding="utf-8"))
    run.manifest["config"] = {"path": str(lc.path), "sha256": lc.sha256}
    for role, paths in inputs.items():
        if paths:
            run.add_inputs(paths, role)
    for role in ("report", "raw", "details", "source"):
        for p in inputs[role]:
            progress(f"reading {role} {p} ({_size(p)})")
    profile = read_profiles(reports=inputs["report"], raw=inputs["raw"], details=inputs["details"],
                            source=inputs["source"], library_paths=cfg.library_paths)
    apply_source_map(profile, lc.config.app.source_map)
    counter_runs = None
    if inputs["counters"]:
        progress(f"reading {len(inputs['counters'])} counter-run export(s)")
        counter_runs = merge([read_any(p, cfg.library_paths) for p in inputs["counters"]])
    dictionary = load_metric_dictionary(lc.resolve(cfg.counters.metric_dictionary)
                                        if cfg.counters.metric_dictionary else None)
    progress(f"analysing {len(profile.launches)} launches of {len(profile.kernels())} kernels")
    diag = diagnose(profile, cfg, counter_runs, dictionary)
    run.manifest["device"] = {"name": diag.gpu.name, "compute_capability": diag.gpu.compute_capability}
    json_path = run.write_text("analysis", "diagnostics.json", diag.model_dump_json(indent=2) + "\n")
    md_path = run.write_text("analysis", "diagnostics.md", render_markdown(diag))
    run.stage_done("analysis", [json_path, md_path], evidence=len(diag.evidence),
                   hot_kernels=[k.kernel for k in diag.hot_kernels])
    return diag, md_path, json_path


def apply_source_map(profile: Profile, source_map: dict[str, str]) -> None:
    """Rename source files recorded on the profiling machine to the paths given in the config."""
    if not source_map or profile.lines.empty:
        return
    for col in ("file", "caller_file"):
        profile.lines[col] = profile.lines[col].map(lambda f: source_map.get(f, f) if isinstance(f, str) else f)
