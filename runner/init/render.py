"""The commented optimas.yml init writes, built as YAML nodes (ruamel.yaml keeps the comments).

Each key is an Entry: its value, the facts init found that explain it (this program's) and what the
key means (the same for every program). A config of one program is `app:` with both kinds of
comment over each key; a config of several shares under `app:` the keys whose values are the same
for all, says once what each key means, and lists each program's own keys under `programs:`, its
facts as comments over them.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.scalarstring import DoubleQuotedScalarString

from runner.init.project import Project, count_of
from runner.init.sizes import SizeArguments, size_arguments

HEADER = ("Every key: docs/configuration.md in the Optimas repository, or `python -m runner.base.config_reference`.\n"
          "Check it with: optimas check-config --config <this file> --build")
# Keys whose lists hold paths (written quoted, as any path may need); other lists hold names.
QUOTED_LISTS = frozenset({"sources", "workspace_paths"})


@dataclass
class Entry:
    """One key of an app mapping as init writes it."""

    key: str
    value: object
    facts: list[str] = field(default_factory=list)  # what init found (this program's)
    explain: list[str] = field(default_factory=list)  # what the key means (any program's)
    eol: str = ""  # a short comment at the end of the line


@dataclass
class ProgramSpec:
    """One program to write: what init found and where it sits relative to the config file."""

    project: Project
    name: str
    run_args: str = ""
    workdir: str = "."
    workspace: str | None = None  # the folder a candidate's build copies, when larger than workdir
    workspace_paths: list[str] = field(default_factory=list)  # the parts of it the build reads


def _node(value: object, key: str = "") -> object:
    """A value as ruamel.yaml writes it: strings double-quoted (a build command's quotes and braces
    stay readable), lists and mappings in flow style (`[a.cu]`, `{default: {n: 1024}}`)."""
    if isinstance(value, str):
        return DoubleQuotedScalarString(value)
    if isinstance(value, list):
        seq = CommentedSeq(DoubleQuotedScalarString(v) if key in QUOTED_LISTS and isinstance(v, str) else v
                           for v in value)
        seq.fa.set_flow_style()
        return seq
    if isinstance(value, dict):
        mapping = CommentedMap((k, _node(v) if isinstance(v, dict) else v) for k, v in value.items())
        mapping.fa.set_flow_style()
        return mapping
    return value


def _mapping(entries: list[Entry], indent: int, explain: bool = True) -> CommentedMap:
    """The entries as a mapping, with their comments over each key (`indent`: its keys' column)."""
    out = CommentedMap()
    for e in entries:
        out[e.key] = _node(e.value, e.key)
        before = [*e.facts, *(e.explain if explain else [])]
        if before:
            out.yaml_set_comment_before_after_key(e.key, before="\n".join(before), indent=indent)
        if e.eol:
            out.yaml_add_eol_comment(e.eol, e.key, column=indent + 18)
    return out


def _dump(root: CommentedMap) -> str:
    y = YAML()
    y.width = 4096  # notes stay on their lines; a build command is never folded
    y.indent(mapping=2, sequence=4, offset=2)
    buf = io.StringIO()
    y.dump(root, buf)
    return buf.getvalue()


def _evaluation() -> CommentedMap:
    ev = CommentedMap(timer="tracer")
    ev.yaml_add_eol_comment("kernel execution times from the CUPTI tracer; no help from the program", "timer",
                            column=20)
    return ev


def render_config(programs: list[ProgramSpec]) -> str:
    """The commented optimas.yml for these programs: `app:` alone for one, `app:` with what they
    share and `programs:` for several."""
    if not programs:
        raise ValueError("render_config: no program to write")
    root = CommentedMap()
    if len(programs) == 1:
        spec = programs[0]
        root.yaml_set_start_comment(f"Optimas config for {spec.name}, written by `optimas init`. {HEADER}")
        root["app"] = _mapping(app_entries(spec), 2)
        root["evaluation"] = _evaluation()
        return _dump(root)
    each = [app_entries(spec) for spec in programs]
    shared = _shared_keys(each)
    names = ", ".join(spec.name for spec in programs[:8]) + (", ..." if len(programs) > 8 else "")
    root.yaml_set_start_comment(f"Optimas config for {count_of(len(programs), 'program')} ({names}), written by "
                                f"`optimas init`. {HEADER}\n`app` holds what the programs share; each entry of "
                                "`programs` the keys that differ for it (each replaces app's whole).")
    root["app"] = _mapping([e for e in each[0] if e.key in shared], 2)
    seq = CommentedSeq()
    explained: dict[str, list[str]] = {}
    for spec, entries in zip(programs, each, strict=True):
        # the kernels are in the program's heading: its sources need no comment of their own
        own = [Entry(e.key, e.value, [] if e.key == "sources" else e.facts, e.explain, e.eol)
               for e in entries if e.key not in shared]
        for e in own:
            if e.explain and e.key not in explained:
                explained[e.key] = e.explain
        seq.append(_mapping(own, 4, explain=False))
        seq.yaml_set_comment_before_after_key(len(seq) - 1, before=_program_heading(spec), indent=2)
    root["programs"] = seq
    notes = [f"{key}: {' '.join(lines)}" for key, lines in explained.items()]
    root.yaml_set_comment_before_after_key("programs", before="\n".join(notes), indent=0)
    root["evaluation"] = _evaluation()
    return _dump(root)


def _program_heading(spec: ProgramSpec) -> str:
    p = spec.project
    shown = ", ".join(p.kernels[:6]) + (", ..." if len(p.kernels) > 6 else "")
    return f"{spec.name}: {count_of(len(p.kernels), 'kernel')} ({shown}), built by {p.build_kind}"


def _shared_keys(each: list[list[Entry]]) -> set[str]:
    """The keys every program has with the same value and the same facts (a constant's definition
    names its file: each program's own); its name is always its own."""
    first = {e.key: (e.value, e.facts) for e in each[0]}
    return {k for k, v in first.items() if k != "name" and all(
        any(e.key == k and (e.value, e.facts) == v for e in entries) for entries in each[1:])}


def app_entries(spec: ProgramSpec) -> list[Entry]:
    """The app keys of one program, in the order they are written, each with its comments."""
    p, run_args = spec.project, spec.run_args
    sizes = size_arguments(run_args, p.usage)
    run = "{exe}" + (f" {sizes.run if sizes else run_args}" if run_args else "")
    out = [Entry("name", spec.name), Entry("workdir", spec.workdir)]
    if spec.workspace is not None:
        out.append(Entry("workspace", spec.workspace,
                         [f"The build reads files outside the program folder: {why}" for why in outside_notes(p)],
                         ["A candidate is built in a copy of this folder, which holds them all."]))
        if spec.workspace_paths:
            out.append(Entry("workspace_paths", spec.workspace_paths, [], [
                "Only the parts of it the build reads are copied (and searched for size constants):",
                "add a folder here if a build in the copy misses a file."]))
    shown = ", ".join(p.kernels[:6]) + (", ..." if len(p.kernels) > 6 else "")
    out.append(Entry("sources", p.kernel_files,
                     [f"The files that define the {count_of(len(p.kernels), 'kernel')} found: {shown}."],
                     ["Local headers they include are followed (two levels): device helpers there are shown too."]))
    out.append(Entry("build", p.build, [f"build ({p.build_kind}): {note}" for note in p.notes], [
        "Placeholders: {exe} the binary to make or run, {arch} the GPU's architecture (sm_90),",
        "{lineinfo} -lineinfo in profiling builds; {config} {seed} {scale} {out} in run commands."]))
    out.append(Entry("run", run, [], [
        "`run` is validated: its exit code and the results it copies from the GPU (the CUPTI tracer",
        "compares them bit for bit with the original's). `time_run` is timed and `profile_run` runs",
        "under the profiler; both default to `run`."]))
    out += _size_entries(p, sizes)
    out.append(Entry("outputs", [], eol="files the run writes, if you want them compared too: [{path: out.bin}]"))
    if p.fail_pattern:
        out.append(Entry("stdout", {"fail_pattern": DoubleQuotedScalarString(p.fail_pattern)},
                         [f"The program prints its own verdict ({p.fail_pattern_in}): a run whose output matches "
                          "fails."]))
    out.append(Entry("timeout_s", 600, [], [
        "Bit for bit by default (where the program's own results vary by rounding, as with float",
        "atomics, Optimas finds it out and holds candidates within 1024 ulps there). If a candidate",
        "may change the results' last bits anywhere (a sum reordered), declare it, and the model is",
        "told it may reorder within it: gpu_results: {compare: tolerance, dtype: float32, rtol: 1.0e-5}"]))
    if p.clock_seed.pinnable:
        seeded = f"The program seeds its random inputs from the clock ({p.clock_seed.at})."
        out.append(Entry("pin_seeds", True, [seeded], [
            "Every run gets one fixed seed through Optimas's seed library (srand, srandom, srand48,",
            "std::random_device, cuRAND's host seed), so runs draw the same inputs and their results",
            "can be compared. Without it, two runs of the original differ and no candidate is judged."]))
    if p.compat or p.dialect:
        facts = ["The sources use what CUDA 13 removed: " + "; ".join(p.compat) + "."] if p.compat else []
        facts += [f"The build asks for an older C++ than CUDA 13's headers take ({p.dialect}): those sources "
                  "are compiled as C++17."] if p.dialect else []
        out.append(Entry("legacy_cuda", True, facts, [
            "Optimas's compatibility headers let them build by defining those names anew (the warp ones",
            "over the active threads): that changes what the code means, so every run and pull request",
            "says which header went where. Without this line the build fails as with your own CUDA 13."]))
    return out


def _size_entries(p: Project, sizes: SizeArguments | None) -> list[Entry]:
    """The problem size: configurations with the run's size arguments and the profiled command
    scaling them, or the size constants the counter runs scale."""
    if sizes:
        return [
            Entry("configurations", {"default": sizes.values}, [], [
                "One entry per problem size, passed to the commands as {config}; the numbers in the run",
                "arguments are this one's values, so another size is another entry."]),
            Entry("profile_run", "{exe} " + sizes.profile, [], [
                "Counter runs (eOMP) profile the program at several problem sizes: {n*scale} is n times",
                "each of profiling.counter_scales (with k sizes scaled, times its k-th root, so the work",
                "follows the scale). Optimas checks on the GPU that the hot kernel's work follows the scale",
                "(instructions executed), and leaves out a size the program fails at."]),
        ]
    out = [Entry("configurations", ["default"], eol="one entry per problem size, passed to the commands as {config}")]
    if p.size_constants:
        found = "; ".join(f"{c.name} = {c.value} ({c.file}:{c.line})" for c in p.size_constants)
        out.append(Entry("size_constants", [c.name for c in p.size_constants],
                         [f"The run takes no size argument; these constants of the host code size its allocations: "
                          f"{found}."], [
                             "Counter runs (eOMP) rebuild the program with them times each of profiling.counter_scales",
                             "(k constants times its k-th root, so the work follows the scale; in a copy of the",
                             "workspace), and Optimas checks on the GPU that the hot kernel's work follows",
                             "(instructions executed). Remove the line if they are not sizes."]))
    return out


def outside_notes(p: Project, shown: int = 4) -> list[str]:
    """What the build reads outside the program folder, the first `shown` of it."""
    notes = [why for _, why in p.outside[:shown]]
    if len(p.outside) > shown:
        notes.append(f"and {len(p.outside) - shown} more")
    return notes
