"""Turning an evaluated candidate into review comments: a ```suggestion block for each edit whose
lines lie inside the pull request's diff (RIGHT side, multi-line with start_line and line), the
rest as a collapsible diff in the review body. Pure functions; publishing is elsewhere."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

import unidiff

if TYPE_CHECKING:
    from bot.outcome import Edit

MAX_BODY = 65_536
TRUNCATED = "\n\n*(truncated: the full text is in the run's artifacts)*"
# Suggestions per review: a review of hundreds of comments is unreadable and risks GitHub's
# limits; the rest go into the review body as a diff.
MAX_REVIEW_COMMENTS = 50


def commentable_lines(patch: str) -> set[int]:
    """Lines of the new file (RIGHT side) that a review comment may target: those shown in the
    file's diff hunks (added or context lines). `patch` is the file's `patch` from the PR's files."""
    text = f"--- a/f\n+++ b/f\n{patch}" if not patch.startswith("---") else patch
    if not text.endswith("\n"):
        text += "\n"
    lines: set[int] = set()
    for pf in unidiff.PatchSet(text):
        for hunk in pf:
            for ln in hunk:
                if (ln.is_added or ln.is_context) and ln.target_line_no:
                    lines.add(ln.target_line_no)
    return lines


def fence_for(code: str) -> str:
    """A backtick fence longer than any run of backticks in the code."""
    longest = max((len(m) for m in re.findall(r"`+", code)), default=0)
    return "`" * max(3, longest + 1)


_FENCE = re.compile(r"(`{3,})(.*)")


def open_fence(text: str) -> str:
    """The fence of the block `text` leaves open ("" when none): the blocks Optimas writes open
    with a line of three or more backticks and an info string, and close with a bare line of at
    least as many."""
    fence = ""
    for line in text.splitlines():
        m = _FENCE.match(line)
        if m is None:
            continue
        if not fence:
            fence = m.group(1)
        elif m.group(1).startswith(fence) and not m.group(2).strip():
            fence = ""
    return fence


def truncate(body: str, limit: int = MAX_BODY) -> str:
    """Keep a comment within GitHub's size limit, and say when text was cut. The cut falls at a line
    break (the code spans of the pull request's text are one line each, so none is cut open, which
    would leave the rest of it as live Markdown), and a fenced block it leaves open is closed."""
    if len(body) <= limit:
        return body
    room = limit - len(TRUNCATED)
    kept, fence = body, ""
    while kept and len(kept) + len(fence) + 1 > room:
        kept = kept[: room - len(fence) - 1]
        kept = kept[: kept.rfind("\n") + 1]  # "" when no line break is left
        fence = open_fence(kept)
    return kept + (fence + "\n" if fence else "") + TRUNCATED


def suggestion_body(explanation: str, new_text: str) -> str | None:
    """The comment text of a suggestion, or None when its code alone does not fit a comment. Only
    the explanation is ever shortened: a cut suggestion block, committed, would delete code."""
    fence = fence_for(new_text)
    block = f"\n\n{fence}suggestion\n{new_text}\n{fence}"
    room = MAX_BODY - len(block)
    if room < len(TRUNCATED) + 200:
        return None
    return (truncate(explanation, room) if len(explanation) > room else explanation) + block


def plan_review(edits: Sequence[Edit], pr_patches: dict[str, str],
                max_comments: int = MAX_REVIEW_COMMENTS) -> tuple[list[dict], list[Edit]]:
    """Split edits into review comments (inside the PR's diff) and the rest (outside it, too long
    for a comment, or past the first `max_comments`).

    `edits`: line numbers of the PR head's file. `pr_patches`: the PR's files by path, with their
    `patch`. A comment needs every line of its range to be commentable; one line gets `line`,
    several get `start_line` and `line`.
    """
    comments, outside = [], []
    allowed = {path: commentable_lines(p) for path, p in pr_patches.items() if p}
    for e in edits:
        ok = allowed.get(e.file, set())
        span = range(e.start_line, e.end_line + 1)
        body = suggestion_body(e.explanation, e.new_text)
        if ok and all(n in ok for n in span) and body is not None and len(comments) < max_comments:
            c = {"path": e.file, "line": e.end_line, "side": "RIGHT", "body": body}
            if e.end_line > e.start_line:
                c.update(start_line=e.start_line, start_side="RIGHT")
            comments.append(c)
        else:
            outside.append(e)
    return comments, outside


def review_body(summary: str, outside_diff: str) -> str:
    """The review's own text: the summary, and edits outside the PR's diff as a collapsible diff."""
    body = summary
    if outside_diff:
        fence = fence_for(outside_diff)
        body += (f"\n\n<details><summary>Edits not posted as suggestions (outside this pull request's diff, too "
                 f"long for a comment, or past the first {MAX_REVIEW_COMMENTS})</summary>\n\n{fence}diff\n"
                 f"{outside_diff}\n{fence}\n</details>")
    return truncate(body)
