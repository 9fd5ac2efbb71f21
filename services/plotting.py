"""Every Unmask plot: DET curves, score and rank histograms, VER per epoch, and how figures are
saved (PNG for pages, SVG for print).

Plots are drawn from already computed numbers; nothing here computes a metric. Importing this
module selects the non-interactive Agg backend, so plots work on servers and workers without a
display.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure
from scipy.stats import norm

FORMATS = ("png", "svg")


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


# Privacy evaluations live near chance (EER 30-50 %), so the axes reach far above 50 %.
_DET_TICKS = [0.1, 0.5, 1, 2, 5, 10, 20, 40, 60, 80, 95]


def plot_det_curves(
    curves: Mapping[str, tuple[np.ndarray, np.ndarray]], path_stem: Path, title: str
) -> list[str]:
    """DET curves on probit axes. ``curves``: label -> (false-alarm rate, miss rate), fractions."""
    fig, ax = plt.subplots(figsize=(5, 5))
    eps = 1e-4
    for label, (pfa, pmiss) in curves.items():
        x = norm.ppf(np.clip(pfa, eps, 1 - eps))
        y = norm.ppf(np.clip(pmiss, eps, 1 - eps))
        ax.plot(x, y, label=label)
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
    ax.legend(fontsize=8)
    return save_figure(fig, path_stem)


def plot_score_histograms(
    target_scores: np.ndarray, nontarget_scores: np.ndarray, path_stem: Path, title: str
) -> list[str]:
    """Overlaid density histograms of target and non-target scores."""
    fig, ax = plt.subplots(figsize=(6, 3.5))
    lo = float(min(target_scores.min(), nontarget_scores.min()))
    hi = float(max(target_scores.max(), nontarget_scores.max()))
    bins = np.linspace(lo, hi, 60).tolist()
    ax.hist(nontarget_scores, bins=bins, density=True, alpha=0.55, label="non-target")
    ax.hist(target_scores, bins=bins, density=True, alpha=0.55, label="target")
    ax.set_xlabel("score")
    ax.set_ylabel("density")
    ax.set_title(title)
    ax.legend(fontsize=8)
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
    ax.legend(fontsize=8)
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
    ax.set_ylabel("validation error rate (%)")
    ax.set_ylim(0, 100)
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    return save_figure(fig, path_stem)
