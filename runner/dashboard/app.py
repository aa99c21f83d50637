"""The dashboard as a Flask app (read-only): `create_dashboard(runs_dir)`. The CLI serves it locally
(`optimas dashboard`); the GitHub App can mount the same pages behind authentication."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from flask import Flask, Response, abort, render_template, request

from runner.dashboard.charts import drawn, history_svg, roofline_svg, timing_svg
from runner.dashboard.runs import (
    UNREADABLE,
    ablation_svg,
    ablations,
    detail,
    evaluation_timing,
    kernel_history,
    list_runs,
    number,
    rooflines,
    run_folder,
)
from runner.evaluation.ear import EAR_SCORES, NOT_EVALUATED

log = logging.getLogger(__name__)

SORTS = {"created", "status", "app", "gpu", "model", "diagnostics", "verdict", "improvement"}
# What the pages and plots may load: nothing but their own images and inline styles. No script runs,
# not even in an SVG a run folder holds (an ablation's plot, served as written) opened on its own.
HEADERS = {"Content-Security-Policy": "default-src 'none'; img-src 'self' data:; style-src 'unsafe-inline'; "
                                      "form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
           "X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer"}


def create_dashboard(runs_dir: Path) -> Flask:
    """The dashboard over one runs folder."""
    app = Flask(__name__, template_folder=str(Path(__file__).parent / "templates"))
    runs_dir = Path(runs_dir)

    _filters(app)
    app.jinja_env.globals.update(ear_scores=EAR_SCORES, not_evaluated=NOT_EVALUATED)

    @app.after_request
    def protect(response: Response) -> Response:
        response.headers.update(HEADERS)
        return response

    @app.get("/")
    def runs() -> str:
        everything = list_runs(runs_dir)
        rows = list(everything)
        filters = {k: request.args.get(k, "") for k in ("app", "verdict", "gpu")}
        for key, value in filters.items():
            if value:
                rows = [r for r in rows if getattr(r, key) == value]
        sort = request.args.get("sort", "created")
        sort = sort if sort in SORTS else "created"
        descending = request.args.get("order", "desc") != "asc"
        known = [r for r in rows if getattr(r, sort) not in (None, "")]
        known.sort(key=lambda r: getattr(r, sort), reverse=descending)
        rows = known + [r for r in rows if getattr(r, sort) in (None, "")]  # rows without it last, either way
        choices = {k: sorted({getattr(r, k) for r in everything if getattr(r, k)}) for k in filters}
        return render_template("runs.html", rows=rows, filters=filters, choices=choices, sort=sort,
                               descending=descending, runs_dir=runs_dir)

    @app.get("/runs/<run_id>")
    def run(run_id: str) -> str:
        folder = run_folder(runs_dir, run_id) or abort(404)
        return render_template("run.html", run=detail(folder))

    @app.get("/runs/<run_id>/roofline-<int:index>.svg")
    def roofline(run_id: str, index: int) -> Response:
        folder = run_folder(runs_dir, run_id) or abort(404)
        kernels = rooflines(folder)
        if not 0 <= index < len(kernels):
            abort(404)
        r = kernels[index]
        before, after = r["before"], r["after"]
        return _chart(lambda: drawn("roofline", [before, after], lambda: roofline_svg(before, after)),
                      f"{run_id}: roofline {index}")

    @app.get("/runs/<run_id>/timing.svg")
    def timing(run_id: str) -> Response:
        folder = run_folder(runs_dir, run_id) or abort(404)
        t = evaluation_timing(folder)
        if not t:
            abort(404)
        return _chart(lambda: drawn("timing", t, lambda: timing_svg(t)), f"{run_id}: timing")

    @app.get("/apps/<name>")
    def app_page(name: str) -> str:
        rows = [r for r in list_runs(runs_dir) if r.app == name]
        if not rows:
            abort(404)
        return render_template("app.html", name=name, rows=rows, ablations=ablations(runs_dir, {r.id for r in rows}),
                               history=kernel_history(rows))

    @app.get("/apps/<name>/history.svg")
    def history(name: str) -> Response:
        rows = [r for r in list_runs(runs_dir) if r.app == name]
        if not rows:
            abort(404)
        def draw() -> str:  # the runs' records are read inside _chart, which answers for unreadable ones
            history = kernel_history(rows)
            return drawn("history", history, lambda: history_svg(history))

        return _chart(draw, f"{name}: history")

    @app.get("/ablations/<name>.svg")
    def ablation(name: str) -> Response:
        svg = ablation_svg(runs_dir, name) or abort(404)
        return Response(svg, mimetype="image/svg+xml")

    return app


# A chart whose run holds numbers of another shape than Optimas writes: this instead of a 500.
_UNREADABLE_SVG = ('<svg xmlns="http://www.w3.org/2000/svg" width="480" height="40"><text x="8" y="24">'
                   "unreadable: this run's records are not the shape Optimas writes</text></svg>")


def _chart(draw: Callable[[], str], what: str) -> Response:
    """A chart as SVG, or a chart that says its run's records could not be read."""
    try:
        svg = draw()
    except UNREADABLE as e:
        log.warning("%s: unreadable (%s)", what, type(e).__name__)
        svg = _UNREADABLE_SVG
    return Response(svg, mimetype="image/svg+xml")


def _filters(app: Flask) -> None:
    """The pages' filters over a run's values, whatever their type: a number formatted, or
    `missing` when it is not one; a kernel's short name; a list's words."""

    @app.template_filter("num")
    def num(value: Any, spec: str = "%.2f", scale: float = 1.0, missing: str = "") -> str:
        x = number(value)
        return missing if x is None else spec % (scale * x)

    @app.template_filter("kernel")
    def kernel(value: Any) -> str:
        return value.split("(")[0] if isinstance(value, str) else ""

    @app.template_filter("words")
    def words(value: Any) -> str:
        return ", ".join(map(str, value)) if isinstance(value, list) else str(value or "")
