from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

from runner.base.config import Config, load_config, parse_config
from runner.base.errors import ConfigError


def test_defaults_match_the_method():
    c = Config()
    assert c.analysis.alpha == 0.8
    assert c.analysis.saturation == 0.70
    assert c.analysis.stall_share == 0.30
    assert c.analysis.counters.kappa == 5
    assert c.llm.temperature == 0.15
    assert c.evaluation.compile_retries == 3
    assert c.evaluation.timed_runs == 5


def test_repository_config_is_valid_and_equals_defaults_for_thresholds():
    lc = load_config(REPO / "config.yml")
    assert lc.config.analysis == Config().analysis
    assert lc.config.llm == Config().llm
    for p in lc.config.profiles.all_paths():
        assert lc.resolve(p).is_file(), p


@pytest.mark.parametrize("text, fragment", [
    ("analysis: {alpha: 1.5}", "analysis.alpha: expected a value <= 1.0, got 1.5"),
    ("analysis: {alpha: 0}", "analysis.alpha: expected a value > 0.0, got 0"),
    ("analysis: {stall_share: high}", "analysis.stall_share:"),
    ("analysis: {counters: {kapa: 3}}", "analysis.counters.kapa: unknown key"),
    ("llm: {backend: gpt5}", "llm.backend:"),
    ("evaluation: {timed_runs: 0}", "evaluation.timed_runs: expected a value >= 2, got 0"),
    ("- a\n- b\n", "expected a mapping of sections"),
    ("analysis: [", "not valid YAML at line 1"),
])
def test_bad_config_names_key_path_and_expectation(text, fragment):
    with pytest.raises(ConfigError) as e:
        parse_config(text, "my.yml")
    assert str(e.value).startswith("my.yml: invalid configuration")
    assert fragment in str(e.value)
    assert e.value.exit_code == 2


def test_empty_config_is_all_defaults():
    assert parse_config("", "x.yml") == Config()


def test_relative_paths_resolve_against_the_config_folder(tmp_path: Path):
    (tmp_path / "sub").mkdir()
    cfg = tmp_path / "sub" / "c.yml"
    cfg.write_text("profiles: {raw: [data/r.csv]}\n")
    lc = load_config(cfg)
    assert lc.resolve(lc.config.profiles.raw[0]) == (tmp_path / "sub" / "data" / "r.csv").resolve()
    assert len(lc.sha256) == 64


def test_missing_config_file(tmp_path: Path):
    with pytest.raises(ConfigError, match="file not found"):
        load_config(tmp_path / "nope.yml")


def test_cli_exit_code_2_on_bad_config(tmp_path: Path):
    cfg = tmp_path / "c.yml"
    cfg.write_text("analysis:\n  saturation: 7\n")
    r = subprocess.run([sys.executable, "-m", "runner.cli", "check-config", "--config", str(cfg)],
                       capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 2
    assert f"{cfg}: invalid configuration" in r.stderr
    assert "analysis.saturation: expected a value <= 1.0, got 7" in r.stderr
