"""Built-in synthetic multi-speaker corpus of speech-like audio (PROTOCOLS.md section 1).

Nothing can be downloaded, so tests and the demo run on audio made here. It is not speech: it is a
source-filter model whose *voice* parameters (F0 level and range, jitter, shimmer, vocal-tract
length, per-formant offsets, formant bandwidths, glottal open quotient, spectral tilt, breathiness,
nasal resonance, speaking rate) are drawn per speaker, and whose *content* (sequences of vowels,
fricatives, stops, nasals and pauses from one shared inventory) is drawn per utterance. Speaker
identity therefore lives in the same places it lives in real voices, so a recognizer can learn it,
and pitch scaling / VTLN anonymizers move exactly the parameters they are meant to hide.

Synthesis is vectorized: a phase-continuous Rosenberg glottal pulse train (with per-cycle jitter and
shimmer) plus aspiration noise is shaped frame by frame in the STFT domain by a cascade of five
formant resonators whose frequencies glide between segment targets; fricatives and stop bursts are
noise shaped by a second, frication envelope. One 5 s utterance takes a few milliseconds.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from services.audio import SAMPLE_RATE_HZ, audio_info, write_audio
from services.corpus.loaders import read_manifest, write_manifest
from services.corpus.manifest import Gender, Manifest, Utterance
from services.corpus.synthetic_dsp import (
    _FREQS_HZ,
    _HOP,
    _N_FFT,
    _OLA_GAIN,
    _PAD_LEFT,
    _PULSE_TABLE_SIZE,
    _RAMP,
    _TOP_TAPER,
    _n_frames,
    _overlap_add,
    _resonator_magnitude,
    _rosenberg_table,
    _smooth,
    _stft,
)
from services.errors import ConfigError, CorpusError

FloatArray = npt.NDArray[np.float64]
Float32Array = npt.NDArray[np.float32]

GENERATOR_VERSION = 1
"""Bumped whenever the audio for a given seed changes; stored in ``params.json``."""

PEAK_DBFS = -3.0
"""Every utterance is peak-normalized to this level (dB full scale)."""

NOISE_FLOOR_DBFS = -70.0
"""RMS level of the white noise floor added after normalization (dB full scale)."""

VOWEL_FORMANTS_HZ: dict[str, tuple[float, float, float, float]] = {
    # F1-F4 of adult male American English vowels (Hillenbrand et al. 1995, means). A speaker's
    # formants are these times its ``formant_scale`` and ``formant_offsets``.
    "i": (342.0, 2322.0, 3000.0, 3657.0),
    "I": (427.0, 2034.0, 2684.0, 3618.0),
    "e": (476.0, 2089.0, 2691.0, 3649.0),
    "E": (580.0, 1799.0, 2605.0, 3677.0),
    "ae": (588.0, 1952.0, 2601.0, 3624.0),
    "a": (768.0, 1333.0, 2522.0, 3687.0),
    "O": (652.0, 997.0, 2538.0, 3486.0),
    "o": (497.0, 910.0, 2459.0, 3384.0),
    "U": (469.0, 1122.0, 2434.0, 3400.0),
    "u": (378.0, 997.0, 2343.0, 3357.0),
}
REFERENCE_F5_HZ = 4500.0
REFERENCE_BANDWIDTHS_HZ = (70.0, 90.0, 140.0, 220.0, 320.0)
NASAL_FORMANTS_HZ = (1000.0, 2200.0, 3300.0)
"""F2-F4 of the nasal murmur (reference speaker); F1 is the speaker's ``nasal_hz``."""
NASAL_BANDWIDTHS_HZ = (100.0, 200.0, 300.0, 400.0, 500.0)

# Frication spectra, reference speaker: (centre Hz, bandwidth Hz, level). Centres scale with the
# speaker's vocal-tract length like formants do (a shorter front cavity resonates higher).
_FRICATIVES: dict[str, tuple[float, float, float]] = {
    "s": (5200.0, 1800.0, 0.45),
    "S": (2900.0, 1300.0, 0.5),
    "f": (5500.0, 6000.0, 0.12),
}
_BURSTS: dict[str, tuple[float, float, float]] = {
    "p": (1200.0, 3000.0, 0.5),
    "t": (4300.0, 2500.0, 0.6),
    "k": (2300.0, 1200.0, 0.6),
}
_VOICED_STOP_PLACE = {"b": "p", "d": "t", "g": "k"}
_ONSETS = ("", "", "s", "S", "f", "h", "p", "t", "k", "b", "d", "g", "m", "n")
_CODAS = ("s", "t", "k", "n", "m", "d")

_VOWEL_TABLE = np.array(list(VOWEL_FORMANTS_HZ.values()), dtype=np.float64)
_VOWELS = tuple(VOWEL_FORMANTS_HZ)

UNIT_CLASSES: tuple[tuple[str, ...], ...] = (
    ("i",),
    # /I e/ and /E ae/ differ by one formant by 3-11 %, no more than two speakers' per-formant
    # offsets do (4-6 % s.d.): a recognizer trained on 24 speakers confused them in about a third
    # of cases (benchmarks/asr_cost.py), so each pair is one unit.
    ("I", "e"),
    ("E", "ae"),
    ("a",),
    ("O",),
    ("o",),
    ("U",),
    ("u",),
    ("s",),
    ("S",),
    ("f",),
    ("h",),
    ("p",),
    ("t",),
    ("k",),
    ("b",),
    ("d",),
    ("g",),
    ("m", "n"),  # the same nasal murmur for both: no acoustic difference to learn
)
"""The transcript's unit inventory: class ``k`` is written ``u<k>``; the phones in one class sound
alike (or nearly) in this synthesizer, so a transcript never asks a recognizer to tell them
apart."""

UNIT_TOKENS: dict[str, str] = {
    symbol: f"u{k}" for k, members in enumerate(UNIT_CLASSES) for symbol in members
}
"""Phone symbol -> its transcript token (``u0``..)."""


@dataclass(frozen=True)
class SyntheticSpeaker:
    """Voice parameters of one synthetic speaker (units in the field names or below).

    ``formant_scale`` is the vocal-tract-length factor: every formant (and fricative centre) is the
    reference value times it (about 0.85 for a long male tract, 1.2 for a short female one).
    ``formant_offsets`` are extra per-formant factors for F1..F5, so identity is not a single
    number. ``jitter`` / ``shimmer`` are relative cycle-to-cycle standard deviations of period and
    amplitude (0.01 = 1 %). ``open_quotient`` is the glottal open fraction of a cycle (higher is
    softer, with a steeper spectral tilt). ``breathiness`` is the aspiration noise level relative
    to the glottal pulse RMS. ``speaking_rate`` divides every segment duration.
    """

    speaker_id: str
    gender: Gender
    f0_hz: float
    f0_range_semitones: float
    jitter: float
    shimmer: float
    formant_scale: float
    formant_offsets: tuple[float, float, float, float, float]
    bandwidth_scale: float
    open_quotient: float
    spectral_tilt_db_per_octave: float
    breathiness: float
    nasal_hz: float
    speaking_rate: float

    def formants_hz(self, vowel: str) -> FloatArray:
        """F1-F5 (Hz) of ``vowel`` (a key of ``VOWEL_FORMANTS_HZ``) for this speaker."""
        ref = np.array([*VOWEL_FORMANTS_HZ[vowel], REFERENCE_F5_HZ])
        return _ordered_formants(ref * self.formant_scale * np.asarray(self.formant_offsets))


def _log_uniform(rng: np.random.Generator, low: float, high: float) -> float:
    return float(math.exp(rng.uniform(math.log(low), math.log(high))))


def _speaker_id(index: int) -> str:
    return f"syn{index + 1:04d}"


def _draw_speaker(speaker_id: str, gender: Gender, rng: np.random.Generator) -> SyntheticSpeaker:
    female = gender == "f"
    offsets = np.exp(rng.normal(0.0, [0.04, 0.05, 0.05, 0.06, 0.06]))
    return SyntheticSpeaker(
        speaker_id=speaker_id,
        gender=gender,
        f0_hz=_log_uniform(rng, 165.0, 255.0) if female else _log_uniform(rng, 85.0, 150.0),
        f0_range_semitones=float(rng.uniform(1.5, 5.0)),
        jitter=_log_uniform(rng, 0.003, 0.02),
        shimmer=float(rng.uniform(0.02, 0.08)),
        formant_scale=_log_uniform(rng, 1.02, 1.2) if female else _log_uniform(rng, 0.85, 1.02),
        formant_offsets=tuple(float(v) for v in np.clip(offsets, 0.88, 1.12)),  # type: ignore[arg-type]
        bandwidth_scale=_log_uniform(rng, 0.75, 1.35),
        open_quotient=float(rng.uniform(0.55, 0.8) if female else rng.uniform(0.45, 0.7)),
        spectral_tilt_db_per_octave=float(rng.uniform(-3.0, 1.0)),
        breathiness=_log_uniform(rng, 0.04, 0.35) if female else _log_uniform(rng, 0.02, 0.25),
        nasal_hz=float(rng.uniform(220.0, 320.0)),
        speaking_rate=_log_uniform(rng, 0.8, 1.25),
    )


def sample_speakers(n: int, seed: int = 0) -> list[SyntheticSpeaker]:
    """``n`` speakers ``syn0001``.. with balanced genders (ceil(n/2) female), seeded.

    Genders are assigned by a seeded shuffle; speaker ``i``'s voice depends only on ``seed``, ``i``
    and its gender, so it is the same voice in a smaller or larger corpus with the same gender.
    """
    if n < 1:
        raise ConfigError(f"n_speakers must be >= 1, got {n}")
    _check_seed(seed)
    female: list[Gender] = ["f"] * ((n + 1) // 2)
    male: list[Gender] = ["m"] * (n // 2)
    genders = female + male
    order = np.random.default_rng([seed, 1]).permutation(n)
    shuffled: list[Gender] = [genders[k] for k in order]
    return [
        _draw_speaker(_speaker_id(i), shuffled[i], np.random.default_rng([seed, 0, i]))
        for i in range(n)
    ]


def _check_seed(seed: int) -> None:
    if not isinstance(seed, int) or seed < 0:
        raise ConfigError(f"seed must be a non-negative integer, got {seed!r}")


def _ordered_formants(f: FloatArray) -> FloatArray:
    """Formants strictly increasing (>= 150 Hz apart) and below 7.4 kHz."""
    out = np.minimum(f, 7400.0)
    for k in range(len(out) - 2, -1, -1):
        out[k] = min(out[k], out[k + 1] - 150.0)
    return out


@dataclass
class _Segment:
    """A stretch of the utterance with constant targets (frequencies in Hz, gains linear)."""

    n: int
    formants: FloatArray
    bandwidths: FloatArray
    voicing: float = 0.0
    aspiration: float = 0.0
    frication: float = 0.0
    fric_center_hz: float = 4000.0
    fric_bandwidth_hz: float = 2000.0
    accent: float = 0.0  # pitch-accent height (semitones) centred on this segment
    phrase: int = 0
    # Transcript only (never read by the synthesis): the phone this segment belongs to and that
    # phone's running number in the utterance (a stop's closure, burst and aspiration share one).
    symbol: str = ""
    phone: int = -1


class _UtteranceBuilder:
    """Draws the segment sequence of one utterance (content shared by all speakers)."""

    def __init__(self, speaker: SyntheticSpeaker, rng: np.random.Generator, formant_jitter: float):
        self.spk = speaker
        self.rng = rng
        self.scale = speaker.formant_scale * formant_jitter
        self.rate = speaker.speaking_rate * math.exp(rng.normal(0.0, 0.06))
        bw = np.asarray(REFERENCE_BANDWIDTHS_HZ) * speaker.bandwidth_scale
        bw[0] += 150.0 * speaker.breathiness  # an open glottis damps F1
        self.bandwidths = bw
        self.offsets = np.asarray(speaker.formant_offsets)
        nasal = np.array([speaker.nasal_hz, *NASAL_FORMANTS_HZ, REFERENCE_F5_HZ])
        nasal[1:] *= self.scale * self.offsets[1:]
        self.nasal_formants = _ordered_formants(nasal)
        self.nasal_bandwidths = np.asarray(NASAL_BANDWIDTHS_HZ) * speaker.bandwidth_scale
        self.n_phones = 0

    def tag(self, symbol: str, segs: list[_Segment]) -> list[_Segment]:
        """Marks ``segs`` as one phone ``symbol`` (transcript bookkeeping, no rng draws)."""
        for seg in segs:
            seg.symbol, seg.phone = symbol, self.n_phones
        self.n_phones += 1
        return segs

    def seconds(self, low: float, high: float) -> int:
        """A duration drawn in [low, high] s at the reference rate, in samples at this rate."""
        return max(1, round(self.rng.uniform(low, high) / self.rate * SAMPLE_RATE_HZ))

    def vowel_formants(self, index: int) -> FloatArray:
        ref = np.append(_VOWEL_TABLE[index], REFERENCE_F5_HZ)
        return _ordered_formants(ref * self.scale * self.offsets)

    def silence(self, n: int, formants: FloatArray, phrase: int) -> _Segment:
        return _Segment(n, formants, self.bandwidths, phrase=phrase)

    def consonant(self, symbol: str, formants: FloatArray, phrase: int) -> list[_Segment]:
        """Segments of a consonant next to a vowel with ``formants``, tagged as one phone."""
        return self.tag(symbol, self._consonant(symbol, formants, phrase))

    def _consonant(self, symbol: str, formants: FloatArray, phrase: int) -> list[_Segment]:
        bw = self.bandwidths
        if symbol in _FRICATIVES:
            fc, fb, level = _FRICATIVES[symbol]
            n = self.seconds(0.07, 0.12)
            return [
                _Segment(
                    n,
                    formants,
                    bw,
                    frication=level,
                    fric_center_hz=fc * self.scale,
                    fric_bandwidth_hz=fb * self.scale,
                    phrase=phrase,
                )
            ]
        if symbol == "h":
            return [_Segment(self.seconds(0.05, 0.09), formants, bw, aspiration=0.5, phrase=phrase)]
        if symbol in ("m", "n"):
            return [
                _Segment(
                    self.seconds(0.05, 0.08),
                    self.nasal_formants,
                    self.nasal_bandwidths,
                    voicing=0.3,
                    phrase=phrase,
                )
            ]
        voiced = symbol in _VOICED_STOP_PLACE
        fc, fb, level = _BURSTS[_VOICED_STOP_PLACE.get(symbol, symbol)]
        closure = _Segment(
            self.seconds(0.04, 0.07),
            self.nasal_formants,
            self.nasal_bandwidths,
            voicing=0.06 if voiced else 0.0,
            phrase=phrase,
        )
        burst = _Segment(
            self.seconds(0.01, 0.015),
            formants,
            bw,
            frication=level,
            fric_center_hz=fc * self.scale,
            fric_bandwidth_hz=fb * self.scale,
            phrase=phrase,
        )
        out = [closure, burst]
        if not voiced:
            out.append(
                _Segment(self.seconds(0.03, 0.06), formants, bw, aspiration=0.35, phrase=phrase)
            )
        return out

    def syllable(self, phrase: int, stressed: bool) -> list[_Segment]:
        rng = self.rng
        vowel = int(rng.integers(len(_VOWEL_TABLE)))
        formants = self.vowel_formants(vowel)
        out: list[_Segment] = []
        onset = _ONSETS[int(rng.integers(len(_ONSETS)))]
        if onset:
            out += self.consonant(onset, formants, phrase)
        n = self.seconds(0.08, 0.16) * (1.35 if stressed else 1.0)
        accent = 0.0
        if stressed and rng.random() < 0.6:
            sign = 1.0 if rng.random() < 0.8 else -0.6
            accent = sign * self.spk.f0_range_semitones * float(rng.uniform(0.4, 1.0))
        gain = (1.0 if stressed else 0.7) * float(rng.uniform(0.85, 1.1))
        nucleus = _Segment(
            round(n), formants, self.bandwidths, voicing=gain, accent=accent, phrase=phrase
        )
        out += self.tag(_VOWELS[vowel], [nucleus])
        if rng.random() < 0.35:
            out += self.consonant(_CODAS[int(rng.integers(len(_CODAS)))], formants, phrase)
        return out

    def build(self, n_total: int) -> list[_Segment]:
        """Segments filling exactly ``n_total`` samples: lead silence, phrases, trail silence."""
        rng = self.rng
        first = self.vowel_formants(0)
        lead = round(rng.uniform(0.08, 0.2) * SAMPLE_RATE_HZ)
        trail_min = round(0.1 * SAMPLE_RATE_HZ)
        segs = [self.silence(min(lead, n_total), first, 0)]
        used = segs[0].n
        phrase, words_left = 0, int(rng.integers(2, 6))
        short_tries = 3  # near the end, one-syllable words fill what a long word cannot
        while True:
            n_syll = 1 if short_tries < 3 else int(rng.integers(1, 4))
            stress_at = int(rng.integers(n_syll)) if rng.random() < 0.7 else -1
            word: list[_Segment] = []
            for k in range(n_syll):
                word += self.syllable(phrase, stressed=k == stress_at)
            n_word = sum(s.n for s in word)
            if used + n_word + trail_min > n_total and len(segs) > 1:
                short_tries -= 1
                if short_tries == 0:
                    break
                continue
            segs += word
            used += n_word
            words_left -= 1
            if words_left == 0:
                gap = self.seconds(0.15, 0.4)
                phrase, words_left = phrase + 1, int(rng.integers(2, 6))
            else:
                gap = self.seconds(0.02, 0.05) if rng.random() < 0.25 else 0
            if used + trail_min >= n_total:  # a first word longer than the whole utterance
                break
            if gap and used + gap + trail_min <= n_total:
                segs.append(self.silence(gap, word[-1].formants, word[-1].phrase))
                used += gap
        # The last segments absorb any overshoot (only when the first word does not fit).
        while used > n_total:
            cut = min(used - n_total, segs[-1].n - 1)
            if cut <= 0:
                segs.pop()
                used = sum(s.n for s in segs)
                continue
            segs[-1].n -= cut
            used -= cut
        if used < n_total:
            segs.append(self.silence(n_total - used, segs[-1].formants, segs[-1].phrase))
        return segs


@dataclass
class _Content:
    """The first draws of an utterance: length, session offsets and the segment sequence."""

    n: int
    f0_offset_st: float
    tilt: float
    segs: list[_Segment]


def _draw_content(
    speaker: SyntheticSpeaker,
    rng: np.random.Generator,
    duration_s: float | None,
    min_duration_s: float,
    max_duration_s: float,
) -> _Content:
    """The draws every utterance starts with, in this order (the audio depends on it)."""
    if duration_s is None:
        if not 0 < min_duration_s <= max_duration_s:
            raise ConfigError(
                f"need 0 < min_duration_s <= max_duration_s, got {min_duration_s}, {max_duration_s}"
            )
        duration_s = float(rng.uniform(min_duration_s, max_duration_s))
    if duration_s < 0.3:
        raise ConfigError(f"duration_s must be >= 0.3 s, got {duration_s}")
    n = round(duration_s * SAMPLE_RATE_HZ)

    # Session-to-session variation of one speaker: small next to the differences between speakers.
    f0_offset_st = rng.normal(0.0, 0.5)
    tilt = speaker.spectral_tilt_db_per_octave + rng.normal(0.0, 0.3)
    builder = _UtteranceBuilder(speaker, rng, formant_jitter=math.exp(rng.normal(0.0, 0.01)))
    return _Content(n, float(f0_offset_st), float(tilt), builder.build(n))


def _units(segs: list[_Segment]) -> list[str]:
    """Transcript tokens of the phones in ``segs``, in time order (one per phone)."""
    out: list[str] = []
    last = -1
    for seg in segs:  # tens of segments: a plain loop
        if seg.phone >= 0 and seg.phone != last:
            out.append(UNIT_TOKENS[seg.symbol])
            last = seg.phone
    return out


def utterance_units(
    speaker: SyntheticSpeaker,
    rng: np.random.Generator,
    *,
    duration_s: float | None = None,
    min_duration_s: float = 2.0,
    max_duration_s: float = 8.0,
) -> list[str]:
    """The transcript of the utterance ``synthesize_utterance`` makes from the same arguments and
    ``rng`` state: one token ``u<k>`` (``UNIT_TOKENS``) per phone, in time order.

    Only the content draws are made (no audio), so it costs about a millisecond.
    """
    return _units(_draw_content(speaker, rng, duration_s, min_duration_s, max_duration_s).segs)


def synthesize_utterance(
    speaker: SyntheticSpeaker,
    rng: np.random.Generator,
    *,
    duration_s: float | None = None,
    min_duration_s: float = 2.0,
    max_duration_s: float = 8.0,
) -> npt.NDArray[np.float32]:
    """One utterance of ``speaker``: mono float32 at 16 kHz, peak at ``PEAK_DBFS``.

    The length is ``duration_s`` seconds, or drawn uniformly in ``[min_duration_s,
    max_duration_s]`` (the first draw from ``rng``), rounded to whole samples. Content (segment
    sequence, intonation, noise) comes from ``rng``; the same ``rng`` state gives the same audio.
    ``utterance_units`` with the same arguments and ``rng`` state gives its transcript.
    """
    content = _draw_content(speaker, rng, duration_s, min_duration_s, max_duration_s)
    n, f0_offset_st, tilt, segs = content.n, content.f0_offset_st, content.tilt, content.segs

    lengths = np.array([s.n for s in segs])
    ends = np.cumsum(lengths)
    starts = ends - lengths
    gains = np.array([[s.voicing, s.aspiration] for s in segs], dtype=np.float32)
    # About 10 ms ramps between segments, so no gain steps (clicks).
    voicing, aspiration = _smooth(np.repeat(gains, lengths, axis=0), _RAMP).T

    n_frames = _n_frames(n)
    centers = np.arange(n_frames) * _HOP + _N_FFT // 2 - _PAD_LEFT
    seg_of_frame = np.searchsorted(ends, np.clip(centers, 0, n - 1), side="right")
    t_frames = centers / SAMPLE_RATE_HZ

    # F0 contour (semitones re. the speaker's level): phrase declination, pitch accents, drift.
    decline = rng.uniform(1.0, 3.0)
    phrase_ids = np.array([s.phrase for s in segs])
    n_phrases = int(phrase_ids.max()) + 1
    p_start = np.array([starts[phrase_ids == p].min() for p in range(n_phrases)])
    p_end = np.array([ends[phrase_ids == p].max() for p in range(n_phrases)])
    frame_phrase = phrase_ids[seg_of_frame]
    rel = (centers - p_start[frame_phrase]) / np.maximum(p_end - p_start, 1)[frame_phrase]
    semitones = decline * (0.5 - np.clip(rel, 0.0, 1.0))
    accented = np.array([s.accent != 0.0 for s in segs])
    if accented.any():
        acc_t = (starts[accented] + lengths[accented] / 2) / SAMPLE_RATE_HZ
        acc_h = np.array([s.accent for s in segs])[accented]
        sigma = 0.07 / speaker.speaking_rate
        semitones += (acc_h * np.exp(-0.5 * ((t_frames[:, None] - acc_t) / sigma) ** 2)).sum(1)
    semitones += _smooth(rng.standard_normal(n_frames), 12) * 1.5
    voiced_frames = voicing[np.clip(centers, 0, n - 1)] > 0.5
    if voiced_frames.any():
        semitones -= np.median(semitones[voiced_frames])
    f0_frames = speaker.f0_hz * 2.0 ** ((semitones + f0_offset_st) / 12.0)
    f0 = np.interp(np.arange(n), centers, f0_frames)

    # Glottal source: Rosenberg pulse on a phase-continuous contour, per-cycle jitter and shimmer.
    # Phase is accumulated in float64 (float32 would drift over thousands of cycles).
    cycle = (np.cumsum(f0) / SAMPLE_RATE_HZ).astype(np.int64)
    f0 *= 1.0 + speaker.jitter * rng.standard_normal(int(cycle[-1]) + 2)[cycle]
    phase = np.cumsum(f0) / SAMPLE_RATE_HZ
    cycle = phase.astype(np.int64)
    table_index = ((phase - cycle) * _PULSE_TABLE_SIZE).astype(np.int32)
    flow = _rosenberg_table(speaker.open_quotient)[table_index]
    pulse = np.diff(flow, prepend=flow[0])  # flow derivative: glottal source + lip radiation
    pulse *= (1.0 + speaker.shimmer * rng.standard_normal(int(cycle[-1]) + 1)).astype(np.float32)[
        cycle
    ]
    pulse /= np.sqrt(np.mean(pulse * pulse)) + np.float32(1e-12)
    noise = rng.standard_normal(n, dtype=np.float32)
    breath = np.float32(speaker.breathiness) * (0.4 + 0.6 * flow)  # louder while open
    source = voicing * (pulse + breath * noise) + aspiration * noise

    # Filters per frame: formant cascade x tilt for the voice.
    seg_formants = np.stack([s.formants for s in segs])[seg_of_frame]
    seg_bandwidths = np.stack([s.bandwidths for s in segs])[seg_of_frame]
    formants = _smooth(seg_formants, 3)  # about 45 ms glides between targets
    bandwidths = _smooth(seg_bandwidths, 3)
    tilt_gain = 10.0 ** (tilt * np.log2(np.maximum(_FREQS_HZ, 250.0) / 1000.0) / 20.0)
    voice_env = _resonator_magnitude(formants, bandwidths) * (tilt_gain * _TOP_TAPER)
    spec = _stft(source)
    spec *= voice_env.astype(np.float32)

    _add_frication(spec, segs, seg_of_frame, rng)
    y = _overlap_add(spec, n)

    y *= np.float32(10.0 ** (PEAK_DBFS / 20.0)) / (np.max(np.abs(y)) + np.float32(1e-12))
    y += np.float32(10.0 ** (NOISE_FLOOR_DBFS / 20.0)) * rng.standard_normal(n, dtype=np.float32)
    return np.clip(y, -1.0, 1.0, out=y)


def _add_frication(
    spec: Any, segs: list[_Segment], seg_of_frame: npt.NDArray[np.intp], rng: np.random.Generator
) -> None:
    """Add frication to the STFT ``spec`` (frames x bins) in place.

    Frication is noise made directly in the STFT domain (random-phase frames), only in the frames
    that have some: same spectrum as windowed white noise, without its forward STFT.
    """
    fric_gain = np.array([s.frication for s in segs])[seg_of_frame]
    fric_frames = np.flatnonzero(fric_gain > 0.0)
    if not fric_frames.size:
        return
    segs_f = seg_of_frame[fric_frames]
    fc = np.array([s.fric_center_hz for s in segs])[segs_f][:, None]
    fb = np.array([s.fric_bandwidth_hz for s in segs])[segs_f][:, None]
    fric_env = _resonator_magnitude(fc, fb)
    fric_env *= (fric_gain[fric_frames] / fric_env.max(axis=1))[:, None] * _TOP_TAPER
    # Bin power N * OLA gain gives unit-variance noise after overlap-add of independent frames.
    std = math.sqrt(_N_FFT * _OLA_GAIN / 2.0)
    shape = (fric_frames.size, len(_FREQS_HZ))
    white = rng.standard_normal(shape, dtype=np.float32) + 1j * rng.standard_normal(
        shape, dtype=np.float32
    )
    spec[fric_frames] += white * (std * fric_env).astype(np.float32)


def _utterance_rng(seed: int, speaker_index: int, utt_index: int) -> np.random.Generator:
    return np.random.default_rng([seed, 2, speaker_index, utt_index])


def _params(
    n_speakers: int, utts_per_speaker: int, seed: int, min_duration_s: float, max_duration_s: float
) -> dict[str, Any]:
    return {
        "generator": "unmask.synthetic",
        "version": GENERATOR_VERSION,
        "n_speakers": n_speakers,
        "utts_per_speaker": utts_per_speaker,
        "seed": seed,
        "min_duration_s": float(min_duration_s),
        "max_duration_s": float(max_duration_s),
        "sample_rate_hz": SAMPLE_RATE_HZ,
    }


PARAMS_FILE = "params.json"
MANIFEST_FILE = "manifest.jsonl"
SPEAKERS_FILE = "speakers.json"


def _existing_params(out_dir: Path, wanted: dict[str, Any]) -> bool:
    """True when ``out_dir`` already holds this corpus's params; raises if it holds another."""
    if not out_dir.exists():
        return False
    if not out_dir.is_dir():
        raise CorpusError(f"{out_dir}: exists and is not a folder")
    params_path = out_dir / PARAMS_FILE
    if not params_path.is_file():
        if any(out_dir.iterdir()):
            raise CorpusError(
                f"{out_dir}: folder is not empty and holds no synthetic corpus ({PARAMS_FILE} "
                "missing); choose an empty or new folder"
            )
        return False
    try:
        found = json.loads(params_path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise CorpusError(f"{params_path}: unreadable ({exc})") from exc
    if found != wanted:
        diff = ", ".join(
            f"{k}={found.get(k)!r} there, {wanted.get(k)!r} asked"
            for k in sorted(set(found) | set(wanted))
            if found.get(k) != wanted.get(k)
        )
        raise CorpusError(
            f"{out_dir}: holds a synthetic corpus made with other parameters ({diff}); "
            "choose another folder or delete this one"
        )
    return True


def _finished_corpus(
    out_dir: Path,
    params: dict[str, Any],
    speakers: list[SyntheticSpeaker],
    utts_per_speaker: int,
    transcript: Callable[[int, int], str],
) -> Manifest | None:
    """The corpus already in ``out_dir`` when it was finished with the same ``params`` (text
    added to an older one's manifest), else None."""
    manifest_path = out_dir / MANIFEST_FILE
    if not (_existing_params(out_dir, params) and manifest_path.is_file()):
        return None
    manifest = read_manifest(manifest_path, check_audio=False)
    if len(manifest) == len(speakers) * utts_per_speaker and all(
        manifest.resolve(u).is_file() for u in manifest
    ):
        if all(u.text is not None for u in manifest):
            return Manifest(utterances=manifest.utterances, root=str(out_dir))
        # Written before transcripts existed: the audio is the same, only the text is added.
        index = {
            f"{spk.speaker_id}-{j:04d}": (i, j)
            for i, spk in enumerate(speakers)
            for j in range(utts_per_speaker)
        }
        texts = [transcript(*index[u.utt_id]) for u in manifest]
        manifest = manifest.with_utterances(
            u.model_copy(update={"text": t}) for u, t in zip(manifest, texts, strict=True)
        )
        manifest = Manifest(utterances=manifest.utterances, root=str(out_dir))
        write_manifest(manifest, manifest_path)
        return manifest
    return None


def generate_synthetic_corpus(
    out_dir: Path,
    n_speakers: int = 120,
    utts_per_speaker: int = 40,
    seed: int = 0,
    min_duration_s: float = 2.0,
    max_duration_s: float = 8.0,
    progress: Callable[[int, int], None] | None = None,
) -> Manifest:
    """Write a synthetic corpus and return its manifest (``root = str(out_dir)``).

    ``progress(done, total)`` is called after each utterance (counts of utterances).

    Files: ``wav/<spk>/<utt_id>.wav`` (16 kHz mono PCM16), ``manifest.jsonl`` (relative paths),
    ``speakers.json`` (the voice parameters, ground truth) and ``params.json``. Speaker ids are
    ``syn0001``.., utterance ids ``syn0001-0000``..; durations are uniform in
    ``[min_duration_s, max_duration_s]`` seconds. The same arguments give byte-identical files.
    Re-running into a finished corpus with the same arguments reads it back without writing; an
    interrupted run resumes (existing WAVs are kept); other arguments into a non-empty folder
    raise ``CorpusError``.
    """
    out_dir = Path(out_dir)
    if n_speakers < 1 or utts_per_speaker < 1:
        raise ConfigError(
            f"n_speakers and utts_per_speaker must be >= 1, got {n_speakers}, {utts_per_speaker}"
        )
    if not 0.3 <= min_duration_s <= max_duration_s:
        raise ConfigError(
            f"need 0.3 <= min_duration_s <= max_duration_s (seconds), got {min_duration_s}, "
            f"{max_duration_s}"
        )
    _check_seed(seed)
    params = _params(n_speakers, utts_per_speaker, seed, min_duration_s, max_duration_s)
    manifest_path = out_dir / MANIFEST_FILE
    speakers = sample_speakers(n_speakers, seed)

    def transcript(i: int, j: int) -> str:
        units = utterance_units(
            speakers[i],
            _utterance_rng(seed, i, j),
            min_duration_s=min_duration_s,
            max_duration_s=max_duration_s,
        )
        return " ".join(units)

    finished = _finished_corpus(out_dir, params, speakers, utts_per_speaker, transcript)
    if finished is not None:
        return finished

    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / PARAMS_FILE).write_text(json.dumps(params, indent=2) + "\n", encoding="utf-8")
    (out_dir / SPEAKERS_FILE).write_text(
        json.dumps([asdict(s) for s in speakers], indent=2) + "\n", encoding="utf-8"
    )
    rows: list[Utterance] = []
    total = n_speakers * utts_per_speaker
    for i, spk in enumerate(speakers):
        for j in range(utts_per_speaker):
            utt_id = f"{spk.speaker_id}-{j:04d}"
            rel = f"wav/{spk.speaker_id}/{utt_id}.wav"
            path = out_dir / rel
            if path.is_file():  # written atomically by an interrupted run: complete and identical
                duration = audio_info(path)[0]
            else:
                wav = synthesize_utterance(
                    spk,
                    _utterance_rng(seed, i, j),
                    min_duration_s=min_duration_s,
                    max_duration_s=max_duration_s,
                )
                write_audio(path, wav)
                duration = len(wav) / SAMPLE_RATE_HZ
            rows.append(
                Utterance(
                    utt_id=utt_id,
                    speaker_id=spk.speaker_id,
                    gender=spk.gender,
                    path=rel,
                    duration_s=duration,
                    text=transcript(i, j),
                    original_sample_rate=SAMPLE_RATE_HZ,
                )
            )
            if progress is not None:
                progress(len(rows), total)
    manifest = Manifest(utterances=tuple(rows), root=str(out_dir))
    write_manifest(manifest, manifest_path)  # last: its presence marks a finished corpus
    return manifest


def corpus_audio_seconds(manifest: Manifest) -> float:
    """Total audio duration of a manifest (seconds)."""
    return float(sum(u.duration_s for u in manifest))


__all__ = [
    "GENERATOR_VERSION",
    "UNIT_CLASSES",
    "UNIT_TOKENS",
    "VOWEL_FORMANTS_HZ",
    "SyntheticSpeaker",
    "corpus_audio_seconds",
    "generate_synthetic_corpus",
    "sample_speakers",
    "synthesize_utterance",
    "utterance_units",
]
