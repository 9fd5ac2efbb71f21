"""Pre-restoration attack cost: per-transform cost, batched embedding, and the whole attack.

    .venv/bin/python benchmarks/prerestore.py [--quick] [--threads 1] [--torchaudio]

1. Per-transform cost on one utterance (10 s; 5 s with --quick): librosa pitch shift + the
   attacker's fbank (the reference), the built-in waveform transforms + fbank, optionally
   torchaudio.functional.pitch_shift (one call, it takes seconds), and the feature-domain warp of
   one STFT for all 117 transforms of the five families.
2. Embedding the R versions of one utterance: one at a time vs one batch (equal lengths, no
   padding), per model preset.
3. The whole attack (five families, both modes) on a small synthetic evaluation set with pitch
   +4 trials and a tiny attacker trained on original speech: waveform transforms embedded one at
   a time (reference) vs feature-domain transforms embedded in batches; EERs side by side.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from services.anonymizers.builtin import finish_waveform
from services.anonymizers.pitch import pitch_shift
from services.anonymizers.vtln import vtln_warp
from services.anonymizers.warps import TRANSFORM_FAMILIES
from services.attacker.models import SpeakerEncoder
from services.attacker.training import TrainingConfig, TrainingItem, train_attacker
from services.attacks.feature_warp import FeatureDomainTransformer
from services.attacks.prerestore import (
    UtteranceSet,
    resolve_grids,
    run_prerestoration,
    transform_plan,
)
from services.corpus.synthetic import sample_speakers, synthesize_utterance

SR = 16_000


def best_of(fn: Callable[[], Any], repeats: int) -> float:
    """Fastest of ``repeats`` calls, seconds (the machine is shared: the minimum is the signal)."""
    fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def per_transform(seconds: float, repeats: int, with_torchaudio: bool) -> None:
    import librosa

    torch.manual_seed(0)
    encoder = SpeakerEncoder("tiny").eval()
    wav = synthesize_utterance(
        sample_speakers(1, seed=0)[0], np.random.default_rng(0), duration_s=seconds
    )
    x64 = wav.astype(np.float64)

    def fbank(y: np.ndarray) -> None:
        with torch.inference_mode():
            encoder.features(torch.from_numpy(np.asarray(y, np.float32)).unsqueeze(0))

    rows: list[tuple[str, float]] = []
    rows.append(
        (
            "librosa pitch_shift + fbank (reference)",
            best_of(lambda: fbank(librosa.effects.pitch_shift(wav, sr=SR, n_steps=4.0)), repeats),
        )
    )
    rows.append(
        (
            "built-in pitch (phase vocoder) + fbank",
            best_of(lambda: fbank(finish_waveform(pitch_shift(x64, 4.0), x64)), repeats),
        )
    )
    rows.append(
        (
            "built-in vtln power, spectrum mode + fbank",
            best_of(
                lambda: fbank(finish_waveform(vtln_warp(x64, "power", 0.2, "spectrum"), x64)),
                repeats,
            ),
        )
    )
    if with_torchaudio:
        import torchaudio.functional as taf

        t = torch.from_numpy(wav).unsqueeze(0)
        t0 = time.perf_counter()
        fbank(taf.pitch_shift(t, SR, 4).numpy()[0])
        rows.append(("torchaudio pitch_shift + fbank (1 call)", time.perf_counter() - t0))
    plan = transform_plan(resolve_grids(TRANSFORM_FAMILIES))
    tr = FeatureDomainTransformer(encoder.features, plan)
    total = best_of(lambda: tr.transform(wav), repeats)
    rows.append(
        (f"feature-domain warp, {len(plan)} transforms of one STFT, each", total / len(plan))
    )
    ref = rows[0][1]
    print(
        f"\n## Per-transform cost, one {seconds:.0f} s utterance, "
        f"{torch.get_num_threads()} thread(s)\n"
    )
    print("| transform | ms per transform | vs reference |")
    print("|---|---|---|")
    for name, s in rows:
        print(f"| {name} | {1e3 * s:.2f} | {ref / s:.1f}x cheaper |")


def batching(seconds: float, repeats: int, presets: list[str], n_versions: int) -> None:
    print(f"\n## Embedding {n_versions} versions of one {seconds:.0f} s utterance\n")
    print("| preset | one at a time (ms/version) | batched (ms/version) | speed-up |")
    print("|---|---|---|---|")
    frames = int(seconds * 100) + 1
    for preset in presets:
        torch.manual_seed(0)
        encoder = SpeakerEncoder(preset).eval()
        feats = torch.randn(n_versions, frames, 80)
        with torch.inference_mode():
            one = best_of(
                lambda e=encoder, f=feats: [e.embedding(f[i : i + 1]) for i in range(n_versions)],
                repeats,
            )
            size = max(1, 32_000 // frames)
            batch = best_of(
                lambda e=encoder, f=feats, k=size: [
                    e.embedding(f[i : i + k]) for i in range(0, n_versions, k)
                ],
                repeats,
            )
        print(
            f"| {preset} | {1e3 * one / n_versions:.1f} | {1e3 * batch / n_versions:.1f} | "
            f"{one / batch:.1f}x |"
        )


def end_to_end(n_speakers: int, n_enroll: int, n_trial: int, seconds: float, epochs: int) -> None:
    speakers = sample_speakers(n_speakers, seed=0)
    n_train = 8
    waves = {
        s.speaker_id: [
            synthesize_utterance(s, np.random.default_rng(1000 * i + j), duration_s=seconds)
            for j in range(n_train + n_enroll + n_trial)
        ]
        for i, s in enumerate(speakers)
    }
    train = [TrainingItem(w, k) for k, ws in waves.items() for w in ws[:n_train]]
    config = TrainingConfig(
        preset="tiny", epochs=epochs, batch_size=12, crop_seconds=2.0, lr=3e-3, device="cpu"
    )
    with tempfile.TemporaryDirectory() as tmp:
        encoder = train_attacker(train, [], config, tmp, resume=False).load_encoder()
    enrollment = UtteranceSet(
        [w for ws in waves.values() for w in ws[n_train : n_train + n_enroll]],
        [k for k in waves for _ in range(n_enroll)],
    )
    trial = UtteranceSet(
        [
            finish_waveform(pitch_shift(w.astype(np.float64), 4.0), w)
            for ws in waves.values()
            for w in ws[n_train + n_enroll :]
        ],
        [k for k in waves for _ in range(n_trial)],
    )
    runs = {}
    for name, impl, max_batch in (
        ("waveform, one at a time (reference)", "waveform", 1),
        ("feature, batched", "feature", 256),
    ):
        t0 = time.perf_counter()
        runs[name] = run_prerestoration(
            encoder,
            enrollment,
            trial,
            TRANSFORM_FAMILIES,
            implementation=impl,  # type: ignore[arg-type]
            anonymizer_family="pitch",
            max_batch=max_batch,
        )
        runs[name].timings_s["wall"] = time.perf_counter() - t0
    ref, fast = runs.values()
    n_utts = len(enrollment.waveforms) + len(trial.waveforms)
    print(
        f"\n## Whole attack: 5 families x 2 modes, {n_utts} utterances of {seconds:.0f} s "
        f"({n_speakers} speakers, {ref.n_target} target / {ref.n_nontarget} non-target trials), "
        f"{ref.transforms_per_utterance} transforms per utterance, tiny attacker\n"
    )
    print("| implementation | seconds | speed-up |")
    print("|---|---|---|")
    for name, r in runs.items():
        print(
            f"| {name} | {r.timings_s['wall']:.1f} | "
            f"{ref.timings_s['wall'] / r.timings_s['wall']:.1f}x |"
        )
    print(
        f"\nbaseline (no pre-restoration) EER: {ref.baseline_eer_percent:.2f} % (waveform) / "
        f"{fast.baseline_eer_percent:.2f} % (feature)\n"
    )
    print("| family | mode | label | EER waveform (%) | EER feature (%) | difference (pp) |")
    print("|---|---|---|---|---|---|")
    diffs = []
    for a, b in zip(ref.entries, fast.entries, strict=True):
        diffs.append(abs(a.eer_percent - b.eer_percent))
        print(
            f"| {a.family} | {a.mode} | {a.label} | {a.eer_percent:.2f} | {b.eer_percent:.2f} | "
            f"{b.eer_percent - a.eer_percent:+.2f} |"
        )
    print(f"\nlargest |difference|: {max(diffs):.2f} pp; mean: {np.mean(diffs):.2f} pp")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="short run")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument(
        "--torchaudio", action="store_true", help="also time torchaudio's pitch_shift"
    )
    parser.add_argument("--skip-end-to-end", action="store_true", help="only parts 1 and 2")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.quick:
        per_transform(5.0, 3, args.torchaudio)
        batching(5.0, 2, ["tiny", "vpc"], 23)
        if not args.skip_end_to_end:
            end_to_end(6, 1, 2, 2.0, 10)
    else:
        per_transform(10.0, 5, args.torchaudio)
        batching(10.0, 3, ["tiny", "vpc", "standard"], 117)
        if not args.skip_end_to_end:
            end_to_end(10, 2, 4, 3.0, 12)


if __name__ == "__main__":
    main()
