"""Plots of a dataset-size sweep: EER (mean, std band, 95 % interval) and time against size."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

from services.plotting import save_figure

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

_XLABEL = {
    "speakers": "evaluation speakers",
    "enrollment": "enrollment utterances per speaker (1 trial)",
    "trials": "trial utterances per speaker",
}


def plot_size_sweep(rows: Sequence[Mapping[str, Any]], path_stem: Path) -> list[str]:
    """Two panels sharing the x axis (the swept size): EER mean with a +-1 std band and the
    2.5-97.5 percentile range of the repetitions (%), and seconds per repetition. PNG + SVG;
    returns the file names."""
    sweep = str(rows[0]["sweep"])
    # "all speakers" points are drawn at their actual speaker count.
    x = np.array([r["size"] if r["size"] is not None else r["n_speakers"] for r in rows], float)
    mean = np.array([r["eer_mean_percent"] for r in rows])
    std = np.array([r["eer_std_percent"] for r in rows])
    low = np.array([r["eer_interval95_percent"][0] for r in rows])
    high = np.array([r["eer_interval95_percent"][1] for r in rows])
    secs = np.array([r["seconds_per_repetition"] for r in rows])
    fig, (ax_eer, ax_t) = plt.subplots(
        2, 1, figsize=(6, 5.5), sharex=True, gridspec_kw={"height_ratios": [2, 1]}
    )
    ax_eer.fill_between(x, low, high, color="C0", alpha=0.12, label="2.5-97.5 % of repetitions")
    ax_eer.fill_between(x, mean - std, mean + std, color="C0", alpha=0.3, label="mean +- std")
    ax_eer.plot(x, mean, marker="o", color="C0", label="mean EER")
    ax_eer.set_ylabel("EER (%)")
    ax_eer.set_title(f"Dataset-size study: {sweep} ({rows[0]['repetitions']} repetitions/point)")
    ax_eer.grid(True, alpha=0.3)
    ax_eer.legend(fontsize=8)
    ax_t.plot(x, secs * 1000.0, marker="o", color="C1")
    ax_t.set_ylabel("ms per repetition")
    ax_t.set_xlabel(_XLABEL.get(sweep, sweep))
    ax_t.grid(True, alpha=0.3)
    if x.max() / max(x.min(), 1.0) >= 20:
        ax_t.set_xscale("log")
    return save_figure(fig, path_stem)
