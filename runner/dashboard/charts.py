"""Charts drawn on the server as SVG with matplotlib (no pyplot, no display): the roofline of a hot
kernel before and after the candidate, and the timing samples of baseline and candidate. A chart of
the same data is drawn once (`drawn`: the last DRAWN_KEPT, by their data's content): matplotlib
takes a quarter of a second for one, and a page's charts are asked again at every view."""

from __future__ import annotations

import hashlib
import io
import json
import threading
from collections import OrderedDict
from collections.abc import Callable

from matplotlib.backends.backend_svg import FigureCanvasSVG
from matplotlib.figure import Figure

_LEVELS = (("dram", "DRAM"), ("l2", "L2"), ("l1", "L1"))
DRAWN_KEPT = 64  # charts kept, the most recently asked
_drawn: OrderedDict[str, str] = OrderedDict()
_drawn_lock = threading.Lock()


def drawn(kind: str, data: object, draw: Callable[[], str]) -> str:
    """`draw()`'s chart of `data`, drawn once for the same content (JSON of what a run's records
    hold; data that cannot be written so is drawn each time)."""
    try:
        key = kind + ":" + hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()
    except (TypeError, ValueError, RecursionError):
        return draw()
    with _drawn_lock:
        if key in _drawn:
            _drawn.move_to_end(key)
            return _drawn[key]
    svg = draw()
    with _drawn_lock:
        _drawn[key] = svg
        while len(_drawn) > DRAWN_KEPT:
            _drawn.popitem(last=False)
    return svg


def _svg(fig: Figure) -> str:
    buf = io.StringIO()
    FigureCanvasSVG(fig).print_svg(buf)
    return buf.getvalue()


def _main_flops(roof: dict) -> dict | None:
    flops = [r for r in roof.get("resources", []) if r.get("measure") == "flops" and r.get("achieved")
             and r.get("peak")]
    return max(flops, key=lambda r: r["achieved"], default=None)


def roofline_svg(before: dict, after: dict | None = None) -> str:
    """The hierarchical roofline of one kernel, as Nsight Compute draws it: the GPU's roofs from the
    measured peaks (the main precision's FLOP rate; DRAM, L2 and L1 bandwidth) and, per memory
    level, the kernel's point at that level's own arithmetic intensity (FLOP per byte moved there),
    before (and after, when the candidate was profiled). A point at DRAM intensity alone would put
    an L1-bound kernel far right, on the compute side. Points carry the SVG ids
    point-before-<level> and point-after-<level> (level: dram, l2, l1)."""
    fig = Figure(figsize=(6.4, 4.2))
    ax = fig.add_subplot()
    ax.set_xscale("log")
    ax.set_yscale("log")
    main = _main_flops(before)
    bw = {r["name"]: r for r in before.get("resources", []) if r.get("measure") == "bandwidth" and r.get("peak")}
    xs = [10.0 ** (k / 8) for k in range(-32, 41)]
    peak = main["peak"] if main else max((r.get("peak") or 0 for r in before.get("resources", [])
                                          if r.get("unit") == "FLOP/s"), default=0.0)
    colors = {}
    for name, label in _LEVELS:
        if name in bw and peak:
            (line,) = ax.plot(xs, [min(peak, bw[name]["peak"] * x) for x in xs], label=f"{label} roof",
                              linewidth=1.2)
            colors[name] = line.get_color()
    ax.set_xlabel("arithmetic intensity (FLOP per byte at each memory level)")
    ax.set_ylabel(f"{(main or {}).get('name', 'fp32').upper()} FLOP/s")
    for tag, roof, marker, fill in (("before", before, "o", "full"), ("after", after, "s", "none")):
        for name, label, x, y in _points(roof) if roof else []:
            ax.plot([x], [y], marker, markersize=8, fillstyle=fill, color=colors.get(name), label=f"{label} {tag}",
                    gid=f"point-{tag}-{name}")
    ax.set_title(before.get("kernel", "").split("(")[0][:60], fontsize=9)
    ax.legend(fontsize=7, ncol=2)
    ax.grid(True, which="major", alpha=0.3)
    fig.tight_layout()
    return _svg(fig)


def _points(roof: dict) -> list[tuple[str, str, float, float]]:
    """(level, label, intensity, FLOP/s) for each memory level the kernel moved bytes at."""
    main = _main_flops(roof)
    if not main:
        return []
    moved = {r["name"]: r for r in roof.get("resources", []) if r.get("measure") == "bandwidth" and r.get("achieved")}
    return [(name, label, main["achieved"] / moved[name]["achieved"], main["achieved"])
            for name, label in _LEVELS if name in moved]


def timing_svg(timing: dict) -> str:
    """The timed samples of baseline and candidate (one point per process), with the medians and
    the improvement's interval in the title. Points carry the SVG ids samples-baseline, samples-candidate."""
    fig = Figure(figsize=(6.4, 2.8))
    ax = fig.add_subplot()
    for row, name in enumerate(("baseline", "candidate")):
        values = timing.get(name) or []
        ax.plot(values, [row] * len(values), "o", alpha=0.7, label=name, gid=f"samples-{name}")
    ax.set_yticks([0, 1], ["baseline", "candidate"])
    ax.set_xlabel(timing.get("metric", "time"))
    r = timing.get("result") or {}
    if r.get("improvement") is not None:
        ax.set_title(f"improvement {r['improvement']:+.1%} ({r['ci_low']:+.1%} to {r['ci_high']:+.1%}, "
                     f"{r.get('confidence', 0.95):.0%}), {r.get('samples', len(timing.get('baseline') or []))} pairs",
                     fontsize=9)
    ax.set_ylim(-0.6, 1.6)
    fig.tight_layout()
    return _svg(fig)


def history_svg(history: dict[str, list[tuple[str, float, float, float]]]) -> str:
    """Improvement per kernel across runs, each with its interval. Series carry the SVG ids
    history-<n> in the order of `history`."""
    fig = Figure(figsize=(6.4, 3.2))
    ax = fig.add_subplot()
    for n, (kernel, points) in enumerate(history.items()):
        xs = list(range(len(points)))
        ys = [100 * p[1] for p in points]
        err = [[100 * (p[1] - p[2]) for p in points], [100 * (p[3] - p[1]) for p in points]]
        ax.errorbar(xs, ys, yerr=err, marker="o", capsize=3, label=kernel.split("(")[0][:40], gid=f"history-{n}")
    ax.axhline(0, color="#888", linewidth=0.8)
    ax.set_xlabel("evaluated runs, oldest first")
    ax.set_ylabel("improvement (%)")
    if history:
        ax.legend(fontsize=7)
    fig.tight_layout()
    return _svg(fig)
