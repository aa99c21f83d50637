"""Configuration: one YAML file for every knob, validated against a schema.

Relative paths in the file are resolved against the file's own folder, so a config works from any
working directory. Validation errors name the file, the key path and what was expected.
"""

from __future__ import annotations

import hashlib
import logging
import re
import reprlib
from functools import cached_property
from pathlib import Path
from typing import Annotated, Literal

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    Strict,
    ValidationError,
    field_validator,
    model_validator,
)

from runner.base.backends import BACKENDS
from runner.base.errors import ConfigError
from runner.base.evidence_kinds import DIAGNOSTICS
from runner.base.processes import placeholders, product_placeholder
from runner.base.validation_modes import AUTO, FileMode, ValidationMode

DEFAULT_ARCH = "sm_90"  # the target this project measures on, where no GPU can be asked
# The diagnostic configurations of the paper, in the ablation's order ("none": code only).
Diagnostic = Literal[DIAGNOSTICS]  # type: ignore[valid-type]
Backend = Literal[BACKENDS]  # type: ignore[valid-type]
# The kinds of recorded profile input, as the config's `profiles` section and the CLI name them.
PROFILE_ROLES = ("report", "timing", "raw", "details", "source", "counters")

Fraction = Annotated[float, Field(gt=0.0, le=1.0)]
Share = Annotated[float, Field(ge=0.0, le=1.0)]

log = logging.getLogger(__name__)


# Where the GitHub App (on the default branch) and the Action (at the pull request's head) read a
# repository's config: at its root.
REPOSITORY_CONFIG = ".optimas.yml"

class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class OutputSpec(_Strict):
    """One output file of the application and how candidates' outputs are compared to it."""

    path: str = Field(description="file the run command writes; may use {out}")
    compare: FileMode = Field(default=ValidationMode.BITWISE, description="bitwise, or within the tolerances below")
    # Tolerance mode, for outputs declared as floating-point reductions: a value passes when
    # |candidate - baseline| <= atol + rtol * |baseline|, or when it is within `ulps` units in the
    # last place. `format` says how to read values: 'optimas' (the benchmarks' sectioned files,
    # each section typed) or 'raw' (the whole file is an array of `dtype`).
    rtol: Annotated[float, Field(ge=0)] = Field(default=0.0, description="relative tolerance")
    atol: Annotated[float, Field(ge=0)] = Field(default=0.0, description="absolute tolerance")
    ulps: Annotated[int, Field(ge=0)] = Field(default=0, description="or within this many units in the last place")
    format: Literal["optimas", "raw"] = Field(default="raw", description="raw: the file is an array of dtype; "
                                              "optimas: the benchmarks' sectioned files")
    dtype: Literal["float32", "float64"] = Field(default="float32", description="element type of a raw file")


class GpuResultsSpec(_Strict):
    """How the program's device-to-host results (every copy into host memory and the final contents
    of managed memory, in program order, as the CUPTI tracer sees them) validate a candidate."""

    # auto: compared bit for bit when the app declares no output files, not compared otherwise.
    compare: Literal["auto"] | Annotated[ValidationMode, Strict(False)] = AUTO
    # Tolerance mode reads each result as an array of `dtype` and applies OutputSpec's rule.
    rtol: Annotated[float, Field(ge=0)] = Field(default=0.0, description="tolerance mode: relative tolerance")
    atol: Annotated[float, Field(ge=0)] = Field(default=0.0, description="tolerance mode: absolute tolerance")
    ulps: Annotated[int, Field(ge=0)] = Field(default=0, description="tolerance mode: or within this many units "
                                              "in the last place")
    dtype: Literal["float32", "float64"] = Field(default="float32", description="tolerance mode: how a result's "
                                                 "bytes are read")
    keep_bytes: Annotated[int, Field(ge=0)] = Field(
        default=256 << 20, description="bytes of results kept per process for tolerance mode (beyond: mismatch)")
    # Programs whose own results vary run to run (floating-point atomics, reductions in no fixed
    # order) cannot be judged bit for bit: no candidate can repeat bits the original does not.
    original_varies: Literal["rounding", "fail"] = Field(
        default="rounding", description="bitwise mode, when the original's own GPU results differ between two runs "
        "by rounding only: rounding (judge the candidate within 1024 ulps of them, said so in the verdict) | fail "
        "(the case fails with advice)")

    @field_validator("compare", mode="before")
    @classmethod
    def _off_unquoted(cls, value: object) -> object:
        """`compare: off` as written, unquoted, which YAML reads as false."""
        return ValidationMode.OFF if value is False else value


class StdoutSpec(_Strict):
    """Checks of what the program prints (stdout and stderr together), for programs that check
    themselves and print the verdict or a checksum rather than write a file."""

    pass_pattern: str | None = Field(default=None, description="regex the output must match, e.g. 'Test passed'")
    fail_pattern: str | None = Field(default=None, description="regex the output must not match, e.g. "
                                     "'FAIL|[Mm]ismatch|[Ee]rror'")
    values: str | None = Field(default=None, description="regex with one group: the numbers it captures, in order, "
                               "must equal the baseline's within rtol/atol (checksums, residuals)")
    rtol: Annotated[float, Field(ge=0)] = Field(default=0.0, description="relative tolerance of `values`")
    atol: Annotated[float, Field(ge=0)] = Field(default=0.0, description="absolute tolerance of `values`")

    def configured(self) -> bool:
        return any((self.pass_pattern, self.fail_pattern, self.values))


def _inside_path(value: str) -> str:
    """A path that stays inside the folder it is relative to: not empty, not absolute, no `..`."""
    parts = value.replace("\\", "/").split("/")
    if not value.strip() or value.startswith(("/", "~")) or ".." in parts:
        raise ValueError(f"{value!r}: expected a path relative to app.workspace, inside it (no leading /, ~ or ..)")
    return value


class AppConfig(_Strict):
    """The application under optimization.

    Command templates are split like a shell would split them (no shell runs them) and these
    placeholders are filled per run (`run` is validated, `time_run` timed and `profile_run`
    profiled; both default to `run`): {exe} the binary being built or run, {arch} the GPU's
    architecture (sm_90), {lineinfo} '-lineinfo' in profiling builds and nothing otherwise,
    {config} a configuration name, {seed}, {scale} the problem-size factor, {out} an output path.
    """

    name: str = Field(default="app", description="the app's name in runs, prompts and reports")
    workdir: str = Field(default=".", description="folder the commands run in, relative to the config")
    workspace: str | None = Field(default=None, description="folder copied to build a candidate (it must hold "
                                  "everything the build reads, e.g. shared headers; links to files are copied as "
                                  "files, links to folders in it stay links; at most 100,000 files and folders, "
                                  "4 GiB); default: workdir")
    workspace_paths: list[Annotated[str, AfterValidator(_inside_path)]] = Field(
        default_factory=list, description="the parts of app.workspace a build reads, relative to it (a shared "
        "include folder, the folder of an included common.mk): only these and app.workdir are copied for a build, "
        "hashed for its cache and searched for size constants, so that one program of a large suite does not copy "
        "the suite; default: all of app.workspace")
    sources: list[str] = Field(default_factory=list, description="CUDA source files, relative to workdir")
    # Profiles name sources by the path they had where they were captured; map those to local files.
    source_map: dict[str, str] = Field(default_factory=dict, description="a source path as recorded profiles "
                                       "name it (where they were captured) -> the local file")
    build: str | None = Field(default=None, description="build command template ({exe} {arch} {lineinfo}); "
                              "with {config} or a configuration's values (-D{config}_DATASET, -DN={n}) one build per "
                              "configuration, each validated and timed with its own binaries")
    run: str | None = Field(default=None, description="run command template (validation runs)")
    profile_run: str | None = Field(default=None, description="run command under the profiler and the tracer's "
                                    "hot-kernel run (default: run)")
    time_run: str | None = Field(default=None, description="run command that is timed (default: run), e.g. run "
                                 "without the program's own CPU check")
    # One unnamed problem ("default") when none is named: validation and timing always have a case.
    configurations: list[str] = Field(default_factory=lambda: ["default"], min_length=1,
                                      description="named problem configurations; or a "
                                      "mapping of each name to the values of its own placeholders, "
                                      "e.g. {small: {n: 1024}, large: {n: 65536}} for a run of '{exe} {n}'")
    # Filled from the mapping form of `configurations` (may also be given directly).
    configuration_values: dict[str, dict[str, Annotated[str, Field(pattern=r"^[^{}]*$")] | int | float]] = Field(
        default_factory=dict, description="each configuration's placeholder values (filled from the mapping form "
        "of configurations)")
    profile_configuration: str | None = Field(default=None, description="the one profiled (default: first)")
    seeds: list[int] = Field(default_factory=lambda: [1])
    outputs: list[OutputSpec] = Field(default_factory=list)
    gpu_results: GpuResultsSpec = Field(default_factory=GpuResultsSpec)
    stdout: StdoutSpec = Field(default_factory=StdoutSpec)
    kernels: list[str] = Field(default_factory=list, description="restrict optimization to these kernels")
    size_constants: list[Annotated[str, Field(pattern=r"^[A-Za-z_]\w*$")]] = Field(
        default_factory=list, description="constants in the host code that set the problem size (`#define N 4096`, "
        "`const int N = 4096;`, `n = 4096;` assigned once, or a #define per dataset: each scaled), for a program "
        "whose run takes no size argument: the counter runs rebuild the program with them scaled by each of "
        "profiling.counter_scales (k constants each by the scale's k-th root; in a copy; your files are never "
        "changed)")
    editable: list[str] = Field(default_factory=list, description="functions (besides the hot kernels and "
                                "the device functions holding a salient stall line, editable by default) whose "
                                "definitions the model may edit, e.g. __device__ helpers they call; '!name' keeps "
                                "a stall-holding helper read-only")
    env: dict[Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")], str] = Field(
        default_factory=dict, description="environment variables set for the build, run and profiling commands "
        "(they get a minimal environment otherwise: PATH, locale, CUDA variables, a HOME of their own)")
    timeout_s: Annotated[float, Field(gt=0)] = 600.0
    pin_seeds: bool = Field(default=False, description="run the program with Optimas's seed library preloaded "
                            "(LD_PRELOAD): srand, srandom, srand48, std::random_device and cuRAND's host seed all get "
                            "one fixed seed (the first of app.seeds), so a program that seeds its random inputs from "
                            "the clock draws the same inputs every run and its GPU results can be compared. Clocks "
                            "are untouched; a seed computed inline (std::mt19937 g(time(0))) is not pinned. init sets "
                            "it when the sources seed from the clock")
    legacy_cuda: bool = Field(default=False, description="build code written for an older CUDA, in two ways: "
                              "pre-include Optimas's headers for what CUDA 13 removed or changed (cudaThread*, warp "
                              "shuffles and votes without a mask, prefetch and advice by device ordinal) into the "
                              "sources that use it, and compile as C++17 the sources a build asks an older C++ dialect "
                              "for (CUDA 13's headers need C++17). Both change what the program means (a mask of the "
                              "active threads, __cplusplus), so the run and the pull request say which header went "
                              "into which file and which sources were raised. Formerly app.compat_headers (still read)")
    kernel_time_regex: str | None = Field(default=None, description="regular expression with one group that "
                                          "captures a kernel time the app prints, e.g. 'kernel_ms=([0-9.]+)'; "
                                          "a group named `unit` may capture its unit (ms, us, s, ns)")
    kernel_time_unit: Literal["ms", "us", "s", "ns"] = "ms"  # of the printed times, where no `unit` group says
    # A program may print several times (per kernel, per iteration): their sum, mean, first or last.
    kernel_time_aggregate: Literal["sum", "mean", "first", "last"] = "sum"

    @model_validator(mode="before")
    @classmethod
    def _compat_headers_renamed(cls, data: object) -> object:
        # app.compat_headers was renamed app.legacy_cuda (it also raises the C++ dialect): the old name is read
        if not isinstance(data, dict) or "compat_headers" not in data:
            return data
        data = dict(data)
        old = data.pop("compat_headers")
        if "legacy_cuda" in data and data["legacy_cuda"] != old:
            raise ValueError("app.compat_headers and app.legacy_cuda disagree: compat_headers is the old name of "
                             "legacy_cuda; keep legacy_cuda alone")
        data["legacy_cuda"] = old
        log.warning("app.compat_headers is deprecated: it is now app.legacy_cuda (it also compiles as C++17 what "
                    "asks an older dialect); the old name is still read")
        return data

    @model_validator(mode="before")
    @classmethod
    def _configurations_as_mapping(cls, data: object) -> object:
        if isinstance(data, dict) and isinstance(data.get("configurations"), dict):
            data = dict(data)
            mapping = data.pop("configurations")
            data["configurations"] = list(mapping)
            data["configuration_values"] = {**{k: v if v is not None else {} for k, v in mapping.items()},
                                            **data.get("configuration_values", {})}
        return data

    def values(self, configuration: str) -> dict[str, str]:
        """The placeholder values of one configuration ({config} is its name)."""
        return {k: str(v) for k, v in self.configuration_values.get(configuration, {}).items()}

    def build_configuration(self, configuration: str | None = None) -> str | None:
        """The configuration a build is for, when app.build depends on it ({config}, or a
        configuration's own values such as {n}: programs whose sizes are compile-time macros, one
        build per configuration); None when one build serves every configuration. Without
        `configuration`, the profiled one."""
        if not self.build:
            return None
        own = {k for v in self.configuration_values.values() for k in v}
        used = {f for n in placeholders(self.build) for f in (product_placeholder(n) or (n,))}
        if not ("config" in used or used & own):
            return None
        return configuration or self.profile_configuration or (self.configurations[0] if self.configurations else None)

    def uses_seed(self) -> bool:
        """Whether any run command passes {seed}: without it every seed is the same run."""
        return any("seed" in placeholders(t) for t in (self.run, self.time_run, self.profile_run) if t)

    def gpu_results_mode(self) -> ValidationMode:
        """How GPU results are compared: gpu_results.compare, where `auto` is bitwise for an app that
        declares no output files and off otherwise."""
        if self.gpu_results.compare == AUTO:
            return ValidationMode.OFF if self.outputs else ValidationMode.BITWISE
        return ValidationMode(self.gpu_results.compare)

    def tolerances(self) -> str | None:
        """The tolerances a candidate's results are checked within, in words, when every check of
        results declares one (None when any is bit for bit, or none is declared)."""
        def rule(spec: OutputSpec | GpuResultsSpec) -> str:
            parts = [f"{name} {getattr(spec, name):g}" for name in ("rtol", "atol", "ulps") if getattr(spec, name)]
            return ", ".join(parts) or "exact"

        checks = [(o.path + (f" as {o.dtype}" if o.format == "raw" else ""), o)
                  for o in self.outputs if o.compare == ValidationMode.TOLERANCE]
        gpu = self.gpu_results_mode()
        if gpu == ValidationMode.TOLERANCE:
            checks.append((f"GPU results as {self.gpu_results.dtype}", self.gpu_results))
        compared = len(self.outputs) + (gpu != ValidationMode.OFF)
        if len(checks) < compared or all(rule(spec) == "exact" for _, spec in checks):
            return None
        return "; ".join(f"{what}: {rule(spec)}" for what, spec in checks)


class ProfilesConfig(_Strict):
    """Recorded Nsight Compute exports. When any is given, collection is skipped."""

    reports: list[str] = Field(default_factory=list, description=".ncu-rep files")
    timing: list[str] = Field(default_factory=list, description="raw exports of a timing pass over every launch "
                              "(hot kernels are chosen from these when given)")
    raw: list[str] = Field(default_factory=list, description="ncu --csv --page raw exports")
    details: list[str] = Field(default_factory=list, description="ncu --csv --page details exports")
    source: list[str] = Field(default_factory=list, description="ncu --csv --page source --print-source cuda,sass")
    counters: list[str] = Field(
        default_factory=list, description="raw exports (or .ncu-rep) of N profiling runs for counter selection"
    )

    def all_paths(self) -> list[str]:
        return [*self.reports, *self.timing, *self.raw, *self.details, *self.source, *self.counters]


class CountersConfig(_Strict):
    """eOMP sparse counter selection."""

    kappa: Annotated[int, Field(ge=1, le=64)] = 5
    tau: Annotated[int, Field(ge=1, le=1000)] = 3
    ensemble: Annotated[int, Field(ge=1, le=100_000)] = 200
    seed: int = 0
    min_runs: Annotated[int, Field(ge=3)] = 4
    exclude: list[str] = Field(
        default_factory=lambda: [
            r"^gpu__time_duration",  # the target itself
            r"cycles_elapsed",  # elapsed cycles are runtime in another unit
            r"(^|\.)(sm|smsp|tpc|gpc|l1tex|lts|dram|dramc|fbpa)__cycles_active",  # so are busy cycles
            r"^smsp__pcsamp_sample_count",  # samples are taken at a fixed interval: time again
            r"^config_",  # columns a sweep adds to name its configuration
            r"^launch__",
            r"^device__",
            r"^profiler__",
            r"\.peak_sustained",
            r"^smsp__pcsamp_(interval|buffer|dropped|aggregated)",
            r"^smsp__pcsamp_warps_issue_stalled_",  # samples per stall reason: time-proportional too
            r"^sass__",  # per-opcode instance tables; their scalar is only a rollup
        ],
        description="regular expressions of metric names never selected",
    )
    metric_dictionary: str | None = Field(
        default=None, description="`ncu --query-metrics --csv` output; default: the bundled H200 dictionary"
    )


class AnalysisConfig(_Strict):
    """Thresholds of the Analysis Agent."""

    alpha: Fraction = 0.8
    saturation: Fraction = 0.70
    stall_share: Fraction = 0.30
    min_line_share: Share = 0.02
    max_stall_lines: Annotated[int, Field(ge=1, le=100)] = 4
    max_prompt_bytes: Annotated[int, Field(ge=1000)] = 6000
    library_paths: list[str] = Field(
        default_factory=lambda: [r"/cuda[^/]*/(targets/[^/]+/)?include/", r"/cub/", r"/thrust/", r"/cuda/std/"],
        description="regular expressions of source paths that belong to libraries, not the user",
    )
    counters: CountersConfig = Field(default_factory=CountersConfig)


class ProfilingConfig(_Strict):
    """The Profiling Agent: what to collect, with which tools."""

    ncu: str = Field(default="ncu", description="the Nsight Compute CLI (a name on PATH or a path)")
    nvcc: str = Field(default="nvcc", description="the CUDA compiler")
    nvidia_smi: str = Field(default="nvidia-smi", description="lists the GPUs and their architecture")
    targeted_sections: list[str] = Field(description="ncu sections of the targeted pass over the hot kernels "
                                         "(roofline inputs, source-level PC sampling, launch statistics)",
                                         default_factory=lambda: [
        "SpeedOfLight", "SpeedOfLight_RooflineChart", "SpeedOfLight_HierarchicalSingleRooflineChart", "SourceCounters",
        "WarpStateStats", "LaunchStats", "Occupancy",
    ])
    counter_sections: list[str] = Field(description="ncu sections of the counter runs for eOMP",
                                        default_factory=lambda: [
        "SpeedOfLight", "ComputeWorkloadAnalysis", "MemoryWorkloadAnalysis", "SchedulerStats", "WarpStateStats",
        "Occupancy", "LaunchStats", "InstructionStats",
    ])
    # Where every launch's duration comes from, to choose the hot kernels: one run under the CUPTI
    # tracer, or ncu's timing pass (a replay of every launch: slow for programs with many launches).
    hot_kernels: Literal["tracer", "ncu"] = "tracer"
    launch_skip: Annotated[int, Field(ge=0)] = 0
    launch_count: Annotated[int, Field(ge=1)] = 1
    max_targeted_kernels: Annotated[int, Field(ge=1, le=100)] = Field(
        default=8, description="hot kernels the targeted pass profiles at most: the hottest instance of each "
        "source function first (a template's instantiations are one function to edit), then the next hottest of "
        "each; the others stay hot with their share of time, and the evidence says which were profiled (ncu "
        "replays each profiled kernel 20 or more times, and a report of many is slow to write and to read)")
    counter_scales: list[Annotated[float, Field(gt=0)]] = Field(
        default_factory=lambda: [0.25, 0.5, 0.75, 1.0, 1.5, 2.0],
        description="problem-size factors of the N counter runs (eOMP needs N > kappa): factors "
        "of the work, so a command scaling k sizes ({n*scale}, or k size constants) multiplies each by the "
        "scale's k-th root, in sixteenths")
    stop_when_profiled: bool = Field(default=True, description="end the program once ncu has profiled the "
                                     "launches a pass asks for (ncu --kill): what the program does after them (its "
                                     "CPU check, more iterations) is not run under the profiler; the traced run and "
                                     "every validation run still run it whole")
    timeout_s: Annotated[float, Field(gt=0)] = 900.0


class LLMConfig(_Strict):
    """Model settings, read by the prompt and proposal stages. API keys come from the environment only."""

    backend: Backend = "offline"
    model: str | None = Field(default=None, description="the model's name at the backend (required for "
                              "openai, gemini and ollama)")
    base_url: str | None = Field(default=None, description="an OpenAI-compatible or Ollama server's URL")
    temperature: Annotated[float, Field(ge=0.0, le=2.0)] = Field(default=0.15, description="sampling temperature")
    max_tokens: Annotated[int, Field(ge=1)] = Field(default=8192, description="most tokens of one answer")
    timeout_s: Annotated[float, Field(gt=0)] = Field(default=300.0, description="one request's limit")
    retries: Annotated[int, Field(ge=0, le=20)] = 3
    backoff_s: Annotated[float, Field(ge=0)] = 2.0
    api_key_env: str | None = Field(default=None, description="environment variable holding the API key "
                                    "(default OPENAI_API_KEY / GEMINI_API_KEY); the key itself never goes in config")
    price_input_per_mtok: Annotated[float, Field(ge=0)] | None = None
    price_output_per_mtok: Annotated[float, Field(ge=0)] | None = Field(default=None, description="price per "
                                                                         "million output tokens, for the cost")
    replay_dir: str | None = Field(default=None, description="answers keyed by prompt hash, for the replay backend")
    max_prompt_tokens: Annotated[int, Field(ge=1000)] = 32000
    parse_retries: Annotated[int, Field(ge=0, le=10)] = 2
    candidates: Annotated[int, Field(ge=1, le=8)] = Field(
        default=1, description="answers asked for the same prompt per iteration (sampled at `temperature`), "
        "compiled in parallel, each validated and timed; the best is kept, the others recorded")


class EvaluationConfig(_Strict):
    """Settings of the evaluation stage (build, validate, time)."""

    compile_retries: Annotated[int, Field(ge=0, le=20)] = Field(default=3, description="compiler errors fed back "
                                                                "to the model, at most this many times")
    timed_runs: Annotated[int, Field(ge=2, le=1000)] = 5
    # More interleaved pairs are timed, one at a time, while the interval of the speed ratio is wider
    # than `timing_precision` (relative width), up to `max_timed_runs` each. The stop depends on the
    # interval's width only, never on where it lies, so it favours neither side; with no true change
    # it calls about 5% significant, the interval's nominal rate, against 2-4% at a fixed size
    # (simulated, and replayed on the H200's noise: benchmarks/results/tracer-2026-12-03.md).
    max_timed_runs: Annotated[int, Field(ge=2, le=1000)] = 20
    timing_precision: Annotated[float, Field(ge=0.0, lt=1.0)] = 0.04
    warmup_runs: Annotated[int, Field(ge=0, le=100)] = Field(default=1, description="untimed runs of each binary "
                                                             "before timing; validation's runs count as the first "
                                                             "when timing runs the same command (no app.time_run)")
    confidence: Annotated[float, Field(gt=0.5, lt=1.0)] = 0.95
    min_improvement: Annotated[float, Field(ge=0.0, lt=1.0)] = Field(
        default=0.01, description="the smallest median gain called an improvement: a faster candidate below "
        "it is 'no-significant-gain', too small to be worth a change (0: any gain whose interval excludes zero)")
    max_iterations: Annotated[int, Field(ge=1, le=100)] = 3
    retry_invalid: bool = Field(default=True, description="closed loop: after a candidate fails validation, ask "
                                "again (the next iteration, same baseline) with what differed and its diff")
    time_all_configurations: bool = True  # also time the configurations that were not profiled
    # EAR directional consistency: a cited quantity must move the expected way by more than this
    # share of its value before the change (smaller moves are run-to-run noise).
    direction_min_change: Annotated[float, Field(ge=0.0, lt=1.0)] = 0.02
    diagnostics: Diagnostic = "PC+IA+Roofline"
    # What times a run: `tracer` (kernel execution times from the CUPTI tracer, no help from the
    # program), `app` (the time it prints, app.kernel_time_regex), `wall` (process wall time);
    # `auto`: app when a kernel_time_regex is given, else tracer.
    timer: Literal["auto", "tracer", "app", "wall"] = "auto"


PROGRAM_NAME = r"^[A-Za-z0-9][A-Za-z0-9_.+-]{0,99}$"


class Config(_Strict):
    """The whole configuration (config.yml). A repository of several programs lists them under
    `programs`: each entry holds the `app` keys that differ for that program (its name, build, run,
    sources, ...), the rest come from `app`; a command works on one program at a time."""

    app: AppConfig = Field(default_factory=AppConfig)
    programs: list[AppConfig] = Field(default_factory=list, description="the repository's programs, each a "
                                      "mapping of the app keys that differ for it (name, workdir, build, run, "
                                      "sources, size_constants, ...): each key given replaces app's whole, the "
                                      "others are app's; empty: the one program is `app`")
    programs_per_pull_request: Annotated[int, Field(ge=1, le=20)] = Field(
        default=3, description="programs profiled for one pull request, of those whose files it changes (the "
        "most recently changed first); the others are named in the summary as skipped")
    profiles: ProfilesConfig = Field(default_factory=ProfilesConfig)
    analysis: AnalysisConfig = Field(default_factory=AnalysisConfig)
    profiling: ProfilingConfig = Field(default_factory=ProfilingConfig)
    llm: LLMConfig = Field(default_factory=LLMConfig)
    evaluation: EvaluationConfig = Field(default_factory=EvaluationConfig)
    runs_dir: str = Field(default="runs", description="where run folders go, relative to the config")

    @model_validator(mode="before")
    @classmethod
    def _programs_over_app(cls, data: object) -> object:
        # Each entry of `programs` is validated as the app it makes: app's keys, its own replacing them.
        if not isinstance(data, dict) or not isinstance(data.get("programs"), list):
            return data
        base = data.get("app") if isinstance(data.get("app"), dict) else {}
        data = dict(data)
        data["programs"] = [{**base, **entry} if isinstance(entry, dict) else entry for entry in data["programs"]]
        return data

    def for_program(self, name: str) -> Config:
        """This config as the one program `name` of its `programs` list."""
        for p in self.programs:
            if p.name == name:
                return self.model_copy(update={"app": p, "programs": []})
        raise KeyError(name)


class LoadedConfig(BaseModel):
    """A validated config together with where it came from."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    path: Path
    config: Config
    sha256: str

    def resolve(self, p: str) -> Path:
        """Resolve a path written in the config against the config file's folder."""
        q = Path(p).expanduser()
        return q if q.is_absolute() else (self.path.parent / q)

    @cached_property
    def dirs(self) -> tuple[Path, Path]:
        """(the workspace copied for candidate builds, the workdir the commands run in), both absolute:
        app.workspace and app.workdir resolved once for this config (a copy with other settings,
        with_app's, resolves its own). A ValueError when the workdir is not inside the workspace."""
        app = self.config.app
        workdir = self.resolve(app.workdir).resolve()
        space = self.resolve(app.workspace).resolve() if app.workspace else workdir
        if workdir != space and space not in workdir.parents:
            raise ValueError(f"app.workdir {workdir} is not inside app.workspace {space}")
        return space, workdir

    @cached_property
    def parts(self) -> list[Path]:
        """What a build's copy of the workspace holds (absolute): app.workdir and app.workspace_paths,
        or the whole workspace when those name none (copied_parts), resolved once like `dirs`."""
        space, workdir = self.dirs
        return copied_parts(space, workdir, self.config.app.workspace_paths)

    def model_copy(self, *, update: dict[str, object] | None = None, deep: bool = False) -> LoadedConfig:
        """Pydantic's copy, without what this config resolved (`dirs`, `parts`): the copy's settings
        may differ."""
        copied = super().model_copy(update=update, deep=deep)
        copied.__dict__.pop("dirs", None)
        copied.__dict__.pop("parts", None)
        return copied

    def with_app(self, **update: object) -> LoadedConfig:
        """This config with app settings replaced (a candidate's workspace, a build's environment)."""
        app = self.config.app.model_copy(update=update)
        return self.model_copy(update={"config": self.config.model_copy(update={"app": app})})

    def program_names(self) -> list[str]:
        """The programs this config lists (empty when it is one program, `app`)."""
        return [p.name for p in self.config.programs]

    def for_program(self, name: str | None) -> LoadedConfig:
        """The config of one program: `name` of the `programs` list (None: the only one). A config of
        one program is itself, also when `name` is its app.name. ConfigError names the choices."""
        names = self.program_names()
        if not names:
            if name is None or name == self.config.app.name:
                return self
            raise ConfigError(self.path, [f"--program {name}: this config is one program, "
                                          f"{self.config.app.name!r} (it has no `programs` list)"])
        if name is None:
            if len(names) == 1:
                name = names[0]
            else:
                raise ConfigError(self.path, [f"programs: lists {len(names)} programs ({_listed(names)}); choose "
                                              "one with --program NAME"])
        if name not in names:
            raise ConfigError(self.path, [f"--program {name}: not one of the programs listed ({_listed(names)})"])
        return self.model_copy(update={"config": self.config.for_program(name)})

    def each_program(self) -> list[LoadedConfig]:
        """Every program's config, in the order listed (the config itself when it is one program)."""
        return [self.for_program(n) for n in self.program_names()] or [self]

    def with_llm(self, **update: object) -> LoadedConfig:
        """This config with llm settings replaced (a command line's --backend, an operator's model)."""
        llm = self.config.llm.model_copy(update=update)
        return self.model_copy(update={"config": self.config.model_copy(update={"llm": llm})})


def _listed(names: list[str], shown: int = 12) -> str:
    more = f", and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more


def _describe(err: dict) -> str:
    loc = ".".join(str(x) for x in err["loc"]) or "(top level)"
    kind = err["type"]
    if kind == "extra_forbidden":
        return (f"{loc}: unknown key (check the spelling; every key is in docs/configuration.md, or run "
                "`python -m runner.base.config_reference`)")
    got = err.get("input")
    shown = reprlib.repr(got) if not isinstance(got, dict) else "a mapping"
    ctx = err.get("ctx") or {}
    if kind in ("greater_than", "greater_than_equal", "less_than", "less_than_equal"):
        bounds = {"greater_than": "> {gt}", "greater_than_equal": ">= {ge}", "less_than": "< {lt}",
                  "less_than_equal": "<= {le}"}[kind].format(**ctx)
        return f"{loc}: expected a value {bounds}, got {shown}"
    if kind == "string_type" and isinstance(got, (int, float, bool)):
        return f"{loc}: expected text, got {shown} (quote it: '{got}')"
    if kind == "int_type" and isinstance(got, bool):
        return f"{loc}: expected a whole number, got {shown}"
    return f"{loc}: {err['msg'].lower()}, got {shown}"


def copied_parts(space: Path, workdir: Path, paths: list[str]) -> list[Path]:
    """What a build's copy of the workspace `space` holds: `workdir` and `paths` (app.workspace_paths,
    relative to `space`), none inside another, or `space` whole when `paths` is empty. Resolved
    paths; one leading out of `space` is left out (path_problems names it)."""
    top = space.resolve()
    if not paths:
        return [top]
    wanted = sorted({workdir.resolve(), *((space / p).resolve() for p in paths)}, key=lambda q: len(q.parts))
    parts: list[Path] = []
    for q in wanted:
        if q.is_relative_to(top) and not any(q.is_relative_to(k) for k in parts):
            parts.append(q)
    return parts


class _NoAliasLoader(yaml.SafeLoader):
    """YAML's safe loader without aliases (`*name`): a config has no use for them, and a chain of
    them in a few hundred bytes expands to gigabytes wherever the value is written out (an
    attacker's pass: a repository's config is read by the App's worker)."""

    def compose_node(self, parent, index):  # noqa: ANN001 (PyYAML's own signature)
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise yaml.composer.ComposerError(None, None, "aliases (*name) are not read in an Optimas config",
                                              event.start_mark)
        return super().compose_node(parent, index)


MAX_CONFIG_BYTES = 256 << 10


def parse_config(text: str, path: Path | str) -> Config:
    """Parse and validate YAML text; `path` only names the source in errors."""
    if len(text) > MAX_CONFIG_BYTES:
        raise ConfigError(path, [f"{len(text)} characters; a config is at most {MAX_CONFIG_BYTES} (it names commands "
                                 "and files; it holds no data)"])
    try:
        data = yaml.load(text, Loader=_NoAliasLoader)  # noqa: S506 (a SafeLoader, less aliases)
    except RecursionError:
        raise ConfigError(path, ["nested too deeply (a config's values are a few levels deep)"]) from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise ConfigError(path, [f"not valid YAML{where}: {getattr(e, 'problem', e)}"]) from None
    if data is None:
        raise ConfigError(path, ["the file is empty; expected the sections app, profiles, analysis, profiling, llm, "
                                 "evaluation (`optimas init` writes one; docs/configuration.md, or "
                                 "`python -m runner.base.config_reference`, lists every key)"])
    if not isinstance(data, dict):
        raise ConfigError(path, [f"(top level): expected a mapping of sections, got {type(data).__name__}"])
    problems = program_entry_problems(data.get("programs"))
    if problems:
        raise ConfigError(path, problems)
    try:
        config = Config.model_validate(data)
    except ValidationError as e:
        raise ConfigError(path, [_describe(x) for x in e.errors() if _own_error(x, data)]) from None
    from runner.base.config_checks import semantic_problems  # it reads this module's models

    problems = semantic_problems(config) if not config.programs else []
    for i, name in enumerate(entry.name for entry in config.programs):
        # a program's own keys are named where they are written; the shared ones (llm, evaluation) once
        problems += [re.sub(r"^app\.", f"programs.{i}.", p) for p in semantic_problems(config.for_program(name))]
    if problems:
        raise ConfigError(path, list(dict.fromkeys(problems)))
    return config


def program_entry_problems(entries: object) -> list[str]:
    """What the `programs` list must be before its entries are read as apps: mappings, each with
    its own unique name that can name a run folder."""
    if entries is None:
        return []
    if not isinstance(entries, list):
        return [f"programs: expected a list of programs (each a mapping with a name), got {reprlib.repr(entries)}"]
    out, seen = [], set()
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            out.append(f"programs.{i}: expected a mapping of app keys (name, build, run, ...), got "
                       f"{reprlib.repr(entry)}")
            continue
        name = entry.get("name")
        if not isinstance(name, str) or not re.match(PROGRAM_NAME, name):
            out.append(f"programs.{i}.name: expected the program's own name (letters, digits, _ . + -, at most 100), "
                       f"got {reprlib.repr(name)}")
        elif name in seen:
            out.append(f"programs.{i}.name: {name!r} is listed twice; each program has its own name")
        seen.add(name)
    return out


def _own_error(err: dict, data: dict) -> bool:
    """Whether a validation error belongs where it is reported: an entry of `programs` repeats the
    errors of the app keys it takes over, which are reported once, under `app`."""
    loc = err["loc"]
    if len(loc) < 3 or loc[0] != "programs" or not isinstance(loc[1], int):
        return True
    return loc[2] in data["programs"][loc[1]]


def load_config(path: Path | str) -> LoadedConfig:
    """Read, validate and hash a config file."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        raise ConfigError(p, ["file not found; pass --config with the path of a config.yml"]) from None
    except OSError as e:
        raise ConfigError(p, [f"cannot read: {e.strerror}"]) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(p, ["not UTF-8 text; expected a YAML file"]) from None
    config = parse_config(text, p)
    return LoadedConfig(path=p.resolve(), config=config, sha256=hashlib.sha256(raw).hexdigest())
