"""The Profiling Agent's parts that run without a GPU: templates, tool and GPU checks, process
control, ncu's failure messages; and analysis of what the agent captured on the H200."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from conftest import FIXTURES, REPO

from runner.base.config import load_config
from runner.base.context import RunContext
from runner.base.errors import ConfigError, ProfilingError
from runner.base.gpu import detect_gpu, list_gpus, require_tool
from runner.base.processes import CommandResult, render, run_command
from runner.base.runstore import create_run
from runner.profiling.agent import ProfilingAgent, check_ncu_output, kernel_regex, restrict_to_configured

SEISMIC = FIXTURES / "seismic-h200"


def test_render_fills_placeholders_per_word_and_drops_empty_ones():
    argv = render("nvcc -O3 -arch={arch} {lineinfo} -o '{exe}' main.cu", arch="sm_90", lineinfo="",
                  exe="/tmp/my app")
    assert argv == ["nvcc", "-O3", "-arch=sm_90", "-o", "/tmp/my app", "main.cu"]
    # a value with shell syntax stays one literal word: no shell ever sees it
    assert render("{exe} --config {config}", exe="x", config="a; rm -rf /") == ["x", "--config", "a; rm -rf /"]
    with pytest.raises(ProfilingError, match=r"unknown placeholder \{nope\}"):
        render("{exe} {nope}", exe="x")


def test_kernel_regex_matches_exact_demangled_names():
    import re

    rx = kernel_regex("stencil_rhs(const float *, Grid, float *)", "free_surface(Grid, float *)")
    assert rx.startswith("regex:")
    pat = re.compile(rx[len("regex:"):])
    assert pat.match("stencil_rhs(const float *, Grid, float *)")
    assert pat.match("free_surface(Grid, float *)")
    assert not pat.match("stencil_rhs(const float *, Grid, float *)x")


def test_configured_kernels_restrict_and_must_exist():
    launched = ["stencil_rhs(const float *, Grid, float *)", "free_surface(Grid, float *)", "k<int>(int *)"]
    assert restrict_to_configured(launched, ["free_surface", "k<int>(int *)"]) == launched[1:]
    with pytest.raises(ProfilingError, match=r"configured kernel\(s\) \['stencil'\] \(app.kernels\) not found; "
                                             r"the application launched: stencil_rhs"):
        restrict_to_configured(launched, ["stencil"])


def test_missing_tools_are_named_with_a_fix():
    with pytest.raises(ProfilingError, match=r"ncu not found \('no-such-ncu' is not on PATH\).*Nsight Compute"):
        require_tool("ncu", "no-such-ncu")
    with pytest.raises(ProfilingError, match="nvidia-smi not found"):
        detect_gpu("no-such-nvidia-smi")


def test_no_gpu_is_reported(tmp_path: Path):
    """A driver tool that finds no device (as nvidia-smi does on a machine without a GPU)."""
    smi = tmp_path / "nvidia-smi"
    smi.write_text("#!/bin/sh\necho 'No devices were found'\nexit 6\n")
    smi.chmod(0o755)
    with pytest.raises(ProfilingError, match="no NVIDIA GPU found: nvidia-smi says No devices were found"):
        detect_gpu(str(smi))


def test_run_command_reports_progress_lines(tmp_path: Path):
    seen: list[str] = []
    script = 'echo "==PROF== Profiling \\"k\\" - 0 (1/2): 0%....100% - 1 pass"; echo done'
    r = run_command(["sh", "-c", script], tmp_path, 10, tmp_path / "l.txt", seen.append, "timing pass")
    assert r.returncode == 0 and "done" in r.output
    assert seen == ['timing pass: Profiling "k" - 0 (1/2): 0%....100% - 1 pass']


@pytest.mark.parametrize("output, rc, says", [
    ("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance Counters "
     "on the target device 0.", 1, "NVreg_RestrictProfilingToAdminUsers=0"),
    ("==WARNING== No kernels were profiled.\n", 0, "no kernel matched the filter"),
    ("==PROF== Connected\nsegfault\n==ERROR== The application returned an error code (139).\n", 139,
     "failed with exit code 139; the application or ncu failed under the profiler"),
])
def test_ncu_failures_say_what_to_do(tmp_path: Path, output, rc, says):
    with pytest.raises(ProfilingError, match=says.replace("(", r"\(").replace(")", r"\)")):
        check_ncu_output(CommandResult(["ncu"], rc, 1.0, output), tmp_path / "log", "timing pass")


def test_a_pass_that_ends_the_program_once_profiled_succeeds_by_its_report(tmp_path: Path):
    """profiling.stop_when_profiled (ncu --kill): the program is stopped after the launches a pass
    counts, so its exit code is not its own; the report holding them is the pass's success, and a
    pass with no report still fails as before."""
    stopped = CommandResult(["ncu", "--kill", "yes"], 137, 1.0, "==PROF== Connected\n==PROF== Profiling \"k\"\n")
    report = tmp_path / "counters.ncu-rep"
    with pytest.raises(ProfilingError, match="failed with exit code 137"):
        check_ncu_output(stopped, tmp_path / "log", "counter run at scale 1", report)  # none written
    with pytest.raises(ProfilingError, match="failed with exit code 137"):
        check_ncu_output(stopped, tmp_path / "log", "counter run at scale 1")  # not a stopping pass
    report.write_bytes(b"NVIDIA Nsight Compute report")
    check_ncu_output(stopped, tmp_path / "log", "counter run at scale 1", report)


def test_agent_validates_the_app_config(tmp_path: Path):
    cfg = tmp_path / "c.yml"
    cfg.write_text("app: {name: x, configurations: [a]}\n")
    run = create_run(tmp_path / "runs")
    with pytest.raises(ProfilingError, match="app.build and app.run are needed"):
        ProfilingAgent(RunContext(load_config(cfg), run))
    cfg.write_text("app: {name: x, build: b, run: r, configurations: [a], profile_configuration: z}\n")
    with pytest.raises(ConfigError, match="app.profile_configuration: 'z' is not one of app.configurations"):
        load_config(cfg)  # refused when the config is read, before any agent or run


def test_profile_without_ncu_exits_4_naming_all_that_is_missing_before_any_run_folder(tmp_path: Path):
    cfg = tmp_path / "app.yml"
    text = (REPO / "benchmarks" / "stream" / "optimas.yml").read_text().replace("workdir: .", f"workdir: "
                                                                                 f"{REPO / 'benchmarks' / 'stream'}")
    cfg.write_text(text + "profiling: {ncu: no-such-ncu, nvcc: no-such-nvcc}\n")
    r = subprocess.run([sys.executable, "-m", "runner.cli", "profile", "--config", str(cfg), "--runs-dir",
                        str(tmp_path / "runs")], capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 4
    # one message, every missing tool in it (and, on a machine without one, the GPU)
    assert "this machine cannot run the GPU stages; it lacks:" in r.stderr
    assert "ncu not found ('no-such-ncu'" in r.stderr and "nvcc not found ('no-such-nvcc'" in r.stderr
    assert not (tmp_path / "runs").exists()  # nothing half-written


def test_the_counters_permission_is_read_from_the_driver(tmp_path: Path):
    from runner.base.gpu import counters_admin_only

    params = tmp_path / "params"
    params.write_text("ResmanDebugLevel: 4294967295\nRmProfilingAdminOnly: 1\n")
    assert counters_admin_only(params) is (os.geteuid() != 0)
    params.write_text("RmProfilingAdminOnly: 0\n")
    assert counters_admin_only(params) is False
    assert counters_admin_only(tmp_path / "absent") is False


# ---------------------------------------------------------------- what the agent captured

def _analyze_capture(tmp_path: Path, app: str):
    from runner.analysis.evidence import Diagnostics

    cap = FIXTURES / f"{app}-h200"
    args = ["analyze", "--config", str(REPO / "benchmarks" / app / "optimas.yml"), "--runs-dir", str(tmp_path),
            "--timing", str(cap / "timing_raw.csv"), "--report", str(cap / "hot0.ncu-rep"), "--json"]
    for rep in sorted((cap / "counters").glob("*.ncu-rep")):
        args += ["--counters", str(rep)]
    r = subprocess.run([sys.executable, "-m", "runner.cli", *args], capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 0, r.stderr
    manifest = json.loads((cap / "manifest.json").read_text())
    return Diagnostics.model_validate_json(r.stdout), manifest, (cap / "main.cu").read_text().splitlines()


def test_analysis_of_the_seismic_capture(tmp_path: Path):
    """Hot kernels come from the timing pass over all 320 launches, evidence from one targeted report."""
    d, manifest, source = _analyze_capture(tmp_path, "seismic")
    assert sum(k.launches for k in d.kernels) == 320 and len(d.kernels) == 8
    assert [k.kernel for k in d.hot_kernels] == manifest["stages"]["profile"]["hot_kernels"]
    assert len(d.hot_kernels) == 4  # of 8 kernels: selection matters
    stalls = [e.stall for e in d.evidence if e.kind == "stall"]
    assert all(source[s.line - 1].strip() == s.source for s in stalls)  # real lines of main.cu
    stencil = {s.line for s in stalls if s.kernel.startswith("stencil_rhs")}
    assert {26, 27} <= stencil  # the two lines of the 4th-order Laplacian
    damp = next(e.roofline for e in d.evidence if e.kind == "roofline" and e.kernel.startswith("damp_boundary"))
    assert damp.bound == "compute"  # its index arithmetic (div/mod per point) dominates
    counters = [e.counter["metric"] for e in d.evidence if e.kind == "counter"]
    assert len(counters) == 5 and not any(c.startswith("sass__") for c in counters)
    families = {c.split(".")[0] for c in counters}
    assert len(families) == 5  # one rollup per counter, not .sum/.avg/.min of the same one
    (run,) = tmp_path.iterdir()
    assert len((run / "analysis" / "diagnostics.md").read_bytes()) <= 6000


def test_analysis_of_the_accuracy_capture(tmp_path: Path):
    d, manifest, source = _analyze_capture(tmp_path, "accuracy")
    assert [k.kernel for k in d.hot_kernels] == manifest["stages"]["profile"]["hot_kernels"]
    s1 = next(e.stall for e in d.evidence if e.kind == "stall")
    assert s1.reason == "stall_long_sb" and "++ahead" in s1.source
    assert source[s1.line - 1].strip() == s1.source


INSTANCES = FIXTURES / "instances-h100"


def test_a_template_of_many_hot_instances_is_profiled_through_its_hottest(tmp_path: Path, caplog):
    """mixbench-cuda's 55 hot instances of one template were each profiled (2.5 minutes) and their
    45 MB report was not read within the run's time (issue #44). On the H100 capture of
    instances.cu (11 hot kernels, 8 of them instances of mix): the agent profiles
    profiling.max_targeted_kernels of them, the hottest instance of each source function first,
    and says what it leaves out and why; as the run on the H100 did (its manifest)."""
    from runner.profiles.readers.trace import TraceReader

    agent = ProfilingAgent(RunContext(load_config(INSTANCES / "optimas.yml"), create_run(tmp_path / "runs")))
    hot, files = agent._hot_kernels(TraceReader().read(INSTANCES / "trace.tsv").launches)
    with caplog.at_level("INFO", logger="optimas"):
        chosen = agent._in_depth(hot, files)
    assert len(hot) == 11 and chosen == [hot[0], hot[1], hot[3], hot[4]]
    stage = json.loads((INSTANCES / "manifest.json").read_text())["stages"]["profile"]
    assert len(stage["hot_kernels"]) == 11 and len(stage["profiled_kernels"]) == 4
    assert [k.split("<")[0].split("(")[0] for k in chosen] == ["void copy", "void mix", "scale", "void copy"]
    assert ("profiling 4 of the 11 hot kernels in depth (profiling.max_targeted_kernels: 4; each profiled kernel "
            "is replayed 20 or more times") in caplog.text
    assert "mix: 1 of its 8 hot instances, the hottest (the other 7 are the same source" in caplog.text
    assert "copy:" not in caplog.text and "left out, without" not in caplog.text  # both copy instances profiled
    # the default limit, 8: the hottest 8, and nothing said of functions left out whole
    default = tmp_path / "default.yml"
    default.write_text(f"app: {{name: instances, workdir: {INSTANCES}, sources: [instances.cu], build: b, "
                       "run: '{exe}'}\n")
    agent = ProfilingAgent(RunContext(load_config(default), create_run(tmp_path / "runs")))
    assert agent.config.profiling.max_targeted_kernels == 8
    assert agent._in_depth(*agent._hot_kernels(TraceReader().read(INSTANCES / "trace.tsv").launches)) == hot[:8]


def _analyze_instances(tmp_path: Path):
    """The analysis of the instances capture's trace and first targeted report, as diagnostics.json
    and diagnostics.md."""
    from runner.analysis.evidence import Diagnostics

    r = subprocess.run([sys.executable, "-m", "runner.cli", "analyze", "--config", str(INSTANCES / "optimas.yml"),
                        "--runs-dir", str(tmp_path), "--timing", str(INSTANCES / "trace.tsv"),
                        "--report", str(INSTANCES / "hot0.ncu-rep"), "--json"],
                       capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 0, r.stderr
    (run,) = tmp_path.iterdir()
    return Diagnostics.model_validate_json(r.stdout), (run / "analysis" / "diagnostics.md").read_text()


def test_the_analysis_counts_every_instance_and_says_which_were_profiled(tmp_path: Path):
    """The hot kernels the targeted report does not hold are still hot, with their share, when
    another instance of their source function was profiled (its evidence is of the same source);
    a hot function with no instance profiled (scale: hot1.ncu-rep is not given) is named in a note.
    The analysis stopped at the first hot kernel missing from the report before (issue #44)."""
    from runner.analysis.evidence import render_markdown

    d, md = _analyze_instances(tmp_path)
    assert len(d.hot_kernels) == 11 and len(d.kernels) == 16
    assert [(f.function, f.instances, len(f.hot), len(f.profiled)) for f in d.functions] == [
        ("copy", 2, 2, 2), ("mix", 12, 8, 1), ("scale", 1, 1, 0)]
    profiled = [k for f in d.functions for k in f.profiled]
    assert {e.kernel for e in d.evidence if e.kind != "counter"} <= set(profiled)
    assert {e.kernel for e in d.evidence if e.kind == "launch"} == set(profiled)
    mix = d.functions[1]
    share = sum(k.share for k in d.hot_kernels if k.kernel in mix.hot)
    assert ("- mix: 8 hot instances of this one source function, " in md
            and f" ({share:.1%}; all 12 of its instances: {mix.share:.1%}); profiled, with the evidence below: "
            "<unsigned int, 128> (" in md and "; not profiled: the other 7\n" in md)
    assert "- copy: 2 hot instances of this one source function" in md
    section = md.split("## Hot kernels", 1)[1].split("\n## ", 1)[0].strip().splitlines()[1:]
    assert [line.split(":")[0] for line in section] == ["- copy", "- mix", "- scale"]
    (note,) = [n for n in d.notes if n.startswith("scale:")]
    assert "1 hot kernel (" in note and "profiling.max_targeted_kernels" in note
    # short of room, the evidence of copy's other instance gives way first (copy<double>'s stands for it)
    other = {e.id for e in d.evidence if e.kernel == d.functions[0].profiled[1]}
    tight = render_markdown(d, len(render_markdown(d).encode()) - 1)
    omitted = tight.split("omitted here for length (kept in diagnostics.json): ", 1)[1].strip().split(", ")
    assert omitted[0] in other and omitted[0].startswith("L")


def test_the_prompt_names_a_template_of_many_hot_instances_once(tmp_path: Path):
    """The task names mix once, with its 8 hot instances' share and the one profiled, not 8 names;
    K* reports on the profiled instances only."""
    from runner.proposal.prompt import _compiler_kernels, build_prompt

    d, _ = _analyze_instances(tmp_path)
    user = build_prompt("instances", d, {"instances.cu": (INSTANCES / "instances.cu").read_text()}).user
    task = user.split("## Task\n", 1)[1].split("\n", 1)[0]
    mix = d.functions[1]
    share = sum(k.share for k in d.hot_kernels if k.kernel in mix.hot)
    assert (f"mix (8 instances of one template, {share:.1%} of kernel time: 16 launches; the evidence is of the 1 "
            "profiled: <unsigned int, 128>)") in task
    assert "copy (2 instances of one template, " in task and "; the evidence is of the 2 profiled: <double>, <float>)" \
        in task
    assert task.count("mix") == 1 and "scale (" in task
    assert user.count("### Hot kernel mix") == 1
    hot = [k.kernel for k in d.hot_kernels]
    assert _compiler_kernels(hot, d.functions) == [k for k in hot if k in d.functions[0].profiled + mix.profiled
                                                   or k in d.functions[2].hot]


def test_the_gpu_is_the_one_cuda_visible_devices_names(tmp_path: Path, monkeypatch):
    """nvidia-smi lists every GPU whatever CUDA_VISIBLE_DEVICES says; a process pinned to one (a
    worker per GPU) must build for that one. The stand-in prints what nvidia-smi prints."""
    smi = tmp_path / "nvidia-smi"
    smi.write_text("#!/bin/sh\necho '0, GPU-aaaa1111-0000, NVIDIA H100 80GB HBM3, 9.0, 580.159.04'\n"
                   "echo '1, GPU-bbbb2222-0000, NVIDIA A100-SXM4-80GB, 8.0, 580.159.04'\n")
    smi.chmod(0o755)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert [(g.index, g.arch) for g in list_gpus(str(smi))] == [("0", "sm_90"), ("1", "sm_80")]
    assert detect_gpu(str(smi)).name == "NVIDIA H100 80GB HBM3"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    assert detect_gpu(str(smi)).arch == "sm_80"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-bbbb2222,GPU-aaaa1111")
    assert detect_gpu(str(smi)).index == "1"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "7")
    with pytest.raises(ProfilingError, match="CUDA_VISIBLE_DEVICES='7' names no GPU"):
        detect_gpu(str(smi))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    with pytest.raises(ProfilingError, match="hides every GPU"):
        detect_gpu(str(smi))


def test_a_mig_instance_builds_for_the_gpu_it_belongs_to(tmp_path: Path, monkeypatch):
    """CUDA_VISIBLE_DEVICES may name a MIG instance, which only `nvidia-smi -L` lists, under its GPU."""
    smi = tmp_path / "nvidia-smi"
    smi.write_text("#!/bin/sh\nif [ \"$1\" = -L ]; then\n"
                   "echo 'GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-aaaa1111-0000)'\n"
                   "echo 'GPU 1: NVIDIA A100-SXM4-80GB (UUID: GPU-bbbb2222-0000)'\n"
                   "echo '  MIG 1g.10gb     Device  0: (UUID: MIG-cccc3333-0000)'\n"
                   "echo '  MIG 1g.10gb     Device  1: (UUID: MIG-dddd4444-0000)'\n"
                   "else\necho '0, GPU-aaaa1111-0000, NVIDIA H100 80GB HBM3, 9.0, 580.159.04'\n"
                   "echo '1, GPU-bbbb2222-0000, NVIDIA A100-SXM4-80GB, 8.0, 580.159.04'\nfi\n")
    smi.chmod(0o755)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "MIG-dddd4444-0000")
    assert (detect_gpu(str(smi)).index, detect_gpu(str(smi)).arch) == ("1", "sm_80")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "MIG-eeee5555-0000")
    with pytest.raises(ProfilingError, match="names no MIG instance"):
        detect_gpu(str(smi))


def _fake_host(tmp_path: Path, minors: dict[str, int]) -> tuple[str, Path, Path]:
    """A stand-in nvidia-smi listing two GPUs (with their PCI bus ids, as the query asks), a /dev
    folder with the driver's nodes as plain files, and the driver's folder of GPUs, each with the
    `information` file the driver writes ("Device Minor:" among its lines)."""
    smi = tmp_path / "nvidia-smi"
    smi.write_text("#!/bin/sh\nif [ \"$1\" = -L ]; then\n"
                   "echo 'GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-aaaa1111-0000)'\n"
                   "echo 'GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-bbbb2222-0000)'\n"
                   "echo '  MIG 1g.10gb     Device  0: (UUID: MIG-dddd4444-0000)'\nelse\n"
                   "echo '0, GPU-aaaa1111-0000, NVIDIA H100 80GB HBM3, 9.0, 580.159.04, 00000000:18:00.0'\n"
                   "echo '1, GPU-bbbb2222-0000, NVIDIA H100 80GB HBM3, 9.0, 580.159.04, 00000000:2A:00.0'\nfi\n")
    smi.chmod(0o755)
    dev, driver = tmp_path / "dev", tmp_path / "gpus"
    dev.mkdir()
    for name in ("nvidia0", "nvidia1", "nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-nvswitch0", "null"):
        (dev / name).write_text("")
    for bus, minor in minors.items():
        (driver / bus).mkdir(parents=True)
        (driver / bus / "information").write_text(f"Model: \t\t NVIDIA H100 80GB HBM3\nIRQ:   \t\t 62\n"
                                                  f"GPU UUID: \t GPU-x\nDevice Minor: \t {minor}\nBus Type: \t PCIe\n")
    return str(smi), dev, driver


def test_a_sandbox_gets_only_the_gpu_its_worker_is_pinned_to(tmp_path: Path):
    """A worker pinned to one GPU hands the code that GPU's node alone (with the driver's shared
    nodes), and CUDA_VISIBLE_DEVICES by UUID: an index would name no GPU inside, where the one GPU
    is the only one, and a program that unsets the variable still finds no other GPU. The node is
    the driver's minor number for the GPU's PCI bus id, not nvidia-smi's index."""
    from runner.base.gpu import sandbox_devices
    from runner.base.sandbox import Sandbox, SandboxError

    smi, dev, driver = _fake_host(tmp_path, {"0000:18:00.0": 1, "0000:2a:00.0": 0})  # minors swapped
    shared = [str(dev / n) for n in ("nvidia-uvm", "nvidia-uvm-tools", "nvidiactl")]
    got = sandbox_devices(smi, "1", dev, driver)
    assert got.nodes == (*shared, str(dev / "nvidia0")) and got.visible == "GPU-bbbb2222-0000"
    got = sandbox_devices(smi, "GPU-aaaa1111, 1", dev, driver)
    assert got.nodes == (*shared, str(dev / "nvidia0"), str(dev / "nvidia1"))
    assert got.visible == "GPU-aaaa1111-0000,GPU-bbbb2222-0000"
    got = sandbox_devices(smi, "MIG-dddd4444-0000", dev, driver)  # under GPU 1: its node, the MIG instance named
    assert got.nodes == (*shared, str(dev / "nvidia0")) and got.visible == "MIG-dddd4444-0000"
    got = sandbox_devices(smi, None, dev, driver)  # a worker not pinned uses every GPU
    assert got.nodes == (*shared, str(dev / "nvidia0"), str(dev / "nvidia1")) and got.visible is None
    with pytest.raises(SandboxError, match="'7' names no GPU"):
        sandbox_devices(smi, "7", dev, driver)
    (driver / "0000:2a:00.0" / "information").write_text("Model: NVIDIA H100\n")
    with pytest.raises(SandboxError, match="GPU 1 .*gives no 'Device Minor'.*every GPU of this host"):
        sandbox_devices(smi, "1", dev, driver)
    for n in ("nvidia0", "nvidia1"):
        (dev / n).unlink()
    assert sandbox_devices(smi, "1", dev, driver).nodes == tuple(shared)  # no GPU here: nothing to choose

    (tmp_path / "b").mkdir()
    smi, dev, driver = _fake_host(tmp_path / "b", {"0000:18:00.0": 0, "0000:2a:00.0": 1})
    args = Sandbox("bwrap", [tmp_path], devices=sandbox_devices(smi, "0", dev, driver)).wrap(["./app"], None)
    binds = [args[i + 1] for i, a in enumerate(args) if a == "--dev-bind"]
    assert [Path(b).name for b in binds] == ["nvidia-uvm", "nvidia-uvm-tools", "nvidiactl", "nvidia0"]
    at = args.index("--setenv")
    assert args[at:at + 3] == ["--setenv", "CUDA_VISIBLE_DEVICES", "GPU-aaaa1111-0000"]
    assert "--dev-bind" not in Sandbox("bwrap", [tmp_path]).wrap(["./app"], None)  # no devices unless given


def test_counter_runs_sweep_sizes_only_when_the_program_can_be_scaled():
    from runner.base.config import parse_config
    from runner.profiling.agent import counter_scales

    sweep = [0.25, 0.5, 0.75, 1.0, 1.5, 2.0]
    assert counter_scales(parse_config("app: {run: '{exe} 1024'}\n", "x.yml")) == [1.0]
    assert counter_scales(parse_config("app: {run: '{exe} --scale {scale}'}\n", "x.yml")) == sweep
    scaled = "app: {run: '{exe} {n}', profile_run: '{exe} {n*scale}', configurations: {a: {n: 4}}}\n"
    assert counter_scales(parse_config(scaled, "x.yml")) == sweep


def test_counter_runs_profile_the_hottest_kernel_the_sources_define():
    # a library kernel (no source here) is hottest: its counters could guide no edit (issue #15, item 6)
    from runner.profiling.agent import counter_target

    files = {"k.cu": "__global__ void saxpy(float *x, float a, int n) { }\n"}
    hot = ["void cub::DeviceReduceKernel<float>(const T1 *, T1 *, int)", "saxpy(float *, float, int)"]
    assert counter_target(hot, files) == "saxpy(float *, float, int)"
    assert counter_target(hot[:1], files) == hot[0]  # none defined: the hottest


def test_profile_paths_in_the_profiling_builds_copy_are_renamed_to_the_workspaces(tmp_path):
    import pandas as pd

    from runner.analysis.stage import apply_source_map, read_source_roots
    from runner.base.errors import AnalysisError
    from runner.profiles.model import Profile

    roots = tmp_path / "source-roots.json"
    roots.write_text(json.dumps({"/runs/r1/profile/workspace": "/home/me/app"}))
    prof = Profile(lines=pd.DataFrame({
        "file": ["/runs/r1/profile/workspace/src/k.cu", "/runs/r1/profile/workspace2/k.cu", "k.cu", None],
        "caller_file": ["/runs/r1/profile/workspace/k.h", None, None, None]}))
    apply_source_map(prof, {"/home/me/app/k.h": "include/k.h"}, read_source_roots([roots]))
    assert list(prof.lines["file"])[:3] == ["/home/me/app/src/k.cu", "/runs/r1/profile/workspace2/k.cu", "k.cu"]
    assert prof.lines["caller_file"][0] == "include/k.h"  # the config's source_map applies after the roots
    roots.write_text("[1, 2]")
    with pytest.raises(AnalysisError, match="source-roots.json: expected a JSON object"):
        read_source_roots([roots])


def test_a_workspace_copy_made_inside_the_workspace_leaves_out_the_folder_it_is_made_in(tmp_path):
    from runner.toolchain.builder import copy_workspace

    app = tmp_path / "app"
    (app / "src").mkdir(parents=True)
    (app / "src" / "k.cu").write_text("__global__ void k() {}\n")
    (app / "optimas.yml").write_text("app: {name: k, sources: [src/k.cu], build: 'true', run: 'true'}\n")
    lc = load_config(app / "optimas.yml")
    dest = app / "my-runs" / "r1" / "profile" / "workspace"  # --runs-dir inside the program's folder
    dest.parent.mkdir(parents=True)
    cwd = copy_workspace(lc, dest, {"src/k.cu": "// edited\n"})
    assert cwd == dest and (dest / "src" / "k.cu").read_text() == "// edited\n"
    assert not (dest / "my-runs").exists() and (app / "src" / "k.cu").read_text().startswith("__global__")


def test_a_workspace_with_dangling_links_is_copied_without_them(tmp_path):
    """Suites keep links to data never pulled, or to a path on the author's machine: the copy
    leaves them out instead of failing the build."""
    from runner.toolchain.builder import copy_workspace

    app = tmp_path / "suite" / "prog"
    app.mkdir(parents=True)
    (app / "k.cu").write_text("__global__ void k() {}\n")
    (tmp_path / "suite" / "other").mkdir()
    (tmp_path / "suite" / "other" / "data.txt").symlink_to("../never-pulled/data.txt")
    (tmp_path / "suite" / "other" / "Make.inc").symlink_to("/noback/someone/Make.inc")
    (tmp_path / "suite" / "shared.h").write_text("// shared\n")
    (tmp_path / "suite" / "linked.h").symlink_to("shared.h")
    (app / "optimas.yml").write_text("app: {name: k, workspace: .., sources: [k.cu], build: 'true', run: 'true'}\n")
    dest = tmp_path / "copy"
    cwd = copy_workspace(load_config(app / "optimas.yml"), dest)
    assert (cwd / "k.cu").is_file() and (dest / "linked.h").read_text() == "// shared\n"
    assert not (dest / "other" / "data.txt").exists() and not (dest / "other" / "Make.inc").exists()


@pytest.mark.skipif(__import__("shutil").which("nvcc") is None, reason="nvcc not installed")
def test_links_to_folders_that_loop_are_copied_as_links_and_the_build_runs(tmp_path, monkeypatch):
    """Two committed links `a -> .` and `b -> .` made the copy (and the build cache's walk of what
    it copies) follow 2^40 paths, holding the worker outside the sandbox and filling its disk (an
    attacker's pass). Links to folders in the workspace, or up the copy's own path, stay links;
    links to files are still copied as files; a copy too large stops with a clear error."""
    from runner.toolchain import builder as cache
    from runner.toolchain.builder import WorkspaceCopyError, compile_candidate, copy_workspace

    app = tmp_path / "app"
    (app / "inc").mkdir(parents=True)
    (app / "inc" / "twice.h").write_text("#define TWICE(x) (2 * (x))\n")
    (app / "k.cu").write_text('#include "linked/twice.h"\n__global__ void k(float *a) { a[0] = TWICE(a[0]); }\n'
                              "int main() { return 0; }\n")
    (app / "a").symlink_to(".")
    (app / "b").symlink_to(".")
    (app / "up").symlink_to("..")
    (app / "linked").symlink_to("inc")
    (app / "twice.h").symlink_to("inc/twice.h")
    (app / "optimas.yml").write_text("app: {name: k, sources: [k.cu], build: 'nvcc -arch={arch} -o {exe} k.cu', "
                                     "run: '{exe}'}\n")
    lc = load_config(app / "optimas.yml")
    cwd = copy_workspace(lc, tmp_path / "copy")
    assert [os.readlink(cwd / n) for n in ("a", "b", "up", "linked")] == [".", ".", "..", "inc"]
    assert not (cwd / "twice.h").is_symlink() and (cwd / "twice.h").read_text().startswith("#define")
    built = compile_candidate(lc, {}, "sm_90", cache=tmp_path / "cache")
    assert built.ok, built.output
    # links from folder to folder outside the workspace, without a loop, made 2^k paths (an
    # attacker's second pass): a folder is followed once, its other links stay links
    outside = tmp_path / "o"
    for i in range(40):
        (outside / f"d{i}").mkdir(parents=True)
        for side in ("x", "y"):
            (outside / f"d{i}" / side).symlink_to(f"../d{i + 1}")
    (outside / "d40").mkdir()
    (app / "graph").symlink_to("../o/d0")
    cwd = copy_workspace(lc, tmp_path / "copy3")  # (2^40 folders before)
    assert sum(1 for _ in (tmp_path / "copy3").rglob("*")) < 200
    assert compile_candidate(lc, {}, "sm_90", cache=tmp_path / "cache").ok
    monkeypatch.setattr(cache, "MAX_COPY_FILES", 3)
    with pytest.raises(WorkspaceCopyError, match="app.workspace .*more than 3 files"):
        copy_workspace(lc, tmp_path / "copy2")


def test_scales_that_give_the_same_command_are_profiled_once(tmp_path: Path):
    """A small size rounds to the same whole size at several scales: only scales whose command
    differs from every earlier one's are run (the same command twice would read as a kernel whose
    work does not follow the scale)."""
    from runner.base.gpu import Gpu

    cfg = tmp_path / "c.yml"
    cfg.write_text("app: {name: x, build: b, run: '{exe} {n}', profile_run: '{exe} {n*scale} {m*scale}',\n"
                   "      configurations: {a: {n: 2, m: 4096}}}\n")
    agent = ProfilingAgent(RunContext(load_config(cfg), create_run(tmp_path / "runs")))
    agent.gpu = Gpu(name="NVIDIA H200", compute_capability="9.0", driver="580", index="0", uuid="GPU-0")
    scales = [1.0, 0.25, 0.5, 0.75, 1.5, 2.0]
    assert agent._distinct_scales(tmp_path / "exe", scales) == scales  # m follows every scale
    cfg.write_text("app: {name: x, build: b, run: '{exe} {n}', profile_run: '{exe} {n*scale}',\n"
                   "      configurations: {a: {n: 2}}}\n")
    agent = ProfilingAgent(RunContext(load_config(cfg), create_run(tmp_path / "runs")))
    agent.gpu = Gpu(name="NVIDIA H200", compute_capability="9.0", driver="580", index="0", uuid="GPU-0")
    # n = 2 becomes 1 at 0.25 and 0.5, 2 at 0.75 (as at 1), 3 at 1.5 and 4 at 2
    assert agent._distinct_scales(tmp_path / "exe", scales) == [1.0, 0.25, 1.5, 2.0]


def test_a_command_scaling_several_sizes_gives_each_a_root_of_the_scale(tmp_path: Path):
    """The counter runs' command: two sizes at scale 2 are each times 1.4375 (about twice the work,
    not four times), three at 0.25 each times 0.625, then rounded to whole multiples of 256 or 128
    as one size is (scaled_size); a bare {scale} is passed as it is."""
    from runner.base.gpu import Gpu

    def argv(profile_run: str, scale: float) -> list[str]:
        cfg = tmp_path / "c.yml"
        cfg.write_text(f"app: {{name: x, build: b, run: '{{exe}}', profile_run: '{profile_run}',\n"
                       "      configurations: {a: {n: 1024, m: 2048, k: 512}}}\n")
        agent = ProfilingAgent(RunContext(load_config(cfg), create_run(tmp_path / "runs")))
        agent.gpu = Gpu(name="NVIDIA H200", compute_capability="9.0", driver="580", index="0", uuid="GPU-0")
        return agent._app_argv(Path("exe"), scale)[1:]

    assert argv("{exe} {n*scale}", 2.0) == ["2048"]
    assert argv("{exe} {n*scale} {m*scale}", 2.0) == ["1536", "3072"]  # 1472 and 2944, rounded
    assert argv("{exe} {n*scale} {m*scale} {k*scale}", 0.25) == ["512", "1280", "256"]  # 640, 1280, 320
    assert argv("{exe} {n*scale} {m*scale} --scale {scale}", 2.0) == ["2048", "4096", "--scale", "2.0"]
    assert argv("{exe} {n*scale} {m*scale}", 1.0) == ["1024", "2048"]


def test_a_collection_of_minutes_is_announced_before_it_starts(tmp_path: Path, caplog):
    """A kernel whose one launch takes seconds (a serial loop, <<<1, 1>>>) makes a targeted
    collection of minutes, since Nsight Compute replays it once per pass: the agent says so first
    (on the H100, hw3's vector_add took 4 minutes in its collection, with no word of why)."""
    from runner.analysis.hot import select_hot_kernels

    cfg = tmp_path / "c.yml"
    cfg.write_text("app: {name: x, build: b, run: '{exe}'}\n")
    agent = ProfilingAgent(RunContext(load_config(cfg), create_run(tmp_path / "runs")))
    launches = pd.DataFrame({"kernel": ["vadd", "small"], "duration_ns": [4.2e9, 4.0e3], "launch": [0, 1]})
    agent._launch_ns = {k.kernel: k.total_ns / k.launches for k in select_hot_kernels(launches, 0.8)}
    with caplog.at_level("INFO", logger="optimas"):
        agent._say_if_slow(["small"])
        assert "Nsight Compute replays" not in caplog.text
        agent._say_if_slow(["vadd"])
    assert "each profiled launch of vadd took 4.20 s in the traced run" in caplog.text
    assert "about 1 min or more" in caplog.text
