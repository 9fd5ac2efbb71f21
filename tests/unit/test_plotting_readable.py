"""Plots stay readable: histograms are not squeezed by outliers, legends sit outside the axes,
epochs are whole numbers, the overlaid DET plot marks each EER."""

from __future__ import annotations

import re
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pytest

from services import plotting


def test_robust_range_ignores_outliers_and_counts_them() -> None:
    rng = np.random.default_rng(0)
    scores = np.concatenate([rng.normal(0.0, 1.0, 10_000), [1e6, -1e6]])
    lo, hi, outside = plotting.robust_range(scores)
    assert -4.0 < lo < -2.0 and 2.0 < hi < 4.0  # the bulk, not +-1e6
    assert outside == int(np.count_nonzero((scores < lo) | (scores > hi))) >= 2
    assert plotting.robust_range(np.full(5, 3.0))[:2] == (2.5, 3.5)  # constant: a unit window


def _figures_written(monkeypatch: pytest.MonkeyPatch) -> list[plt.Figure]:
    kept: list[plt.Figure] = []
    monkeypatch.setattr(plotting, "save_figure", lambda fig, stem: kept.append(fig) or [])
    return kept


def test_histogram_axis_says_it_is_clipped_and_legends_are_outside(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    figures = _figures_written(monkeypatch)
    rng = np.random.default_rng(1)
    plotting.plot_score_histograms(
        np.append(rng.normal(2, 1, 500), 900.0), rng.normal(0, 1, 2000), tmp_path / "s", "t"
    )
    plotting.plot_training_history(
        [1, 2, 3], {"VER_S": [60.0, 40.0, 30.0]}, tmp_path / "h", "t", {"chance": 50.0}
    )
    histogram, history = (f.axes[0] for f in figures)
    label = histogram.get_xlabel()
    match = re.search(r"percentiles; (\d+) of 2501 scores outside", label)
    assert match is not None and 1 <= int(match.group(1)) <= 30, label  # ~1 % + the outlier
    assert histogram.get_xlim()[1] < 10  # the outlier at 900 does not stretch the axis
    for ax in (histogram, history):
        anchor = ax.get_legend().get_bbox_to_anchor().transformed(ax.transAxes.inverted())
        assert anchor.x0 > 1.0  # right of the axes, never over the data
    ticks = [t for t in history.get_xticks() if 1 <= t <= 3]
    assert ticks and all(float(t).is_integer() for t in ticks)
    for figure in figures:
        plt.close(figure)


def test_det_overlay_is_an_image_with_one_eer_marker_per_curve() -> None:
    pfa = np.linspace(0.01, 0.99, 20)
    curves = {"a": (pfa, pfa[::-1], 50.0), "b": (pfa, pfa[::-1] * 0.5, None)}
    png = plotting.render_det_overlay(curves, "DET", fmt="png")
    svg = plotting.render_det_overlay(curves, "DET", fmt="svg").decode()
    assert png[:4] == b"\x89PNG"
    assert "EER (dot on the diagonal)" in svg
