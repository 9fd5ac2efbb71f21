"""Saving matplotlib figures the one way every Unmask plot is saved (PNG for pages, SVG for print).

Importing this module selects the non-interactive Agg backend, so plots work on servers and
workers without a display.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
from matplotlib.figure import Figure

FORMATS = ("png", "svg")


def save_figure(fig: Figure, path_stem: Path) -> list[str]:
    """Write ``fig`` as ``path_stem``.png and .svg (110 dpi), close it; returns the file names."""
    import matplotlib.pyplot as plt

    path_stem.parent.mkdir(parents=True, exist_ok=True)
    names = []
    for ext in FORMATS:
        p = path_stem.with_suffix(f".{ext}")
        fig.savefig(p, dpi=110, bbox_inches="tight")
        names.append(p.name)
    plt.close(fig)
    return names
