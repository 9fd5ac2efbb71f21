"""Speed of the synthetic corpus generator on one core, against the 100x real-time target.

Usage: .venv/bin/python benchmarks/synthetic_corpus.py [--quick] [--default-corpus]

Rows: in-memory synthesis (``synthesize_utterance``), synthesis + writing WAVs + manifest
(``generate_synthetic_corpus``), and the default 120 x 40 corpus, extrapolated from the measured
corpus speed unless ``--default-corpus`` times it for real. Speed is audio seconds per wall second
("x real time"); CPU seconds are shown too, since the machine may be shared.
"""

from __future__ import annotations

import os

# One core: numpy/scipy thread pools must not inflate the figure. Set before numpy is imported.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from services.audio import SAMPLE_RATE_HZ  # noqa: E402
from services.corpus.synthetic import (  # noqa: E402
    corpus_audio_seconds,
    generate_synthetic_corpus,
    sample_speakers,
    synthesize_utterance,
)

TARGET_X_REALTIME = 100.0
DEFAULT_SPEAKERS, DEFAULT_UTTS = 120, 40


def _in_memory(n_utts: int) -> tuple[float, float, float]:
    """(audio s, wall s, cpu s) for ``n_utts`` utterances of the default 2-8 s durations."""
    speakers = sample_speakers(20, seed=0)
    synthesize_utterance(speakers[0], np.random.default_rng(0), duration_s=1.0)  # warm-up
    audio = 0.0
    wall0, cpu0 = time.perf_counter(), time.process_time()
    for k in range(n_utts):
        y = synthesize_utterance(speakers[k % len(speakers)], np.random.default_rng([99, k]))
        audio += len(y) / SAMPLE_RATE_HZ
    return audio, time.perf_counter() - wall0, time.process_time() - cpu0


def _to_disk(n_speakers: int, n_utts: int) -> tuple[float, float, float]:
    with tempfile.TemporaryDirectory() as tmp:
        wall0, cpu0 = time.perf_counter(), time.process_time()
        manifest = generate_synthetic_corpus(Path(tmp) / "c", n_speakers, n_utts, seed=0)
        wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    return corpus_audio_seconds(manifest), wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short run (about 10 s)")
    parser.add_argument(
        "--default-corpus",
        action="store_true",
        help="time the full default 120 x 40 corpus instead of extrapolating (minutes)",
    )
    args = parser.parse_args()
    n_mem = 20 if args.quick else 200
    disk_spk, disk_utts = (4, 5) if args.quick else (20, 40)

    rows: list[tuple[str, float, float, float, str]] = []
    rows.append((f"in memory, {n_mem} utts", *_in_memory(n_mem), "measured"))
    audio, wall, cpu = _to_disk(disk_spk, disk_utts)
    rows.append((f"+ WAVs/manifest, {disk_spk}x{disk_utts}", audio, wall, cpu, "measured"))
    if args.default_corpus:
        d_audio, d_wall, d_cpu = _to_disk(DEFAULT_SPEAKERS, DEFAULT_UTTS)
        how = "measured"
    else:
        # Mean duration of the default corpus is 5 s (uniform 2-8 s); speed as measured above.
        d_audio = DEFAULT_SPEAKERS * DEFAULT_UTTS * 5.0
        d_wall, d_cpu = d_audio * wall / audio, d_audio * cpu / audio
        how = f"extrapolated from {disk_spk}x{disk_utts}"
    rows.append((f"default {DEFAULT_SPEAKERS}x{DEFAULT_UTTS} corpus", d_audio, d_wall, d_cpu, how))

    load = os.getloadavg()[0]
    print(f"synthetic corpus generator, 1 thread, load average {load:.1f} on {os.cpu_count()} CPUs")
    header = (
        f"{'case':<30} {'audio s':>8} {'wall s':>7} {'cpu s':>7} {'xRT wall':>9} {'xRT cpu':>8} "
        f"{'target':>7} {'ratio':>6}  how"
    )
    print(header)
    print("-" * len(header))
    for name, audio_s, wall_s, cpu_s, note in rows:
        print(
            f"{name:<30} {audio_s:8.0f} {wall_s:7.1f} {cpu_s:7.1f} {audio_s / wall_s:8.0f}x "
            f"{audio_s / cpu_s:7.0f}x {TARGET_X_REALTIME:6.0f}x "
            f"{audio_s / cpu_s / TARGET_X_REALTIME:6.2f}  {note}"
        )
    # The process is single-threaded, so CPU seconds are its time on one core; wall seconds also
    # count the time other processes held the core (on a shared machine, the load average above).
    worst = min(r[1] / r[3] for r in rows[:2])
    verdict = "meets" if worst >= TARGET_X_REALTIME else "MISSES"
    print(
        f"slowest measured: {worst:.0f}x real time per CPU second: {verdict} the "
        f"{TARGET_X_REALTIME:.0f}x target (ratio = xRT cpu / target)"
    )


if __name__ == "__main__":
    main()
