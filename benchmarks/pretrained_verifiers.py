"""Embedding throughput of the pretrained verifiers an evaluation scores as they are.

Each verifier embeds the same synthetic utterances one at a time, as the score phase does:

    ge2e        Resemblyzer's GE2E (the weights in its wheel): the challenger and `pretrained: ge2e`
    ecapa       a SpeechBrain ECAPA-TDNN of spkrec-ecapa-voxceleb's size (the `standard` preset,
                1024 channels, 80 fbanks), random weights: `pretrained: ecapa`
    hf-xvector  WavLM Base+ with an x-vector head at microsoft/wavlm-base-plus-sv's size
                (transformers' WavLMConfig defaults: 12 layers, hidden 768, x-vector 512), random
                weights, through a saved folder: `pretrained: hf-xvector`

Random weights cost what trained ones do (the same operations on the same shapes); the real
checkpoints cannot be fetched on this machine. Printed: audio seconds per wall second (median of
``--repeats`` passes after one warm-up pass), and each verifier's time relative to GE2E. The
estimate of a run's embed phase (``services/pipeline/estimates.py``) uses these speeds.

    OMP_NUM_THREADS=2 .venv/bin/python benchmarks/pretrained_verifiers.py --threads 2
    .venv/bin/python benchmarks/pretrained_verifiers.py --quick      # 3 short utterances
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from services.corpus.synthetic import sample_speakers, synthesize_utterance

SAMPLE_RATE = 16000


def utterances(n: int, seconds: Sequence[float]) -> list[np.ndarray]:
    """``n`` synthetic utterances of the given durations (cycled), 16 kHz."""
    speakers = sample_speakers(4, seed=0)
    return [
        synthesize_utterance(
            speakers[i % 4], np.random.default_rng(i), duration_s=seconds[i % len(seconds)]
        )
        for i in range(n)
    ]


def verifiers(folder: Path) -> dict[str, Callable[[Sequence[np.ndarray]], np.ndarray]]:
    import torch
    import transformers
    from transformers import WavLMConfig, WavLMForXVector

    from services.attacker.embeddings import extract_embeddings
    from services.attacker.ge2e import ge2e_embeddings
    from services.attacker.hf_xvector import hf_xvector_embeddings
    from services.attacker.models import SpeakerEncoder
    from services.attacker.presets import get_preset

    transformers.utils.logging.disable_progress_bar()
    torch.manual_seed(0)
    ecapa = SpeakerEncoder(get_preset("standard")).eval()
    WavLMForXVector(WavLMConfig(architectures=["WavLMForXVector"])).save_pretrained(folder)
    return {
        "ge2e": ge2e_embeddings,
        "ecapa": lambda waves: extract_embeddings(ecapa, list(waves), device="cpu"),
        "hf-xvector": lambda waves: hf_xvector_embeddings(folder, waves),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("--utterances", type=int, default=12)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="3 utterances of 2 s, 1 repeat")
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    n, repeats = (3, 1) if args.quick else (args.utterances, args.repeats)
    waves = utterances(n, [2.0] if args.quick else [4.0, 6.0, 8.0])
    audio_s = sum(w.size for w in waves) / SAMPLE_RATE
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, embed in verifiers(Path(tmp) / "wavlm-base-plus-sv").items():
            embed(waves[:1])  # warm-up: imports, weights, first-call allocations
            times = []
            for _ in range(repeats):
                start = time.perf_counter()
                embed(waves)
                times.append(time.perf_counter() - start)
            rows.append((name, statistics.median(times)))
    ge2e_s = rows[0][1]
    print(f"{n} utterances, {audio_s:.0f} s of audio, {args.threads} torch thread(s)")
    print(f"{'verifier':<12} {'wall s':>8} {'audio s / s':>12} {'x GE2E time':>12}")
    for name, seconds in rows:
        print(f"{name:<12} {seconds:>8.2f} {audio_s / seconds:>12.1f} {seconds / ge2e_s:>12.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
