"""A fresh linear probe of what a recognizer's embeddings encode (target, source identity).

The target head trained with the recognizer is a poor witness in adversarial mode: behind a
gradient reversal layer the recognizer can learn to *fool that head* (its VER_T rises past
chance) while encoding the target as strongly as before, only rearranged. A classifier fitted
after training, which the recognizer never saw, tells the two apart: if target information was
removed, the probe fails too; if the head was fooled, the probe still succeeds.

The probe is a nearest-class-mean classifier on centred, length-normalized embeddings (cosine
scoring, like the heads), fitted on a seeded random part of the utterances and tested on the rest.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

from services.errors import InvalidInputError


@dataclass(frozen=True)
class ProbeResult:
    """Held-out error rate of the probe (%), its chance level (%) and the split sizes."""

    error_rate_percent: float
    chance_percent: float
    n_classes: int
    n_fit: int
    n_test: int

    def as_dict(self) -> dict[str, float | int]:
        """JSON-ready."""
        return asdict(self)


def _unit_rows(x: np.ndarray) -> np.ndarray:
    # Unlike scoring's l2_normalize, a zero row (an utterance at the centroid) is not an error.
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.maximum(norms, 1e-12)


def probe_error_rate(
    embeddings: np.ndarray,
    labels: Sequence[str],
    *,
    test_fraction: float = 0.2,
    seed: int = 0,
) -> ProbeResult:
    """Error rate (%) of a nearest-class-mean cosine probe on a held-out ``test_fraction``.

    Test utterances whose class has no fitted utterance are not scored. Chance is the error rate
    of always answering the most frequent fitted class, on the same test utterances.
    """
    x = np.asarray(embeddings, dtype=np.float64)
    y = np.asarray(list(labels))
    if x.ndim != 2 or len(x) != len(y):
        raise InvalidInputError(
            f"probe: need one label per embedding row, got {x.shape} and {len(y)} labels"
        )
    if not 0.0 < test_fraction < 1.0:
        raise InvalidInputError(f"probe: test_fraction must be in (0, 1), got {test_fraction}")
    test = np.random.default_rng(seed).random(len(y)) < test_fraction
    fit_classes, fit_index = np.unique(y[~test], return_inverse=True)
    if len(fit_classes) < 2:
        raise InvalidInputError("probe: need at least two classes among the fitted utterances")
    x = _unit_rows(x - x[~test].mean(axis=0))
    sums = np.zeros((len(fit_classes), x.shape[1]))
    np.add.at(sums, fit_index, x[~test])
    means = _unit_rows(sums)
    scored = test & np.isin(y, fit_classes)
    if not scored.any():
        raise InvalidInputError("probe: no held-out utterance of a fitted class")
    predicted = fit_classes[np.argmax(x[scored] @ means.T, axis=1)]
    counts = np.bincount(fit_index, minlength=len(fit_classes))
    majority = fit_classes[int(np.argmax(counts))]
    return ProbeResult(
        error_rate_percent=float(np.mean(predicted != y[scored]) * 100.0),
        chance_percent=float(np.mean(y[scored] != majority) * 100.0),
        n_classes=len(fit_classes),
        n_fit=int((~test).sum()),
        n_test=int(scored.sum()),
    )
