"""Example anonymizer for the Unmask container contract v1 (docs/container-contract.md).

Pitch scaling with duration kept, the idea of Unmask's built-in ``pitch`` anonymizer: every
frequency is scaled by 2^(s/12) (resampling), then a phase vocoder stretches the result back to
the input length. The shift ``s`` (semitones, 2.75 to 11 in size) is a deterministic function of
the target speaker id (one voice per target): up for a male source and a female target, down for
the reverse, either way otherwise. Needs only Python 3 and NumPy; reads and writes 16-bit WAV with
the standard library.

Contract in brief: read $UNMASK_JOB_FILE, for each utterance read input_dir/<file> and write
output_dir/<output> (16 kHz mono, same duration), optionally write output_dir/metadata.json, exit 0.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import wave
from pathlib import Path

import numpy as np

SAMPLE_RATE_HZ = 16000
N_FFT = 1024
HOP = 256


def read_wav(path: Path) -> np.ndarray:
    with wave.open(str(path), "rb") as w:
        if w.getnchannels() != 1 or w.getsampwidth() != 2 or w.getframerate() != SAMPLE_RATE_HZ:
            raise ValueError(f"{path}: expected 16 kHz mono 16-bit WAV")
        data = w.readframes(w.getnframes())
    return np.frombuffer(data, dtype="<i2").astype(np.float64) / 32768.0


def write_wav(path: Path, x: np.ndarray) -> None:
    pcm = (np.clip(x, -1.0, 32767 / 32768) * 32768.0).round().astype("<i2")
    tmp = path.with_name(path.name + ".part")
    with wave.open(str(tmp), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(SAMPLE_RATE_HZ)
        w.writeframes(pcm.tobytes())
    # The contract forbids extra files, so the partial file is renamed (never left behind).
    os.replace(tmp, path)


def stft(x: np.ndarray, window: np.ndarray) -> np.ndarray:
    n_frames = 1 + max(0, len(x) - 1) // HOP + 1
    padded = np.zeros((n_frames - 1) * HOP + N_FFT)
    padded[N_FFT // 2 : N_FFT // 2 + len(x)] = x
    idx = np.arange(N_FFT)[None, :] + HOP * np.arange(n_frames)[:, None]
    return np.fft.rfft(padded[idx] * window, axis=1)


def istft(spec: np.ndarray, window: np.ndarray, length: int) -> np.ndarray:
    frames = np.fft.irfft(spec, N_FFT, axis=1) * window
    n_frames = frames.shape[0]
    total = (n_frames - 1) * HOP + N_FFT
    out = np.zeros(total)
    norm = np.zeros(total)
    idx = (np.arange(N_FFT)[None, :] + HOP * np.arange(n_frames)[:, None]).ravel()
    np.add.at(out, idx, frames.ravel())
    np.add.at(norm, idx, np.tile(window**2, n_frames))
    out = out / np.maximum(norm, 1e-8)
    return out[N_FFT // 2 : N_FFT // 2 + length]


def stretch_to_length(x: np.ndarray, length: int) -> np.ndarray:
    """Phase vocoder: time-stretch ``x`` to ``length`` samples, keeping its pitch."""
    window = np.hanning(N_FFT + 1)[:-1]
    spec = stft(x, window)
    n_in = spec.shape[0]
    n_out = 1 + length // HOP + 1
    t = np.arange(n_out) * (len(x) / max(length, 1))
    spec = np.concatenate([spec, np.zeros((2, spec.shape[1]))])
    i0 = np.minimum(np.floor(t).astype(int), n_in - 1)
    frac = (t - i0)[:, None]
    mag = (1 - frac) * np.abs(spec[i0]) + frac * np.abs(spec[i0 + 1])
    expected = 2 * np.pi * HOP * np.arange(spec.shape[1]) / N_FFT
    dphi = np.angle(spec[i0 + 1]) - np.angle(spec[i0]) - expected
    dphi -= 2 * np.pi * np.round(dphi / (2 * np.pi))
    advance = expected + dphi
    phase = np.angle(spec[0]) + np.concatenate(
        [np.zeros((1, spec.shape[1])), np.cumsum(advance[:-1], axis=0)]
    )
    return istft(mag * np.exp(1j * phase), window, length)


def pitch_shift(x: np.ndarray, semitones: float) -> np.ndarray:
    ratio = 2.0 ** (semitones / 12.0)
    n_resampled = max(2, round(len(x) / ratio))
    # Fewer samples played at the same rate = every frequency scaled up by `ratio`.
    resampled = np.interp(np.linspace(0, len(x) - 1, n_resampled), np.arange(len(x)), x)
    y = stretch_to_length(resampled, len(x))
    rms_in, rms_out = np.sqrt(np.mean(x**2)), np.sqrt(np.mean(y**2))
    if rms_out > 1e-12:
        y *= rms_in / rms_out
    peak = np.max(np.abs(y)) if len(y) else 0.0
    return y * (0.99 / peak) if peak > 0.99 else y


def unit_hash(*parts: object) -> float:
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


def semitones_for(utt: dict, seed: int) -> float:
    target = utt.get("target")
    key = target["speaker_id"] if target else utt["utt_id"]
    size = 2.75 + 8.25 * unit_hash("size", seed, key)
    source = utt.get("source_gender")
    if target and source == "m" and target.get("gender") == "f":
        return size
    if target and source == "f" and target.get("gender") == "m":
        return -size
    return size if unit_hash("sign", seed, key) < 0.5 else -size


def main() -> int:
    job_path = Path(os.environ.get("UNMASK_JOB_FILE", "/unmask/input/job.json"))
    try:
        job = json.loads(job_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        print(f"cannot read the job file {job_path}: {exc}", file=sys.stderr)
        return 2
    if job.get("contract_version") != 1:
        print(f"unsupported contract version {job.get('contract_version')!r}", file=sys.stderr)
        return 2
    input_dir = Path(job["input_dir"])
    output_dir = Path(job["output_dir"])
    seed = int(job.get("seed", 0))
    print(f"example-pitch: {len(job['utterances'])} utterances on {job.get('device', 'cpu')}")
    metadata = {}
    for utt in job["utterances"]:
        x = read_wav(input_dir / utt["file"])
        semitones = semitones_for(utt, seed)
        write_wav(output_dir / utt["output"], pitch_shift(x, semitones))
        metadata[utt["utt_id"]] = {"semitones": round(semitones, 4)}
    meta = {"anonymizer": {"name": "example-pitch", "version": "1"}, "utterances": metadata}
    (output_dir / "metadata.json").write_text(json.dumps(meta, indent=1), encoding="utf-8")
    print("example-pitch: done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
