"""The GPU job: fetch the pinned commit into a fresh workspace, run the pipeline with the repo's
config (read from the default branch), and publish the outcome on the pull request.

Run one worker per GPU:
`CUDA_VISIBLE_DEVICES=0 rq worker -w bot.worker.OptimasWorker optimas-gpu --url $OPTIMAS_REDIS_URL`.
Scaling out is more workers on more hosts against the same Redis.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from rq import Worker

from bot.github_client import app_from_env
from bot.jobs import CONFIG_PATH, key_prefix, redis_connection, report_failure
from bot.publish import Publisher
from bot.review import plan_review, review_body
from runner.errors import OptimasError

# How the worker fetches code; {token} is the installation token, used for this fetch only.
DEFAULT_GIT_URL = "https://x-access-token:{token}@github.com/{repo}.git"


class FetchError(OptimasError):
    exit_code = 4


def fetch(repo: str, pr: int, head_sha: str, token: str, dest: Path) -> None:
    """The PR's head (refs/pull/N/head: same-repo and fork PRs alike) into `dest`, checked to be
    the pinned SHA. The URL with the token is passed to git once and stored nowhere."""
    url = os.environ.get("OPTIMAS_GIT_URL", DEFAULT_GIT_URL).format(token=token, repo=repo)
    dest.mkdir(parents=True)

    def git(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["git", "-C", str(dest), *args], capture_output=True, text=True, timeout=600)

    git("init", "-q")
    r = git("fetch", "-q", "--depth", "1", url, f"refs/pull/{pr}/head")
    if r.returncode != 0:
        raise FetchError(f"fetching {repo}#{pr} failed: {r.stderr.replace(token, '***').strip()[-500:]}")
    got = git("rev-parse", "FETCH_HEAD").stdout.strip()
    if got != head_sha:
        raise FetchError(f"the head of {repo}#{pr} moved on to {got[:7]} since {head_sha[:7]} was pinned")
    git("checkout", "-q", "FETCH_HEAD")


def optimize_pr(repo: str, installation_id: int, pr: int, head_sha: str, config_sha: str, fork: bool,
                trigger: str) -> dict[str, Any]:
    """Run Optimas on one pinned commit and publish: check run, review, summary comment."""
    gh = app_from_env()
    conn = redis_connection()
    pub = Publisher(gh, installation_id, repo, pr,
                    lock=lambda: conn.lock(f"{key_prefix()}:writes:{installation_id}", timeout=120,
                                           blocking_timeout=600))
    check = pub.start_check(head_sha)
    with tempfile.TemporaryDirectory(prefix="optimas-job-") as tmp:
        ws = Path(tmp) / "src"
        token = gh.installation_token(installation_id)
        fetch(repo, pr, head_sha, token, ws)
        config = gh.config_from_default_branch(installation_id, repo, CONFIG_PATH)
        if config is None:
            raise OptimasError(f"{CONFIG_PATH} is gone from the default branch")
        text, sha = config
        cfg_file = ws / CONFIG_PATH
        cfg_file.write_text(text)  # the default branch's config, whatever the PR head holds
        # Runs are kept on the worker host (OPTIMAS_RUNS_DIR) for inspection; the checkout is not.
        outcome = _pipeline(cfg_file, Path(os.environ.get("OPTIMAS_RUNS_DIR", Path.home() / ".optimas" / "runs")))
    summary = _summary(outcome, head_sha, sha != config_sha)
    current = pub.head_sha()
    if current != head_sha:
        pub.upsert_summary(summary + f"\n\nThe head moved on to `{current[:7]}` while this ran: no suggestions "
                                     "were posted for the old commit. Comment `/optimas run` for the new one.")
        pub.complete_check(check, "neutral", "Head moved on", summary)
        return {"status": "stale", "head": current}
    posted = 0
    if outcome["postable"]:
        comments, outside = plan_review(outcome["edits"], pub.changed_files())
        diff_outside = "\n".join(e["diff"] for e in outside)
        pub.post_review(head_sha, review_body(outcome["headline"], diff_outside), comments)
        posted = len(comments)
    pub.upsert_summary(summary)
    pub.complete_check(check, "success" if outcome["postable"] else "neutral", outcome["headline"], summary)
    return {"status": "published", "suggestions": posted, "verdict": outcome["verdict"]}


def _pipeline(cfg_file: Path, runs: Path) -> dict[str, Any]:
    """Evidence (recorded profiles in the config, else the closed loop on this GPU), proposal,
    evaluation where possible; what to publish."""
    from runner.config import load_config
    from runner.pipeline import analyze, can_run_here, has_profiles, profile_inputs, write_analysis
    from runner.propose import propose, workspace_dirs
    from runner.runstore import create_run
    from runner.verdict import evaluate

    lc = load_config(cfg_file)
    run = create_run(runs)
    inputs = profile_inputs(lc)
    if not has_profiles(inputs):
        from runner.loop import run_loop

        loop = run_loop(lc, run)
        return {"verdict": loop.stopped_because, "postable": False, "edits": [], "run": run.id,
                "headline": "closed loop: " + loop.stopped_because}
    diag = analyze(lc, inputs)
    write_analysis(run, lc, inputs, diag)
    proposed = propose(lc, diag, run)
    if proposed.status != "accepted":
        return {"verdict": "no candidate", "postable": False, "edits": [], "run": run.id,
                "headline": f"No usable candidate: {proposed.reason[:200]}"}
    ok, why = can_run_here(lc)
    verdict, measured, validation, per_config = "not measured", None, None, []
    if ok:
        ev = evaluate(lc, run, diag, proposed)
        verdict, ear = ev.verdict, ev.ear
        measured = ev.timing.result.summary() if ev.timing else None
        validation = ev.validation.summary() if ev.validation else None
        per_config = [f"{t.configuration}: {t.result.summary()}" for t in ev.timings]
    else:
        from runner.ear import scores
        from runner.prompting import read_sources

        ear = scores(proposed.proposal, diag, proposed.evidence_ids,
                     read_sources(workspace_dirs(lc)[1], lc.config.app.sources))
    _, workdir = workspace_dirs(lc)
    root = cfg_file.parent
    texts = {e.id: e.text for e in diag.evidence}
    edits = []
    for e in proposed.proposal.edits:
        cited = "; ".join(f"{i}: {texts[i][:160]}" for i in e.cites if i in texts) or "no evidence cited"
        effect = f"Measured: {measured}." if measured else f"Not measured on this worker ({why})."
        path = str((workdir / e.file).resolve().relative_to(root.resolve()))
        edits.append({"file": path, "start_line": e.start_line, "end_line": e.end_line, "new_text": e.new_text,
                      "explanation": f"**Optimas** ({', '.join(e.cites)}): {e.rationale}\n\n{cited}\n\n{effect}",
                      "diff": f"--- {path}:{e.start_line}-{e.end_line}\n+{e.new_text}"})
    postable = verdict in ("improvement", "not measured")
    headline = (f"Optimas: {measured}" if measured else "Optimas: a candidate that compiles and keeps the "
                "launch interface (not validated or timed on this worker)")
    return {"verdict": verdict, "postable": postable, "edits": edits, "run": run.id, "headline": headline,
            "hot": [k.kernel for k in diag.hot_kernels], "evidence": len(diag.evidence), "validation": validation,
            "ear": ear, "run_dir": str(run.path), "per_config": per_config}


def _summary(outcome: dict[str, Any], head_sha: str, config_changed: bool) -> str:
    lines = [f"### Optimas on `{head_sha[:7]}`", "", outcome["headline"], ""]
    if outcome.get("hot"):
        lines.append("Hot kernels: " + ", ".join(f"`{k.split('(')[0]}`" for k in outcome["hot"]))
        lines.append(f"Evidence items: {outcome.get('evidence')}; verdict: {outcome['verdict']}; "
                     f"run `{outcome['run']}`")
    if outcome.get("validation"):
        lines.append(f"Validation: {outcome['validation']}")
    for line in outcome.get("per_config", []):
        lines.append(f"- {line}")
    ear = outcome.get("ear")
    if ear is not None:
        def num(x):
            return "n/a" if x is None else f"{x:.2f}"

        lines.append(f"EAR: evidence coverage {num(ear.coverage)}, localization {num(ear.localization)}, "
                     f"directional {num(ear.directional)}, hallucinations {ear.hallucinations.count}, "
                     f"correct {'n/a' if ear.correct is None else ear.correct}")
    if outcome.get("run_dir"):
        lines.append(f"Artifacts: `{outcome['run_dir']}` on the worker host")
    if config_changed:
        lines.append("The repository's Optimas config changed after this run was requested; the current one was used.")
    return "\n".join(lines)


class OptimasWorker(Worker):
    """The RQ worker for both queues. RQ runs no failure callback when a job's work horse is killed
    (out of memory, a GPU fault, SIGKILL); this worker reports it on the PR all the same.

    `rq worker -w bot.worker.OptimasWorker optimas-gpu optimas-control --url $OPTIMAS_REDIS_URL`
    """

    def handle_work_horse_killed(self, job, retpid, ret_val, rusage):
        super().handle_work_horse_killed(job, retpid, ret_val, rusage)
        report_failure(job, self.connection, HorseKilled,
                       HorseKilled(f"the worker process running it died (exit status {ret_val})"), None)


class HorseKilled(Exception):
    """Stands for the cause of a job whose process was killed."""
