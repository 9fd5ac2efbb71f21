"""F0 extraction for the SRD: serial vs parallel (ProcessPoolExecutor) vs cache.

pYIN (65-450 Hz, 10 ms hop) on synthetic 16 kHz utterances; the same tracks three ways:
serial in one process, in parallel over all cores, and read back from the per-utterance cache.
Also times librosa's default 0.1-semitone grid against Unmask's 1/3-semitone default.

    .venv/bin/python benchmarks/f0.py [--quick]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np

from services.attacks.f0 import F0ExtractionStats, F0Params, f0_tracks
from services.corpus.synthetic import sample_speakers, synthesize_utterance


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="8 utterances instead of 32")
    args = parser.parse_args()
    n_utts, seconds = (8, 3.0) if args.quick else (32, 5.0)
    speakers = sample_speakers(8, seed=0)
    waves = [
        synthesize_utterance(speakers[i % 8], np.random.default_rng(i), duration_s=seconds)
        for i in range(n_utts)
    ]
    audio_s = n_utts * seconds
    f0_tracks(waves[:1], workers=1)  # warm-up: librosa import and Numba compilation
    rows = []
    t = time.perf_counter()
    serial = f0_tracks(waves, workers=1)
    t_serial = time.perf_counter() - t
    rows.append(("serial, 1 process", t_serial))
    workers = os.cpu_count() or 1
    with tempfile.TemporaryDirectory() as cache:
        stats = F0ExtractionStats()
        parallel = f0_tracks(waves, workers=workers, cache_dir=cache, stats=stats)
        rows.append((f"parallel, {workers} processes (+ cache write)", stats.seconds))
        again = F0ExtractionStats()
        f0_tracks(waves, workers=workers, cache_dir=cache, stats=again)
        rows.append(("from cache", again.seconds))
    assert all(np.array_equal(a, b, equal_nan=True) for a, b in zip(serial, parallel, strict=True))
    t = time.perf_counter()
    f0_tracks(waves, workers=1, params=F0Params(resolution_semitones=0.1))
    rows.append(("serial, librosa default 0.1-semitone grid", time.perf_counter() - t))
    print(f"{n_utts} utterances x {seconds:.0f} s = {audio_s:.0f} s of audio, {workers} cores")
    print()
    print("| path | wall s | x real time | vs serial |")
    print("|---|---|---|---|")
    for name, secs in rows:
        print(f"| {name} | {secs:.2f} | {audio_s / secs:.0f} | {t_serial / secs:.2f}x |")


if __name__ == "__main__":
    main()
