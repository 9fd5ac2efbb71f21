"""Benchmark: the plan's time estimate per phase against a measured run.

Runs ``unmask evaluate CONFIG`` with a fresh stage store (no reuse), reads the seconds each
stage took (its compute record, ``<stages>/<stage>/.<key>.compute.json``), sums them per phase
and prints them next to the estimate of ``services/pipeline/estimates.py`` (the numbers the
printed plan adds up), with the ratio actual / estimate. The target is 0.7-1.3 (within
+-30 %) on an idle 2-core machine; training is estimated to its epochs cap, so a run that
patience stopped early shows a ratio below 1 there.

    .venv/bin/python benchmarks/estimates.py                                   # the quick example
    .venv/bin/python benchmarks/estimates.py --config my-protocol-config.yaml  # a real protocol
    .venv/bin/python benchmarks/estimates.py --espeak --utility  # real-length eSpeak NG speech

``--espeak`` builds (once, under ``--espeak-dir``) the eSpeak NG corpus at the calibration size of
``benchmarks/outside_attackers.py`` (72 voices x 16 utterances, about 3.6 h of 16 kHz speech; 36
attacker-training, 24 evaluation and 12 target speakers; Debian's ``espeak-ng`` needed) and runs
the built-in ``pitch`` anonymizer on it: ``tiny`` preset, the four scenarios, cosine and PLDA.

``--utility`` adds the default ``utility:`` block (its ASR trained on the protocol's original
speech). The load average is printed before and after: on a loaded machine every phase is
slower than the idle throughputs the estimate uses.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

ORDER = ("corpus", "anonymize", "train", "embed", "score", "utility", "analyze", "report")


def actual_seconds(stages: Path) -> dict[str, float]:
    """Seconds per phase: the compute records of every stage in the store."""
    from services.platform.jobs.phase_queues import phase_of_stage

    out: dict[str, float] = {}
    for record in stages.glob("*/.*.compute.json"):
        stage = record.parent.name
        seconds = float(json.loads(record.read_text())["seconds"])
        phase = phase_of_stage(stage)
        out[phase] = out.get(phase, 0.0) + seconds
        if stage == "utility-asr":
            out["utility-asr"] = out.get("utility-asr", 0.0) + seconds
    return out


def estimated_seconds(config: Path) -> dict[str, float]:
    """The plan's per-phase estimate of ``config`` (no reuse)."""
    from services.pipeline import estimates
    from services.pipeline.config_checks import load_checked_config

    cfg = load_checked_config(config)
    recognizers = estimates.recognizer_plan(cfg)
    if cfg.protocol_file is None:
        training = estimates.synthetic_training_audio(cfg)
        sizes = estimates.synthetic_audio_sizes(cfg)
    else:
        training = estimates.protocol_training_audio(cfg.protocol_file)
        sizes = estimates.protocol_audio_sizes(cfg.protocol_file)
    phases = estimates.phase_seconds(cfg, recognizers, training, sizes)
    if phases is None:
        raise SystemExit(f"{config}: no estimate for its preset (no measured throughput)")
    return phases


def espeak_config(folder: Path) -> Path:
    """A config for the real-length eSpeak NG protocol (corpus and protocol built once)."""
    from outside_attackers import espeak_protocol, sizes

    protocol = espeak_protocol(folder, sizes(name="calibration"))
    config = folder / "estimates-espeak-pitch.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "name": "estimates-espeak-pitch",
                "protocol_file": str(protocol.resolve()),
                "anonymizer": {"name": "pitch"},
                "scenarios": ["original", "ignorant", "lazy-informed", "semi-informed"],
                "training": {"preset": "tiny", "epochs": 10, "batch_size": 32},
                "seeds": [0],
                "backends": ["cosine", "plda"],
            },
            sort_keys=False,
        )
    )
    return config


def load_line() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} CPUs"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--config", type=Path, default=ROOT / "examples" / "configs" / "quick-pitch.yaml"
    )
    parser.add_argument(
        "--espeak", action="store_true", help="the real-length eSpeak NG protocol (not --config)"
    )
    parser.add_argument(
        "--espeak-dir",
        type=Path,
        default=ROOT / ".unmask" / "benchmarks" / "espeak",
        help="where the eSpeak NG corpus is built and kept (default .unmask/benchmarks/espeak)",
    )
    parser.add_argument("--utility", action="store_true", help="add the default utility block")
    parser.add_argument(
        "--epochs", type=int, help="override training.epochs (a shorter run; same comparison)"
    )
    args = parser.parse_args()
    from services.pipeline.config import with_current_names

    if args.espeak:
        sys.path.insert(0, str(ROOT / "benchmarks"))
        args.config = espeak_config(args.espeak_dir)
    with tempfile.TemporaryDirectory(prefix="unmask-estimates-") as tmp:
        config = Path(tmp) / "config.yaml"
        data = with_current_names(yaml.safe_load(args.config.read_text()), str(args.config))
        if data.get("protocol_file"):
            data["protocol_file"] = str((args.config.parent / data["protocol_file"]).resolve())
        if args.utility:
            data["utility"] = data.get("utility") or {}
        if args.epochs:
            data.setdefault("training", {})["epochs"] = args.epochs
        config.write_text(yaml.safe_dump(data))
        estimate = estimated_seconds(config)
        print(f"before: {load_line()}", flush=True)
        env = {**os.environ, "PYTHONPATH": str(ROOT), "UNMASK_DATA_DIR": str(Path(tmp) / "data")}
        started = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "cli.main", "evaluate", str(config), "--out", f"{tmp}/out"],
            env=env,
            cwd=ROOT,
            check=True,
            stdout=subprocess.DEVNULL,
        )
        wall = time.perf_counter() - started
        print(f"after: {load_line()}")
        actual = actual_seconds(Path(tmp) / "out" / "stages")
    actual["report"] = actual.get("report", 0.0) + max(
        0.0, wall - sum(v for k, v in actual.items() if k != "utility-asr")
    )  # imports, scoring not in a stage, plots: the rest of the wall time
    print(f"\n{args.config.name}{' + utility' if args.utility else ''}: estimate vs actual (s)")
    print(f"{'phase':<12} {'estimate':>9} {'actual':>9} {'actual/est':>10}")
    rows = [p for p in (*ORDER, "utility-asr") if estimate.get(p, 0.0) or actual.get(p, 0.0)]
    for phase in rows:
        est, act = estimate.get(phase, 0.0), actual.get(phase, 0.0)
        ratio = f"{act / est:10.2f}" if est > 0 else "         -"
        print(f"{phase:<12} {est:9.1f} {act:9.1f} {ratio}")
    total_est = sum(v for k, v in estimate.items() if k != "utility-asr")
    print(f"{'total (wall)':<12} {total_est:9.1f} {wall:9.1f} {wall / total_est:10.2f}")
    print("report row: the wall time not spent in a stage (imports, scoring, plots, report).")


if __name__ == "__main__":
    main()
