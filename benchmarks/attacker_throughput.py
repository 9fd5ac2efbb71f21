"""Benchmark: attacker training throughput, fbank ECAPA vs the SSL front end.

Trains through the real training loop (``train_attacker``: crops, AAM loss, Adam, the cyclic
schedule) on synthetic speech (``services.corpus.synthetic``) and reports seconds of audio per
second of training (``EpochRecord.throughput``) of the SECOND epoch, after warm-up (kernel
selection, allocator); each epoch has ``--steps`` optimizer steps of ``--batch-size`` crops.

Rows: the fbank front end with each ``--fbank-preset`` (``ge2e``: Resemblyzer's GE2E encoder on
its own mel features and 1.6 s crops, fine-tuned from its wheel's weights); the SSL front end
(WavLM) feeding a ``--ssl-preset`` ECAPA (unless ``--skip-ssl``), once fine-tuning the SSL model
(CNN encoder frozen, the default) and once with the SSL model frozen (``ssl_frozen_epochs``).
Each in fp32 and, on CUDA, bf16 autocast (``mixed_precision``; the training loop uses autocast on
CUDA only, so CPU rows are fp32).

The SSL model is ``--ssl-model`` (a local Hugging Face folder, e.g. WavLM-Large) or a randomly
initialized WavLM of ``--ssl-size`` (tiny: hidden 32, 2 layers; base: 768 x 12, WavLM-Base's
shape; large: 1024 x 24, WavLM-Large's shape) saved to a temporary folder: random weights cost
the same compute as trained ones, so the numbers hold for the real model without downloading it.

    .venv/bin/python benchmarks/attacker_throughput.py --steps 3 --batch-size 4 --crop-seconds 2 \\
        --fbank-preset tiny --ssl-preset tiny --ssl-size tiny
    .venv/bin/python benchmarks/attacker_throughput.py --device cuda --ssl-size large
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import torch

from services.attacker.embeddings import resolve_device
from services.attacker.recipes.spec import GE2E_FINETUNE_TRAINING
from services.attacker.training import train_attacker
from services.attacker.training_config import TrainingConfig
from services.attacker.training_records import TrainingItem
from services.corpus.synthetic import sample_speakers, synthesize_utterance
from services.settings import apply_thread_settings

SSL_SIZES: dict[str, dict[str, Any]] = {
    "tiny": {
        "hidden_size": 32,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "intermediate_size": 64,
        "conv_dim": (16,) * 7,
        "num_conv_pos_embeddings": 16,
        "num_conv_pos_embedding_groups": 2,
        "num_buckets": 32,
        "max_bucket_distance": 100,
    },
    "base": {},  # WavLMConfig's defaults are WavLM-Base's shape (768 x 12, 3072 FFN)
    "large": {
        "hidden_size": 1024,
        "num_hidden_layers": 24,
        "num_attention_heads": 16,
        "intermediate_size": 4096,
        "feat_extract_norm": "layer",
        "do_stable_layer_norm": True,
    },
}


def save_random_wavlm(size: str, folder: Path) -> Path:
    """A randomly initialized WavLM of ``size``'s shape, saved with ``save_pretrained``."""
    from transformers import WavLMConfig, WavLMModel

    torch.manual_seed(0)
    WavLMModel(WavLMConfig(**SSL_SIZES[size])).save_pretrained(folder)
    return folder


def training_items(n: int, crop_seconds: float, n_speakers: int = 8) -> list[TrainingItem]:
    """``n`` synthetic utterances of ``crop_seconds`` + 0.5 s from ``n_speakers`` speakers."""
    rng = np.random.default_rng(0)
    speakers = sample_speakers(n_speakers, seed=0)
    return [
        TrainingItem(
            synthesize_utterance(
                speakers[i % n_speakers], rng, duration_s=max(0.5, crop_seconds + 0.5)
            ),
            speakers[i % n_speakers].speaker_id,
            None,
        )
        for i in range(n)
    ]


def measure(cfg: TrainingConfig, items: list[TrainingItem], workdir: Path) -> tuple[float, float]:
    """(audio seconds per second, seconds per step) of the second epoch."""
    result = train_attacker(items, [], cfg, workdir, resume=False)
    record = result.history[-1]
    return record.throughput, record.train_seconds / record.steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="auto", help="auto, cpu or cuda")
    parser.add_argument("--steps", type=int, default=20, help="optimizer steps per epoch")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--crop-seconds", type=float, default=3.0)
    parser.add_argument(
        "--fbank-preset",
        nargs="+",
        default=["standard"],
        help="one row per preset (measured in the same run); ge2e trains on its 1.6 s crops",
    )
    parser.add_argument("--ssl-preset", default="standard", help="the ECAPA behind the SSL model")
    parser.add_argument("--ssl-model", type=Path, default=None, help="local HF model folder")
    parser.add_argument("--ssl-size", choices=sorted(SSL_SIZES), default="tiny")
    parser.add_argument("--skip-fbank", action="store_true")
    parser.add_argument("--skip-frozen", action="store_true", help="no frozen-SSL row")
    parser.add_argument("--skip-ssl", action="store_true", help="no SSL rows")
    args = parser.parse_args()
    apply_thread_settings()  # UNMASK_NUM_THREADS: oversubscribed OpenMP threads spin

    device = resolve_device(args.device)
    dtypes = ["fp32", "bf16"] if device.type == "cuda" else ["fp32"]
    items = training_items(args.steps * args.batch_size, args.crop_seconds)
    base: dict[str, Any] = {
        "epochs": 2,
        "batch_size": args.batch_size,
        "crop_seconds": args.crop_seconds,
        "device": device.type,
        "deterministic": False,
    }
    print(
        f"device {device}"
        + (f" ({torch.cuda.get_device_name(device)})" if device.type == "cuda" else "")
        + f", torch threads {torch.get_num_threads()}, {args.steps} steps x {args.batch_size} "
        f"crops of {args.crop_seconds} s per epoch, second epoch timed"
    )
    rows: list[tuple[str, str, str, str, float, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        runs: list[tuple[str, str, str, dict[str, Any]]] = []
        if not args.skip_fbank:
            for name in args.fbank_preset:
                front = "ge2e mel" if name == "ge2e" else "fbank"
                extra = {"preset": name}
                if name == "ge2e":  # the zoo's fine-tuned GE2E trains on one 1.6 s partial
                    extra |= {"crop_seconds": GE2E_FINETUNE_TRAINING["crop_seconds"]}
                runs.append((front, name, "-", extra))
        if not args.skip_ssl:
            ssl_dir = args.ssl_model or save_random_wavlm(args.ssl_size, work / "ssl")
            ssl_name = str(args.ssl_model) if args.ssl_model else f"random WavLM {args.ssl_size}"
            ssl_cfg = {"preset": args.ssl_preset, "front_end": "ssl", "ssl_model_path": ssl_dir}
            runs.append(("ssl fine-tune", args.ssl_preset, ssl_name, ssl_cfg))
            if not args.skip_frozen:
                runs.append(
                    ("ssl frozen", args.ssl_preset, ssl_name, {**ssl_cfg, "ssl_frozen_epochs": 2})
                )
        for front, preset, ssl, extra in runs:
            run_items = items
            if extra.get("crop_seconds", args.crop_seconds) != args.crop_seconds:
                run_items = training_items(len(items), extra["crop_seconds"])
            for dtype in dtypes:
                cfg = TrainingConfig(**(base | extra), mixed_precision=dtype == "bf16")
                speed, per_step = measure(cfg, run_items, work / f"run-{len(rows)}")
                rows.append((front, preset, ssl, dtype, speed, per_step))
                print(f"  {front} {preset} {dtype}: {speed:.1f} s/s", flush=True)

    print()
    print("| front end | ECAPA preset | SSL model | dtype | audio s per s | s per step |")
    print("|---|---|---|---|---|---|")
    for front, preset, ssl, dtype, speed, per_step in rows:
        print(f"| {front} | {preset} | {ssl} | {dtype} | {speed:.1f} | {per_step:.3f} |")


if __name__ == "__main__":
    main()
