"""Benchmark: speaker-embedding extraction strategies and training throughput.

Extraction of LibriSpeech-like utterances (2-20 s, synthetic harmonic signals; untrained weights,
which cost the same as trained ones) with:

- one utterance at a time, fp32 (the reference: ratio 1.00, cosine 1);
- one at a time under bf16 autocast;
- length-bucketed padded batches (several batch limits within a samples budget), fp32 and bf16;
- one at a time through ``torch.compile`` (dynamic shapes; compile time reported; skipped with a
  note if it fails or exceeds ``--compile-timeout``).

Columns: x real time (seconds of audio per second of wall time), ratio against one-at-a-time
fp32 measured in the same run, and the lowest cosine to the fp32 one-at-a-time embeddings. Then
training throughput (seconds of audio per second, second epoch, after warm-up) for the presets
in ``--train-presets``.

    .venv/bin/python benchmarks/embeddings.py --quick
    .venv/bin/python benchmarks/embeddings.py --device cuda --presets vpc standard
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
from collections.abc import Callable

import numpy as np
import torch

from services.attacker.embeddings import embed_waveforms, resolve_device
from services.attacker.models import SpeakerEncoder
from services.attacker.training import train_attacker
from services.attacker.training_config import TrainingConfig
from services.attacker.training_records import TrainingItem

SR = 16_000


def synthetic_utterances(n: int, seed: int = 0, lo: float = 2.0, hi: float = 20.0) -> list:
    """Harmonic tones with vibrato and noise; durations log-uniform-ish in [lo, hi] seconds."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        dur = float(np.exp(rng.uniform(np.log(lo), np.log(hi))))
        length = int(dur * SR)
        t = np.arange(length) / SR
        f0 = rng.uniform(90, 250) * (1 + 0.05 * np.sin(2 * np.pi * 3 * t))
        phase = 2 * np.pi * np.cumsum(f0) / SR
        w = sum(np.sin(h * phase) / h for h in range(1, 15))
        out.append((0.1 * w + 0.01 * rng.standard_normal(length)).astype(np.float32))
    return out


def _time(fn: Callable[[], np.ndarray], repeats: int) -> tuple[float, np.ndarray]:
    best = float("inf")
    result = fn()  # warm-up (oneDNN / cuDNN kernel selection)
    for _ in range(repeats):
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        t = time.perf_counter()
        result = fn()
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - t)
    return best, result


def _cos_min(a: np.ndarray, b: np.ndarray) -> float:
    c = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    return float(c.min())


def bench_extraction(
    preset: str, device: torch.device, waves: list, repeats: int
) -> list[tuple[str, float, float, float]]:
    torch.manual_seed(0)
    encoder = SpeakerEncoder(preset).to(device).eval()
    audio_s = sum(len(w) for w in waves) / SR
    rows: list[tuple[str, float, float, float]] = []

    def run(strategy: str, dtype: str = "fp32", **kw: int) -> Callable[[], np.ndarray]:
        return lambda: embed_waveforms(
            encoder,
            waves,
            strategy=strategy,
            device=device,
            dtype=dtype,
            **kw,  # type: ignore[arg-type]
        )

    ref_s, ref = _time(run("one_at_a_time"), repeats)
    rows.append(("one_at_a_time fp32", audio_s / ref_s, 1.0, 1.0))
    variants: list[tuple[str, Callable[[], np.ndarray]]] = [
        ("one_at_a_time bf16", run("one_at_a_time", "bf16"))
    ]
    for max_batch in (4, 16, 64) if device.type == "cuda" else (4, 16):
        for dtype in ("fp32", "bf16"):
            variants.append(
                (
                    f"bucketed max_batch={max_batch} {dtype}",
                    run("bucketed", dtype, max_batch=max_batch),
                )
            )
    for name, fn in variants:
        s, emb = _time(fn, repeats)
        rows.append((name, audio_s / s, ref_s / s, _cos_min(emb, ref)))

    return rows


def bench_compile(
    preset: str, device: torch.device, waves: list, repeats: int, compile_timeout: float
) -> tuple[str, float, float, float]:
    """torch.compile of one-at-a-time fp32; run last: a compile that times out keeps running."""
    torch.manual_seed(0)
    encoder = SpeakerEncoder(preset).to(device).eval()
    audio_s = sum(len(w) for w in waves) / SR
    ref_s, ref = _time(
        lambda: embed_waveforms(encoder, waves, strategy="one_at_a_time", device=device), repeats
    )
    # torch.compile: run in a thread so that a compile longer than the timeout is reported.
    compiled: dict[str, object] = {}

    def build() -> None:
        try:
            enc_c = torch.compile(encoder, dynamic=True)
            t = time.perf_counter()
            with torch.inference_mode():
                enc_c(torch.from_numpy(waves[0]).to(device).unsqueeze(0))
            compiled["compile_s"] = time.perf_counter() - t
            compiled["enc"] = enc_c
        except Exception as exc:  # report any compiler failure instead of crashing the table
            compiled["error"] = f"{type(exc).__name__}: {str(exc)[:80]}"

    th = threading.Thread(target=build, daemon=True)
    th.start()
    th.join(compile_timeout)
    if "enc" in compiled:
        enc_c = compiled["enc"]

        def run_compiled() -> np.ndarray:
            out = np.empty_like(ref)
            with torch.inference_mode():
                for i, w in enumerate(waves):
                    x = torch.from_numpy(w).to(device).unsqueeze(0)
                    out[i] = enc_c(x).float().cpu().numpy()[0]  # type: ignore[operator]
            return out

        s, emb = _time(run_compiled, repeats)
        name = f"one_at_a_time fp32 compiled (compile {compiled['compile_s']:.0f} s)"
        return (name, audio_s / s, ref_s / s, _cos_min(emb, ref))
    reason = compiled.get("error", f"compile exceeded {compile_timeout:.0f} s")
    return (f"torch.compile: {reason}", float("nan"), float("nan"), float("nan"))


def bench_training(preset: str, device: torch.device, n_items: int, batch_size: int) -> float:
    rng = np.random.default_rng(1)
    waves = synthetic_utterances(n_items, seed=3, lo=3.0, hi=8.0)
    items = [TrainingItem(w, f"s{i % 4}", f"t{rng.integers(3)}") for i, w in enumerate(waves)]
    cfg = TrainingConfig(
        preset=preset,  # type: ignore[arg-type]
        epochs=2,
        batch_size=batch_size,
        device=device.type,  # type: ignore[arg-type]
        target_classifier="adversarial",
        adversarial_start_epoch=0,
    )
    with tempfile.TemporaryDirectory() as tmp:
        result = train_attacker(items, [], cfg, tmp)
    return result.history[-1].throughput


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer utterances, one repeat")
    parser.add_argument("--device", default="auto", help="auto, cpu or cuda")
    parser.add_argument("--presets", nargs="+", default=["vpc"], help="extraction presets")
    parser.add_argument("--train-presets", nargs="+", default=["tiny", "vpc"])
    parser.add_argument(
        "--compile-timeout", type=float, default=300.0, help="seconds; 0 skips torch.compile"
    )
    args = parser.parse_args()
    device = resolve_device(args.device)
    n = 12 if args.quick else 40
    repeats = 1 if args.quick else 2
    waves = synthetic_utterances(n)
    audio_s = sum(len(w) for w in waves) / SR
    print(f"device={device} threads={torch.get_num_threads()} utterances={n} audio={audio_s:.0f} s")
    for preset in args.presets:
        rows = bench_extraction(preset, device, waves, repeats)
        print(f"\nExtraction, preset {preset}")
        print(f"{'variant':<58} {'x real time':>11} {'ratio':>7} {'min cos':>9}")
        for name, xrt, ratio, cos in rows:
            print(f"{name:<58} {xrt:>11.1f} {ratio:>7.2f} {cos:>9.5f}")
    print("\nTraining throughput (3 s crops, adversarial target head, 2nd epoch)")
    print(f"{'preset':<10} {'batch':>5} {'audio s / s':>12}")
    for preset in args.train_presets:
        batch = 8 if device.type == "cpu" else 64
        items = 2 * batch if args.quick else 4 * batch
        print(f"{preset:<10} {batch:>5} {bench_training(preset, device, items, batch):>12.1f}")
    if args.compile_timeout > 0:
        print(f"\ntorch.compile, preset {args.presets[0]} (ratio vs one_at_a_time fp32)")
        name, xrt, ratio, cos = bench_compile(
            args.presets[0], device, waves, repeats, args.compile_timeout
        )
        print(f"{name:<58} {xrt:>11.1f} {ratio:>7.2f} {cos:>9.5f}")


if __name__ == "__main__":
    main()
