from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, run_cli

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
    ("profiling: {max_targeted_kernels: 0}", "profiling.max_targeted_kernels: expected a value >= 1, got 0"),
    ("- a\n- b\n", "expected a mapping of sections"),
    ("analysis: [", "not valid YAML at line 1"),
])
def test_bad_config_names_key_path_and_expectation(text, fragment):
    with pytest.raises(ConfigError) as e:
        parse_config(text, "my.yml")
    assert str(e.value).startswith("my.yml: invalid configuration")
    assert fragment in str(e.value)
    assert e.value.exit_code == 2


def test_an_empty_file_is_refused_and_unset_sections_are_defaults():
    for empty in ("", "# only a comment\n"):
        with pytest.raises(ConfigError, match="the file is empty"):
            parse_config(empty, "x.yml")
    recorded = parse_config("profiles: {raw: [r.csv]}\n", "x.yml")
    assert recorded.model_dump(exclude={"profiles"}) == Config().model_dump(exclude={"profiles"})


@pytest.mark.parametrize("text, missing", [("app: {}\n", "app.build and app.run"),
                                           ("app: {build: make, run: ./a}\nprofiles: {}\n", None),
                                           ("app: {run: ./a}\n", "app.build")])
def test_a_config_with_nothing_to_profile_is_refused_and_nothing_is_written(tmp_path: Path, text, missing):
    cfg = tmp_path / "c.yml"
    cfg.write_text(text)
    r = run_cli("run", "--config", str(cfg))
    if missing is None:
        assert "nothing to profile" not in r.stderr
        return
    assert r.returncode == 2 and f"{missing}: not set" in r.stderr and "nothing to profile" in r.stderr
    assert run_cli("check-config", "--config", str(cfg)).returncode == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.yml"]  # no run folder


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


APP = ("app:\n  name: a\n  workdir: prog\n  sources: [k.cu]\n  build: nvcc -o {exe} k.cu\n"
       "  run: '{exe} --size {scale}'\n  configurations: [small, large]\n")

# Each rule of check-config: a config text (added to APP) and what the message must say.
RULES = [
    ("evaluation: {diagnostics: none}\n", None),  # the README allows code only
    ("app:\n  name: a\n  workdir: missing\n  sources: [k.cu]\n", "app.workdir: folder"),
    ("app:\n  name: a\n  workdir: prog\n  sources: [k.cu, gone.cu]\n", "app.sources: "),
    ("app:\n  name: a\n  workdir: prog\n  sources: [k.cu]\n  run: '{exe} --n {size}'\n",
     "app.run: unknown placeholder {size}; known: {exe}, {arch}"),
    ("app:\n  name: a\n  workdir: prog\n  build: 'nvcc -o {exe k.cu'\n", "app.build: "),
    ("app:\n  name: a\n  workdir: prog\n  outputs: [{path: '{outdir}/x.bin'}]\n",
     "app.outputs.0.path: unknown placeholder"),
    ("app:\n  name: a\n  workdir: prog\n  configurations: [small]\n  profile_configuration: medium\n",
     "app.profile_configuration: 'medium' is not one of app.configurations (small)"),
    ("app:\n  name: a\n  workdir: prog\n  configurations: [small, small]\n", "app.configurations: small listed"),
    ("app:\n  name: a\n  workdir: prog\n  kernel_time_regex: 'time=[0-9.]+'\n",
     "app.kernel_time_regex: needs exactly one group around the number"),
    ("app:\n  name: a\n  workdir: prog\n  kernel_time_regex: 'time=([0-9.]+'\n",
     "app.kernel_time_regex: not a valid regular expression"),
    ("analysis: {counters: {kappa: true}}\n", "analysis.counters.kappa: expected a whole number, got True"),
    ("analysis: {alpha: '0.8'}\n", "analysis.alpha: input should be a valid number, got '0.8'"),
    ("evaluation: {timed_runs: '5'}\n", "evaluation.timed_runs: input should be a valid integer, got '5'"),
    ("app:\n  name: a\n  workdir: prog\n  env: {OMP_NUM_THREADS: 4}\n",
     "app.env.OMP_NUM_THREADS: expected text, got 4 (quote it: '4')"),
    ("evaluation: {timed_runs: 10, max_timed_runs: 5}\n",
     "evaluation.max_timed_runs: 5 is below evaluation.timed_runs"),
    ("evaluation: {timer: app}\n", "evaluation.timer: 'app' reads the time the program prints"),
    ("llm: {backend: openai}\n", "llm.model: the openai backend needs a model name"),
    ("llm: {backend: replay}\n", "llm.replay_dir: the replay backend reads recorded answers"),
    ("llm: {backend: replay, replay_dir: answers}\n", "llm.replay_dir: folder"),
    ("app:\n  name: a\n  workdir: prog\n  stdout: {values: 'sum=[0-9.]+'}\n",
     "app.stdout.values: needs exactly one group around the number"),
    ("app:\n  name: a\n  workdir: prog\n  stdout: {fail_pattern: 'FAIL('}\n",
     "app.stdout.fail_pattern: not a valid regular expression"),
    ("app:\n  name: a\n  workdir: prog\n  sources: [k.cu]\n  build: 'nvcc -o {exe} k.cu'\n"
     "  run: '{exe} {n*scale} {iters}'\n"
     "  configurations:\n    small: {n: 1024, iters: 10}\n    large: {n: 65536, iters: 10}\n", None),
    ("app:\n  name: a\n  workdir: prog\n  run: '{exe} {n}'\n  configurations:\n    small: {n: 1}\n    large: {}\n",
     "app.run: placeholder {n} has no value in configuration(s) large"),
    ("app:\n  name: a\n  workdir: prog\n  build: 'nvcc -o {exe} -DN={m} k.cu'\n  configurations: {small: {n: 1}}\n",
     "app.build: unknown placeholder {m}"),
    ("app:\n  name: a\n  workdir: prog\n  build: 'nvcc -o {exe} -DN={n} k.cu'\n  run: '{exe}'\n"
     "  configurations: {small: {n: 1}, large: {}}\n",
     "app.build: placeholder {n} has no value in configuration(s) large"),
    ("app:\n  name: a\n  workdir: prog\n  sources: [k.cu]\n  build: 'nvcc -o {exe} -D{config}_DATASET -DN={n} k.cu'\n"
     "  run: '{exe}'\n  configurations: {SMALL: {n: 1}, LARGE: {n: 4}}\n", None),
    ("app:\n  name: a\n  workdir: prog\n  configurations: {small: {seed: 1}}\n",
     "app.configurations: seed is a built-in placeholder"),
    ("", "the file is empty"),
]


@pytest.mark.parametrize("text, says", RULES)
def test_check_config_catches_each_rule_before_any_work(tmp_path: Path, text: str, says: str | None):
    from conftest import run_cli

    (tmp_path / "prog").mkdir()
    (tmp_path / "prog" / "k.cu").write_text("__global__ void k() {}\n")
    cfg = tmp_path / "c.yml"
    cfg.write_text(text if text.startswith("app:") or not text else APP + text)
    r = run_cli("check-config", "--config", str(cfg))
    if says is None:
        assert r.returncode == 0, r.stderr
        return
    assert r.returncode == 2 and says in r.stderr, r.stderr
    # the same config stops `run` before anything is made
    r = run_cli("run", "--config", str(cfg), "--runs-dir", str(tmp_path / "runs"))
    assert r.returncode == 2 and says in r.stderr, r.stderr
    assert not (tmp_path / "runs").exists()


def test_a_backend_given_on_the_command_line_is_checked_too(tmp_path: Path):
    from conftest import run_cli

    (tmp_path / "prog").mkdir()
    (tmp_path / "prog" / "k.cu").write_text("__global__ void k() {}\n")
    (tmp_path / "c.yml").write_text(APP)
    r = run_cli("propose", "--config", str(tmp_path / "c.yml"), "--backend", "gemini", "--runs-dir",
                str(tmp_path / "runs"))
    assert r.returncode == 2 and "llm.model: the gemini backend needs a model name" in r.stderr
    assert not (tmp_path / "runs").exists()


def test_the_configuration_reference_is_generated_from_the_schema_and_up_to_date():
    from runner.base.config_reference import reference

    committed = (REPO / "docs" / "configuration.md").read_text()
    assert committed == reference() + "\n", ("docs/configuration.md is out of date: "
                                             "python -m runner.base.config_reference > docs/configuration.md")
    assert "|  |" not in committed  # every key says what it means


def test_config_yml_sets_every_key_to_its_default_outside_the_demo_app():
    """config.yml documents every knob: beyond the demo app's own sections (app, profiles) each
    value is the schema's default, so the file and the reference cannot drift apart."""
    import yaml

    from runner.base.config import Config

    written = yaml.safe_load((REPO / "config.yml").read_text())
    defaults = Config().model_dump()

    def leaves(d: dict, prefix: str = "") -> dict:
        out = {}
        for k, v in d.items():
            out |= leaves(v, f"{prefix}{k}.") if isinstance(v, dict) and v else {f"{prefix}{k}": v}
        return out

    ours, schema = leaves(written), leaves(defaults)
    for section in ("analysis", "profiling", "llm", "evaluation", "runs_dir"):
        keys = {k for k in schema if k == section or k.startswith(section + ".")}
        missing = sorted(keys - set(ours))
        assert not missing, f"config.yml lacks {missing}"
        differ = {k: (ours[k], schema[k]) for k in keys if ours[k] != schema[k]}
        assert not differ, differ


@pytest.mark.parametrize("app, expected", [
    ({}, None),  # GPU results bit for bit, the default without output files
    ({"gpu_results": {"compare": "tolerance", "rtol": 1e-5}}, "GPU results as float32: rtol 1e-05"),
    ({"outputs": [{"path": "o.bin", "compare": "tolerance", "atol": 0.001, "dtype": "float64"}]},
     "o.bin as float64: atol 0.001"),  # GPU results not compared when outputs are declared (auto)
    ({"outputs": [{"path": "o.bin", "compare": "tolerance", "ulps": 2}, {"path": "n.txt"}]}, None),
    ({"outputs": [{"path": "o.bin", "compare": "tolerance", "ulps": 2}], "gpu_results": {"compare": "bitwise"}},
     None),
    ({"gpu_results": {"compare": "tolerance"}}, None),  # no tolerance given: exact
])
def test_the_tolerances_a_candidate_is_held_to(app, expected):
    from runner.base.config import AppConfig

    assert AppConfig.model_validate({"name": "x", **app}).tolerances() == expected


def test_a_config_with_aliases_or_of_any_size_is_refused_before_anything_reads_it():
    """A chain of YAML aliases in a few hundred bytes expanded to gigabytes where the value was
    written into an error (an attacker's pass: the App's worker reads a repository's config); a
    config needs no aliases and holds no data."""
    from runner.base.config import MAX_CONFIG_BYTES, parse_config

    levels = ['a0: &a0 ["xxxxxxxx", "xxxxxxxx", "xxxxxxxx", "xxxxxxxx", "xxxxxxxx", "xxxxxxxx"]']
    levels += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)]
    bomb = "\n".join(levels) + "\napp:\n  name: *a9\n"
    assert len(bomb) < 1000
    with pytest.raises(ConfigError, match=r"line 2, column .*aliases \(\*name\) are not read"):
        parse_config(bomb, "bomb.yml")
    with pytest.raises(ConfigError, match="nested too deeply"):
        parse_config("app:\n  name: " + "[" * 100_000 + "\n", "deep.yml")
    with pytest.raises(ConfigError, match="a config is at most"):
        parse_config("app:\n  name: k\n" + "#" * MAX_CONFIG_BYTES + "\n", "big.yml")
    with pytest.raises(ConfigError) as e:  # a value of the wrong type is named, not written out whole
        parse_config("app:\n  name: [" + ", ".join(["123456789"] * 5000) + "]\n", "long.yml")
    assert len(str(e.value)) < 500


def test_the_old_name_compat_headers_is_read_as_legacy_cuda_with_a_deprecation_warning(tmp_path, caplog):
    old = tmp_path / "old.yml"
    old.write_text("app:\n  build: nvcc -o {exe} k.cu\n  run: '{exe}'\n  compat_headers: true\n")
    with caplog.at_level("WARNING", logger="runner.base.config"):
        assert load_config(old).config.app.legacy_cuda is True
    assert "app.compat_headers is deprecated: it is now app.legacy_cuda" in caplog.text
    both = tmp_path / "both.yml"
    both.write_text("app:\n  build: nvcc -o {exe} k.cu\n  run: '{exe}'\n  compat_headers: true\n  legacy_cuda: false\n")
    with pytest.raises(ConfigError, match="compat_headers and app.legacy_cuda disagree"):
        load_config(both)
