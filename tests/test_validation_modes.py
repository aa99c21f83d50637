"""The validation modes (runner/base/validation_modes.py): one comparator each, the config's words for
them, and what run folders record."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import EVALUATED_RUNS

from runner.base.config import AppConfig, GpuResultsSpec, OutputSpec, parse_config
from runner.base.errors import ConfigError
from runner.base.validation_modes import AUTO, ValidationMode, check_words
from runner.validation.compare import COMPARATORS, Kept, compare

RUN = EVALUATED_RUNS / "20261203T174114Z-98e26ae2-9e55-4554-8c29-ed2ac5b42bf7"


def test_every_mode_has_one_comparator_and_nothing_else_does():
    assert set(COMPARATORS) == set(ValidationMode)
    for mode, comparator in COMPARATORS.items():
        assert callable(comparator.file) and callable(comparator.result), mode


def _one_ulp_apart() -> tuple[bytes, bytes]:
    a = np.linspace(1, 2, 16, dtype=np.float32)
    b = a.copy()
    b[5] = np.nextafter(b[5], np.float32(3))
    return b.tobytes(), a.tobytes()


def test_each_comparator_judges_a_one_ulp_difference_as_its_mode_says():
    cand, base = _one_ulp_apart()
    rule = OutputSpec(path="x", compare="tolerance", ulps=1)
    bitwise, tolerance, off = (COMPARATORS[m] for m in (ValidationMode.BITWISE, ValidationMode.TOLERANCE,
                                                        ValidationMode.OFF))
    assert bitwise.file(cand, base, rule) == (False, "bytes differ from offset 20 (64 vs 64 bytes)", None)
    assert tolerance.file(cand, base, rule).ok
    assert not tolerance.file(cand, base, OutputSpec(path="x", compare="tolerance")).ok
    assert off.file(cand, b"anything", rule).ok
    whole = Kept("GPU result 1 (cudaMemcpy, 64 bytes)", cand, base, whole=True)
    differs = bitwise.result(whole, rule)
    assert not differs.ok and differs.max_ulps == 1 and differs.why.startswith(
        "GPU result 1 (cudaMemcpy, 64 bytes) differs from the baseline's, from byte 20")
    assert tolerance.result(whole, rule).ok
    cut = tolerance.result(whole._replace(candidate=cand[:8], baseline=base[:8], whole=False), rule)
    assert not cut.ok and "only 8 of its bytes were kept for the tolerance check" in cut.why
    assert off.result(whole, rule).ok
    # an output file is judged by its own mode's comparator
    assert compare(cand, base, OutputSpec(path="x", compare="bitwise", ulps=1))[0] is False
    assert compare(cand, base, rule) == (True, "")


def test_the_config_takes_the_modes_as_words_and_resolves_auto():
    cfg = parse_config("app: {outputs: [{path: out.bin, compare: tolerance, rtol: 1.0e-6}], "
                       "gpu_results: {compare: off}}", "my.yml")
    assert cfg.app.outputs[0].compare is ValidationMode.TOLERANCE
    assert cfg.app.gpu_results_mode() is ValidationMode.OFF
    assert json.loads(cfg.model_dump_json())["app"]["gpu_results"]["compare"] == "off"
    assert AppConfig().gpu_results.compare == AUTO and AppConfig().gpu_results_mode() is ValidationMode.BITWISE
    assert AppConfig(outputs=[OutputSpec(path="o")]).gpu_results_mode() is ValidationMode.OFF
    for mode in ValidationMode:  # every mode is a choice of app.gpu_results.compare
        assert AppConfig(gpu_results=GpuResultsSpec(compare=mode)).gpu_results_mode() is mode
        assert parse_config(f"app: {{gpu_results: {{compare: {mode}}}}}", "my.yml").app.gpu_results_mode() is mode
    with pytest.raises(ConfigError, match="app.outputs.0.compare"):
        parse_config("app: {outputs: [{path: out.bin, compare: off}]}", "my.yml")  # undeclared is unchecked
    with pytest.raises(ConfigError, match="app.gpu_results.compare"):
        parse_config("app: {gpu_results: {compare: exact}}", "my.yml")


def test_a_recorded_validation_loads_and_its_words_are_made_from_the_modes():
    from runner.evaluation.measure import Validation

    recorded = json.loads((RUN / "evaluation" / "result.json").read_text())["validation"]
    validation = Validation.model_validate(recorded)
    assert [c.modes for c in validation.cases] == [["gpu-results:bitwise", "stdout"]] * 2
    assert check_words([], ValidationMode.BITWISE, stdout=True) == ["gpu-results:bitwise", "stdout"]
    assert check_words([ValidationMode.TOLERANCE], ValidationMode.BITWISE, rounding=True) == [
        "tolerance", "gpu-results:rounding"]
    assert check_words([ValidationMode.BITWISE], None) == ["bitwise"]
