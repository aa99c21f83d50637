"""The operator's policy over a repository's config (on the App's workers and in the Action): the
model, its server and key are the operator's; the worker's own tools run, never the repository's;
no file outside the checkout is read; the operator's limits cap what a run costs."""

from __future__ import annotations

import logging
from pathlib import Path

from bot.settings import WorkerSettings
from runner.base.config import REPOSITORY_CONFIG, LoadedConfig
from runner.base.config_checks import paths_outside
from runner.base.errors import OptimasError

log = logging.getLogger(__name__)


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
    config = lc.config
    if config.llm.candidates > ws.max_candidates:
        log.info("llm.candidates: %d asked, %d allowed (OPTIMAS_MAX_CANDIDATES)", config.llm.candidates,
                 ws.max_candidates)
        lc = lc.with_llm(candidates=ws.max_candidates)
    if config.evaluation.max_iterations > ws.max_iterations:
        log.info("evaluation.max_iterations: %d asked, %d allowed (OPTIMAS_MAX_ITERATIONS)",
                 config.evaluation.max_iterations, ws.max_iterations)
        evaluation = lc.config.evaluation.model_copy(update={"max_iterations": ws.max_iterations})
        lc = lc.model_copy(update={"config": lc.config.model_copy(update={"evaluation": evaluation})})
    if config.programs_per_pull_request > ws.max_programs:
        log.info("programs_per_pull_request: %d asked, %d allowed (OPTIMAS_MAX_PROGRAMS)",
                 config.programs_per_pull_request, ws.max_programs)
        lc = lc.model_copy(update={"config": lc.config.model_copy(
            update={"programs_per_pull_request": ws.max_programs})})
    return lc
