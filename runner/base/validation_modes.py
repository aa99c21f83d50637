"""How a candidate's results are compared with the original's: the validation modes, one vocabulary.

The config names them (app.outputs[].compare, app.gpu_results.compare), validation records them and
runner/validation/compare.py holds one comparator per mode (COMPARATORS). app.gpu_results.compare may
also say `auto` (AUTO): the config's choice, resolved to a mode by AppConfig.gpu_results_mode.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal


class ValidationMode(StrEnum):
    """How two versions of a result compare: bit for bit, within declared tolerances, or not at all."""

    BITWISE = "bitwise"
    TOLERANCE = "tolerance"
    OFF = "off"


# app.gpu_results.compare's default: bitwise for an app that declares no output files, off otherwise.
AUTO = "auto"

# An output file the config declares is compared bit for bit or within tolerances; one that should not
# be compared is not declared.
FileMode = Literal[ValidationMode.BITWISE, ValidationMode.TOLERANCE]

# The words a validation case records for GPU results held within rounding of an original whose own
# results vary run to run (a bitwise comparison relaxed, app.gpu_results.original_varies: rounding).
ROUNDING = "rounding"


def check_words(files: list[ValidationMode], gpu_results: ValidationMode | None, rounding: bool = False,
                stdout: bool = False) -> list[str]:
    """The checks of one validation case in words, as run folders record them (CaseResult.modes):
    each output file's mode, `gpu-results:<mode>` (`gpu-results:rounding` when held within
    rounding) when GPU results were compared, and `stdout` when the printed output was checked."""
    words = [str(m) for m in files]
    if gpu_results is not None:
        words.append(f"gpu-results:{ROUNDING if rounding else gpu_results}")
    return words + (["stdout"] if stdout else [])
