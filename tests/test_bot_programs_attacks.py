"""Attacks on a repository of several programs (bot/programs.py, runner/flows/scope.py, the GPU job's
selection): a pull request controls its files, their names, its commits' file lists and what its
builds print; the App's config is the default branch's. Each test passes when the App resists."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest
from markdown_it import MarkdownIt
from test_bot_end_to_end import deliver_and_work
from test_bot_programs import PROGRAMS, _changed, _ran, _remote, _summary

from bot.outcome import Edit, ProgramOutcome, ProgramsOutcome
from bot.programs import changed_texts
from bot.summary import program_lines
from runner.base.config import ConfigError, parse_config

EVIL = "evil.example"


def live_markdown(markdown: str) -> str:
    """The HTML that GitHub would render as more than text: code spans and blocks taken out."""
    html = MarkdownIt("commonmark", {"html": True}).render(markdown)
    return re.sub(r"<pre>.*?</pre>|<code>.*?</code>", "", html, flags=re.S)


def assert_inert(markdown: str) -> None:
    live = live_markdown(markdown)
    assert "@octocat" not in live, live  # a mention
    assert EVIL not in live, live  # a link or image
    assert "<img" not in live and "<h1>" not in live, live


# --- what the summary says: names from the pull request stay text ---------------------------------

EVIL_NAMES = [f"apps/probe_b/x` @octocat ![p](https://{EVIL}/p.png) <img src=https://{EVIL}/i> `.dat",
              "apps/probe_b/y\n\n# Owned @octocat\n.dat"]


@pytest.mark.parametrize("evil", EVIL_NAMES)
def test_a_changed_file_name_cannot_leave_its_code_span_in_a_programs_part(evil):
    outcome = ProgramsOutcome.of([("probe_b", ProgramOutcome("unproven", "not measured", "not measured",
                                                              changed=(evil,)))], [])
    assert_inert("\n".join(program_lines(outcome, lambda o: [])))


@pytest.mark.parametrize("evil", EVIL_NAMES)
def test_an_overlapping_edits_file_name_stays_text(evil):
    edit = Edit(evil, 1, 3, "", "")
    outcome = ProgramsOutcome.of([(n, ProgramOutcome("evaluated", "improvement", "faster", postable=True,
                                                     edits=(edit,))) for n in ("probe_a", "probe_b")], [])
    assert len(outcome.edits) == 1 and len(outcome.overlapping) == 1
    assert_inert("\n".join(program_lines(outcome, lambda o: [])))


def test_a_skipped_programs_why_naming_a_pull_requests_folder_stays_text():
    """In the Action the config is the pull request's: a workspace folder's name is in the why."""
    why = f"none of the 1 changed files is in b's workspace (w @octocat ![x](https://{EVIL}/x.png)) other than"
    outcome = ProgramsOutcome.of([("probe_a", ProgramOutcome("not run", "not run", "x"))], [("probe_b", why)])
    text = "\n".join(program_lines(outcome, lambda o: []))
    assert_inert(text)
    plain = "its files changed too, but only 1 program run per pull request (programs_per_pull_request)"
    outcome = replace(outcome, skipped=(("probe_b", plain),))
    assert f"- `probe_b`: {plain}" in "\n".join(program_lines(outcome, lambda o: []))  # plain words stay plain


@pytest.mark.parametrize("name", ["a`b", "a\nb", "@octocat", "a b", "../x", "a/b", "x" * 101])
def test_a_program_name_is_one_word_a_code_span_holds(name):
    with pytest.raises(ConfigError, match=r"programs\.0\.name"):
        parse_config(f"app: {{build: make}}\nprograms:\n  - {{name: {name!r}}}\n", "c.yml")


# --- reading the changed files, outside the sandbox -------------------------------------------------

KERNEL = "__global__ void secret_kernel(float* x) { x[0] = 1; }\n"


def test_changed_texts_reads_nothing_outside_the_checkout(tmp_path: Path):
    root = tmp_path / "work" / "src"
    root.mkdir(parents=True)
    (tmp_path / "work" / "other.cu").write_text(KERNEL)  # beside the checkout: another job's, the worker's
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "k.cu").write_text(KERNEL)
    (root / "lnk").symlink_to(tmp_path / "outside")  # a folder link the pull request committed
    touched = ["../other.cu", "../../outside/k.cu", str(tmp_path / "outside" / "k.cu"), "lnk/k.cu",
               "src/../../other.cu"]
    assert changed_texts(root, touched) == []


def test_changed_texts_skips_what_is_no_regular_file(tmp_path: Path):
    root = tmp_path / "src"
    root.mkdir()
    os.mkfifo(root / "fifo.cu")  # would block a reader forever
    (root / "dir.cu").mkdir()
    (root / "zero.cu").symlink_to("/dev/zero")
    (root / "ok.cu").write_text(KERNEL)
    assert changed_texts(root, ["fifo.cu", "dir.cu", "zero.cu", "gone.cu", "ok.cu"]) == [KERNEL]


def test_a_huge_sparse_changed_file_is_not_read_whole(tmp_path: Path):
    """The program's run may leave a sparse file of up to the disk limit (RLIMIT_FSIZE, 32 GiB) in
    place of a changed source: it takes no blocks, so the sandbox's disk limit does not see it, and
    the worker, unsandboxed, would read all of it. Under a 1.5 GiB address space it must still pass."""
    root = tmp_path / "src"
    root.mkdir()
    with open(root / "k.cu", "wb") as f:
        f.write(KERNEL.encode())
        f.truncate(8 << 30)
    code = textwrap.dedent(f"""
        import resource, sys
        from pathlib import Path
        from bot.programs import changed_texts
        resource.setrlimit(resource.RLIMIT_AS, (3 << 29, 3 << 29))
        texts = changed_texts(Path({str(root)!r}), ["k.cu"])
        assert len(texts) == 1 and texts[0].startswith({KERNEL!r}) and len(texts[0]) <= 1 << 20, len(texts[0])
    """)
    r = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parent.parent,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]


def test_many_changed_files_are_read_within_one_budget(tmp_path: Path):
    """Each text is parsed for kernels by the worker (runner.scan.cuda_source.functions, which takes
    tens of seconds on a dense megabyte): thousands of changed headers must not each cost that."""
    root = tmp_path / "src"
    root.mkdir()
    names = []
    for i in range(300):
        (root / f"h{i}.cuh").write_text(KERNEL * 10_000)  # 540 KB each
        names.append(f"h{i}.cuh")
    assert sum(len(t) for t in changed_texts(root, names)) <= 1 << 20


# --- end to end: the loopback GitHub, real RQ workers, real builds in the sandbox --------------------

@pytest.mark.parametrize("evil", EVIL_NAMES[:1])
@pytest.mark.slow
@pytest.mark.skipif(not (shutil.which("git") and shutil.which("nvcc")), reason="git and nvcc needed")
def test_the_summary_shows_a_changed_file_name_as_text(monkeypatch, tmp_path: Path, evil: str):
    gh, _, job = deliver_and_work(monkeypatch, _remote(tmp_path), config=PROGRAMS,
                                  pr_files=_changed("apps/probe_b/probe_kernels.cu", *EVIL_NAMES))
    result = job.latest_result()
    assert result is not None and result.type.name == "SUCCESSFUL", getattr(result, "exc_string", "")
    summary = _summary(gh)
    assert _ran(summary) == ["probe_b"] and "Run because the pull request changes what it reads" in summary
    assert_inert(summary)
    for check in gh.check_runs.values():
        assert_inert(check["output"]["title"] + "\n" + check["output"]["summary"])


@pytest.mark.slow
@pytest.mark.skipif(not (shutil.which("git") and shutil.which("nvcc")), reason="git and nvcc needed")
def test_the_operators_cap_holds_and_a_long_history_costs_twenty_commit_reads(monkeypatch, tmp_path: Path):
    """The repository asks for 20 programs a pull request; the operator allows 1. A pull request of
    250 commits changing all three programs: one runs (the one its newest commit changed), the others
    are named as skipped, and no more than 20 of its commits are read."""
    monkeypatch.setenv("OPTIMAS_MAX_PROGRAMS", "1")
    shas = [f"{i:040x}" for i in range(1, 251)]

    def commits(gh) -> None:
        gh.pr_commits[2] = shas
        gh.commit_files = {sha: ["apps/probe_a/probe_kernels.cu"] for sha in shas}
        gh.commit_files[shas[-1]] = ["apps/probe_c/probe_kernels.cu"]
        gh.commit_files[shas[-2]] = ["common/shared.cuh"]

    gh, _, job = deliver_and_work(monkeypatch, _remote(tmp_path), config=PROGRAMS + "programs_per_pull_request: 20\n",
                                  pr_files=_changed("apps/probe_a/probe_kernels.cu", "common/shared.cuh",
                                                    "apps/probe_c/probe_kernels.cu"), prepare=commits)
    summary = _summary(gh)
    assert _ran(summary) == ["probe_c"], summary
    assert summary.count("its files changed too, but only 1 program run per pull request") == 2
    reads = [r for r in gh.requests if r["path"].rsplit("/", 1)[-1] in set(shas)]
    assert 1 <= len(reads) <= 20


def _escape_script(marker: Path) -> str:
    return textwrap.dedent(f"""\
        # the pull request's build step: it tries to write outside the job's folder
        mkdir -p {marker.parent} 2>/dev/null
        echo owned > {marker} 2>/dev/null
        echo owned > "$HOME/../../control/owned" 2>/dev/null
        exit 0
        """)


@pytest.mark.slow
@pytest.mark.skipif(not (shutil.which("git") and shutil.which("nvcc") and shutil.which("bwrap")),
                    reason="git, nvcc and bwrap needed")
def test_the_scope_build_runs_in_the_sandbox_and_one_failing_program_is_said(monkeypatch, tmp_path: Path):
    """probe_a's build runs a script of the pull request's before nvcc: the scope build (which tells
    that probe_a does not read the changed files) is sandboxed like every build, so it writes
    nothing outside the job's folder. probe_b names a source that is not there: its failure is one
    part of the summary, probe_c's result another, and the job succeeds."""
    marker = tmp_path / "outside" / "marker"
    config = PROGRAMS.replace(
        "  - {name: probe_a, workdir: apps/probe_a,",
        "  - {name: probe_a, workdir: apps/probe_a, build: 'sh ../../evil.sh && nvcc -O3 -arch={arch} {lineinfo} "
        "-o {exe} probe_kernels.cu',").replace(
        "  - {name: probe_b, workdir: apps/probe_b,", "  - {name: probe_b, workdir: apps/probe_b, sources: [nope.cu],")
    remotes, _ = _remote(tmp_path)
    work = tmp_path / "work"  # make_remote's repository: the script committed at the pull request's head
    (work / "evil.sh").write_text(_escape_script(marker))
    for args in (["add", "evil.sh"], ["commit", "-qm", "build step"]):
        subprocess.run(["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args], cwd=work, check=True)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=work, check=True, capture_output=True,
                          text=True).stdout.strip()
    subprocess.run(["git", "fetch", "-q", str(work), "+HEAD:refs/pull/2/head"],
                   cwd=remotes / "Codertocat" / "Hello-World.git", check=True)
    gh, _, job = deliver_and_work(monkeypatch, (remotes, head), config=config,
                                  pr_files=_changed("apps/probe_b/probe_kernels.cu", "apps/probe_c/probe_kernels.cu"))
    result = job.latest_result()
    assert result is not None and result.type.name == "SUCCESSFUL", getattr(result, "exc_string", "")
    assert not marker.exists() and not marker.parent.exists()
    summary = _summary(gh)
    # the scope build ran the script to its end (`&&`): it told probe_a's files, none of them changed
    assert "- `probe_a`: none of the 2 changed files is one probe_a's build compiles or includes" in summary
    assert _ran(summary) == ["probe_b", "probe_c"]
    assert "#### `probe_b`: probe_b could not be run" in summary and "nope.cu (app.sources) not found" in summary
    assert result.return_value["verdict"] == "probe_b: failed; probe_c: not measured"
