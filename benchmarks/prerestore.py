"""Pre-restoration attack cost: per-transform cost, batched embedding, and the whole attack.

    .venv/bin/python benchmarks/prerestore.py [--quick | --validate [--speakers N]] [--threads 1]
        [--torchaudio] [--enrollment original|anonymized]

1. Per-transform cost on one utterance (10 s; 5 s with --quick): librosa pitch shift + the
   attacker's fbank (the reference), the built-in waveform transforms + fbank, optionally
   torchaudio.functional.pitch_shift (one call, it takes seconds), and the feature-domain warp of
   one STFT for all 117 transforms of the five families.
2. Embedding the R versions of one utterance: one at a time vs one batch (equal lengths, no
   padding), per model preset.
3. The whole attack (five families, both modes) on a small synthetic evaluation set with pitch
   +4 trials and a tiny attacker trained on original speech: waveform transforms embedded one at
   a time (reference) vs feature-domain transforms embedded in batches; EERs side by side, with
   the best parameter and the largest per-parameter EER difference of each (family, mode); then,
   per implementation and family, enrollment vs trial mode (Liu et al. section 5.2) with paired
   speaker-bootstrap 95 % intervals. The enrollment is original (Liu et al.'s condition) unless
   ``--enrollment anonymized`` (pitch +4 like the trials).

``--validate`` runs only part 3, at a scale that approaches 1 pp: 40 speakers (``--speakers N``), 2
enrollment and 10 trial utterances of 2.5 s each (400 target / 15,600 non-target trials, 0.25 pp
per target trial), attacker trained 12 epochs on 8 other utterances per speaker; it first times the
waveform reference on one utterance and prints the projected duration (about 1.4 s per utterance,
480 utterances: 12 min, plus 3 min for the feature path, on an idle core), and ends with the
embedding-level agreement per family on 10 trial utterances. ``--speakers 100`` took 41 min on an
idle core (docs/performance.md).
"""

from __future__ import annotations

import argparse
import os
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
from services.attacker.training import train_attacker
from services.attacker.training_config import TrainingConfig
from services.attacker.training_records import TrainingItem
from services.attacks.feature_warp import FeatureDomainTransformer
from services.attacks.prerestore import (
    CPU_MAX_BATCH_FRAMES,
    PrerestorationResult,
    TransformEmbedder,
    UtteranceSet,
    resolve_grids,
    run_prerestoration,
    transform_plan,
)
from services.attacks.prerestore_config import EnrollmentCondition
from services.corpus.synthetic import sample_speakers, synthesize_utterance
from services.metrics import compute_eer

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
    frames = int(seconds * 100) + 1
    size = max(1, CPU_MAX_BATCH_FRAMES // frames)
    print(
        f"\n## Embedding {n_versions} versions of one {seconds:.0f} s utterance "
        f"(batches of {size}: CPU_MAX_BATCH_FRAMES = {CPU_MAX_BATCH_FRAMES})\n"
    )
    print("| preset | one at a time (ms/version) | batched (ms/version) | speed-up |")
    print("|---|---|---|---|")
    for preset in presets:
        torch.manual_seed(0)
        encoder = SpeakerEncoder(preset).eval()
        feats = torch.randn(n_versions, frames, 80)
        with torch.inference_mode():
            one = best_of(
                lambda e=encoder, f=feats: [e.embedding(f[i : i + 1]) for i in range(n_versions)],
                repeats,
            )
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


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f}, {five:.2f}, {fifteen:.2f}"


def _cosine_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cosine of two (..., d) arrays."""
    return np.sum(a * b, axis=-1) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1))


def embedding_agreement(
    encoder: SpeakerEncoder, waveforms: list[np.ndarray], plan: list[tuple[str, float]]
) -> None:
    """Per family: cosine between the waveform and feature embeddings of the same transform."""
    embedders = {
        "waveform": TransformEmbedder(encoder, plan, "waveform"),
        "feature": TransformEmbedder(encoder, plan, "feature"),
    }
    emb = {name: np.stack([e.embed(w) for w in waveforms]) for name, e in embedders.items()}
    cos = _cosine_rows(emb["waveform"], emb["feature"])  # (n, R)
    families = np.array([f for f, _ in plan])
    print(
        f"\nEmbedding-level agreement on {len(waveforms)} trial utterances: cosine between the "
        "waveform and the feature embedding of the same transform\n"
    )
    print("| family | mean | 5th percentile | minimum |")
    print("|---|---|---|---|")
    for family in dict.fromkeys(families):
        c = cos[:, families == family]
        print(f"| {family} | {c.mean():.3f} | {np.percentile(c, 5):.3f} | {c.min():.3f} |")


Resample = tuple[tuple[np.ndarray, ...], np.ndarray]


def speaker_resamples(
    trial_speakers: np.ndarray, model_speakers: np.ndarray, n_resamples: int = 300
) -> list[Resample]:
    """Speaker-bootstrap draws: (score-matrix index, target mask) per draw, seed 0.

    Speakers are drawn with replacement; a draw keeps that speaker's trial utterances and model.
    Every statistic is computed on the same draws (paired), so differences between modes or
    implementations get the sampling uncertainty of a population of such synthetic speakers.
    """
    rng = np.random.default_rng(0)
    speakers = np.unique(model_speakers)
    rows_of = {s: np.flatnonzero(trial_speakers == s) for s in speakers}
    col_of = {s: int(np.flatnonzero(model_speakers == s)[0]) for s in speakers}
    draws: list[tuple[tuple[np.ndarray, ...], np.ndarray]] = []
    while len(draws) < n_resamples:
        pick = rng.choice(speakers, size=len(speakers))
        if len(np.unique(pick)) < 2:  # no non-target trials: draw again
            continue
        rows = np.concatenate([rows_of[s] for s in pick])
        cols = np.array([col_of[s] for s in pick])
        draws.append((np.ix_(rows, cols), trial_speakers[rows][:, None] == pick[None, :]))
    return draws


def bootstrap_eers(result: PrerestorationResult, draws: list[Resample]) -> dict[str, np.ndarray]:
    """EER (%) per "family/mode" of ``result`` (kept scores) on every speaker draw."""

    def eer(scores: np.ndarray, target: np.ndarray) -> float:
        return float(compute_eer(scores[target], scores[~target]).eer_percent)

    return {
        key: np.array([eer(scores[idx], tgt) for idx, tgt in draws])
        for key, scores in result.best_scores.items()
    }


def _interval(values: np.ndarray) -> str:
    return f"[{np.percentile(values, 2.5):+.2f}, {np.percentile(values, 97.5):+.2f}]"


def mode_comparison(
    runs: dict[str, PrerestorationResult], boot: dict[str, dict[str, np.ndarray]]
) -> None:
    """Per implementation and family: enrollment vs trial mode EER, paired bootstrap intervals.

    Liu et al. section 5.2 claims trial pre-restoration beats enrollment pre-restoration; the
    verdict is "trial" or "enrollment" when the 95 % interval of (trial - enrollment) excludes 0.
    """
    print(
        "\n## Trial vs enrollment pre-restoration (Liu et al. section 5.2), 95 % speaker-bootstrap "
        f"intervals over {len(next(iter(next(iter(boot.values())).values())))} draws\n"
    )
    print(
        "| implementation | family | label | enrollment EER (%) [95 %] | trial EER (%) [95 %] "
        "| trial - enrollment (pp) [95 %] | better mode |"
    )
    print("|---|---|---|---|---|---|---|")
    for name, r in runs.items():
        b = boot[name]
        for family in r.families:
            enr, tri = r.entry(family, "enrollment"), r.entry(family, "trial")
            be, bt = b[f"{family}/enrollment"], b[f"{family}/trial"]
            d = bt - be
            lo, hi = np.percentile(d, [2.5, 97.5])
            verdict = "trial" if hi < 0 else "enrollment" if lo > 0 else "not resolved"
            print(
                f"| {name} | {family} | {tri.label} | {enr.eer_percent:.2f} "
                f"[{np.percentile(be, 2.5):.2f}, {np.percentile(be, 97.5):.2f}] | "
                f"{tri.eer_percent:.2f} [{np.percentile(bt, 2.5):.2f}, "
                f"{np.percentile(bt, 97.5):.2f}] | {tri.eer_percent - enr.eer_percent:+.2f} "
                f"{_interval(d)} | {verdict} |"
            )


def end_to_end(
    n_speakers: int,
    n_enroll: int,
    n_trial: int,
    seconds: float,
    epochs: int,
    n_train: int = 8,
    agreement_utterances: int = 0,
    enrollment_condition: EnrollmentCondition = "original",
) -> None:
    """Whole attack with both implementations on one synthetic set; EERs and wall times.

    Enrollment: ``n_enroll`` utterances per speaker (speaker-mean models), original (Liu et al.'s
    condition) or, with ``enrollment_condition="anonymized"``, pitch-shifted +4 like the trials;
    trials:
    ``n_trial`` utterances per speaker pitch-shifted +4 semitones; attacker: tiny ECAPA trained
    ``epochs`` epochs on ``n_train`` other original utterances per speaker. Utterances last
    ``seconds`` s. ``agreement_utterances`` > 0 adds the embedding-level agreement per family.
    """
    t_setup = time.perf_counter()
    speakers = sample_speakers(n_speakers, seed=0)
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

    def anonymize(w: np.ndarray) -> np.ndarray:
        return finish_waveform(pitch_shift(w.astype(np.float64), 4.0), w)

    enrollment = UtteranceSet(
        [
            w if enrollment_condition == "original" else anonymize(w)
            for ws in waves.values()
            for w in ws[n_train : n_train + n_enroll]
        ],
        [k for k in waves for _ in range(n_enroll)],
    )
    trial = UtteranceSet(
        [anonymize(w) for ws in waves.values() for w in ws[n_train + n_enroll :]],
        [k for k in waves for _ in range(n_trial)],
    )
    n_utts = len(enrollment.waveforms) + len(trial.waveforms)
    plan = transform_plan(resolve_grids(TRANSFORM_FAMILIES))
    reference = TransformEmbedder(encoder, plan, "waveform", max_batch=1)
    t0 = time.perf_counter()
    reference.embed(trial.waveforms[0])
    per_utt = time.perf_counter() - t0
    print(
        f"\nset-up (synthesis, training {epochs} epochs): {time.perf_counter() - t_setup:.0f} s; "
        f"waveform reference, one {seconds:.1f} s utterance, {len(plan)} transforms: "
        f"{per_utt:.2f} s -> about {per_utt * n_utts / 60:.1f} min for {n_utts} utterances "
        f"({_load()})"
    )
    runs = {}
    for name, impl, max_batch in (
        ("waveform, one at a time (reference)", "waveform", 1),
        ("feature, batched", "feature", 256),
    ):
        load_before = _load()
        t0 = time.perf_counter()
        runs[name] = run_prerestoration(
            encoder,
            enrollment,
            trial,
            TRANSFORM_FAMILIES,
            implementation=impl,  # type: ignore[arg-type]
            anonymizer_family="pitch",
            attacker_training="original",
            enrollment_condition=enrollment_condition,
            max_batch=max_batch,
            keep_scores=True,
        )
        runs[name].timings_s["wall"] = time.perf_counter() - t0
        print(
            f"{name}: {runs[name].timings_s['wall']:.1f} s ({load_before} before, {_load()} after)"
        )
    ref, fast = runs.values()
    print(
        f"\n## Whole attack: 5 families x 2 modes, {n_utts} utterances of {seconds:.1f} s "
        f"({n_speakers} speakers, {ref.n_target} target / {ref.n_nontarget} non-target trials, "
        f"one target trial = {100 / ref.n_target:.2f} pp), "
        f"{ref.transforms_per_utterance} transforms per utterance, tiny attacker trained on "
        f"{ref.attacker_training} speech, {ref.enrollment_condition} enrollment, trials pitch "
        f"+4, {torch.get_num_threads()} thread(s)\n"
    )
    print("| implementation | seconds | embedding (s) | speed-up |")
    print("|---|---|---|---|")
    for name, r in runs.items():
        embed_s = r.timings_s["embed_enrollment"] + r.timings_s["embed_trial"]
        print(
            f"| {name} | {r.timings_s['wall']:.1f} | {embed_s:.1f} | "
            f"{ref.timings_s['wall'] / r.timings_s['wall']:.2f}x |"
        )
    print(
        f"\nbaseline (no pre-restoration) EER: {ref.baseline_eer_percent:.2f} % (waveform) / "
        f"{fast.baseline_eer_percent:.2f} % (feature)\n"
    )
    print(
        "| family | mode | label | EER waveform (%) | EER feature (%) | difference (pp) "
        "| speaker-bootstrap SE [95 % interval] (pp) | best parameter w / f "
        "| max per-parameter difference (pp) |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    draws = speaker_resamples(
        np.asarray(trial.speaker_ids).astype(str),
        np.unique(np.asarray(enrollment.speaker_ids).astype(str)),
    )
    boot_eers = {name: bootstrap_eers(r, draws) for name, r in runs.items()}
    ref_boot, fast_boot = boot_eers.values()
    boot = {key: fast_boot[key] - ref_boot[key] for key in ref_boot}
    diffs = []
    for a, b in zip(ref.entries, fast.entries, strict=True):
        diffs.append(abs(a.eer_percent - b.eer_percent))
        curve = np.abs(
            np.array(a.per_parameter_eer_percent) - np.array(b.per_parameter_eer_percent)
        )
        d = boot[f"{a.family}/{a.mode}"]
        print(
            f"| {a.family} | {a.mode} | {a.label} | {a.eer_percent:.2f} | {b.eer_percent:.2f} | "
            f"{b.eer_percent - a.eer_percent:+.2f} | {d.std():.2f} "
            f"[{np.percentile(d, 2.5):+.2f}, {np.percentile(d, 97.5):+.2f}] | "
            f"{a.best_parameter_by_eer:g} / {b.best_parameter_by_eer:g} | {curve.max():.2f} |"
        )
    print(f"\nlargest |difference|: {max(diffs):.2f} pp; mean: {np.mean(diffs):.2f} pp")
    print(
        f"end to end: {ref.timings_s['wall']:.1f} s vs {fast.timings_s['wall']:.1f} s, "
        f"{ref.timings_s['wall'] / fast.timings_s['wall']:.2f}x ({_load()})"
    )
    mode_comparison(runs, boot_eers)
    if agreement_utterances:
        embedding_agreement(encoder, list(trial.waveforms[:agreement_utterances]), plan)


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
    parser.add_argument(
        "--validate",
        action="store_true",
        help="only part 3, at validation scale: 40 speakers x 10 trials of 2.5 s (400 target "
        "trials, 0.25 pp each); about 25 min on one core",
    )
    parser.add_argument(
        "--speakers",
        type=int,
        default=40,
        help="evaluation speakers of --validate (default 40; the standard errors of the EER "
        "differences shrink as 1/sqrt(speakers), the run time grows linearly)",
    )
    parser.add_argument(
        "--enrollment",
        choices=["original", "anonymized"],
        default="original",
        help="enrollment condition of part 3: original (Liu et al.'s, default) or anonymized "
        "(pitch +4 like the trials)",
    )
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.validate:
        end_to_end(
            args.speakers,
            2,
            10,
            2.5,
            12,
            agreement_utterances=10,
            enrollment_condition=args.enrollment,
        )
    elif args.quick:
        per_transform(5.0, 3, args.torchaudio)
        batching(5.0, 2, ["tiny", "vpc"], 23)
        if not args.skip_end_to_end:
            end_to_end(6, 1, 2, 2.0, 10, enrollment_condition=args.enrollment)
    else:
        per_transform(10.0, 5, args.torchaudio)
        batching(10.0, 3, ["tiny", "vpc", "standard"], 117)
        if not args.skip_end_to_end:
            end_to_end(10, 2, 4, 3.0, 12, enrollment_condition=args.enrollment)


if __name__ == "__main__":
    main()
