"""Errors that reach the user: each names its input and says what was expected."""

from __future__ import annotations

from pathlib import Path


class OptimasError(Exception):
    """Base of every error Optimas reports to a user; `exit_code` is the CLI's exit status."""

    exit_code = 1


class ConfigError(OptimasError):
    """The configuration file is missing, malformed or fails validation."""

    exit_code = 2

    def __init__(self, path: Path | str, problems: list[str]):
        self.path = str(path)
        self.problems = problems
        lines = "\n".join(f"  - {p}" for p in problems)
        super().__init__(f"{self.path}: invalid configuration\n{lines}")


class OptionError(OptimasError):
    """A command-line option's value cannot be used (it names the option and what was expected)."""

    exit_code = 2


class ProfileFormatError(OptimasError):
    """A profiler export is not what it was expected to be (wrong page, truncated, not ncu)."""

    exit_code = 2

    def __init__(self, path: Path | str, problem: str, expected: str, how: str | None = None):
        self.path = str(path)
        self.problem = problem
        self.expected = expected
        self.how = how
        msg = f"{self.path}: {problem}; expected {expected}"
        if how:
            msg += f". {how}"
        super().__init__(msg)


class AnalysisError(OptimasError):
    """The profile holds too little to derive the requested evidence."""

    exit_code = 3


class ProfilingError(OptimasError):
    """Profiling could not run: a tool, the GPU, permissions, or the application failed."""

    exit_code = 4
