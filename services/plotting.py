"""Every Unmask plot: DET curves, score and rank histograms, VER per epoch, and how figures are
saved (PNG for pages, SVG for print).

Plots are drawn from already computed numbers; nothing here computes a metric. Importing this
module selects the non-interactive Agg backend, so plots work on servers and workers without a
display.
"""

from __future__ import annotations

import functools
import hashlib
import io
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter
from scipy.stats import norm

FORMATS = ("png", "svg")

RENDER_CACHE_ENTRIES = 256
"""Rendered plots kept per process (by content: the numbers and labels drawn)."""

_render_lock = threading.Lock()  # pyplot is not thread-safe: one figure at a time per process
_rendered: OrderedDict[str, bytes] = OrderedDict()
_rendered_lock = threading.Lock()
_Render = TypeVar("_Render", bound=Callable[..., bytes])


def cached_render(render: _Render) -> _Render:
    """``render`` (a function returning plot bytes from numbers and labels) cached by the content
    of its arguments, and run one at a time in this process: a server re-draws a plot only when
    what it shows changed, and its expensive renders never run more than one at once.

    ``render.cached(*args, **kwargs)``: the bytes of an earlier render, or None;
    ``render.remember(body, *args, **kwargs)``: keep ``body`` as the render of these arguments
    (drawn elsewhere: a server draws in a child process and caches in its own)."""

    def key_of(args: Any, kwargs: Any) -> str:
        return hashlib.sha256(
            repr((render.__name__, args, sorted(kwargs.items()))).encode()
        ).hexdigest()

    def cached(*args: Any, **kwargs: Any) -> bytes | None:
        """The bytes of an earlier render of the same content, or None (nothing drawn)."""
        key = key_of(args, kwargs)
        with _rendered_lock:
            if key in _rendered:
                _rendered.move_to_end(key)
                return _rendered[key]
        return None

    def remember(body: bytes, *args: Any, **kwargs: Any) -> None:
        key = key_of(args, kwargs)
        with _rendered_lock:
            _rendered[key] = body
            _rendered.move_to_end(key)
            while len(_rendered) > RENDER_CACHE_ENTRIES:
                _rendered.popitem(last=False)

    @functools.wraps(render)
    def wrapper(*args: Any, **kwargs: Any) -> bytes:
        found = cached(*args, **kwargs)
        if found is not None:
            return found
        with _render_lock:
            body = render(*args, **kwargs)
        remember(body, *args, **kwargs)
        return body

    wrapper.cached = cached  # type: ignore[attr-defined]
    wrapper.remember = remember  # type: ignore[attr-defined]
    return wrapper  # type: ignore[return-value]


def save_figure(fig: Figure, path_stem: Path) -> list[str]:
    """Write ``fig`` as ``path_stem``.png and .svg (110 dpi), close it; returns the file names."""
    path_stem.parent.mkdir(parents=True, exist_ok=True)
    names = []
    for ext in FORMATS:
        p = path_stem.with_suffix(f".{ext}")
        fig.savefig(p, dpi=110, bbox_inches="tight")
        names.append(p.name)
    plt.close(fig)
    return names


def _legend_outside(ax: Axes) -> None:
    """The legend right of the axes, never over the data (``bbox_inches="tight"`` keeps it)."""
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)


HISTOGRAM_PERCENTILES = (0.5, 99.5)
"""The score histograms' x range: these percentiles of all scores (%), so outliers do not squeeze
the bulk of the distribution into a few bins."""


def robust_range(
    values: np.ndarray, percentiles: tuple[float, float] = HISTOGRAM_PERCENTILES
) -> tuple[float, float, int]:
    """(low, high, n_outside): the ``percentiles`` of ``values`` and how many values lie outside.

    Falls back to the full range when the percentiles coincide (e.g. constant scores)."""
    finite = values[np.isfinite(values)]
    lo, hi = (float(v) for v in np.percentile(finite, percentiles))
    if not hi > lo:
        lo, hi = float(finite.min()), float(finite.max())
        if not hi > lo:
            lo, hi = lo - 0.5, hi + 0.5
    outside = int(np.count_nonzero((finite < lo) | (finite > hi)))
    return lo, hi, outside


# Privacy evaluations live near chance (EER 30-50 %), so the axes reach far above 50 %.
_DET_TICKS = [0.1, 0.5, 1, 2, 5, 10, 20, 40, 60, 80, 95]


def plot_det_curves(
    curves: Mapping[str, tuple[np.ndarray, np.ndarray]], path_stem: Path, title: str
) -> list[str]:
    """DET curves on probit axes. ``curves``: label -> (false-alarm rate, miss rate), fractions."""
    fig, ax = plt.subplots(figsize=(5, 5))
    _draw_det(ax, {label: (pfa, pmiss, None) for label, (pfa, pmiss) in curves.items()}, title)
    return save_figure(fig, path_stem)


def _draw_det(
    ax: Axes,
    curves: Mapping[str, tuple[np.ndarray, np.ndarray, float | None]],
    title: str,
) -> None:
    """DET curves (label -> pfa, pmiss, EER % or None) on probit axes; an EER marker (a dot on
    the diagonal) per curve that has an EER."""
    eps = 1e-4
    for label, (pfa, pmiss, eer) in curves.items():
        x = norm.ppf(np.clip(pfa, eps, 1 - eps))
        y = norm.ppf(np.clip(pmiss, eps, 1 - eps))
        (line,) = ax.plot(x, y, label=label)
        if eer is not None:
            at = norm.ppf(np.clip(eer / 100.0, eps, 1 - eps))
            ax.plot([at], [at], marker="o", color=line.get_color(), markersize=6,
                    markeredgecolor="black", linestyle="none")  # fmt: skip
    ticks = norm.ppf(np.array(_DET_TICKS) / 100)
    ax.set_xticks(ticks, [str(t) for t in _DET_TICKS])
    ax.set_yticks(ticks, [str(t) for t in _DET_TICKS])
    lim = norm.ppf([0.0005, 0.98])
    ax.set_xlim(*lim)
    ax.set_ylim(*lim)
    ax.plot(lim, lim, color="0.8", linestyle=":", linewidth=1)
    ax.set_xlabel("False acceptance rate (%)")
    ax.set_ylabel("False rejection rate (%)")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    _legend_outside(ax)


@cached_render
def render_det_overlay(
    curves: Mapping[str, tuple[Sequence[float], Sequence[float], float | None]],
    title: str,
    fmt: str = "png",
) -> bytes:
    """One DET plot comparing several systems (label -> pfa, pmiss fractions, EER %), each with
    its EER marked; returns the ``fmt`` (png or svg) bytes."""
    fig, ax = plt.subplots(figsize=(7.5, 5))
    _draw_det(
        ax,
        {k: (np.asarray(a, float), np.asarray(b, float), e) for k, (a, b, e) in curves.items()},
        title,
    )
    ax.plot([], [], marker="o", color="0.5", markeredgecolor="black", linestyle="none",
            label="EER (dot on the diagonal)")  # fmt: skip
    _legend_outside(ax)
    buffer = io.BytesIO()
    fig.savefig(buffer, format=fmt, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return buffer.getvalue()


@cached_render
def render_speaker_scatter(
    a: Sequence[float], b: Sequence[float], labels: tuple[str, str], title: str, fmt: str = "png"
) -> bytes:
    """Per-speaker EER (%) of two systems, one dot per speaker (x = a, y = b), with the
    diagonal: dots above it are speakers b protects better. Returns the ``fmt`` (png or svg)
    bytes."""
    fig, ax = plt.subplots(figsize=(5.5, 5.5))
    x, y = np.asarray(a, float), np.asarray(b, float)
    top = max(50.0, float(np.nanmax(np.concatenate([x, y, [0.0]]))) + 2.0)
    ax.plot([0, top], [0, top], color="0.6", linestyle="--", linewidth=1, label="a = b")
    ax.scatter(x, y, s=22, alpha=0.75, edgecolors="black", linewidths=0.4,
               label=f"{x.size} speakers")  # fmt: skip
    ax.set_xlim(0, top)
    ax.set_ylim(0, top)
    ax.set_aspect("equal")
    ax.set_xlabel(f"per-speaker EER (%), {labels[0]}")
    ax.set_ylabel(f"per-speaker EER (%), {labels[1]}")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper left")
    buffer = io.BytesIO()
    fig.savefig(buffer, format=fmt, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return buffer.getvalue()


def plot_score_histograms(
    target_scores: np.ndarray, nontarget_scores: np.ndarray, path_stem: Path, title: str
) -> list[str]:
    """Overlaid density histograms of target and non-target scores.

    The x range is :data:`HISTOGRAM_PERCENTILES` of all scores (:func:`robust_range`); the axis
    label says so and how many scores fall outside.
    """
    fig, ax = plt.subplots(figsize=(6, 3.5))
    pooled = np.concatenate([np.ravel(target_scores), np.ravel(nontarget_scores)])
    lo, hi, outside = robust_range(pooled)
    bins = np.linspace(lo, hi, 60).tolist()
    ax.hist(nontarget_scores, bins=bins, density=True, alpha=0.55, label="non-target")
    ax.hist(target_scores, bins=bins, density=True, alpha=0.55, label="target")
    p_lo, p_hi = HISTOGRAM_PERCENTILES
    ax.set_xlabel(
        f"score (range clipped to the {p_lo:g}-{p_hi:g} percentiles; {outside} of {pooled.size}"
        " scores outside)"
    )
    ax.set_xlim(lo, hi)
    ax.set_ylabel("density")
    ax.set_title(title)
    _legend_outside(ax)
    return save_figure(fig, path_stem)


def plot_rank_histogram(
    probabilities: np.ndarray,
    path_stem: Path,
    title: str,
    fitted: np.ndarray | None = None,
) -> list[str]:
    """Empirical matching-rank distribution p_k (k = 1..N), with chance level and a fitted pmf."""
    n = len(probabilities)
    ranks = np.arange(1, n + 1)
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.bar(ranks, probabilities, width=0.85, alpha=0.7, label="empirical")
    if fitted is not None:
        ax.plot(ranks, fitted, color="C3", marker=".", label="beta-binomial fit")
    ax.axhline(1.0 / n, color="0.4", linestyle="--", linewidth=1, label="chance (1/N)")
    ax.set_xlabel("rank of the matching reference")
    ax.set_ylabel("probability")
    ax.set_title(title)
    _legend_outside(ax)
    return save_figure(fig, path_stem)


def plot_training_history(
    epochs: Sequence[int],
    series: Mapping[str, Sequence[float | None]],
    path_stem: Path,
    title: str,
    levels: Mapping[str, float] | None = None,
) -> list[str]:
    """Validation error rates (%) per epoch, e.g. VER_S and VER_T.

    ``levels``: horizontal reference lines (label -> %), e.g. VER_T's chance level and the
    post-training probe's target error, drawn in grey, alternately dashed and dotted.
    """
    fig, ax = plt.subplots(figsize=(6, 3.5))
    for label, values in series.items():
        y = np.array([np.nan if v is None else v for v in values], dtype=float)
        if np.all(np.isnan(y)):
            continue
        ax.plot(list(epochs), y, marker="o", label=label)
    for i, (label, value) in enumerate((levels or {}).items()):
        ax.axhline(value, linestyle=("--", ":")[i % 2], color="0.4", linewidth=1, label=label)
    ax.set_xlabel("epoch")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # epochs are whole numbers
    ax.set_ylabel("validation error rate (%)")
    ax.set_ylim(0, 100)
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    _legend_outside(ax)
    return save_figure(fig, path_stem)


@cached_render
def render_privacy_utility(
    points: Sequence[tuple[str, float, float, bool, bool]],
    title: str,
    *,
    privacy_label: str,
    utility_bound: float | None,
    fmt: str = "png",
) -> bytes:
    """The privacy-utility scatter of a leaderboard: one point per submission, (label, WER
    increase in points, privacy metric, on the Pareto front, usable speech); the front joined by
    a line, unusable speech drawn as crosses, the protocol's WER bound as a dashed line. Returns
    the ``fmt`` (png or svg) bytes."""
    fig, ax = plt.subplots(figsize=(7.5, 5))
    usable = [p for p in points if p[4]]
    unusable = [p for p in points if not p[4]]
    if usable:
        ax.scatter([p[1] for p in usable], [p[2] for p in usable], s=28, color="C0",
                   label="submission")  # fmt: skip
    if unusable:
        ax.scatter([p[1] for p in unusable], [p[2] for p in unusable], s=40, marker="x",
                   color="C3", label="unusable speech (ranked last)")  # fmt: skip
    front = sorted((p for p in points if p[3]), key=lambda p: p[1])
    if front:
        ax.plot([p[1] for p in front], [p[2] for p in front], color="C2", marker="o",
                markerfacecolor="none", markersize=10, label="Pareto front")  # fmt: skip
    for label, x, y, on_front, _ in points:
        if on_front:
            ax.annotate(label[:30], (x, y), textcoords="offset points", xytext=(5, 4), fontsize=8)
    if utility_bound is not None:
        ax.axvline(utility_bound, color="0.4", linestyle="--",
                   label=f"utility bound ({utility_bound:g} points)")  # fmt: skip
    ax.set_xlabel("WER increase (percentage points; lower = more useful)")
    ax.set_ylabel(f"{privacy_label} (higher = more private)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    _legend_outside(ax)
    buffer = io.BytesIO()
    fig.savefig(buffer, format=fmt, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return buffer.getvalue()


LEGAL_PANELS = (
    ("linkability_top1", "Top-1 linkability %"),
    ("singling_out", "Singling out %"),
)
"""The two panels of the legal-metrics plot: curve ``metric`` name and axis label."""


LEGAL_REFERENCE_SPAN = 10.0
"""How far past this evaluation's largest population size N the published reference curves are
drawn (a factor on N): enough to see the trend, never so far that the measured points are
squeezed into a corner (the paper's curves run to 20,000 speakers)."""

LEGAL_FONT_SIZE = 11
"""Font size (pt) of the legal-metrics figure's labels, legible when the page shows it at its
natural width."""


def plot_legal_curves(
    curves: Sequence[Mapping[str, object]],
    references: Sequence[tuple[str, int, Sequence[int], Sequence[float], str]],
    path_stem: Path,
    title: str,
) -> list[str]:
    """Top-1 linkability and singling out (%) against the population size N (log axis).

    ``curves``: a results.json ``legal.curves`` list (one per metric and L: points with n,
    mean_percent, interval_percent, chance_percent); each L is a line with its interval over
    draws as a band, the chance level dashed. ``references``: (metric, L, n, percent, label)
    published curves drawn dotted, for the L this evaluation has, up to
    ``LEGAL_REFERENCE_SPAN`` times the largest N measured here (the x axis follows the measured
    points, not the references).
    """
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.6), sharey=True)
    lengths = sorted({int(c["conversation_length"]) for c in curves})  # type: ignore[call-overload]
    colors = {L: f"C{i}" for i, L in enumerate(lengths)}
    measured = [
        float(p["n"])
        for c in curves
        for p in c["points"]  # type: ignore[attr-defined]
    ]
    n_low, n_max = (min(measured), max(measured)) if measured else (1.0, 10.0)
    n_high = n_max * LEGAL_REFERENCE_SPAN
    shown_max = n_max
    for ax, (metric, label) in zip(axes, LEGAL_PANELS, strict=True):
        chance_drawn = False
        for curve in curves:
            if curve["metric"] != metric:
                continue
            L = int(curve["conversation_length"])  # type: ignore[call-overload]
            points = list(curve["points"])  # type: ignore[call-overload]
            n = np.array([p["n"] for p in points], dtype=float)
            mean = np.array([p["mean_percent"] for p in points])
            low = np.array([p["interval_percent"][0] for p in points])
            high = np.array([p["interval_percent"][1] for p in points])
            ax.plot(n, mean, marker="o", ms=4, color=colors[L], label=f"L = {L}")
            ax.fill_between(n, low, high, color=colors[L], alpha=0.2, linewidth=0)
            if not chance_drawn:
                chance = [p["chance_percent"] for p in points]
                ax.plot(n, chance, "k--", lw=1, label="chance")
                chance_drawn = True
        for ref_metric, L, ref_n, percent, ref_label in references:
            if ref_metric != metric or L not in colors:
                continue
            kept = [(x, y) for x, y in zip(ref_n, percent, strict=True) if x <= n_high]
            if kept:
                xs, ys = zip(*kept, strict=True)
                # Markers too: the measured range may reach only the paper's first N.
                ax.plot(xs, ys, ":", marker="s", ms=3, color=colors[L], lw=1.8, label=ref_label)
                shown_max = max(shown_max, *xs)
        ax.set_xscale("log")
        ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("population size N (speakers)", fontsize=LEGAL_FONT_SIZE)
        ax.set_ylabel(label, fontsize=LEGAL_FONT_SIZE)
        ax.tick_params(labelsize=LEGAL_FONT_SIZE - 1)
        ax.set_ylim(0, 102)
        ax.grid(True, which="both", alpha=0.3)
        ax.set_title(label, fontsize=LEGAL_FONT_SIZE + 1)
        if ax.get_legend_handles_labels()[0]:  # below the axes: never over the curves
            ax.legend(fontsize=LEGAL_FONT_SIZE - 2, loc="upper center", bbox_to_anchor=(0.5, -0.16))
    for ax in axes:  # one x range for both panels: the measured N and the references drawn
        ax.set_xlim(n_low / 1.25, shown_max * 1.25)
    fig.suptitle(title)
    return save_figure(fig, path_stem)
