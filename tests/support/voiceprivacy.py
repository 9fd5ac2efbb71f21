"""A tiny VoicePrivacy Challenge tree built from the synthetic corpus (nothing downloaded).

``build_vpc_tree(root)`` writes, under ``root``:

* ``corpus/``: the synthetic corpus (14 speakers, 8 utterances of 2-2.5 s each);
* ``data/train-clean-360``: 6 speakers (absolute paths in ``wav.scp``);
* ``data/libri_dev_enrolls`` / ``libri_dev_trials_f`` / ``libri_dev_trials_m`` and the same for
  ``libri_test``, 4 speakers each (2 f, 2 m), 3 enrollment and 5 trial utterances per speaker,
  paths relative to ``root`` (the toolkit root, as the VoicePrivacy scripts write them); every
  trial list leaves out one non-target pair, so "every pair" and "the listed pairs" differ;
* with ``suffix``: the anonymized copies ``data/<folder><suffix>/`` (Kaldi files plus
  ``wav/<utt>.wav``), each utterance pitch-shifted by resampling and cut or padded back to its
  length (a crude stand-in for an anonymizer, enough to make the audio differ).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import soundfile as sf

from services.corpus.manifest import Manifest, Utterance
from services.corpus.synthetic import generate_synthetic_corpus

N_SPEAKERS = 14
UTTS_PER_SPEAKER = 8
N_ENROLL = 3
DATASETS = ("libri_dev", "libri_test")


@dataclass
class VPCTree:
    """What `build_vpc_tree` wrote: the roots and each folder's utterance ids."""

    root: Path
    data: Path
    corpus: Manifest
    folders: dict[str, list[str]] = field(default_factory=dict)
    trial_counts: dict[str, tuple[int, int]] = field(default_factory=dict)
    """List folder -> (target, non-target) lines of its ``trials`` file."""


def _write(path: Path, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")


def _kaldi_files(folder: Path, utts: list[Utterance], wav: dict[str, str]) -> None:
    _write(folder / "wav.scp", [f"{u.utt_id} {wav[u.utt_id]}" for u in utts])
    _write(folder / "utt2spk", [f"{u.utt_id} {u.speaker_id}" for u in utts])
    speakers = sorted({u.speaker_id for u in utts})
    _write(
        folder / "spk2utt",
        [f"{s} {' '.join(u.utt_id for u in utts if u.speaker_id == s)}" for s in speakers],
    )
    genders = {u.speaker_id: u.gender for u in utts}
    _write(folder / "spk2gender", [f"{s} {genders[s]}" for s in speakers])
    _write(folder / "text", [f"{u.utt_id} {u.text or 'A'}" for u in utts])


def _anonymize(src: Path, dest: Path, factor: float) -> None:
    wav, rate = sf.read(str(src), dtype="float32")
    n = wav.size
    positions = np.arange(0, n, factor)
    shifted = np.interp(positions, np.arange(n), wav).astype(np.float32)
    out = np.zeros(n, dtype=np.float32)
    out[: min(n, shifted.size)] = shifted[:n]
    dest.parent.mkdir(parents=True, exist_ok=True)
    sf.write(str(dest), out, rate, subtype="PCM_16")


def build_vpc_tree(root: Path, *, suffix: str | None = "_anon") -> VPCTree:
    """Write the tiny VoicePrivacy tree under ``root`` (see the module docstring)."""
    corpus = generate_synthetic_corpus(
        root / "corpus",
        n_speakers=N_SPEAKERS,
        utts_per_speaker=UTTS_PER_SPEAKER,
        seed=7,
        min_duration_s=2.0,
        max_duration_s=2.5,
    )
    data = root / "data"
    tree = VPCTree(root=root, data=data, corpus=corpus)
    groups = corpus.by_speaker()
    by_gender = {g: [s for s in sorted(groups) if groups[s][0].gender == g] for g in ("f", "m")}
    # 7 f / 7 m (the generator alternates genders): 3+3 train, 2+2 dev, 2+2 test.
    train_spk = by_gender["f"][:3] + by_gender["m"][:3]
    eval_spk = {
        "libri_dev": {"f": by_gender["f"][3:5], "m": by_gender["m"][3:5]},
        "libri_test": {"f": by_gender["f"][5:7], "m": by_gender["m"][5:7]},
    }

    def absolute(u: Utterance) -> str:
        return corpus.resolve(u).as_posix()

    def relative(u: Utterance) -> str:
        return corpus.resolve(u).relative_to(root.resolve()).as_posix()

    folders: dict[str, tuple[list[Utterance], dict[str, str]]] = {}
    train_utts = [u for s in train_spk for u in groups[s]]
    folders["train-clean-360"] = (train_utts, {u.utt_id: absolute(u) for u in train_utts})
    for dataset, spk in eval_spk.items():
        speakers = spk["f"] + spk["m"]
        enroll = [u for s in speakers for u in groups[s][:N_ENROLL]]
        folders[f"{dataset}_enrolls"] = (enroll, {u.utt_id: relative(u) for u in enroll})
        _write(data / f"{dataset}_enrolls" / "enrolls", [u.utt_id for u in enroll])
        for g in ("f", "m"):
            trial = [u for s in spk[g] for u in groups[s][N_ENROLL:]]
            name = f"{dataset}_trials_{g}"
            folders[name] = (trial, {u.utt_id: relative(u) for u in trial})
            lines = [
                f"{e} {u.utt_id} {'target' if e == u.speaker_id else 'nontarget'}"
                for e in spk[g]
                for u in trial
            ]
            dropped = next(i for i, line in enumerate(lines) if line.endswith(" nontarget"))
            del lines[dropped]
            _write(data / name / "trials", lines)
            n_target = sum(line.endswith(" target") for line in lines)
            tree.trial_counts[name] = (n_target, len(lines) - n_target)
    for name, (utts, wav) in folders.items():
        _kaldi_files(data / name, utts, wav)
        tree.folders[name] = [u.utt_id for u in utts]
        if suffix is None:
            continue
        copy = data / f"{name}{suffix}"
        anon_wav = {u.utt_id: f"data/{name}{suffix}/wav/{u.utt_id}.wav" for u in utts}
        _kaldi_files(copy, utts, anon_wav)
        for u in utts:
            _anonymize(corpus.resolve(u), copy / "wav" / f"{u.utt_id}.wav", factor=1.15)
        for extra in ("enrolls", "trials"):
            if (data / name / extra).is_file():
                (copy / extra).write_text((data / name / extra).read_text())
    return tree
