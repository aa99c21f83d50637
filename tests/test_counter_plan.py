"""Where eOMP's N counter runs come from (issue #30): sizes the GPU confirms, launch configurations,
the closed loop's code versions, or one run and why; and init writing the size placeholders."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import FIXTURES, REPO

from runner.analysis.evidence import render_markdown
from runner.analysis.stage import analyze, with_code_versions
from runner.base.config import load_config
from runner.init.sizes import size_arguments
from runner.profiles.counter_plan import (
    CounterPlan,
    distinct_configurations,
    work_changes,
    work_of,
)
from runner.profiles.readers import read_any
from runner.proposal.prompt import build_prompt
from runner.tracing.trace import KernelLaunch

CAP = FIXTURES / "accuracy-h200"
SCALES = ["0_25", "0_5", "0_75", "1", "1_5", "2"]


def _launch(kernel: str, mangled: str, grid: int, block: int = 256, smem: int = 0) -> KernelLaunch:
    return KernelLaunch(kernel=kernel, mangled=mangled, start_ns=0, end_ns=1, grid=(grid, 1, 1), block=(block, 1, 1),
                        registers=32, static_shared=0, dynamic_shared=smem, stream=7, device=0, context=1,
                        correlation=1)


def test_distinct_launch_configurations_of_a_kernel_and_its_template():
    sort = "_Z11bitonicSortILj1EEvPjS0_jj"  # bitonicSort<1u>(unsigned *, unsigned *, unsigned, unsigned)
    launches = [_launch("bitonicSort<1u>", sort, g) for g in (1, 2, 4, 4, 8)]
    launches += [_launch("bitonicSort<1u>", sort, 8, smem=4096)]  # dynamic shared memory tells it apart
    launches += [_launch("bitonicSort<0u>", "_Z11bitonicSortILj0EEvPjS0_jj", 16)]  # another instance
    launches += [_launch("other", "_Z5otherv", 32)]
    assert distinct_configurations(launches, "bitonicSort<1u>") == 5
    assert distinct_configurations(launches, "bitonicSort<1u>", sort) == 6  # the template's instances count
    assert distinct_configurations(launches, "missing") == 0
    assert distinct_configurations([], "bitonicSort<1u>", sort) == 0


def test_a_size_sweep_is_kept_only_when_the_kernels_work_follows_the_scale():
    # real counter runs of the accuracy benchmark at scales 0.25 and 1 (H200)
    small = work_of(read_any(CAP / "counters" / "scale_0_25.ncu-rep"))
    full = work_of(read_any(CAP / "counters" / "scale_1.ncu-rep"))
    assert small and full and full > 3 * small
    assert work_changes(full, small)
    assert not work_changes(full, full) and not work_changes(full, full * 1.001)
    assert not work_changes(None, full)  # not collected: the sweep cannot be confirmed


def _inputs(tmp_path: Path, plan: CounterPlan, counters: list[str], name: str = "plan") -> dict[str, list[Path]]:
    p = tmp_path / f"{name}.json"
    p.write_text(plan.model_dump_json())
    return {"timing": [CAP / "timing_raw.csv"], "report": [CAP / "hot0.ncu-rep"],
            "counters": [CAP / "counters" / f"scale_{s}.ncu-rep" for s in counters], "counter_plan": [p]}


def test_the_evidence_says_what_the_counter_runs_are(tmp_path: Path):
    lc = load_config(REPO / "benchmarks" / "accuracy" / "optimas.yml")
    sizes = CounterPlan(source="sizes", kernel="accuracy_kernel", runs=6, scales=[1, 0.25, 0.5, 0.75, 1.5, 2])
    diag = analyze(lc, _inputs(tmp_path, sizes, SCALES))
    assert diag.counter_selection and diag.counter_selection.source == "problem scales 1, 0.25, 0.5, 0.75, 1.5, 2"
    assert any(e.kind == "counter" for e in diag.evidence)
    assert "over 6 runs of accuracy_kernel (problem scales 1, 0.25" in render_markdown(diag)


def test_one_counter_run_says_why_in_the_prompt(tmp_path: Path):
    lc = load_config(REPO / "benchmarks" / "accuracy" / "optimas.yml")
    why = ("app.run takes no {scale}, so no size sweep; the traced run launched accuracy_kernel with 1 launch "
           "configuration")
    one = CounterPlan(source="one run", kernel="accuracy_kernel", runs=1, why=why)
    diag = analyze(lc, _inputs(tmp_path, one, ["1"]))
    assert diag.counter_selection is None and not any(e.kind == "counter" for e in diag.evidence)
    note = next(n for n in diag.notes if n.startswith("1 counter run of accuracy_kernel"))
    assert why in note
    files = {"main.cu": (REPO / "benchmarks" / "accuracy" / "main.cu").read_text()}
    user = build_prompt("accuracy", diag, files, "PC+IA+Roofline").user
    assert "counters (C): none for the kernels shown (1 counter run of accuracy_kernel" in user
    assert "launched accuracy_kernel with 1 launch configuration)" in user


def test_the_closed_loop_takes_code_versions_as_counter_runs(tmp_path: Path):
    # Mechanics only: four single runs stand for four versions of the kernel (they are real H200
    # counter runs of one version at four sizes, which differ as versions would).
    lc = load_config(REPO / "benchmarks" / "accuracy" / "optimas.yml")
    one = CounterPlan(source="one run", kernel="accuracy_kernel", runs=1, why="no size sweep")
    versions = [_inputs(tmp_path, one, [s], f"v{i}") for i, s in enumerate(["1", "0_5", "0_75", "2"])]
    inputs = versions[0]
    for after in versions[1:]:
        inputs = with_code_versions(after, inputs)
    assert inputs["counters"] == versions[-1]["counters"]  # this version's own run stays its own
    assert inputs["earlier_counters"] == [v["counters"][0] for v in versions[:-1]]
    diag = analyze(lc, inputs)
    assert diag.counter_selection and diag.counter_selection.runs == 4
    assert diag.counter_selection.source == "profiles of the closed loop's successive code versions of the kernel"
    # three versions are not enough: the note says so
    three = analyze(lc, with_code_versions(versions[2], with_code_versions(versions[1], versions[0])))
    assert three.counter_selection is None
    assert any(n.startswith("3 counter runs of accuracy_kernel") for n in three.notes)
    # a sweep is never mixed with other versions' runs
    sizes = _inputs(tmp_path, CounterPlan(source="sizes", kernel="accuracy_kernel", runs=6, scales=[1]), SCALES, "s")
    assert "earlier_counters" not in with_code_versions(sizes, inputs)
    assert "earlier_counters" not in with_code_versions(versions[0], sizes)


@pytest.mark.parametrize("args, run, profile, values", [
    ("--n=1048576", "--n={n}", "--n={n*scale}", {"n": 1048576}),
    ("-wA=320 -hA=320 -wB=640 -hB=320", "-wA={wA} -hA={hA} -wB={wB} -hB={hB}",
     "-wA={wA*scale} -hA={hA*scale} -wB={wB*scale} -hB={hB*scale}", {"wA": 320, "hA": 320, "wB": 640, "hB": 320}),
    ("8192 10000 10 100", "{arg1} {arg2} 10 {arg4}", "{arg1*scale} {arg2*scale} 10 {arg4*scale}",
     {"arg1": 8192, "arg2": 10000, "arg4": 100}),
    ("-n 4096 --iters 100 --seed 1234 --device=1 --block-size=256", "-n {n} --iters 100 --seed 1234 --device=1 "
     "--block-size=256", "-n {n*scale} --iters 100 --seed 1234 --device=1 --block-size=256", {"n": 4096}),
    ("--out=4096", "--out={arg1}", "--out={arg1*scale}", {"arg1": 4096}),  # {out} is Optimas's own placeholder
])
def test_init_turns_size_arguments_into_scaled_placeholders(args, run, profile, values):
    sizes = size_arguments(args)
    assert sizes and (sizes.run, sizes.profile, sizes.values) == (run, profile, values)


@pytest.mark.parametrize("args", ["", "input.txt", "-v 3 --device=0", "--iters=1000"])
def test_init_leaves_arguments_without_sizes_alone(args):
    assert size_arguments(args) is None


def test_init_writes_a_config_whose_profile_run_scales_the_sizes(tmp_path: Path):
    from runner.base.processes import render
    from runner.init.write import write_config
    from runner.profiling.agent import counter_scales

    (tmp_path / "k.cu").write_text("__global__ void k(float *x, int n) { }\nint main() { k<<<1, 1>>>(0, 1); }\n")
    text = write_config(tmp_path, tmp_path / "optimas.yml", run_args="--n=1024 --iters=5").text
    assert 'run: "{exe} --n={n} --iters=5"' in text and "configurations: {default: {n: 1024}}" in text
    assert 'profile_run: "{exe} --n={n*scale} --iters=5"' in text
    cfg = load_config(tmp_path / "optimas.yml").config
    assert counter_scales(cfg) == [0.25, 0.5, 0.75, 1.0, 1.5, 2.0]
    assert render(cfg.app.run, exe="a", **cfg.app.values("default")) == ["a", "--n=1024", "--iters=5"]
    assert render(cfg.app.profile_run, exe="a", scale=0.75, **cfg.app.values("default")) == ["a", "--n=768",
                                                                                           "--iters=5"]
