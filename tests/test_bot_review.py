"""Review planning: suggestions on the right lines of the PR's diff, fences, limits."""

from __future__ import annotations

import difflib

from bot.outcome import Edit, ProgramOutcome
from bot.review import MAX_BODY, commentable_lines, fence_for, plan_review, review_body, suggestion_body


def patch_of(old: str, new: str) -> str:
    """A file's `patch` as GitHub's PR files API gives it: the hunks only."""
    diff = "".join(difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True), n=3))
    return diff.split("\n", 2)[2]  # drop the ---/+++ header lines


BASE = "".join(f"line {i}\n" for i in range(1, 41))
HEAD = BASE.replace("line 20\n", "line 20 changed\nline 20b added\n")


def test_commentable_lines_are_the_right_side_of_the_hunks():
    lines = commentable_lines(patch_of(BASE, HEAD))
    assert lines == set(range(17, 25))  # 3 lines of context either side of new lines 20-21


def test_edits_inside_the_diff_become_suggestions_the_rest_stay_outside():
    patches = {"k.cu": patch_of(BASE, HEAD)}
    edits = [
        Edit("k.cu", 20, 21, "x\ny", "S1: line 20"),
        Edit("k.cu", 22, 22, "z", "S2"),
        Edit("k.cu", 5, 5, "w", "far away"),
        Edit("other.cu", 20, 20, "v", "not in the PR"),
        Edit("k.cu", 23, 30, "u", "half inside"),
    ]
    comments, outside = plan_review(edits, patches)
    assert comments[0] == {"path": "k.cu", "line": 21, "side": "RIGHT", "start_line": 20, "start_side": "RIGHT",
                           "body": "S1: line 20\n\n```suggestion\nx\ny\n```"}
    assert comments[1]["line"] == 22 and "start_line" not in comments[1]
    assert [e.explanation for e in outside] == ["far away", "not in the PR", "half inside"]


def test_code_with_backticks_gets_a_longer_fence():
    assert fence_for("no ticks") == "```"
    assert fence_for("printf(\"```\");") == "````"
    body = suggestion_body("why", "a ```` b")
    assert body.endswith("\n`````")


def test_bodies_stay_within_the_limit_and_never_cut_a_suggestion():
    # A long explanation is shortened, and says so; the suggestion block stays whole.
    body = suggestion_body("e" * (MAX_BODY + 10), "x = 1;")
    assert len(body) <= MAX_BODY and body.endswith("\n\n```suggestion\nx = 1;\n```")
    assert "*(truncated: the full text is in the run's artifacts)*" in body
    # Code that cannot fit a comment is no suggestion at all (a cut one, committed, deletes code).
    assert suggestion_body("e", "x" * MAX_BODY) is None
    patches = {"k.cu": patch_of(BASE, HEAD)}
    edits = [Edit("k.cu", 20, 20, "x" * MAX_BODY, "big")]
    comments, outside = plan_review(edits, patches)
    assert comments == [] and [e.explanation for e in outside] == ["big"]
    text = review_body("summary", "-a\n+b")
    assert "<details><summary>Edits not posted as suggestions (outside this pull request's diff" in text
    assert "```diff\n-a\n+b\n```" in text


def test_a_review_holds_at_most_max_comments_suggestions():
    patches = {"k.cu": patch_of(BASE, HEAD)}
    edits = [Edit("k.cu", 20, 20, f"v{i}", f"e{i}") for i in range(7)]
    comments, outside = plan_review(edits, patches, max_comments=5)
    assert len(comments) == 5 and [e.explanation for e in outside] == ["e5", "e6"]


def test_loop_edits_map_the_kept_candidate_onto_the_pr_heads_lines(tmp_path):
    from bot.outcome import loop_edits

    root = tmp_path / "src"
    workdir = root / "app"
    workdir.mkdir(parents=True)
    original = {"k.cu": "".join(f"line {i}\n" for i in range(1, 11))}
    # two iterations' worth of changes: line 3 rewritten, a line inserted after 7
    final = {"k.cu": original["k.cu"].replace("line 3\n", "line three\n").replace("line 7\n", "line 7\nline 7b\n")}
    edits = loop_edits(original, final, workdir, root, "why")
    assert [(e.file, e.start_line, e.end_line, e.new_text) for e in edits] == [
        ("app/k.cu", 3, 3, "line three"), ("app/k.cu", 7, 7, "line 7\nline 7b")]


def test_an_edit_outside_the_diff_is_shown_as_a_unified_diff():
    from bot.outcome import edit_diff

    d = edit_diff("app/k.cu", "a\nb\nc\n", 2, 2, "B\nB2")
    assert d.startswith("--- a/app/k.cu\n+++ b/app/k.cu\n@@ -1,3 +1,4 @@")
    assert "-b\n+B\n+B2" in d


def test_the_summary_links_the_runs_dashboard_page():
    from bot.summary import summary_text

    outcome = ProgramOutcome("no change", "no change", "no change", run="20261205T000000Z-abc")
    text = summary_text(outcome, "a" * 40, False, "https://optimas.example.org/dashboard/")
    assert "https://optimas.example.org/dashboard/runs/20261205T000000Z-abc" in text
    assert "dashboard" not in summary_text(outcome, "a" * 40, False, None)


def test_the_summary_says_which_compatibility_header_went_into_which_file():
    from dataclasses import replace

    from bot.summary import summary_text
    from runner.toolchain.compat_record import CompatRecord

    outcome = ProgramOutcome("no change", "no change", "no change", run="r",
                             compat=(CompatRecord("cuda_legacy_warp.h", ("__shfl_down",), ("reduce.cu",)),))
    text = summary_text(outcome, "a" * 40, False)
    assert "`cuda_legacy_warp.h` pre-included into `reduce.cu`" in text and "`__shfl_down`" in text
    assert "compatibility header" not in summary_text(replace(outcome, compat=()), "a" * 40, False)
    dialect = CompatRecord("C++17", ("-std=c++14",), ("Main.cu",))
    text = summary_text(replace(outcome, compat=(dialect,)), "a" * 40, False)
    assert "`Main.cu` compiled as C++17 where the build said `-std=c++14`" in text and "header `" not in text


def test_cited_evidence_is_clipped_after_a_whole_word():
    from bot.summary import clipped

    text = "the grid-stride loads stall on the long scoreboard in a latency-bound kernel " * 4
    cut = clipped(text, 160)
    assert len(cut) <= 160 and cut.endswith("…")
    assert text.startswith(cut[:-1]) and text[len(cut) - 1] == " "  # the next character starts a word
    assert clipped("short", 160) == "short"
