"""The GPU job (queue optimas-gpu): fetch the pinned commit into a fresh workspace, run Optimas with
the repo's config (read from the default branch), and publish the outcome on the pull request: a
check run, one review with suggestions, one summary comment."""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import os
import shutil
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import requests
from github import GithubException
from rq import get_current_job

from bot.context import JobContext
from bot.jobs import CONFIG_PATH, release_job_key
from bot.programs import (
    changed_first,
    changed_texts,
    not_run_outcome,
    program_lines,
    programs_outcome,
    programs_to_run,
    run_each,
)
from bot.publish import Publisher, code_block, code_span
from bot.review import plan_review, review_body
from bot.settings import WorkerSettings
from runner.base.config import REPOSITORY_CONFIG, LoadedConfig, paths_outside
from runner.base.errors import OptimasError
from runner.base.processes import CommandResult, child_environment, child_home, run_process, track_process_groups
from runner.base.redaction import describe, redact, register_secret
from runner.base.runstore import RUN_ID, record_copies, runs_created
from runner.base.sandbox import scratch
from runner.base.workspace import FileTooLargeError, read_capped
from runner.build.nvcc_shim import DIALECT

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
    log.info("publishing: %s", outcome["headline"])
    posted = publish_outcome(pub, check, outcome, head_sha, summary, run_key)
    _release(ctx, job)
    return {"status": "published", "suggestions": posted, "verdict": outcome["verdict"]}


def publish_outcome(pub: Publisher, check: int, outcome: dict[str, Any], head_sha: str, summary: str, run_key: str,
                    suggest: bool = True) -> int:
    """One review with the outcome's suggestions (where it has any and `suggest`), the summary
    comment, and the completed check run; returns how many suggestions were posted. Each write is
    the publisher's, idempotent under a lost answer (keyed by `run_key`)."""
    posted = 0
    if outcome["postable"] and suggest:
        comments, outside = plan_review(outcome["edits"], pub.changed_files())
        diff_outside = "\n".join(e["diff"] for e in outside)
        pub.post_review(head_sha, review_body(outcome["headline"], diff_outside), comments, run_key)
        posted = len(comments)
    pub.upsert_summary(summary)
    pub.complete_check(check, "success" if outcome["postable"] else "neutral", outcome["headline"], summary)
    return posted


def _release(ctx: JobContext, job) -> None:
    if job is not None:
        release_job_key(ctx.conn, job, ctx.settings.key_prefix)


def _fetch_and_run(ctx: JobContext, head_sha: str) -> tuple[dict[str, Any], str]:
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


def runs_folder() -> Path:
    """Where GPU jobs keep their run folders on the worker host (OPTIMAS_RUNS_DIR)."""
    return Path(os.environ.get("OPTIMAS_RUNS_DIR") or Path.home() / ".optimas" / "runs")


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


# What a job keeps on the worker's runs volume: the code under test writes in its run folders and
# could fill the volume (and the dashboard, which reads them).
KEEP_FILE_BYTES = 64 << 20
KEEP_JOB_BYTES = 1 << 30
ENTRY_BYTES = 4096  # what each kept file or folder costs besides its bytes (a block and an inode):
# empty files cost the volume too, and a job kept millions of them within its bytes (an attacker's pass)


def keep_runs(source: Path, runs: Path, made: list[Path], corpus: Path | None = None,
              records: Path | None = None) -> None:
    """Copy the job's run folders into the worker's runs folder and add the job's corpus records
    (`corpus`, written where the code cannot write; default corpus.jsonl in `source`) to its corpus.
    The job's code could write in `source`: only the run folders this process made (`made`, from
    runstore.runs_created) are kept, named as runs, with a manifest, that the runs folder does not
    hold yet; only regular files and folders are copied (links dropped; setuid, setgid, execute and
    write-for-others bits off: nothing kept is run again; a file over KEEP_FILE_BYTES is left out,
    and once KEEP_JOB_BYTES are kept, each file and folder counted ENTRY_BYTES more than its size,
    the job's other runs are not); only JSON objects are added to the corpus. With `records` (the
    copies runstore.record_copies kept where the code cannot write), every record is the worker's
    copy and the manifest must be there; of the run folder, only the commands' other outputs are
    kept (no file named as a record: RECORD_SUFFIXES). What cannot be kept is logged: the job's
    outcome stands."""
    ours = {p.name for p in made if p.parent == source}
    budget = KEEP_JOB_BYTES
    try:
        runs.mkdir(parents=True, exist_ok=True, mode=0o750)
        named = {e.name for e in source.iterdir()} if source.is_dir() and not source.is_symlink() else set()
        for name in sorted(n for n in named - ours if RUN_ID.fullmatch(n)):
            log.warning("%s: a folder named as a run that this job did not make; not kept", name)
        for name in sorted(ours):
            budget = _keep_run(source / name, runs / name, None if records is None else records / name, budget)
        _add_corpus(corpus or source / "corpus.jsonl", runs / "corpus.jsonl")
    except OSError as e:
        log.warning("the job's run folders could not all be kept in %s: %s", runs, e)


# A file in a kept run folder with one of these endings is a record (the dashboard reads them): it
# is kept only as the worker wrote it (its copy), never as a command left it in the run folder.
RECORD_SUFFIXES = (".json", ".jsonl", ".md", ".txt", ".patch", ".yml", ".yaml", ".svg", ".html")


def _keep_run(entry: Path, dest: Path, copies: Path | None, budget: int) -> int:
    """Keep one run folder (keep_runs) as `dest`; returns what the job may still keep."""
    outputs = entry if entry.is_dir() and not entry.is_symlink() else None
    manifest = (copies or entry) / "manifest.json"
    if not manifest.is_file() or manifest.is_symlink() or dest.exists():
        return budget
    size = _kept_size(outputs, budget) if outputs is not None else 0
    if size is not None and copies is not None:
        more = _kept_size(copies, budget - size)
        size = None if more is None else size + more
    if size is None:
        log.warning("%s: more than the %d bytes this job may still keep (counting %d per file and folder); "
                    "not kept", entry.name, budget, ENTRY_BYTES)
        return budget
    if outputs is not None:
        ignore = _not_regular if copies is None else _outputs_only(outputs, copies)
        shutil.copytree(outputs, dest, symlinks=True, ignore=ignore, copy_function=_copy_plain)
    if copies is not None:
        shutil.copytree(copies, dest, dirs_exist_ok=True, copy_function=_copy_plain)
    return budget - size


def _outputs_only(outputs: Path, copies: Path) -> Callable[[str, list[str]], set[str]]:
    """copytree's ignore for a run folder whose records are kept from `copies`: _not_regular's, and
    every entry where a record of the worker goes, or named as a record (RECORD_SUFFIXES) that the
    worker did not write."""
    def ignore(folder: str, names: list[str]) -> set[str]:
        out = _not_regular(folder, names)
        mirror = copies / os.path.relpath(folder, outputs)
        for name in set(names) - out:
            is_dir = stat.S_ISDIR(os.lstat(os.path.join(folder, name)).st_mode)
            counterpart = mirror / name
            if (os.path.lexists(counterpart) and not (is_dir and counterpart.is_dir())) or (
                    not is_dir and name.lower().endswith(RECORD_SUFFIXES)):
                out.add(name)
        return out

    return ignore


def _not_regular(folder: str, names: list[str]) -> set[str]:
    """copytree's ignore: links, anything that is neither a regular file nor a folder, and files
    over KEEP_FILE_BYTES."""
    out = set()
    for name in names:
        info = os.lstat(os.path.join(folder, name))
        regular = stat.S_ISREG(info.st_mode)
        if not (regular or stat.S_ISDIR(info.st_mode)) or (regular and info.st_size > KEEP_FILE_BYTES):
            out.add(name)
    return out


def _kept_size(folder: Path, budget: int) -> int | None:
    """What keeping a run folder costs: the bytes copytree would keep (_not_regular's files left
    out, links not followed) and ENTRY_BYTES per file and folder; None, as soon as it is seen to be
    over `budget` (the walk stops there)."""
    total = 0
    for top, dirs, files in os.walk(folder):
        total += ENTRY_BYTES * (len(dirs) + len(files))
        for name in files:
            info = os.lstat(os.path.join(top, name))
            if stat.S_ISREG(info.st_mode) and info.st_size <= KEEP_FILE_BYTES:
                total += info.st_size
        if total > budget:
            return None
    return total


def _copy_plain(src: str, dst: str) -> None:
    """A regular file's bytes, with its permission bits less setuid, setgid, execute and write for others."""
    fd = os.open(src, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as f, open(dst, "xb") as out:
        shutil.copyfileobj(f, out)
        mode = stat.S_IMODE(os.fstat(f.fileno()).st_mode)
    os.chmod(dst, mode & ~(stat.S_ISUID | stat.S_ISGID | stat.S_IWOTH | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH))


def _add_corpus(source: Path, corpus: Path) -> None:
    if not source.is_file() or source.is_symlink():
        return
    records = []
    for line in source.read_text(encoding="utf-8", errors="replace").splitlines():
        with contextlib.suppress(ValueError):
            if isinstance(json.loads(line), dict):
                records.append(line)
    if not records:
        return
    if corpus.exists() and (corpus.is_symlink() or not corpus.is_file()):
        log.warning("%s is not a regular file: the job's %d corpus record(s) were not added", corpus, len(records))
        return
    with open(corpus, "a", encoding="utf-8") as f:
        f.write("".join(r + "\n" for r in records))


def _pipeline(cfg_file: Path, work: Path, changed: list[str] | None = None,
              newest_first: Callable[[], list[str]] | None = None) -> dict[str, Any]:
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

        def run_one(program: LoadedConfig) -> dict[str, Any]:
            outcome = pipeline(program, work / "runs", corpus=corpus)[1]
            outcome["model_ignored"] = repository_model_choices(repository)
            outcome["changed"] = touched.get(program.config.app.name, [])
            if outcome.get("hot") and outcome["changed"]:
                outcome["hot"], outcome["hot_changed"] = changed_first(
                    outcome["hot"], changed_texts(cfg_file.parent, outcome["changed"]))
            return outcome

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
        return programs_outcome(outcomes, skipped)


def _untouched(lc: LoadedConfig, skipped: list[tuple[str, str]]) -> dict[str, Any]:
    """The outcome for a pull request that changes none of the programs' files: said in the
    summary and a neutral check run; nothing is profiled."""
    if lc.program_names():
        return not_run_outcome(lc.program_names(), skipped)
    ((_, why),) = skipped
    return {"verdict": "not run", "postable": False, "edits": [], "run": None,
            "headline": f"Nothing to optimize: this pull request changes none of the files of "
                        f"{code_span(lc.config.app.name)}",
            "details": f"{why}. Nothing was profiled; label again after a change to the program's code."}


class RepositoryConfigError(OptimasError):
    """A repository's config asks for what the App will not do with the operator's credentials."""

    exit_code = 2


def refuse_key_redirection(lc: LoadedConfig, setting: str = "the action's base-url input") -> None:
    """RepositoryConfigError when a repository's config sets llm.base_url or llm.api_key_env: they
    would send the API key the App's operator (or the workflow) holds to a server of the
    repository's choosing, or pick another of the worker's secrets to send."""
    llm = lc.config.llm
    chosen = sorted(k for k in ("base_url", "api_key_env") if k in llm.model_fields_set and getattr(llm, k))
    if chosen:
        raise RepositoryConfigError(
            f"{REPOSITORY_CONFIG}: {' and '.join(f'llm.{k}' for k in chosen)} may not be set in the repository's "
            f"config: where the model's requests go, with the key, is set outside it ({setting}); remove it")


# Programs Optimas runs on the worker itself, outside the sandbox (the nvcc shim and the tracer are
# prepared with nvcc before the job's commands start): the operator's, found on the worker's PATH.
OPERATOR_TOOLS = {"nvcc": "nvcc", "ncu": "ncu", "nvidia_smi": "nvidia-smi"}


def refuse_worker_reach(lc: LoadedConfig, root: Path) -> None:
    """RepositoryConfigError when a repository's config names a file or folder outside its checkout
    `root` (in `app` or any of its `programs`: the worker would copy or read it, its secrets, another
    job's folder) or a program of
    its own choosing in place of nvcc, ncu or nvidia-smi (which the worker runs unsandboxed)."""
    problems = list(dict.fromkeys(p for one in lc.each_program() for p in paths_outside(one, root)))
    prof = lc.config.profiling
    problems += [f"profiling.{k}: the worker's own {name} is used; a repository's config may not name another"
                 for k, name in OPERATOR_TOOLS.items() if k in prof.model_fields_set and getattr(prof, k) != name]
    if problems:
        raise RepositoryConfigError(f"{REPOSITORY_CONFIG}: " + "; ".join(problems))


# What picks the model's answers: on the App and the Action the operator's alone. A repository's
# config (and with it the pull request, whose checkout holds a replay backend's answers folder) would
# otherwise choose what the App posts under its name.
MODEL_CHOICES = ("backend", "model", "replay_dir")


def repository_model_choices(lc: LoadedConfig) -> list[str]:
    """The model settings a repository's config names (`llm.backend`, ...), which the operator's replace."""
    llm = lc.config.llm
    return [f"llm.{k}" for k in MODEL_CHOICES if k in llm.model_fields_set]


def with_operator_model(lc: LoadedConfig, backend: str | None, model: str | None, replay_dir: str | None,
                        base_url: str | None = None) -> LoadedConfig:
    """The config with the operator's backend, model and answers folder in place of whatever the
    repository's names (the default offline backend where the operator names none), and the
    operator's server where it names one."""
    update: dict = {"backend": backend or "offline", "model": model or None, "replay_dir": replay_dir or None}
    if base_url:
        update["base_url"] = base_url
    ignored = repository_model_choices(lc)
    if ignored:
        log.info("llm: %s of the repository's config ignored: the model is the operator's (%s %s)",
                 ", ".join(ignored), update["backend"], update["model"] or "")
    return lc.with_llm(**update)


def operator_model(lc: LoadedConfig, ws: WorkerSettings) -> LoadedConfig:
    """The repository's config with the operator's model (OPTIMAS_LLM_BACKEND, OPTIMAS_LLM_MODEL,
    OPTIMAS_LLM_REPLAY_DIR; the offline backend where none is set), whatever the repository's config
    names. Where the model's requests go and which of the worker's keys they carry are the
    operator's alone too: a repository's `llm.base_url` or `llm.api_key_env` would send the
    operator's API key to a server of the repository's choosing, so they are refused
    (OPTIMAS_LLM_BASE_URL is the operator's)."""
    refuse_key_redirection(lc, "OPTIMAS_LLM_BASE_URL on the workers")
    lc = with_operator_model(lc, ws.llm_backend, ws.llm_model, ws.llm_replay_dir, ws.llm_base_url)
    return within_operator_limits(lc, ws)


def within_operator_limits(lc: LoadedConfig, ws: WorkerSettings) -> LoadedConfig:
    """The config with llm.candidates, evaluation.max_iterations and programs_per_pull_request cut
    to the operator's limits (OPTIMAS_MAX_CANDIDATES, OPTIMAS_MAX_ITERATIONS, OPTIMAS_MAX_PROGRAMS):
    each candidate, iteration and program costs model calls on the operator's key and GPU time, and
    a repository's config chooses them."""
    cfg = lc.config
    if cfg.llm.candidates > ws.max_candidates:
        log.info("llm.candidates: %d asked, %d allowed (OPTIMAS_MAX_CANDIDATES)", cfg.llm.candidates, ws.max_candidates)
        lc = lc.with_llm(candidates=ws.max_candidates)
    if cfg.evaluation.max_iterations > ws.max_iterations:
        log.info("evaluation.max_iterations: %d asked, %d allowed (OPTIMAS_MAX_ITERATIONS)",
                 cfg.evaluation.max_iterations, ws.max_iterations)
        evaluation = lc.config.evaluation.model_copy(update={"max_iterations": ws.max_iterations})
        lc = lc.model_copy(update={"config": lc.config.model_copy(update={"evaluation": evaluation})})
    if cfg.programs_per_pull_request > ws.max_programs:
        log.info("programs_per_pull_request: %d asked, %d allowed (OPTIMAS_MAX_PROGRAMS)",
                 cfg.programs_per_pull_request, ws.max_programs)
        lc = lc.model_copy(update={"config": lc.config.model_copy(
            update={"programs_per_pull_request": ws.max_programs})})
    return lc


def prepare_tools(nvcc: str) -> None:
    """Build or check, outside the sandbox, what the sandboxed commands run from the worker's
    cache: the nvcc shim and the CUPTI tracer (each checked against what it must hold)."""
    from runner.base.processes import cache_root
    from runner.build.nvcc_shim import shim_folder
    from runner.tracing.library import TracerError, tracer_library

    shim_folder(nvcc, cache_root())
    try:
        tracer_library(nvcc)
    except TracerError as e:
        log.info("no tracer: %s", e)  # the pipeline says what that costs where it needs one


def pipeline(lc, runs: Path, diagnostics: str | None = None, corpus: Path | None = None) -> tuple[Any, dict[str, Any]]:
    """One Optimas run (runner.flows.optimize: recorded profiles in the config, else the closed loop
    on this GPU): its result, and what to publish of it. `corpus`: where its corpus records go."""
    from runner.analysis.stage import profile_inputs
    from runner.flows.optimize import optimize

    result = optimize(lc, runs, profile_inputs(lc), diagnostics, corpus=corpus)
    outcome = (loop_outcome if result.loop is not None else recorded_outcome)(result, lc, lc.path.parent)
    outcome["compat"] = result.run.manifest.get("compat_headers", [])
    return result, outcome


def recorded_outcome(result, lc, root: Path) -> dict[str, Any]:
    """What to publish of one iteration from recorded profiles: its edits as suggestions, each
    with the evidence it cites and what was measured (or why nothing was)."""

    it, diag, run = result.iteration, result.diag, result.run
    proposed = it.proposed
    if proposed.status == "no-change":
        return {"verdict": "no change", "postable": False, "edits": [], "run": run.id,
                "headline": "No change proposed: the model found no edit that would make the hot kernels faster.",
                "hot": [k.kernel for k in diag.hot_kernels], "evidence": len(diag.evidence),
                "reasons": [str(w) for w in proposed.proposal.withheld]}
    if proposed.status != "accepted":
        return {"verdict": "no candidate", "postable": False, "edits": [], "run": run.id,
                "headline": "No usable candidate: the answers could not be applied, or did not compile",
                "details": proposed.reason[-1500:]}
    verdict, measured, validation, per_config = "not measured", None, None, []
    why = it.note if it.result is None else ""  # why the candidate was not evaluated here
    if it.result is not None:
        ev = it.result
        verdict, ear = ev.verdict, ev.ear
        measured = ev.timing.result.summary() if ev.timing else None
        validation = ev.validation.summary() if ev.validation else None
        per_config = [f"{t.configuration}: {t.result.summary()}" for t in ev.timings]
    else:
        from runner.evaluation.ear import scores

        ear = scores(proposed.proposal, diag, proposed.evidence_ids, result.original)
    workdir = lc.resolve(lc.config.app.workdir)  # as written: links in it are the code's by now (pr_path)
    texts = {e.id: e.text for e in diag.evidence}
    edits = []
    for e in proposed.proposal.edits:
        cited = "\n".join(f"{i}: {texts[i][:160]}" for i in e.cites if i in texts) or "no evidence cited"
        effect = f"Measured: {measured}." if measured else f"Not measured on this worker: {code_span(why)}."
        path = pr_path(workdir, e.file, root)
        edits.append({"file": path, "start_line": e.start_line, "end_line": e.end_line, "new_text": e.new_text,
                      # the model's words and the evidence (source lines of the pull request) as text,
                      # never as Markdown: no mention, link or image reaches the review from them
                      "explanation": f"**Optimas** ({code_span(', '.join(e.cites))}):\n\n{code_block(e.rationale)}"
                                     f"\n\nEvidence cited:\n\n{code_block(cited)}\n\n{effect}",
                      "diff": edit_diff(path, result.original[e.file], e.start_line, e.end_line, e.new_text)})
    # a suggestion only for what a GPU proved: validated bit for bit and timed faster; anything else
    # is said as text in the summary (its diff included), never as a committable block
    postable = verdict == "improvement" and measured is not None
    if measured:
        headline = f"Optimas: {measured}"
    elif verdict != "not measured":
        headline = f"Optimas: the candidate was evaluated on the GPU: {verdict}; no suggestion is posted for it"
    else:
        headline = ("Optimas: a candidate that compiles and keeps the launch interface, not validated or timed on "
                    "this worker; no suggestion is posted for it (its diff is below, as text)")
    return {"verdict": verdict, "postable": postable, "edits": edits, "run": run.id, "headline": headline,
            "hot": [k.kernel for k in diag.hot_kernels], "evidence": len(diag.evidence), "validation": validation,
            "ear": ear, "per_config": per_config,
            "unproven": "\n".join(e["diff"] for e in edits) if verdict == "not measured" else ""}


def loop_outcome(result, lc, root: Path) -> dict[str, Any]:
    """What to publish of a closed loop: each iteration's verdict, gain with its interval and
    directional consistency; the hot kernels and evidence of the first profile; the kept
    iteration's (else the last one's) validation, per-configuration timings and EAR; and the kept
    candidate as edits of the PR head's files."""

    loop, diag, ev = result.loop, result.diag, result.shown
    per_iteration = []
    for it in loop.iterations:
        gain = "" if it.improvement is None else f" {it.improvement:+.1%} ({it.ci_low:+.1%} to {it.ci_high:+.1%})"
        direction = "" if it.directional is None else f", directional consistency {it.directional:.2f}"
        per_iteration.append(f"iteration {it.iteration}: {it.verdict}{gain}{direction}")
    shown = loop.best or (loop.iterations[-1].iteration if loop.iterations else None)
    outcome = {
        "verdict": loop.stopped_because, "postable": False, "edits": [], "run": result.run.id,
        "headline": "Closed loop: " + code_span(loop.stopped_because),
        "hot": [k.kernel for k in diag.hot_kernels], "evidence": len(diag.evidence),
        "per_config": per_iteration + ([f"iteration {shown}, {t.configuration}: {t.result.summary()}"
                                        for t in ev.timings] if ev else []),
        "validation": ev.validation.summary() if ev and ev.validation else None,
        "ear": ev.ear if ev else None}
    if result.final is None:
        return outcome
    workdir = lc.resolve(lc.config.app.workdir)  # as written: links in it are the code's by now (pr_path)
    headline = (f"Optimas: {loop.cumulative_improvement:+.1%} over {loop.kept} iteration(s), each significant "
                "at 95%")
    outcome.update(postable=True, headline=headline,
                   edits=loop_edits(result.original, result.final, workdir, root, headline))
    return outcome


def edit_diff(path: str, original: str, start: int, end: int, new_text: str) -> str:
    """A unified diff of one edit, for the review body when it lies outside the PR's diff."""
    from runner.proposal.guard import unified_diff

    lines = original.splitlines()
    new = "\n".join(lines[: start - 1] + new_text.splitlines() + lines[end:])
    return unified_diff({path: original}, {path: new + ("\n" if original.endswith("\n") else "")}).rstrip("\n")


def pr_path(workdir: Path, name: str, root: Path) -> str:
    """The pull request's path of a source the config names (`name`, in the app's `workdir`), from
    the names alone: the checkout was the code's to write by now, and a link it put in place of
    k.cu would, resolved, move k.cu's validated edit onto the file the link points at."""
    path = os.path.normpath(os.path.join(os.path.abspath(workdir), name))
    rel = os.path.relpath(path, os.path.normpath(os.path.abspath(root)))
    if rel == ".." or rel.startswith("../") or os.path.isabs(rel):
        raise RepositoryConfigError(f"{REPOSITORY_CONFIG}: {name}: outside the checkout; no suggestion is made for it")
    return rel


def loop_edits(original: dict[str, str], final: dict[str, str], workdir: Path, root: Path,
               explanation: str) -> list[dict[str, Any]]:
    """Review edits (PR-root paths, PR-head line numbers) that turn the original sources into the
    loop's kept candidate, whatever iterations it took to get there."""
    from runner.proposal.parser import diff_edits

    out = []
    for name, text in original.items():
        if name not in final or final[name] == text:
            continue
        path = pr_path(workdir, name, root)
        for e in diff_edits(name, text, final[name]):
            out.append({"file": path, "start_line": e.start_line, "end_line": e.end_line, "new_text": e.new_text,
                        "explanation": explanation,
                        "diff": edit_diff(path, text, e.start_line, e.end_line, e.new_text)})
    return out


_UNPROVEN_CHARS = 20_000  # of an unproven candidate's diff shown in the summary (GitHub's comments hold 65,536)


def summary_text(outcome: dict[str, Any], head_sha: str, config_changed: bool,
                 artifacts_url: str | None = None) -> str:
    """The summary comment. It names the run by its id only (the worker host's paths are nobody's
    business) and links the artifacts where the operator serves them (OPTIMAS_ARTIFACTS_URL). An
    outcome of several programs has a part for each program run, and names those not run."""
    lines = [f"### Optimas on `{head_sha[:7]}`", "", outcome["headline"], ""]
    if outcome.get("programs"):
        lines += program_lines(outcome, lambda o: result_lines(o, artifacts_url))
        ignored = next((o["model_ignored"] for _, o in outcome["programs"] if o.get("model_ignored")), None)
    else:
        lines += result_lines(outcome, artifacts_url)
        ignored = outcome.get("model_ignored")
    if ignored:
        lines.append(f"The repository's config names {', '.join(code_span(k) for k in ignored)}: "
                     "the model and its answers are chosen by whoever runs Optimas (the App's operator, the "
                     "workflow's inputs), never by the repository; they were not used.")
    if config_changed:
        lines.append("The repository's Optimas config changed after this run was requested; the current one was used.")
    return "\n".join(lines)


def _ear_line(ear: Any) -> str:
    def num(x: float | None) -> str:
        return "n/a" if x is None else f"{x:.2f}"

    return (f"EAR: evidence coverage {num(ear.coverage)}, localization {num(ear.localization)}, "
            f"directional {num(ear.directional)}, hallucinations {ear.hallucinations.count}, "
            f"correct {'n/a' if ear.correct is None else ear.correct}")


def _compat_line(c: dict[str, Any]) -> str:
    if c["header"] == DIALECT:
        sources = ", ".join(code_span(s) for s in c["sources"])
        said = ", ".join(code_span(n) for n in c["names"])
        return (f"Built with {sources} compiled as C++17 where the build said {said} (app.compat_headers: "
                "CUDA 13's Thrust, CUB, libcu++ and cooperative groups headers need C++17): it changes what "
                "that code means, and your own CUDA 13 toolchain does not build it without the same change.")
    return (f"Built with Optimas's compatibility header {code_span(c['header'])} pre-included into "
            f"{', '.join(code_span(s) for s in c['sources'])} (app.compat_headers, for "
            f"{', '.join(code_span(n) for n in c['names'])}): it changes what that code means, and your own "
            "CUDA 13 toolchain does not build it without the same change.")


def result_lines(outcome: dict[str, Any], artifacts_url: str | None = None) -> list[str]:
    """What the summary says of one program's outcome below its headline: details, hot kernels,
    evidence, validation, timings, EAR, the run's link, compatibility headers, an unproven diff."""
    lines = []
    if outcome.get("details"):
        lines += [code_block(outcome["details"]), ""]
    if outcome.get("hot"):
        changed = set(outcome.get("hot_changed") or [])
        lines.append("Hot kernels: " + ", ".join(code_span(k.split("(")[0]) + (" (defined in a changed file)"
                                                                              if k in changed else "")
                                                 for k in outcome["hot"]))
        lines.append(f"Evidence items: {outcome.get('evidence')}; verdict: {code_span(outcome['verdict'])}; "
                     f"run `{outcome['run']}`")
    if outcome.get("reasons"):
        lines.append("The model's reasons:")
        lines.append(code_block("\n".join(f"- {r}" for r in outcome["reasons"])))
    if outcome.get("validation"):
        lines.append(f"Validation: {code_span(outcome['validation'])}")  # the program's output in it
    for line in outcome.get("per_config", []):
        lines.append(f"- {line}")
    if outcome.get("ear") is not None:
        lines.append(_ear_line(outcome["ear"]))
    if artifacts_url and outcome.get("run"):  # the dashboard's page of the run
        lines.append(f"The run on the dashboard: {artifacts_url.rstrip('/')}/runs/{outcome['run']}")
    lines += [_compat_line(c) for c in outcome.get("compat") or []]
    if outcome.get("unproven"):
        lines += ["", "The candidate, not proven on a GPU (shown as text; no suggestion was posted):",
                  code_block(outcome["unproven"][-_UNPROVEN_CHARS:])]
    return lines
