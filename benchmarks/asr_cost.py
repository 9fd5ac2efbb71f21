"""Cost and accuracy of the utility ASR on the demo protocol (services/utility/asr.py).

Usage: .venv/bin/python benchmarks/asr_cost.py [--corpus-dir DIR] [--epochs N] [--hidden N]
       [--batch-size N] [--warp off|LOW,HIGH] [--anon-cache DIR] [--threads 1] [--out-json FILE]

The demo protocol is the default ``SyntheticCorpusSpec`` (48 speakers x 24 utterances of 2-6 s,
24 attacker-train speakers). Rows: training the CTC recognizer on the ORIGINAL attacker-train
speech (seconds, audio seconds per second), transcribing the trial set as original speech and
after the ``pitch`` built-in (random shifts of 2.75-11 semitones, whole spectrum, the demo's
anonymizer), one utterance at a time and in batches of 8, and the WER / CER of each; then the
WER on the trial set anonymized by each DSP built-in (pitch, vtln, mcadams) in target mode, as the
pipeline runs them: target voices from the protocol's target pool (``build_target_voices``),
chosen by the protocol's TSA for the trial set (salt ``trial``), seed = the TSA's seed.
``--warp`` sets ``AsrSpec.warp_range`` (frequency-warp augmentation; ``off`` = none).
``--model-dir DIR`` keeps the trained recognizer (``load_asr`` reads it back).
``--anon-cache DIR`` keeps the anonymized trial audio (``.npz`` per anonymizer) for the next run.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections import Counter  # noqa: E402
from pathlib import Path  # noqa: E402

import jiwer  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from services.anonymizers.base import AnonymizationItem  # noqa: E402
from services.anonymizers.registry import BUILTIN_NAMES, build_anonymizer  # noqa: E402
from services.anonymizers.service import build_target_voices  # noqa: E402
from services.anonymizers.target_selection import (  # noqa: E402
    select_targets_with,
    targets_for_utterances,
)
from services.audio import SAMPLE_RATE_HZ, read_audio  # noqa: E402
from services.corpus.manifest import Manifest  # noqa: E402
from services.corpus.protocol import Protocol, build_protocol  # noqa: E402
from services.corpus.synthetic import generate_synthetic_corpus  # noqa: E402
from services.pipeline.config import SyntheticCorpusSpec  # noqa: E402
from services.utility.asr import TrainedAsr, train_asr  # noqa: E402
from services.utility.config import AsrSpec  # noqa: E402
from services.utility.wer import compare_wer, error_rates, normalize_text  # noqa: E402


def _load(manifest: Manifest) -> list[np.ndarray]:
    return [read_audio(manifest.resolve(u))[0].astype(np.float32) for u in manifest]


def _confusions(refs: list[str], hyps: list[str], top: int = 8) -> tuple[str, str]:
    """Most frequent substitutions (ref -> hyp) and per-token recall, from jiwer's alignment."""
    out = jiwer.process_words([normalize_text(r) for r in refs], [normalize_text(h) for h in hyps])
    pairs: Counter[tuple[str, str]] = Counter()
    ref_count: Counter[str] = Counter()
    hit_count: Counter[str] = Counter()
    for ref, hyp, chunks in zip(out.references, out.hypotheses, out.alignments, strict=True):
        ref_count.update(ref)
        for c in chunks:
            if c.type == "equal":
                hit_count.update(ref[c.ref_start_idx : c.ref_end_idx])
            elif c.type == "substitute":
                ref_part = ref[c.ref_start_idx : c.ref_end_idx]
                pairs.update(zip(ref_part, hyp[c.hyp_start_idx : c.hyp_end_idx], strict=True))
    subs = ", ".join(f"{a}->{b} {n}" for (a, b), n in pairs.most_common(top))

    def order(token: str) -> int:
        return int(token[1:]) if token[1:].isdigit() else 0

    recall = ", ".join(
        f"{t} {100.0 * hit_count[t] / ref_count[t]:.0f}%" for t in sorted(ref_count, key=order)
    )
    return subs, recall


def _anonymized_sets(
    manifest: Manifest,
    protocol: Protocol,
    trial: Manifest,
    trial_audio: list[np.ndarray],
    cache: Path | None,
) -> dict[str, list[np.ndarray]]:
    """Trial audio after ``pitch`` without targets (the demo's setting) and after each built-in
    in target mode (targets from the protocol's pool and TSA, as the anonymize stage does)."""
    tsa = protocol.target_selection
    pool = manifest.subset(
        u.utt_id for u in manifest.utterances if u.speaker_id in set(protocol.target_pool)
    )
    voices = build_target_voices(pool)
    targets = targets_for_utterances(
        select_targets_with(tsa, trial, voices, salt="trial", granularity=tsa.granularity),
        voices,
    )
    out: dict[str, list[np.ndarray]] = {}
    for label, name, with_target in [
        ("pitch (no target)", "pitch", False),
        *[(f"{n} (target)", n, True) for n in BUILTIN_NAMES],
    ]:
        path = cache / f"{name}-{'target' if with_target else 'none'}.npz" if cache else None
        if path is not None and path.is_file():
            with np.load(path) as data:
                out[label] = [data[u.utt_id] for u in trial]
            continue
        t0 = time.perf_counter()
        items = [
            AnonymizationItem(
                u.utt_id,
                a,
                SAMPLE_RATE_HZ,
                u.speaker_id,
                u.gender,
                target=targets[u.utt_id] if with_target else None,
            )
            for u, a in zip(trial, trial_audio, strict=True)
        ]
        seed = tsa.seed if with_target else 0
        wavs = build_anonymizer(name).anonymize(items, seed=seed)
        out[label] = [np.asarray(x, dtype=np.float32) for x in wavs]
        print(f"{label}: anonymized in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            np.savez(path, **{u.utt_id: x for u, x in zip(trial, out[label], strict=True)})
    return out


def _timed_transcribe(
    asr: TrainedAsr, audio: list[np.ndarray], batch_size: int
) -> tuple[list[str], float]:
    t0 = time.perf_counter()
    hyps = asr.transcribe(audio, batch_size=batch_size)
    return hyps, time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--corpus-dir", type=Path, default=None)
    parser.add_argument("--epochs", type=int, default=None)
    parser.add_argument("--hidden", type=int, default=None)
    parser.add_argument("--batch-size", type=int, default=None)
    parser.add_argument("--lr", type=float, default=None)
    parser.add_argument("--warp", type=str, default=None, help="off or LOW,HIGH")
    parser.add_argument("--anon-cache", type=Path, default=None)
    parser.add_argument("--model-dir", type=Path, default=None, help="keep the trained ASR here")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out-json", type=Path, default=None)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    spec = SyntheticCorpusSpec()
    corpus_dir = args.corpus_dir or Path(tempfile.mkdtemp()) / "corpus"
    t0 = time.perf_counter()
    manifest = generate_synthetic_corpus(
        corpus_dir,
        n_speakers=spec.n_speakers,
        utts_per_speaker=spec.utts_per_speaker,
        seed=spec.seed,
        min_duration_s=spec.min_duration_s,
        max_duration_s=spec.max_duration_s,
    )
    protocol = build_protocol(
        manifest,
        n_attacker_train_speakers=spec.n_attacker_train_speakers,
        n_eval_speakers=spec.n_eval_speakers,
        n_target_speakers=spec.n_target_speakers,
        trials_per_speaker=spec.trials_per_speaker,
        enrollments_per_speaker=spec.enrollments_per_speaker,
        seed=spec.seed,
    )
    train = manifest.subset(protocol.attacker_train)
    trial = manifest.subset(protocol.trial)
    train_audio, trial_audio = _load(train), _load(trial)
    print(f"corpus ready in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    anonymized = _anonymized_sets(manifest, protocol, trial, trial_audio, args.anon_cache)

    overrides = {
        k: v
        for k, v in {
            "epochs": args.epochs,
            "hidden_size": args.hidden,
            "batch_size": args.batch_size,
            "lr": args.lr,
        }.items()
        if v is not None
    }
    if args.warp is not None:
        overrides["warp_range"] = (
            None if args.warp == "off" else tuple(float(v) for v in args.warp.split(","))
        )
    asr_spec = AsrSpec(device="cpu", **overrides)
    train_s = sum(len(a) for a in train_audio) / SAMPLE_RATE_HZ
    trial_s = sum(len(a) for a in trial_audio) / SAMPLE_RATE_HZ

    def report(fraction: float, message: str) -> None:
        print(f"  {message}", file=sys.stderr, flush=True)

    with tempfile.TemporaryDirectory() as tmp:
        t0, c0 = time.perf_counter(), time.process_time()
        asr = train_asr(
            train_audio,
            [u.text or "" for u in train],
            asr_spec,
            args.model_dir or Path(tmp) / "asr",
            progress=report,
        )
        train_wall, train_cpu = time.perf_counter() - t0, time.process_time() - c0

    anon_audio = anonymized["pitch (no target)"]

    refs = [u.text or "" for u in trial]
    hyp_o1, t_o1 = _timed_transcribe(asr, trial_audio, 1)
    hyp_o8, t_o8 = _timed_transcribe(asr, trial_audio, 8)
    _, t_o16 = _timed_transcribe(asr, trial_audio, 16)
    hyp_a1, t_a1 = _timed_transcribe(asr, anon_audio, 16)
    same = sum(a == b for a, b in zip(hyp_o1, hyp_o8, strict=True))
    train_hyps = asr.transcribe(train_audio[:64])
    wer_train = error_rates([u.text or "" for u in train][:64], train_hyps)["wer_percent"]
    cmp = compare_wer(refs, hyp_o1, hyp_a1, [u.speaker_id for u in trial], resamples=1000, seed=0)
    info = asr.describe()
    rows = [
        ("train ASR (original attacker-train)", train_s, train_wall, train_cpu),
        ("transcribe trial, original, 1 at a time", trial_s, t_o1, None),
        ("transcribe trial, original, batches of 8", trial_s, t_o8, None),
        ("transcribe trial, original, batches of 16 (default)", trial_s, t_o16, None),
        ("transcribe trial, pitch-anonymized, batches of 16", trial_s, t_a1, None),
    ]
    print(
        f"\nASR: {info['encoder']}, hidden {info['hidden_size']}, {info['n_parameters']} "
        f"parameters, {info['tokenization']} tokens ({info['n_tokens']}), epochs "
        f"{info['epochs']}, batch {info['batch_size']}, lr {info['lr']}, "
        f"warp {info.get('warp_range')}, "
        f"torch threads {torch.get_num_threads()}"
    )
    print(
        f"train set: {len(train)} utterances, {len(train.speakers())} speakers, {train_s:.0f} s; "
        f"trial set: {len(trial)} utterances, {len(trial.speakers())} speakers, {trial_s:.0f} s"
    )
    print("\n| step | audio (s) | wall (s) | CPU (s) | audio s per wall s |")
    print("|---|---|---|---|---|")
    for name, audio_s, wall, cpu in rows:
        cpu_txt = f"{cpu:.1f}" if cpu is not None else "-"
        print(f"| {name} | {audio_s:.0f} | {wall:.1f} | {cpu_txt} | {audio_s / wall:.1f} |")
    print("\n| speech | WER (%) | CER (%) |")
    print("|---|---|---|")
    print(
        f"| original trial | {cmp['wer_original_percent']:.1f} | "
        f"{cmp['cer_original_percent']:.1f} |"
    )
    print(
        f"| pitch-anonymized trial | {cmp['wer_anonymized_percent']:.1f} | "
        f"{cmp['cer_anonymized_percent']:.1f} |"
    )
    print(f"| original, 64 training utterances | {wer_train:.1f} | - |")
    per_anonymizer: dict[str, dict[str, float]] = {}
    for label, wavs in anonymized.items():
        rates = error_rates(refs, asr.transcribe(wavs))
        per_anonymizer[label] = rates
        wer, cer = rates["wer_percent"], rates["cer_percent"]
        print(f"| {label}-anonymized trial | {wer:.1f} | {cer:.1f} |")
    lo, hi = cmp["wer_increase_ci95_percent"]
    print(
        f"\nWER increase {cmp['wer_increase_percent']:.1f} points, 95 % CI [{lo:.1f}, {hi:.1f}] "
        f"({cmp['n_speakers']} speakers, {cmp['n_words']} words); "
        f"final CTC loss per token {info['loss_per_token_history'][-1]:.3f}; batched and "
        f"one-at-a-time transcripts identical for {same}/{len(hyp_o1)} utterances"
    )
    subs, recall = _confusions(refs, hyp_o1)
    print(f"original trial, most frequent substitutions: {subs}")
    print(f"original trial, per-token recall: {recall}")
    if args.out_json:
        args.out_json.write_text(
            json.dumps(
                {
                    "describe": info,
                    "compare": cmp,
                    "per_anonymizer": per_anonymizer,
                    "train_wall_s": train_wall,
                    "train_cpu_s": train_cpu,
                    "transcribe_s": {
                        "orig_1": t_o1,
                        "orig_8": t_o8,
                        "orig_16": t_o16,
                        "anon_16": t_a1,
                    },
                },
                indent=2,
            )
        )


if __name__ == "__main__":
    main()
