"""Checkpoint uploads per epoch (services/pipeline/checkpoint_sync.py) against epoch time.

    .venv/bin/python benchmarks/checkpoint_upload.py [--quick]

Trains the ``tiny`` (6 epochs) and ``standard`` (3 epochs; not with ``--quick``) recognizers on
48 harmonic-tone utterances (batch 8, 1 s crops, torch on 1 thread), once without and once with
``on_checkpoint=CheckpointSync(...).epoch_saved`` to a moto S3 server in this process (its
request handling shares the process and cores, so the cost is overstated). Prints per run: the
training time, the wait in ``close()`` at the end, each epoch's time, each epoch's upload time
(on the background thread) and the size of ``last.pt``.
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import boto3
import numpy as np
import torch
from botocore.config import Config

from services.attacker.training import train_attacker
from services.attacker.training_config import TrainingConfig
from services.attacker.training_records import TrainingItem
from services.pipeline.checkpoint_sync import CheckpointSync
from services.storage.blob_s3 import S3BlobStore

SR = 16_000


def voices(n_speakers: int, n_utts: int, seed: int) -> list[TrainingItem]:
    """Harmonic tones, one F0 per speaker."""
    rng = np.random.default_rng(seed)
    items = []
    for k in range(n_speakers):
        for _ in range(n_utts):
            t = np.arange(int(rng.uniform(1.0, 1.5) * SR)) / SR
            w = sum(np.sin(2 * np.pi * h * 110.0 * 1.3**k * t) / h for h in range(1, 8))
            w = 0.3 * w / np.abs(w).max() + 0.01 * rng.standard_normal(len(t))
            items.append(TrainingItem(w.astype(np.float32), f"s{k}"))
    return items


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="the tiny preset only")
    args = parser.parse_args()
    torch.set_num_threads(1)
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    moto = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    moto.start()
    host, port = moto.get_host_and_port()
    client = boto3.client(
        "s3",
        endpoint_url=f"http://{host}:{port}",
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=Config(signature_version="s3v4", s3={"addressing_style": "path"}),
    )
    store = S3BlobStore(f"ckpt-{uuid.uuid4().hex[:6]}", client=client)
    train, val = voices(6, 8, 0), voices(6, 2, 1)
    runs = [("tiny", 6)] if args.quick else [("tiny", 6), ("standard", 3)]
    try:
        for preset, epochs in runs:
            cfg = TrainingConfig.model_validate(
                {
                    "preset": preset,
                    "epochs": epochs,
                    "batch_size": 8,
                    "crop_seconds": 1.0,
                    "device": "cpu",
                    "seed": 1,
                }
            )
            for upload in (False, True):
                with tempfile.TemporaryDirectory() as tmp:
                    folder = Path(tmp)
                    sync = CheckpointSync(store, "train", f"{preset}-{int(upload)}")
                    hook = sync.epoch_saved if upload else None
                    started = time.perf_counter()
                    result = train_attacker(train, val, cfg, folder, on_checkpoint=hook)
                    trained_s = time.perf_counter() - started
                    sync.close(folder)
                    closed_s = time.perf_counter() - started - trained_s
                    size_mb = (folder / "last.pt").stat().st_size / 1e6
                    sync.clear(epochs)
                epoch_s = ", ".join(f"{r.epoch_seconds:.2f}" for r in result.history)
                upload_s = ", ".join(f"{s:.2f}" for s in sync.stats.seconds) or "-"
                print(
                    f"{preset:8s} uploads={'on ' if upload else 'off'} training {trained_s:6.2f} s"
                    f" close {closed_s:5.2f} s | epochs (s): {epoch_s} | uploads (s): {upload_s}"
                    f" | last.pt {size_mb:.1f} MB",
                    flush=True,
                )
    finally:
        moto.stop()


if __name__ == "__main__":
    main()
