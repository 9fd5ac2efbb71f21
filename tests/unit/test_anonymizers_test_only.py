"""The test-only built-ins ``silence`` and ``noise``: contract, seeding, registry, config checks."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy.signal import welch

from services.anonymizers.base import AnonymizationItem, TargetVoice, VoiceProfile
from services.anonymizers.builtin import PEAK_LIMIT
from services.anonymizers.degenerate import NOISE_COLORS, NoiseAnonymizer, SilenceAnonymizer
from services.anonymizers.kinds.registry import kind_of
from services.anonymizers.registry import (
    ALL_BUILTIN_NAMES,
    BUILTIN_NAMES,
    TEST_ONLY_NAMES,
    build_anonymizer,
)
from services.errors import ConfigError, InvalidInputError
from services.pipeline.config import parse_config

SR = 16_000


def speech(seconds: float = 1.5, seed: int = 0) -> np.ndarray:
    from services.corpus.synthetic import sample_speakers, synthesize_utterance

    spk = sample_speakers(1, seed=seed)[0]
    return synthesize_utterance(spk, np.random.default_rng(seed), duration_s=seconds)


def items(n: int = 3) -> list[AnonymizationItem]:
    target = TargetVoice("t1", "f", VoiceProfile(220.0, 1.1))
    return [
        AnonymizationItem(f"u{k}", speech(1.0 + 0.37 * k, k), SR, f"s{k}", "m", target)
        for k in range(n)
    ]


def rms(x: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.asarray(x, np.float64) ** 2)))


@pytest.mark.parametrize("name", TEST_ONLY_NAMES)
def test_registered_but_not_offered_to_makers(name: str) -> None:
    assert name not in BUILTIN_NAMES and name in ALL_BUILTIN_NAMES
    assert set(BUILTIN_NAMES) == {"pitch", "vtln", "mcadams"}
    assert ALL_BUILTIN_NAMES == BUILTIN_NAMES + TEST_ONLY_NAMES
    assert build_anonymizer(name).name == name
    config = parse_config({"anonymizer": {"kind": "builtin", "name": name}}).anonymizer
    assert kind_of(config).build(config, None).name == name  # type: ignore[arg-type]


def test_the_platform_schema_offers_the_real_builtins_only() -> None:
    import typing

    from api.schemas import BuiltinName

    assert set(typing.get_args(BuiltinName)) == set(BUILTIN_NAMES)


@pytest.mark.parametrize(
    "anonymizer",
    [SilenceAnonymizer(), *(NoiseAnonymizer(c) for c in NOISE_COLORS)],
    ids=["silence", *NOISE_COLORS],
)
def test_output_contract(anonymizer: SilenceAnonymizer | NoiseAnonymizer) -> None:
    batch = items()
    out = anonymizer.anonymize(batch, seed=3)
    assert len(out) == len(batch)
    for it, y in zip(batch, out, strict=True):
        assert y.dtype == np.float32 and y.ndim == 1 and y.size == it.waveform.size
        assert np.isfinite(y).all() and np.max(np.abs(y)) <= PEAK_LIMIT + 1e-6
        if anonymizer.name == "silence":
            assert not y.any()
        else:
            assert rms(y) == pytest.approx(rms(it.waveform), rel=1e-3)  # the input's level
            # Nothing of the input's waveform (random phases: only chance correlation).
            assert abs(np.corrcoef(y, it.waveform)[0, 1]) < 0.3
    outputs, parameters = anonymizer.anonymize_with_parameters(batch, seed=3)
    assert parameters == [0.0] * len(batch)
    for y1, y2 in zip(out, outputs, strict=True):
        np.testing.assert_array_equal(y1, y2)


def test_noise_is_seeded_per_utterance_and_independent_of_order() -> None:
    batch = items()
    noise = NoiseAnonymizer("pink")
    first = noise.anonymize(batch, seed=7)
    again = NoiseAnonymizer("pink").anonymize(batch[::-1], seed=7)[::-1]
    for y1, y2 in zip(first, again, strict=True):
        np.testing.assert_array_equal(y1, y2)
    other = noise.anonymize(batch, seed=8)
    assert not np.array_equal(first[0], other[0])
    assert not np.array_equal(first[0][:1000], first[1][:1000])  # utterances differ


def test_noise_colours_have_their_spectral_slopes() -> None:
    x = speech(3.0)
    it = [AnonymizationItem("u", x, SR, "s", "f")]

    def slope_db_per_octave(y: np.ndarray) -> float:
        f, p = welch(y, SR, nperseg=2048)
        band = (f >= 100) & (f <= 6000)
        return float(np.polyfit(np.log2(f[band]), 10 * np.log10(p[band]), 1)[0])

    slopes = {c: slope_db_per_octave(NoiseAnonymizer(c).anonymize(it, 0)[0]) for c in NOISE_COLORS}
    assert abs(slopes["white"]) < 1.0
    assert slopes["pink"] == pytest.approx(-3.0, abs=1.0)
    assert slopes["brown"] == pytest.approx(-6.0, abs=1.0)
    assert slopes["speech"] == pytest.approx(slope_db_per_octave(x), abs=1.5)


def test_parameters_are_checked() -> None:
    assert build_anonymizer("noise", {"color": "brown"}).config()["color"] == "brown"
    with pytest.raises(InvalidInputError, match="color must be one of"):
        build_anonymizer("noise", {"color": "purple"})
    with pytest.raises(InvalidInputError, match="allowed: none"):
        build_anonymizer("silence", {"level": "1"})
    with pytest.raises(InvalidInputError, match=r"test only: silence, noise"):
        build_anonymizer("nope")
    with pytest.raises(InvalidInputError, match="sample rate"):
        SilenceAnonymizer().anonymize([AnonymizationItem("u", np.ones(10), 8000, "s", "m")], 0)


def test_evaluation_config_accepts_test_only_builtins(tmp_path: Path) -> None:
    from services.pipeline.config_checks import load_checked_config

    path = tmp_path / "c.yaml"
    path.write_text("anonymizer:\n  kind: builtin\n  name: noise\n  params: {color: pink}\n")
    assert load_checked_config(path).anonymizer.name == "noise"
    path.write_text("anonymizer:\n  kind: builtin\n  name: silence\n")
    assert load_checked_config(path).anonymizer.name == "silence"
    path.write_text("anonymizer:\n  kind: builtin\n  name: noise\n  params: {color: red}\n")
    with pytest.raises(ConfigError, match=r"anonymizer\.params: noise: color must be one of"):
        load_checked_config(path)
