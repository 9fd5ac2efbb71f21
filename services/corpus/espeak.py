"""A second corpus from Debian packages: eSpeak NG voices rendered into the LibriSpeech layout.

The built-in synthetic corpus (``services.corpus.synthetic``) is a source-filter model written
here; a trust check or a default calibrated on it alone may fit its quirks. This builder renders
speech nobody on the project wrote: ``espeak-ng`` (Debian package ``espeak-ng``, GPL-3, called
as a program, not linked) speaks seeded English sentences with N voices, each a combination of an
English accent (``en-us``, ``en-gb``, ``en-gb-scotland``, ...), a voice variant of the package
(``Alicia``, ``m3``, ``klatt2``, ...; its gender is the variant's), a base pitch, a
speaking rate and a pause between words, all drawn from ``seed``. The audio (espeak-ng writes
22.05 kHz) is resampled to 16 kHz and written as FLAC into the LibriSpeech layout, so the
existing importer reads it::

    OUT/SPEAKERS.TXT                       ID | SEX | SUBSET | MINUTES | NAME
    OUT/<subset>/<spk>/<chapter>/<spk>-<chapter>-<utt>.flac
    OUT/<subset>/<spk>/<chapter>/<spk>-<chapter>.trans.txt

Speaker ids are integers from 1001, one chapter (``1``) per speaker, utterance ids ``0000``...
The same arguments give the same corpus (espeak-ng is deterministic).
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soundfile as sf
from scipy.signal import resample_poly

from services.errors import ConfigError

ESPEAK = "espeak-ng"
SAMPLE_RATE_HZ = 16000

ACCENTS: tuple[str, ...] = (
    "en-us",
    "en-gb",
    "en-gb-scotland",
    "en-gb-x-rp",
    "en-gb-x-gbclan",
    "en-gb-x-gbcwmd",
    "en-029",
    "en-us-nyc",
)
"""English accents of espeak-ng 1.51 (``espeak-ng --voices=en``)."""

VARIANTS: dict[str, str] = {
    # Human-sounding variants of espeak-ng 1.51 (``espeak-ng --voices=variant``) and their
    # gender; robotic, whispering and novelty variants are left out.
    **dict.fromkeys(
        ("Alicia", "Andrea", "Annie", "aunty", "belinda", "linda", "steph", "steph2", "steph3"),
        "F",
    ),
    **dict.fromkeys(("anika", "f1", "f2", "f3", "f4", "f5", "grandma"), "F"),
    **dict.fromkeys(
        ("adam", "Alex", "Andy", "benjamin", "caleb", "david", "ed", "edward", "Gene", "iven"),
        "M",
    ),
    **dict.fromkeys(("john", "Lee", "Michael", "Mike", "paul", "rob", "robert", "m1", "m2"), "M"),
    **dict.fromkeys(("m3", "m4", "m5", "m6", "m7", "klatt", "klatt2", "klatt3", "quincy"), "M"),
}

_WORDS = {
    "adj": "old young quiet busy bright heavy narrow gentle clever tired careful sudden "
    "distant golden silver broken empty famous early".split(),
    "noun": "farmer teacher river window village doctor garden letter market captain engine "
    "kitchen bridge harbour journey forest student picture mountain morning".split(),
    "verb": "carried painted followed opened watched remembered borrowed finished visited "
    "cleaned described ordered noticed repaired counted".split(),
    "place": "near the station|across the valley|behind the library|along the coast|under "
    "the old tree|before the storm|after the meeting|beside the lake|in the afternoon|at the "
    "edge of town".split("|"),
    "number": "two three four seven nine twelve twenty forty".split(),
}


@dataclass(frozen=True)
class EspeakVoice:
    """One speaker of the corpus: how espeak-ng is asked to speak."""

    speaker_id: str
    gender: str
    accent: str
    variant: str
    pitch: int
    """espeak-ng ``-p`` (0-99, base pitch)."""
    word_gap: int
    """espeak-ng ``-g``: pause between words (units of 10 ms)."""
    speed: int
    """espeak-ng ``-s`` (words per minute)."""

    @property
    def voice(self) -> str:
        return f"{self.accent}+{self.variant}"


def espeak_path() -> str | None:
    """The ``espeak-ng`` program on PATH, or None (install the Debian package ``espeak-ng``)."""
    return shutil.which(ESPEAK)


def draw_voices(n_voices: int, seed: int = 0) -> list[EspeakVoice]:
    """``n_voices`` distinct (accent, variant) voices with seeded pitch and rate; genders
    alternate so that both are represented (ceil(n/2) female)."""
    female = sorted(v for v, g in VARIANTS.items() if g == "F")
    male = sorted(v for v, g in VARIANTS.items() if g == "M")
    capacity = len(ACCENTS) * min(len(female), len(male)) * 2
    if not 1 <= n_voices <= capacity:
        raise ConfigError(f"n_voices must be 1..{capacity}, got {n_voices}")
    rng = np.random.default_rng([seed, 7])
    pools = {
        g: [(a, v) for a in ACCENTS for v in names] for g, names in (("F", female), ("M", male))
    }
    for pool in pools.values():
        rng.shuffle(pool)
    voices = []
    for i in range(n_voices):
        gender = "F" if i % 2 == 0 else "M"
        accent, variant = pools[gender][i // 2]
        voices.append(
            EspeakVoice(
                speaker_id=str(1001 + i),
                gender=gender,
                accent=accent,
                variant=variant,
                pitch=int(rng.integers(25, 76)),
                word_gap=int(rng.integers(0, 4)),
                speed=int(rng.integers(135, 186)),
            )
        )
    return voices


def sentence(rng: np.random.Generator) -> str:
    """One seeded English sentence (about 8-16 words)."""

    def pick(kind: str) -> str:
        words = _WORDS[kind]
        return str(words[int(rng.integers(len(words)))])

    first = f"The {pick('adj')} {pick('noun')} {pick('verb')} {pick('number')} {pick('noun')}s"
    second = (
        f"{pick('place')}, and the {pick('noun')} {pick('verb')} the {pick('adj')} {pick('noun')}"
    )
    return f"{first} {second}." if rng.random() < 0.6 else f"{first} {pick('place')}."


def render(voice: EspeakVoice, text: str, espeak: str) -> np.ndarray:
    """``text`` spoken by ``voice``: float32 mono at 16 kHz."""
    with tempfile.TemporaryDirectory() as tmp:
        wav = Path(tmp) / "out.wav"
        args = [espeak, "-v", voice.voice, "-p", str(voice.pitch), "-g", str(voice.word_gap)]
        args += ["-s", str(voice.speed), "-w", str(wav), text]
        done = subprocess.run(args, capture_output=True, text=True, check=False, timeout=60)
        if done.returncode != 0 or not wav.is_file():
            raise ConfigError(f"{ESPEAK} failed for voice {voice.voice}: {done.stderr.strip()}")
        audio, rate = sf.read(str(wav), dtype="float32", always_2d=False)
    if rate != SAMPLE_RATE_HZ:
        divisor = np.gcd(int(rate), SAMPLE_RATE_HZ)
        audio = resample_poly(audio, SAMPLE_RATE_HZ // divisor, int(rate) // divisor)
    return np.asarray(audio, dtype=np.float32)


def build_espeak_corpus(
    out: str | Path,
    n_voices: int,
    n_utterances: int,
    *,
    seed: int = 0,
    subset: str = "espeak-clean",
) -> list[EspeakVoice]:
    """Render ``n_voices`` x ``n_utterances`` into ``out`` (LibriSpeech layout, module
    docstring); returns the voices. Raises ``ConfigError`` when espeak-ng is missing, a count is
    out of range or ``out`` already holds a different corpus's speaker file."""
    espeak = espeak_path()
    if espeak is None:
        raise ConfigError(
            f"{ESPEAK} is not installed: apt-get install espeak-ng (scripts/ensure_espeak.sh)"
        )
    if n_utterances < 1:
        raise ConfigError(f"n_utterances must be >= 1, got {n_utterances}")
    voices = draw_voices(n_voices, seed)
    root = Path(out)
    rows = []
    for index, voice in enumerate(voices):
        rng = np.random.default_rng([seed, 11, index])
        chapter = root / subset / voice.speaker_id / "1"
        chapter.mkdir(parents=True, exist_ok=True)
        lines, seconds = [], 0.0
        for u in range(n_utterances):
            text = sentence(rng)
            audio = render(voice, text, espeak)
            utt_id = f"{voice.speaker_id}-1-{u:04d}"
            sf.write(str(chapter / f"{utt_id}.flac"), audio, SAMPLE_RATE_HZ, format="FLAC")
            lines.append(f"{utt_id} {text.upper().rstrip('.').replace(',', '')}")
            seconds += audio.size / SAMPLE_RATE_HZ
        (chapter / f"{voice.speaker_id}-1.trans.txt").write_text("\n".join(lines) + "\n")
        name = f"espeak-ng {voice.voice} p{voice.pitch} g{voice.word_gap} s{voice.speed}"
        rows.append(f"{voice.speaker_id} | {voice.gender} | {subset} | {seconds / 60:.2f} | {name}")
    header = f"; eSpeak NG corpus (services/corpus/espeak.py), seed {seed}\n"
    header += "; ID | SEX | SUBSET | MINUTES | NAME\n"
    (root / "SPEAKERS.TXT").write_text(header + "\n".join(rows) + "\n")
    return voices
