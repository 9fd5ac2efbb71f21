"""The usable-speech guard: each degenerate case is caught, real (synthetic) speech passes."""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest

from services.errors import InvalidInputError
from services.utility.config import UsableSpeechThresholds, UtilityConfig
from services.utility.degenerate import (
    REASONS,
    assess_usable_speech,
    cross_speaker_cosine,
    rms_dbfs,
    utterance_stats,
)

SR = 16_000
T = UsableSpeechThresholds()


@cache
def corpus() -> tuple[tuple[np.ndarray, ...], tuple[str, ...]]:
    """Eight synthetic utterances (2-3 s) of eight speakers, and their speaker ids."""
    from services.corpus.synthetic import sample_speakers, synthesize_utterance

    speakers = sample_speakers(8, seed=11)
    waves = tuple(
        synthesize_utterance(s, np.random.default_rng(40 + k), min_duration_s=2, max_duration_s=3)
        for k, s in enumerate(speakers)
    )
    return waves, tuple(s.speaker_id for s in speakers)


def anonymize(name: str, params: dict[str, object] | None = None) -> list[np.ndarray]:
    from services.anonymizers.base import AnonymizationItem
    from services.anonymizers.registry import build_anonymizer

    waves, spk = corpus()
    items = [
        AnonymizationItem(f"u{k}", x, SR, s, "f")
        for k, (x, s) in enumerate(zip(waves, spk, strict=True))
    ]
    return build_anonymizer(name, params or {}).anonymize(items, seed=2)


def test_synthetic_speech_is_usable() -> None:
    waves, _ = corpus()
    verdict = assess_usable_speech(list(waves), list(waves), SR, T)
    assert verdict.usable and verdict.reasons == []
    assert verdict.stats["median_voiced_fraction"] > 0.4
    assert verdict.stats["median_flatness"] < 0.05
    assert -30 < verdict.stats["median_rms_dbfs"] < -10


@pytest.mark.parametrize("name", ["pitch", "vtln", "mcadams"])
def test_dsp_builtins_output_is_usable(name: str) -> None:
    waves, _ = corpus()
    verdict = assess_usable_speech(anonymize(name), list(waves), SR, T)
    assert verdict.usable, verdict
    assert verdict.stats["share_any"] == 0.0


def test_extreme_pitch_shifts_stay_usable() -> None:
    waves, _ = corpus()
    for semitones in (-12.0, 12.0):
        out = anonymize("pitch", {"semitones": semitones})
        assert assess_usable_speech(out, list(waves), SR, T).usable


def test_silence_is_detected() -> None:
    waves, _ = corpus()
    verdict = assess_usable_speech(anonymize("silence"), list(waves), SR, T)
    assert not verdict.usable and verdict.reasons == ["silence"]
    assert verdict.stats["share"]["silence"] == 1.0
    assert verdict.stats["median_rms_dbfs"] == -200.0  # digital silence, at the report floor
    # Dither at -70 dBFS is silence too.
    rng = np.random.default_rng(0)
    dither = [1e-3 / np.sqrt(3) * rng.uniform(-np.sqrt(3), np.sqrt(3), x.size) for x in waves]
    assert assess_usable_speech(dither, None, SR, T).reasons == ["silence"]


def test_near_silence_by_level_and_by_drop() -> None:
    waves, _ = corpus()
    quiet = [x * 10 ** (-32 / 20) for x in waves]  # about -52 dBFS: audible, barely
    verdict = assess_usable_speech(quiet, None, SR, T)
    assert verdict.reasons == ["near_silence"]
    # Only the drop against the originals (32 dB) flags it when the absolute bar is lower.
    lower_bar = T.model_copy(update={"near_silence_rms_dbfs": -55.0})
    assert assess_usable_speech(quiet, None, SR, lower_bar).usable
    verdict = assess_usable_speech(quiet, list(waves), SR, lower_bar)
    assert verdict.reasons == ["near_silence"]
    assert verdict.stats["median_level_drop_db"] == pytest.approx(32.0, abs=0.01)


@pytest.mark.parametrize("color", ["white", "pink", "brown", "speech"])
def test_noise_of_every_colour_is_detected(color: str) -> None:
    waves, _ = corpus()
    verdict = assess_usable_speech(anonymize("noise", {"color": color}), list(waves), SR, T)
    assert not verdict.usable and verdict.reasons == ["noise"], verdict
    assert verdict.stats["median_voiced_fraction"] < T.noise_max_voiced_fraction


def test_flat_spectrum_alone_flags_noise() -> None:
    # With the voicing test switched off (no voiced fraction is below 0), white noise is still
    # caught by its flat spectrum.
    rng = np.random.default_rng(3)
    noise = [0.1 * rng.standard_normal(2 * SR) for _ in range(3)]
    assert utterance_stats(noise[0], SR, T).flatness > T.noise_min_flatness
    no_voicing_test = T.model_copy(update={"noise_max_voiced_fraction": 0.0})
    assert assess_usable_speech(noise, None, SR, no_voicing_test).reasons == ["noise"]


def test_clipping_is_detected() -> None:
    waves, _ = corpus()
    clipped = [np.clip(x * 20, -1.0, 1.0) for x in waves]
    verdict = assess_usable_speech(clipped, list(waves), SR, T)
    assert verdict.reasons == ["clipping"]
    assert verdict.stats["max_clipped_share"] > T.clipping_max_share
    # A few clipped samples are not clipping.
    touched = [x.copy() for x in waves]
    for x in touched:
        x[:10] = 1.0
    assert assess_usable_speech(touched, None, SR, T).usable


def test_duplicate_waveforms_are_constant_output() -> None:
    waves, _ = corpus()
    # One clip for everyone, at each utterance's length and a different level.
    same = [np.resize(waves[0], x.size) * (0.3 + 0.1 * k) for k, x in enumerate(waves)]
    verdict = assess_usable_speech(same, list(waves), SR, T)
    assert verdict.reasons == ["constant_output"]
    assert verdict.stats["duplicate_share"] == 1.0


def test_one_voice_for_everyone_from_embeddings() -> None:
    waves, spk = corpus()
    rng = np.random.default_rng(4)
    one_voice = np.ones((len(spk), 32)) + 0.01 * rng.standard_normal((len(spk), 32))
    verdict = assess_usable_speech(
        list(waves), None, SR, T, anonymized_embeddings=one_voice, speakers=list(spk)
    )
    assert verdict.reasons == ["constant_output"]
    assert verdict.stats["cross_speaker_cosine"] > 0.99
    distinct = rng.standard_normal((len(spk), 32))
    verdict = assess_usable_speech(
        list(waves), None, SR, T, anonymized_embeddings=distinct, speakers=list(spk)
    )
    assert verdict.usable and verdict.stats["cross_speaker_cosine"] < 0.5


def test_cross_speaker_cosine_matches_pairwise_mean() -> None:
    rng = np.random.default_rng(5)
    emb = rng.standard_normal((7, 4))
    spk = ["a", "a", "b", "c", "c", "c", "d"]
    unit = emb / np.linalg.norm(emb, axis=1, keepdims=True)
    pairs = [unit[i] @ unit[j] for i in range(7) for j in range(7) if spk[i] != spk[j]]
    assert cross_speaker_cosine(emb, spk) == pytest.approx(np.mean(pairs), rel=1e-12)
    assert np.isnan(cross_speaker_cosine(emb, ["a"] * 7))


def test_empty_transcripts_are_no_words() -> None:
    waves, _ = corpus()
    n = len(waves)
    words = ["a b c"] * n
    assert assess_usable_speech(list(waves), None, SR, T, transcripts=words).usable
    mostly_empty = ["", " ", "x"] + [""] * (n - 3)
    verdict = assess_usable_speech(list(waves), None, SR, T, transcripts=mostly_empty)
    assert verdict.reasons == ["no_words"]
    assert verdict.stats["share"]["no_words"] == pytest.approx((n - 1) / n)


def test_a_minority_of_bad_utterances_is_tolerated_but_a_bad_mix_is_not() -> None:
    waves, _ = corpus()
    silent = anonymize("silence")
    noisy = anonymize("noise")
    few_bad = [silent[0], *waves[1:]]
    assert assess_usable_speech(few_bad, None, SR, T).usable
    # 3/8 silent + 3/8 noise: neither alone is "most", together they are.
    mix = [*silent[:3], *noisy[3:6], *waves[6:]]
    verdict = assess_usable_speech(mix, None, SR, T)
    assert verdict.reasons == ["silence", "noise"]
    assert verdict.stats["share_any"] == pytest.approx(6 / 8)


def test_statistics_of_a_tone() -> None:
    t = np.arange(SR) / SR
    tone = 0.5 * np.sin(2 * np.pi * 1000 * t)
    assert rms_dbfs(tone) == pytest.approx(20 * np.log10(0.5 / np.sqrt(2)), abs=1e-6)
    assert rms_dbfs(np.zeros(10)) == float("-inf")
    stats = utterance_stats(tone, SR, T)
    assert stats.clipped_share == 0.0 and stats.flatness < 0.01


def test_bad_input_is_named() -> None:
    waves, spk = corpus()
    with pytest.raises(InvalidInputError, match="no anonymized utterances"):
        assess_usable_speech([], None, SR, T)
    with pytest.raises(InvalidInputError, match="one original per anonymized"):
        assess_usable_speech(list(waves), list(waves[:2]), SR, T)
    with pytest.raises(InvalidInputError, match="transcripts"):
        assess_usable_speech(list(waves), None, SR, T, transcripts=["a"])
    with pytest.raises(InvalidInputError, match="need `speakers`"):
        assess_usable_speech(list(waves), None, SR, T, anonymized_embeddings=np.ones((8, 2)))
    with pytest.raises(InvalidInputError, match="NaN"):
        assess_usable_speech([np.array([0.1, np.nan])], None, SR, T)
    with pytest.raises(InvalidInputError, match="one speaker per row"):
        assess_usable_speech(
            list(waves), None, SR, T, anonymized_embeddings=np.ones((3, 2)), speakers=list(spk)
        )


def test_thresholds_config() -> None:
    assert UtilityConfig().usable_speech == UsableSpeechThresholds()
    cfg = UtilityConfig.model_validate({"usable_speech": {"silence_rms_dbfs": -70}})
    assert cfg.usable_speech.silence_rms_dbfs == -70.0
    with pytest.raises(ValueError, match="near_silence_rms_dbfs must lie above"):
        UsableSpeechThresholds(silence_rms_dbfs=-50, near_silence_rms_dbfs=-60)
    with pytest.raises(ValueError, match="extra"):
        UsableSpeechThresholds.model_validate({"silense_rms_dbfs": -70})
    assert set(REASONS) == {
        "silence",
        "near_silence",
        "noise",
        "constant_output",
        "clipping",
        "no_words",
    }


def test_block_processing_does_not_change_the_statistics(monkeypatch: pytest.MonkeyPatch) -> None:
    import services.utility.degenerate as degenerate

    x = corpus()[0][0]
    whole = utterance_stats(x, SR, T)
    monkeypatch.setattr(degenerate, "FRAME_BLOCK", 7)
    assert utterance_stats(x, SR, T) == whole
