"""The GPU job (queue optimas-gpu): fetch the pinned commit into a fresh workspace, run Optimas with
the repo's config (read from the default branch) in a sandbox, and publish the outcome on the pull
request: a check run, one review with suggestions, one summary comment. What it keeps of the runs
is bot.keep's, the operator's policy bot.policy's, the outcome bot.outcome's and its texts
bot.summary's."""

from __future__ import annotations

import base64
import contextlib
import logging
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import requests
from github import GithubException
from rq import get_current_job

from bot.context import JobContext
from bot.jobs import CONFIG_PATH, release_job_key
from bot.keep import keep_runs, runs_folder
from bot.outcome import Outcome, ProgramOutcome, ProgramsOutcome
from bot.pipeline import pipeline
from bot.policy import operator_model, refuse_worker_reach, repository_model_choices
from bot.programs import changed_first, changed_texts, programs_to_run, run_each
from bot.publish import code_block, publish_outcome
from bot.settings import WorkerSettings
from bot.summary import summary_text
from runner.base.config import LoadedConfig
from runner.base.errors import OptimasError
from runner.base.processes import CommandResult, child_environment, child_home, run_process, track_process_groups
from runner.base.redaction import describe, redact, register_secret
from runner.base.runstore import record_copies, runs_created
from runner.base.sandbox import scratch
from runner.base.workspace import FileTooLargeError, read_capped

log = logging.getLogger(__name__)


class FetchError(OptimasError):
    exit_code = 4

    def __init__(self, message: str, transient: bool = False):
        super().__init__(message)
        self.transient = transient  # a network failure may pass; a moved head will not


def git_environment(token: str) -> dict[str, str]:
    """git's environment: the minimal child environment, no prompts, and the installation token as
    an HTTP Authorization header given through git's environment-only configuration
    (GIT_CONFIG_COUNT/KEY/VALUE), so that it is in no argument, URL or file."""
    basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
    register_secret(basic)
    return {**child_environment(), "GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "true",
            "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "http.extraHeader",
            "GIT_CONFIG_VALUE_0": f"Authorization: Basic {basic}"}


def fetch(repo: str, pr: int, head_sha: str, token: str, dest: Path, git_url: str, timeout_s: float) -> None:
    """The PR's head (refs/pull/N/head: same-repo and fork PRs alike) into `dest`, checked to be
    the pinned SHA; `git_url` and `timeout_s` come from WorkerSettings. The token reaches git through
    its environment only (git_environment)."""
    url = git_url.format(repo=repo)
    dest.mkdir(parents=True)
    env = git_environment(token)

    def git(*args: str, stdout: Path | None = None, max_bytes: int | None = None) -> CommandResult:
        argv = ["git", "-C", str(dest), *args]
        if max_bytes is not None:  # the file it writes stops there (the shell's limit, in 512-byte blocks)
            argv = ["sh", "-c", 'ulimit -f "$1" && shift && exec "$@"', "sh", str(max_bytes // 512), *argv]
        r = run_process(argv, timeout_s=timeout_s, env=env, merge_stderr=False, what=f"git {args[0]}", stdout=stdout)
        if r.timed_out:
            raise FetchError(f"git {args[0]} of {repo}#{pr} did not finish within {timeout_s:g} s", transient=True)
        return r

    git("init", "-q")
    r = git("fetch", "-q", "--depth", "1", url, f"refs/pull/{pr}/head")
    if r.returncode != 0:
        raise FetchError(f"fetching {repo}#{pr} failed: {redact(r.errors.strip())[-500:]}", transient=True)
    got = git("rev-parse", "FETCH_HEAD").output.strip()
    if got != head_sha:
        raise FetchError(f"the head of {repo}#{pr} moved on to {got[:7]} since {head_sha[:7]} was pinned")
    _refuse_a_large_tree(dest, git, f"{repo}#{pr}")
    # the files as the commit holds them: the tree's own .gitattributes could have checkout expand
    # them (ident, working-tree-encoding=UTF-32LE, eol: 47 times what the tree counts; an attacker's pass)
    (dest / ".git" / "info").mkdir(parents=True, exist_ok=True)
    (dest / ".git" / "info" / "attributes").write_text("* -ident -text -eol -working-tree-encoding -filter -diff\n")
    r = git("checkout", "-q", "FETCH_HEAD")
    if r.returncode != 0:
        raise FetchError(f"checking out {repo}#{pr} failed: {redact(r.errors.strip())[-500:]}")


# What a checkout may write: a commit's tree can name one compressed blob thousands of times (a
# "git bomb": 336 KB fetched, 2 GB written in 3 s; an attacker's pass). Counted before checking out.
MAX_CHECKOUT_FILES = 200_000
MAX_CHECKOUT_BYTES = 8 << 30


def _refuse_a_large_tree(dest: Path, git: Callable[..., CommandResult], what: str) -> None:
    """FetchError when FETCH_HEAD's tree holds more than MAX_CHECKOUT_FILES entries or
    MAX_CHECKOUT_BYTES bytes (each file counted as often as the tree names it)."""
    listing, cap = dest.parent / f"{dest.name}.tree", MAX_CHECKOUT_FILES * 400
    try:
        # written up to the cap only: a tree of 10^10 names listed gigabytes before the count
        git("ls-tree", "-r", "-l", "-z", "--full-tree", "FETCH_HEAD", stdout=listing, max_bytes=cap)
        data = read_capped(listing, cap - 512, "the commit's tree")
    except FileTooLargeError:
        raise FetchError(f"{what}: its tree names more than {MAX_CHECKOUT_FILES} files; not checked out") from None
    finally:
        listing.unlink(missing_ok=True)
    entries = [e for e in data.split(b"\0") if e]
    total = sum(int(size) for e in entries if (size := e.split(b"\t", 1)[0].split()[-1]).isdigit())
    if len(entries) > MAX_CHECKOUT_FILES or total > MAX_CHECKOUT_BYTES:
        raise FetchError(f"{what}: its tree holds {len(entries)} files of {total} bytes in all, more than a checkout "
                         f"may write ({MAX_CHECKOUT_FILES} files, {MAX_CHECKOUT_BYTES >> 30} GiB); not checked out")


def optimize_pr(repo: str, installation_id: int, pr: int, head_sha: str, config_sha: str, fork: bool,
                trigger: str) -> dict[str, Any]:
    """Run Optimas on one pinned commit and publish: check run, review, summary comment."""
    ctx = JobContext.create(repo, installation_id, pr)
    job = get_current_job()
    run_key = job.id if job else f"{pr}-{head_sha[:12]}"
    pub = ctx.publisher
    check = pub.start_check(head_sha, external_id=run_key)
    if job is not None:
        job.meta["check_run"] = check
        job.save_meta()
    log.info("fetching %s#%d@%s into a fresh workspace", repo, pr, head_sha[:7])
    try:
        outcome, sha = _fetch_and_run(ctx, head_sha)
    except Exception as e:
        # The check run must not stay "in progress"; the failure callback tells the PR why, and RQ
        # retries what may pass. The original error is re-raised whatever happens here.
        with contextlib.suppress(GithubException, requests.RequestException):
            pub.complete_check(check, "failure", "Optimas failed", code_block(describe(e)))
        raise
    summary = summary_text(outcome, head_sha, sha != config_sha, ctx.settings.artifacts_url)
    current = pub.head_sha()
    if current != head_sha:
        pub.upsert_summary(summary + f"\n\nThe head moved on to `{current[:7]}` while this ran: no suggestions "
                                     "were posted for the old commit. Comment `/optimas run` for the new one.")
        pub.complete_check(check, "neutral", "Head moved on", summary)
        _release(ctx, job)
        return {"status": "stale", "head": current}
    log.info("publishing: %s", outcome.headline)
    posted = publish_outcome(pub, check, outcome, head_sha, summary, run_key)
    _release(ctx, job)
    return {"status": "published", "suggestions": posted, "verdict": outcome.verdict}


def _release(ctx: JobContext, job) -> None:
    if job is not None:
        release_job_key(ctx.conn, job, ctx.settings.key_prefix)


def _fetch_and_run(ctx: JobContext, head_sha: str) -> tuple[Outcome, str]:
    """Fetch the pinned commit into a fresh job folder and run the pipeline there, in a sandbox,
    with the default branch's config; returns the outcome and the config's blob SHA.

    The job folder holds `work/` (the checkout, the candidates' copies, HOME, TMPDIR and the run
    folders: all the sandboxed commands may write) and, beside it, what only the worker writes (the
    list of the job's process groups). The run folders are copied to OPTIMAS_RUNS_DIR when the job
    ends (keep_runs)."""
    # removed without following the code's links, and whatever it left does not replace the job's own error
    with scratch("optimas-job-") as tmp:
        work = Path(tmp) / "work"
        work.mkdir()
        with (child_home(work / "home"), track_process_groups(Path(tmp) / "control" / "process-groups") as groups,
              _temporary_files(work / "tmp")):
            job = get_current_job()
            if job is not None:  # the stopped and failure callbacks kill what a killed horse leaves running
                job.meta["process_groups"] = str(groups)
                job.save_meta()
            ws = work / "src"
            token = ctx.app.installation_token(ctx.installation_id)
            fetch(ctx.repo, ctx.pr, head_sha, token, ws, ctx.settings.git_url, ctx.settings.fetch_timeout_s)
            config = ctx.app.config_from_default_branch(ctx.installation_id, ctx.repo, CONFIG_PATH)
            if config is None:
                raise OptimasError(f"{CONFIG_PATH} is gone from the default branch")
            text, sha = config
            cfg_file = ws / CONFIG_PATH
            replace_file(cfg_file, text)  # the default branch's config, whatever the PR head holds there
            log.info("fetched; running Optimas with the default branch's %s in a sandbox", CONFIG_PATH)
            outcome = _pipeline(cfg_file, work, ctx.publisher.changed_paths(), ctx.publisher.paths_newest_first)
    return outcome, sha


@contextlib.contextmanager
def _temporary_files(folder: Path):
    """Temporary files and folders of this process (candidate copies, builds) in `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    previous, tempfile.tempdir = tempfile.tempdir, str(folder)
    try:
        yield folder
    finally:
        tempfile.tempdir = previous


def replace_file(path: Path, text: str) -> None:
    """Write `path` anew as a regular file: whatever the checkout holds there (a symbolic link to
    another file, a folder) is removed first, never written through."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)


def prepare_tools(nvcc: str) -> None:
    """Build or check, outside the sandbox, what the sandboxed commands run from the worker's
    cache: the nvcc shim and the CUPTI tracer (each checked against what it must hold)."""
    from runner.base.processes import cache_root
    from runner.toolchain.nvcc_shim import shim_folder
    from runner.tracing.library import TracerError, tracer_library

    shim_folder(nvcc, cache_root())
    try:
        tracer_library(nvcc)
    except TracerError as e:
        log.info("no tracer: %s", e)  # the pipeline says what that costs where it needs one


def _pipeline(cfg_file: Path, work: Path, changed: list[str] | None = None,
              newest_first: Callable[[], list[str]] | None = None) -> Outcome:
    """The pipeline on the checkout's config, its commands in a sandbox that may write `work` only
    and read the tracer and nvcc shim that the worker prepares (and checks) beforehand. Its runs
    are kept, whatever the outcome, once the job's folder passed the last sweep. With `changed`
    (the pull request's paths), only the programs whose files it changes run (runner.flows.scope:
    one build each tells their files; `newest_first` orders them past programs_per_pull_request),
    and a pull request that changes none is answered with no profile run."""
    from runner.base.config import load_config
    from runner.base.gpu import sandbox_devices
    from runner.base.processes import cache_root
    from runner.base.sandbox import sandboxed

    repository = load_config(cfg_file)
    refuse_worker_reach(repository, cfg_file.parent)  # the checkout: the job folder beside it is not the repository's
    lc = operator_model(repository, WorkerSettings.from_env())
    prepare_tools(lc.config.profiling.nvcc)
    made = len(runs_created())
    # the corpus records go where only the worker writes, beside `work`: the code could forge them there
    corpus = work.parent / "control" / "corpus.jsonl"
    corpus.parent.mkdir(exist_ok=True)
    # the worker's GPU only: its node, the driver's shared ones, and CUDA_VISIBLE_DEVICES by UUID
    devices = sandbox_devices(lc.config.profiling.nvidia_smi, os.environ.get("CUDA_VISIBLE_DEVICES"))
    # every record the worker writes in the run folders is copied beside `work`, where the code cannot
    # write: what is kept of the runs is those copies (the code can rewrite the run folders)
    with sandboxed([work], [cache_root()], devices) as box, record_copies(work / "runs", work.parent / "records"):
        box.sweep()  # the checkout's links that lead out of the job's folder are gone before anything reads it
        programs, skipped, touched = programs_to_run(lc, changed, cfg_file.parent, newest_first)
        box.sweep()
        if box.exceeded is not None:
            raise box.exceeded
        if not programs:
            return _untouched(lc, skipped)

        def after_failure() -> None:
            box.sweep()
            if box.exceeded is not None:
                raise box.exceeded from None

        def run_one(program: LoadedConfig) -> ProgramOutcome:
            outcome = pipeline(program, work / "runs", corpus=corpus)[1]
            changed = touched.get(program.config.app.name, [])
            hot, mine = list(outcome.hot), []
            if hot and changed:
                hot, mine = changed_first(hot, changed_texts(cfg_file.parent, changed))
            return replace(outcome, model_ignored=tuple(repository_model_choices(repository)), changed=tuple(changed),
                           hot=tuple(hot), hot_changed=tuple(mine))

        try:
            outcomes = run_each(programs, run_one, after_failure)
        except OptimasError:
            # the pipeline's own failure: every command had ended and been swept; the runs say why
            box.sweep()  # raises, and nothing is kept, when the folder cannot be checked whole
            keep_runs(work / "runs", runs_folder(), runs_created()[made:], corpus, work.parent / "records")
            if box.exceeded is not None:
                raise box.exceeded from None  # a limit hit that a stage caught and carried on from
            raise
        # Anything else (the job's timeout, an interrupt) cut a command short: nothing of the job's
        # folder is read or kept, as something of the code might still be running there.
        box.sweep()
        keep_runs(work / "runs", runs_folder(), runs_created()[made:], corpus, work.parent / "records")
        if box.exceeded is not None:  # a command over a limit ends the job, whatever a stage made of it
            raise box.exceeded
        if len(lc.program_names()) <= 1:
            return outcomes[0][1]
        return ProgramsOutcome.of(outcomes, skipped)


def _untouched(lc: LoadedConfig, skipped: list[tuple[str, str]]) -> ProgramOutcome:
    """The outcome for a pull request that changes none of the programs' files: said in the
    summary and a neutral check run; nothing is profiled."""
    if lc.program_names():
        return ProgramOutcome.not_run(lc.program_names(), skipped)
    return ProgramOutcome.not_run([lc.config.app.name], skipped, listed=False)
