"""Where the counter runs for eOMP come from, and whether a size sweep really varied the work.

eOMP ranks counters by how well they explain runtime across N runs of one kernel, so the runs must
differ in what the kernel does. In order of preference:

1. **sizes**: the profiled command takes `{scale}` (or `{n*scale}`), or the program is rebuilt
   with its size constants (`app.size_constants`) scaled, one run per `profiling.counter_scales`;
   kept only when the kernel's instructions executed change with the scale (checked on the GPU
   after the first two runs: a scaled argument that is an iteration count or a seed does not
   change one launch's work);
2. **launch configurations**: the traced run launched the kernel (or its template) with several
   distinct grids, blocks or dynamic shared memory sizes: one profiler run collects one launch of
   each (`--filter-mode per-launch-config`);
3. **code versions**: in the closed loop, each iteration's re-profile of the kernel is one more run;
4. **one run**: nothing varies, eOMP is skipped and the prompt says why.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, Field

from runner.profiles.model import WORK_METRICS, Profile
from runner.scan.cuda_source import template_symbol_prefix
from runner.tracing.trace import KernelLaunch, Launches

CounterSource = Literal["sizes", "launch configurations", "code versions", "one run"]
# More distinct launch configurations than this are not all profiled (one replay set each).
MAX_LAUNCH_CONFIGURATIONS = 32
# The instruction count must change by more than this between two scales to call it a size.
WORK_CHANGE = 0.01
PLAN_FILE = "counter_plan.json"


class CounterPlan(BaseModel):
    """How the counter runs of one profile were made (profile/counters/counter_plan.json)."""

    source: CounterSource
    kernel: str  # the kernel they profile (its tracer or ncu name)
    runs: int = 0  # launches of it the counter reports hold
    scales: list[float] = Field(default_factory=list)  # sizes: the scales that ran
    constants: list[str] = Field(default_factory=list)  # sizes: the size constants rebuilt at each scale
    why: str = ""  # one line: where the runs come from, or why there is only one

    def describe(self) -> str:
        """One line for the evidence: what the N runs are."""
        if self.source == "sizes":
            rebuilt = f" of {', '.join(self.constants)} (the program rebuilt at each)" if self.constants else ""
            return f"problem scales {', '.join(f'{s:g}' for s in self.scales)}{rebuilt}"
        if self.source == "launch configurations":
            return "launches with different launch configurations in one run of the program"
        if self.source == "code versions":
            return "profiles of the closed loop's successive code versions of the kernel"
        return self.why


def read_plan(path: Path) -> CounterPlan:
    """A counter_plan.json as the profiling agent writes it."""
    return CounterPlan.model_validate_json(path.read_text(encoding="utf-8"))


def launch_configuration(launch: KernelLaunch) -> tuple:
    """What `--filter-mode per-launch-config` tells apart: grid, block and dynamic shared memory."""
    return launch.grid, launch.block, launch.dynamic_shared


def distinct_configurations(launches: Launches | Sequence[KernelLaunch], kernel: str, mangled: str = "") -> int:
    """How many distinct launch configurations (launch_configuration) the traced run gave `kernel`
    (or, when its mangled name is that of a template instance, any instance of the template)."""
    table = launches if isinstance(launches, Launches) else Launches.of(launches)
    family = template_symbol_prefix(mangled) if mangled else None
    chosen = [i for i, (name, symbol) in enumerate(table.names)
              if name == kernel or (family and symbol.startswith(family))]
    same = np.isin(table.kernel_ids, chosen)
    shapes = np.column_stack([table.grid[same], table.block[same], table.columns["dynamic_shared"][same]])
    return len(pd.DataFrame(shapes).drop_duplicates())  # hashing: a kernel may have millions of launches


def work_of(profile: Profile) -> float | None:
    """The instructions executed by the first launch a counter report holds (None if not collected)."""
    for w in WORK_METRICS:
        if w in profile.metrics.columns and len(profile.metrics):
            v = pd.to_numeric(profile.metrics[w], errors="coerce").dropna()
            if len(v):
                return float(v.iloc[0])
    return None


def work_changes(a: float | None, b: float | None) -> bool:
    """Whether two runs' instruction counts differ by more than WORK_CHANGE (relative)."""
    if a is None or b is None:
        return False
    return abs(a - b) > WORK_CHANGE * max(abs(a), abs(b), 1.0)
