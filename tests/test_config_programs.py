"""A config listing several programs: each entry is app with its own keys over the shared ones."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from runner.base.config import load_config
from runner.base.errors import ConfigError

TWO = """\
app:
  workspace: .
  timeout_s: 60
  env: {OMP_NUM_THREADS: "1"}
programs:
  - name: saxpy
    workdir: saxpy
    build: nvcc -o {exe} saxpy.cu
    run: "{exe} 1024"
    sources: [saxpy.cu]
  - name: stencil
    workdir: stencil
    build: make stencil
    run: "{exe}"
    timeout_s: 5
"""


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "optimas.yml"
    p.write_text(text)
    return p


def test_each_program_is_app_with_its_own_keys_over_the_shared_ones(tmp_path: Path) -> None:
    lc = load_config(_write(tmp_path, TWO))
    assert lc.program_names() == ["saxpy", "stencil"]
    saxpy, stencil = lc.each_program()
    assert (saxpy.config.app.name, saxpy.config.app.workdir, saxpy.config.app.timeout_s) == ("saxpy", "saxpy", 60)
    assert saxpy.config.app.env == {"OMP_NUM_THREADS": "1"}
    assert stencil.config.app.timeout_s == 5 and stencil.config.app.sources == []
    assert stencil.config.programs == [] and stencil.program_names() == []
    assert stencil.path == lc.path and stencil.sha256 == lc.sha256


def test_choosing_a_program_names_the_choices(tmp_path: Path) -> None:
    lc = load_config(_write(tmp_path, TWO))
    with pytest.raises(ConfigError, match=r"lists 2 programs \(saxpy, stencil\); choose one with --program"):
        lc.for_program(None)
    with pytest.raises(ConfigError, match=r"--program gemm: not one of the programs listed \(saxpy, stencil\)"):
        lc.for_program("gemm")
    assert lc.for_program("stencil").config.app.build == "make stencil"


def test_a_config_of_one_program_is_itself(tmp_path: Path) -> None:
    lc = load_config(_write(tmp_path, "app:\n  name: solo\n  build: make\n  run: '{exe}'\n"))
    assert lc.each_program() == [lc] and lc.for_program(None) is lc and lc.for_program("solo") is lc
    with pytest.raises(ConfigError, match="this config is one program, 'solo'"):
        lc.for_program("other")


@pytest.mark.parametrize(("programs", "expected"), [
    ("programs: {name: a}", "programs: expected a list of programs"),
    ("programs: [make a]", "programs.0: expected a mapping of app keys"),
    ("programs: [{build: make}]", "programs.0.name: expected the program's own name"),
    ("programs: [{name: ../up}]", "programs.0.name: expected the program's own name"),
    ("programs: [{name: a}, {name: a}]", "programs.1.name: 'a' is listed twice"),
    ("programs: [{name: a, timeout_s: 0}]", "programs.0.timeout_s: expected a value > 0"),
    ("programs: [{name: a, bulid: make}]", "programs.0.bulid: unknown key"),
    ("programs: [{name: a, run: '{exe} {n}'}]", "programs.0.run: unknown placeholder {n}"),
])
def test_bad_program_entries_name_the_entry(tmp_path: Path, programs: str, expected: str) -> None:
    with pytest.raises(ConfigError) as e:
        load_config(_write(tmp_path, f"app:\n  build: make\n{programs}\n"))
    assert expected in str(e.value)


def test_a_shared_key_in_error_is_reported_once_under_app(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as e:
        load_config(_write(tmp_path, "app:\n  timeout_s: -1\nprograms: [{name: a}, {name: b}]\n"))
    assert str(e.value).count("timeout_s") == 1 and "app.timeout_s" in str(e.value)


KERNEL = "__global__ void k(float* a) {{ a[threadIdx.x] *= {f}; }}\nint main() {{ k<<<1, 32>>>(nullptr); return 0; }}\n"


def _two_programs(tmp_path: Path, second: str) -> Path:
    for name, text in (("saxpy", KERNEL.format(f=2)), ("stencil", second)):
        (tmp_path / name).mkdir()
        (tmp_path / name / f"{name}.cu").write_text(text)
    return _write(tmp_path, TWO.replace("build: make stencil", "build: nvcc -o {exe} stencil.cu")
                  .replace(' {OMP_NUM_THREADS: "1"}', " {}"))


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc needed")
def test_check_config_builds_each_program_and_names_the_one_that_fails(tmp_path: Path) -> None:
    from conftest import run_cli

    config = _two_programs(tmp_path, KERNEL.format(f=3))
    r = run_cli("check-config", "--config", str(config), "--build")
    assert r.returncode == 0, r.stderr
    assert "2 of 2 programs checked" in r.stdout and "[1/2] saxpy" in r.stdout and "[2/2] stencil" in r.stdout
    assert "2 of 2 programs built" in r.stdout
    (tmp_path / "stencil" / "stencil.cu").write_text("this is not CUDA\n")
    r = run_cli("check-config", "--config", str(config), "--build")
    assert r.returncode == 3 and "1 of 2 programs built; failed: stencil" in r.stdout
    r = run_cli("check-config", "--config", str(config), "--build", "--program", "saxpy")
    assert r.returncode == 0 and "1 of 2 programs checked" in r.stdout and "stencil" not in r.stdout


def test_a_command_on_a_config_of_several_programs_asks_which(tmp_path: Path) -> None:
    from conftest import run_cli

    config = _two_programs(tmp_path, KERNEL.format(f=3))
    r = run_cli("prompt", "--config", str(config), "--runs-dir", str(tmp_path / "runs"))
    assert r.returncode == 2 and "lists 2 programs (saxpy, stencil); choose one with --program NAME" in r.stderr
    assert not (tmp_path / "runs").exists()
    r = run_cli("check-config", "--config", str(config), "--program", "gemm")
    assert r.returncode == 2 and "--program gemm: not one of the programs listed (saxpy, stencil)" in r.stderr
