"""Audio I/O: every waveform inside Unmask is mono float32 at 16 kHz.

torchaudio 2.11 has no load/save, so files are read and written with ``soundfile``.
"""

from __future__ import annotations

from math import gcd
from pathlib import Path

import numpy as np
import soundfile as sf
from scipy.signal import resample_poly

from services.errors import CorpusError

SAMPLE_RATE_HZ = 16_000
"""The one sample rate of every waveform inside Unmask (Hz)."""


def to_mono_16k(audio: np.ndarray, sample_rate: int) -> np.ndarray:
    """Mix ``audio`` (samples[, channels]) to mono and resample to 16 kHz; float32 out."""
    x = np.asarray(audio, dtype=np.float64)
    if x.ndim == 2:
        x = x.mean(axis=1)
    elif x.ndim != 1:
        raise CorpusError(f"audio must be 1-D or 2-D (samples, channels), got shape {x.shape}")
    if sample_rate != SAMPLE_RATE_HZ:
        g = gcd(int(sample_rate), SAMPLE_RATE_HZ)
        x = resample_poly(x, SAMPLE_RATE_HZ // g, int(sample_rate) // g)
    return x.astype(np.float32)


def read_audio(path: str | Path) -> tuple[np.ndarray, int]:
    """Read an audio file as mono float32 16 kHz.

    Returns ``(waveform, original_sample_rate_hz)``. Raises ``CorpusError`` naming the file when it
    is missing, unreadable or empty.
    """
    p = Path(path)
    if not p.is_file():
        raise CorpusError(f"{p}: audio file not found")
    try:
        data, sr = sf.read(str(p), dtype="float32", always_2d=False)
    except Exception as exc:  # soundfile raises several types for corrupt files
        raise CorpusError(f"{p}: unreadable audio ({exc})") from exc
    if data.size == 0:
        raise CorpusError(f"{p}: empty audio")
    return to_mono_16k(data, int(sr)), int(sr)


def audio_info(path: str | Path) -> tuple[float, int]:
    """Duration (seconds) and sample rate (Hz) from the header, without decoding the samples."""
    p = Path(path)
    if not p.is_file():
        raise CorpusError(f"{p}: audio file not found")
    try:
        info = sf.info(str(p))
    except Exception as exc:
        raise CorpusError(f"{p}: unreadable audio ({exc})") from exc
    if info.frames == 0:
        raise CorpusError(f"{p}: empty audio")
    return info.frames / info.samplerate, int(info.samplerate)


def write_audio(path: str | Path, waveform: np.ndarray, sample_rate: int = SAMPLE_RATE_HZ) -> None:
    """Write a mono waveform as 16-bit PCM WAV, atomically (temp file + rename)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(p.name + ".part")
    sf.write(str(tmp), np.clip(waveform, -1.0, 1.0), sample_rate, subtype="PCM_16", format="WAV")
    tmp.replace(p)
