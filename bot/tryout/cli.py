"""`python -m bot.tryout`: the GitHub App on this machine, before registering anything.

    python -m bot.tryout                  # label the sample pull request, show the App's answer, stop
    python -m bot.tryout --keep-running   # ... then stay up for more labels, until Ctrl-C
    python -m bot.tryout label --webhook URL --secret-file FILE --sha SHA   # one more signed label

It starts a loopback GitHub on 127.0.0.1 with a sample repository (the demo app on its recorded H200
profiles) and an open pull request, the webhook receiver, a control worker and a GPU worker against
the local Redis (keys and queues of its own), with a throwaway App key and webhook secret in a
temporary folder; delivers a signed `pull_request.labeled`; shows the App's progress, then the check
run, the summary comment and the review as the loopback GitHub received them. Completion or Ctrl-C
stops every process and removes the folder (--workdir keeps one).
"""

from __future__ import annotations

import argparse
import json
import logging
import shutil
import signal
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from types import FrameType

from bot.publish import MARKER
from bot.tryout.deliver import deliver, labeled_payload
from bot.tryout.sample import PULL, REPO
from bot.tryout.stack import Stack, TryoutError, failed_jobs, queues_idle, running_stack
from runner.base.errors import OptimasError

DEFAULT_REDIS = "redis://127.0.0.1:6379/0"
NO_GPU = ("No GPU here (nvidia-smi not found): the run stops before validation and timing, so no suggestion is "
          "posted: the candidate's diff is text in the summary and the check run is neutral (the unproven "
          "outcome, as on any worker without a GPU). On a GPU host the worker goes on to validate and time it, "
          "and a review with suggestions is posted only for a candidate validated bit for bit and timed faster.")


def parse(argv: list[str] | None) -> argparse.Namespace:
    head, _, rest = __doc__.partition("\n\n")
    p = argparse.ArgumentParser(prog="python -m bot.tryout", description=head, epilog=rest,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--keep-running", action="store_true", help="stay up after the first answer, for more labels "
                   "(it prints the command), until Ctrl-C")
    p.add_argument("--timeout", type=float, default=900, help="seconds to wait for the App's answer (default 900)")
    p.add_argument("--redis-url", default=DEFAULT_REDIS, help=f"the local Redis (default {DEFAULT_REDIS}); the "
                   "try-out's keys and queues are its own (tryout-<id>) and deleted at the end")
    p.add_argument("--workdir", type=Path, help="a folder for the key, the logs and the run folders, kept at the "
                   "end (default: a temporary folder, removed)")
    p.add_argument("--record", type=Path, help="write what the loopback GitHub received (check runs, comments, "
                   "reviews) to this JSON file at the end")
    sub = p.add_subparsers(dest="command")
    label = sub.add_parser("label", help="deliver one more signed pull_request.labeled to a running try-out")
    label.add_argument("--webhook", required=True, help="the receiver's webhook URL, as the try-out prints it")
    label.add_argument("--secret-file", type=Path, required=True, help="the try-out's webhook-secret file")
    label.add_argument("--sha", required=True, help="the pull request's head")
    label.add_argument("--pull", type=int, default=PULL)
    label.add_argument("--repo", default=REPO)
    label.add_argument("--label", default="optimas")
    return p.parse_args(argv)


def say(text: str = "") -> None:
    print(text, flush=True)


def indent(text: str) -> str:
    return textwrap.indent(text.rstrip(), "    ")


def describe_write(request: dict) -> str | None:
    """One line for a write the App made on the loopback GitHub (None: a read)."""
    method, path, data = request["method"], request["path"], request["json"] or {}
    if method not in ("POST", "PATCH") or "/access_tokens" in path:
        return None
    if "/check-runs" in path:
        state = data.get("conclusion") or data.get("status") or "updated"
        title = (data.get("output") or {}).get("title", "")
        return f"check run {data.get('name', '')} {state}".replace("  ", " ") + (f": {title}" if title else "")
    if "/reviews" in path:
        return f"review with {len(data.get('comments') or [])} suggestion comment(s)"
    if "/comments" in path:
        kind = "summary comment" if MARKER in (data.get("body") or "") else "comment"
        return f"{kind} {'posted' if method == 'POST' else 'updated'}"
    return f"{method} {path}"


class Progress:
    """What the try-out shows while the App works: the App's writes on the loopback GitHub and the
    workers' log lines, each as it comes."""

    def __init__(self, stack: Stack) -> None:
        self.stack = stack
        self.requests_seen = 0
        self.log_offsets: dict[str, int] = {}

    def show(self) -> None:
        requests = self.stack.github.requests
        for request in requests[self.requests_seen:len(requests)]:
            line = describe_write(request)
            if line:
                say(f"  github       | {line}")
        self.requests_seen = len(requests)
        for name in ("control-worker", "gpu-worker"):
            path = self.stack.log_file(name)
            with path.open("rb") as f:
                f.seek(self.log_offsets.get(name, 0))
                chunk = f.read()
            complete = chunk[:chunk.rfind(b"\n") + 1]
            self.log_offsets[name] = self.log_offsets.get(name, 0) + len(complete)
            for line in complete.decode(errors="replace").splitlines():
                say(f"  {name:<12} | {line}")


def answered(stack: Stack) -> bool:
    """The App has answered the label: a completed check run, or a job that failed, and no job left."""
    completed = any(r.get("status") == "completed" for r in stack.github.check_runs.values())
    return (completed or failed_jobs(stack) > 0) and queues_idle(stack)


def wait_for_answer(stack: Stack, progress: Progress, timeout_s: float) -> bool:
    """Show progress until the App has answered (True) or `timeout_s` has passed (False)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        progress.show()
        if answered(stack):
            time.sleep(0.5)  # the worker's last log lines
            progress.show()
            return True
        time.sleep(0.5)
    progress.show()
    return False


def label(stack: Stack) -> None:
    """Label the sample pull request as a maintainer does: GitHub's signed delivery to the receiver."""
    status, body = deliver(f"{stack.base_url}/webhook", stack.secret, "pull_request",
                           labeled_payload(REPO, PULL, stack.sample.head_sha))
    if status != 202:
        raise TryoutError(f"the receiver answered the label's delivery with {status}: {body[:500]}")
    say(f"Labelled pull request #{PULL} `optimas`: the receiver accepted the signed delivery (202).")


def report(stack: Stack) -> bool:
    """Show the check run, the summary comment and the review as the loopback GitHub received them;
    whether the App answered with a completed check run and a summary."""
    gh = stack.github
    say("\n=== What the loopback GitHub received ===")
    for run in gh.check_runs.values():
        output = run.get("output") or {}
        say(f"\nCheck run {run.get('name')!r} on {run.get('head_sha', '')[:7]}: {run.get('status')}"
            + (f", {run['conclusion']}" if run.get("conclusion") else ""))
        say(indent(f"{output.get('title', '')}\n\n{output.get('summary', '')}"))
    summaries = [c for c in gh.comments if MARKER in c["body"]]
    for c in gh.comments:
        say(f"\n{'Summary comment' if c in summaries else 'Comment'} on pull request #{c['issue']}:")
        say(indent(c["body"]))
    for review in gh.reviews:
        say(f"\nReview on {str(review.get('commit_id'))[:7]} with {len(review['comments'])} suggestion(s):")
        say(indent(review.get("body") or ""))
        for c in review["comments"]:
            say(indent(f"{c.get('path')}:{c.get('line')}\n{c.get('body', '')}"))
    completed = [r for r in gh.check_runs.values() if r.get("status") == "completed"]
    if not gh.reviews:
        unproven = any(r.get("conclusion") == "neutral" for r in completed)
        say("\nNo review: " + ("no GPU validated and timed the candidate, so the run stopped before validation "
                               "and timing and no suggestion was posted (the unproven outcome); its diff is text "
                               "in the summary." if unproven else "the App posted none (see the summary)."))
    return bool(completed) and bool(summaries)


def where_to_look(stack: Stack, kept: bool) -> None:
    say("\nWhere to look:")
    say(f"  the processes' logs: {stack.folder / 'logs'} (receiver.log, control-worker.log, gpu-worker.log)")
    say(f"  the run folders the GPU worker kept: {stack.folder / 'runs'}")
    if not kept:
        say("  (this folder is removed when the try-out stops: pass --workdir DIR to keep it)")


def keep_running(stack: Stack, progress: Progress) -> None:
    """Stay up, showing what the App does, until Ctrl-C; say how to label again."""
    webhook = f"{stack.base_url}/webhook"
    say("\nStill running; Ctrl-C stops every process and removes the temporary folder.")
    say("  Label the pull request again (a signed delivery, as GitHub sends it):")
    say(f"    {sys.executable} -m bot.tryout label --webhook {webhook} --secret-file {stack.secret_file} "
        f"--sha {stack.sample.head_sha}")
    say(f"  The loopback GitHub: curl {stack.github.url}/repos/{REPO}/issues/{PULL}/comments "
        f"(and .../check-runs/1, .../pulls/{PULL}/reviews)")
    say(f"  The dashboard: curl -H 'Authorization: Bearer {stack.dashboard_token}' {stack.base_url}/dashboard/")
    while True:
        progress.show()
        time.sleep(0.5)


def run_tryout(args: argparse.Namespace, folder: Path) -> int:
    """Start everything under `folder`, label the pull request, show the answer; the exit status."""
    say(f"Optimas App try-out in {folder}: a loopback GitHub, the receiver, a control and a GPU worker.")
    if shutil.which("nvidia-smi") is None:
        say(NO_GPU)
    if shutil.which("bwrap") is None:
        say("bubblewrap (bwrap) is not installed: the GPU job will fail and say so on the pull request "
            "(apt-get install bubblewrap).")
    with running_stack(folder, args.redis_url) as stack:
        say(f"Loopback GitHub at {stack.github.url}: {REPO}, pull request #{PULL} (head "
            f"{stack.sample.head_sha[:7]}), changing {stack.sample.pr_files[0]['filename']}.")
        say(f"Receiver at {stack.base_url}/webhook; workers on Redis {stack.redis_url} (queues "
            f"{stack.control_queue}, {stack.gpu_queue}).")
        progress = Progress(stack)
        label(stack)
        done = wait_for_answer(stack, progress, args.timeout)
        ok = report(stack) and done
        if not done:
            say(f"\nThe App did not answer within {args.timeout:g} s.")
        elif not ok:
            say(f"\nThe App answered without a completed check run and a summary: see {stack.folder / 'logs'}.")
        if args.record:
            args.record.write_text(json.dumps({"head_sha": stack.sample.head_sha, "comments": stack.github.comments,
                                               "check_runs": list(stack.github.check_runs.values()),
                                               "reviews": stack.github.reviews}, indent=2))
        where_to_look(stack, kept=args.workdir is not None)
        if args.keep_running and ok:
            try:
                keep_running(stack, progress)
            except KeyboardInterrupt:
                say("\nStopping.")
        return 0 if ok else 1


def cmd_label(args: argparse.Namespace) -> int:
    """`label`: one more signed pull_request.labeled delivery to a running try-out."""
    status, body = deliver(args.webhook, args.secret_file.read_bytes().strip(), "pull_request",
                           labeled_payload(args.repo, args.pull, args.sha, label=args.label))
    say(f"{status} {body.strip()}")
    return 0 if status == 202 else 1


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    logging.basicConfig(level=logging.WARNING, format="%(name)s: %(message)s")
    if args.command == "label":
        return cmd_label(args)
    signal.signal(signal.SIGTERM, _interrupt)  # stopped from outside: clean up as on Ctrl-C
    signal.signal(signal.SIGINT, signal.default_int_handler)  # even where started with Ctrl-C ignored
    folder = args.workdir.resolve() if args.workdir else Path(tempfile.mkdtemp(prefix="optimas-tryout-"))
    try:
        return run_tryout(args, folder)
    except KeyboardInterrupt:
        say("\nInterrupted: everything is stopped.")
        return 130
    except OptimasError as e:
        say(f"error: {e}")
        return e.exit_code
    finally:
        if args.workdir is None:
            shutil.rmtree(folder, ignore_errors=True)
