"""Estimate: what the VoicePrivacy attackers cost on LibriSpeech, from counted FLOPs.

No GPU was available to measure the full-scale runs, so this script COUNTS the floating-point
operations of one training step (forward + backward) and of one embedding extraction of each
VoicePrivacy attacker, with torch's ``FlopCounterMode`` on the real Unmask modules (random weights
cost the same compute as trained ones), and turns them into a cost on LibriSpeech:

* ``vpc2024``: fbank + ECAPA-TDNN ``vpc`` preset (512 channels), 3 s crops;
* ``vpc2026``: WavLM-Large's shape (1024 x 24 layers, random weights, CNN feature encoder frozen
  as Unmask fine-tunes it) + ECAPA ``standard`` preset (1024 channels), 3 s crops.

An Unmask epoch is one crop per training utterance: train-clean-360 has 104,014 utterances, so an
epoch is 104,014 crops of 3 s. Evaluation embeds the enrollment and trial utterances of the
dev and test lists, at most LibriSpeech dev-clean + test-clean = 10.8 h (an upper bound).

GPU hours are ESTIMATES: counted FLOPs divided by an ASSUMED sustained throughput, given as a
range (``--tflops-low`` .. ``--tflops-high``, default 50-300 TFLOP/s in bf16 on one H100, i.e.
about 5-30 % of its 989 TFLOP/s dense peak). These are compute floors: reading and decoding the
audio, the stage store and validation are not counted. Measure instead, when a GPU is at hand, with
``benchmarks/attacker_throughput.py --device cuda --ssl-size large``.

    .venv/bin/python benchmarks/vpc_cost.py
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

import torch
from torch.utils.flop_counter import FlopCounterMode
from transformers import WavLMConfig, WavLMModel

from services.attacker.models import SpeakerEncoder
from services.attacker.presets import get_preset
from services.attacker.ssl import load_ssl_front_end, ssl_encoder

SAMPLE_RATE = 16_000
TRAIN_UTTERANCES = 104_014  # LibriSpeech train-clean-360
EVAL_AUDIO_S = 10.8 * 3600  # dev-clean + test-clean, an upper bound of the VoicePrivacy lists
WAVLM_LARGE: dict[str, Any] = {
    "hidden_size": 1024,
    "num_hidden_layers": 24,
    "num_attention_heads": 16,
    "intermediate_size": 4096,
    "feat_extract_norm": "layer",
    "do_stable_layer_norm": True,
}


def _flops(fn: Any) -> int:
    counter = FlopCounterMode(display=False)
    with counter:
        fn()
    return int(counter.get_total_flops())


def _per_crop(encoder: torch.nn.Module, crop_s: float, batch: int) -> tuple[float, float]:
    """(training FLOPs per crop: forward + backward, embedding FLOPs per second of audio)."""
    wavs = torch.randn(batch, int(crop_s * SAMPLE_RATE))
    encoder.train()

    def step() -> None:
        encoder(wavs).sum().backward()

    train = _flops(step) / batch
    encoder.eval()
    with torch.no_grad():
        embed = _flops(lambda: encoder(wavs[:1])) / crop_s
    return train, embed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--crop-seconds", type=float, default=3.0)
    parser.add_argument("--batch", type=int, default=2, help="Crops per counted step.")
    parser.add_argument("--tflops-low", type=float, default=50.0)
    parser.add_argument("--tflops-high", type=float, default=300.0)
    args = parser.parse_args()
    torch.manual_seed(0)
    rows: list[tuple[str, int, float, float]] = []
    fbank = SpeakerEncoder(get_preset("vpc"))
    rows.append(("vpc2024", 10, *_per_crop(fbank, args.crop_seconds, args.batch)))
    with tempfile.TemporaryDirectory() as tmp:
        WavLMModel(WavLMConfig(**WAVLM_LARGE)).save_pretrained(Path(tmp))
        front = load_ssl_front_end(tmp)
        front.ssl.feature_extractor._freeze_parameters()
        encoder = ssl_encoder(get_preset("standard"), front)
        rows.append(("vpc2026", 2, *_per_crop(encoder, args.crop_seconds, args.batch)))
    lo, hi = args.tflops_low * 1e12, args.tflops_high * 1e12
    print(
        f"crop {args.crop_seconds:g} s, {TRAIN_UTTERANCES} train-clean-360 crops per epoch, "
        f"evaluation audio <= {EVAL_AUDIO_S / 3600:.1f} h; GPU hours ESTIMATED at "
        f"{args.tflops_low:g}-{args.tflops_high:g} TFLOP/s sustained"
    )
    header = (
        f"{'attacker':<9} {'epochs':>6} {'GFLOP/crop':>11} {'train PFLOP':>12} "
        f"{'embed PFLOP':>12} {'GPU h / recognizer':>19} {'GPU h, 2 recognizers':>21}"
    )
    print(header)
    print("-" * len(header))
    for name, epochs, per_crop, per_second in rows:
        train = per_crop * TRAIN_UTTERANCES * epochs
        embed = per_second * EVAL_AUDIO_S
        one = (train + embed) / 3600
        print(
            f"{name:<9} {epochs:>6} {per_crop / 1e9:>11.1f} {train / 1e15:>12.1f} "
            f"{embed / 1e15:>12.2f} {one / hi:>8.2f} - {one / lo:<8.2f} "
            f"{2 * one / hi:>9.2f} - {2 * one / lo:<8.2f}"
        )
    print(
        "2 recognizers: one on original speech (original, ignorant, lazy-informed scenarios), "
        "one on anonymized speech (semi-informed)."
    )


if __name__ == "__main__":
    main()
