"""The post-hoc probe: decodes what is there, fails on what is not, and is not fooled by a flip."""

from __future__ import annotations

import numpy as np
import pytest

from services.attacker.probe import probe_error_rate
from services.errors import InvalidInputError


def clustered(n_classes: int, per_class: int, spread: float, seed: int = 0) -> tuple:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((n_classes, 16))
    labels = np.repeat([f"c{k}" for k in range(n_classes)], per_class)
    x = np.repeat(centres, per_class, axis=0) + spread * rng.standard_normal((len(labels), 16))
    return x, labels


def test_separable_classes_are_decoded_and_noise_is_at_chance() -> None:
    x, labels = clustered(8, 40, spread=0.1)
    assert probe_error_rate(x, labels).error_rate_percent == 0.0

    noise = np.random.default_rng(1).standard_normal(x.shape)
    result = probe_error_rate(noise, labels)
    assert result.n_classes == 8 and result.n_fit + result.n_test == len(labels)
    assert abs(result.error_rate_percent - result.chance_percent) < 15.0
    assert result.chance_percent > 80.0


def test_a_head_fooled_by_anti_alignment_does_not_fool_the_probe() -> None:
    # Each class moved to the opposite of its own centre: a fixed head that scores against the
    # original centres is always wrong (error 100 %), yet the information is all still there.
    x, labels = clustered(8, 40, spread=0.1)
    centres = np.stack([x[labels == c].mean(axis=0) for c in sorted(set(labels))])
    flipped = -x
    head_predictions = np.argmax(flipped @ centres.T, axis=1)
    head_error = np.mean(np.array(sorted(set(labels)))[head_predictions] != labels) * 100
    assert head_error == 100.0
    assert probe_error_rate(flipped, labels).error_rate_percent == 0.0


def test_split_is_seeded_and_inputs_are_checked() -> None:
    x, labels = clustered(4, 10, spread=1.0)
    assert probe_error_rate(x, labels, seed=3) == probe_error_rate(x, labels, seed=3)
    with pytest.raises(InvalidInputError, match="one label per embedding"):
        probe_error_rate(x, labels[:-1])
    with pytest.raises(InvalidInputError, match="two classes"):
        probe_error_rate(x, ["same"] * len(x))
    with pytest.raises(InvalidInputError, match="test_fraction"):
        probe_error_rate(x, labels, test_fraction=1.5)
