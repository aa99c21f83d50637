"""The context of one run: what every stage of it needs besides the typed result it is handed
(the evidence, a proposal). `flows/optimize.py` builds it once per run; the closed loop derives
one per iteration (a new workspace and run folder) and one per candidate (a run of its own)."""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from runner.base.config import LoadedConfig
from runner.base.gpu import target_arch
from runner.base.runstore import Run
from runner.base.workspace import read_context


@dataclass(frozen=True)
class RunContext:
    """One run's settings and folder.

    lc: the loaded configuration; its `app.workdir` is the code this context works on (the user's,
        or a copy holding an earlier iteration's candidate).
    run: the run folder the stages write to.
    diagnostics: the diagnostic configuration of the prompt (None: evaluation.diagnostics).
    configuration: the app configuration profiled (None: app.profile_configuration).
    iteration: the closed loop's iteration this run belongs to (1 outside the loop).
    corpus: the corpus file evaluations append to (None: corpus.jsonl beside the run folder).
    sources: the code's source texts (read_context's names) as read before any of its commands ran,
        which the proposal and the evaluation's baseline use rather than reading app.workdir again:
        the program and its build run with that folder writable and could rewrite what a candidate
        is made from, so that text the model never wrote would be published as its edit (an
        attacker's pass). None: read from app.workdir.
    target: the architecture builds are for, where the flow resolved it already (`on` carries it);
        None: `arch` resolves it at its first use.

    The facts derived from these, once per context: `arch` (the target architecture), `code` (the
    sources, `sources` where given) and `build_cache`; the workspace is the config's (`lc.dirs`).
    """

    lc: LoadedConfig
    run: Run
    diagnostics: str | None = None
    configuration: str | None = None
    iteration: int = 1
    corpus: Path | None = None
    sources: dict[str, str] | None = None
    target: str | None = None

    @cached_property
    def arch(self) -> str:
        """The architecture every build of this run is for: `target`, else the local GPU's
        (target_arch: nvidia-smi, once), else DEFAULT_ARCH."""
        return self.target or target_arch(self.lc.config.profiling.nvidia_smi)

    @cached_property
    def code(self) -> dict[str, str]:
        """The code's source texts by name relative to app.workdir (read_context's: the sources, the
        local headers they include, the files launching their kernels): `sources` where given, else
        read from app.workdir at the first use. Shared: a caller that changes it works on a copy."""
        return self.sources if self.sources is not None else read_context(*self.lc.dirs, self.lc.config.app.sources)

    @property
    def build_cache(self) -> Path:
        """The build cache every build of this run goes through: OPTIMAS_BUILD_CACHE where set (the
        tests share one across runs), else the run folder's (Run.build_cache)."""
        where = os.environ.get("OPTIMAS_BUILD_CACHE")
        return Path(where) if where else self.run.build_cache

    @property
    def corpus_file(self) -> Path:
        """Where this run's corpus records go: the loop's top-level file, else beside the run."""
        return self.corpus or self.run.path.parent / "corpus.jsonl"

    def on(self, run: Run, lc: LoadedConfig | None = None, iteration: int | None = None,
           sources: dict[str, str] | None = None) -> RunContext:
        """The same run settings on another run folder (a later candidate's, the next iteration's),
        with the configuration, the iteration number and the sources given where they change (a new
        configuration without sources reads its own). The corpus stays."""
        kept = self.sources if lc is None else None
        resolved = self.__dict__.get("arch", self.target)  # the architecture, where resolved already
        return dataclasses.replace(self, run=run, lc=lc or self.lc, target=resolved,
                                   iteration=self.iteration if iteration is None else iteration,
                                   corpus=self.corpus_file, sources=sources if sources is not None else kept)
