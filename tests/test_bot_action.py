"""The GitHub Action (issue #16): action.yml and the example workflow pass real linters, and the
action's entry point runs the pipeline on a checked-out pull request and publishes through the
App's publisher with a workflow token, against the loopback GitHub API."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO
from github_server import FakeGitHub
from test_bot_end_to_end import PROBE_PR_FILES

BIN = Path(sys.executable).parent
TOKEN = "ghs_" + "WorkflowTok3n0123456789abcdefABCDEF01"[:36]


@pytest.mark.parametrize("schema, path", [("vendor.github-actions", "action.yml"),
                                          ("vendor.github-workflows", "examples/workflows/optimas.yml")])
def test_the_action_and_the_example_workflow_pass_the_linters(schema: str, path: str):
    r = subprocess.run([str(BIN / "check-jsonschema"), "--builtin-schema", schema, path], capture_output=True,
                       text=True, cwd=REPO)
    assert r.returncode == 0, r.stdout + r.stderr
    # zizmor audits workflows and actions for security: injection, unpinned actions, permissions...
    z = subprocess.run([str(BIN / "zizmor"), "--offline", "--no-progress", path], capture_output=True, text=True,
                       cwd=REPO)
    assert z.returncode == 0, z.stdout + z.stderr


def _workspace(tmp_path: Path) -> tuple[Path, str]:
    """The demo app as a repository checked out at a pull request's head."""
    ws = tmp_path / "ws"
    shutil.copytree(REPO / "examples", ws / "examples")
    shutil.copy(REPO / "config.yml", ws / ".optimas.yml")
    git = ["git", "-C", str(ws), "-c", "user.name=t", "-c", "user.email=t@example.org"]
    subprocess.run([*git[:3], "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "pr head"], check=True)
    head = subprocess.run([*git[:3], "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    return ws, head


def _action(tmp_path: Path, gh: FakeGitHub, ws: Path, event: dict, *args: str) -> tuple[subprocess.CompletedProcess,
                                                                                             dict[str, str], str]:
    (tmp_path / "event.json").write_text(json.dumps(event))
    gh.writer = "github-actions[bot]"  # a workflow's GITHUB_TOKEN writes as the Actions bot
    out, summary = tmp_path / "output.txt", tmp_path / "summary.md"
    out.unlink(missing_ok=True)
    summary.unlink(missing_ok=True)
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")},
           "GITHUB_TOKEN": TOKEN, "GITHUB_EVENT_PATH": str(tmp_path / "event.json"), "GITHUB_REPOSITORY": "octo/probe",
           "GITHUB_API_URL": gh.url, "GITHUB_WORKSPACE": str(ws), "GITHUB_OUTPUT": str(out),
           "GITHUB_STEP_SUMMARY": str(summary), "GITHUB_RUN_ID": "77", "GITHUB_RUN_ATTEMPT": "2",
           "RUNNER_TEMP": str(tmp_path / "runner"),
           "OPTIMAS_GITHUB_WRITE_INTERVAL_S": "0", "OPTIMAS_GITHUB_REQUEST_INTERVAL_S": "0"}
    r = subprocess.run([sys.executable, "-m", "bot.action", *args], capture_output=True, text=True, cwd=ws, env=env,
                       timeout=300)
    outputs = dict(line.split("=", 1) for line in out.read_text().splitlines()) if out.exists() else {}
    return r, outputs, summary.read_text() if summary.exists() else ""


@pytest.mark.slow
def test_the_action_publishes_the_run_on_the_pull_request(tmp_path: Path):
    ws, head = _workspace(tmp_path)
    with FakeGitHub() as gh:
        gh.add_pull("octo/probe", 2, head)
        gh.pr_files[2] = PROBE_PR_FILES
        event = {"action": "labeled", "label": {"name": "optimas"},
                 "pull_request": {"number": 2, "head": {"sha": head, "repo": {"full_name": "octo/probe"}}}}
        r, outputs, summary = _action(tmp_path, gh, ws, event)
        assert r.returncode == 0, r.stdout + r.stderr
        (check,) = gh.check_runs.values()
        assert check["head_sha"] == head and check["external_id"] == "action-77-2"
        # no GPU here validates and times the candidate: no suggestion, a neutral check, the diff as text
        assert check["status"] == "completed" and check["conclusion"] == "neutral"
        assert gh.reviews == []
        summaries = [c for c in gh.comments if "optimas:summary" in c["body"]]
        assert len(summaries) == 1 and f"### Optimas on `{head[:7]}`" in summaries[0]["body"]
        assert "+__global__ void matmul(const float* __restrict__ A" in summaries[0]["body"]
        assert "```suggestion" not in summaries[0]["body"]
        assert all(q["auth"] == f"token {TOKEN}" for q in gh.requests)
    assert outputs["verdict"] == "not measured" and outputs["run-id"] and outputs["improvement"] == ""
    assert float(outputs["ear-coverage"]) > 0 and outputs["ear-hallucinations"] == "0"
    assert (tmp_path / "runner" / "optimas-runs" / outputs["run-id"] / "analysis" / "diagnostics.md").exists()
    assert summary.startswith(f"### Optimas on `{head[:7]}`") and "EAR: coverage" in summary
    assert "<summary>Evidence" in summary and "- R1 [matmul]" in summary  # the evidence itself, as text:
    assert "```text\n# Diagnostics" in summary  # it quotes the pull request's code
    assert TOKEN not in r.stdout + r.stderr + summary


@pytest.mark.slow
def test_the_failure_policy_and_the_inputs_it_refuses(tmp_path: Path):
    ws, head = _workspace(tmp_path)
    event = {"pull_request": {"number": 2, "head": {"sha": head, "repo": {"full_name": "octo/probe"}}}}
    with FakeGitHub() as gh:
        gh.add_pull("octo/probe", 2, head)
        r, outputs, _ = _action(tmp_path, gh, ws, event, "--publish", "false", "--fail-on", "no-improvement")
        assert not gh.requests  # publish: false writes nothing on the pull request
    assert r.returncode == 1 and "::error title=Optimas::no validated improvement (not measured" in r.stdout
    # workflow commands are stopped from the first line (the code under test decides some of what is
    # printed); our own annotation resumes them for its line only
    lines = r.stdout.splitlines()
    token = lines[0].removeprefix("::stop-commands::")
    assert lines[0].startswith("::stop-commands::") and len(token) == 32
    at = next(i for i, line in enumerate(lines) if line.startswith("::error"))
    assert lines[at - 1] == f"::{token}::" and lines[at + 1] == lines[0]
    assert outputs["verdict"] == "not measured"  # the outputs are set before the step fails
    with FakeGitHub() as gh:
        r, outputs, _ = _action(tmp_path, gh, ws, {"action": "opened", "issue": {"number": 3}})
    assert r.returncode == 2 and "not about a pull request" in r.stdout and not outputs
    # a fork's pull request is never run, whatever the workflow's `if:` says
    fork = {"pull_request": {"number": 2, "head": {"sha": head, "repo": {"full_name": "mallory/probe"}}}}
    runs = sorted((tmp_path / "runner" / "optimas-runs").iterdir())
    with FakeGitHub() as gh:
        gh.add_pull("octo/probe", 2, head)
        r, outputs, _ = _action(tmp_path, gh, ws, fork)
        assert not gh.requests and sorted((tmp_path / "runner" / "optimas-runs").iterdir()) == runs
    assert r.returncode == 2 and "comes from mallory/probe, not octo/probe" in r.stdout and not outputs
    # nor on a comment, whose event names the pull request but not where its branch lives: GitHub is
    # asked (the check read the event alone, and a comment's workflow ran the fork; an attacker's pass)
    comment = {"action": "created", "issue": {"number": 2, "pull_request": {"url": "x"}}, "comment": {"body": "go"}}
    with FakeGitHub() as gh:
        gh.add_pull("octo/probe", 2, head, head_repo="mallory/probe")
        r, outputs, _ = _action(tmp_path, gh, ws, comment)
        assert [q["method"] for q in gh.requests] == ["GET"] and "/pulls/2" in gh.requests[0]["path"]
        assert sorted((tmp_path / "runner" / "optimas-runs").iterdir()) == runs
    assert r.returncode == 2 and "comes from mallory/probe, not octo/probe" in r.stdout and not outputs
    bad = subprocess.run([sys.executable, "-m", "bot.action", "--fail-on", "sometimes"], capture_output=True,
                         text=True)
    assert bad.returncode == 2 and "invalid choice: 'sometimes'" in bad.stderr
    # the pull request's config may not send the workflow's key elsewhere: the base-url input does
    cfg = ws / ".optimas.yml"
    cfg.write_text(cfg.read_text() + "\nllm: {backend: openai, model: m, base_url: 'http://attacker.example/v1'}\n")
    with FakeGitHub() as gh:
        gh.add_pull("octo/probe", 2, head)
        r, outputs, _ = _action(tmp_path, gh, ws, event, "--publish", "false")
    assert r.returncode == 2 and "llm.base_url may not be set in the repository's config" in r.stdout + r.stderr


def test_the_failure_policy_reads_the_evaluations_own_verdicts():
    """fail-on regression acts on the verdict the evaluation writes for a slower candidate (its
    first version compared with a name the evaluation never writes)."""
    from typing import get_args

    from bot.action import policy_failure
    from bot.outcome import ProgramOutcome
    from runner.evaluation.stage import EvaluationResult

    verdicts = get_args(EvaluationResult.model_fields["verdict"].annotation)
    assert "slower" in verdicts
    for verdict in verdicts:
        outcome = ProgramOutcome("evaluated", verdict, verdict, postable=verdict == "improvement")
        improved = verdict == "improvement"
        assert (policy_failure("regression", outcome, improved) is not None) == (verdict == "slower"), verdict
        assert (policy_failure("no-improvement", outcome, improved) is not None) == (verdict != "improvement")
        assert policy_failure("error", outcome, improved) is None


@pytest.mark.slow
def test_a_comment_or_review_planted_with_the_actions_markers_is_not_taken_for_its_own(tmp_path: Path):
    """Anyone may comment on a public pull request. A comment holding the summary's marker must not
    be edited as the summary, and a review holding this run's tag (the run id is on the Actions
    page while the job runs) must not stand for the run's review: the Action's writes are by
    github-actions[bot], which it knows although its GITHUB_TOKEN may not read GET /user."""
    from bot.publish import MARKER, MARKER_REVIEW, marker

    ws, head = _workspace(tmp_path)
    with FakeGitHub() as gh:
        gh.add_pull("octo/probe", 2, head)
        gh.pr_files[2] = PROBE_PR_FILES
        gh.comments.append({"id": 1, "issue": 2, "body": f"{MARKER}\nfake speedups, see https://evil.example",
                            "user": {"login": "mallory"}, "url": f"{gh.url}/repos/octo/probe/issues/comments/1"})
        gh.reviews.append({"id": 1, "commit_id": head, "body": f"looks fine\n{MARKER_REVIEW}\n"
                           f"{marker('review', 'action-77-2')}", "event": "COMMENT", "comments": [],
                           "state": "COMMENTED", "user": {"login": "mallory"}})
        event = {"action": "labeled", "label": {"name": "optimas"},
                 "pull_request": {"number": 2, "head": {"sha": head, "repo": {"full_name": "octo/probe"}}}}
        r, _, _ = _action(tmp_path, gh, ws, event)
        assert r.returncode == 0, r.stdout + r.stderr
        assert gh.comments[0]["body"].endswith("https://evil.example")  # mallory's comment untouched
        (ours,) = [c for c in gh.comments if c["user"]["login"] == "github-actions[bot]" and MARKER in c["body"]]
        assert f"### Optimas on `{head[:7]}`" in ours["body"]
        # no GPU here proves a candidate, so the action posted no review; a validated one (its outcome
        # as the evaluation gives it on a GPU) is published under the same run key past mallory's
        from bot.github_client import token_author, token_client
        from bot.outcome import Edit, ProgramOutcome
        from bot.publish import Publisher, publish_outcome

        client = token_client(TOKEN, gh.url, seconds_between_writes=0, seconds_between_requests=0)
        pub = Publisher(client, "octo/probe", 2, author=token_author(client))
        edit = Edit("examples/h200-probe/probe_kernels.cu", 31, 31,
                    "__global__ void matmul(const float* __restrict__ A, const float* B, float* C, int n){",
                    "validated")
        outcome = ProgramOutcome("evaluated", "improvement", "Optimas: +10%", postable=True, edits=(edit,))
        check = pub.start_check(head, external_id="action-77-2")
        assert publish_outcome(pub, check, outcome, head, "summary", "action-77-2") == 1
        (review,) = [v for v in gh.reviews if v["user"]["login"] == "github-actions[bot]"]
        assert "```suggestion" in review["comments"][0]["body"]


SHIPPED = """EDIT file=probe_kernels.cu lines=31-31 cites=S1,R1
WHY: matmul: shipped by the pull request itself (S1, R1).
```cuda
__global__ void matmul(const float* __restrict__ A, const float* __restrict__ B, float* C, int n){ /* PR-SHIPPED */
```
"""


@pytest.mark.slow
def test_the_pull_request_cannot_supply_the_models_answer(tmp_path: Path):
    """A config naming the replay backend and an answers folder in the checkout would have the
    pull request write the answer its own run asks for; the workflow's inputs choose the model
    (offline where they name none), and its replay folder must lie outside the checkout."""
    ws, head = _workspace(tmp_path)
    event = {"pull_request": {"number": 2, "head": {"sha": head, "repo": {"full_name": "octo/probe"}}}}
    operator = tmp_path / "operator-answers"
    operator.mkdir()
    with FakeGitHub() as gh:
        gh.add_pull("octo/probe", 2, head)
        # the operator's own replay folder, empty: the error names the prompt's hash
        r, _, _ = _action(tmp_path, gh, ws, event, "--publish", "false", "--backend", "replay",
                          "--replay-dir", str(operator))
    key = re.search(r"prompt hash ([0-9a-f]{64})", r.stdout + r.stderr).group(1)
    # the pull request ships the answer to that prompt, and a config pointing the replay backend at it
    (ws / "answers").mkdir()
    (ws / "answers" / f"{key}.txt").write_text(SHIPPED)
    cfg = ws / ".optimas.yml"
    cfg.write_text(cfg.read_text() + "\nllm: {backend: replay, replay_dir: answers}\n")
    with FakeGitHub() as gh:
        gh.add_pull("octo/probe", 2, head)
        r, outputs, summary = _action(tmp_path, gh, ws, event, "--publish", "false")
    assert r.returncode == 0, r.stdout + r.stderr
    run = tmp_path / "runner" / "optimas-runs" / outputs["run-id"]
    call = json.loads((run / "llm" / "calls.jsonl").read_text().splitlines()[0])
    assert call["backend"] == "offline" and "PR-SHIPPED" not in (run / "llm" / "answer-1.txt").read_text()
    assert "`llm.backend`, `llm.replay_dir`: the model and its answers are chosen by whoever runs Optimas" in summary
    # the workflow's replay folder inside the checkout is refused; outside it, its answers are used
    with FakeGitHub() as gh:
        gh.add_pull("octo/probe", 2, head)
        r, outputs, _ = _action(tmp_path, gh, ws, event, "--publish", "false", "--backend", "replay",
                                "--replay-dir", str(ws / "answers"))
        assert r.returncode == 2 and "inside the checkout" in r.stdout and not outputs
        (operator / f"{key}.txt").write_text(SHIPPED.replace("PR-SHIPPED", "OPERATOR-RECORDED"))
        r, outputs, _ = _action(tmp_path, gh, ws, event, "--publish", "false", "--backend", "replay",
                                "--replay-dir", str(operator))
    assert r.returncode == 0, r.stdout + r.stderr
    run = tmp_path / "runner" / "optimas-runs" / outputs["run-id"]
    assert "OPERATOR-RECORDED" in (run / "llm" / "answer-1.txt").read_text()
