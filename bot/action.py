"""The GitHub Action's entry point (action.yml): Optimas on the pull request head a self-hosted GPU
runner has checked out, published through the App's publisher with the workflow's token (a check
run, one review with suggestions, one summary comment), a job summary, and step outputs.

    python -m bot.action --config .optimas.yml [--backend B] [--model M] [--diagnostics D]
                         [--publish true|false] [--fail-on error|regression|no-improvement]

It reads what a workflow run provides: GITHUB_EVENT_PATH (the pull request), GITHUB_REPOSITORY,
GITHUB_API_URL, GITHUB_STEP_SUMMARY, GITHUB_OUTPUT, and the token in GITHUB_TOKEN. Model API keys
come from the environment only (OPENAI_API_KEY, GEMINI_API_KEY), as for the CLI.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import secrets
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from bot.github_client import token_author, token_client
from bot.outcome import Outcome, ProgramOutcome, ProgramsOutcome
from bot.pipeline import pipeline
from bot.policy import refuse_key_redirection, repository_model_choices, with_operator_model
from bot.programs import programs_to_run, run_each
from bot.publish import Publisher, code_block, publish_outcome
from bot.summary import summary_text
from runner.base.config import BACKENDS, DIAGNOSTICS, REPOSITORY_CONFIG, LoadedConfig
from runner.base.errors import ConfigError, OptimasError
from runner.base.processes import child_environment
from runner.base.redaction import describe, redact, register_secret

if TYPE_CHECKING:
    from runner.flows.optimize import Optimization

log = logging.getLogger(__name__)

FAIL_ON = ("error", "regression", "no-improvement")


class ActionError(OptimasError):
    exit_code = 2


def pull_request(event: dict) -> tuple[int, str | None]:
    """The pull request number and head SHA of a `pull_request` event (a comment on a pull request
    names no head: None)."""
    if "pull_request" in event:
        pr = event["pull_request"]
        return int(pr["number"]), pr["head"]["sha"]
    issue = event.get("issue") or {}
    if issue.get("pull_request"):
        return int(issue["number"]), None
    raise ActionError("the workflow's event is not about a pull request: run the action on `pull_request` "
                      "(for example `labeled`) or on comments on pull requests")


def refuse_fork(event: dict, repo: str) -> None:
    """ActionError for a pull request from a fork: its build and program would run on this
    self-hosted runner, where they could read the workflow's secrets from the Action's own process
    and leave state for later jobs (the example workflow's `if:` skips forks; this holds whatever
    a workflow says)."""
    head_repo = ((event.get("pull_request") or {}).get("head") or {}).get("repo") or {}
    name = head_repo.get("full_name")
    if "pull_request" in event and name != repo:
        raise ActionError(f"pull request #{event['pull_request'].get('number')} comes from "
                          f"{'a deleted fork' if name is None else name}, not {repo}: its code would run on this "
                          "self-hosted runner beside the workflow's secrets; the Action runs only pull requests "
                          "whose branch is in the repository itself")


def _comment_pull_request(event: dict, repo: str, pr: int, token: str, env: dict[str, str]) -> tuple[dict, str]:
    """A comment's event with the pull request it is on, as GitHub has it now (the comment names the
    pull request, not where its branch lives: without this a fork's pull request ran on the
    comment of anyone; an attacker's pass), and its head."""
    if not token:
        raise ActionError("a comment's workflow needs `github-token` (the workflow's GITHUB_TOKEN by default): the "
                          "Action asks GitHub where the pull request's branch lives before it runs its code")
    api = token_client(token, env.get("GITHUB_API_URL", "https://api.github.com"))
    pull = api.get_repo(repo, lazy=True).get_pull(pr)
    origin = {"full_name": pull.head.repo.full_name} if pull.head.repo is not None else None
    return {**event, "pull_request": {"number": pr, "head": {"sha": pull.head.sha, "repo": origin}}}, pull.head.sha


def outputs(result: Optimization, outcome: Outcome) -> dict[str, str]:
    """The step's outputs: verdict, improvement and its interval, EAR scores, run id and folder."""
    out = {"verdict": outcome.verdict, "run-id": result.run.id, "run-dir": str(result.run.path),
           "improvement": "", "ci-low": "", "ci-high": ""}
    if result.loop is not None:
        kept = next((it for it in result.loop.iterations if it.iteration == result.loop.best), None)
        if result.loop.cumulative_improvement is not None:
            out["improvement"] = f"{result.loop.cumulative_improvement:.6f}"
        if kept is not None and kept.ci_low is not None:
            out["ci-low"], out["ci-high"] = f"{kept.ci_low:.6f}", f"{kept.ci_high:.6f}"
    elif result.iteration.result is not None and result.iteration.result.timing is not None:
        r = result.iteration.result.timing.result
        out["improvement"], out["ci-low"], out["ci-high"] = (f"{r.improvement:.6f}", f"{r.ci_low:.6f}",
                                                             f"{r.ci_high:.6f}")
    ear = outcome.ear if isinstance(outcome, ProgramOutcome) else None
    for name in ("coverage", "localization", "directional"):
        value = getattr(ear, name, None) if ear is not None else None
        out[f"ear-{name}"] = "" if value is None else f"{value:.4f}"
    out["ear-hallucinations"] = "" if ear is None else str(ear.hallucinations.count)
    return out


def policy_failure(fail_on: str, outcome: Outcome, improved: bool) -> str | None:
    """Why the step fails under the failure policy, or None. `improved`: a validated candidate is
    significantly faster (a closed loop kept one, or the one evaluated candidate's verdict)."""
    verdict = outcome.verdict
    if fail_on in ("regression", "no-improvement") and verdict == "slower":
        return "the validated candidate is slower than the original (fail-on: regression)"
    if fail_on == "no-improvement" and not improved:
        return f"no validated improvement ({verdict}; fail-on: no-improvement)"
    return None


def _run_programs(lc: LoadedConfig, program: str, pub: Publisher | None, workspace: Path, runs: Path,
                  diagnostics: str | None) -> tuple[Optimization | None, Outcome]:
    """The pipeline on the config's program, or, where it lists several, on the one the `program`
    input names, else on those whose files the pull request changes (GitHub lists them; at most
    programs_per_pull_request): the first program's result (None when none ran) and the outcome."""
    if program or not lc.program_names():
        return pipeline(lc.for_program(program or None), runs, diagnostics)
    if pub is None:
        raise ConfigError(lc.path, [f"programs: lists {len(lc.program_names())} programs; set the action's "
                                    "`program` input to one of them, or let it publish (the pull request's changed "
                                    "files then choose)"])
    chosen, skipped, _ = programs_to_run(lc, pub.changed_paths(), workspace, pub.paths_newest_first)
    if not chosen:
        return None, ProgramOutcome.not_run(lc.program_names(), skipped)
    results: list[Optimization] = []

    def run_one(one: LoadedConfig) -> ProgramOutcome:
        result, outcome = pipeline(one, runs, diagnostics)
        results.append(result)
        return outcome

    outcomes = run_each(chosen, run_one, lambda: None)
    return results[0], ProgramsOutcome.of(outcomes, skipped)


def _write_lines(path: str | None, lines: list[str]) -> None:
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")


def _replay_dir(value: str, workspace: Path) -> str | None:
    """The workflow's answers folder for the replay backend, or None: absolute and outside the
    checkout, which the pull request writes (answers it shipped would be posted as the model's).
    The pull request's build runs as the runner's user before the model is asked, so the folder
    must also be one that user cannot write (the docs say so; it is not checked here)."""
    if not value:
        return None
    path = Path(value)
    if not path.is_absolute() or not path.is_dir():
        raise ActionError(f"replay-dir {value!r}: expected the absolute path of an existing folder of recorded answers")
    real, checkout = path.resolve(), workspace.resolve()
    if real == checkout or checkout in real.parents:
        raise ActionError(f"replay-dir {value!r}: inside the checkout, which the pull request writes; keep the "
                          "recorded answers outside it")
    return str(real)


def _checked_out_head(workspace: Path) -> str | None:
    r = subprocess.run(["git", "-C", str(workspace), "rev-parse", "HEAD"], capture_output=True, text=True,
                       env=child_environment())  # not the workflow's token
    return r.stdout.strip() if r.returncode == 0 else None


def _event(env: dict[str, str], token: str) -> tuple[int, str | None, str]:
    """The workflow's pull request (a comment's, as GitHub has it now): its number, head (None:
    not named) and repository; a fork's pull request is refused."""
    event_path = env.get("GITHUB_EVENT_PATH")
    if not event_path or not Path(event_path).is_file():
        raise ActionError("GITHUB_EVENT_PATH names no event file: run this inside a GitHub Actions workflow")
    event = json.loads(Path(event_path).read_text())
    pr, head = pull_request(event)
    repo = env.get("GITHUB_REPOSITORY", "")
    if "pull_request" not in event:
        event, head = _comment_pull_request(event, repo, pr, token, env)
    refuse_fork(event, repo)
    return pr, head, repo


def _operator_config(args: argparse.Namespace, workspace: Path) -> tuple[LoadedConfig, list[str]]:
    """The repository's config with the workflow's model (its own choices refused or replaced: those
    replaced are returned), checked as a run needs it."""
    from runner.base.config import load_config
    from runner.base.config_checks import path_problems, semantic_problems

    config = args.config if args.config.is_absolute() else workspace / args.config
    if not config.is_file():
        raise ConfigError(config, ["not found: the action's `config` input names the repository's Optimas config"])
    lc = load_config(config)
    refuse_key_redirection(lc)  # the config comes from the pull request; the key is the workflow's
    ignored = repository_model_choices(lc)
    lc = with_operator_model(lc, args.backend, args.model, _replay_dir(args.replay_dir, workspace), args.base_url)
    problems = semantic_problems(lc.config) + [p for one in lc.each_program() for p in path_problems(one)]
    if problems:
        raise ConfigError(config, problems)
    return lc, ignored


def _publisher(env: dict[str, str], token: str, repo: str, pr: int) -> Publisher:
    # GitHub's pacing for writes, as the App keeps it (the tests' loopback server needs none)
    pacing = {"seconds_between_writes": float(env.get("OPTIMAS_GITHUB_WRITE_INTERVAL_S", 1.0)),
              "seconds_between_requests": float(env.get("OPTIMAS_GITHUB_REQUEST_INTERVAL_S", 0.25))}
    client = token_client(token, env.get("GITHUB_API_URL", "https://api.github.com"), **pacing)
    return Publisher(client, repo, pr, author=token_author(client))


def run(args: argparse.Namespace, env: dict[str, str]) -> int:
    token = env.get("GITHUB_TOKEN", "")
    if token:
        register_secret(token)
    pr, head, repo = _event(env, token)
    if args.publish and not token:
        raise ActionError("publishing needs a token: pass `github-token` (the workflow's GITHUB_TOKEN by default), "
                          "or set `publish: false`")
    workspace = Path(env.get("GITHUB_WORKSPACE") or ".")
    lc, ignored = _operator_config(args, workspace)
    pub = _publisher(env, token, repo, pr) if args.publish else None
    if pub:
        head = head or pub.head_sha()
    analysed = _checked_out_head(workspace) or head or ""
    # one key per workflow run and attempt: a re-run gets a check run and review of its own
    run_key = f"action-{env.get('GITHUB_RUN_ID', 'local')}-{env.get('GITHUB_RUN_ATTEMPT', '1')}"
    check = pub.start_check(analysed, external_id=run_key) if pub else None
    try:
        result, outcome = _run_programs(lc, args.program, pub, workspace,
                                        Path(env.get("RUNNER_TEMP") or workspace) / "optimas-runs", args.diagnostics)
    except Exception as e:
        if pub and check is not None:
            pub.complete_check(check, "failure", "Optimas failed", code_block(describe(e)))
        raise
    if isinstance(outcome, ProgramOutcome):
        outcome = replace(outcome, model_ignored=tuple(ignored))
    elif outcome.kind == "programs":  # its summary shows the notes of the programs' own outcomes
        outcome = replace(outcome, programs=tuple((name, replace(o, model_ignored=tuple(ignored)))
                                                  for name, o in outcome.programs))
    summary = summary_text(outcome, analysed, False)
    if pub:
        moved = head is not None and analysed != head
        if moved:
            summary += (f"\n\nThe checkout (`{analysed[:7]}`) is not the pull request's head (`{head[:7]}`): "
                        "no suggestions were posted. Check out the head: actions/checkout with `ref` set to the "
                        "pull request's head SHA.")
        publish_outcome(pub, check, outcome, analysed, summary, run_key, suggest=not moved)
    if result is None:  # the pull request changes none of the programs' files: nothing ran (published above)
        _write_lines(env.get("GITHUB_STEP_SUMMARY"), [summary])
        _write_lines(env.get("GITHUB_OUTPUT"), [f"verdict={outcome.verdict}"])
        print(summary)
        return 0
    return _report(args.fail_on, env, result, outcome, summary)


def _report(fail_on: str, env: dict[str, str], result: Optimization, outcome: Outcome, summary: str) -> int:
    """The job summary (with the evidence the model was shown), the step's outputs, and the exit
    status under the failure policy (an error annotation where it fails)."""
    out = outputs(result, outcome)
    evidence = result.run.path / "analysis" / "diagnostics.md"
    # the evidence quotes the pull request's code (kernel names, source lines): shown as text
    details = (["", "<details><summary>Evidence (R*, S*, C*, L*: what the model was shown)</summary>", "",
                code_block(evidence.read_text()), "", "</details>"] if evidence.is_file() else [])
    _write_lines(env.get("GITHUB_STEP_SUMMARY"), [summary, *details, "", f"Run folder: `{out['run-dir']}`"])
    _write_lines(env.get("GITHUB_OUTPUT"), [f"{k}={v}" for k, v in out.items()])
    print(summary)
    improved = outcome.postable if result.loop is not None else outcome.verdict == "improvement"
    failure = policy_failure(fail_on, outcome, improved)
    if failure:
        workflow_error(failure)
        return 1
    return 0


# The token of `::stop-commands::` (main): until it is given back, no line printed is a workflow
# command, since the pull request's code decides some of what is printed (its output, kernel names).
_COMMANDS_TOKEN = secrets.token_hex(16)


def workflow_error(text: str) -> None:
    """An error annotation on the workflow run: commands resumed for this one line, the text with
    GitHub's escapes (a newline in it would end the command and print the rest as a plain line),
    then stopped again."""
    data = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    print(f"::{_COMMANDS_TOKEN}::\n::error title=Optimas::{data}\n::stop-commands::{_COMMANDS_TOKEN}", flush=True)


def _bool(text: str) -> bool:
    if text.lower() in ("true", "yes", "1"):
        return True
    if text.lower() in ("false", "no", "0"):
        return False
    raise argparse.ArgumentTypeError(f"{text!r}: expected true or false")


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bot.action", description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", type=Path, default=Path(REPOSITORY_CONFIG))
    ap.add_argument("--backend", default="", choices=["", *BACKENDS])
    ap.add_argument("--model", default="")
    ap.add_argument("--replay-dir", default="", help="the replay backend's answers: a folder outside the checkout")
    ap.add_argument("--base-url", default="", help="the model server's URL (the config may not name one)")
    ap.add_argument("--diagnostics", default="", choices=["", *DIAGNOSTICS])
    ap.add_argument("--program", default="", help="the program to run, where the config lists several "
                    "(default: those whose files the pull request changes)")
    ap.add_argument("--publish", type=_bool, default=True)
    ap.add_argument("--fail-on", choices=FAIL_ON, default="error")
    args = ap.parse_args(argv)
    args.diagnostics = args.diagnostics or None
    logging.basicConfig(level=logging.INFO, format="[optimas %(asctime)s] %(message)s", datefmt="%H:%M:%S")
    print(f"::stop-commands::{_COMMANDS_TOKEN}", flush=True)
    try:
        return run(args, dict(os.environ))
    except OptimasError as e:
        workflow_error(redact(str(e)))
        return e.exit_code


if __name__ == "__main__":
    sys.exit(main())
